#![doc = include_str!("../README.md")]

mod answerer;
#[cfg(feature = "clap")]
mod flags;
mod grants;
mod hub;
mod links;
pub mod page;
mod routes;
mod sessions;
mod settings;
mod token;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use pending_answer::QuestionDesk;
use tokio::net::TcpListener;
use user_questions::{
    AnswererGuard, CallId, CancellationToken, Question, RegisterOptions, UserQuestions,
};

pub use ask_user_http::{HttpLimits, ServerTls, TlsError, TlsFiles, TlsFilesError};
#[cfg(feature = "clap")]
pub use flags::WebArgs;
pub use routes::TOKEN_HEADER;
pub use sessions::WebOptions;
pub use settings::WebSettings;

use crate::hub::Hub;

/// The web answering surface: an answerer in the seam's waterfall that shows every request as a
/// card on the pages that are open and races the rest of the waterfall (first answer wins), and
/// the [`router`](Self::router) that serves those pages.
///
/// Cloning gives another handle to the same surface.
#[derive(Clone)]
pub struct WebSurface {
    hub: Arc<Hub>,
    token: Arc<str>,
    grants: Arc<grants::Grants>,
}

impl fmt::Debug for WebSurface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSurface")
            .field("options", &self.hub.options)
            .field("claims_held", &self.claims_held())
            .finish_non_exhaustive()
    }
}

impl WebSurface {
    /// A surface for `seam` (held weakly) with a fresh random token (or the options' fixed one).
    /// `desk` lists the questions
    /// shown beside the surface's own cards (continued ones, and open ones an answer given here
    /// reaches) and takes late answers; without it, a card whose window closes is taken down.
    ///
    /// # Errors
    ///
    /// When the operating system's random source fails: no token, no surface; when the options'
    /// token is too short or has other characters.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: the surface follows the seam's events on a task of its own.
    pub fn new(
        seam: &UserQuestions,
        desk: Option<Arc<dyn QuestionDesk>>,
        options: WebOptions,
    ) -> std::io::Result<Self> {
        let token = match &options.token {
            Some(token) if token::is_fit(token) => token.clone(),
            Some(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a page token has at least 32 characters of [0-9A-Za-z_-]",
                ));
            }
            None => token::random_hex(24)?,
        };
        Ok(Self {
            hub: Hub::new(seam, desk, options),
            token: Arc::from(token),
            grants: Arc::default(),
        })
    }

    /// The capability token every request must carry (`?token=` or [`TOKEN_HEADER`]).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Registers the answerer at the front of `seam`'s waterfall, globally, under the surface's
    /// name: it shows the card and runs the rest of the waterfall beside it.
    pub fn register(&self, seam: &UserQuestions) -> AnswererGuard {
        seam.register(
            Arc::new(answerer::WebAnswerer {
                hub: Arc::downgrade(&self.hub),
            }),
            RegisterOptions::global(self.hub.options.name.clone()).prepended(),
        )
    }

    /// The routes (see the crate docs), with the token, `Host` and `Origin` checks and the body
    /// limit. Not knowing where it is served, it takes any port in `Host`;
    /// [`serve`](Self::serve) takes only the one it serves.
    pub fn router(&self) -> axum::Router {
        routes::router(
            Arc::clone(&self.hub),
            Arc::clone(&self.token),
            Arc::clone(&self.grants),
            CancellationToken::new(),
            None,
        )
    }

    /// A one-time grant to answer the call `call_id` (in `session`) by choosing `label` for its
    /// question `question_id`, every other question of the call skipped: a notification's answer
    /// button. `None` when this surface shows no card of that call with that option. The request
    /// it makes needs no page token and answers nothing else: used once, then refused, and
    /// refused for another call or answer.
    ///
    /// # Errors
    ///
    /// When the operating system's random source fails.
    pub fn grant(
        &self,
        session: &str,
        call_id: &CallId,
        question_id: &str,
        label: &str,
    ) -> std::io::Result<Option<GrantLink>> {
        let Some((questions, card)) = self.hub.card_questions(session, call_id) else {
            return Ok(None);
        };
        let offered = questions
            .iter()
            .any(|q| q.id == question_id && q.options().iter().any(|o| o.label == label));
        if !offered {
            return Ok(None);
        }
        let ids: Vec<String> = questions.iter().map(|q| q.id.clone()).collect();
        let batch = grants::button_batch(&ids, question_id, label);
        let body = serde_json::json!({ "answers": batch.answers }).to_string();
        let token = self
            .grants
            .issue(token::random_hex(24)?, session, call_id, batch, card);
        Ok(Some(GrantLink {
            path: format!(
                "/cards/{}/answer?grant={token}",
                routes::path_segment(call_id.as_str())
            ),
            body,
        }))
    }

    /// The questions of the open or continued card of `call_id` in `session`, if this surface
    /// shows one (a notifier's source for the text it may include).
    pub fn questions(&self, session: &str, call_id: &CallId) -> Option<Vec<Question>> {
        self.hub.questions(session, call_id)
    }

    /// Claims that pages hold now: one per timed card per page looking, plus holds.
    pub fn claims_held(&self) -> usize {
        self.hub.claims_held()
    }

    /// Sends every page a fresh snapshot of the cards, the desk's list read again. The surface
    /// does so by itself whenever its desk says its questions changed
    /// ([`QuestionDesk::changes`]).
    pub async fn refresh(&self) {
        self.hub.refresh().await;
    }

    /// Pages known now: with an open stream, inside their reconnect grace, or holding a wait.
    pub fn clients(&self) -> usize {
        self.hub.clients()
    }

    /// Serves the surface on `listener` until the returned server is shut down or dropped, within
    /// the options' [`HttpLimits`]; a request's `Host` must name the port served.
    pub fn serve(&self, listener: TcpListener) -> std::io::Result<WebServer> {
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        // Event streams end with the server, so the graceful stop does not wait for them.
        let router = routes::router(
            Arc::clone(&self.hub),
            Arc::clone(&self.token),
            Arc::clone(&self.grants),
            stop.clone(),
            Some(addr.port()),
        );
        let wait = stop.clone();
        let stopped = CancellationToken::new();
        let done = stopped.clone();
        let limits = self.hub.options.limits;
        let tls = self.hub.options.tls.clone();
        let scheme = if tls.is_some() { "https" } else { "http" };
        tokio::spawn(async move {
            ask_user_http::serve_with(listener, router, limits, tls, wait).await;
            done.cancel();
        });
        Ok(WebServer {
            surface: self.clone(),
            addr,
            scheme,
            token: Arc::clone(&self.token),
            stop: stop.clone(),
            stopped,
            _stop: stop.drop_guard(),
        })
    }

    /// Binds `addr` and serves there. Binding a non-loopback address needs `loopback_only`
    /// false in the options; it is refused otherwise, so a page is never reachable from another
    /// machine by mistake.
    pub async fn bind(&self, addr: SocketAddr) -> std::io::Result<WebServer> {
        if self.hub.options.loopback_only && !addr.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{addr} is not a loopback address; serving another needs it asked for"),
            ));
        }
        self.serve(TcpListener::bind(addr).await?)
    }

    /// [`bind`](Self::bind)s `addr`, and when that fails (the port is taken), a free port on
    /// the same address, with a warning: for a default address, never for one a person asked for.
    pub async fn bind_or_free_port(&self, addr: SocketAddr) -> std::io::Result<WebServer> {
        match self.bind(addr).await {
            Ok(server) => Ok(server),
            Err(error) => {
                tracing::warn!(%error, %addr, "the page's address is taken; serving on a free port");
                self.bind(SocketAddr::new(addr.ip(), 0)).await
            }
        }
    }
}

