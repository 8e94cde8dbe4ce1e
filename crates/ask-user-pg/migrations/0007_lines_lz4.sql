-- Lines are compressed with lz4 where the server has it (PostgreSQL 14 and later, built with
-- lz4): a long line (most of a large log's bytes: tool output) is compressed when it is stored,
-- and read back at some twice pglz's speed for about the same size, which is most of the
-- server's cost of a cold open. Rows written before keep pglz and read as they did; a server
-- without lz4 keeps its default, and nothing else changes.
DO $$
BEGIN
    ALTER TABLE ask_user_lines ALTER COLUMN line SET COMPRESSION lz4;
EXCEPTION
    WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
        RAISE NOTICE 'lines keep the server''s default compression: %', SQLERRM;
END
$$;
