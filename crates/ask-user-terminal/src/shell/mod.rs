//! The shell as an answering surface, without a card: the tables of open and continued questions
//! a person reads (`ask-user pending`), and the answer they type back (`--pick ID=LABEL`,
//! `--custom ID=TEXT`, `--skip ID`, or a JSON file), checked against the questions with every
//! problem named and what would fit. [`answer_hint`](crate::listing::answer_hint) writes the
//! command this grammar reads. Every text from a model or a log goes through the sanitiser.

use std::fmt::{self, Write as _};

mod answer;
pub use answer::{AnswerTo, RefusalKind, ShellAnswer, ShellAnswered, ShellRefusal, reply_text};

use pending_answer::{DeskQuestion, DeskSession, DeskState};
use user_questions::{AnswerBatch, AnswerItem, AnswerViolation, CallId, Question, QuestionLimits};

use crate::listing::{format_age, question_cell, shell_word, table};
use crate::sanitize::{json_visible, visible};

/// The age of a question asked at `asked_at_ms`, at `now_ms`; `-` when unknown.
fn age(asked_at_ms: Option<i64>, now_ms: i64) -> String {
    asked_at_ms.map_or_else(|| "-".to_owned(), |t| format_age(now_ms.saturating_sub(t)))
}

/// The open and continued questions of one log (`None`: nothing read), at `now_ms`: a table of
/// call id, state, age and questions (each question's labels under it, as `--pick` takes them),
/// then `N active, M settled` (and whether a writer has the log open).
#[must_use]
pub fn log_table(session: Option<&DeskSession>, now_ms: i64) -> String {
    let rows: Vec<[String; 4]> = (session.iter().flat_map(|s| &s.questions))
        .map(|q| {
            let state = match (q.state, q.interrupted) {
                (DeskState::Open, true) => "open, interrupted",
                (state, _) => state.as_str(),
            };
            let cells: Vec<String> = q.questions.iter().map(question_cell).collect();
            let call = visible(q.call_id.as_str()).into_owned();
            [
                call,
                state.to_owned(),
                age(q.asked_at_ms, now_ms),
                cells.join("\n"),
            ]
        })
        .collect();
    let mut out = table(["CALL ID", "STATE", "AGE", "QUESTIONS"], &rows);
    let writing = session.is_some_and(|s| s.writing);
    let _ = writeln!(
        out,
        "{} active, {} settled{}",
        rows.len(),
        session.and_then(|s| s.settled).unwrap_or(0),
        if writing {
            " (a writer has the log open)"
        } else {
            ""
        }
    );
    out
}

/// A question as a listing of several sessions shows it: with who asks in its session and where
/// that runs, when the desk knows ([`DeskSession::agent`], [`DeskSession::folder`]).
#[derive(Clone, Copy, Debug)]
pub struct Listed<'a> {
    /// The question.
    pub question: &'a DeskQuestion,
    /// Who asks: an MCP client's name and version.
    pub agent: Option<&'a str>,
    /// Where its session runs.
    pub folder: Option<&'a str>,
}

impl<'a> Listed<'a> {
    /// Every question of `sessions`, in their order.
    pub fn all(sessions: &'a [DeskSession]) -> Vec<Self> {
        sessions
            .iter()
            .flat_map(|session| {
                session.questions.iter().map(|question| Self {
                    question,
                    agent: session.agent.as_deref(),
                    folder: session.folder.as_deref(),
                })
            })
            .collect()
    }
}

