-- Checkpoint documents are compressed with lz4 where the server has it, as lines are (0007):
-- the statement that takes a writer's lease returns the document, and decompressing a large
-- one with pglz was most of that statement's cost. A document saved before keeps pglz until it
-- is saved again (every open that moves the checkpoint saves it); a server without lz4 keeps
-- its default, and nothing else changes.
DO $$
BEGIN
    ALTER TABLE ask_user_sessions ALTER COLUMN checkpoint SET COMPRESSION lz4;
EXCEPTION
    WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
        RAISE NOTICE 'checkpoints keep the server''s default compression: %', SQLERRM;
END
$$;
