//! The policy: which lifecycle events become notifications, and when.
//!
//! | event | what happens |
//! |---|---|
//! | `opened` | a notification is scheduled `notify_after` later (for a timed question, at most half its window) |
//! | `claimed` | the scheduled one is cancelled: a person is looking |
//! | nobody claimed or answered in time | one `waiting` notification |
//! | `pending` | one `pending` notification, low priority ("answer any time") |
//! | `answered`, `cancelled` | the scheduled one is cancelled; if anything was sent, the resolution goes to the backends that take resolutions (webhooks) |
//!
//! The policy never blocks the seam: it reads the seam's bounded event stream (a lag is counted,
//! not waited for) and hands each notification to every backend's own bounded queue (a full
//! queue drops the notification and counts it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use user_questions::sync::lock_unpoisoned;
use user_questions::{
    CallId, Question, QuestionEvent, QuestionEventKind, QuestionEvents, Received, UserQuestions,
    WaitMode,
};

use crate::backend::{Backend, Links};
use crate::config::NotifyConfig;
use crate::notice::{Button, Notice, NoticeKind, NoticeQuestion};

/// How many notifications wait for one backend at most.
const BACKEND_QUEUE: usize = 64;
/// How many questions the policy follows at most; the oldest goes first.
const MAX_TRACKED: usize = 1024;
/// How long a question is followed without news (a pending one answered in another process
/// ends without an event here).
const TRACK_LIFETIME: Duration = Duration::from_hours(24);

/// Counters, for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotifyStats {
    /// Notifications handed to backends.
    pub queued: u64,
    /// Notifications dropped because a backend's queue was full.
    pub dropped: u64,
    /// Lifecycle events the policy missed because it fell behind the seam.
    pub missed_events: u64,
}

#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    dropped: AtomicU64,
    missed: AtomicU64,
}

struct Tracked {
    since: tokio::time::Instant,
    questions: Vec<NoticeQuestion>,
    timer: Option<AbortHandle>,
    /// Something was sent about this question: its resolution is sent too.
    sent: bool,
}

type Key = (String, CallId);

struct Inner {
    config: NotifyConfig,
    links: Option<Arc<dyn Links>>,
    queues: Vec<(bool, mpsc::Sender<Arc<Notice>>)>,
    /// Some backend shows answer buttons: only then are one-time grants made.
    buttons: bool,
    tracked: Mutex<HashMap<Key, Tracked>>,
    counters: Counters,
}

/// Turns the seam's lifecycle events into notifications for its backends. Dropping it stops
/// the policy and the backends' workers (what is in flight is abandoned).
pub struct Notifier {
    inner: Arc<Inner>,
    tasks: Vec<AbortHandle>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("backends", &self.inner.queues.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// Starts following `seam`'s events with `config`'s policy, delivering to `backends` (each on
    /// a worker task of its own). `links` gives the questions' text and labels, the card's URL and
    /// answer buttons, when a web surface shows the questions.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(
        seam: &UserQuestions,
        config: NotifyConfig,
        links: Option<Arc<dyn Links>>,
        backends: Vec<Arc<dyn Backend>>,
    ) -> Self {
        let mut tasks = Vec::new();
        let mut queues = Vec::new();
        let buttons = backends.iter().any(|b| b.wants_buttons());
        for backend in backends {
            let (tx, mut rx) = mpsc::channel::<Arc<Notice>>(BACKEND_QUEUE);
            queues.push((backend.takes_resolutions(), tx));
            let worker = tokio::spawn(async move {
                while let Some(notice) = rx.recv().await {
                    backend.deliver(&notice).await;
                }
            });
            tasks.push(worker.abort_handle());
        }
        let inner = Arc::new(Inner {
            config,
            links,
            queues,
            buttons,
            tracked: Mutex::new(HashMap::new()),
            counters: Counters::default(),
        });
        let follow = tokio::spawn(follow(Arc::downgrade(&inner), seam.subscribe()));
        tasks.push(follow.abort_handle());
        Self { inner, tasks }
    }

