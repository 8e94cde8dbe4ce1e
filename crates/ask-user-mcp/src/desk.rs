//! The server's sessions as a question desk (`AskUserMcp::desk`): what the machine's inbox
//! submits its answers to, and what lists this server's questions.
//!
//! Sessions are named by their log's name in the server's store. A live session (its connection
//! open) takes a late answer through its connection, once the call is continued: the reply waits
//! in its inbox for the companion tool ([`Accepted::Queued`]). Any other session is its log's:
//! opened, answered and admitted in a turn of its own, as `ask-user answer` does.

use std::sync::Arc;
use std::time::Duration;

use ask_user_host::{CheckpointPolicy, LogDesk, load_projection};
use pending_answer::{
    Accepted, DeskChanges, DeskError, DeskErrorKind, DeskQuestion, DeskSession, DeskState,
    LateRefusal, QuestionDesk, SessionView, Submission,
};
use user_questions::{CallId, async_trait};
use user_questions_projection::Standing;

use crate::late::log_of_call;
use crate::sessions::Sessions;
use crate::state::ServerInner;

/// The server's sessions as a desk. See the [module docs](self).
pub(crate) struct McpDesk {
    server: Arc<ServerInner>,
    /// The live sessions, which take a late answer through their connection.
    sessions: Arc<Sessions>,
    logs: LogDesk,
}

impl McpDesk {
    pub(crate) fn new(server: Arc<ServerInner>, sessions: Arc<Sessions>) -> Self {
        let logs = LogDesk::store(Arc::clone(server.runtime().store()));
        Self {
            server,
            sessions,
            logs,
        }
    }
}

#[async_trait]
impl QuestionDesk for McpDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        self.logs.sessions().await
    }

    async fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        self.logs.answerable().await
    }

    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        self.logs.views(session).await
    }

    /// The log a call id names (`call_<session uuid>_<n>`), read from its checkpoint and the
    /// lines after it: the one session that can hold the call.
    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        let store = Arc::clone(self.server.runtime().store());
        let call_id = call_id.clone();
        tokio::task::spawn_blocking(move || {
            let Some(log) = log_of_call(&*store, &call_id) else {
                return Ok(Vec::new());
            };
            let state = load_projection(&*store, &log, CheckpointPolicy::ReadOnly)
                .map_err(|e| DeskError::from_error(DeskErrorKind::Store, e.code(), e))?
                .state;
            let (state_of, questions) = match state.standing(&call_id) {
                Standing::Unknown => return Ok(Vec::new()),
                Standing::Settled(_) => (DeskState::Settled, Vec::new()),
                Standing::Open(active) => (DeskState::Open, active.questions.clone()),
                Standing::Continued(active) => (DeskState::Continued, active.questions.clone()),
            };
            Ok(vec![DeskQuestion {
                session: log,
                call_id,
                questions,
                state: state_of,
                answerable: state_of == DeskState::Continued,
                interrupted: false,
                answered: false,
                asked_at_ms: None,
            }])
        })
        .await?
    }

    /// Through the live session's connection when there is one (its log is not waited for: a
    /// log another process holds now is refused at once, and the person may answer again), else
    /// through the session's log.
    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let Some(conn) = self.sessions.by_log(&submission.session) else {
            return self.logs.submit(submission).await;
        };
        let Submission {
            call_id,
            answers,
            provenance,
            ..
        } = submission;
        let batch = match answers {
            pending_answer::Answers::Batch(batch) => batch,
            compose @ pending_answer::Answers::Compose(_) => {
                let questions = self
                    .find(&call_id)
                    .await
                    .map_err(LateRefusal::Unavailable)?
                    .into_iter()
                    .next()
                    .map(|found| found.questions);
                compose.into_batch(questions.as_deref())
            }
        };
        conn.queue_late(&call_id, batch, provenance, Duration::ZERO)
            .await
            .map(Accepted::Queued)
    }

    fn changes(&self) -> DeskChanges {
        self.server.runtime().changes()
    }
}
