//! Races between an answer, the deadline, a claim release, turn cancellation and shutdown, in every
//! order, under the paused clock. Each order is checked against a small model of SPEC §4.7: the
//! first decisive event fixes the outcome, nothing later changes it, exactly one terminal lifecycle
//! event is emitted, and no wait, timer or answerer future is left behind.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use tokio::sync::Notify;
use tokio::time::advance;
use user_questions::{
    AskError, AskRequest, CancellationToken, ErrorCode, QuestionEventKind, TimedAskRequest,
    TimedOutcome,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The answerer submits.
    Answer,
    /// The clock passes the deadline.
    Deadline,
    /// The claim (if one was taken) is released.
    Release,
    /// The turn token is cancelled.
    Cancel,
    /// The seam shuts down.
    Shutdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Answered,
    Pending,
    Aborted,
}

/// The expected outcome and the index of the step that decides it.
fn model(steps: &[Step], claimed: bool, timed: bool) -> (Outcome, usize) {
    let mut claimed = claimed;
    let mut past_deadline = false;
    for (at, step) in steps.iter().enumerate() {
        let decided = match step {
            Step::Answer => Some(Outcome::Answered),
            Step::Deadline => {
                past_deadline = true;
                (timed && !claimed).then_some(Outcome::Pending)
            }
            Step::Release => {
                let was = std::mem::take(&mut claimed);
                (timed && was && past_deadline).then_some(Outcome::Pending)
            }
            Step::Cancel => Some(Outcome::Aborted),
            // A blocking ask waiting on its answerer is not interrupted by shutdown (§4.10).
            Step::Shutdown => timed.then_some(Outcome::Aborted),
        };
        if let Some(outcome) = decided {
            return (outcome, at);
        }
    }
    panic!("every order contains a decisive step")
}

fn permutations(items: &[Step]) -> Vec<Vec<Step>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (at, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(at);
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            all.push(tail);
        }
    }
    all
}

async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

const WINDOW_MS: u64 = 5000;

async fn run_timed(steps: &[Step], claim_first: bool) {
    let w = world();
    let mut events = w.seam.subscribe();
    let gate = Arc::new(Notify::new());
    let ui = TestAnswerer::new(Behaviour::Gated(gate.clone()));
    let _g = ui.register(&w.seam, "ui");
    let turn = CancellationToken::new();
    let seam = w.seam.clone();
    let request = TimedAskRequest::new([q_scope()], w.r.clone()).with_cancel(turn.clone());
    #[allow(clippy::cast_possible_wrap)] // WINDOW_MS is a small constant.
    let task = tokio::spawn(async move {
        seam.ask_timed(request, call("race"), WINDOW_MS as i64)
            .await
    });
    settle().await;
    assert_eq!(w.seam.live_waits(), 1, "registered");
    let mut claim = if claim_first {
        Some(w.seam.attach_wait(&w.r, &call("race")).unwrap().unwrap())
    } else {
        None
    };
    let (expected, decisive) = model(steps, claim_first, true);
    for (at, step) in steps.iter().enumerate() {
        match step {
            Step::Answer => gate.notify_one(),
            Step::Deadline => advance(Duration::from_millis(WINDOW_MS)).await,
            Step::Release => drop(claim.take()),
            Step::Cancel => turn.cancel(),
            Step::Shutdown => w.seam.shutdown().await,
        }
        settle().await;
        assert_eq!(
            task.is_finished(),
            at >= decisive,
            "{steps:?} claim={claim_first}: finished after step {at}?"
        );
        if at == decisive {
            // The seam never cancels the caller's turn: only the test's own Cancel step does.
            assert_eq!(turn.is_cancelled(), *step == Step::Cancel, "{steps:?}");
        }
    }
    let outcome = match task.await.unwrap() {
        Ok(TimedOutcome::Answered(_)) => Outcome::Answered,
        Ok(TimedOutcome::Pending { .. }) => Outcome::Pending,
        Err(e) => {
            assert_eq!(e.code(), Some("ASK_ABORTED"), "{steps:?}: {e}");
            Outcome::Aborted
        }
    };
    assert_eq!(outcome, expected, "{steps:?} claim={claim_first}");
    if let Some(claim) = &claim {
        assert!(claim.end().is_some(), "{steps:?}: the wait ended");
    }
    drop(claim);
    assert_eq!(w.seam.live_waits(), 0, "{steps:?}");
    settle().await;
    assert_eq!(alive_tasks(), 0, "{steps:?}: no timer is left");
    assert_eq!(*ui.dropped.lock().unwrap(), 1, "the answerer future ended");
    let terminal: Vec<_> = events
        .drain()
        .into_iter()
        .filter(|e| {
            !matches!(
                e.kind,
                QuestionEventKind::Opened { .. } | QuestionEventKind::Claimed { .. }
            )
        })
        .collect();
    assert_eq!(terminal.len(), 1, "{steps:?}: {terminal:?}");
}

