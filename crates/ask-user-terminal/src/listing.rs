//! Plain text for a terminal that is not a card: the table of open and continued questions
//! `ask-user pending` prints, ages, compact JSON wrapped under a label, model-facing text, and
//! the hints that say how to answer later, with words quoted for a shell. Every text from a model or a log goes through the
//! sanitiser first.

use std::borrow::Cow;
use std::fmt::Write as _;

use user_questions::{CallId, Question};

use crate::sanitize::{json_visible, visible};

/// Model-facing text for a terminal: JSON with its hidden characters as JSON escapes (the same
/// value), anything else (an `Error: …` text) with them shown as escapes.
pub fn model_text(text: &str) -> Cow<'_, str> {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
        json_visible(text)
    } else {
        visible(text)
    }
}

/// A word as a POSIX shell reads it back, for a hint a person may paste: as it is when it is
/// plain, else single-quoted (so a label or a path from a model runs nothing).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A question and, under it, its labels as `--pick ID=LABEL` takes them. Ids, questions and
/// labels come from a model through the log: never raw on a terminal.
pub fn question_cell(q: &Question) -> String {
    // A text of several lines (an agent's command and its folder) keeps its lines, each one
    // escaped on its own, under the first.
    let mut lines = (q.question.lines())
        .filter(|line| !line.trim().is_empty())
        .map(|line| visible(line).into_owned());
    let first = lines.next().unwrap_or_default();
    let mut cell = format!("{}: {first}", visible(&q.id));
    for line in lines {
        let _ = write!(cell, "\n  {line}");
    }
    let labels: Vec<String> = q
        .options()
        .iter()
        .map(|o| visible(&o.label).into_owned())
        .collect();
    if labels.is_empty() {
        cell.push_str("\n  (free text: --custom ID=TEXT)");
    } else {
        let kind = if q.is_multi_select() {
            "pick any"
        } else {
            "pick one"
        };
        let _ = write!(cell, "\n  {kind}: {}", labels.join(" | "));
    }
    cell
}

