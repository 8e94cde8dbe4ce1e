//! Bearer tokens for streamable HTTP beyond loopback: each request names one of the server's
//! tokens in `Authorization: Bearer TOKEN` (RFC 6750), compared in constant time.

use std::fmt;

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The fewest characters a token has.
pub const MIN_TOKEN_LEN: usize = 32;
/// The most characters a token has.
const MAX_TOKEN_LEN: usize = 512;

/// A token MCP HTTP takes: 32 to 512 characters of RFC 6750's alphabet (letters, digits,
/// `-._~+/`, then `=` padding), e.g. `openssl rand -hex 32`. Only its SHA-256 digest is kept,
/// so neither `Debug` nor a memory dump of the options shows it.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

/// Why a text is not a [`BearerToken`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BearerTokenError {
    /// Fewer than 32 or more than 512 characters.
    #[error("a bearer token has {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} characters, this one {0}")]
    Length(usize),
    /// A character outside the alphabet.
    #[error(
        "a bearer token has letters, digits and `-._~+/` only (then `=` padding), e.g. the output of `openssl rand -hex 32`"
    )]
    Characters,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(********)")
    }
}

impl BearerToken {
    /// `token`, checked.
    pub fn new(token: &str) -> Result<Self, BearerTokenError> {
        let len = token.chars().count();
        if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&len) {
            return Err(BearerTokenError::Length(len));
        }
        let body = token.trim_end_matches('=');
        let fits = !body.is_empty()
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
        if !fits {
            return Err(BearerTokenError::Characters);
        }
        Ok(Self {
            digest: Sha256::digest(token.as_bytes()).into(),
        })
    }
}

/// Who a request came from, as far as the server can tell: the hex SHA-256 of the bearer token
/// it carried (put in the request's extensions by the HTTP guard). A form's sealed state is bound
/// to it, so another client's token cannot answer the form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Principal(pub(crate) String);

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No `Authorization: Bearer …` header.
    Missing,
    /// One that names no token of the server.
    Invalid,
}

impl Refused {
    /// The `WWW-Authenticate` challenge (RFC 6750 §3).
    pub(crate) fn challenge(self) -> &'static str {
        match self {
            Self::Missing => r#"Bearer realm="ask-user""#,
            Self::Invalid => {
                r#"Bearer realm="ask-user", error="invalid_token", error_description="the token is not one of this server's""#
            }
        }
    }

    /// The JSON-RPC error's message.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Missing => {
                "This server needs a bearer token: send `Authorization: Bearer TOKEN` with one of the tokens of its configuration."
            }
            Self::Invalid => "The bearer token is not one of this server's tokens.",
        }
    }
}

/// Whether `headers` carry one of `tokens` (every one is compared, in constant time: how long
/// the check takes says nothing about which token, or how much of one, matched).
pub(crate) fn check(tokens: &[BearerToken], headers: &HeaderMap) -> Result<Principal, Refused> {
    let mut given = None;
    for value in headers.get_all(header::AUTHORIZATION) {
        let Ok(value) = value.to_str() else {
            return Err(Refused::Invalid);
        };
        let Some((scheme, token)) = value.trim().split_once(' ') else {
            continue;
        };
        if scheme.eq_ignore_ascii_case("bearer") {
            given = Some(token.trim());
            break;
        }
    }
    let Some(given) = given else {
        return Err(Refused::Missing);
    };
    let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
    let mut found = subtle::Choice::from(0);
    for token in tokens {
        found |= token.digest.ct_eq(&digest);
    }
    if bool::from(found) {
        Ok(Principal(crate::util::hex(&digest)))
    } else {
        Err(Refused::Invalid)
    }
}

/// How many hex digits of a call's owner tag its id carries.
const TAG_LEN: usize = 16;

/// How many hex digits of a session's UUID a call id carries.
const UUID_LEN: usize = 32;

/// The tag a call id carries of the principal that made it (`call_<uuid><tag>_<n>`): 16 hex
/// digits of SHA-256 over the session's UUID and the principal, itself the digest of a bearer
/// token nobody else has. `None` without a principal (stdio, loopback HTTP without tokens): such
/// call ids carry no tag.
pub(crate) fn owner_tag(uuid: &str, principal: &str) -> Option<String> {
    if principal.is_empty() {
        return None;
    }
    let mut hasher = Sha256::new();
    hasher.update(b"ask-user call owner\0");
    hasher.update(uuid.as_bytes());
    hasher.update(b"\0");
    hasher.update(principal.as_bytes());
    let digest: [u8; 32] = hasher.finalize().into();
    let mut tag = crate::util::hex(&digest);
    tag.truncate(TAG_LEN);
    Some(tag)
}

