#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Bytes, HttpBody};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use user_questions::sync::lock_unpoisoned;

mod tls;

pub use tls::{HomePathError, ServerTls, TlsError, TlsFiles, TlsFilesError, home_path};

/// Limits on the connections of an HTTP server, so that slow or idle clients cannot hold it.
///
/// The timeouts close a connection that makes a request slowly or makes none; a response in
/// progress has no timeout (an event stream stays open as long as its client reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections served at once; 256 by default, and never more than the process's descriptor
    /// limit (`RLIMIT_NOFILE`) leaves after 64 for everything else: serving raises the soft
    /// limit towards the hard one first, as far as the cap needs. At the cap a new connection
    /// closes the one that has done nothing useful the longest (idle, or a request still
    /// coming in); when every connection is streaming a response, accepting waits.
    pub max_connections: usize,
    /// From a request's first byte until its head (request line and headers) is in; 10 s by
    /// default.
    pub header_timeout: Duration,
    /// From a request's head until its body is in; 20 s by default.
    pub body_timeout: Duration,
    /// How long a connection may stay open with no request (after it was accepted, or after its
    /// last response ended); 20 s by default.
    pub idle_timeout: Duration,
    /// How long a response may wait to write because its client reads nothing (its socket's
    /// buffers full); 60 s by default. A client that reads slowly, or a stream with nothing to
    /// say, is never closed by it: only one whose writes make no progress at all.
    pub write_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(20),
            write_timeout: Duration::from_mins(1),
        }
    }
}

/// Descriptors left for everything but connections (logs, the runtime, the listener).
const RESERVED_DESCRIPTORS: usize = 64;

impl HttpLimits {
    /// The cap in effect: [`max_connections`](Self::max_connections), lowered to what the
    /// descriptor limit leaves (at least 1).
    pub fn connection_cap(&self) -> usize {
        let cap = self.max_connections.max(1);
        match descriptor_limit() {
            Some(limit) => cap.min(limit.saturating_sub(RESERVED_DESCRIPTORS).max(1)),
            None => cap,
        }
    }
}

/// Raises this process's soft descriptor limit (`RLIMIT_NOFILE`) to `wanted`, or to the hard
/// limit when that is lower; never lowers it. Returns the soft limit in effect afterwards
/// (`None` where the system does not tell it). A soft limit of 1,024, the default of many
/// systems, would otherwise cap a server at 960 connections however high its hard limit is.
pub fn raise_descriptor_limit(wanted: usize) -> Option<usize> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    // The kernel takes no soft limit past `fs.nr_open`, even under an unlimited hard one.
    let kernel = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let wanted = u64::try_from(wanted)
        .unwrap_or(u64::MAX)
        .min(hard)
        .min(kernel);
    if wanted > soft && setrlimit(Resource::RLIMIT_NOFILE, wanted, hard).is_ok() {
        return usize::try_from(wanted).ok();
    }
    usize::try_from(soft).ok()
}

/// The soft `RLIMIT_NOFILE` of this process, where `/proc` tells it.
fn descriptor_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What one connection is doing, as far as its timeouts are concerned.
struct State {
    /// Request bodies not yet read to their end.
    bodies: usize,
    /// When the oldest of them started.
    body_since: Instant,
    /// Requests whose response has not ended (from the head until the last byte of the body).
    responses: usize,
    /// When the connection last had nothing to do: accepted, or its last response ended.
    free_since: Instant,
    /// When the first byte of the next request came, while free.
    head_since: Option<Instant>,
    /// Since when a write has waited for the client to read (the socket's buffers full).
    write_blocked: Option<Instant>,
}

impl State {
    /// When the connection is closed unless something happens first; `None` while a response
    /// is in progress and its request's body is in.
    fn deadline(&self, limits: &HttpLimits) -> Option<Instant> {
        let reading = self.reading_deadline(limits);
        match self.write_blocked.map(|since| since + limits.write_timeout) {
            Some(write) => Some(reading.map_or(write, |read| read.min(write))),
            None => reading,
        }
    }

