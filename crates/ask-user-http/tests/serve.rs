//! The accept loop over TLS, and a response its client does not read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ask_user_http::{HttpLimits, ServerTls, TlsError};
use ask_user_testkit::tls::TestCa;
use axum::body::{Body, Bytes};
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Tells when it is dropped.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// `/` says hello; `/flood` streams 64 KiB chunks for ever; `/tick` a small chunk every 100 ms;
/// `/upload` takes a body of 1 KiB at most (`413` past it, before the rest is read).
/// `ended` is set when a stream's body is dropped.
fn router(ended: &Arc<AtomicBool>) -> axum::Router {
    let flood_ended = Arc::clone(ended);
    let tick_ended = Arc::clone(ended);
    axum::Router::new()
        .route("/", get(|| async { "hello" }))
        .route(
            "/flood",
            get(move || {
                let guard = Dropped(Arc::clone(&flood_ended));
                async move {
                    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
                    let stream = futures::stream::unfold(guard, move |guard| {
                        let chunk = chunk.clone();
                        async move { Some((Ok::<_, std::io::Error>(chunk), guard)) }
                    });
                    Body::from_stream(stream)
                }
            }),
        )
        .route(
            "/upload",
            axum::routing::post(|body: Bytes| async move { format!("{} bytes", body.len()) })
                .layer(axum::extract::DefaultBodyLimit::max(1024)),
        )
        .route(
            "/tick",
            get(move || {
                let guard = Dropped(Arc::clone(&tick_ended));
                async move {
                    let stream = futures::stream::unfold(guard, |guard| async move {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Some((
                            Ok::<_, std::io::Error>(Bytes::from_static(b"tick\n")),
                            guard,
                        ))
                    });
                    Body::from_stream(stream)
                }
            }),
        )
}

struct Served {
    addr: SocketAddr,
    stop: CancellationToken,
    ended: Arc<AtomicBool>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn served(limits: HttpLimits, tls: Option<ServerTls>) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let ended = Arc::new(AtomicBool::new(false));
    tokio::spawn(ask_user_http::serve_with(
        listener,
        router(&ended),
        limits,
        tls,
        stop.clone(),
    ));
    Served { addr, stop, ended }
}

fn tls_for(ca: &TestCa) -> ServerTls {
    let server = ca.server(&["localhost", "127.0.0.1"]);
    ServerTls::from_pem(server.cert_pem.as_bytes(), server.key_pem.as_bytes()).unwrap()
}

fn client_trusting(ca: &TestCa) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.cert_pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

/// How long until the server closes `stream` (reading and dropping whatever it sends), at
/// most `within`.
async fn closed_after(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0_u8; 4096];
    let read_all = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return started.elapsed(),
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, read_all).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_a_client_that_trusts_the_ca_and_no_other() {
    let ca = TestCa::new("ask-user test CA");
    let server = served(HttpLimits::default(), Some(tls_for(&ca))).await;
    let url = format!("https://localhost:{}/", server.addr.port());
    let response = client_trusting(&ca).get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "hello");

    // A client that trusts another CA refuses the server's certificate.
    let other = TestCa::new("another CA");
    let refused = client_trusting(&other).get(&url).send().await.unwrap_err();
    assert!(refused.is_connect(), "{refused:?}");

    // Plain HTTP to the TLS port gets no HTTP answer, and the connection is closed.
    let mut plain = TcpStream::connect(server.addr).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut answer)).await;
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");

    // The server still serves after both.
    let again = client_trusting(&ca).get(&url).send().await.unwrap();
    assert_eq!(again.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_tls_handshake_is_closed_within_the_head_timeout() {
    let ca = TestCa::new("ask-user test CA");
    let limits = HttpLimits {
        header_timeout: Duration::from_millis(500),
        ..HttpLimits::default()
    };
    let server = served(limits, Some(tls_for(&ca))).await;
    // The first bytes of a TLS record, then nothing.
    let mut stalled = TcpStream::connect(server.addr).await.unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01, 0x02]).await.unwrap();
    let closed = closed_after(&mut stalled, Duration::from_secs(10)).await;
    assert!(
        closed.is_some_and(|after| after < Duration::from_secs(5)),
        "{closed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_its_client_does_not_read_is_closed_after_the_write_timeout() {
    let limits = HttpLimits {
        write_timeout: Duration::from_millis(500),
        ..HttpLimits::default()
    };
    let server = served(limits, None).await;
    let mut reader = TcpStream::connect(server.addr).await.unwrap();
    reader
        .write_all(b"GET /flood HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    // Reads nothing: the server's writes fill the socket's buffers and wait.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.ended.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server.ended.load(Ordering::SeqCst),
        "the stream nobody reads is still open"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_its_client_reads_is_kept_past_the_write_timeout() {
    let limits = HttpLimits {
        write_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let ca = TestCa::new("ask-user test CA");
    let server = served(limits, Some(tls_for(&ca))).await;
    let url = format!("https://localhost:{}/tick", server.addr.port());
    let mut response = client_trusting(&ca).get(&url).send().await.unwrap();
    let started = Instant::now();
    let mut ticks = 0;
    while started.elapsed() < Duration::from_millis(1500) {
        let chunk = response.chunk().await.unwrap().expect("the stream ended");
        ticks += chunk.split(|b| *b == b'\n').count() - 1;
    }
    assert!(ticks >= 10, "{ticks} ticks");
    assert!(!server.ended.load(Ordering::SeqCst));
}

/// A body over the route's limit is answered `413` before the server has read it; the server
/// reads and drops the rest before it closes (a lingering close), so the client, still sending,
/// gets the answer instead of a reset connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_answered_413_not_reset_while_the_client_still_sends() {
    let served = served(HttpLimits::default(), None).await;
    let client = reqwest::Client::new();
    for round in 0..5 {
        let response = client
            .post(format!("http://{}/upload", served.addr))
            .body(vec![b'x'; 10_000_000])
            .send()
            .await
            .unwrap_or_else(|error| panic!("round {round}: {error:?}"));
        assert_eq!(response.status(), 413, "round {round}");
    }
    // A body within the limit is taken.
    let response = client
        .post(format!("http://{}/upload", served.addr))
        .body(vec![b'x'; 1000])
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "1000 bytes");
}

#[test]
fn a_bad_certificate_or_key_is_a_clear_error() {
    let ca = TestCa::new("ask-user test CA");
    let server = ca.server(&["localhost"]);
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let error = ServerTls::from_pem_files(&missing, &missing).unwrap_err();
    assert!(matches!(error, TlsError::Read { .. }), "{error}");
    assert!(error.to_string().contains("missing.pem"), "{error}");

    let error = ServerTls::from_pem(b"not a certificate", server.key_pem.as_bytes()).unwrap_err();
    assert!(error.to_string().contains("no PEM certificate"), "{error}");

    let error = ServerTls::from_pem(server.cert_pem.as_bytes(), b"no key here").unwrap_err();
    assert!(error.to_string().contains("no PEM private key"), "{error}");

    // A key that is not the certificate's.
    let other = ca.server(&["localhost"]);
    let error =
        ServerTls::from_pem(server.cert_pem.as_bytes(), other.key_pem.as_bytes()).unwrap_err();
    assert!(matches!(error, TlsError::Refused(_)), "{error}");
    // The key never shows in the error's debug form either.
    assert!(!format!("{error:?}").contains("PRIVATE KEY"));
}
