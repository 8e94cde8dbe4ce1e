//! What a person reads of an approval: the command, the change, the URL or the input, cut to
//! [`MAX_TEXT`](crate::MAX_TEXT) characters.

use serde_json::Value;

use crate::MAX_TEXT;

/// `text` cut to [`MAX_TEXT`] characters, with the count of what was left out.
pub(crate) fn cut(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_TEXT {
        return text.to_owned();
    }
    let kept: String = text.chars().take(MAX_TEXT).collect();
    format!("{kept}\n… ({} more characters)", total - MAX_TEXT)
}

fn string<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// Each line of `text` under `prefix` (`- `, `+ `).
fn lines(prefix: &str, text: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One edit as removed and added lines.
fn change(old: &str, new: &str) -> String {
    match (old.is_empty(), new.is_empty()) {
        (true, _) => lines("+ ", new),
        (false, true) => lines("- ", old),
        (false, false) => format!("{}\n{}", lines("- ", old), lines("+ ", new)),
    }
}

/// The question of an approval of `tool` with `input`, asked by `agent` in `cwd`.
pub(crate) fn approval(agent: &str, tool: &str, input: &Value, cwd: Option<&str>) -> String {
    let folder = cwd.map(|cwd| format!(" in {cwd}")).unwrap_or_default();
    let path = string(input, "file_path")
        .or_else(|| string(input, "notebook_path"))
        .or_else(|| string(input, "path"));
    let text = match (tool, string(input, "command"), path) {
        (_, Some(command), _) => {
            let why = string(input, "description")
                .map(|d| format!("\n\n({d})"))
                .unwrap_or_default();
            format!("Allow {agent} to run this command{folder}?\n\n$ {command}{why}")
        }
        ("Edit", _, Some(path)) => {
            let old = string(input, "old_string").unwrap_or_default();
            let new = string(input, "new_string").unwrap_or_default();
            format!("Allow {agent} to edit {path}?\n\n{}", change(old, new))
        }
        ("MultiEdit", _, Some(path)) => {
            let edits = input.get("edits").and_then(Value::as_array);
            let changes: Vec<String> = (edits.into_iter().flatten())
                .map(|edit| {
                    let old = string(edit, "old_string").unwrap_or_default();
                    let new = string(edit, "new_string").unwrap_or_default();
                    change(old, new)
                })
                .collect();
            format!("Allow {agent} to edit {path}?\n\n{}", changes.join("\n…\n"))
        }
        ("Write", _, Some(path)) => {
            let content = string(input, "content").unwrap_or_default();
            format!("Allow {agent} to write {path}?\n\n{}", lines("+ ", content))
        }
        ("NotebookEdit", _, Some(path)) => {
            let source = string(input, "new_source").unwrap_or_default();
            format!(
                "Allow {agent} to edit the notebook {path}?\n\n{}",
                lines("+ ", source)
            )
        }
        ("WebFetch", _, _) if string(input, "url").is_some() => {
            let url = string(input, "url").unwrap_or_default();
            let why = string(input, "prompt")
                .map(|p| format!("\n\n({p})"))
                .unwrap_or_default();
            format!("Allow {agent} to fetch {url}?{why}")
        }
        ("apply_patch", _, _) if input.get("changes").is_some_and(Value::is_array) => {
            let changes = input.get("changes").and_then(Value::as_array);
            let shown: Vec<String> = (changes.into_iter().flatten())
                .map(|change| {
                    let path = string(change, "path").unwrap_or("?");
                    let kind = (change.get("kind"))
                        .and_then(|k| string(k, "type").or_else(|| k.as_str()))
                        .unwrap_or("change");
                    let diff = string(change, "diff").unwrap_or_default();
                    let diff = match kind {
                        "add" => lines("+ ", diff),
                        "delete" => lines("- ", diff),
                        _ => diff.to_owned(),
                    };
                    format!("{kind} {path}\n{diff}")
                })
                .collect();
            format!(
                "Allow {agent} to change these files{folder}?\n\n{}",
                shown.join("\n\n")
            )
        }
        ("WebSearch", _, _) if string(input, "query").is_some() => {
            let query = string(input, "query").unwrap_or_default();
            format!("Allow {agent} to search the web for: {query}?")
        }
        _ => {
            let shown = serde_json::to_string_pretty(input).unwrap_or_default();
            format!("Allow {agent} to use {tool}{folder}?\n\n{shown}")
        }
    };
    cut(&text)
}

/// An agent's suggested rule as a person reads it (`Bash(npm test:*)`, `mode acceptEdits`), when
/// it is one that allows.
pub(crate) fn rule(suggestion: &Value) -> Option<String> {
    match string(suggestion, "type")? {
        "addRules" | "replaceRules" if string(suggestion, "behavior") == Some("allow") => {
            let rules: Vec<String> = (suggestion.get("rules")?.as_array()?.iter())
                .filter_map(|rule| {
                    let tool = string(rule, "toolName")?;
                    Some(match string(rule, "ruleContent") {
                        Some(content) => format!("{tool}({content})"),
                        None => tool.to_owned(),
                    })
                })
                .collect();
            (!rules.is_empty()).then(|| rules.join(", "))
        }
        "setMode" => string(suggestion, "mode").map(|mode| format!("mode {mode}")),
        "addDirectories" => {
            let dirs: Vec<&str> = (suggestion.get("directories")?.as_array()?.iter())
                .filter_map(Value::as_str)
                .collect();
            (!dirs.is_empty()).then(|| format!("access to {}", dirs.join(", ")))
        }
        _ => None,
    }
}

/// Where a suggested rule is kept, for its option's description.
pub(crate) fn destination(suggestion: &Value) -> &'static str {
    match string(suggestion, "destination") {
        Some("session") => "for this session",
        Some("localSettings") => "in this folder's local settings",
        Some("projectSettings") => "in this project's settings",
        Some("userSettings") => "in your settings",
        _ => "as the agent keeps it",
    }
}
