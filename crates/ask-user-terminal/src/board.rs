//! The board: one task that owns the screen and every card on it.
//!
//! Answer calls hand their card to the board and wait for how it ended. The board shows one card at
//! a time (the oldest foreground card not hidden, else the oldest pending one), runs the local
//! countdowns, and keeps a timed card on screen after its window closed, as a pending question
//! whose answer goes to the host's question desk. It takes the screen over only while it
//! has cards, and gives it back (raw mode off, normal screen) as soon as it has none.

use std::future::{Future, pending};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use pending_answer::{Accepted, LateRefusal, QuestionDesk, Submission};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until};
use user_questions::{
    AgentHandle, AgentId, AnswerBatch, CallId, Provenance, Question, QuestionEvent,
    QuestionEventKind, QuestionEvents, QuestionLimits, Received, WaitClaim,
};

use crate::card::{CardAction, CardState};
use crate::countdown::Countdown;
use crate::keys::Key;
use crate::render::{CardView, Clock, CloseMode, ReminderView, Scene};
use crate::screen::{Display, Input, OpenScreen};

/// How a foreground request is keyed, and what the card holds for it.
pub(crate) enum Waiting {
    /// No card key (`wait` absent): closing cancels the request.
    Unkeyed,
    /// An indefinite keyed wait: closing hides the card.
    Keyed,
    /// A timed wait this card has claimed, with its local countdown.
    Timed {
        claim: WaitClaim,
        countdown: Countdown,
    },
}

/// A card handed to the board by an answer call.
pub(crate) struct NewCard {
    pub(crate) questions: Vec<Question>,
    pub(crate) waiting: Waiting,
    pub(crate) call_id: Option<CallId>,
    pub(crate) agent: Option<AgentHandle>,
    pub(crate) reply: oneshot::Sender<CardEnd>,
}

/// How a foreground card ended, as the answer call sees it.
#[derive(Debug)]
pub(crate) enum CardEnd {
    /// Submitted.
    Answered(AnswerBatch),
    /// Closed by the person (unkeyed request).
    Cancelled,
    /// The local countdown reached zero.
    TimedOut,
    /// The screen could not be used; any claim has been released.
    Unavailable,
}

/// What the answerer and the host tell the board.
pub(crate) enum Command {
    Open {
        id: u64,
        card: NewCard,
    },
    /// The answer call is over (its future was dropped or it returned).
    Gone {
        id: u64,
    },
    Note(String),
    Withdraw(CallId),
    /// The status line changed ([`Shared::status`]): draw again.
    Redraw,
}

/// State shared with the answerer.
#[derive(Default)]
pub(crate) struct Shared {
    /// Calls whose pending question is on this board and can still be answered.
    pub(crate) late: Mutex<Vec<CallId>>,
    /// The host's status line under every card and the reminder.
    pub(crate) status: Mutex<Option<String>>,
}

impl Shared {
    fn set_late(&self, call_id: &CallId, late: bool) {
        let mut calls = user_questions::sync::lock_unpoisoned(&self.late);
        calls.retain(|c| c != call_id);
        if late {
            calls.push(call_id.clone());
        }
    }
}

enum Kind {
    Foreground {
        waiting: Waiting,
        reply: oneshot::Sender<CardEnd>,
        call_id: Option<CallId>,
        agent: Option<AgentHandle>,
    },
    Late {
        call_id: CallId,
        agent: Option<AgentHandle>,
        /// An answer is with the desk now (it may wait for the call's continuation).
        sending: bool,
    },
}

struct Card {
    id: u64,
    state: CardState,
    hidden: bool,
    kind: Kind,
}

impl Card {
    fn is_foreground(&self) -> bool {
        matches!(self.kind, Kind::Foreground { .. })
    }

    fn countdown(&self) -> Option<&Countdown> {
        match &self.kind {
            Kind::Foreground {
                waiting: Waiting::Timed { countdown, .. },
                ..
            } => Some(countdown),
            Kind::Foreground { .. } | Kind::Late { .. } => None,
        }
    }

