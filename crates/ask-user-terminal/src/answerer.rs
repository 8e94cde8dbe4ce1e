//! The terminal answerer: the seam's [`Answerer`] that puts questions to a person at a terminal.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pending_answer::QuestionDesk;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use user_questions::{
    AnswerRequest, Answered, Answerer, AnswererError, AnswererGuard, CallId, Next, QuestionLimits,
    RegisterOptions, UserQuestionError, UserQuestions, WaitKey, WeakUserQuestions, async_trait,
};

use crate::board::{Board, CardEnd, Command, NewCard, Shared, Waiting};
use crate::countdown::Countdown;
use crate::screen::Display;

/// How to build a [`TerminalAnswerer`].
#[derive(Clone)]
pub struct TerminalOptions {
    name: String,
    display: Display,
    desk: Option<Arc<dyn QuestionDesk>>,
}

impl Default for TerminalOptions {
    fn default() -> Self {
        Self {
            name: user_questions::surface_names::TERMINAL.to_owned(),
            display: Display::terminal(),
            desk: None,
        }
    }
}

impl fmt::Debug for TerminalOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalOptions")
            .field("name", &self.name)
            .field("display", &self.display)
            .field("desk", &self.desk.is_some())
            .finish()
    }
}

impl TerminalOptions {
    /// Named `terminal`, on the process's terminal, with no desk for late answers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The provenance name: register the answerer under the same name (as
    /// [`TerminalAnswerer::register`] does), since the seam stamps foreground answers with the
    /// registration name and late answers carry this one.
    ///
    /// # Panics
    ///
    /// When `name` is empty: the seam refuses empty registration names too.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        assert!(
            !name.is_empty(),
            "the terminal answerer needs a non-empty name"
        );
        self.name = name;
        self
    }

    /// Where cards are shown.
    #[must_use]
    pub fn with_display(mut self, display: Display) -> Self {
        self.display = display;
        self
    }

    /// Keeps a timed card on screen after its window closed, as a pending question whose answer
    /// is submitted to `desk` (a host's `LiveDesk` over the session, say: SPEC §4.8 through its
    /// late answers). The desk takes the answer once the call is continued (it waits for that
    /// itself when the window closed a moment ago); when it takes it the card closes, when it
    /// refuses, the card stays open and shows the refusal's message to the person. The
    /// submission runs beside the card, which says it is sending meanwhile.
    ///
    /// Without a desk, a card whose window closes is taken down with a one-line note, and the
    /// question is left to other surfaces.
    #[must_use]
    pub fn with_desk(mut self, desk: Arc<dyn QuestionDesk>) -> Self {
        self.desk = Some(desk);
        self
    }
}

/// Puts questions to a person in the terminal, as an interactive card (see the module docs for
/// the keys and the rules).
///
/// It holds the seam weakly, so registering it in that seam makes no cycle.
pub struct TerminalAnswerer {
    seam: WeakUserQuestions,
    name: String,
    display: Display,
    limits: QuestionLimits,
    late: Option<Arc<dyn QuestionDesk>>,
    shared: Arc<Shared>,
    board: Mutex<Option<BoardHandle>>,
    next_id: AtomicU64,
}

struct BoardHandle {
    commands: mpsc::UnboundedSender<Command>,
    task: AbortHandle,
}

impl fmt::Debug for TerminalAnswerer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalAnswerer")
            .field("name", &self.name)
            .field("display", &self.display)
            .field("late_calls", &self.late_calls())
            .finish_non_exhaustive()
    }
}

impl TerminalAnswerer {
    /// A terminal answerer for `seam` (held weakly; its limits are used to validate input).
    pub fn new(seam: &UserQuestions, options: TerminalOptions) -> Arc<Self> {
        Arc::new(Self {
            seam: seam.downgrade(),
            name: options.name,
            display: options.display,
            limits: seam.limits().clone(),
            late: options.desk,
            shared: Arc::new(Shared::default()),
            board: Mutex::new(None),
            next_id: AtomicU64::new(0),
        })
    }

    /// The provenance name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers this answerer in `seam`, globally, under its name.
    pub fn register(self: &Arc<Self>, seam: &UserQuestions) -> AnswererGuard {
        seam.register(
            Arc::clone(self) as Arc<dyn Answerer>,
            RegisterOptions::global(self.name.clone()),
        )
    }

    /// Prints a line for the person. While a card is on screen the line is shown above it (and
    /// printed on the normal screen once the card is gone); otherwise it is printed on stderr at
    /// once. Hosts that print while a card may be showing use this, so the card is not torn.
    /// The line is shown through [`sanitize::visible_lines`](crate::sanitize::visible_lines): a
    /// model's or a log's text in it cannot drive the terminal.
    pub fn note(&self, line: impl Into<String>) {
        let line = line.into();
        let line = match crate::sanitize::visible_lines(&line) {
            std::borrow::Cow::Borrowed(_) => line,
            std::borrow::Cow::Owned(clean) => clean,
        };
        let running = self.running_board();
        match running {
            Some(commands) => {
                if let Err(mpsc::error::SendError(Command::Note(line))) =
                    commands.send(Command::Note(line))
                {
                    self.display.print(&line);
                }
            }
            None => self.display.print(&line),
        }
    }

