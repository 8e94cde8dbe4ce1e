//! TLS to the server, as libpq's `sslmode` and `sslrootcert` ask for it (in the connection
//! string or the URL's query), over rustls with the ring provider. The `postgres` client knows
//! only `disable`, `prefer` and `require` and does not verify anything itself: the connection
//! string's TLS settings are taken out here and turned into the client's mode and a connector that
//! verifies what the mode says.
//!
//! | `sslmode` | TLS | the server's certificate |
//! | --- | --- | --- |
//! | `disable` | never | — |
//! | `allow`, `prefer` (the default) | when the server offers it, else plain | checked against `sslrootcert` when one is given, else not checked |
//! | `require` | always | as `prefer` (libpq's `require` with a root file is `verify-ca`) |
//! | `verify-ca` | always | signed by a CA of `sslrootcert` (default `~/.postgresql/root.crt`) |
//! | `verify-full` | always | that, and it names the host connected to (`host`, not `hostaddr`) |
//!
//! `sslrootcert` is a PEM file of CA certificates, or `system` for the web PKI's roots built into
//! this binary (nothing is read or fetched at run time; libpq 16's meaning: `verify-full` unless
//! said otherwise, and nothing weaker). Client certificates (`sslcert`, `sslkey`) are not
//! supported, nor are the `PGSSLMODE` family of environment variables.

use std::borrow::Cow;
use std::error::Error as _;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use postgres::config::SslMode;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::PgError;

/// A connection string taken apart: the client's configuration and the TLS connector (`None`:
/// plain only).
pub(crate) struct Target {
    pub(crate) config: postgres::Config,
    pub(crate) tls: Option<MakeRustlsConnect>,
}

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Self, PgError> {
        Ok(match value {
            "disable" => Self::Disable,
            "allow" => Self::Allow,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(PgError::Settings(format!(
                    "sslmode {other:?} is none of disable, allow, prefer, require, verify-ca, verify-full"
                )));
            }
        })
    }
}

/// The TLS settings found in a connection string.
#[derive(Default)]
struct TlsParams {
    mode: Option<String>,
    rootcert: Option<String>,
}

