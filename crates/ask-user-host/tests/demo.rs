//! The scripted model's whole exchange (`ScriptedModel::play`, what `ask-user demo` runs):
//! pending when nobody answers, a late reply admitted when the caller waits, stopped when
//! cancelled. Paused clock: the window and the work pass at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use ask_user_host::Host;
use ask_user_host::demo::{DEMO_CALL_ID, Played, ScriptedModel, Shown};
use tool_ask_user::AskUserConfig;
use user_questions::{AnswerBatch, AnswerItem, CallId, CancellationToken, Provenance};

fn host() -> Arc<Host> {
    Arc::new(Host::in_memory(AskUserConfig::timed_secs(5)).unwrap())
}

#[tokio::test(start_paused = true)]
async fn nobody_answers_so_the_call_goes_pending_and_the_model_works_on() {
    let host = host();
    let shown = Mutex::new(Vec::new());
    let show = |s: Shown<'_>| shown.lock().unwrap().push(format!("{s:?}"));
    let model = ScriptedModel::new(&host, CancellationToken::new(), &show);
    let mut waiting = None;
    let played = model
        .play(async {}, |questions| {
            waiting = Some(questions.len());
            false
        })
        .await
        .unwrap();
    let Played::Pending {
        questions,
        waited,
        admitted,
    } = played
    else {
        panic!("{played:?}");
    };
    assert_eq!((questions.len(), waited, admitted), (2, false, false));
    assert_eq!(
        waiting,
        Some(2),
        "asked whether to wait, with the questions"
    );
    assert!(
        host.projection()
            .active(&CallId::from(DEMO_CALL_ID))
            .is_some()
    );
    assert!(shown.lock().unwrap().iter().any(|s| s.contains("pending")));
}

#[tokio::test(start_paused = true)]
async fn a_late_reply_is_admitted_when_the_caller_waits() {
    let host = host();
    let model = ScriptedModel::new(&host, CancellationToken::new(), &|_| {});
    let person = Arc::clone(&host);
    let answer_later = move |_: &[_]| {
        let answers = AnswerBatch::new([
            AnswerItem::selected("db", ["SQLite"]),
            AnswerItem::selected("checks", ["Lint"]),
        ]);
        let call = CallId::from(DEMO_CALL_ID);
        person
            .late()
            .queue(&call, answers, Provenance::human("test"))
            .unwrap();
        true
    };
    let played = model.play(async {}, answer_later).await.unwrap();
    assert!(
        matches!(
            played,
            Played::Pending {
                waited: true,
                admitted: true,
                ..
            }
        ),
        "{played:?}"
    );
    assert_eq!(host.projection().view().settled.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn cancelled_before_the_call_ends_stopped_and_never_waits() {
    let host = host();
    let cancel = CancellationToken::new();
    let model = ScriptedModel::new(&host, cancel.clone(), &|_| {});
    let played = model
        .play(async move { cancel.cancel() }, |_| panic!("never asked"))
        .await
        .unwrap();
    assert_eq!(played, Played::Stopped);
}
