-- Secrets every process of the store shares: the key that seals an MCP server's form rounds
-- (`requestState`), so that any instance can open the round another instance began. A secret is
-- written once, by the first process that asks for it, and never changed.
CREATE TABLE ask_user_secrets (
    name text PRIMARY KEY,
    value bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
