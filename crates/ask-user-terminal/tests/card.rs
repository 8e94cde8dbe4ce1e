//! The card state machine: keys in, choices and answer batches out, validated at input.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ask_user_terminal::{CardAction, CardState, Key};
use proptest::prelude::*;
use user_questions::{Question, QuestionLimits, QuestionOption, validate_answers};

fn scope() -> Question {
    Question::new("scope", "Which scope?")
        .with_header("Scope")
        .with_options([
            QuestionOption::new("Tool only (Recommended)").with_description("Only the tool."),
            QuestionOption::new("Everything"),
        ])
}

fn targets() -> Question {
    Question::new("targets", "Which targets?")
        .with_multi_select(true)
        .with_options([
            QuestionOption::new("linux"),
            QuestionOption::new("macos"),
            QuestionOption::new("windows"),
        ])
}

fn notes() -> Question {
    Question::new("notes", "Anything else?")
}

fn limits(custom_max_bytes: usize) -> QuestionLimits {
    QuestionLimits {
        custom_max_bytes,
        ..QuestionLimits::default()
    }
}

/// Keys written as words: `down enter 2 space 'typed text' esc ctrl-c …`.
fn keys(script: &str) -> Vec<Key> {
    let mut out = Vec::new();
    let mut rest = script.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('\'') {
            let end = quoted.find('\'').expect("unterminated quote");
            out.extend(quoted[..end].chars().map(Key::Char));
            rest = quoted[end + 1..].trim_start();
            continue;
        }
        let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        rest = tail.trim_start();
        out.push(match word {
            "up" => Key::Up,
            "down" => Key::Down,
            "left" => Key::Left,
            "right" => Key::Right,
            "home" => Key::Home,
            "end" => Key::End,
            "tab" => Key::Tab,
            "backtab" => Key::BackTab,
            "enter" => Key::Enter,
            "esc" => Key::Esc,
            "space" => Key::Char(' '),
            "bs" => Key::Backspace,
            "del" => Key::Delete,
            "ctrl-c" => Key::Ctrl('c'),
            word if word.starts_with("paste:") => {
                Key::Paste(word["paste:".len()..].replace('_', " "))
            }
            word if word.chars().count() == 1 => Key::Char(word.chars().next().unwrap()),
            other => panic!("unknown key word {other:?}"),
        });
    }
    out
}

/// Runs `script` on a fresh card; returns the card and the last action that was not `None`.
fn run(questions: Vec<Question>, limits: QuestionLimits, script: &str) -> (CardState, CardAction) {
    let mut card = CardState::new(questions, limits);
    let mut last = CardAction::None;
    for key in keys(script) {
        let action = card.handle(key);
        if action != CardAction::None {
            last = action;
        }
    }
    (card, last)
}

/// Expects the keys to submit exactly this batch (compact JSON).
#[track_caller]
fn check(questions: &[Question], script: &str, expected: &str) {
    let (card, action) = run(questions.to_vec(), QuestionLimits::default(), script);
    let CardAction::Submit(batch) = action else {
        panic!(
            "{script:?} did not submit: {action:?}, notice {:?}",
            card.notice()
        );
    };
    assert_eq!(
        serde_json::to_string(&batch).unwrap(),
        expected,
        "{script:?}"
    );
}

/// Expects the keys not to submit, leaving a notice that contains `notice`.
#[track_caller]
fn check_refused(questions: &[Question], limits: QuestionLimits, script: &str, notice: &str) {
    let (card, action) = run(questions.to_vec(), limits, script);
    assert!(
        !matches!(action, CardAction::Submit(_)),
        "{script:?} submitted: {action:?}"
    );
    let shown = card.notice().unwrap_or_default();
    assert!(shown.contains(notice), "{script:?}: notice {shown:?}");
}

#[test]
fn single_select_arrows_numbers_and_enter() {
    let q = [scope()];
    check(
        &q,
        "enter",
        r#"{"answers":[{"id":"scope","selected":["Tool only (Recommended)"]}]}"#,
    );
    check(
        &q,
        "down enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
    );
    check(
        &q,
        "down down up enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
    );
    check(
        &q,
        "j enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
    );
    check(
        &q,
        "2 enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
    );
    // A number chooses; a second number replaces the first choice.
    check(
        &q,
        "2 1 enter",
        r#"{"answers":[{"id":"scope","selected":["Tool only (Recommended)"]}]}"#,
    );
    check(
        &q,
        "down space enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
    );
}

