//! The web answering surface in the binary: `--web` for `demo` and `ask` (the page races the
//! terminal card, first answer wins), and `ask-user serve LOG…` (the continued questions of
//! existing logs, for late answers).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ask_user_web::{ContinuedQuestion, WebOptions, WebServer, WebSessions, WebSurface};
use clap::Args;
use pending_answer::{LateAnswerSink, LateRefusal, LateSubmission};
use serde_json::{Value, json};
use user_questions::{
    AnswererGuard, CancellationToken, HostBindings, QuestionEventKind, Received, UserQuestions,
    UserQuestionsConfig,
};
use user_questions_projection::{ActiveState, UserQuestionsState};

use super::AbortOnDrop;
use super::{CliError, Exit};
use crate::host::{CheckpointPolicy, Host, HostOptions, LogTarget, load_projection};
use crate::store::JsonlStore;
use crate::terminal::TerminalAnswerer;

/// `--web` and `--web-addr`, shared by `demo` and `ask`.
#[derive(Clone, Debug, Args)]
pub struct WebArgs {
    /// Also show the questions on a web page whose URL is printed: the page and the terminal
    /// card race, and the first answer wins.
    #[arg(long)]
    pub web: bool,
    /// Where to serve the page (default 127.0.0.1 on a free port). An address other than
    /// loopback serves other machines too: only when given here.
    #[arg(long, value_name = "ADDR", requires = "web")]
    pub web_addr: Option<SocketAddr>,
    /// The page's address as another device reaches it (a phone pressing a notification's
    /// answer button), e.g. `http://192.168.1.20:8766`; default: the address served.
    #[arg(long, value_name = "URL", requires = "web")]
    pub web_public_url: Option<String>,
}

/// The surface of a run, serving until dropped.
pub(crate) struct WebRun {
    surface: WebSurface,
    server: WebServer,
    _guard: AnswererGuard,
    _follow: Option<AbortOnDrop>,
}

impl WebRun {
    /// The page's URL, with its token.
    pub(crate) fn url(&self) -> String {
        self.server.url()
    }

    /// What the page adds to notifications: labels, the page's address (without its token),
    /// one-time answer buttons below `public_url` (default: the address served).
    pub(crate) fn links(&self, public_url: Option<&str>) -> Arc<dyn ask_user_notify::Links> {
        let base = public_url.map_or_else(
            || self.server.base_url(),
            |url| url.trim_end_matches('/').to_owned(),
        );
        Arc::new(WebLinks {
            surface: self.surface.clone(),
            url: format!("{base}/"),
            base,
        })
    }
}

/// The web surface as notifications see it.
struct WebLinks {
    surface: WebSurface,
    base: String,
    url: String,
}

impl ask_user_notify::Links for WebLinks {
    fn questions(
        &self,
        session: &str,
        call_id: &user_questions::CallId,
    ) -> Option<Vec<user_questions::Question>> {
        self.surface.questions(session, call_id)
    }

    fn card_url(&self) -> Option<String> {
        Some(self.url.clone())
    }

    fn answer_button(
        &self,
        session: &str,
        call_id: &user_questions::CallId,
        question_id: &str,
        label: &str,
    ) -> Option<(String, String)> {
        match self.surface.grant(session, call_id, question_id, label) {
            Ok(Some(link)) => Some((format!("{}{}", self.base, link.path), link.body)),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, "no answer button: no random source");
                None
            }
        }
    }
}

