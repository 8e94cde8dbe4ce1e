//! The MCP form reader: any JSON as the `content` a client returns for an elicitation form, read
//! against a few question batches in both form styles. Nothing may panic; what it reads as answers
//! is checked by the seam like any answerer's.
#![no_main]

use ask_user_mcp::form::{FormStyle, read_form_for};
use libfuzzer_sys::fuzz_target;
use user_questions::{Question, QuestionLimits, QuestionOption};

fn batches() -> Vec<Vec<Question>> {
    let single = Question::new("db", "Which database?")
        .with_options([QuestionOption::new("PostgreSQL"), QuestionOption::new("SQLite")]);
    let multi = Question::new("checks", "Which checks?")
        .with_multi_select(true)
        .with_options([
            QuestionOption::new("Unit tests"),
            QuestionOption::new("Lint"),
            QuestionOption::new("Docs"),
        ]);
    let free = Question::new("why", "Why?");
    vec![
        vec![single.clone()],
        vec![multi.clone()],
        vec![free.clone()],
        vec![single, multi, free],
    ]
}

fuzz_target!(|data: &[u8]| {
    let Ok(content) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let limits = QuestionLimits::default();
    for questions in batches() {
        for style in [FormStyle::Titled, FormStyle::Legacy] {
            if let Ok(batch) = read_form_for(&questions, Some(&content), style) {
                // Whatever it reads must be something the seam can judge (accept or refuse).
                let _ = user_questions::validate_answers(&questions, &batch, &limits, None);
            }
        }
    }
});