#[test]
fn multi_select_toggles() {
    let q = [targets()];
    check(
        &q,
        "space down space enter",
        r#"{"answers":[{"id":"targets","selected":["linux","macos"]}]}"#,
    );
    check(
        &q,
        "1 2 1 enter",
        r#"{"answers":[{"id":"targets","selected":["macos"]}]}"#,
    );
    // Labels come back in option order, whatever the order they were toggled in.
    check(
        &q,
        "3 1 enter",
        r#"{"answers":[{"id":"targets","selected":["linux","windows"]}]}"#,
    );
    check_refused(&q, QuestionLimits::default(), "enter", "Space");
    check_refused(&q, QuestionLimits::default(), "1 1 enter", "skip");
}

#[test]
fn free_text_overrides_single_select_and_supplements_multi_select() {
    check(
        &[scope()],
        "1 3 'bun' enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"bun"}]}"#,
    );
    check(
        &[scope()],
        "end enter 'bun' enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"bun"}]}"#,
    );
    check(
        &[targets()],
        "1 4 'arm64 too' enter",
        r#"{"answers":[{"id":"targets","selected":["linux"],"custom":"arm64 too"}]}"#,
    );
    // Choosing an option after free text replaces the text on a single-select question.
    check(
        &[scope(), targets()],
        "3 'bun' enter backtab 2 enter 1 enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]},{"id":"targets","selected":["linux"]}]}"#,
    );
}

#[test]
fn the_text_input_edits() {
    let q = [scope()];
    check(
        &q,
        "3 'helo' left 'l' end '!' enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"hello!"}]}"#,
    );
    check(
        &q,
        "3 'xhi' home del end bs 'i' enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"hi"}]}"#,
    );
    check(
        &q,
        "3 paste:a_b enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"a b"}]}"#,
    );
    check(
        &q,
        "3 'né' bs bs 'o' enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"o"}]}"#,
    );
    // Keys that mean something outside the input are plain text inside it.
    check(
        &q,
        "3 's t 1' enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"s t 1"}]}"#,
    );
    // Esc discards the edit; the earlier text stays.
    check(
        &[scope(), targets()],
        "3 'bun' enter backtab 3 'deno' esc tab 1 enter",
        r#"{"answers":[{"id":"scope","selected":[],"custom":"bun"},{"id":"targets","selected":["linux"]}]}"#,
    );
}

