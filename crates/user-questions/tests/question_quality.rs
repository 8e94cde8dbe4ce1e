//! Questions the tools used to accept that a person cannot answer well (SPEC §9.3, extended):
//! each is a clear, fixable `BAD_QUESTIONS`, checked after the limits, in the same validator the
//! seam and the timed tool run.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use user_questions::{
    MAX_ID_BYTES, MAX_LABEL_BYTES, MAX_QUESTION_BYTES, Question, QuestionLimits, QuestionOption,
    check_question_limits,
};

#[track_caller]
fn refused(question: Question, says: &[&str]) {
    let error = check_question_limits(&[question], &QuestionLimits::default()).unwrap_err();
    assert_eq!(error.code(), "BAD_QUESTIONS");
    for part in says {
        assert!(
            error.message().contains(part),
            "{:?} lacks {part:?}",
            error.message()
        );
    }
}

fn with_options(labels: &[&str]) -> Question {
    Question::new("db", "Which database?")
        .with_options(labels.iter().map(|&l| QuestionOption::new(l)))
}

#[test]
fn empty_or_oversized_ids_and_ids_with_control_characters() {
    refused(Question::new("", "Which?"), &["id is empty"]);
    refused(Question::new("  ", "Which?"), &["id is empty"]);
    refused(
        Question::new("x".repeat(MAX_ID_BYTES + 1), "Which?"),
        &["at most 128", "short id"],
    );
    refused(Question::new("a\u{0}b", "Which?"), &["control characters"]);
    check_question_limits(
        &[Question::new("x".repeat(MAX_ID_BYTES), "Which?")],
        &QuestionLimits::default(),
    )
    .unwrap();
}

#[test]
fn empty_or_oversized_question_text() {
    refused(Question::new("q", ""), &["question text is empty"]);
    refused(
        Question::new("q", "?".repeat(MAX_QUESTION_BYTES + 1)),
        &["at most 4096"],
    );
}

#[test]
fn empty_duplicate_or_oversized_labels() {
    refused(
        with_options(&["PostgreSQL", ""]),
        &["option 2 has an empty label"],
    );
    refused(
        with_options(&["SQLite", "SQLite"]),
        &["two options are labelled \"SQLite\"", "unique"],
    );
    let long = "l".repeat(MAX_LABEL_BYTES + 1);
    refused(
        with_options(&["a", &long]),
        &["option 2", "at most 256", "description"],
    );
    check_question_limits(
        &[with_options(&["SQLite", "PostgreSQL"])],
        &QuestionLimits::default(),
    )
    .unwrap();
}

#[test]
fn the_structural_limits_still_come_first() {
    let error = check_question_limits(
        &[Question::new("", "a"), Question::new("", "b")],
        &QuestionLimits::default(),
    )
    .unwrap_err();
    assert!(
        error.message().contains("appears more than once"),
        "{}",
        error.message()
    );
}
