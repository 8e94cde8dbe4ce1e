//! Text repairs the reader applies before JSON parsing (SPEC §7.8): escaped lone surrogates become
//! `\uFFFD`, because a Rust `String` cannot hold them and `serde_json` refuses them in a string it
//! decodes. Invalid UTF-8 is handled by the line reader with `String::from_utf8_lossy`.

use std::borrow::Cow;

/// Whether `text` contains a `\u` escape whose first hex digit is `d`/`D`, the only escapes that
/// can be surrogates. A cheap filter: most logs have none, so the rewrite below never runs.
pub(crate) fn may_have_surrogate_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, b"\\u")
        .any(|at| matches!(bytes.get(at + 2), Some(b'd' | b'D')))
}

/// Rewrites every escaped lone surrogate (`\uD800`–`\uDFFF` not part of a valid high-low pair) to
/// `\uFFFD`, one replacement per lone surrogate. Escaped backslashes are honoured: in `\\uD800`
/// the backslash is escaped and `uD800` is plain text.
///
/// The scan walks escapes from the start of the text, so it also sees escapes outside strings;
/// those make the JSON invalid anyway, and the rewrite never turns invalid JSON into valid JSON.
pub fn fix_lone_surrogates(text: &str) -> Cow<'_, str> {
    if !may_have_surrogate_escape(text) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while let Some(rel) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + rel;
        match bytes.get(at + 1) {
            Some(b'u') => {
                let Some(unit) = hex4(bytes, at + 2) else {
                    // Not a well-formed escape: leave it for the parser to refuse.
                    i = at + 2;
                    continue;
                };
                if (0xD800..=0xDBFF).contains(&unit) {
                    let low =
                        if bytes.get(at + 6) == Some(&b'\\') && bytes.get(at + 7) == Some(&b'u') {
                            hex4(bytes, at + 8)
                        } else {
                            None
                        };
                    if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                        // A valid pair: keep both escapes.
                        i = at + 12;
                    } else {
                        out.push_str(&text[copied..at]);
                        out.push_str("\\uFFFD");
                        copied = at + 6;
                        i = at + 6;
                    }
                } else if (0xDC00..=0xDFFF).contains(&unit) {
                    out.push_str(&text[copied..at]);
                    out.push_str("\\uFFFD");
                    copied = at + 6;
                    i = at + 6;
                } else {
                    i = at + 6;
                }
            }
            Some(_) => i = at + 2,
            None => break,
        }
        if i >= bytes.len() {
            break;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let mut value = 0;
    for &d in digits {
        value = value * 16 + char::from(d).to_digit(16)?;
    }
    Some(value)
}

/// Parses `text` with `parse`; when that fails and the text holds surrogate escapes, retries once
/// on the repaired text. The retry is lazy because lone surrogates are rare and skipped parts of a
/// record never fail on them.
pub(crate) fn parse_with_surrogate_repair<T, E>(
    text: &str,
    mut parse: impl FnMut(&str) -> Result<T, E>,
) -> Result<T, E> {
    match parse(text) {
        Ok(value) => Ok(value),
        Err(first) => match fix_lone_surrogates(text) {
            Cow::Owned(fixed) => parse(&fixed),
            Cow::Borrowed(_) => Err(first),
        },
    }
}

/// Whether `byte` is JSON whitespace.
pub(crate) fn is_json_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::fix_lone_surrogates;

    #[track_caller]
    fn check(input: &str, expected: &str) {
        assert_eq!(fix_lone_surrogates(input), expected);
    }

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_kept() {
        check(r#""a\uD800b""#, r#""a\uFFFDb""#);
        check(r#""\udc00""#, r#""\uFFFD""#);
        check(r#""\uD83D\uDE00""#, r#""\uD83D\uDE00""#);
        check(r#""\uD83D\uD83D\uDE00""#, r#""\uFFFD\uD83D\uDE00""#);
        check(r#""\\uD800""#, r#""\\uD800""#);
        check(r#""\\\uD800""#, r#""\\\uFFFD""#);
        check(r#""\uD800"#, r#""\uFFFD"#);
        check(r#""\uD8"#, r#""\uD8"#);
        check("no escapes", "no escapes");
        check(r#""\u0041\uDFFF\u00e9""#, r#""\u0041\uFFFD\u00e9""#);
    }
}
