//! SPEC §12.1 (S1–S19) and the `ask`-side extension scenarios X1, X3, X5, X6, X7.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use user_questions::{
    AnswerBatch, AnswerItem, AnsweredBy, AskError, AskRequest, CancellationToken, ErrorCode,
    Question, QuestionIntent, QuestionLimits, QuestionOption, RegisterOptions, ScopeId,
    UserQuestionError, UserQuestions, UserQuestionsConfig, same_agent,
};

#[track_caller]
fn code(result: &Result<user_questions::Answered, AskError>) -> &str {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.code().expect("a typed error"),
    }
}

#[tokio::test]
async fn s1_agentless_first_label() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let answered = seam.ask(AskRequest::new([q_confirm()])).await.unwrap();
    assert_eq!(
        answered.answers,
        AnswerBatch::new([AnswerItem::selected("confirm", ["yes"])])
    );
    let seen = ui.last();
    assert!(seen.agent.is_none());
    assert!(seen.wait.is_none());
    assert_eq!(seen.questions, vec![q_confirm()]);
    assert_eq!(answered.provenance.answerer, "ui");
    assert_eq!(answered.provenance.answered_by, AnsweredBy::Human);
}

#[tokio::test]
async fn s2_no_answerer_is_no_provider() {
    let seam = bare_seam();
    let result = seam.ask(AskRequest::new([q_confirm()])).await;
    assert_eq!(code(&result), "NO_PROVIDER");
}

#[tokio::test]
async fn s3_dispose_twice_then_drop() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let mut guard = ui.register(&seam, "ui");
    guard.dispose();
    guard.dispose();
    drop(guard);
    assert_eq!(seam.registered_answerers(), 0);
    let result = seam.ask(AskRequest::new([q_confirm()])).await;
    assert_eq!(code(&result), "NO_PROVIDER");
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn s4_decline_then_answer() {
    let seam = bare_seam();
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = TestAnswerer::logging("A", Behaviour::Decline, &log);
    let b = TestAnswerer::logging(
        "B",
        Behaviour::Answer(AnswerBatch::new([AnswerItem::selected("confirm", ["no"])])),
        &log,
    );
    let _ga = a.register(&seam, "A");
    let _gb = b.register(&seam, "B");
    let answered = seam.ask(AskRequest::new([q_confirm()])).await.unwrap();
    assert_eq!(answered.answers.answers[0].selected, vec!["no"]);
    assert_eq!(answered.provenance.answerer, "B");
    assert_eq!(*log.lock().unwrap(), vec!["A", "B"]);
}

#[tokio::test]
async fn s5_cancelled_before_ask() {
    let seam = bare_seam();
    let mut events = seam.subscribe();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let token = CancellationToken::new();
    token.cancel();
    let result = seam
        .ask(AskRequest::new([q_confirm()]).with_cancel(token))
        .await;
    assert_eq!(code(&result), "ASK_ABORTED");
    assert_eq!(ui.calls(), 0);
    assert!(events.drain().is_empty());
}

#[tokio::test]
async fn s6_foreign_error_after_cancel_becomes_aborted_with_source() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::ForeignAfterCancel);
    let _g = ui.register(&seam, "ui");
    let token = CancellationToken::new();
    let ask = seam.ask(AskRequest::new([q_confirm()]).with_cancel(token.clone()));
    let cancel = async {
        tokio::task::yield_now().await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(ask, cancel);
    let Err(AskError::Question(mut error)) = result else {
        panic!("expected a typed error")
    };
    assert_eq!(error.code(), "ASK_ABORTED");
    let source = error.take_source().expect("source kept");
    assert!(source.downcast_ref::<Boom>().is_some());
}

#[tokio::test]
async fn s7_answerer_ignoring_cancel_is_dropped() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::Never);
    let _g = ui.register(&seam, "ui");
    let token = CancellationToken::new();
    let ask = seam.ask(AskRequest::new([q_confirm()]).with_cancel(token.clone()));
    let cancel = async {
        tokio::task::yield_now().await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(ask, cancel);
    let Err(AskError::Question(error)) = result else {
        panic!("expected a typed error")
    };
    assert_eq!(error.code(), "ASK_ABORTED");
    assert!(std::error::Error::source(&error).is_none());
    assert_eq!(
        *ui.dropped.lock().unwrap(),
        1,
        "the answer future was dropped"
    );
}

