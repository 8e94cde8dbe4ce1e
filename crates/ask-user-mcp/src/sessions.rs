//! The MCP sessions this process serves, by session id: weak references to their connections, so
//! an inbox can tell which client a question came from and answer it through the live session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use user_questions::SessionId;
use user_questions::sync::lock_unpoisoned;

use crate::session::Conn;

/// Every session's connection, weakly: a session whose connection is gone is no longer listed.
#[derive(Default)]
pub(crate) struct Sessions {
    live: Mutex<HashMap<SessionId, Weak<Conn>>>,
}

impl Sessions {
    /// Lists a new session (and forgets the ones whose connection is gone).
    pub(crate) fn register(&self, conn: &Arc<Conn>) {
        let mut live = lock_unpoisoned(&self.live);
        live.retain(|_, weak| weak.strong_count() > 0);
        live.insert(conn.session_id().clone(), Arc::downgrade(conn));
    }

    /// The live session `session`.
    pub(crate) fn get(&self, session: &SessionId) -> Option<Arc<Conn>> {
        lock_unpoisoned(&self.live)
            .get(session)
            .and_then(Weak::upgrade)
    }

    /// The live session whose log is `log`.
    pub(crate) fn by_log(&self, log: &str) -> Option<Arc<Conn>> {
        lock_unpoisoned(&self.live)
            .values()
            .filter_map(Weak::upgrade)
            .find(|conn| conn.log() == log)
    }
}
