//! What a configuration file says of the server: [`McpSettings`].

use std::fmt;

use ask_user_http::{TlsFiles, TlsFilesError};
use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::auth::BearerToken;

/// The server's settings in a configuration file (`[mcp]` in `ask-user`'s): serde's form, each
/// value checked as it is read. Unknown keys are refused.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    /// `tokens`: the bearer tokens streamable HTTP takes, a list of at least one; with any, every
    /// request needs one and the server may listen beyond loopback. A token that is not one is
    /// named by its place (``token 2 of `tokens` ``), never quoted.
    #[serde(default, deserialize_with = "tokens")]
    pub tokens: Vec<BearerToken>,
    /// `tls_cert`: the PEM certificate chain to serve HTTPS with, as written (see
    /// [`McpSettings::tls`]).
    #[serde(default)]
    pub tls_cert: Option<String>,
    /// `tls_key`: its private key, as written.
    #[serde(default)]
    pub tls_key: Option<String>,
}

impl McpSettings {
    /// The keys whose values are secrets, each with what it is (`[]`: each element of the list):
    /// a configuration file may say where to read them from instead.
    pub const SECRET_KEYS: &'static [(&'static str, &'static str)] =
        &[("tokens[]", "a bearer token")];

    /// `tls_cert` and `tls_key` checked: both (HTTPS) or neither (`None`: plain HTTP).
    pub fn tls(&self) -> Result<Option<TlsFiles>, TlsFilesError> {
        TlsFiles::pair(self.tls_cert.as_deref(), self.tls_key.as_deref())
    }

    /// The `[mcp]` table in a printout of the settings in effect (`ask-user config`), each token
    /// masked.
    pub fn print(&self, out: &mut settings_file::Printout<'_>) {
        use settings_file::{MASK, quote};
        out.table("mcp");
        let tokens = vec![quote(MASK); self.tokens.len()];
        let tokens = (!tokens.is_empty()).then(|| format!("[{}]", tokens.join(", ")));
        out.entry("tokens", tokens, "mcp --http serves loopback only");
        TlsFiles::print(self.tls().ok().flatten().as_ref(), out);
    }
}

fn tokens<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<BearerToken>, D::Error> {
    deserializer.deserialize_seq(Tokens)
}

/// The list of `tokens`, each token checked where it is (so an error points at it).
struct Tokens;

impl<'de> Visitor<'de> for Tokens {
    type Value = Vec<BearerToken>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of bearer tokens")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut tokens = Vec::new();
        while let Some(token) = seq.next_element_seed(Token(tokens.len() + 1))? {
            tokens.push(token);
        }
        if tokens.is_empty() {
            return Err(serde::de::Error::custom(
                "`tokens` is empty: leave it out, or give one",
            ));
        }
        Ok(tokens)
    }
}

/// The token at this place (from 1) of `tokens`, checked as it is read (so that an error points
/// at it).
struct Token(usize);

impl<'de> DeserializeSeed<'de> for Token {
    type Value = BearerToken;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<BearerToken, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for Token {
    type Value = BearerToken;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<BearerToken, E> {
        BearerToken::new(text)
            .map_err(|e| E::custom(format_args!("token {} of `tokens`: {e}", self.0)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn tokens_are_checked_each_named_by_its_place() {
        let good = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
        let settings: McpSettings =
            serde_json::from_str(&format!(r#"{{"tokens":["{good}","{good}"]}}"#)).unwrap();
        assert_eq!(settings.tokens.len(), 2);
        assert_eq!(settings.tls(), Ok(None));
        for (text, says) in [
            (
                format!(r#"{{"tokens":["{good}","short"]}}"#),
                "token 2 of `tokens`: a bearer token has 32 to 512 characters, this one 5",
            ),
            (
                r#"{"tokens":[]}"#.to_owned(),
                "`tokens` is empty: leave it out, or give one",
            ),
        ] {
            let error = serde_json::from_str::<McpSettings>(&text).unwrap_err();
            assert!(error.to_string().starts_with(says), "{text}: {error}");
            assert!(!error.to_string().contains("short"), "{error}");
        }
        let alone: McpSettings = serde_json::from_str(r#"{"tls_cert":"/c"}"#).unwrap();
        assert_eq!(alone.tls(), Err(TlsFilesError::CertAlone));
    }
}
