-- Where the anchor of the session's checkpoint document ends (its `log.byteLength`), written with
-- the document: the statement that takes a writer's lease reads the line that ends there and the
-- page of lines after it in the same round trip, so an open at the checkpoint needs no other
-- read. NULL for a document saved before (its open reads the anchor line on its own, as before)
-- or one a writer cannot resume at.
ALTER TABLE ask_user_sessions ADD COLUMN checkpoint_end bigint;