fn options_for(addr: Option<SocketAddr>) -> (WebOptions, SocketAddr) {
    let addr = addr.unwrap_or_else(|| SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
    let options = WebOptions {
        loopback_only: addr.ip().is_loopback(),
        ..WebOptions::default()
    };
    (options, addr)
}

async fn bind(surface: &WebSurface, addr: SocketAddr) -> Result<WebServer, CliError> {
    surface.bind(addr).await.map_err(|error| {
        CliError::new(
            "WEB_BIND",
            format!("cannot serve the page on {addr}: {error}"),
            Exit::Failure,
        )
    })
}

fn no_surface(error: &std::io::Error) -> CliError {
    CliError::new("WEB", error.to_string(), Exit::Failure)
}

/// The surface of `--web`, registered in the host's seam (at the front of the waterfall) but
/// not serving yet.
pub(crate) struct WebPlan {
    surface: WebSurface,
    guard: AnswererGuard,
    addr: SocketAddr,
}

/// `--web`: the surface for `host`, registered at the front of its seam's waterfall; `None`
/// without `--web`.
pub(crate) fn plan(host: &Arc<Host>, args: &WebArgs) -> Result<Option<WebPlan>, CliError> {
    if !args.web {
        return Ok(None);
    }
    let (options, addr) = options_for(args.web_addr);
    let sessions = Arc::new(LiveSessions {
        hosts: vec![Arc::clone(host)],
    });
    let surface =
        WebSurface::new(host.seam(), Some(sessions), options).map_err(|e| no_surface(&e))?;
    let guard = surface.register(host.seam());
    Ok(Some(WebPlan {
        surface,
        guard,
        addr,
    }))
}

impl WebPlan {
    /// Serves the page. With a terminal card beside it, a question answered anywhere is taken
    /// off the terminal too.
    pub(crate) async fn serve(
        self,
        host: &Arc<Host>,
        terminal: Option<&Arc<TerminalAnswerer>>,
    ) -> Result<WebRun, CliError> {
        let server = bind(&self.surface, self.addr).await?;
        let follow = terminal.map(|terminal| {
            let terminal = Arc::downgrade(terminal);
            let mut events = host.seam().subscribe();
            AbortOnDrop(tokio::spawn(async move {
                while let Some(received) = events.recv().await {
                    let Received::Event(event) = received else {
                        continue;
                    };
                    if let (QuestionEventKind::Answered { .. }, Some(call_id)) =
                        (&event.kind, &event.call_id)
                        && let Some(terminal) = terminal.upgrade()
                    {
                        terminal.withdraw(call_id);
                    }
                }
            }))
        });
        Ok(WebRun {
            surface: self.surface,
            server,
            _guard: self.guard,
            _follow: follow,
        })
    }
}

/// `ask --web`: serves the planned surface and prints its URL, before the call and on stderr
/// (stdout carries only the model's text).
pub(crate) async fn serve_announced(
    plan: Option<WebPlan>,
    host: &Arc<Host>,
    terminal: &Arc<TerminalAnswerer>,
) -> Result<Option<WebRun>, CliError> {
    let Some(plan) = plan else {
        return Ok(None);
    };
    let web = plan.serve(host, Some(terminal)).await?;
    eprintln!(
        "web › answer on the page (first answer wins): {}",
        web.url()
    );
    Ok(Some(web))
}

/// The continued questions of the live sessions of this process.
struct LiveSessions {
    hosts: Vec<Arc<Host>>,
}

fn continued_of(
    state: &UserQuestionsState,
) -> impl Iterator<Item = (user_questions::CallId, Vec<user_questions::Question>)> + '_ {
    state
        .view()
        .active
        .iter()
        .filter(|q| q.state == ActiveState::Continued)
        .map(|q| (q.call_id.clone(), q.questions.clone()))
}

fn view_of(session: &str, state: &UserQuestionsState) -> Value {
    let mut view = serde_json::to_value(state.view()).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut view {
        map.insert("session".to_owned(), json!(session));
    }
    view
}

impl LateAnswerSink for LiveSessions {
    fn submit(&self, mut submission: LateSubmission) -> Result<(), LateRefusal> {
        let host = self
            .hosts
            .iter()
            .find(|h| {
                h.projection()
                    .continued(submission.call_id.as_str())
                    .is_some()
            })
            .ok_or(LateRefusal::NotWaiting)?;
        submission.agent.get_or_insert_with(|| host.agent());
        host.late_answers().submit(submission)
    }
}