#[test]
fn a_question_without_options_takes_text_at_once() {
    let q = [notes()];
    check(
        &q,
        "'ship it' enter",
        r#"{"answers":[{"id":"notes","selected":[],"custom":"ship it"}]}"#,
    );
    check(&q, "esc s", r#"{"answers":[{"id":"notes","selected":[]}]}"#);
    check_refused(&q, QuestionLimits::default(), "enter", "skip");
}

#[test]
fn skip_answers_with_an_empty_selection() {
    check(
        &[scope()],
        "s",
        r#"{"answers":[{"id":"scope","selected":[]}]}"#,
    );
    // Skipping after choosing drops the choice and any text.
    check(
        &[targets()],
        "1 2 s",
        r#"{"answers":[{"id":"targets","selected":[]}]}"#,
    );
    check(
        &[targets(), scope()],
        "1 4 'x' enter backtab s enter",
        r#"{"answers":[{"id":"targets","selected":[]},{"id":"scope","selected":["Tool only (Recommended)"]}]}"#,
    );
}

#[test]
fn a_batch_submits_once_every_question_is_answered() {
    let q = [scope(), targets()];
    check(
        &q,
        "enter space enter",
        r#"{"answers":[{"id":"scope","selected":["Tool only (Recommended)"]},{"id":"targets","selected":["linux"]}]}"#,
    );
    // Questions can be answered out of order; Enter moves to the next unanswered one.
    check(
        &q,
        "tab space backtab 2 enter",
        r#"{"answers":[{"id":"scope","selected":["Everything"]},{"id":"targets","selected":["linux"]}]}"#,
    );
    check(
        &q,
        "tab 3 enter enter",
        r#"{"answers":[{"id":"scope","selected":["Tool only (Recommended)"]},{"id":"targets","selected":["windows"]}]}"#,
    );
    // The second question is still open: no submission.
    let (card, action) = run(q.to_vec(), QuestionLimits::default(), "enter");
    assert_eq!(action, CardAction::None);
    assert_eq!(card.current(), 1);
    assert!(!card.is_complete());
    // Moving past the ends stays on the first and last question.
    let (card, _) = run(
        q.to_vec(),
        QuestionLimits::default(),
        "backtab tab tab right",
    );
    assert_eq!(card.current(), 1);
}

#[test]
fn returning_to_a_question_highlights_its_choice() {
    let (card, _) = run(
        vec![scope(), targets()],
        QuestionLimits::default(),
        "2 tab backtab",
    );
    assert_eq!(card.cursor(), 1);
    let (card, _) = run(
        vec![scope(), targets()],
        QuestionLimits::default(),
        "3 'x' enter backtab",
    );
    assert_eq!(card.cursor(), card.other_row());
}

#[test]
fn x3_free_text_is_capped_at_input() {
    // Exactly at the cap is accepted (SPEC §9.2 rule 6 allows it).
    let (_, action) = run(vec![scope()], limits(8), "3 'abcdefgh' enter");
    let CardAction::Submit(batch) = action else {
        panic!("not submitted: {action:?}")
    };
    assert_eq!(batch.answers[0].custom.as_deref(), Some("abcdefgh"));
    // One byte more is refused as it is typed, and the text keeps what fitted.
    let (card, _) = run(vec![scope()], limits(8), "3 'abcdefghi'");
    assert_eq!(card.editor().unwrap().text(), "abcdefgh");
    check_refused(&[scope()], limits(8), "3 'abcdefghi'", "8 bytes");
    // The cap counts UTF-8 bytes, not characters.
    let (card, _) = run(vec![scope()], limits(4), "3 'ééé'");
    assert_eq!(card.editor().unwrap().text(), "éé");
    // A paste that does not fit is refused whole.
    let (card, _) = run(vec![scope()], limits(4), "3 'ab' paste:cde");
    assert_eq!(card.editor().unwrap().text(), "ab");
    assert!(card.notice().unwrap().contains("4 bytes"));
}

#[test]
fn keys_the_host_acts_on() {
    for (script, expected) in [
        ("esc", CardAction::Close),
        ("t", CardAction::TakeTime),
        ("ctrl-c", CardAction::Interrupt),
        ("3 'ab' ctrl-c", CardAction::Interrupt),
    ] {
        assert_eq!(
            run(vec![scope()], QuestionLimits::default(), script).1,
            expected,
            "{script}"
        );
    }
    // Esc inside the input only leaves the input.
    assert_eq!(
        run(vec![scope()], QuestionLimits::default(), "3 esc").1,
        CardAction::None
    );
    check_refused(&[scope()], QuestionLimits::default(), "4", "no choice 4");
}

fn any_key() -> impl Strategy<Value = Key> {
    prop_oneof![
        Just(Key::Up),
        Just(Key::Down),
        Just(Key::Left),
        Just(Key::Right),
        Just(Key::Tab),
        Just(Key::BackTab),
        Just(Key::Enter),
        Just(Key::Esc),
        Just(Key::Backspace),
        Just(Key::Delete),
        Just(Key::Home),
        Just(Key::End),
        prop::char::range('0', '9').prop_map(Key::Char),
        Just(Key::Char(' ')),
        Just(Key::Char('s')),
        Just(Key::Char('é')),
        "[a-z ]{0,6}".prop_map(Key::Paste),
    ]
}

proptest! {
    /// Whatever the person presses, a submitted batch is one the seam accepts (SPEC §9.2).
    #[test]
    fn x3_every_submission_passes_the_seams_validation(keys in prop::collection::vec(any_key(), 0..60)) {
        let questions = vec![scope(), targets(), notes()];
        let limits = limits(5);
        let mut card = CardState::new(questions.clone(), limits.clone());
        for key in keys {
            if let CardAction::Submit(batch) = card.handle(key) {
                prop_assert!(validate_answers(&questions, &batch, &limits, None).is_ok(), "{batch:?}");
            }
            if let Some(editor) = card.editor() {
                prop_assert!(editor.text().len() <= 5);
            }
        }
    }
}