    fn countdown_mut(&mut self) -> Option<&mut Countdown> {
        match &mut self.kind {
            Kind::Foreground {
                waiting: Waiting::Timed { countdown, .. },
                ..
            } => Some(countdown),
            Kind::Foreground { .. } | Kind::Late { .. } => None,
        }
    }

    fn late_call(&self) -> Option<&CallId> {
        match &self.kind {
            Kind::Late { call_id, .. } => Some(call_id),
            Kind::Foreground { .. } => None,
        }
    }
}

type Settling = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A late answer with the desk: the call it answers and what the desk did with it.
type Sending = Pin<Box<dyn Future<Output = (CallId, Result<Accepted, LateRefusal>)> + Send>>;

/// How long a card taken down by the end of its request waits for the seam's word on how the
/// request ended (who answered), before its note says only that it was closed.
const ENDED_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// A card taken down because its request ended without it: its note waits for the seam's event
/// that says how (the event follows the end of the request at once).
struct Closed {
    call_id: Option<CallId>,
    agent: Option<AgentId>,
    /// The note goes without the event's word then.
    due: Instant,
}

/// The board task's state.
pub(crate) struct Board {
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) display: Display,
    pub(crate) limits: QuestionLimits,
    pub(crate) name: String,
    pub(crate) late: Option<Arc<dyn QuestionDesk>>,
    pub(crate) shared: Arc<Shared>,
    cards: Vec<Card>,
    /// Late answers with the desk, each reported back here.
    sending: FuturesUnordered<Sending>,
    screen: Option<OpenScreen>,
    /// Host notes shown above the card while the board has the screen; printed on the normal screen
    /// when it gives the screen back.
    notes: Vec<String>,
    /// Claims kept after their card's outcome went out, until the seam has taken it (SPEC §4.7:
    /// so an overdue host timer cannot beat an answer in transit).
    settling: FuturesUnordered<Settling>,
    /// The seam's lifecycle events: a pending card takes its late answer once its call is
    /// announced continued, and goes when it is answered elsewhere. `None` without a seam.
    events: Option<QuestionEvents>,
    /// Cards taken down whose note waits for the word on who answered.
    closed: Vec<Closed>,
}

impl Board {
    pub(crate) fn new(
        commands: mpsc::UnboundedReceiver<Command>,
        display: Display,
        limits: QuestionLimits,
        name: String,
        late: Option<Arc<dyn QuestionDesk>>,
        shared: Arc<Shared>,
    ) -> Self {
        Self {
            commands,
            display,
            limits,
            name,
            late,
            shared,
            cards: Vec::new(),
            sending: FuturesUnordered::new(),
            screen: None,
            notes: Vec::new(),
            settling: FuturesUnordered::new(),
            events: None,
            closed: Vec::new(),
        }
    }

    /// Follows the seam's lifecycle events (subscribed before any card could go pending).
    pub(crate) fn with_events(mut self, events: Option<QuestionEvents>) -> Self {
        self.events = events;
        self
    }