#[tokio::test]
async fn s8_typed_error_in_same_poll_as_cancel_wins() {
    let seam = bare_seam();
    let token = CancellationToken::new();
    let ui = TestAnswerer::new(Behaviour::CancelThen(
        token.clone(),
        UserQuestionError::ask_cancelled,
    ));
    let _g = ui.register(&seam, "ui");
    let result = seam
        .ask(AskRequest::new([q_confirm()]).with_cancel(token))
        .await;
    let Err(AskError::Question(error)) = result else {
        panic!("expected a typed error")
    };
    assert_eq!(error.code(), "ASK_CANCELLED");
    assert_eq!(
        error.message(),
        UserQuestionError::ask_cancelled().message()
    );
}

#[tokio::test]
async fn s9_foreign_error_passes_through() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::Foreign);
    let _g = ui.register(&seam, "ui");
    let result = seam.ask(AskRequest::new([q_confirm()])).await;
    let Err(AskError::Foreign(error)) = result else {
        panic!("expected a foreign error")
    };
    assert!(error.downcast_ref::<Boom>().is_some());
}

#[tokio::test]
async fn s10_empty_questions() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let result = seam.ask(AskRequest::new([])).await;
    assert_eq!(code(&result), "EMPTY_QUESTIONS");
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn s11_delegated_child_cannot_ask() {
    let w = world();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&w.seam, "ui");
    let result = w
        .seam
        .ask(AskRequest::new([q_confirm()]).with_agent(w.c.clone()))
        .await;
    assert_eq!(code(&result), "DELEGATED_CALLER");
    let message = result.unwrap_err().to_string();
    assert!(message.contains("final result"), "{message}");
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn s12_root_with_lineage_may_ask() {
    let w = world();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&w.seam, "ui");
    let answered = w
        .seam
        .ask(AskRequest::new([q_confirm()]).with_agent(w.l.clone()))
        .await
        .unwrap();
    assert_eq!(answered.answers.answers[0].selected, vec!["yes"]);
    assert!(same_agent(ui.last().agent.as_ref().unwrap(), &w.l));
}

#[tokio::test]
async fn s13_agent_without_registry() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let result = seam
        .ask(AskRequest::new([q_confirm()]).with_agent(agent("R", &[])))
        .await;
    assert_eq!(code(&result), "CALLER_NOT_LIVE");
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn s14_same_id_different_object() {
    let w = world();
    w.registry.enter_root(agent("same-id", &[]));
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&w.seam, "ui");
    let impostor = agent("same-id", &[]);
    let result = w
        .seam
        .ask(AskRequest::new([q_confirm()]).with_agent(impostor))
        .await;
    assert_eq!(code(&result), "CALLER_NOT_LIVE");
    assert_eq!(ui.calls(), 0);
}

fn plan_review(approve: &str, options: Option<&[&str]>, detail: bool) -> Question {
    let mut q =
        Question::new("plan", "Approve the plan?").with_intent(QuestionIntent::PlanReview {
            approve: approve.to_owned(),
            call_id: None,
        });
    if let Some(options) = options {
        q = q.with_options(options.iter().map(|l| QuestionOption::new(*l)));
    }
    if detail {
        q = q.with_detail("# Plan\n1. Do it.");
    }
    q
}

#[tokio::test]
async fn s15_intent_approve_must_name_an_option() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    for q in [
        plan_review("Ship it", Some(&["Approve", "Keep planning"]), true),
        plan_review("Ship it", None, true),
    ] {
        let result = seam.ask(AskRequest::new([q])).await;
        assert_eq!(code(&result), "BAD_INTENT");
        let message = result.unwrap_err().to_string();
        assert!(message.contains("\"Ship it\""), "{message}");
        assert!(message.contains("\"plan\""), "{message}");
        assert!(message.contains("plan-review"), "{message}");
    }
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn s16_intent_needs_detail() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let q = plan_review("Approve", Some(&["Approve", "Keep planning"]), false);
    let result = seam.ask(AskRequest::new([q])).await;
    assert_eq!(code(&result), "BAD_INTENT");
    assert!(result.unwrap_err().to_string().contains("detail"));
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn s17_valid_plan_review_reaches_answerer_unchanged() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let review = plan_review("Approve", Some(&["Approve", "Keep planning"]), true);
    let answered = seam
        .ask(AskRequest::new([q_confirm(), review.clone()]))
        .await
        .unwrap();
    assert_eq!(answered.answers.answers.len(), 2);
    assert_eq!(ui.last().questions[1].intent, review.intent);
}

