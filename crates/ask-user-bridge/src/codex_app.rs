//! A client of Codex's app-server (`codex app-server`: JSON-RPC 2.0, one message a line, over
//! the child's stdin and stdout): the requests the bridge makes (`initialize`, `hooks/list`,
//! `thread/start`, `turn/start`), the server's requests it answers (approvals, questions) and
//! its notifications.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

/// The longest line read from the app-server; a longer one is an error, not a buffer that grows.
pub const MAX_LINE: usize = 16 << 20;

/// Why the app-server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AppServerError {
    /// It could not be started (`codex` not found, not executable).
    #[error("cannot start `{program} app-server`: {error}")]
    Start {
        /// The program.
        program: String,
        /// The error.
        error: std::io::Error,
    },
    /// It went away, or its pipes failed.
    #[error("Codex's app-server went away: {0}")]
    Gone(String),
    /// It sent what is not a JSON-RPC message, or a line over [`MAX_LINE`].
    #[error("Codex's app-server sent {0}")]
    Malformed(String),
    /// It answered a request with an error.
    #[error("Codex's app-server refused `{method}`: {message}")]
    Refused {
        /// The request.
        method: String,
        /// Its error's message.
        message: String,
    },
}

/// What the app-server sends besides answers to our requests.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request of the server (an approval, a question): answered with [`AppServer::respond`].
    Request {
        /// Its id, handed back as it came.
        id: Value,
        /// `item/commandExecution/requestApproval`, `item/tool/requestUserInput`, …
        method: String,
        /// Its parameters.
        params: Value,
    },
    /// A notification (`turn/completed`, `serverRequest/resolved`, …).
    Notification {
        /// Its method.
        method: String,
        /// Its parameters.
        params: Value,
    },
}

/// A running `codex app-server`, initialized; it ends with this value (the child is killed on
/// drop). Its output is read by a task of its own, so [`AppServer::next`] can be raced.
#[derive(Debug)]
pub struct AppServer {
    child: Child,
    stdin: ChildStdin,
    incoming: mpsc::Receiver<Result<Value, AppServerError>>,
    _reader: tokio_util::task::AbortOnDropHandle<()>,
    next_id: i64,
    queued: VecDeque<Message>,
}

impl AppServer {
    /// Starts `program app-server ARGS…` in `cwd` and initializes it as `client`.
    ///
    /// # Errors
    ///
    /// It cannot be started, or refuses to initialize.
    pub async fn start(
        program: &Path,
        args: &[String],
        cwd: &Path,
        client: &str,
    ) -> Result<Self, AppServerError> {
        let mut child = Command::new(program)
            .arg("app-server")
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| AppServerError::Start {
                program: program.display().to_string(),
                error,
            })?;
        let gone = || AppServerError::Gone("no pipes".into());
        let stdin = child.stdin.take().ok_or_else(gone)?;
        let stdout = BufReader::new(child.stdout.take().ok_or_else(gone)?);
        let (sender, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(read_lines(stdout, sender));
        let mut server = Self {
            child,
            stdin,
            incoming,
            _reader: tokio_util::task::AbortOnDropHandle::new(reader),
            next_id: 0,
            queued: VecDeque::new(),
        };
        let info =
            json!({"name": client, "title": "ask-user", "version": env!("CARGO_PKG_VERSION")});
        let capabilities = json!({"experimentalApi": true});
        server
            .request(
                "initialize",
                json!({"clientInfo": info, "capabilities": capabilities}),
            )
            .await?;
        server
            .send(&json!({"jsonrpc": "2.0", "method": "initialized"}))
            .await?;
        Ok(server)
    }

