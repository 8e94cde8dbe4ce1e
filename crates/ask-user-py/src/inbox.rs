//! The session linked to the machine's inbox (`ask-user-inbox`): its questions show on the
//! inbox page and on a phone, and race the session's other answerers; an answer given there
//! after the window comes back as a late answer through the session's desk.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use ask_user_host::{Host, HostRuntime, LiveDesk};
use ask_user_inbox::{Connect, InboxLink, LinkedHost, LinkedSession, Rendezvous};
use pending_answer::QuestionDesk;
use pyo3::prelude::*;
use user_questions::SessionId;

/// The session as the inbox shows it.
struct Linked {
    host: Weak<Host>,
    desk: Arc<LiveDesk>,
}

impl LinkedHost for Linked {
    fn session(&self, id: &SessionId) -> Option<LinkedSession> {
        let host = self.host.upgrade()?;
        (host.session_id() == *id).then(|| LinkedSession {
            name: host.name().to_owned(),
            client: Some("python".to_owned()),
            cwd: std::env::current_dir()
                .ok()
                .map(|dir| dir.to_string_lossy().into_owned()),
        })
    }

    fn desk(&self) -> Arc<dyn QuestionDesk> {
        Arc::clone(&self.desk) as Arc<dyn QuestionDesk>
    }
}

/// Links `host` (of `runtime`) to the inbox that runs for `state_dir`, whenever one does (none is
/// started).
pub(crate) fn link(host: &Arc<Host>, runtime: &HostRuntime, state_dir: PathBuf) -> PyInboxLink {
    let socket = Rendezvous::new(state_dir).socket();
    let connect: Connect = Arc::new(move || {
        let socket = socket.clone();
        Box::pin(async move { ask_user_inbox::connect(&socket).await })
    });
    let linked = Arc::new(Linked {
        host: Arc::downgrade(host),
        desk: LiveDesk::of_named([host]),
    });
    let _enter = crate::bridge::runtime().enter();
    PyInboxLink {
        link: Mutex::new(Some(InboxLink::start(runtime.seam(), linked, connect))),
    }
}

/// The link: `close()` unlinks once the inbox knows how every question ended.
#[pyclass(name = "InboxLink", module = "ask_user._native", frozen)]
pub struct PyInboxLink {
    link: Mutex<Option<InboxLink>>,
}

#[pymethods]
impl PyInboxLink {
    /// Whether a connection to the inbox is up now.
    #[getter]
    fn connected(&self) -> bool {
        self.link
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(InboxLink::is_connected)
    }

    /// Unlinks once the inbox has been told how every question ended, waiting at most
    /// `within` seconds: an awaitable.
    fn close<'py>(&self, py: Python<'py>, within: f64) -> PyResult<Bound<'py, PyAny>> {
        let link = self
            .link
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let within = Duration::try_from_secs_f64(within.max(0.0)).unwrap_or(Duration::ZERO);
        let event_loop = crate::bridge::running_loop(py)?;
        crate::bridge::future(py, &event_loop, move |_cancelled| async move {
            if let Some(link) = link {
                link.close(within).await;
            }
            Ok(None)
        })
    }
}
