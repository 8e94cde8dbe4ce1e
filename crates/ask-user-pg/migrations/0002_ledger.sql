-- The question ledger: every timed question as its session's log says it stands, written in the
-- same transaction as the append that changed it, so the ledger never disagrees with the log.
CREATE TABLE ask_user_questions (
    name        text NOT NULL REFERENCES ask_user_sessions (name) ON DELETE CASCADE,
    call_id     text NOT NULL,
    state       text NOT NULL CHECK (state IN ('open', 'continued', 'settled', 'dropped')),
    -- The questions as asked (the tool call's `questions`).
    questions   jsonb NOT NULL,
    -- The seq of the event that last changed the state.
    changed_seq bigint NOT NULL,
    PRIMARY KEY (name, call_id)
);

-- Answers from any front end. The first per call wins (INSERT … ON CONFLICT DO NOTHING). Its id
-- becomes the id of the `user/message` that admits it: the append of that message sets
-- `admitted_seq` in its own transaction; a call settled by another message, or dropped, refuses
-- the answer instead (`refused` says why), so it is never admitted later.
CREATE TABLE ask_user_answers (
    name         text NOT NULL,
    call_id      text NOT NULL,
    answer_id    text NOT NULL UNIQUE,
    batch        jsonb NOT NULL,
    provenance   jsonb NOT NULL,
    answered_at  timestamptz NOT NULL DEFAULT now(),
    -- The seq of the admitted `user/message`, set in the transaction that appends it.
    admitted_seq bigint,
    -- Why it will never be admitted (NULL while it may be).
    refused      text,
    PRIMARY KEY (name, call_id),
    FOREIGN KEY (name, call_id) REFERENCES ask_user_questions (name, call_id) ON DELETE CASCADE
);

CREATE INDEX ask_user_answers_waiting ON ask_user_answers (name)
    WHERE admitted_seq IS NULL AND refused IS NULL;
