//! The page's server under slow and greedy clients, and the `Host` that must name the served
//! port: a real loopback server. The siege runs the server in a child process (this test binary
//! again, under `ulimit -n 256`): 300 connections that send a header a byte every 2 s, send
//! nothing, or stop halfway through a body, while a legitimate request must be answered within
//! 15 s and the server must close the bad connections within 30 s.
//!
//! `ASK_USER_SIEGE_SECS=120` keeps the siege going that long (every closed bad connection opened
//! again, a legitimate request every second); by default it is one wave.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use ask_user_testkit::siege::{ANSWER_WITHIN, exchange, nofile, siege, siege_hold};

/// Set in the child: it serves instead of testing.
/// How a slow head starts here.
const SLOW_HEAD: &str = "GET / HTTP/1.1\r\nX-Slow: ";

const CHILD: &str = "ASK_USER_LIMITS_CHILD";
/// The descriptor limit of the child.
const NOFILE: usize = 256;
/// What the server may take to close a bad connection.
const CLOSED_WITHIN: Duration = Duration::from_secs(30);

/// The server in a child process, killed on drop.
struct ChildServer {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `test` of this binary under a 256-descriptor limit; it prints `LISTENING ADDR TOKEN
/// NOFILE`.
fn child_server(test: &str) -> ChildServer {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(r#"ulimit -n {NOFILE} && exec "$0" "$@""#))
        .arg(&exe)
        .args([
            "--include-ignored",
            "--exact",
            test,
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines
        .by_ref()
        // libtest may have written `test NAME ... ` before it on the same line.
        .find_map(|line| Some(line.ok()?.split_once("LISTENING ")?.1.to_owned()))
        .expect("the child serves");
    std::thread::spawn(move || lines.for_each(drop));
    let mut words = line.split(' ');
    let addr = words.next().unwrap().parse().unwrap();
    let token = words.next().unwrap().to_owned();
    assert_eq!(
        words.next(),
        Some(NOFILE.to_string().as_str()),
        "the child's descriptor limit"
    );
    ChildServer { child, addr, token }
}

/// The server of [`slow_and_idle_clients_do_not_starve_the_page`], in its child process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the server of slow_and_idle_clients_do_not_starve_the_page, which starts it"]
async fn page_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let fx = common::Fixture::new(60);
    let server = fx.web.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    println!(
        "LISTENING {} {} {}",
        server.local_addr(),
        fx.web.token(),
        nofile()
    );
    std::future::pending::<()>().await;
}

/// 300 slow-header, idle and half-sent-body connections under a 256-descriptor limit: the
/// page's address still answers at once, and the server closes every one of them in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_do_not_starve_the_page() {
    let server = child_server("page_server");
    let (addr, token) = (server.addr, &server.token);
    let partial = format!(
        "POST /cards/call-1/answer?token={token} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"answers\""
    );
    let legit =
        format!("GET /pending?token={token} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let figures = siege(addr, SLOW_HEAD, partial, legit, siege_hold()).await;
    eprintln!("the page under siege: {figures:?}");
    assert!(figures.slowest_answer <= ANSWER_WITHIN, "{figures:?}");
    assert!(figures.longest_open <= CLOSED_WITHIN, "{figures:?}");
}

/// The `Host` of a request to a served page names the served port: not another one, and never
/// one outside 1..=65535.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_names_the_served_port() {
    let fx = common::Fixture::new(60);
    let server = fx.web.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    let token = fx.web.token();
    let port = addr.port();
    let other = if port == 65535 { port - 1 } else { port + 1 };
    let get = |host: String| {
        format!("GET /pending?token={token} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let response = exchange(addr, &get(host.clone())).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{host}: {response}");
    }
    for host in [
        format!("127.0.0.1:{other}"),
        "127.0.0.1:99999".to_owned(),
        "127.0.0.1:0".to_owned(),
        format!("localhost:{other}"),
        format!("[::1]:{other}"),
        // No port: port 80, which is not the one served.
        "127.0.0.1".to_owned(),
    ] {
        let response = exchange(addr, &get(host.clone())).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 403"), "{host}: {response}");
        assert!(response.contains("BAD_HOST"), "{host}: {response}");
    }
}

/// A server of `fx`'s surface with these limits, its event streams' keep-alive every 200 ms.
async fn served(limits: ask_user_web::HttpLimits) -> (common::Fixture, ask_user_web::WebServer) {
    let fx = common::Fixture::with_options(
        60,
        ask_user_web::WebOptions {
            keep_alive: Duration::from_millis(200),
            limits,
            ..ask_user_web::WebOptions::default()
        },
    );
    let server = fx.web.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    (fx, server)
}

/// Opens page `client`'s event stream on a connection of its own and reads its head.
async fn event_stream(addr: SocketAddr, token: &str, client: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request =
        format!("GET /events?client={client}&token={token} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 4096];
    let n = stream.read(&mut head).await.unwrap();
    let head = String::from_utf8_lossy(&head[..n]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

/// Whether the server closed `stream` within `within` (anything it sends is read past).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// A page's event stream is a response in progress: it outlives the head, body and idle
/// timeouts many times over (keep-alives flowing), while an idle connection beside it is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_outlives_every_timeout() {
    let short = Duration::from_millis(300);
    let (fx, server) = served(ask_user_web::HttpLimits {
        header_timeout: short,
        body_timeout: short,
        idle_timeout: short,
        ..ask_user_web::HttpLimits::default()
    })
    .await;
    let addr = server.local_addr();
    let mut page = event_stream(addr, fx.web.token(), "tab-1").await;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let opened = Instant::now();
    assert!(closed_within(&mut idle, Duration::from_secs(2)).await);
    let idle_closed = opened.elapsed();
    assert!(idle_closed >= short, "{idle_closed:?}");
    // Three seconds, ten times the timeouts: keep-alives keep coming, the stream stays.
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    while opened.elapsed() < Duration::from_secs(3) {
        match tokio::time::timeout(Duration::from_secs(1), page.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => received.extend_from_slice(&buf[..n]),
            other => panic!("the event stream ended: {other:?}"),
        }
    }
    let text = String::from_utf8_lossy(&received);
    assert!(text.matches(":\n\n").count() >= 5, "{text}");
    // And a card still reaches it.
    let _call = fx.ask("call-1", common::DB_QUESTION);
    let seen = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = String::new();
        while !text.contains("call-1") {
            let n = page.read(&mut buf).await.unwrap();
            assert!(n > 0, "the event stream ended");
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    assert!(seen.is_ok(), "no card came");
}

/// At the cap a new connection closes the one that has done nothing the longest, and is
/// served; when every connection is streaming a response, the next one waits until one ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_the_most_stalled_connection_makes_room() {
    let (fx, server) = served(ask_user_web::HttpLimits {
        max_connections: 4,
        ..ask_user_web::HttpLimits::default()
    })
    .await;
    let addr = server.local_addr();
    let token = fx.web.token().to_owned();
    let legit =
        format!("GET /pending?token={token} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(addr).await.unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let response = tokio::time::timeout(Duration::from_secs(2), exchange(addr, &legit))
        .await
        .expect("served at once")
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // The oldest idle one made room; the others stay (their idle timeout is 20 s).
    assert!(closed_within(&mut idle[0], Duration::from_secs(1)).await);
    for stream in &mut idle[1..] {
        assert!(!closed_within(stream, Duration::from_millis(100)).await);
    }
    drop(idle);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Four streams: the fifth connection waits.
    let mut pages = Vec::new();
    for n in 0..4 {
        pages.push(event_stream(addr, &token, &format!("tab-{n}")).await);
    }
    let waiting = tokio::spawn(async move { exchange(addr, &legit).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "served beyond the cap");
    for page in &mut pages {
        assert!(!closed_within(page, Duration::from_millis(50)).await);
    }
    drop(pages.pop());
    let response = tokio::time::timeout(Duration::from_secs(2), waiting)
        .await
        .expect("served once a stream ended")
        .unwrap()
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

/// Over TLS the page answers a question end to end: a client that trusts the CA loads the page
/// by the DNS name of the certificate, its answer from the page's `https://` origin reaches the
/// tool result, and a request from the `http://` origin of the same name is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_over_tls_takes_an_answer() {
    let ca = ask_user_testkit::tls::TestCa::new("ask-user test CA");
    let cert = ca.server(&["ask.test"]);
    let tls = ask_user_web::ServerTls::from_pem(cert.cert_pem.as_bytes(), cert.key_pem.as_bytes())
        .unwrap();
    let fx = common::Fixture::with_options(
        60,
        ask_user_web::WebOptions {
            tls: Some(tls),
            ..ask_user_web::WebOptions::default()
        },
    );
    let server = fx.web.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    assert!(
        server.url().starts_with("https://127.0.0.1:"),
        "{}",
        server.url()
    );
    let client = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.cert_pem.as_bytes()).unwrap())
        .resolve("ask.test", addr)
        .build()
        .unwrap();
    let base = format!("https://ask.test:{}", addr.port());
    let token = fx.web.token();
    let page = client
        .get(format!("{base}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("<html"));

    let call = fx.ask("c1", common::DB_QUESTION);
    let body = r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#;
    let answer = |origin: String| {
        client
            .post(format!("{base}/cards/c1/answer"))
            .header(ask_user_web::TOKEN_HEADER, token)
            .header("Origin", origin)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
    };
    // The card is up once the seam has the request.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    while Instant::now() < deadline {
        let refused = answer(format!("http://ask.test:{}", addr.port()))
            .await
            .unwrap();
        assert_eq!(refused.status(), 403);
        status = answer(base.clone()).await.unwrap().status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200);
    let outcome = call.await.unwrap();
    assert_eq!(
        common::answers_of(&outcome),
        Some(serde_json::json!([{"id": "db", "selected": ["SQLite"]}])),
        "{}",
        outcome.text
    );
}
