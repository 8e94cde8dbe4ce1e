//! `answer_violations`: every problem of a batch, in rule order, the first being what
//! `validate_answers` reports (SPEC §9.2).

use user_questions::{
    AnswerBatch, AnswerItem, AnswerViolation, Question, QuestionLimits, QuestionOption,
    answer_violations, validate_answers,
};

fn questions() -> Vec<Question> {
    vec![
        Question::new("scope", "Scope?").with_options([
            QuestionOption::new("Everything"),
            QuestionOption::new("Tool only"),
        ]),
        Question::new("targets", "Targets?")
            .with_options([QuestionOption::new("linux"), QuestionOption::new("macos")])
            .with_multi_select(true),
        Question::new("notes", "Notes?"),
    ]
}

#[test]
fn every_violation_of_a_batch_is_listed_in_rule_order() {
    let batch = AnswerBatch::new([
        AnswerItem::selected("scope", ["Nothing", "Everything"]),
        AnswerItem::selected("ghost", ["x"]),
        AnswerItem::selected("targets", ["linux", "bsd"]),
    ]);
    let limits = QuestionLimits::default();
    let violations = answer_violations(&questions(), &batch, &limits);
    assert_eq!(
        violations,
        [
            AnswerViolation::UnknownId { id: "ghost".into() },
            AnswerViolation::Missing { id: "notes".into() },
            AnswerViolation::UnknownLabel {
                label: "Nothing".into(),
                id: "scope".into()
            },
            AnswerViolation::UnknownLabel {
                label: "bsd".into(),
                id: "targets".into()
            },
            AnswerViolation::SeveralLabels {
                id: "scope".into(),
                count: 2
            },
        ]
    );
    let error = validate_answers(&questions(), &batch, &limits, None).unwrap_err();
    assert!(
        error.message().contains(&violations[0].to_string()),
        "{error:?}"
    );
}

#[test]
fn a_fitting_batch_has_no_violations() {
    let batch = AnswerBatch::new([
        AnswerItem::selected("scope", ["Everything"]),
        AnswerItem::selected("targets", ["linux", "macos"]),
        AnswerItem::custom("notes", "ship it"),
    ]);
    assert!(answer_violations(&questions(), &batch, &QuestionLimits::default()).is_empty());
}