/// A one-time answer: `POST` [`path`](Self::path) (below [`WebServer::base_url`]) with the
/// JSON [`body`](Self::body) and `Content-Type: application/json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantLink {
    /// `/cards/{callId}/answer?grant=…`.
    pub path: String,
    /// `{"answers":[…]}`.
    pub body: String,
}

/// A running server. Dropping it stops serving.
pub struct WebServer {
    surface: WebSurface,
    addr: SocketAddr,
    /// `http` or `https`.
    scheme: &'static str,
    token: Arc<str>,
    stop: CancellationToken,
    /// Cancelled once the server task ended.
    stopped: CancellationToken,
    _stop: tokio_util::sync::DropGuard,
}

/// How long [`WebServer::stop`] waits for the pages to be told.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl fmt::Debug for WebServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl WebServer {
    /// The address served.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (`https://` over TLS), the base of [`WebSurface::grant`] paths.
    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// The page's URL with its token, to print for the person.
    pub fn url(&self) -> String {
        format!("{}/?token={}", self.base_url(), self.token)
    }

    /// What this page adds to notifications: [`WebSurface::links`] of the surface it serves.
    pub fn links(&self, public_url: Option<&str>) -> Arc<dyn ask_user_notify::Links> {
        self.surface.links(self, public_url)
    }

    /// Stops serving, and tells every open page first: its event stream ends with an `ended`
    /// event, on which the page says that the session has ended and nothing more will come, and
    /// stops reconnecting. Waits until the server has stopped (at most 2 s, so a page that does
    /// not read does not hold the host up). Dropping the server stops it too, without waiting:
    /// the pages may then miss the word.
    pub async fn stop(&self) {
        self.stop.cancel();
        let _ = tokio::time::timeout(STOP_GRACE, self.stopped.cancelled()).await;
    }
}