    /// Sets the status line shown under every card and under the reminder of hidden cards, for
    /// as long as cards are on screen: where else the questions can be answered (the page's
    /// URL, say), so it stays in reach while a card has the screen. `None` removes it. The line
    /// is shown through [`sanitize::visible_lines`](crate::sanitize::visible_lines).
    pub fn set_status(&self, line: Option<String>) {
        let line = line.map(|line| crate::sanitize::visible_lines(&line).into_owned());
        *user_questions::sync::lock_unpoisoned(&self.shared.status) = line;
        if let Some(commands) = self.running_board() {
            let _ = commands.send(Command::Redraw);
        }
    }

    /// The calls whose pending questions are still on this terminal, answerable late.
    pub fn late_calls(&self) -> Vec<CallId> {
        user_questions::sync::lock_unpoisoned(&self.shared.late).clone()
    }

    /// Takes down the pending card of `call_id` (for example when the question was settled
    /// elsewhere). Does nothing if there is none.
    pub fn withdraw(&self, call_id: &CallId) {
        if let Some(commands) = self.running_board() {
            let _ = commands.send(Command::Withdraw(call_id.clone()));
        }
    }

    fn running_board(&self) -> Option<mpsc::UnboundedSender<Command>> {
        let board = user_questions::sync::lock_unpoisoned(&self.board);
        board
            .as_ref()
            .filter(|d| !d.commands.is_closed())
            .map(|d| d.commands.clone())
    }

    /// The board's command channel, starting the board task on first use (or after its runtime
    /// went away).
    fn board(&self) -> mpsc::UnboundedSender<Command> {
        let mut board = user_questions::sync::lock_unpoisoned(&self.board);
        if let Some(running) = board.as_ref().filter(|d| !d.commands.is_closed()) {
            return running.commands.clone();
        }
        let (commands, receiver) = mpsc::unbounded_channel();
        // Subscribed before any card of this board can close its window, so the announcement
        // that a call is continued (its late answers taken) is never missed.
        let events = self.seam.upgrade().map(|seam| seam.subscribe());
        let task = tokio::spawn(
            Board::new(
                receiver,
                self.display.clone(),
                self.limits.clone(),
                self.name.clone(),
                self.late.clone(),
                Arc::clone(&self.shared),
            )
            .with_events(events)
            .run(),
        );
        *board = Some(BoardHandle {
            commands: commands.clone(),
            task: task.abort_handle(),
        });
        commands
    }

    /// Claims a timed wait (SPEC §4.7). `None` when the wait has expired or cannot be claimed:
    /// the request is then passed on.
    fn claim(&self, request: &AnswerRequest, call_id: &CallId) -> Option<Waiting> {
        let seam = self.seam.upgrade()?;
        let agent = request.agent.as_ref()?;
        let claim = match seam.attach_wait(agent, call_id) {
            Ok(claim) => claim?,
            Err(error) => {
                tracing::warn!(%error, %call_id, "cannot claim the timed wait; passing the question on");
                return None;
            }
        };
        // The local deadline is derived from the claim, so it ends when the host's would.
        let countdown = Countdown::new(Instant::now(), claim.remaining_ms());
        Some(Waiting::Timed { claim, countdown })
    }
}

impl Drop for TerminalAnswerer {
    fn drop(&mut self) {
        let board = self.board.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(board) = board.take() {
            // Aborting drops the board, which gives the screen back.
            board.task.abort();
        }
    }
}

/// Tells the board the answer call is over, however it ended (including a dropped future).
struct Gone {
    id: u64,
    commands: mpsc::UnboundedSender<Command>,
}

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Gone { id: self.id });
    }
}

#[async_trait]
impl Answerer for TerminalAnswerer {
    /// Shows the card and waits for the person.
    ///
    /// Cancel safety: dropping the future (the seam does once `request.cancel` is cancelled)
    /// takes the card down and releases its claim; the screen is given back when no card is left.
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        if !self.display.is_interactive() {
            // No terminal: pass the question on, so headless runs fail closed.
            return next.run().await;
        }
        let (waiting, call_id) = match &request.wait {
            None => (Waiting::Unkeyed, None),
            Some(WaitKey::Indefinite { call_id }) => (Waiting::Keyed, Some(call_id.clone())),
            Some(WaitKey::Timed { call_id, .. }) => match self.claim(request, call_id) {
                Some(waiting) => (waiting, Some(call_id.clone())),
                // The wait has ended or cannot be held: delegate (SPEC §4.7).
                None => return next.run().await,
            },
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let commands = self.board();
        let (reply, ended) = oneshot::channel();
        let card = NewCard {
            questions: request.questions.clone(),
            waiting,
            call_id,
            agent: request.agent.clone(),
            reply,
        };
        if commands.send(Command::Open { id, card }).is_err() {
            // The board is gone (its runtime shut down); the returned card released its claim.
            return next.run().await;
        }
        let _gone = Gone {
            id,
            commands: commands.clone(),
        };
        let end = tokio::select! {
            biased;
            end = ended => end,
            () = request.cancel.cancelled() => {
                return Err(UserQuestionError::ask_aborted().into());
            }
        };
        match end {
            Ok(CardEnd::Answered(batch)) => Ok(Answered::human(batch)),
            Ok(CardEnd::Cancelled) => Err(UserQuestionError::ask_cancelled().into()),
            Ok(CardEnd::TimedOut) => Err(UserQuestionError::ask_timed_out().into()),
            // The board released any claim before replying, so the host deadline applies again.
            Ok(CardEnd::Unavailable) | Err(_) => next.run().await,
        }
    }
}
