//! The one sanitiser for text that came from a model or a log and reaches a terminal (or a
//! phone's notification: every surface shows such text through it).
//!
//! A question, an option label, a call id or a log path can hold escape sequences: written raw,
//! `\u{1b}]0;PWNED\u{7}\u{1b}[2J` sets the terminal's title and clears its screen. Every such text
//! is shown through [`visible`] (one line) or [`visible_lines`] (keeps line breaks): each control
//! character (C0, DEL, C1, so ESC and the one-byte CSI too) and each invisible bidirectional or
//! zero-width format character is replaced by its escape, e.g. `\u{1b}`, so the person sees that
//! it was there and the terminal interprets nothing. [`json_visible`] does the same for JSON text,
//! where the replacement is a JSON escape and the value stays the same.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal raw: controls, and the invisible format characters
/// that reorder or hide text (the same set the web page escapes).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

fn escape(
    text: &str,
    keep: impl Fn(char) -> bool,
    write: impl Fn(&mut String, char),
) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) && !keep(c) {
            write(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for one line of a terminal: every control or invisible format character, line breaks
/// and tabs included, shown as its escape (`\u{1b}`, `\u{a}`).
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(
        text,
        |_| false,
        |out, c| {
            // Writing to a `String` cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        },
    )
}

/// [`visible`], keeping line breaks (`\n`) as line breaks: for text shown over several lines.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(
        text,
        |c| c == '\n',
        |out, c| {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        },
    )
}

/// JSON text for a terminal: the characters serde leaves raw in strings (DEL, C1 controls such as
/// the one-byte CSI, invisible format characters) become JSON `\uXXXX` escapes. The JSON value is
/// unchanged; only how it is spelled.
pub fn json_visible(json: &str) -> Cow<'_, str> {
    // Outside strings, line breaks and tabs are JSON whitespace (pretty-printed JSON); inside
    // strings serde always escapes them, so they are never hidden content.
    escape(
        json,
        |c| matches!(c, '\n' | '\t' | '\r'),
        |out, c| {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        },
    )
}
