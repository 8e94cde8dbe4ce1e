//! A Codex turn run through its app-server, as its client: every prompt Codex asks its client
//! (a command or file-change approval, `request_user_input`) is [`ask`](crate::ask)ed of the
//! machine's inbox, and the first answer is Codex's; a prompt Codex settles itself
//! (`serverRequest/resolved`) is withdrawn from every surface.
//!
//! There is no terminal of Codex's here to race: the inbox is where the person answers, so an
//! ask waits as long as the person takes. Nobody answering, or no inbox, never approves: an
//! approval without a person's decision is declined, a question without answers is answered
//! with none.

use std::collections::HashMap;
use std::path::PathBuf;

use native_asks::{Agent, Decision, NativeAsk};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::codex_app::{AppServer, AppServerError, Message};
use crate::{BridgeError, BridgeOptions, Ended};

/// The turn to run.
#[derive(Clone, Debug)]
pub struct CodexTurn {
    /// The `codex` program.
    pub codex: PathBuf,
    /// Arguments after `app-server` (`-c key=value`, `--enable FEATURE`).
    pub args: Vec<String>,
    /// The folder Codex works in.
    pub cwd: PathBuf,
    /// What the person asks Codex to do.
    pub prompt: String,
}

/// What happened, for the person running the turn (every text as Codex or the model wrote it:
/// escape it before it reaches a terminal).
#[derive(Clone, Debug, PartialEq)]
pub enum TurnNote {
    /// The thread started: its id (the asks' session).
    Started {
        /// Codex's thread id.
        thread: String,
    },
    /// Codex's model said this.
    Said(String),
    /// Codex asked: its prompt is a card in the inbox.
    Asked {
        /// What is asked (the approval's question, or the questions).
        what: String,
    },
    /// A person answered: what Codex was told.
    Answered {
        /// `accept`, `decline`, or the answers.
        told: String,
        /// Where it was answered.
        surface: String,
    },
    /// Codex was told no, or no answers, because nobody decided (why).
    Declined(String),
    /// Codex settled its prompt itself: the card was withdrawn.
    Withdrawn,
    /// A request of Codex this client does not answer (its method), refused.
    Refused(String),
}

impl TurnNote {
    /// The note as a line for the person running the turn, every text of Codex's escaped for a
    /// terminal; `Said` is the model's text itself (stdout's), the others say what happened
    /// (stderr's).
    #[must_use]
    pub fn line(&self) -> String {
        use user_questions::sanitize::{visible, visible_lines};
        match self {
            Self::Said(text) => visible(text).into_owned(),
            Self::Started { thread } => format!("codex: thread {}", visible(thread)),
            Self::Asked { what } => format!("codex asks (in the inbox): {}", visible_lines(what)),
            Self::Answered { told, surface } => format!(
                "codex was told {} (from the {})",
                visible(told),
                visible(surface)
            ),
            Self::Declined(why) => format!("codex was told no: {}", visible(why)),
            Self::Withdrawn => "codex settled a prompt itself: its card is withdrawn".to_owned(),
            Self::Refused(method) => format!(
                "codex asked what ask-user does not answer ({}): refused",
                visible(method)
            ),
        }
    }
}

/// How the turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnEnded {
    /// Codex's thread id.
    pub thread: String,
    /// `completed`, `interrupted`, `failed`, or `stopped` (ours: `stop` was cancelled).
    pub status: String,
}