    /// Tells every backend that `agent` (its name for a person) waits for its person at its own
    /// terminal in `session`, for what `text` says: a notification with no card and no
    /// buttons (nothing here can answer it), linking to the page.
    pub fn announce(&self, agent: &str, session: &str, text: &str) {
        let kind = NoticeKind::Attention {
            agent: agent.to_owned(),
            text: text.to_owned(),
        };
        let notice = Arc::new(Notice {
            id: crate::notice::new_id(),
            kind,
            session: session.to_owned(),
            call_id: String::new(),
            at_ms: user_questions::now_unix_ms(),
            questions: Vec::new(),
            url: self.inner.links.as_ref().and_then(|l| l.card_url()),
            open_url: self.inner.links.as_ref().and_then(|l| l.open_url()),
            buttons: Vec::new(),
        });
        self.inner.enqueue(&notice, false);
    }

    /// The counters so far.
    pub fn stats(&self) -> NotifyStats {
        let c = &self.inner.counters;
        NotifyStats {
            queued: c.queued.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            missed_events: c.missed.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let tracked = std::mem::take(&mut *lock_unpoisoned(&self.inner.tracked));
        for (_, t) in tracked {
            if let Some(timer) = t.timer {
                timer.abort();
            }
        }
    }
}

async fn follow(inner: Weak<Inner>, mut events: QuestionEvents) {
    while let Some(received) = events.recv().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        match received {
            Received::Event(event) => inner.on_event(&event),
            Received::Missed(missed) => {
                inner.counters.missed.fetch_add(missed, Ordering::Relaxed);
                tracing::warn!(missed, "notifications fell behind the seam's events");
            }
        }
    }
}

impl Inner {
    fn tracked(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Tracked>> {
        lock_unpoisoned(&self.tracked)
    }

    fn on_event(self: &Arc<Self>, event: &QuestionEvent) {
        // A question without a call id (a blocking ask) is followed by its ask id.
        let Some(call_id) = event.call_id.clone().or_else(|| {
            event
                .ask_id
                .as_ref()
                .map(|a| CallId::from(format!("ask:{a}")))
        }) else {
            return;
        };
        let session = event
            .session_id
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default();
        let key = (session, call_id);
        match &event.kind {
            QuestionEventKind::Opened {
                wait,
                remaining_ms,
                questions,
            } => {
                let mut delay = self.config.notify_after;
                if *wait == WaitMode::Timed
                    && let Some(ms) = remaining_ms
                {
                    delay = delay.min(Duration::from_millis(ms / 2));
                }
                let summaries = questions
                    .iter()
                    .map(|q| NoticeQuestion::from_summary(&q.id, q.header.as_deref(), q.options))
                    .collect();
                let weak = Arc::downgrade(self);
                let timer_key = key.clone();
                // Spawned and recorded under one lock: a timer due at once finds its entry.
                let mut tracked = self.tracked();
                prune(&mut tracked);
                let timer = tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    if let Some(inner) = weak.upgrade() {
                        inner.waiting(&timer_key);
                    }
                });
                let old = tracked.insert(
                    key,
                    Tracked {
                        since: tokio::time::Instant::now(),
                        questions: summaries,
                        timer: Some(timer.abort_handle()),
                        sent: false,
                    },
                );
                drop(tracked);
                if let Some(timer) = old.and_then(|o| o.timer) {
                    timer.abort();
                }
            }
            QuestionEventKind::Claimed { .. } if !self.config.ignore_claims => {
                if let Some(timer) = self.tracked().get_mut(&key).and_then(|t| t.timer.take()) {
                    timer.abort();
                }
            }
            // The person was told at `pending`; that the result is durable now changes nothing
            // for them.
            QuestionEventKind::Claimed { .. } | QuestionEventKind::Continued => {}
            QuestionEventKind::Pending => self.pending(&key),
            QuestionEventKind::Answered { provenance, .. } => self.resolved(
                &key,
                NoticeKind::Answered {
                    by: provenance.answerer.clone(),
                },
            ),
            QuestionEventKind::Cancelled { code } => self.resolved(
                &key,
                NoticeKind::Cancelled {
                    code: code.as_ref().map(|c| c.as_str().to_owned()),
                },
            ),
        }
    }

    /// Nobody claimed or answered in time.
    fn waiting(&self, key: &Key) {
        let questions = {
            let mut tracked = self.tracked();
            let Some(t) = tracked.get_mut(key) else {
                return;
            };
            if t.timer.take().is_none() {
                return;
            }
            t.sent = true;
            t.questions.clone()
        };
        self.send(key, NoticeKind::Waiting, questions, false);
    }

    fn pending(&self, key: &Key) {
        let questions = {
            let mut tracked = self.tracked();
            prune(&mut tracked);
            let t = tracked.entry(key.clone()).or_insert_with(|| Tracked {
                since: tokio::time::Instant::now(),
                questions: Vec::new(),
                timer: None,
                sent: false,
            });
            if let Some(timer) = t.timer.take() {
                timer.abort();
            }
            t.sent = true;
            t.since = tokio::time::Instant::now();
            t.questions.clone()
        };
        self.send(key, NoticeKind::Pending, questions, false);
    }

    fn resolved(&self, key: &Key, kind: NoticeKind) {
        let Some(t) = self.tracked().remove(key) else {
            return;
        };
        if let Some(timer) = t.timer {
            timer.abort();
        }
        if t.sent {
            self.send(key, kind, t.questions, true);
        }
    }

    fn send(&self, key: &Key, kind: NoticeKind, summaries: Vec<NoticeQuestion>, resolution: bool) {
        let (session, call_id) = key;
        let full: Option<Vec<Question>> = self
            .links
            .as_ref()
            .and_then(|l| l.questions(session, call_id));
        let questions = match &full {
            Some(full) => full
                .iter()
                .map(|q| NoticeQuestion::from_question(q, self.config.include_text))
                .collect(),
            None => summaries,
        };
        let buttons = match (&kind, &full, &self.links) {
            (NoticeKind::Waiting | NoticeKind::Pending, Some(full), Some(links))
                if self.buttons =>
            {
                buttons(links.as_ref(), session, call_id, full)
            }
            _ => Vec::new(),
        };
        let notice = Arc::new(Notice {
            id: crate::notice::new_id(),
            kind,
            session: session.clone(),
            call_id: call_id.as_str().to_owned(),
            at_ms: user_questions::now_unix_ms(),
            questions,
            url: self.links.as_ref().and_then(|l| l.card_url()),
            open_url: self.links.as_ref().and_then(|l| l.open_url()),
            buttons,
        });
        self.enqueue(&notice, resolution);
    }

    /// Hands `notice` to every backend's queue (a resolution only to those that take them).
    fn enqueue(&self, notice: &Arc<Notice>, resolution: bool) {
        for (takes_resolutions, queue) in &self.queues {
            if resolution && !takes_resolutions {
                continue;
            }
            if queue.try_send(Arc::clone(notice)).is_ok() {
                self.counters.queued.fetch_add(1, Ordering::Relaxed);
            } else {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("a notification backend is behind; a notification was dropped");
            }
        }
    }
}