#[tokio::test]
async fn s18_scoping() {
    let w = world();
    let log = Arc::new(Mutex::new(Vec::new()));
    let reg = |name: &str, opts: RegisterOptions| {
        w.seam
            .register(TestAnswerer::logging(name, Behaviour::Decline, &log), opts)
    };
    // R's chain is [scope-r, scope-parent]; C's scope "scope-c" lies below R's.
    let _g = reg("G", RegisterOptions::global("G"));
    let _p = reg("P", RegisterOptions::scoped("P", "scope-parent"));
    let _s = reg("S", RegisterOptions::scoped("S", "scope-r"));
    let _x = reg(
        "X",
        RegisterOptions::scoped("X", ScopeId::from("scope-sibling")),
    );
    let _d = reg("D", RegisterOptions::scoped("D", "scope-c"));

    let result = w
        .seam
        .ask(AskRequest::new([q_confirm()]).with_agent(w.r.clone()))
        .await;
    assert_eq!(code(&result), "NO_PROVIDER");
    assert_eq!(*log.lock().unwrap(), vec!["G", "P", "S"]);

    log.lock().unwrap().clear();
    let result = w.seam.ask(AskRequest::new([q_confirm()])).await;
    assert_eq!(code(&result), "NO_PROVIDER");
    assert_eq!(*log.lock().unwrap(), vec!["G", "P", "S", "X", "D"]);
}

#[tokio::test]
async fn s19_prepend_ordering() {
    let seam = bare_seam();
    let log = Arc::new(Mutex::new(Vec::new()));
    let _a = seam.register(
        TestAnswerer::logging("A", Behaviour::Decline, &log),
        RegisterOptions::global("A"),
    );
    let _b = seam.register(
        TestAnswerer::logging("B", Behaviour::Decline, &log),
        RegisterOptions::global("B"),
    );
    let _c = seam.register(
        TestAnswerer::logging("C", Behaviour::Decline, &log),
        RegisterOptions::global("C").prepended(),
    );
    let _ = seam.ask(AskRequest::new([q_confirm()])).await;
    assert_eq!(*log.lock().unwrap(), vec!["C", "A", "B"]);
}

#[tokio::test]
async fn x1_provenance_stamping() {
    let answer_b =
        || Behaviour::Answer(AnswerBatch::new([AnswerItem::selected("confirm", ["no"])]));
    for (a_behaviour, expected) in [
        (Behaviour::Decline, "B"),
        (Behaviour::PassThrough, "B"),
        (Behaviour::Replace, "A"),
    ] {
        let seam = bare_seam();
        let _a = TestAnswerer::new(a_behaviour).register(&seam, "A");
        let _b = TestAnswerer::new(answer_b()).register(&seam, "B");
        let answered = seam.ask(AskRequest::new([q_confirm()])).await.unwrap();
        assert_eq!(answered.provenance.answerer, expected);
        assert_eq!(answered.provenance.answered_by, AnsweredBy::Human);
    }
    let seam = bare_seam();
    let script = user_questions::ScriptedAnswerer::from_answers([(
        "confirm",
        user_questions::ScriptedAnswer {
            selected: vec!["yes".into()],
            custom: None,
        },
    )]);
    let _s = seam.register(Arc::new(script), RegisterOptions::global("scripted"));
    let answered = seam.ask(AskRequest::new([q_confirm()])).await.unwrap();
    assert_eq!(answered.provenance.answered_by, AnsweredBy::Rule);
    assert_eq!(answered.provenance.answerer, "scripted");
}

#[track_caller]
fn check_answer(questions: Vec<Question>, items: Vec<AnswerItem>, expect: Result<(), &str>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let seam = bare_seam();
        let _g =
            TestAnswerer::new(Behaviour::Answer(AnswerBatch::new(items))).register(&seam, "ui");
        let result = seam.ask(AskRequest::new(questions)).await;
        match (result, expect) {
            (Ok(_), Ok(())) => {}
            (Err(e), Err(fragment)) => {
                assert_eq!(e.code(), Some("BAD_ANSWER"));
                assert!(e.to_string().contains(fragment), "{e} lacks {fragment}");
            }
            (result, expect) => panic!("got {result:?}, expected {expect:?}"),
        }
    });
}