/// The open and continued questions of several sessions (a database's, a state directory's) as
/// a table, with an AGE column when `ages`, then `N open or continued` when there are any. The
/// SESSION cell names the session, then its agent and its folder when known, a line each.
#[must_use]
pub fn sessions_table(listed: &[Listed<'_>], ages: bool, now_ms: i64) -> String {
    let rows: Vec<[String; 5]> = listed
        .iter()
        .map(|listed| {
            let q = listed.question;
            let state = match (q.state, q.answered, q.interrupted) {
                (state, true, _) => format!("{}, answered (admission waits)", state.as_str()),
                (DeskState::Open, false, true) => "open, interrupted".to_owned(),
                (state, false, _) => state.as_str().to_owned(),
            };
            let cells: Vec<String> = q.questions.iter().map(question_cell).collect();
            let session: Vec<String> = [Some(q.session.as_str()), listed.agent, listed.folder]
                .into_iter()
                .flatten()
                .map(|line| visible(line).into_owned())
                .collect();
            [
                session.join("\n"),
                visible(q.call_id.as_str()).into_owned(),
                state,
                age(q.asked_at_ms, now_ms),
                cells.join("\n"),
            ]
        })
        .collect();
    let mut out = if ages {
        table(["SESSION", "CALL ID", "STATE", "AGE", "QUESTIONS"], &rows)
    } else {
        let rows: Vec<[String; 4]> = (rows.into_iter())
            .map(|[session, call, state, _, cells]| [session, call, state, cells])
            .collect();
        table(["SESSION", "CALL ID", "STATE", "QUESTIONS"], &rows)
    };
    // An empty table says so itself, in the same words as a log's.
    if !listed.is_empty() {
        let _ = writeln!(out, "{} open or continued", listed.len());
    }
    out
}

/// The questions of several sessions as one JSON line, safe for a terminal:
/// `{"questions":[{session, agent, folder, callId, state, answered, askedAtMs, questions}]}`
/// (`agent` and `folder` `null` when unknown).
#[must_use]
pub fn sessions_json(listed: &[Listed<'_>]) -> String {
    let rows: Vec<serde_json::Value> = listed
        .iter()
        .map(|listed| {
            let q = listed.question;
            serde_json::json!({
                "session": q.session,
                "agent": listed.agent,
                "folder": listed.folder,
                "callId": q.call_id,
                "state": q.state.as_str(),
                "answered": q.answered,
                "askedAtMs": q.asked_at_ms,
                "questions": q.questions,
            })
        })
        .collect();
    json_visible(&serde_json::json!({ "questions": rows }).to_string()).into_owned()
}

/// An answer a person typed that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypedAnswerError {
    /// The flags are wrong (`--pick` without `=`, `--custom` twice for a question, a question
    /// both skipped and answered).
    Usage(String),
    /// The answers file is not one (`{"answers":[…]}` or `[…]` of `{id, selected, custom?}`).
    Input(String),
}

impl fmt::Display for TypedAnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(message) | Self::Input(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for TypedAnswerError {}

/// `ID=VALUE` of `--flag`.
fn split<'a>(pair: &'a str, flag: &str) -> Result<(&'a str, &'a str), TypedAnswerError> {
    (pair.split_once('='))
        .ok_or_else(|| TypedAnswerError::Usage(format!("--{flag} needs ID=VALUE, got {pair:?}")))
}

/// The batch of `--pick ID=LABEL`, `--custom ID=TEXT` and `--skip ID`: one item per question id,
/// in the order the ids are first given.
///
/// # Errors
///
/// [`TypedAnswerError::Usage`] naming the flag that is wrong.
pub fn batch_from_flags(
    picks: &[String],
    customs: &[String],
    skips: &[String],
) -> Result<AnswerBatch, TypedAnswerError> {
    let usage = TypedAnswerError::Usage;
    let mut items: Vec<AnswerItem> = Vec::new();
    let mut item = |id: &str| -> usize {
        items.iter().position(|i| i.id == id).unwrap_or_else(|| {
            items.push(AnswerItem::skipped(id));
            items.len() - 1
        })
    };
    let mut order = Vec::new();
    for pick in picks {
        let (id, label) = split(pick, "pick")?;
        order.push((item(id), Some(label.to_owned()), None));
    }
    for custom in customs {
        let (id, text) = split(custom, "custom")?;
        order.push((item(id), None, Some(text.to_owned())));
    }
    let skipped: Vec<usize> = skips.iter().map(|id| item(id)).collect();
    for (at, label, text) in order {
        let answer = &mut items[at];
        answer.selected.extend(label);
        if let Some(text) = text
            && answer.custom.replace(text).is_some()
        {
            let id = &answer.id;
            return Err(usage(format!(
                "--custom is given twice for question {id:?}"
            )));
        }
    }
    for at in skipped {
        let answer = &items[at];
        if !answer.selected.is_empty() || answer.custom.is_some() {
            let id = &answer.id;
            return Err(usage(format!(
                "question {id:?} is both skipped and answered"
            )));
        }
    }
    Ok(AnswerBatch { answers: items })
}

/// The batch of an answers file: `{"answers":[…]}` or a bare `[…]`.
///
/// # Errors
///
/// [`TypedAnswerError::Input`] saying what the file needs.
pub fn batch_from_json(text: &str) -> Result<AnswerBatch, TypedAnswerError> {
    let input = TypedAnswerError::Input;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| input(format!("the answers are not JSON: {e}")))?;
    let items = if value.is_array() {
        value
    } else {
        (value.get("answers").cloned()).ok_or_else(|| {
            input("the answers file needs {\"answers\":[…]} or a list of answers".to_owned())
        })?
    };
    let answers: Vec<AnswerItem> = serde_json::from_value(items).map_err(|e| {
        input(format!(
            "each answer needs \"id\" and \"selected\" (and optional \"custom\"): {e}"
        ))
    })?;
    Ok(AnswerBatch { answers })
}