/// Why the turn could not run.
#[derive(Debug, thiserror::Error)]
pub enum CodexError {
    /// The app-server failed.
    #[error(transparent)]
    AppServer(#[from] AppServerError),
    /// The bridge failed.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
}

/// A prompt of Codex's waiting in the inbox.
struct Waiting {
    id: Value,
    method: String,
    cancel: CancellationToken,
}

/// Runs `turn` to its end: starts `codex app-server`, a thread in `turn.cwd`, and the turn;
/// answers Codex's prompts from the inbox (`options`), telling `note` what happens. `stop`
/// interrupts the turn and withdraws what waits.
///
/// # Errors
///
/// The app-server cannot be started or goes away, or the bridge fails.
pub async fn run_turn(
    turn: &CodexTurn,
    options: &BridgeOptions,
    note: &mut (dyn FnMut(TurnNote) + Send),
    stop: &CancellationToken,
) -> Result<TurnEnded, CodexError> {
    let mut server = AppServer::start(&turn.codex, &turn.args, &turn.cwd, "ask-user").await?;
    let cwd = turn.cwd.display().to_string();
    let started = server
        .request(
            "thread/start",
            json!({"cwd": cwd, "approvalPolicy": "on-request"}),
        )
        .await?;
    let thread = text(&started, "/thread/id");
    note(TurnNote::Started {
        thread: thread.clone(),
    });
    let input = json!([{"type": "text", "text": turn.prompt}]);
    let begun = server
        .request("turn/start", json!({"threadId": thread, "input": input}))
        .await?;
    let turn_id = text(&begun, "/turn/id");
    // The changes of each file-change item, which its approval request names.
    let mut changes: HashMap<String, Value> = HashMap::new();
    let mut waiting: HashMap<String, Waiting> = HashMap::new();
    let mut asks: JoinSet<(String, Result<Ended, BridgeError>)> = JoinSet::new();
    let status = loop {
        tokio::select! {
            () = stop.cancelled() => {
                let _ = server.request("turn/interrupt", json!({"threadId": thread, "turnId": turn_id})).await;
                break "stopped".to_owned();
            }
            Some(joined) = asks.join_next() => {
                let Ok((key, ended)) = joined else { continue };
                let Some(prompt) = waiting.remove(&key) else { continue };
                if let Some((result, said)) = answer(&prompt.method, ended?) {
                    note(said);
                    server.respond(&prompt.id, result).await?;
                } else {
                    note(TurnNote::Withdrawn);
                }
            }
            message = server.next() => match message? {
                Message::Request { id, method, params } => {
                    let Some(ask) = prompt_of(&method, &params, &thread, &cwd, &changes) else {
                        note(TurnNote::Refused(method.clone()));
                        server.refuse(&id, &format!("ask-user does not answer {method}")).await?;
                        continue;
                    };
                    note(TurnNote::Asked { what: ask.questions.iter().map(|q| q.question.as_str()).collect::<Vec<_>>().join("\n") });
                    let cancel = stop.child_token();
                    let key = id.to_string();
                    let (options, stopping) = (options.clone(), cancel.clone());
                    asks.spawn(async move {
                        let ended = crate::ask(&ask, &options, &stopping).await;
                        (key, ended)
                    });
                    waiting.insert(id.to_string(), Waiting { id, method, cancel });
                }
                Message::Notification { method, params } => match method.as_str() {
                    "item/started" | "item/completed" => {
                        let item = params.get("item").cloned().unwrap_or(Value::Null);
                        match item.get("type").and_then(Value::as_str) {
                            Some("fileChange") => {
                                let id = text(&item, "/id");
                                changes.insert(id, item.get("changes").cloned().unwrap_or(Value::Null));
                            }
                            Some("agentMessage") if method == "item/completed" => {
                                note(TurnNote::Said(text(&item, "/text")));
                            }
                            _ => {}
                        }
                    }
                    // Settled at Codex (or by another client): every surface takes it down.
                    "serverRequest/resolved" => {
                        let key = params.get("requestId").map(Value::to_string).unwrap_or_default();
                        if let Some(prompt) = waiting.get(&key) {
                            prompt.cancel.cancel();
                        }
                    }
                    "turn/completed" => {
                        break text(&params, "/turn/status");
                    }
                    _ => {}
                },
            }
        }
    };
    for prompt in waiting.values() {
        prompt.cancel.cancel();
    }
    while asks.join_next().await.is_some() {}
    server.stop().await;
    Ok(TurnEnded { thread, status })
}

/// The string at `pointer` in `value`, or empty.
fn text(value: &Value, pointer: &str) -> String {
    (value.pointer(pointer).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

/// Codex's request as an ask, in the shape its hook is handed.
fn prompt_of(
    method: &str,
    params: &Value,
    thread: &str,
    cwd: &str,
    changes: &HashMap<String, Value>,
) -> Option<NativeAsk> {
    let (tool, input, cwd) = match method {
        "item/commandExecution/requestApproval" => {
            let command = params.get("command").and_then(Value::as_str)?;
            let mut input = json!({ "command": command });
            if let Some(reason) = params.get("reason").and_then(Value::as_str) {
                input["description"] = json!(reason);
            }
            let here = (params.get("cwd").and_then(Value::as_str)).unwrap_or(cwd);
            ("Bash", input, here.to_owned())
        }
        "item/fileChange/requestApproval" => {
            let item = params.get("itemId").and_then(Value::as_str)?;
            let files = changes.get(item).cloned().unwrap_or(json!([]));
            ("apply_patch", json!({ "changes": files }), cwd.to_owned())
        }
        "item/tool/requestUserInput" => {
            let questions = params.get("questions").cloned()?;
            (
                "request_user_input",
                json!({ "questions": questions }),
                cwd.to_owned(),
            )
        }
        _ => return None,
    };
    let prompt = json!({"session_id": thread, "cwd": cwd, "tool_name": tool, "tool_input": input});
    NativeAsk::from_prompt(Agent::Codex, &prompt).ok()
}

/// What Codex is told for `ended` (the answer to its `method`), and what the person is: `None` when it was withdrawn (Codex
/// settled it, or the turn stopped), so nothing is sent.
fn answer(method: &str, ended: Ended) -> Option<(Value, TurnNote)> {
    let questions = method == "item/tool/requestUserInput";
    let nobody = |why: &str| {
        let result = if questions {
            json!({ "answers": {} })
        } else {
            json!({ "decision": "decline" })
        };
        Some((result, TurnNote::Declined(why.to_owned())))
    };
    match ended {
        Ended::Withdrawn => None,
        Ended::Decided { decision, surface } => {
            let result = match (&decision, questions) {
                (
                    Decision::Allow {
                        updated_input: Some(answers),
                        ..
                    },
                    true,
                ) => answers.clone(),
                (Decision::Allow { .. }, false) => json!({ "decision": "accept" }),
                (_, true) => json!({ "answers": {} }),
                (Decision::Deny { .. }, false) => json!({ "decision": "decline" }),
            };
            let told = match (&decision, questions) {
                (_, true) => result["answers"].to_string(),
                (Decision::Deny { message }, false) => format!("decline ({message})"),
                (Decision::Allow { .. }, false) => "accept".to_owned(),
            };
            Some((result, TurnNote::Answered { told, surface }))
        }
        Ended::Skipped => nobody("the answer chose nothing"),
        Ended::Unreachable => nobody("no inbox answered"),
        Ended::WindowPassed => nobody("nobody answered in the window"),
        Ended::Failed(text) => nobody(&text),
    }
}
