//! The one sanitiser: a model's or a log's text never drives the terminal. The hostile sample is
//! the one that set a terminal's title and cleared its screen through `ask-user pending`.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use user_questions::sanitize::{json_visible, visible, visible_lines};

const HOSTILE: &str = "Deploy?\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m\u{7f}\u{202e}gnp.exe";

/// Whether `text` holds anything a terminal would interpret.
fn has_hidden(text: &str) -> bool {
    text.chars().any(|c| {
        c.is_control() && c != '\n'
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

#[test]
fn escape_sequences_are_shown_not_interpreted() {
    let shown = visible(HOSTILE);
    assert_eq!(
        shown,
        "Deploy?\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{9b}31m\\u{7f}\\u{202e}gnp.exe"
    );
    assert!(!has_hidden(&shown));
    assert_eq!(visible("a\nb\tc"), "a\\u{a}b\\u{9}c");
    assert_eq!(visible_lines("a\nb\u{1b}c"), "a\nb\\u{1b}c");
    // Plain text, accents and emoji included, is borrowed unchanged.
    assert!(matches!(
        visible("Préférez-vous 🦀 ?"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn json_keeps_its_value_and_loses_its_raw_controls() {
    let value = serde_json::json!({"question": HOSTILE, "ok": "plain"});
    let compact = value.to_string();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    for json in [compact, pretty] {
        let shown = json_visible(&json);
        assert!(!has_hidden(&shown), "{shown}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            value,
            "the same JSON value"
        );
    }
}