    /// Runs until every sender of commands is gone (the answerer was dropped and no answer call is
    /// in flight). Dropping the future at any point gives the screen back.
    pub(crate) async fn run(mut self) {
        loop {
            self.refresh();
            let now = Instant::now();
            let due = self
                .cards
                .iter()
                .filter_map(|c| c.countdown().and_then(Countdown::due_at))
                .min();
            let tick = self
                .cards
                .iter()
                .filter_map(|c| c.countdown().and_then(|cd| cd.next_tick(now)))
                .min();
            let unexplained = self.closed.iter().map(|c| c.due).min();
            tokio::select! {
                biased;
                command = self.commands.recv() => match command {
                    Some(command) => self.command(command),
                    None => break,
                },
                input = next_input(&mut self.screen) => self.input(input),
                () = sleep_until_some(due) => self.expire(),
                () = sleep_until_some(tick) => {}
                Some((call_id, outcome)) = self.sending.next(), if !self.sending.is_empty() => {
                    self.sent(&call_id, outcome);
                }
                () = sleep_until_some(unexplained) => self.closed_unexplained(),
                Some(()) = self.settling.next(), if !self.settling.is_empty() => {}
                event = next_event(&mut self.events) => self.seam_event(event),
            }
        }
        // Nothing can reach the board any more: end what is left and give the screen back.
        for card in std::mem::take(&mut self.cards) {
            self.discard(card);
        }
        self.leave();
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Open { id, card } => {
                let state = CardState::new(card.questions, self.limits.clone());
                self.cards.push(Card {
                    id,
                    state,
                    hidden: false,
                    kind: Kind::Foreground {
                        waiting: card.waiting,
                        reply: card.reply,
                        call_id: card.call_id,
                        agent: card.agent,
                    },
                });
            }
            Command::Gone { id } => {
                if let Some(at) = self
                    .cards
                    .iter()
                    .position(|c| c.id == id && c.is_foreground())
                {
                    // The request ended without this card (another surface answered, it was
                    // cancelled, or the seam shut down): dropping the card releases its claim.
                    // The seam's event says how, at once; the note waits for it.
                    let card = self.cards.remove(at);
                    if !card.hidden
                        && let Kind::Foreground { call_id, agent, .. } = card.kind
                    {
                        self.closed.push(Closed {
                            call_id,
                            agent: agent.map(|a| a.id().clone()),
                            due: Instant::now() + ENDED_WITHIN,
                        });
                    }
                }
            }
            Command::Note(line) => self.note(line),
            // The loop draws again before it waits.
            Command::Redraw => {}
            Command::Withdraw(call_id) => {
                let cards = std::mem::take(&mut self.cards);
                for card in cards {
                    if card.late_call() == Some(&call_id) {
                        self.discard(card);
                    } else {
                        self.cards.push(card);
                    }
                }
            }
        }
    }

    fn note(&mut self, line: String) {
        if self.screen.is_some() {
            self.notes.push(line);
        } else {
            self.display.print(&line);
        }
    }

    fn input(&mut self, input: Input) {
        match input {
            Input::Resize => {}
            Input::Failed(error) => {
                tracing::warn!(%error, "the terminal failed; its cards are passed on");
                self.fail_all();
            }
            Input::Key(key) => match visible(&self.cards) {
                Some(at) => self.card_key(at, key),
                None => self.reminder_key(&key),
            },
        }
    }

    fn reminder_key(&mut self, key: &Key) {
        match key {
            Key::Enter | Key::Char(' ') => {
                let first = self
                    .cards
                    .iter()
                    .position(Card::is_foreground)
                    .or(if self.cards.is_empty() { None } else { Some(0) });
                if let Some(at) = first {
                    self.cards[at].hidden = false;
                }
            }
            Key::Ctrl('c') => self.interrupt(),
            Key::Up
            | Key::Down
            | Key::Left
            | Key::Right
            | Key::Home
            | Key::End
            | Key::Tab
            | Key::BackTab
            | Key::Esc
            | Key::Backspace
            | Key::Delete
            | Key::Char(_)
            | Key::Ctrl(_)
            | Key::Paste(_) => {}
        }
    }

    fn card_key(&mut self, at: usize, key: Key) {
        match self.cards[at].state.handle(key) {
            CardAction::None => {}
            CardAction::TakeTime => {
                let card = &mut self.cards[at];
                match card.countdown_mut() {
                    Some(countdown) => countdown.hold(),
                    None => card.state.set_notice("This question has no time limit."),
                }
            }
            CardAction::Close => self.close(at),
            CardAction::Interrupt => self.interrupt(),
            CardAction::Submit(batch) => self.submit(at, batch),
        }
    }

    /// `Esc`: an unkeyed request is cancelled; anything keyed is only hidden (SPEC §1.4), and a
    /// hidden timed card's countdown runs again, so the host's original deadline applies.
    fn close(&mut self, at: usize) {
        let unkeyed = matches!(
            self.cards[at].kind,
            Kind::Foreground {
                waiting: Waiting::Unkeyed,
                ..
            }
        );
        if unkeyed {
            let card = self.cards.remove(at);
            if let Kind::Foreground { reply, .. } = card.kind {
                let _ = reply.send(CardEnd::Cancelled);
            }
            return;
        }
        let card = &mut self.cards[at];
        if let Some(countdown) = card.countdown_mut() {
            countdown.release();
        }
        card.hidden = true;
    }

    fn submit(&mut self, at: usize, batch: AnswerBatch) {
        if matches!(self.cards[at].kind, Kind::Late { .. }) {
            self.send_late(at, batch);
            return;
        }
        let card = self.cards.remove(at);
        if let Kind::Foreground { waiting, reply, .. } = card.kind {
            self.settle(waiting);
            let _ = reply.send(CardEnd::Answered(batch));
        }
    }

    /// Hands the late answer of the pending card at `at` to the desk, which takes it once the
    /// call is continued; the card says it is sending until the desk's word comes back
    /// ([`sent`](Self::sent)).
    fn send_late(&mut self, at: usize, batch: AnswerBatch) {
        let Kind::Late {
            call_id,
            agent,
            sending,
        } = &mut self.cards[at].kind
        else {
            return;
        };
        let Some(desk) = self.late.clone() else {
            return;
        };
        if *sending {
            return;
        }
        let Some(agent) = agent else {
            let refusal = LateRefusal::NoAgent;
            self.cards[at].state.set_notice(refusal.to_string());
            return;
        };
        *sending = true;
        let call_id = call_id.clone();
        let submission = Submission::new(
            agent.session().id().as_str(),
            call_id.clone(),
            batch,
            Provenance::human(self.name.clone()),
        );
        self.sending.push(Box::pin(async move {
            let outcome = desk.submit(submission).await;
            (call_id, outcome)
        }));
        self.cards[at].state.set_notice("Sending your answer…");
    }

    /// The desk's word on a late answer: taken, the card goes; refused, it stays and shows why
    /// (the refusal's message is written for the person).
    fn sent(&mut self, call_id: &CallId, outcome: Result<Accepted, LateRefusal>) {
        let Some(at) = self
            .cards
            .iter()
            .position(|c| c.late_call() == Some(call_id))
        else {
            return;
        };
        match outcome {
            Ok(_) => {
                let card = self.cards.remove(at);
                self.forget_late(&card);
            }
            Err(refusal) => {
                if let Kind::Late { sending, .. } = &mut self.cards[at].kind {
                    *sending = false;
                }
                self.cards[at].state.set_notice(refusal.to_string());
            }
        }
    }

    /// A lifecycle event of the seam: a pending card whose call is announced continued takes its
    /// late answer (one held since the window closed goes now); one answered elsewhere goes.
    /// Lost events make every pending card continued: the host's own check then decides.
    fn seam_event(&mut self, event: Option<Received>) {
        let event = match event {
            Some(Received::Event(event)) => event,
            // Lost events say nothing of a pending card: its answer goes to the desk, whose own
            // check decides.
            Some(Received::Missed(_)) => return,
            None => {
                self.events = None;
                return;
            }
        };
        self.explain_closed(&event);
        let Some(call_id) = &event.call_id else {
            return;
        };
        match &event.kind {
            QuestionEventKind::Answered { provenance, .. } => {
                let shown = self
                    .cards
                    .iter()
                    .any(|c| !c.hidden && c.late_call() == Some(call_id));
                self.command(Command::Withdraw(call_id.clone()));
                if shown {
                    self.note(format!(
                        "The question was answered {}.",
                        provenance.described()
                    ));
                }
            }
            QuestionEventKind::Opened { .. }
            | QuestionEventKind::Claimed { .. }
            | QuestionEventKind::Pending
            | QuestionEventKind::Continued
            | QuestionEventKind::Cancelled { .. } => {}
        }
    }

    /// The note of a card taken down by the end of its request, once the seam says how the
    /// request ended: who answered, or that it was withdrawn.
    fn explain_closed(&mut self, event: &QuestionEvent) {
        let line = match &event.kind {
            QuestionEventKind::Answered { provenance, .. } => format!(
                "The question was answered {}, and closed here.",
                provenance.described()
            ),
            QuestionEventKind::Cancelled { .. } => {
                "The question was withdrawn, and closed here.".to_owned()
            }
            _ => return,
        };
        // A keyed card by its call id; an unkeyed one by its agent.
        let Some(at) = self.closed.iter().position(|c| {
            c.call_id == event.call_id && (c.call_id.is_some() || c.agent == event.agent_id)
        }) else {
            return;
        };
        self.closed.remove(at);
        self.note(line);
    }

    /// Cards taken down whose request's end the seam never explained (it shut down, say).
    fn closed_unexplained(&mut self) {
        let now = Instant::now();
        let before = self.closed.len();
        self.closed.retain(|c| c.due > now);
        for _ in self.closed.len()..before {
            self.note("The question was closed here: answered elsewhere, or withdrawn.".to_owned());
        }
    }

    /// Keeps a claim until its wait ends (the seam has taken the outcome).
    fn settle(&mut self, waiting: Waiting) {
        if let Waiting::Timed { claim, .. } = waiting {
            self.settling.push(Box::pin(async move {
                claim.ended().await;
            }));
        }
    }

    /// Local countdowns that reached zero: the request gets `ASK_TIMED_OUT`, and the card stays as
    /// a pending question when the host takes late answers.
    fn expire(&mut self) {
        let now = Instant::now();
        let cards = std::mem::take(&mut self.cards);
        for mut card in cards {
            if !card.countdown().is_some_and(|c| c.is_due(now)) {
                self.cards.push(card);
                continue;
            }
            let Kind::Foreground {
                waiting,
                reply,
                call_id,
                agent,
            } = card.kind
            else {
                continue;
            };
            self.settle(waiting);
            match (&self.late, call_id) {
                (Some(_), Some(call_id)) => {
                    self.shared.set_late(&call_id, true);
                    card.kind = Kind::Late {
                        call_id,
                        agent,
                        sending: false,
                    };
                    self.cards.push(card);
                }
                (None, _) | (_, None) => {
                    if !card.hidden {
                        self.note(
                            "No answer in time: the question is pending and can be answered later."
                                .to_owned(),
                        );
                    }
                }
            }
            // The late entry is recorded before the outcome goes out, so a host that sees the
            // pending result also sees the question among the late calls.
            let _ = reply.send(CardEnd::TimedOut);
        }
    }

    /// Ctrl-C: cancel what closing would cancel, hide the rest, give the screen back, and pass the
    /// interrupt on to the process.
    fn interrupt(&mut self) {
        let cards = std::mem::take(&mut self.cards);
        for mut card in cards {
            match card.kind {
                Kind::Foreground {
                    waiting: Waiting::Unkeyed,
                    reply,
                    ..
                } => {
                    let _ = reply.send(CardEnd::Cancelled);
                }
                kind @ (Kind::Foreground { .. } | Kind::Late { .. }) => {
                    card.kind = kind;
                    if let Some(countdown) = card.countdown_mut() {
                        countdown.release();
                    }
                    card.hidden = true;
                    self.cards.push(card);
                }
            }
        }
        self.leave();
        self.display.interrupt();
    }

    /// Takes the screen when there are cards, gives it back when there are none, and draws.
    fn refresh(&mut self) {
        if self.cards.is_empty() {
            self.leave();
            return;
        }
        if self.screen.is_none() {
            match self.display.open() {
                Ok(screen) => self.screen = Some(screen),
                Err(error) => {
                    tracing::warn!(%error, "cannot show a question card; passing it on");
                    self.fail_all();
                    return;
                }
            }
        }
        let now = Instant::now();
        let status = user_questions::sync::lock_unpoisoned(&self.shared.status).clone();
        let scene = scene(&self.cards, now, status.as_deref());
        let drawn = match (&mut self.screen, scene) {
            (Some(screen), Some(scene)) => screen.draw(&scene, &self.notes),
            (None, _) | (_, None) => Ok(()),
        };
        if let Err(error) = drawn {
            tracing::warn!(%error, "cannot draw the question card; passing it on");
            self.fail_all();
        }
    }

    fn leave(&mut self) {
        if self.screen.take().is_some() {
            for line in std::mem::take(&mut self.notes) {
                self.display.print(&line);
            }
        }
    }

    /// The screen cannot be used: foreground requests are passed on (claims released first, as
    /// the obligations of SPEC §4.7 require before delegating), pending cards are dropped.
    fn fail_all(&mut self) {
        self.leave();
        for card in std::mem::take(&mut self.cards) {
            self.forget_late(&card);
            if let Kind::Foreground { waiting, reply, .. } = card.kind {
                drop(waiting);
                let _ = reply.send(CardEnd::Unavailable);
            }
        }
    }

    fn discard(&mut self, card: Card) {
        self.forget_late(&card);
        if let Kind::Foreground { waiting, reply, .. } = card.kind {
            drop(waiting);
            let _ = reply.send(CardEnd::Unavailable);
        }
    }

    fn forget_late(&self, card: &Card) {
        if let Some(call_id) = card.late_call() {
            self.shared.set_late(call_id, false);
        }
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        // Notes sent just before the host shut down still reach the normal screen, after the
        // screen has been given back.
        while let Ok(command) = self.commands.try_recv() {
            if let Command::Note(line) = command {
                self.notes.push(line);
            }
        }
        self.screen = None;
        for line in std::mem::take(&mut self.notes) {
            self.display.print(&line);
        }
    }
}

