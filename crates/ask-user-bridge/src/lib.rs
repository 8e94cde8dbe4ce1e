#![doc = include_str!("../README.md")]

pub mod codex_app;
mod codex_config;
mod codex_turn;
#[cfg(feature = "clap")]
mod flags;
mod hooks;
mod withdraw;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ask_user_host::{Host, HostError, HostRuntime, LiveDesk, ModelInfo, SessionOptions};
use ask_user_inbox::{Connect, InboxLink, LinkedHost, LinkedSession};
use native_asks::{Decision, NativeAsk};
use pending_answer::QuestionDesk;
use session_log::JsonlStore;
use tokio_util::sync::CancellationToken;
use tool_ask_user::{AskUserConfig, ToolOutcome};
use user_questions::{CallId, SessionId, surface_names};

pub use codex_app::ListedHook;
pub use codex_turn::{CodexError, CodexTurn, TurnEnded, TurnNote, run_turn};
#[cfg(feature = "clap")]
pub use flags::{CodexArgs, HookArgs, HooksAction, HooksArgs, HooksPlaces};
pub use hooks::{
    ASK_TIMEOUT_SECS, CODEX_HOOK_TIMEOUT_SECS, FoundHook, Hooks, HooksError, HooksReport, Scope,
    WITHDRAW_TIMEOUT_SECS,
};
pub use withdraw::{ABANDONED_TEXT, sweep, sweep_every, withdraw};

/// How long a bridge waits for the machine's inbox before it gives no decision.
pub const REACH_WITHIN: Duration = Duration::from_secs(5);

/// How long a Codex prompt is answerable from the inbox: Codex's own approval prompt waits for
/// its hook, so after this the bridge gives no decision and the person at the terminal decides.
pub const CODEX_WINDOW: Duration = Duration::from_mins(1);

/// How long a bridge that ends waits for the inbox to be told how its ask ended.
pub const TOLD_WITHIN: Duration = Duration::from_secs(2);

/// Where a bridge keeps the sockets a later event of its agent withdraws it through, in the
/// state directory.
pub const WAITING_DIR: &str = "native";

/// How a bridge reaches the inbox, and where its sessions live.
#[derive(Clone)]
pub struct BridgeOptions {
    /// The state directory: each ask is a session log there, beside the MCP sessions'.
    pub state_dir: PathBuf,
    /// Opens a connection to the machine's inbox (starting one, if the caller can).
    pub connect: Connect,
    /// How long to wait for the inbox ([`REACH_WITHIN`]).
    pub reach_within: Duration,
    /// How long the inbox may answer, when the agent's own prompt waits for the hook (Codex:
    /// [`CODEX_WINDOW`]); then the bridge gives no decision and the agent's prompt asks. `None`:
    /// as long as the agent lets the hook run (Claude Code's dialog races it all along).
    pub window: Option<Duration>,
}

impl std::fmt::Debug for BridgeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeOptions")
            .field("state_dir", &self.state_dir)
            .field("reach_within", &self.reach_within)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// How a bridged ask ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// A person decided, on `surface` (`page`, `phone`, `shell`, …).
    Decided {
        /// The agent's decision.
        decision: Decision,
        /// Where it was given.
        surface: String,
    },
    /// No inbox answered within [`BridgeOptions::reach_within`]: nothing was asked.
    Unreachable,
    /// Settled at the agent ([`withdraw`]), or the bridge was stopped: every surface withdrew it.
    Withdrawn,
    /// Nobody answered within [`BridgeOptions::window`]: every surface withdrew it, and the
    /// agent's own prompt asks.
    WindowPassed,
    /// Answered with nothing chosen: no decision.
    Skipped,
    /// The call ended in an error (its text).
    Failed(String),
}

/// Why a bridge could not ask.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The host (the session log) failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The state directory cannot be used.
    #[error("the state directory: {0}")]
    Io(#[from] std::io::Error),
}

