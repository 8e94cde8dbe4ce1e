//! Capability tokens: random, and compared in constant time.

use std::fmt::Write as _;

/// `bytes` random bytes from the operating system, as lowercase hex. An error when the
/// operating system has none to give: without them no capability token can be made.
pub(crate) fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|error| {
        std::io::Error::other(format!(
            "the operating system's random source failed: {error}"
        ))
    })?;
    Ok(buf
        .iter()
        .fold(String::with_capacity(bytes * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        }))
}

/// Whether `token` is fit to be a fixed capability token: at least 32 characters (128 bits of
/// hex), all of them URL-safe (`[0-9A-Za-z_-]`), so it travels in a URL fragment unescaped.
pub(crate) fn is_fit(token: &str) -> bool {
    token.len() >= 32
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `given` equals `expected`, in time that depends on their lengths only.
pub(crate) fn same(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_of_the_asked_length_and_differ() {
        let a = random_hex(32).unwrap();
        let b = random_hex(32).unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn comparison_needs_every_byte() {
        assert!(same("abc", "abc"));
        assert!(!same("abd", "abc"));
        assert!(!same("ab", "abc"));
        assert!(!same("", "abc"));
    }
}