/// The buttons for `questions` of `call_id`: one per option of the first question when it is
/// single-select with one to three options and `links` grants one-time answers.
pub(crate) fn buttons(
    links: &dyn Links,
    session: &str,
    call_id: &CallId,
    questions: &[Question],
) -> Vec<Button> {
    let Some(first) = questions.first() else {
        return Vec::new();
    };
    let options = first.options();
    if first.is_multi_select() || options.is_empty() || options.len() > 3 {
        return Vec::new();
    }
    // All the options' buttons or none: a partial set would hide a choice.
    options
        .iter()
        .map(|option| {
            let (url, body) = links.answer_button(session, call_id, &first.id, &option.label)?;
            Some(Button {
                label: option.label.clone(),
                url,
                body,
            })
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// Forgets questions followed too long without news, and the oldest beyond the cap.
fn prune(tracked: &mut HashMap<Key, Tracked>) {
    let now = tokio::time::Instant::now();
    let expired: Vec<Key> = tracked
        .iter()
        .filter(|(_, t)| now.duration_since(t.since) >= TRACK_LIFETIME)
        .map(|(k, _)| k.clone())
        .collect();
    for key in expired {
        if let Some(timer) = tracked.remove(&key).and_then(|t| t.timer) {
            timer.abort();
        }
    }
    while tracked.len() >= MAX_TRACKED {
        let Some(oldest) = tracked
            .iter()
            .min_by_key(|(_, t)| t.since)
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        if let Some(timer) = tracked.remove(&oldest).and_then(|t| t.timer) {
            timer.abort();
        }
    }
}