    /// Sends `method` and waits for its answer; what else arrives meanwhile is kept for
    /// [`AppServer::next`].
    ///
    /// # Errors
    ///
    /// The server went away, sent something malformed, or answered with an error.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, AppServerError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let message = self.read().await?;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                if let Some(error) = message.get("error") {
                    let text = error.get("message").and_then(Value::as_str);
                    return Err(AppServerError::Refused {
                        method: method.to_owned(),
                        message: text.unwrap_or("no message").to_owned(),
                    });
                }
                return Ok(message.get("result").cloned().unwrap_or(Value::Null));
            }
            if let Some(message) = classify(&message) {
                self.queued.push_back(message);
            }
        }
    }

    /// The next request or notification of the server. Cancel-safe: nothing is lost when the
    /// future is dropped.
    ///
    /// # Errors
    ///
    /// The server went away or sent something malformed.
    pub async fn next(&mut self) -> Result<Message, AppServerError> {
        if let Some(message) = self.queued.pop_front() {
            return Ok(message);
        }
        loop {
            if let Some(message) = classify(&self.read().await?) {
                return Ok(message);
            }
        }
    }

    /// Answers the server's request `id`.
    ///
    /// # Errors
    ///
    /// The server went away.
    pub async fn respond(&mut self, id: &Value, result: Value) -> Result<(), AppServerError> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await
    }

    /// Refuses the server's request `id` (a method this client does not take).
    ///
    /// # Errors
    ///
    /// The server went away.
    pub async fn refuse(&mut self, id: &Value, message: &str) -> Result<(), AppServerError> {
        let error = json!({"code": -32601, "message": message});
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
            .await
    }

    /// Ends the server.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    async fn send(&mut self, message: &Value) -> Result<(), AppServerError> {
        let mut line = message.to_string();
        line.push('\n');
        (self.stdin.write_all(line.as_bytes()).await)
            .map_err(|e| AppServerError::Gone(e.to_string()))?;
        (self.stdin.flush().await).map_err(|e| AppServerError::Gone(e.to_string()))
    }

    async fn read(&mut self) -> Result<Value, AppServerError> {
        match self.incoming.recv().await {
            Some(message) => message,
            None => Err(AppServerError::Gone("its output ended".into())),
        }
    }
}

/// Reads the server's lines into `sender` until its output ends or a line is malformed.
async fn read_lines(
    mut stdout: BufReader<ChildStdout>,
    sender: mpsc::Sender<Result<Value, AppServerError>>,
) {
    loop {
        let mut line = Vec::new();
        let read = (&mut stdout)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        let message = match read {
            Ok(0) => return,
            Err(error) => Err(AppServerError::Gone(error.to_string())),
            Ok(_) if line.len() > MAX_LINE => Err(AppServerError::Malformed(format!(
                "a line over {MAX_LINE} bytes"
            ))),
            Ok(_) => serde_json::from_slice(&line)
                .map_err(|e| AppServerError::Malformed(format!("a line that is not JSON ({e})"))),
        };
        let failed = message.is_err();
        if sender.send(message).await.is_err() || failed {
            return;
        }
    }
}

/// A request or a notification; an answer nobody waits for is dropped.
fn classify(message: &Value) -> Option<Message> {
    let method = message.get("method")?.as_str()?.to_owned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    Some(match message.get("id") {
        Some(id) => Message::Request {
            id: id.clone(),
            method,
            params,
        },
        None => Message::Notification { method, params },
    })
}

/// One hook Codex has configured, as `hooks/list` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedHook {
    /// Its key in `[hooks.state]` (`PATH:permission_request:0:0`).
    pub key: String,
    /// The command it runs.
    pub command: String,
    /// The file it is configured in.
    pub source_path: PathBuf,
    /// The hash Codex trusts it by (`sha256:…`).
    pub current_hash: String,
    /// `trusted`, `untrusted`, `modified` or `managed`.
    pub trust_status: String,
}

/// The hooks Codex has configured for `cwd`, from `program app-server`'s `hooks/list`.
///
/// # Errors
///
/// The app-server cannot be started or refuses.
pub async fn hooks_list(program: &Path, cwd: &Path) -> Result<Vec<ListedHook>, AppServerError> {
    let mut server = AppServer::start(program, &[], cwd, "ask-user-hooks").await?;
    let listed = server.request("hooks/list", json!({"cwds": [cwd]})).await;
    server.stop().await;
    let text = |hook: &Value, key: &str| {
        (hook.get(key).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned()
    };
    let entries = listed?.get("data").cloned().unwrap_or(Value::Null);
    Ok((entries.as_array().into_iter().flatten())
        .filter_map(|entry| entry.get("hooks").and_then(Value::as_array).cloned())
        .flatten()
        .map(|hook| ListedHook {
            key: text(&hook, "key"),
            command: text(&hook, "command"),
            source_path: PathBuf::from(text(&hook, "sourcePath")),
            current_hash: text(&hook, "currentHash"),
            trust_status: text(&hook, "trustStatus"),
        })
        .collect())
}
