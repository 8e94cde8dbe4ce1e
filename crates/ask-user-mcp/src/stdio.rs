//! The stdio transport, with the one rule of the handshake rmcp leaves to servers: a request sent
//! before `initialize` (a person trying `tools/list` by hand, say) is answered "initialize first",
//! not with the missing per-request metadata of the 2026-07-28 revision. A request that carries
//! that revision's metadata (`_meta` with `io.modelcontextprotocol/protocolVersion`), a `ping` and
//! `initialize` itself go to rmcp as they came; from `initialize` on, every line does.
//!
//! stdin is read line by line (the transport's framing) and fed to rmcp through an in-memory pipe;
//! rmcp's output and the refusals reach stdout through one writer, whole lines at a time.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The buffer of each in-memory pipe.
const PIPE: usize = 1 << 16;

/// The error code of a request before `initialize` (JSON-RPC "Invalid Request").
const NOT_INITIALIZED: i64 = -32600;

/// rmcp's end of the transport (what it reads, what it writes) and the two tasks that move the
/// lines; await [`Pumps::finish`] once rmcp is done, so every line it wrote reaches stdout.
pub(crate) fn transport<R, W>(input: R, output: W) -> ((DuplexStream, DuplexStream), Pumps)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_reads, feed) = tokio::io::duplex(PIPE);
    let (rmcp_writes, written) = tokio::io::duplex(PIPE);
    let (refusals, refused) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read(input, feed, refusals));
    let writer = tokio::spawn(write(written, refused, output));
    ((rmcp_reads, rmcp_writes), Pumps { reader, writer })
}

/// The tasks of one stdio session.
pub(crate) struct Pumps {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Pumps {
    /// Waits for the writer to put out what rmcp wrote (rmcp has closed its end), and stops
    /// reading stdin.
    pub(crate) async fn finish(self) {
        self.reader.abort();
        let _ = self.writer.await;
    }
}

/// Feeds stdin to rmcp, refusing what comes before `initialize` without the new metadata.
async fn read<R: AsyncRead + Unpin>(
    input: R,
    mut feed: DuplexStream,
    refusals: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    let mut initialized = false;
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if !initialized {
            match before_initialize(&line) {
                Early::Initialize => initialized = true,
                Early::Pass => {}
                Early::Refuse(refusal) => {
                    let _ = refusals.send(refusal);
                    continue;
                }
            }
        }
        if feed.write_all(&line).await.is_err() {
            break;
        }
    }
    // rmcp reads the end of its input and closes the session.
    let _ = feed.shutdown().await;
}

/// Writes rmcp's lines and the refusals to stdout, whole lines, flushed as they come.
async fn write<W: AsyncWrite + Unpin>(
    written: DuplexStream,
    mut refused: mpsc::UnboundedReceiver<String>,
    mut output: W,
) {
    let mut written = BufReader::new(written);
    let mut line = Vec::new();
    loop {
        tokio::select! {
            biased;
            read = written.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if output.write_all(&line).await.is_err() {
                        return;
                    }
                    line.clear();
                }
            },
            Some(refusal) = refused.recv() => {
                if output.write_all(refusal.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
        if output.flush().await.is_err() {
            return;
        }
    }
    while let Ok(refusal) = refused.try_recv() {
        if output.write_all(refusal.as_bytes()).await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

/// What to do with a line that came before `initialize`.
enum Early {
    /// It is `initialize`: from now on every line goes to rmcp.
    Initialize,
    /// rmcp takes it (a ping, a notification, a response, a request with the new metadata, or
    /// something that is no request, which rmcp reports).
    Pass,
    /// The refusal to write instead.
    Refuse(String),
}

fn before_initialize(line: &[u8]) -> Early {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        return Early::Pass;
    };
    let (Some(method), Some(id)) = (
        message.get("method").and_then(Value::as_str),
        message.get("id"),
    ) else {
        return Early::Pass;
    };
    let stateless = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .is_some();
    match method {
        "initialize" => Early::Initialize,
        "ping" => Early::Pass,
        _ if stateless => Early::Pass,
        _ => {
            let refusal = serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": NOT_INITIALIZED,
                    "message": format!(
                        "the server is not initialized: send initialize before {}",
                        serde_json::Value::from(method)
                    ),
                },
            });
            Early::Refuse(format!("{refusal}\n"))
        }
    }
}