impl WebSessions for LiveSessions {
    fn continued(&self) -> Vec<ContinuedQuestion> {
        self.hosts
            .iter()
            .flat_map(|host| {
                let state = host.projection();
                continued_of(&state)
                    .map(|(call_id, questions)| ContinuedQuestion {
                        session: host.session_id().as_str().to_owned(),
                        call_id,
                        questions,
                        agent: Some(host.agent()),
                        open_elsewhere: false,
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn pending_view(&self) -> Value {
        let sessions: Vec<Value> = self
            .hosts
            .iter()
            .map(|h| view_of(h.session_id().as_str(), &h.projection()))
            .collect();
        json!({ "sessions": sessions })
    }
}

/// The continued questions of session logs on disk: read without a lock, answered by opening
/// the log for write, queueing the reply and admitting it in a turn of its own (as
/// `ask-user answer` does).
struct LogSessions {
    logs: Vec<PathBuf>,
}

/// The projection of a log, read only (its checkpoint when that verifies); `None`, with a
/// warning, when the log cannot be read.
fn load_state(log: &Path) -> Option<UserQuestionsState> {
    {
        let (store, name) = JsonlStore::for_file(log).ok()?;
        match load_projection(&store, &name, CheckpointPolicy::ReadOnly) {
            Ok(load) => Some(load.state),
            Err(error) => {
                tracing::warn!(%error, log = %log.display(), "cannot read the session log");
                None
            }
        }
    }
}

impl LateAnswerSink for LogSessions {
    fn submit(&self, submission: LateSubmission) -> Result<(), LateRefusal> {
        let log = self
            .logs
            .iter()
            .filter(|log| {
                submission
                    .session
                    .as_ref()
                    .is_none_or(|session| *session == log.display().to_string())
            })
            .find(|log| {
                load_state(log).is_some_and(|s| s.continued(submission.call_id.as_str()).is_some())
            })
            .ok_or(LateRefusal::NotWaiting)?;
        let undelivered = |error: crate::host::HostError| LateRefusal::Undelivered(Box::new(error));
        let (host, _) = Host::open(HostOptions::new(None, LogTarget::Open(log.clone())))
            .map_err(undelivered)?;
        let call_id = submission.call_id.clone();
        host.late_answers().submit(LateSubmission {
            agent: Some(host.agent()),
            ..submission
        })?;
        // Nobody else runs this session: admit the reply now, so the question settles.
        if let Some(reservation) = host.late_answers().reservation(&host.session(), &call_id) {
            super::answer::admit_reply(&host, &reservation.message_id).map_err(undelivered)?;
        }
        Ok(())
    }
}

impl WebSessions for LogSessions {
    fn continued(&self) -> Vec<ContinuedQuestion> {
        self.logs
            .iter()
            .filter_map(|log| Some((log, load_state(log)?)))
            .flat_map(|(log, state)| {
                continued_of(&state)
                    .map(|(call_id, questions)| ContinuedQuestion {
                        session: log.display().to_string(),
                        call_id,
                        questions,
                        agent: None,
                        open_elsewhere: false,
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn pending_view(&self) -> Value {
        let sessions: Vec<Value> = self
            .logs
            .iter()
            .filter_map(|log| Some(view_of(&log.display().to_string(), &load_state(log)?)))
            .collect();
        json!({ "sessions": sessions })
    }
}

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The session logs whose continued questions to serve.
    #[arg(required_unless_present = "pg", conflicts_with = "pg")]
    logs: Vec<PathBuf>,
    /// Serve the continued questions of every session in this database instead; answers go to
    /// its ledger (the first answer wins) and its workers admit them.
    #[command(flatten)]
    pg: super::pg::PgArgs,
    /// Where to serve the page (default 127.0.0.1 on a free port). An address other than
    /// loopback serves other machines too: only when given here.
    #[arg(long, value_name = "ADDR")]
    addr: Option<SocketAddr>,
}

pub(super) async fn serve(args: ServeArgs) -> Result<Exit, CliError> {
    for log in &args.logs {
        if !log.exists() {
            return Err(CliError::new(
                "LOG_IO",
                format!("no session log at {}", log.display()),
                Exit::Log,
            ));
        }
    }
    // No question is asked here: a seam only to check answers against (late answers are checked
    // again by the host of each log when it takes them).
    let seam = UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default())
        .map_err(|e| CliError::new("INTERNAL", e.to_string(), Exit::Failure))?;
    let (options, addr) = options_for(args.addr);
    let store = match &args.pg.pg {
        Some(url) => Some(super::pg::connect(url, &args.pg.pg_schema)?),
        None => None,
    };
    let sessions: Arc<dyn WebSessions> = match &store {
        Some(store) => Arc::new(super::pg::PgSessions {
            store: store.clone(),
        }),
        None => Arc::new(LogSessions { logs: args.logs }),
    };
    let surface = WebSurface::new(&seam, Some(sessions), options).map_err(|e| no_surface(&e))?;
    let server = bind(&surface, addr).await?;
    // With a database: the cards follow the ledger, and questions open elsewhere are claimed
    // while a page looks.
    let stop = CancellationToken::new();
    let follower = store.map(|store| {
        let client = format!("serve-{}-{}", std::process::id(), crate::store::now_ms());
        tokio::spawn(super::pg::follow_ledger(
            store,
            surface.clone(),
            client,
            Duration::from_secs(1),
            stop.clone(),
        ))
    });
    eprintln!("web   › answer the continued questions at {}", server.url());
    eprintln!("        (Ctrl-C to stop)");
    let _ = tokio::signal::ctrl_c().await;
    stop.cancel();
    if let Some(follower) = follower {
        // It releases its claims on the way out.
        let _ = follower.await;
    }
    Ok(Exit::Ok)
}