/// The items of `batch` in the order of the stored questions, then those of any other ids in
/// the order given (the seam's validator names those). Questions nobody mentioned stay out, so
/// the validator reports them as unanswered.
#[must_use]
pub fn in_question_order(batch: &AnswerBatch, questions: &[Question]) -> AnswerBatch {
    let mut answers = batch.answers.clone();
    answers.sort_by_key(|item| {
        (questions.iter().position(|q| q.id == item.id)).unwrap_or(questions.len())
    });
    AnswerBatch { answers }
}

/// Every problem of `batch` as an answer to `questions` of `call_id` at once (the seam reports
/// only the first), each with what would fit: the valid labels of a question whose label is
/// wrong, the flag that skips an unanswered one, the ids there are. `None` when it fits.
#[must_use]
pub fn answer_problems(
    call_id: &CallId,
    questions: &[Question],
    batch: &AnswerBatch,
) -> Option<String> {
    let violations =
        user_questions::answer_violations(questions, batch, &QuestionLimits::default());
    if violations.is_empty() {
        return None;
    }
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let options_of = |id: &str| -> String {
        let labels: Vec<String> = (questions.iter().find(|q| q.id == id))
            .map(|q| q.options().iter().map(|o| quoted(&o.label)).collect())
            .unwrap_or_default();
        if labels.is_empty() {
            "it has no options: answer it with --custom".to_owned()
        } else {
            format!("its options: {}", labels.join(", "))
        }
    };
    let problems: Vec<String> = violations
        .iter()
        .map(|violation| match violation {
            AnswerViolation::UnknownLabel { id, .. } => format!("{violation} ({})", options_of(id)),
            AnswerViolation::Missing { id } => {
                format!("{violation} (or skip it with --skip {})", shell_word(id))
            }
            AnswerViolation::UnknownId { .. } => {
                let ids: Vec<String> = questions.iter().map(|q| quoted(&q.id)).collect();
                format!("{violation} (the questions are {})", ids.join(", "))
            }
            other => other.to_string(),
        })
        .collect();
    Some(format!(
        "the answer does not fit call {call_id} ({} problem{}): {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("; ")
    ))
}

/// The command a printed hint starts with, runnable as printed: `name` when that name on `PATH`
/// is this binary, else this binary's path (after `cargo run`, for example), shell-quoted.
pub fn program_word(name: &str) -> String {
    let Ok(exe) = std::env::current_exe() else {
        return name.to_owned();
    };
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    let same = |a: &std::path::Path, b: &std::path::Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    match on_path {
        Some(found) if same(&found, &exe) => name.to_owned(),
        _ => shell_word(&exe.display().to_string()),
    }
}

/// A command-line parser's rendered error (clap's) as one line: its first paragraph without the
/// `error: ` prefix, lines joined, any "similar" tip, and where to read more (for example "see
/// `ask-user answer --help`", from the usage line).
#[must_use]
pub fn usage_line(rendered: &str) -> String {
    let first = rendered.split("\n\n").next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let line = first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let command = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(|usage| {
            usage
                .split_whitespace()
                // The command's words: up to its first argument (`<X>`, `[X]`, `--x`, `CALL_ID`).
                .take_while(|word| {
                    !word.starts_with(['<', '[', '-', '('])
                        && word.chars().any(|c| c.is_ascii_lowercase())
                })
                .collect::<Vec<_>>()
                .join(" ")
        });
    // clap's "did you mean": `tip: a similar subcommand exists: 'answer'`.
    let tips: Vec<&str> = rendered
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tip: "))
        .filter(|tip| tip.contains("similar"))
        .collect();
    let line = match tips.as_slice() {
        [] => line,
        tips => format!("{line}; {}", tips.join("; ")),
    };
    match command.filter(|c| !c.is_empty()) {
        Some(command) => format!("{line} (see `{command} --help`)"),
        None => line,
    }
}
