-- Claims of remote surfaces on an open question: a page, an IDE or a phone on another machine
-- says a person is looking at the question's card. Each is a lease of the database's clock,
-- renewed while the surface shows the card and removed when it closes; while any is live, the
-- host that runs the question's call holds one claim on its timed wait (its window does not
-- count down).
CREATE TABLE ask_user_claims (
    name       text NOT NULL,
    call_id    text NOT NULL,
    -- The claiming surface's id (a page's client id, say); one lease per surface and call.
    client     text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (name, call_id, client),
    FOREIGN KEY (name, call_id) REFERENCES ask_user_questions (name, call_id) ON DELETE CASCADE
);