    /// [`deadline`](Self::deadline) as far as the client's requests are concerned.
    fn reading_deadline(&self, limits: &HttpLimits) -> Option<Instant> {
        if self.bodies > 0 {
            Some(self.body_since + limits.body_timeout)
        } else if self.responses > 0 {
            None
        } else if let Some(head) = self.head_since {
            Some(head + limits.header_timeout)
        } else {
            Some(self.free_since + limits.idle_timeout)
        }
    }

    /// Since when the connection has done nothing useful (idle, or a request still coming in);
    /// `None` while it is answering.
    fn stalled_since(&self) -> Option<Instant> {
        if self.bodies > 0 {
            Some(self.body_since)
        } else if self.responses > 0 {
            // A response nobody reads is no use either.
            self.write_blocked
        } else {
            Some(self.head_since.unwrap_or(self.free_since))
        }
    }
}

/// One connection's state, shared by its reader, its requests and the accept loop.
struct Watch {
    state: Mutex<State>,
    /// Told when the deadline may have moved.
    changed: Notify,
    /// Cancelled to close the connection at once (the cap needs its descriptor).
    evict: CancellationToken,
}

impl Watch {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            state: Mutex::new(State {
                bodies: 0,
                body_since: now,
                responses: 0,
                free_since: now,
                head_since: None,
                write_blocked: None,
            }),
            changed: Notify::new(),
            evict: CancellationToken::new(),
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut lock_unpoisoned(&self.state));
        self.changed.notify_one();
    }

    fn deadline(&self, limits: &HttpLimits) -> Option<Instant> {
        lock_unpoisoned(&self.state).deadline(limits)
    }

    fn stalled_since(&self) -> Option<Instant> {
        lock_unpoisoned(&self.state).stalled_since()
    }

    /// Bytes came in: on a free connection, the next request's head has started.
    fn read_some(&self) {
        let mut state = lock_unpoisoned(&self.state);
        if state.bodies == 0 && state.responses == 0 && state.head_since.is_none() {
            state.head_since = Some(Instant::now());
            drop(state);
            self.changed.notify_one();
        }
    }

    /// A write waited (`blocked`) or went through.
    fn wrote(&self, blocked: bool) {
        let mut state = lock_unpoisoned(&self.state);
        if state.write_blocked.is_some() != blocked {
            state.write_blocked = blocked.then(Instant::now);
            drop(state);
            self.changed.notify_one();
        }
    }

    /// A request's head is in: its response is under way, and its body, if it has one, comes.
    fn request(self: &Arc<Self>, has_body: bool) -> (Done, Option<Done>) {
        self.update(|state| {
            state.responses += 1;
            state.head_since = None;
            if has_body {
                if state.bodies == 0 {
                    state.body_since = Instant::now();
                }
                state.bodies += 1;
            }
        });
        let body = has_body.then(|| Done {
            watch: Arc::clone(self),
            what: Part::Body,
        });
        (
            Done {
                watch: Arc::clone(self),
                what: Part::Response,
            },
            body,
        )
    }
}

#[derive(Clone, Copy)]
enum Part {
    Body,
    Response,
}

/// Ends a request's body or response when dropped.
pub(crate) struct Done {
    watch: Arc<Watch>,
    what: Part,
}

impl Drop for Done {
    fn drop(&mut self) {
        let what = self.what;
        self.watch.update(|state| match what {
            Part::Body => state.bodies = state.bodies.saturating_sub(1),
            Part::Response => {
                state.responses = state.responses.saturating_sub(1);
                if state.responses == 0 {
                    state.free_since = Instant::now();
                    state.head_since = None;
                }
            }
        });
    }
}

/// A body that drops `guard` once it has ended (or failed), or when it is dropped.
pub struct Watched<B, G> {
    inner: B,
    guard: Option<G>,
}

impl<B, G> Watched<B, G> {
    /// `inner`, holding `guard` until it ends.
    pub fn new(inner: B, guard: G) -> Self {
        Self {
            inner,
            guard: Some(guard),
        }
    }
}

