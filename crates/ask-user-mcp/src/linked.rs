//! The server as a host of the machine's inbox (`ask-user-inbox`): every MCP session's
//! questions are handed to it, and its late answers come back to the server's desk.

use std::sync::Arc;

use ask_user_inbox::{Connect, InboxLink, LinkedHost, LinkedSession};
use pending_answer::QuestionDesk;
use user_questions::SessionId;

use crate::AskUserMcp;

impl AskUserMcp {
    /// Links this server to the machine's inbox, reached through `connect`: from then on every
    /// question of its sessions shows in the inbox too and races the client's form there (first
    /// answer wins); a late answer given in the inbox is queued in its session like a late form
    /// answer. Unlinked when the returned link is dropped.
    pub fn link_inbox(&self, connect: Connect) -> InboxLink {
        InboxLink::start(
            self.runtime().seam(),
            Arc::new(Linked {
                server: self.clone(),
            }),
            connect,
        )
    }
}

struct Linked {
    server: AskUserMcp,
}

impl LinkedHost for Linked {
    fn session(&self, id: &SessionId) -> Option<LinkedSession> {
        self.server.session_info(id).map(|info| LinkedSession {
            name: info.log,
            client: info.client,
            cwd: info.cwd,
        })
    }

    fn desk(&self) -> Arc<dyn QuestionDesk> {
        self.server.desk()
    }
}
