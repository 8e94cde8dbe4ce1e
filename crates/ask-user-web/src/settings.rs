//! What a configuration file says of the page: [`WebSettings`].

use ask_user_notify::redacted_url;
use settings_file::{Printout, quote};
use std::net::{Ipv4Addr, SocketAddr};

use ask_user_http::{ServerTls, TlsError, TlsFiles, TlsFilesError};

use crate::WebOptions;
use serde::{Deserialize, Deserializer};

/// The page's settings in a configuration file (`[web]` in `ask-user`'s): serde's form, each value
/// checked as it is read. Unknown keys are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSettings {
    /// `addr`: where to serve the page, `"IP:PORT"`. `None`: the host's choice.
    #[serde(default, deserialize_with = "addr")]
    pub addr: Option<SocketAddr>,
    /// `public_url`: the page's address as another device reaches it, an `http://` or `https://`
    /// URL (answer buttons of notifications point below it). `None`: the address served.
    #[serde(default, deserialize_with = "public_url")]
    pub public_url: Option<String>,
    /// `tls_cert`: the PEM certificate chain to serve HTTPS with, as written (see
    /// [`WebSettings::tls`]).
    #[serde(default)]
    pub tls_cert: Option<String>,
    /// `tls_key`: its private key, as written.
    #[serde(default)]
    pub tls_key: Option<String>,
}

impl WebSettings {
    /// `tls_cert` and `tls_key` checked: both (HTTPS) or neither (`None`: plain HTTP).
    pub fn tls(&self) -> Result<Option<TlsFiles>, TlsFilesError> {
        TlsFiles::pair(self.tls_cert.as_deref(), self.tls_key.as_deref())
    }

    /// The page's TLS, loaded: `None` (plain HTTP) when neither `tls_cert` nor `tls_key` is set.
    ///
    /// # Errors
    ///
    /// The pair is incomplete, or a file cannot be read or served.
    pub fn server_tls(&self) -> Result<Option<ServerTls>, TlsError> {
        self.tls()?.map(|files| files.load()).transpose()
    }

    /// The options of a page served at `addr` (default: 127.0.0.1 on a free port), with these
    /// settings' TLS: to loopback only unless `addr` is beyond it. The address too.
    ///
    /// # Errors
    ///
    /// As [`server_tls`](Self::server_tls).
    pub fn options_at(
        &self,
        addr: Option<SocketAddr>,
    ) -> Result<(WebOptions, SocketAddr), TlsError> {
        let addr = addr.unwrap_or_else(|| SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        let options = WebOptions {
            loopback_only: addr.ip().is_loopback(),
            tls: self.server_tls()?,
            ..WebOptions::default()
        };
        Ok((options, addr))
    }

    /// The `[web]` table in a printout of the settings in effect (`ask-user config`), the
    /// credentials of `public_url` masked.
    pub fn print(&self, out: &mut Printout<'_>) {
        out.table("web");
        let addr = self.addr.map(|addr| quote(&addr.to_string()));
        out.entry("addr", addr, "127.0.0.1 on a free port");
        let public_url = (self.public_url.as_deref()).map(|url| quote(&redacted_url(url)));
        out.entry("public_url", public_url, "the address served");
        TlsFiles::print(self.tls().ok().flatten().as_ref(), out);
    }
}

fn addr<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map(Some).map_err(|_| {
        serde::de::Error::custom("`addr` is an IP address and a port, like `127.0.0.1:8766`")
    })
}

fn public_url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let http = ["http://", "https://"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
            && text.len() > scheme.len()
    });
    if http {
        Ok(Some(text))
    } else {
        Err(serde::de::Error::custom(
            "`public_url` is an http:// or https:// URL",
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn values_are_checked_as_they_are_read_and_tls_takes_both_files() {
        let web: WebSettings = serde_json::from_str(
            r#"{"addr":"0.0.0.0:8766","public_url":"HTTPS://x.example","tls_cert":"/c","tls_key":"/k"}"#,
        )
        .unwrap();
        assert_eq!(web.addr, Some(SocketAddr::from(([0, 0, 0, 0], 8766))));
        let tls = web.tls().unwrap().unwrap();
        assert_eq!(
            (tls.cert.to_str(), tls.key.to_str()),
            (Some("/c"), Some("/k"))
        );
        for (text, says) in [
            (r#"{"addr":"localhost"}"#, "`addr` is an IP address"),
            (
                r#"{"public_url":"x.example"}"#,
                "`public_url` is an http://",
            ),
            (r#"{"port":1}"#, "unknown field `port`"),
        ] {
            let error = serde_json::from_str::<WebSettings>(text).unwrap_err();
            assert!(error.to_string().starts_with(says), "{text}: {error}");
        }
        let alone = WebSettings {
            tls_key: Some("/k".into()),
            ..WebSettings::default()
        };
        assert_eq!(alone.tls(), Err(TlsFilesError::KeyAlone));
        assert_eq!(WebSettings::default().tls(), Ok(None));
    }
}
