-- The ledger's JSON documents as their JSON text. `jsonb` cannot hold U+0000, nor even its escape
-- `\u0000`, and a question or an answer may hold any character the session log holds: as text,
-- the document is the JSON serde wrote, every control character spelled as an escape (so the
-- text never holds U+0000 itself), read back to the same value.
ALTER TABLE ask_user_questions ALTER COLUMN questions TYPE text USING questions::text;
ALTER TABLE ask_user_answers
    ALTER COLUMN batch TYPE text USING batch::text,
    ALTER COLUMN provenance TYPE text USING provenance::text;