/// Asks `ask` of the person through the machine's inbox and waits for the first answer: the
/// ask is a session log of its own in the state directory (listed by `ask-user pending`, its
/// call answerable by id), linked to the inbox, which shows it on every surface. It ends when a
/// person answers, when [`withdraw`] names it (the agent settled it itself), or when `stop` is
/// cancelled (the agent went away); no timeout, default or unreachable inbox ever decides.
///
/// # Errors
///
/// The state directory or the session log cannot be used.
pub async fn ask(
    ask: &NativeAsk,
    options: &BridgeOptions,
    stop: &CancellationToken,
) -> Result<Ended, BridgeError> {
    let name = session_name(ask);
    // Only its owner reads the questions and answers the state directory keeps.
    session_log::private_dir(&options.state_dir)?;
    let config = AskUserConfig::timed_secs(tool_ask_user::INDEFINITE_TIMEOUT);
    let runtime = HostRuntime::new(JsonlStore::new(options.state_dir.clone()), Some(config))?;
    let session = SessionId::from(name.clone());
    let linked = Arc::new(Linked {
        session: session.clone(),
        shown: LinkedSession {
            name: name.clone(),
            client: Some(ask.agent.display().to_owned()),
            cwd: ask.cwd.clone(),
        },
        desk: LiveDesk::of([]),
    });
    let link = InboxLink::start(runtime.seam(), linked.clone(), options.connect.clone());
    if tokio::time::timeout(options.reach_within, link.connected())
        .await
        .is_err()
    {
        return Ok(Ended::Unreachable);
    }
    let cancel = stop.child_token();
    // What bridges killed outright left open ends now: no surface shows an ask nobody waits on.
    withdraw::sweep(&options.state_dir);
    let waiting =
        withdraw::Waiting::listen(&options.state_dir, &ask.fingerprint(), &name, &cancel)?;
    let host = Arc::new(runtime.create(
        &name,
        SessionOptions::named(session).with_model(ModelInfo::new(ask.agent.name(), "native")),
    )?);
    linked.desk.add(&host);
    // Codex's prompt waits for the hook: after the window the ask is withdrawn, undecided.
    let passed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _window = options.window.map(|window| {
        let (cancel, passed) = (cancel.clone(), Arc::clone(&passed));
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            tokio::time::sleep(window).await;
            passed.store(true, std::sync::atomic::Ordering::SeqCst);
            cancel.cancel();
        }))
    });
    let outcome = call(&host, ask, &cancel).await;
    let passed = passed.load(std::sync::atomic::Ordering::SeqCst);
    drop(waiting);
    // Every surface takes the card down before the bridge goes.
    link.close(TOLD_WITHIN).await;
    let outcome = outcome?;
    if passed && outcome.answers().is_none() {
        return Ok(Ended::WindowPassed);
    }
    Ok(ended(ask, &outcome, cancel.is_cancelled()))
}

/// What a hook command prints: the agent's decision on stdout, a word for the person on stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookRun {
    /// The decision (`hookSpecificOutput`), when a person gave one.
    pub stdout: Option<String>,
    /// Why the agent's own dialog decides, when that is worth saying (no inbox, a failed call).
    pub stderr: Option<String>,
}

/// Runs a hook command for one event of the agent: a permission prompt is [`ask`]ed, a later
/// event that settles one [`withdraw`]s it, anything else is left alone.
///
/// # Errors
///
/// What [`ask`] finds.
pub async fn run_hook(
    event: native_asks::HookEvent,
    options: &BridgeOptions,
    stop: &CancellationToken,
) -> Result<HookRun, BridgeError> {
    use native_asks::HookEvent;
    let ask = match event {
        HookEvent::PermissionRequest(ask) => ask,
        HookEvent::ToolUsed { fingerprint, .. } | HookEvent::Denied { fingerprint, .. } => {
            withdraw(&options.state_dir, &fingerprint).await;
            return Ok(HookRun::default());
        }
        HookEvent::Notification { .. } => return Ok(tell(&event, options).await),
        HookEvent::Other { .. } => return Ok(HookRun::default()),
    };
    let dialog = |why: &str| Some(format!("ask-user: {why}; the dialog decides"));
    Ok(match self::ask(&ask, options, stop).await? {
        Ended::Decided { decision, .. } => HookRun {
            stdout: Some(decision.hook_output().to_string()),
            stderr: None,
        },
        Ended::Unreachable => HookRun {
            stdout: None,
            stderr: dialog("no inbox answered"),
        },
        Ended::Failed(text) => HookRun {
            stdout: None,
            stderr: dialog(&text),
        },
        Ended::WindowPassed => HookRun {
            stdout: None,
            stderr: dialog("nobody answered in the inbox's window"),
        },
        Ended::Withdrawn | Ended::Skipped => HookRun::default(),
    })
}