impl TlsParams {
    /// Takes `key`'s `value` if it is a TLS setting (`true`); refuses the ones not supported.
    fn take(&mut self, key: &str, value: &str) -> Result<bool, PgError> {
        match key {
            "sslmode" => self.mode = Some(value.to_owned()),
            "sslrootcert" => self.rootcert = Some(value.to_owned()),
            "sslcert"
            | "sslkey"
            | "sslpassword"
            | "sslcertmode"
            | "sslcrl"
            | "sslcrldir"
            | "sslsni"
            | "ssl_min_protocol_version"
            | "ssl_max_protocol_version"
            | "requiressl"
            | "sslcompression" => {
                return Err(PgError::Settings(format!(
                    "{key} is not supported (TLS takes sslmode and sslrootcert)"
                )));
            }
            // GSSAPI encryption is never used: asking not to, or to prefer it, changes nothing.
            "gssencmode" if value == "disable" || value == "prefer" => {}
            "gssencmode" => {
                return Err(PgError::Settings(
                    "gssencmode=require is not supported (TLS takes sslmode and sslrootcert)"
                        .into(),
                ));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl Target {
    /// Takes the connection string `conninfo` (libpq's `key=value` form or a `postgres://` URL)
    /// apart.
    pub(crate) fn parse(conninfo: &str) -> Result<Self, PgError> {
        let mut tls = TlsParams::default();
        let rest = match url_scheme(conninfo) {
            Some(scheme_len) => url_without_tls(conninfo, scheme_len, &mut tls)?,
            None => keywords_without_tls(conninfo, &mut tls)?,
        };
        let mut config: postgres::Config = rest
            .parse()
            .map_err(|e| PgError::Settings(crate::describe(&e)))?;
        let rootcert = tls.rootcert.as_deref().filter(|r| !r.is_empty());
        let mode = match tls.mode.as_deref() {
            Some(mode) => Mode::parse(mode)?,
            // libpq 16: the system's roots mean a full check unless said otherwise.
            None if rootcert == Some("system") => Mode::VerifyFull,
            None => Mode::Prefer,
        };
        if rootcert == Some("system") && mode != Mode::VerifyFull {
            return Err(PgError::Settings(
                "sslrootcert=system takes sslmode=verify-full (a weaker mode would not check the host)"
                    .into(),
            ));
        }
        let verify = match (mode, rootcert) {
            (Mode::Disable, _) => {
                config.ssl_mode(SslMode::Disable);
                return Ok(Self { config, tls: None });
            }
            (Mode::VerifyFull, _) => Verify::Full(roots(rootcert)?),
            (Mode::VerifyCa, _) => Verify::Chain(roots(rootcert)?),
            (_, Some(rootcert)) => Verify::Chain(roots(Some(rootcert))?),
            (_, None) => Verify::Nothing,
        };
        config.ssl_mode(match mode {
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        });
        Ok(Self {
            config,
            tls: Some(connector(verify)?),
        })
    }
}

/// What the connector checks of the server's certificate.
enum Verify {
    Nothing,
    Chain(RootCertStore),
    Full(RootCertStore),
}

/// The roots of `sslrootcert` (`None`: libpq's default file, which must then be there).
fn roots(rootcert: Option<&str>) -> Result<RootCertStore, PgError> {
    if rootcert == Some("system") {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
    }
    let path = if let Some(path) = rootcert {
        PathBuf::from(path)
    } else {
        let default = std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
            .filter(|path| path.is_file());
        default.ok_or_else(|| {
            PgError::Settings(
                "sslmode verify-ca and verify-full need the CA's certificate: set sslrootcert=FILE (or sslrootcert=system)"
                    .into(),
            )
        })?
    };
    let unreadable = |why: &dyn std::fmt::Display| {
        PgError::Settings(format!("sslrootcert {}: {why}", path.display()))
    };
    let mut store = RootCertStore::empty();
    let certificates = CertificateDer::pem_file_iter(&path).map_err(|e| unreadable(&e))?;
    for certificate in certificates {
        let certificate = certificate.map_err(|e| unreadable(&e))?;
        store.add(certificate).map_err(|e| unreadable(&e))?;
    }
    if store.is_empty() {
        return Err(unreadable(&"holds no PEM certificate"));
    }
    Ok(store)
}

fn connector(verify: Verify) -> Result<MakeRustlsConnect, PgError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| PgError::Settings(format!("TLS: {e}")))?;
    let config = match verify {
        Verify::Full(roots) => builder.with_root_certificates(roots).with_no_client_auth(),
        Verify::Chain(roots) => {
            let full = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| PgError::Settings(format!("TLS: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(full)))
                .with_no_client_auth()
        }
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// `verify-ca`: the web PKI's check of the chain, without the host name (which the full check
/// looks at only after the chain verified).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a root file: encrypted, the certificate not checked (libpq's
/// meaning). The handshake's signatures are still verified.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// What a failed TLS handshake means, when the certificate check failed.
pub(crate) fn hint(error: &postgres::Error) -> Option<&'static str> {
    let io = error.source()?.downcast_ref::<std::io::Error>()?;
    let tls = io.get_ref()?.downcast_ref::<rustls::Error>()?;
    match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => Some(
            "the server's certificate is not signed by a CA of sslrootcert: the wrong CA, or not the server meant",
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => Some(
            "the server's certificate does not name the host connected to: sslmode=verify-full checks the host name against it",
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => Some("the server's certificate has expired"),
        _ => None,
    }
}

/// The length of `text`'s `postgres://` or `postgresql://` prefix (any case), when it is a URL.
pub(crate) fn url_scheme(text: &str) -> Option<usize> {
    ["postgres://", "postgresql://"]
        .into_iter()
        .find_map(|scheme| {
            text.get(..scheme.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
                .then_some(scheme.len())
        })
}

/// One parameter of a connection string: its keyword, its value as the client reads it, where
/// its text starts (its keyword) and the byte range of the value's text (quotes included).
pub(crate) struct Param<'a> {
    pub(crate) key: Cow<'a, str>,
    pub(crate) value: Cow<'a, str>,
    pub(crate) start: usize,
    pub(crate) span: Range<usize>,
}

/// The query of a `postgres://` URL as the client's own parser finds it (after the user info,
/// which ends at the first `@`, from the first `?`): where it starts (its `?`), if it has one, and
/// its parameters, percent-decoded.
pub(crate) struct UrlQuery<'a> {
    pub(crate) start: Option<usize>,
    pub(crate) params: Vec<Param<'a>>,
}

/// The query of `url`, a `postgres://` URL whose scheme is `scheme_len` bytes.
pub(crate) fn url_query(url: &str, scheme_len: usize) -> UrlQuery<'_> {
    let after_credentials = url[scheme_len..]
        .find('@')
        .map_or(scheme_len, |at| scheme_len + at + 1);
    let query = url[after_credentials..]
        .find('?')
        .map(|q| after_credentials + q);
    let mut params = Vec::new();
    if let Some(query) = query {
        let mut start = query + 1;
        for pair in url[query + 1..].split('&') {
            let (key, value_start) = match pair.find('=') {
                Some(eq) => (&pair[..eq], start + eq + 1),
                None => (pair, start + pair.len()),
            };
            let span = value_start..start + pair.len();
            params.push(Param {
                key: percent_decode(key),
                value: percent_decode(&url[span.clone()]),
                start,
                span,
            });
            start += pair.len() + 1;
        }
    }
    UrlQuery {
        start: query,
        params,
    }
}

/// A `postgres://` URL without its TLS query parameters.
fn url_without_tls(url: &str, scheme_len: usize, tls: &mut TlsParams) -> Result<String, PgError> {
    let parts = url_query(url, scheme_len);
    let Some(query) = parts.start else {
        return Ok(url.to_owned());
    };
    let mut kept = Vec::new();
    for param in &parts.params {
        if !tls.take(&param.key, &param.value)? {
            kept.push(&url[param.start..param.span.end]);
        }
    }
    let mut rest = url[..query].to_owned();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    Ok(rest)
}

fn percent_decode(text: &str) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The parameters of a `key=value` connection string, read as libpq (and the client) read
/// them: values plain or in single quotes, a backslash escaping the next character.
pub(crate) fn keywords(conninfo: &str) -> Result<Vec<Param<'_>>, PgError> {
    let mut chars = conninfo.char_indices().peekable();
    let mut params = Vec::new();
    let malformed = |why: &str| PgError::Settings(format!("the connection string {why}"));
    let end = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        chars.peek().map_or(conninfo.len(), |&(i, _)| i)
    };
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let key_start = end(&mut chars);
        while chars
            .next_if(|(_, c)| !c.is_whitespace() && *c != '=')
            .is_some()
        {}
        let key = &conninfo[key_start..end(&mut chars)];
        if key.is_empty() {
            if chars.peek().is_some() {
                return Err(malformed("has a value without a keyword"));
            }
            return Ok(params);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next().map(|(_, c)| c) != Some('=') {
            return Err(malformed(&format!("has no `=` after {key}")));
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let value_start = end(&mut chars);
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match chars.next().map(|(_, c)| c) {
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next().map(|(_, c)| c)),
                    Some(c) => value.push(c),
                    None => return Err(malformed("has an unterminated quoted value")),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next().map(|(_, c)| c));
                } else {
                    value.push(c);
                }
            }
        }
        params.push(Param {
            key: Cow::Borrowed(key),
            value: Cow::Owned(value),
            start: key_start,
            span: value_start..end(&mut chars),
        });
    }
}