/// The card on screen: the oldest foreground card not hidden, else the oldest pending one.
fn visible(cards: &[Card]) -> Option<usize> {
    cards
        .iter()
        .position(|c| !c.hidden && c.is_foreground())
        .or_else(|| cards.iter().position(|c| !c.hidden))
}

fn scene<'a>(cards: &'a [Card], now: Instant, status: Option<&'a str>) -> Option<Scene<'a>> {
    if cards.is_empty() {
        return None;
    }
    let Some(at) = visible(cards) else {
        let soonest_secs = cards
            .iter()
            .filter_map(|c| c.countdown())
            .map(|c| c.display_secs(now))
            .min();
        return Some(Scene::Reminder(ReminderView {
            hidden: cards.len(),
            soonest_secs,
            status,
        }));
    };
    let card = &cards[at];
    let (clock, close) = match &card.kind {
        Kind::Foreground {
            waiting: Waiting::Unkeyed,
            ..
        } => (Clock::Untimed, CloseMode::Cancel),
        Kind::Foreground {
            waiting: Waiting::Keyed,
            ..
        } => (Clock::Untimed, CloseMode::Hide),
        Kind::Foreground {
            waiting: Waiting::Timed { countdown, .. },
            ..
        } => (
            if countdown.is_held() {
                Clock::Held
            } else {
                Clock::Countdown {
                    secs: countdown.display_secs(now),
                }
            },
            CloseMode::Hide,
        ),
        Kind::Late { .. } => (Clock::Late, CloseMode::Hide),
    };
    Some(Scene::Card(CardView {
        card: &card.state,
        clock,
        close,
        waiting: cards.len() - 1,
        status,
    }))
}

async fn next_input(screen: &mut Option<OpenScreen>) -> Input {
    match screen {
        Some(screen) => match screen.input().recv().await {
            Some(input) => input,
            None => Input::Failed(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the terminal stopped delivering keys",
            )),
        },
        None => pending().await,
    }
}

async fn next_event(events: &mut Option<QuestionEvents>) -> Option<Received> {
    match events {
        Some(events) => events.recv().await,
        None => pending().await,
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => pending().await,
    }
}