/// A notification no card can answer ([`HookEvent::attention`](native_asks::HookEvent::attention)):
/// told to the inbox, which hands it to its notifiers; a word on stderr when nobody hears it.
async fn tell(event: &native_asks::HookEvent, options: &BridgeOptions) -> HookRun {
    let native_asks::HookEvent::Notification {
        agent,
        session,
        cwd,
        ..
    } = event
    else {
        return HookRun::default();
    };
    let Some(message) = event.attention() else {
        return HookRun::default();
    };
    let attention = ask_user_inbox::Attention {
        agent: agent.display().to_owned(),
        session: session.clone(),
        cwd: cwd.clone(),
        message,
    };
    let told = tokio::time::timeout(options.reach_within, async {
        let stream = (options.connect)().await.map_err(|e| e.to_string())?;
        ask_user_inbox::tell_attention(stream, &attention).await
    });
    let stderr = match told.await {
        Ok(Ok(0)) => {
            Some("ask-user: the inbox notifies nobody (no ntfy or webhook is configured)".into())
        }
        Ok(Ok(_)) => None,
        Ok(Err(error)) => Some(format!("ask-user: the inbox was not told: {error}")),
        Err(_) => Some("ask-user: no inbox answered".into()),
    };
    // Gemini CLI reads a hook's stdout as JSON: an empty object changes nothing.
    HookRun {
        stdout: (*agent == native_asks::Agent::Gemini).then(|| "{}".to_owned()),
        stderr,
    }
}

/// One turn of one call: the ask's questions through the timed tool, waiting indefinitely.
async fn call(
    host: &Host,
    ask: &NativeAsk,
    cancel: &CancellationToken,
) -> Result<ToolOutcome, HostError> {
    host.begin_turn()?;
    host.begin_step()?;
    host.log_request_header()?;
    let call_id = CallId::from(format!("{}-{}", ask.agent.name(), short_id()));
    let outcome = host
        .call_tool(&call_id, &ask.arguments(), cancel.clone())
        .await?;
    host.end_turn(if cancel.is_cancelled() {
        "aborted"
    } else {
        "completed"
    })?;
    Ok(outcome)
}

fn ended(ask: &NativeAsk, outcome: &ToolOutcome, cancelled: bool) -> Ended {
    if let Some(answers) = outcome.answers() {
        let surface = surface(outcome);
        return match ask.decide(&answers, &surface) {
            Some(decision) => Ended::Decided { decision, surface },
            None => Ended::Skipped,
        };
    }
    if cancelled {
        Ended::Withdrawn
    } else {
        Ended::Failed(outcome.text.clone())
    }
}

/// Where an answer was given, as the agent's model reads it: the page, a phone's notification
/// button, the shell, …
fn surface(outcome: &ToolOutcome) -> String {
    let answerer = (outcome.meta.as_ref())
        .and_then(|meta| meta.pointer("/provenance/answerer"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    match answerer {
        a if a.ends_with(surface_names::BUTTON_SUFFIX) => "notification on a phone".to_owned(),
        surface_names::WEB | "inbox" | "" => "inbox page".to_owned(),
        surface_names::SHELL => "shell".to_owned(),
        other => other.to_owned(),
    }
}

/// The ask's session: the agent, its session and a fresh suffix (one log per ask: an agent asks
/// several at once, each from a hook process of its own).
fn session_name(ask: &NativeAsk) -> String {
    let session: String = (ask.session.chars())
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(36)
        .collect();
    format!("{}-{session}-{}.jsonl", ask.agent.name(), short_id())
}

/// Eight fresh hex digits.
fn short_id() -> String {
    (pending_answer::new_message_id().chars())
        .filter(char::is_ascii_hexdigit)
        .take(8)
        .collect()
}

/// The ask's session as the inbox shows it, and its host's desk once it runs.
struct Linked {
    session: SessionId,
    shown: LinkedSession,
    desk: Arc<LiveDesk>,
}

impl LinkedHost for Linked {
    fn session(&self, id: &SessionId) -> Option<LinkedSession> {
        (*id == self.session).then(|| self.shown.clone())
    }

    fn desk(&self) -> Arc<dyn QuestionDesk> {
        self.desk.clone()
    }
}

/// The state directory's folder of waiting bridges.
fn waiting_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(WAITING_DIR)
}