#[test]
fn x3_foreground_validation() {
    let scope = || q_scope();
    let multi = || {
        Question::new("targets", "Which?")
            .with_options([QuestionOption::new("tests"), QuestionOption::new("docs")])
            .with_multi_select(true)
    };
    let bare = || Question::new("notes", "Anything else?");
    let sel = |id: &str, labels: &[&str]| AnswerItem::selected(id, labels.iter().copied());

    check_answer(vec![scope()], vec![sel("other", &[])], Err("\"other\""));
    check_answer(
        vec![scope(), bare()],
        vec![sel("scope", &[])],
        Err("\"notes\""),
    );
    check_answer(
        vec![scope()],
        vec![sel("scope", &[]), sel("scope", &[])],
        Err("more than once"),
    );
    check_answer(
        vec![scope()],
        vec![sel("scope", &["Nope"])],
        Err("\"Nope\""),
    );
    check_answer(vec![bare()], vec![sel("notes", &["x"])], Err("\"x\""));
    check_answer(
        vec![scope()],
        vec![sel("scope", &["Tool only", "Everything"])],
        Err("single-select"),
    );
    check_answer(
        vec![multi()],
        vec![sel("targets", &["tests", "docs"])],
        Ok(()),
    );
    check_answer(
        vec![bare()],
        vec![AnswerItem::custom("notes", "x".repeat(16_385))],
        Err("16385 bytes"),
    );
    check_answer(
        vec![bare()],
        vec![AnswerItem::custom("notes", "x".repeat(16_384))],
        Ok(()),
    );
    check_answer(vec![scope()], vec![AnswerItem::skipped("scope")], Ok(()));
    // Rules are checked in order over the whole batch: a wrong label on the second item (rule 4)
    // is reported before oversized text on the first (rule 6), and two labels on a single-select
    // question (rule 5) before oversized text too.
    check_answer(
        vec![bare(), scope()],
        vec![
            AnswerItem::custom("notes", "x".repeat(20_000)),
            sel("scope", &["nope"]),
        ],
        Err("\"nope\""),
    );
    check_answer(
        vec![bare(), scope()],
        vec![
            AnswerItem::custom("notes", "x".repeat(20_000)),
            sel("scope", &["Tool only", "Everything"]),
        ],
        Err("single-select"),
    );
}

fn numbered(n: usize) -> Vec<Question> {
    (0..n)
        .map(|i| Question::new(format!("q{i}"), format!("Question {i}?")))
        .collect()
}

#[tokio::test]
async fn x5_limits() {
    let seam = bare_seam();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&seam, "ui");
    let result = seam.ask(AskRequest::new(numbered(9))).await;
    assert_eq!(code(&result), "BAD_QUESTIONS");
    let message = result.unwrap_err().to_string();
    assert!(message.contains('9') && message.contains('8'), "{message}");
    assert!(seam.ask(AskRequest::new(numbered(8))).await.is_ok());
    assert!(seam.ask(AskRequest::new(numbered(5))).await.is_ok());

    let one = Question::new("one", "Only?").with_options([QuestionOption::new("a")]);
    assert!(seam.ask(AskRequest::new([one])).await.is_ok());
    let nine = Question::new("nine", "Many?")
        .with_options((0..9).map(|i| QuestionOption::new(format!("o{i}"))));
    let result = seam.ask(AskRequest::new([nine])).await;
    assert_eq!(code(&result), "BAD_QUESTIONS");
    assert!(result.unwrap_err().to_string().contains("\"nine\""));
    let empty = Question::new("empty", "None?").with_options([]);
    assert!(seam.ask(AskRequest::new([empty])).await.is_ok());
}

#[tokio::test]
async fn x5_repeated_id_is_bad_questions() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let result = seam.ask(AskRequest::new([q_scope(), q_scope()])).await;
    assert_eq!(code(&result), "BAD_QUESTIONS");
    assert!(result.unwrap_err().to_string().contains("\"scope\""));
    assert_eq!(ui.calls(), 0);
}

#[tokio::test]
async fn x6_header_truncation() {
    let seam = bare_seam();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&seam, "ui");
    let questions = vec![
        Question::new("a", "A?").with_header("Deployment target"),
        Question::new("b", "B?").with_header("Überprüfungsläufe"),
        Question::new("c", "C?").with_header("Short"),
        Question::new("d", "D?").with_header("exactly12chr"),
    ];
    seam.ask(AskRequest::new(questions.clone())).await.unwrap();
    let seen: Vec<_> = ui
        .last()
        .questions
        .into_iter()
        .map(|q| q.header.unwrap())
        .collect();
    // The multi-byte header keeps its first 12 characters, cut on a character boundary.
    assert_eq!(
        seen,
        ["Deployment t", "Überprüfungs", "Short", "exactly12chr"]
    );
    // The caller's questions are untouched.
    assert_eq!(questions[0].header.as_deref(), Some("Deployment target"));
}