#[tokio::test(start_paused = true)]
async fn timed_races_in_every_order() {
    let all = [
        Step::Answer,
        Step::Deadline,
        Step::Release,
        Step::Cancel,
        Step::Shutdown,
    ];
    for steps in permutations(&all) {
        for claim_first in [false, true] {
            run_timed(&steps, claim_first).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn blocking_races_in_every_order() {
    for steps in permutations(&[Step::Answer, Step::Cancel, Step::Shutdown]) {
        let w = world();
        let gate = Arc::new(Notify::new());
        let ui = TestAnswerer::new(Behaviour::Gated(gate.clone()));
        let _g = ui.register(&w.seam, "ui");
        let turn = CancellationToken::new();
        let seam = w.seam.clone();
        let request = AskRequest::new([q_scope()])
            .with_agent(w.r.clone())
            .with_cancel(turn.clone());
        let task = tokio::spawn(async move { seam.ask(request).await });
        settle().await;
        let (expected, decisive) = model(&steps, false, false);
        for (at, step) in steps.iter().enumerate() {
            match step {
                Step::Answer => gate.notify_one(),
                Step::Cancel => turn.cancel(),
                Step::Shutdown => w.seam.shutdown().await,
                Step::Deadline | Step::Release => unreachable!(),
            }
            settle().await;
            assert_eq!(task.is_finished(), at >= decisive, "{steps:?} after {at}");
        }
        let outcome = match task.await.unwrap() {
            Ok(_) => Outcome::Answered,
            Err(e) => {
                assert_eq!(e.code(), Some("ASK_ABORTED"));
                Outcome::Aborted
            }
        };
        assert_eq!(outcome, expected, "{steps:?}");
        assert_eq!(*ui.dropped.lock().unwrap(), 1);
    }
}

/// Two surfaces claim the same wait; one leaves, the other answers after the deadline.
#[tokio::test(start_paused = true)]
async fn second_surface_answers_after_first_leaves() {
    let w = world();
    let gate = Arc::new(Notify::new());
    let _g = TestAnswerer::new(Behaviour::Gated(gate.clone())).register(&w.seam, "ui");
    let seam = w.seam.clone();
    let r = w.r.clone();
    let task = tokio::spawn(async move {
        seam.ask_timed(TimedAskRequest::new([q_scope()], r), call("two"), 1000)
            .await
    });
    settle().await;
    let web = w.seam.attach_wait(&w.r, &call("two")).unwrap().unwrap();
    let term = w.seam.attach_wait(&w.r, &call("two")).unwrap().unwrap();
    advance(Duration::from_secs(3)).await;
    drop(web);
    settle().await;
    assert!(!task.is_finished(), "the terminal still holds the wait");
    gate.notify_one();
    settle().await;
    assert!(matches!(task.await.unwrap(), Ok(TimedOutcome::Answered(_))));
    drop(term);
    assert_eq!(w.seam.live_waits(), 0);
}

/// Many concurrent timed asks on a multi-threaded runtime, each raced by a cancel or an answer:
/// every ask ends exactly once and the registry drains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_asks_drain_the_registry() {
    let w = world();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&w.seam, "ui");
    let mut tasks = Vec::new();
    for i in 0..200 {
        let seam = w.seam.clone();
        let r = w.r.clone();
        let turn = CancellationToken::new();
        if i % 3 == 0 {
            turn.cancel();
        }
        tasks.push(tokio::spawn(async move {
            seam.ask_timed(
                TimedAskRequest::new([q_scope()], r).with_cancel(turn),
                call(&format!("c{i}")),
                60_000,
            )
            .await
        }));
    }
    let mut answered = 0;
    let mut aborted = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(TimedOutcome::Answered(_)) => answered += 1,
            Err(AskError::Question(e)) if e.is(&ErrorCode::AskAborted) => aborted += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((answered, aborted), (133, 67));
    assert_eq!(w.seam.live_waits(), 0);
}