impl<B, G> HttpBody for Watched<B, G>
where
    B: HttpBody<Data = Bytes> + Unpin,
    G: Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None | Some(Err(_))) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            Poll::Pending => false,
        };
        if ended {
            this.guard = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The connection's socket, telling its watch when bytes come in.
struct WatchedIo {
    inner: TcpStream,
    watch: Arc<Watch>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.read_some();
        }
        polled
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch.wrote(polled.is_pending());
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch.wrote(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch.wrote(polled.is_pending());
        polled
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The connections being served.
struct Live {
    conns: Mutex<HashMap<u64, Arc<Watch>>>,
    /// How many there are.
    count: tokio::sync::watch::Sender<usize>,
}

impl Live {
    fn insert(&self, id: u64, watch: Arc<Watch>) -> usize {
        let mut conns = lock_unpoisoned(&self.conns);
        conns.insert(id, watch);
        let count = conns.len();
        self.count.send_replace(count);
        count
    }

    fn remove(&self, id: u64) {
        let mut conns = lock_unpoisoned(&self.conns);
        conns.remove(&id);
        self.count.send_replace(conns.len());
    }

    /// Closes the connection (other than `spare`) that has done nothing useful the longest;
    /// false when every one is answering.
    fn evict_stalled(&self, spare: u64) -> bool {
        let conns = lock_unpoisoned(&self.conns);
        let oldest = conns
            .iter()
            .filter(|(id, watch)| **id != spare && !watch.evict.is_cancelled())
            .filter_map(|(_, watch)| watch.stalled_since().map(|since| (since, watch)))
            .min_by_key(|(since, _)| *since);
        match oldest {
            Some((_, watch)) => {
                watch.evict.cancel();
                true
            }
            None => false,
        }
    }
}

/// Whether an accept error concerns only the connection being accepted.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serves `router` on `listener` within `limits` until `stop` is cancelled, then lets the
/// responses in progress end (an event stream ends when the server tells it to) and returns.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    stop: CancellationToken,
) {
    serve_with(listener, router, limits, None, stop).await;
}

/// [`serve`] over TLS: each connection's handshake first, within the head's timeout (a client
/// that stalls it is closed as one that stalls a head), then HTTP/1.1 inside.
pub async fn serve_tls(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    tls: ServerTls,
    stop: CancellationToken,
) {
    serve_with(listener, router, limits, Some(tls), stop).await;
}

/// [`serve`] or [`serve_tls`], as `tls` says.
pub async fn serve_with(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    tls: Option<ServerTls>,
    stop: CancellationToken,
) {
    raise_descriptor_limit(limits.max_connections.saturating_add(RESERVED_DESCRIPTORS));
    let cap = limits.connection_cap();
    let (count, mut counted) = tokio::sync::watch::channel(0);
    let live = Arc::new(Live {
        conns: Mutex::new(HashMap::new()),
        count,
    });
    let mut next_id = 0_u64;
    let mut warned: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                // Out of descriptors, most likely: free one, and try again in a moment.
                if warned.is_none_or(|at| at.elapsed() > Duration::from_mins(1)) {
                    tracing::warn!(%error, "cannot accept a connection");
                    warned = Some(Instant::now());
                }
                live.evict_stalled(u64::MAX);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    () = stop.cancelled() => break,
                }
            }
        };
        let id = next_id;
        next_id += 1;
        let watch = Arc::new(Watch::new());
        if live.insert(id, Arc::clone(&watch)) > cap {
            // Room is made by closing a stalled connection; while every other one is answering,
            // this one is served once one of them ends or stalls.
            loop {
                let count = *counted.borrow_and_update();
                if count <= cap || live.evict_stalled(id) {
                    break;
                }
                tokio::select! {
                    _ = counted.changed() => {}
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                    () = stop.cancelled() => break,
                }
            }
            if stop.is_cancelled() {
                live.remove(id);
                break;
            }
        }
        tokio::spawn({
            let live = Arc::clone(&live);
            let router = router.clone();
            let stop = stop.clone();
            let tls = tls.clone();
            async move {
                let io = WatchedIo {
                    inner: stream,
                    watch: Arc::clone(&watch),
                };
                match tls {
                    None => connection(io, router, limits, &watch, &stop).await,
                    Some(tls) => {
                        if let Some(io) = handshake(&tls, io, &limits, &watch, &stop).await {
                            connection(io, router, limits, &watch, &stop).await;
                        }
                    }
                }
                live.remove(id);
            }
        });
    }
    drop(listener);
    let _ = counted.wait_for(|n| *n == 0).await;
}