/// A `key=value` connection string without its TLS settings; the settings kept are written back
/// quoted.
fn keywords_without_tls(conninfo: &str, tls: &mut TlsParams) -> Result<String, PgError> {
    let mut rest = String::new();
    for param in keywords(conninfo)? {
        if !tls.take(&param.key, &param.value)? {
            let quoted = param.value.replace('\\', "\\\\").replace('\'', "\\'");
            let _ = write!(rest, "{}='{quoted}' ", param.key);
        }
    }
    Ok(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(conninfo: &str) -> (String, Option<String>, Option<String>) {
        let mut tls = TlsParams::default();
        let rest = match url_scheme(conninfo) {
            Some(scheme_len) => url_without_tls(conninfo, scheme_len, &mut tls),
            None => keywords_without_tls(conninfo, &mut tls),
        }
        .unwrap();
        (rest, tls.mode, tls.rootcert)
    }

    #[test]
    fn tls_settings_are_taken_out_of_both_forms() {
        let (rest, mode, root) =
            split("host=db port = 5432 sslmode=verify-full sslrootcert='/a b/ca.crt' password=x");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/a b/ca.crt"));
        assert!(rest.starts_with("host='db' port='5432' "), "{rest}");
        let (rest, mode, root) = split(
            "postgres://u:p%3Fw@db:5432/app?application_name=x&sslmode=require&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(rest, "postgres://u:p%3Fw@db:5432/app?application_name=x");
        assert_eq!(mode.as_deref(), Some("require"));
        assert_eq!(root.as_deref(), Some("/tmp/ca.pem"));
        // A `?` in the password is not the query.
        let (rest, mode, _) = split("postgresql://u:a?b@db/app?sslmode=disable");
        assert_eq!(rest, "postgresql://u:a?b@db/app");
        assert_eq!(mode.as_deref(), Some("disable"));
        let (rest, mode, _) = split("postgres://db/app");
        assert_eq!((rest.as_str(), mode), ("postgres://db/app", None));
    }

    #[test]
    fn values_keep_their_quotes_and_escapes() {
        let (rest, _, _) = split(r"password='a\'b c\\d' user=x\ y");
        let config: postgres::Config = rest.parse().unwrap();
        assert_eq!(config.get_password(), Some(&br"a'b c\d"[..]));
        assert_eq!(config.get_user(), Some("x y"));
    }

    #[test]
    fn modes_and_settings_errors_say_what_is_wrong_without_secrets() {
        let plain = Target::parse("host=h sslmode=disable password=sekrit").unwrap();
        assert!(plain.tls.is_none());
        assert_eq!(plain.config.get_ssl_mode(), SslMode::Disable);
        let default = Target::parse("host=h").unwrap();
        assert_eq!(default.config.get_ssl_mode(), SslMode::Prefer);
        assert!(default.tls.is_some());
        let require = Target::parse("postgres://h/db?sslmode=require").unwrap();
        assert_eq!(require.config.get_ssl_mode(), SslMode::Require);
        assert!(Target::parse("host=h gssencmode=disable").is_ok());
        let system = Target::parse("host=h sslrootcert=system").unwrap();
        assert_eq!(system.config.get_ssl_mode(), SslMode::Require);
        for (conninfo, says) in [
            (
                "host=h sslmode=strict password=sekrit",
                "sslmode \"strict\"",
            ),
            (
                "host=h sslmode=verify-ca sslrootcert=/nonexistent/ca.crt password=sekrit",
                "sslrootcert /nonexistent/ca.crt",
            ),
            (
                "host=h sslcert=/x password=sekrit",
                "sslcert is not supported",
            ),
            ("host=h sslmode=require sslrootcert=system", "verify-full"),
            ("host=h password=sekrit frobnicate=1", "unknown option"),
            ("host=h password='sekrit", "unterminated"),
        ] {
            let Err(error) = Target::parse(conninfo) else {
                panic!("{conninfo} parsed")
            };
            let text = error.to_string();
            assert!(text.contains(says), "{conninfo}: {text}");
            assert!(!text.contains("sekrit"), "{conninfo}: {text}");
            assert_eq!(error.code(), "DB_SETTINGS");
        }
    }
}
