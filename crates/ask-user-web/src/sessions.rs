//! What a host gives the surface: its options (the questions beside its own cards come from a
//! [`QuestionDesk`](pending_answer::QuestionDesk)).

use std::time::Duration;

use user_questions::CallId;

use ask_user_http::{HttpLimits, ServerTls};

/// A card's identity: its session and call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct CardKey {
    pub(crate) session: String,
    pub(crate) call_id: CallId,
}

/// How to build a [`WebSurface`].
#[derive(Clone, Debug)]
pub struct WebOptions {
    /// The provenance name (and registration name) of the surface; `web` by default.
    pub name: String,
    /// The reconnect delay a page is told (`retry:` of the event stream); 2 s by default.
    pub retry: Duration,
    /// How long a page's claims outlive its last event stream, so a network blip does not expire
    /// a wait; 2× `retry` by default.
    pub reconnect_grace: Duration,
    /// The keep-alive interval of event streams; 5 s by default.
    pub keep_alive: Duration,
    /// The largest request body taken, in bytes; 64 KiB by default.
    pub body_limit: usize,
    /// Whether only loopback addresses may name the server in `Host` (true by default; a server
    /// bound to another address sets it false, and then any IP literal is taken, never a DNS
    /// name).
    pub loopback_only: bool,
    /// The capability token, fixed so a bookmarked address keeps working across restarts (at
    /// least 32 characters of `[0-9A-Za-z_-]`); `None` (the default): a fresh random one.
    pub token: Option<String>,
    /// Whether a timed card shows its window's countdown (true by default). A surface whose
    /// windows are kept elsewhere (the inbox: each host's own window decides) turns it off.
    pub countdowns: bool,
    /// The server's timeouts and connection cap ([`HttpLimits::default`]: a head in 10 s, a
    /// body in 20 s, 20 s idle, 256 connections). A page's event stream is a response in
    /// progress: no timeout closes it.
    pub limits: HttpLimits,
    /// The certificate and key to serve HTTPS with (`None`, the default: plain HTTP). Over TLS
    /// `Host` may name the server by a DNS name too (the one its certificate holds), and the
    /// page's own origin is its `https://` one.
    pub tls: Option<ServerTls>,
    /// Whether the server comes back at the same address with the same token after it stops
    /// (the machine's inbox, restarted): an open page then waits for it and reconnects, showing
    /// the questions of then; `false` (the default): the page is told nothing more will come.
    pub returns: bool,
}

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            name: user_questions::surface_names::WEB.to_owned(),
            retry: Duration::from_secs(2),
            reconnect_grace: Duration::from_secs(4),
            keep_alive: Duration::from_secs(5),
            body_limit: 64 * 1024,
            loopback_only: true,
            token: None,
            countdowns: true,
            limits: HttpLimits::default(),
            tls: None,
            returns: false,
        }
    }
}