/// An age for a listing: `59s`, `1m 01s`, `1h 00m`, `1d 01h` (negative ages read as 0).
pub fn format_age(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {:02}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// A plain-text table under `header`, columns padded to their widest line; any cell may span
/// several lines (a row is as tall as its tallest cell). No rows: "no open or continued questions".
pub fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    if rows.is_empty() {
        return String::from("no open or continued questions\n");
    }
    let last = N.saturating_sub(1);
    let widths: Vec<usize> = (0..last)
        .map(|col| {
            (rows.iter().flat_map(|r| r[col].lines()))
                .chain([header[col]])
                .map(|line| line.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: [&str; N]| {
        let mut columns: Vec<std::str::Lines<'_>> = cells.iter().map(|c| c.lines()).collect();
        let height = cells.iter().map(|c| c.lines().count()).max().unwrap_or(0);
        for _ in 0..height.max(1) {
            let mut text = String::new();
            for (column, width) in columns.iter_mut().zip(&widths) {
                let _ = write!(text, "{:width$}  ", column.next().unwrap_or(""));
            }
            text.push_str(columns[last].next().unwrap_or(""));
            let _ = writeln!(out, "{}", text.trim_end());
        }
    };
    line(header);
    for row in rows {
        line(std::array::from_fn(|i| row[i].as_str()));
    }
    out
}

/// The width [`json_line`] wraps to.
pub const JSON_WIDTH: usize = 78;

/// How to answer a pending call `call_id` of the log `log` (shell-quoted) later, from a shell:
/// `pending: answer later with` the [`answer_hint`] command of `program`, the choices under it,
/// and the `pending` command that shows the questions.
#[must_use]
pub fn pending_hint(program: &str, log: &str, call_id: &CallId, questions: &[Question]) -> String {
    let command = format!("{program} answer {log} {}", shell_word(call_id.as_str()));
    let hint = answer_hint(&command, questions);
    let (command, choices) = hint.split_once('\n').unwrap_or((&hint, ""));
    format!(
        "pending: answer later with `{command}`\n{choices}\n  (`{program} pending {log}` shows the questions)"
    )
}

/// The command that answers `questions` late, as a hint a person pastes once they have chosen:
/// `COMMAND --pick ID=LABEL …` with a placeholder wherever the person must choose (a hint never
/// answers for them, not even with a recommended option), and under it each question's choices,
/// quoted as the shell takes them. Ids and labels come from a model: shell-quoted, then shown
/// through the sanitiser.
pub fn answer_hint(command: &str, questions: &[Question]) -> String {
    let word = |text: &str| visible(&shell_word(text)).into_owned();
    let mut hint = command.to_owned();
    let mut choices = String::new();
    for q in questions {
        let id = word(&q.id);
        let labels: Vec<String> = q.options().iter().map(|o| word(&o.label)).collect();
        if labels.is_empty() {
            let _ = write!(hint, " --custom {id}=TEXT");
            let _ = write!(choices, "\n  {id}: in your own words");
        } else {
            let (flag, kind) = if q.is_multi_select() {
                ("LABEL…", "pick any (repeat --pick)")
            } else {
                ("LABEL", "pick one")
            };
            let _ = write!(hint, " --pick {id}={flag}");
            let _ = write!(choices, "\n  {id}: {kind}: {}", labels.join(" | "));
        }
    }
    hint.push_str(&choices);
    hint.push_str("\n  (--custom ID=TEXT adds your own words, --skip ID leaves a question out)");
    hint
}

/// `label` then compact JSON, wrapped at JSON boundaries (after a `,` outside strings) so no line
/// passes [`JSON_WIDTH`] columns; a value too long for a line of its own is wrapped after the
/// spaces inside its strings, so a terminal never breaks a word. Continuation lines are indented
/// under the JSON's first character, and the lines without that indentation put back together
/// are the JSON, unchanged. Only a word longer than a line passes the width.
pub fn json_line(label: &str, json: &str) -> String {
    let indent = label.chars().count();
    let room = JSON_WIDTH.saturating_sub(indent).max(1);
    let mut out = String::from(label);
    let mut column = indent;
    // A piece goes on the line when it fits (or the line is empty), else on a new one; `own`
    // starts a new line anyway (a long value is not begun at the end of a line).
    let mut put = |piece: &str, own: bool, out: &mut String| {
        let len = piece.chars().count();
        if column > indent && (own || column + len > JSON_WIDTH) {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
            column = indent;
        }
        out.push_str(piece);
        column += len;
    };
    for piece in split_after(json, |c, in_string| c == ',' && !in_string) {
        if piece.chars().count() <= room {
            put(piece, false, &mut out);
        } else {
            let words = split_after(piece, |c, in_string| c == ' ' && in_string);
            for (at, word) in words.into_iter().enumerate() {
                put(word, at == 0, &mut out);
            }
        }
    }
    out
}

/// `json` cut after each character `at` picks (given whether it is inside a string), tracking
/// strings and escapes from the start of `json`; empty pieces are left out.
fn split_after(json: &str, at: impl Fn(char, bool) -> bool) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut in_string, mut escaped) = (0, false, false);
    for (i, c) in json.char_indices() {
        let inside = in_string;
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            _ => {}
        }
        if at(c, inside) {
            pieces.push(&json[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    pieces.push(&json[start..]);
    pieces.retain(|p| !p.is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    use super::{JSON_WIDTH, answer_hint, format_age, json_line, model_text, shell_word};
    use user_questions::{Question, QuestionOption};

    #[test]
    fn an_answer_hint_has_placeholders_and_lists_the_choices() {
        let questions = [
            Question::new("db", "Which database?").with_options([
                QuestionOption::new("PostgreSQL (Recommended)"),
                QuestionOption::new("SQLite"),
            ]),
            Question::new("checks", "Which checks?")
                .with_options([
                    QuestionOption::new("Unit tests"),
                    QuestionOption::new("Lint"),
                ])
                .with_multi_select(true),
            Question::new("why", "Why?"),
            Question::new("odd id", "?").with_options([QuestionOption::new("a\u{1b}[2Jb")]),
        ];
        assert_eq!(
            answer_hint("ask-user answer demo.jsonl call_demo_1", &questions),
            "ask-user answer demo.jsonl call_demo_1 --pick db=LABEL --pick checks=LABEL… \
             --custom why=TEXT --pick 'odd id'=LABEL\n  \
             db: pick one: 'PostgreSQL (Recommended)' | SQLite\n  \
             checks: pick any (repeat --pick): 'Unit tests' | Lint\n  \
             why: in your own words\n  \
             'odd id': pick one: 'a\\u{1b}[2Jb'\n  \
             (--custom ID=TEXT adds your own words, --skip ID leaves a question out)"
        );
    }

    #[test]
    fn shell_words_read_back_as_given() {
        assert_eq!(shell_word("call_demo_1"), "call_demo_1");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's $(rm -rf ~)"), r"'it'\''s $(rm -rf ~)'");
    }

    #[test]
    fn model_text_keeps_json_values_and_shows_hidden_characters() {
        // A raw bidi override is valid JSON: it becomes its JSON escape, the value unchanged.
        assert_eq!(model_text("{\"a\":\"x\u{202e}y\"}"), r#"{"a":"x\u202ey"}"#);
        assert_eq!(model_text("Error: x\u{1b}y"), r"Error: x\u{1b}y");
    }

    #[test]
    fn ages_read_naturally() {
        assert_eq!(format_age(-5), "0s");
        assert_eq!(format_age(59_999), "59s");
        assert_eq!(format_age(61_000), "1m 01s");
        assert_eq!(format_age(3_600_000), "1h 00m");
        assert_eq!(format_age(90_000_000), "1d 01h");
    }

    #[test]
    fn demo_json_is_wrapped_at_json_boundaries_under_its_label() {
        let json = r#"{"pending":true,"callId":"call_demo_1","message":"No answer yet, not skipped, not permission: do only independent work, a late answer arrives"}"#;
        let text = json_line("tool  → model ", json);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"tool  → model {"pending":true,"callId":"call_demo_1","#
        );
        assert!(lines[1].starts_with(r#"              "message":"No answer yet, not skipped"#));
        // The lines put back together are the JSON, unchanged.
        assert_eq!(unwrapped("tool  → model ", &text), json);
        // A comma inside a string is not a boundary.
        let tight = json_line(
            "x ",
            r#"{"a":"1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9"}"#,
        );
        assert_eq!(tight.lines().count(), 1);
        // A value longer than a line is wrapped after the spaces inside its string: every line
        // fits, and no word is cut.
        assert!(
            lines.iter().all(|l| l.chars().count() <= JSON_WIDTH),
            "{text}"
        );
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].ends_with(' ') && lines[2].starts_with("              "));
    }

    #[test]
    fn the_demo_pending_result_fits_a_line_everywhere() {
        let json = r#"{"pending":true,"callId":"call_demo_1","message":"No answer yet: not skipped, not permission. Do only independent work; any late answer arrives as a user message (answer_to_pending_question) with this callId and the questions."}"#;
        let label = "tool  → model ";
        let text = json_line(label, json);
        for line in text.lines() {
            assert!(line.chars().count() <= JSON_WIDTH, "{line:?}");
        }
        assert_eq!(unwrapped(label, &text), json);
    }

    /// `json_line`'s lines without the label and the indentation under it.
    fn unwrapped(label: &str, text: &str) -> String {
        let indent = " ".repeat(label.chars().count());
        text.lines()
            .map(|l| {
                l.strip_prefix(label)
                    .or_else(|| l.strip_prefix(&indent))
                    .unwrap()
            })
            .collect()
    }
}
