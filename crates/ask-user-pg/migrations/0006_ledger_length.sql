-- How far the ledger is known to be in line with the log: the byte length of the log when its
-- questions were last reconciled with all of it, carried along by every append (which writes the
-- ledger rows its lines change in its own transaction). NULL: never reconciled (a log imported,
-- or written before this column), so the next open reconciles the ledger with the whole log.
-- When it equals `byte_length`, an open resumed at a checkpoint starts the ledger's fold from the
-- checkpoint and writes nothing.
ALTER TABLE ask_user_sessions ADD COLUMN ledger_length bigint;