fn config(json: &str) -> Result<UserQuestionsConfig, String> {
    let config: UserQuestionsConfig = serde_json::from_str(json).map_err(|e| e.to_string())?;
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

#[tokio::test]
async fn x7_limits_config() {
    assert!(config(r#"{"limits":{"minOptions":3,"maxOptions":2}}"#).is_err());
    assert!(config(r#"{"limits":{"maxQuestions":2}}"#).is_err());
    assert!(config(r#"{"eventBuffer":0}"#).is_err());
    assert!(config(r#"{"limits":{"unknown":1}}"#).is_err());
    let err = UserQuestions::new(
        UserQuestionsConfig {
            event_buffer: 0,
            ..UserQuestionsConfig::default()
        },
        user_questions::HostBindings::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("eventBuffer"));

    let custom = config(r#"{"limits":{"maxQuestions":2,"recommendedMaxQuestions":2}}"#).unwrap();
    let seam = UserQuestions::new(custom, user_questions::HostBindings::default()).unwrap();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&seam, "ui");
    let result = seam.ask(AskRequest::new(numbered(3))).await;
    assert_eq!(code(&result), "BAD_QUESTIONS");
    assert!(seam.ask(AskRequest::new(numbered(2))).await.is_ok());
}

#[test]
fn config_default_equals_empty_object() {
    assert_eq!(config("{}").unwrap(), UserQuestionsConfig::default());
    assert_eq!(UserQuestionsConfig::default().event_buffer, 256);
    assert_eq!(QuestionLimits::default().custom_max_bytes, 16_384);
}

#[test]
fn error_codes_are_stable() {
    let codes: Vec<&str> = ErrorCode::KNOWN.iter().map(ErrorCode::as_str).collect();
    assert_eq!(
        codes,
        [
            "ASK_ABORTED",
            "EMPTY_QUESTIONS",
            "CALLER_NOT_LIVE",
            "DELEGATED_CALLER",
            "BAD_INTENT",
            "BAD_QUESTIONS",
            "NO_PROVIDER",
            "BAD_TIMEOUT",
            "DUPLICATE_WAIT",
            "ASK_TIMED_OUT",
            "ASK_CANCELLED",
            "REPLY_QUEUED",
            "BAD_ANSWER",
            "INVALID_ARGS",
            "TOOL_OUTCOME_UNKNOWN",
            "ABORTED",
        ]
    );
    for known in ErrorCode::KNOWN {
        assert_eq!(ErrorCode::parse(known.as_str()), known);
    }
    assert_eq!(
        ErrorCode::parse("MY_CODE"),
        ErrorCode::Other("MY_CODE".into())
    );
    assert_eq!(ErrorCode::InvalidArgs.error_name(), "ToolArgsError");
    assert_eq!(
        ErrorCode::ToolOutcomeUnknown.error_name(),
        "ToolOutcomeUnknownError"
    );
    assert_eq!(ErrorCode::Aborted.error_name(), "AbortError");
    assert_eq!(ErrorCode::NoProvider.error_name(), "UserQuestionError");
}

#[test]
fn error_codes_serialise_as_their_string() {
    for code in ErrorCode::KNOWN
        .into_iter()
        .chain([ErrorCode::Other("UI_GONE".into())])
    {
        let json = serde_json::to_string(&code).unwrap();
        assert_eq!(json, format!("\"{}\"", code.as_str()));
        assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
    }
    assert!(serde_json::from_str::<ErrorCode>("42").is_err());
}

#[tokio::test]
async fn answerer_codes_outside_the_taxonomy_pass_through() {
    let seam = bare_seam();
    let _g = TestAnswerer::new(Behaviour::Typed(|| {
        UserQuestionError::new(ErrorCode::Other("UI_GONE".into()), "The card was closed.")
    }))
    .register(&seam, "ui");
    let result = seam.ask(AskRequest::new([q_confirm()])).await;
    assert_eq!(code(&result), "UI_GONE");
}

#[test]
fn empty_registration_name_panics() {
    let seam = bare_seam();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&seam, "");
    }));
    assert!(caught.is_err());
}
