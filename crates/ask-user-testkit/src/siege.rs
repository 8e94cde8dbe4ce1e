//! A siege of an HTTP server by slow and greedy clients (slow heads, idle connections, half-sent
//! bodies) while a legitimate request is sent again and again: what the page's and the MCP
//! server's limit tests measure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The variable that holds a siege longer (seconds): 0 by default, one round.
pub const SIEGE_SECS: &str = "ASK_USER_SIEGE_SECS";
/// Bad connections held open at once.
pub const BAD: usize = 300;
/// A legitimate request is answered within this, or the siege fails.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// The soft `RLIMIT_NOFILE` of this process, from `/proc/self/limits`.
pub fn nofile() -> String {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap()
        .lines()
        .find_map(|line| {
            line.strip_prefix("Max open files")
                .and_then(|rest| rest.split_whitespace().next().map(str::to_owned))
        })
        .unwrap()
}

/// What a bad connection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// Sends the request line it is given, then a header one byte every 2 s.
    SlowHeader,
    /// Sends nothing.
    Idle,
    /// Sends a request head announcing 1,000 body bytes, then 10 of them, then nothing.
    PartialBody,
}

/// Opens one bad connection and waits (at most a minute) until the server closes it: how long
/// that took from the connection's opening.
pub async fn bad_connection(
    addr: SocketAddr,
    kind: Bad,
    slow_head: &'static str,
    partial: String,
) -> Duration {
    let opened = Instant::now();
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return opened.elapsed();
    };
    let first: &[u8] = match kind {
        Bad::SlowHeader => slow_head.as_bytes(),
        Bad::Idle => b"",
        Bad::PartialBody => partial.as_bytes(),
    };
    if stream.write_all(first).await.is_err() {
        return opened.elapsed();
    }
    let mut buf = [0u8; 4096];
    let mut drip = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(2),
        Duration::from_secs(2),
    );
    let give_up = tokio::time::sleep(Duration::from_mins(1));
    tokio::pin!(give_up);
    loop {
        tokio::select! {
            () = &mut give_up => return opened.elapsed(),
            read = stream.read(&mut buf) => match read {
                Ok(0) | Err(_) => return opened.elapsed(),
                Ok(_) => {}
            },
            _ = drip.tick(), if kind == Bad::SlowHeader => {
                if stream.write_all(b"a").await.is_err() {
                    return opened.elapsed();
                }
            }
        }
    }
}

/// One request on a fresh connection (`Connection: close`); the response, or why not.
pub async fn exchange(addr: SocketAddr, request: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// What the siege measured.
#[derive(Debug)]
pub struct Figures {
    /// The slowest legitimate answer.
    pub slowest_answer: Duration,
    /// Legitimate requests answered.
    pub answered: usize,
    /// The longest a bad connection stayed open.
    pub longest_open: Duration,
    /// The same for each kind: slow header, idle, partial body.
    pub longest_by_kind: [Duration; 3],
    /// Bad connections opened.
    pub opened: usize,
}

/// Besieges `addr` with [`BAD`] bad connections (in equal parts of each kind), opened again as
/// they close for `hold`, while `legit` (a request that must get a `200`) is sent once, and then
/// every second while the siege holds.
pub async fn siege(
    addr: SocketAddr,
    slow_head: &'static str,
    partial: String,
    legit: String,
    hold: Duration,
) -> Figures {
    let kinds = [Bad::SlowHeader, Bad::Idle, Bad::PartialBody];
    let started = Instant::now();
    let mut bad = tokio::task::JoinSet::new();
    for i in 0..BAD {
        let kind = kinds[i % kinds.len()];
        bad.spawn(tagged(
            i % kinds.len(),
            bad_connection(addr, kind, slow_head, partial.clone()),
        ));
    }
    let mut opened = BAD;
    let mut longest_by_kind = [Duration::ZERO; 3];
    // Every bad connection is open (and has said what it says) before the first request.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut slowest_answer = Duration::ZERO;
    let mut answered = 0;
    let mut longest_open = Duration::ZERO;
    loop {
        let asked = Instant::now();
        let response = tokio::time::timeout(ANSWER_WITHIN, exchange(addr, &legit))
            .await
            .unwrap_or_else(|_| {
                panic!("a legitimate request was not answered within {ANSWER_WITHIN:?}")
            })
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        slowest_answer = slowest_answer.max(asked.elapsed());
        answered += 1;
        if started.elapsed() >= hold {
            break;
        }
        // Bad connections the server closed are opened again.
        let pause = tokio::time::sleep(Duration::from_secs(1));
        tokio::pin!(pause);
        loop {
            tokio::select! {
                () = &mut pause => break,
                Some(done) = bad.join_next() => {
                    let (kind, open) = done.unwrap();
                    longest_by_kind[kind] = longest_by_kind[kind].max(open);
                    longest_open = longest_open.max(open);
                    let next = opened % kinds.len();
                    bad.spawn(tagged(next, bad_connection(addr, kinds[next], slow_head, partial.clone())));
                    opened += 1;
                }
            }
        }
    }
    while let Some(done) = bad.join_next().await {
        let (kind, open) = done.unwrap();
        longest_by_kind[kind] = longest_by_kind[kind].max(open);
        longest_open = longest_open.max(open);
    }
    Figures {
        slowest_answer,
        answered,
        longest_open,
        longest_by_kind,
        opened,
    }
}

/// `future`'s output with `tag`.
async fn tagged<T>(tag: usize, future: impl std::future::Future<Output = T>) -> (usize, T) {
    (tag, future.await)
}

/// How long a siege holds: [`SIEGE_SECS`] seconds, 0 (one round) by default.
pub fn siege_hold() -> Duration {
    Duration::from_secs(
        std::env::var(SIEGE_SECS)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    )
}