/// The session UUID and owner tag a call id carries (`call_<uuid>[<tag>]_<n>`).
pub(crate) fn call_parts(call_id: &str) -> Option<(&str, Option<&str>)> {
    let first = call_id.strip_prefix("call_")?.split('_').next()?;
    let uuid = first.get(..UUID_LEN)?;
    match first.get(UUID_LEN..)? {
        "" => Some((uuid, None)),
        tag if tag.len() == TAG_LEN => Some((uuid, Some(tag))),
        _ => None,
    }
}

/// Whether a request of `principal` (empty: none) may see call `call_id` (its task, its late
/// reply): the call was made by the same principal. Another principal's call is as unknown to
/// it as a call that never was.
pub(crate) fn may_see(call_id: &str, principal: &str) -> bool {
    let Some((uuid, tag)) = call_parts(call_id) else {
        // Not one of this server's ids: whatever looks it up finds nothing.
        return true;
    };
    owner_tag(uuid, principal).as_deref() == tag
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn headers(authorization: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in authorization {
            map.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn tokens_are_checked_when_made() {
        assert!(BearerToken::new(TOKEN).is_ok());
        assert!(BearerToken::new(&format!("{TOKEN}+/._~-==")).is_ok());
        assert_eq!(
            BearerToken::new("short").unwrap_err(),
            BearerTokenError::Length(5)
        );
        assert_eq!(
            BearerToken::new(&"a".repeat(513)).unwrap_err(),
            BearerTokenError::Length(513)
        );
        for bad in [
            format!("{TOKEN} x"),
            format!("{TOKEN}\"x"),
            "=".repeat(40),
            format!("{TOKEN}é"),
        ] {
            assert_eq!(
                BearerToken::new(&bad).unwrap_err(),
                BearerTokenError::Characters,
                "{bad}"
            );
        }
        assert_eq!(
            format!("{:?}", BearerToken::new(TOKEN).unwrap()),
            "BearerToken(********)"
        );
    }

    #[test]
    fn requests_carry_one_of_the_tokens() {
        let other = "fedcba9876543210fedcba9876543210";
        let tokens = [
            BearerToken::new(TOKEN).unwrap(),
            BearerToken::new(other).unwrap(),
        ];
        assert_eq!(check(&tokens, &headers(&[])), Err(Refused::Missing));
        assert_eq!(
            check(&tokens, &headers(&["Basic dXNlcjpwYXNz"])),
            Err(Refused::Missing)
        );
        // Each token is a principal of its own.
        let first = check(&tokens, &headers(&[&format!("Bearer {TOKEN}")])).unwrap();
        let second = check(&tokens, &headers(&[&format!("bearer {other}")])).unwrap();
        assert_ne!(first, second);
        assert_eq!(first.0.len(), 64);
        assert_eq!(
            check(&tokens, &headers(&[&format!("Bearer {TOKEN}x")])),
            Err(Refused::Invalid)
        );
        assert_eq!(
            check(&tokens, &headers(&[&format!("Bearer {}", &TOKEN[..31])])),
            Err(Refused::Invalid)
        );
        assert_eq!(
            check(&[], &headers(&[&format!("Bearer {TOKEN}")])),
            Err(Refused::Invalid)
        );
    }

    #[test]
    fn call_ids_carry_their_owner_and_the_session_uuid() {
        let uuid = "0123456789abcdef0123456789abcdef";
        assert_eq!(owner_tag(uuid, ""), None);
        let tag = owner_tag(uuid, "principal-a").unwrap();
        assert_eq!(tag.len(), 16);
        assert_ne!(owner_tag(uuid, "principal-b").unwrap(), tag);
        let tagged = format!("call_{uuid}{tag}_3");
        assert_eq!(call_parts(&tagged), Some((uuid, Some(tag.as_str()))));
        assert_eq!(call_parts(&format!("call_{uuid}_3")), Some((uuid, None)));
        assert!(may_see(&tagged, "principal-a"));
        assert!(!may_see(&tagged, "principal-b"));
        assert!(!may_see(&tagged, ""));
        assert!(!may_see(&format!("call_{uuid}_3"), "principal-a"));
        assert!(may_see(&format!("call_{uuid}_3"), ""));
    }
}