/// The TLS handshake of a connection, within the head's timeout; `None` when it failed, took
/// too long, or the cap or the server's stop closed the connection first.
async fn handshake(
    tls: &ServerTls,
    io: WatchedIo,
    limits: &HttpLimits,
    watch: &Watch,
    stop: &CancellationToken,
) -> Option<tokio_rustls::server::TlsStream<WatchedIo>> {
    tokio::select! {
        done = tokio::time::timeout(limits.header_timeout, tls.acceptor.accept(io)) => match done {
            Ok(Ok(io)) => Some(io),
            Ok(Err(error)) => {
                tracing::debug!(%error, "a TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!("closing a connection whose TLS handshake was too slow");
                None
            }
        },
        () = watch.evict.cancelled() => None,
        () = stop.cancelled() => None,
    }
}

/// How long a connection hyper is done with may still read what its client sends before it is
/// closed ([`linger`]), and how much.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 << 20;

/// The lingering close of a connection hyper is done with: its side is shut down (the response is
/// out, and the client reads its end), then what the client still sends is read and dropped until
/// it closes too, for [`LINGER`] and [`LINGER_BYTES`] at most. A server that answers before it
/// read a request's body (a `413` for a body over the limit) and closed at once would make the
/// kernel reset the connection, and a client still sending would lose the answer.
async fn linger<I: AsyncRead + AsyncWrite + Unpin>(mut io: I) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if io.shutdown().await.is_err() {
        return;
    }
    let mut buffer = vec![0_u8; 8192];
    let mut read = 0;
    let _ = tokio::time::timeout(LINGER, async {
        while read < LINGER_BYTES {
            match io.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
    })
    .await;
}

/// Serves one connection until it ends, a timeout or the cap closes it, or the server stops.
async fn connection<I>(
    io: I,
    router: axum::Router,
    limits: HttpLimits,
    watch: &Arc<Watch>,
    stop: &CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    let service = {
        let watch = Arc::clone(watch);
        let router = TowerToHyperService::new(router);
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let (response, body) = watch.request(!request.body().is_end_stream());
            let request = request.map(|incoming| Watched {
                inner: incoming,
                guard: body,
            });
            let call = hyper::service::Service::call(&router, request);
            // Boxed (`Unpin`), so the connection can be polled without shutting it down and its
            // stream taken back for the lingering close.
            Box::pin(async move {
                let answer = call.await?;
                Ok::<_, Infallible>(answer.map(|inner| Watched::new(inner, response)))
            })
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // hyper's own clock for the head runs from the moment a request may come: a bound on
        // idle time and head together, behind the watch's finer ones.
        .header_read_timeout(limits.idle_timeout + limits.header_timeout)
        .keep_alive(true);
    let mut conn = builder.serve_connection(io, service);
    let mut stopping = false;
    loop {
        let deadline = watch.deadline(&limits);
        let expiry = async move {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            served = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => {
                match served {
                    Err(error) => tracing::debug!(%error, "a connection ended"),
                    // Boxed: its buffer would otherwise be in every connection's task.
                    Ok(()) if !stopping => {
                        Box::pin(linger(conn.into_parts().io.into_inner())).await;
                    }
                    Ok(()) => {}
                }
                return;
            }
            () = expiry => {
                if watch.deadline(&limits).is_some_and(|at| at <= Instant::now()) {
                    tracing::debug!("closing a connection that was too slow or idle");
                    return;
                }
            }
            () = watch.changed.notified() => {}
            () = watch.evict.cancelled() => {
                tracing::debug!("closing a stalled connection to make room for a new one");
                return;
            }
            () = stop.cancelled(), if !stopping => {
                if watch.stalled_since().is_some() {
                    return;
                }
                stopping = true;
                Pin::new(&mut conn).graceful_shutdown();
            }
        }
    }
}
