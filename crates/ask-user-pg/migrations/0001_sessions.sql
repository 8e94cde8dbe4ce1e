-- Session logs as rows: the header line on the session row, every later line verbatim (bytes,
-- line end included) keyed by its position, so the rows in order are the bytes of the JSONL file.
CREATE TABLE ask_user_sessions (
    name        text PRIMARY KEY,
    header      bytea NOT NULL,
    -- Bytes of the whole log (header included): where the next append goes.
    byte_length bigint NOT NULL,
    -- Ownership: a lease of the database's clock, and an epoch raised by every new owner. An
    -- append is fenced by the epoch its writer opened with.
    epoch       bigint NOT NULL DEFAULT 0,
    owner       text,
    lease_until timestamptz,
    checkpoint  bytea,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ask_user_lines (
    name     text NOT NULL REFERENCES ask_user_sessions (name) ON DELETE CASCADE,
    -- 1 is the first line after the header.
    line_no  bigint NOT NULL,
    -- The byte offset just past the line, in the JSONL file the rows make.
    byte_end bigint NOT NULL,
    -- The record's seq (its first, for a packed row); NULL for a line that is not a record.
    seq      bigint,
    line     bytea NOT NULL,
    PRIMARY KEY (name, line_no),
    UNIQUE (name, byte_end),
    UNIQUE (name, seq)
);
