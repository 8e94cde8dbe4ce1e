//! The certificate and key a server serves TLS with (rustls, the ring provider: no C library,
//! nothing fetched at run time).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate chain and its private key, ready to serve TLS 1.2 and 1.3 with
/// ([`serve_tls`](crate::serve_tls)); HTTP/1.1 is the one protocol offered (ALPN `http/1.1`).
#[derive(Clone)]
pub struct ServerTls {
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("ServerTls").finish_non_exhaustive()
    }
}

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate (or a malformed one).
    #[error("{what} holds no PEM certificate (`-----BEGIN CERTIFICATE-----`){detail}")]
    Certificate {
        /// The file, or "the certificate".
        what: String,
        /// What the PEM reader said, if anything.
        detail: String,
    },
    /// The key file holds no PEM private key (PKCS #8, PKCS #1 or SEC1), or a malformed one.
    #[error("{what} holds no PEM private key (PKCS #8, RSA or EC){detail}")]
    Key {
        /// The file, or "the key".
        what: String,
        /// What the PEM reader said, if anything.
        detail: String,
    },
    /// rustls refused the pair (the key does not match the certificate, an unsupported
    /// algorithm).
    #[error("the certificate and key cannot be served: {0}")]
    Refused(#[from] rustls::Error),
    /// `tls_cert` and `tls_key` make no pair of files.
    #[error(transparent)]
    Files(#[from] TlsFilesError),
}

impl ServerTls {
    /// The chain in `cert_pem` (the server's certificate first, then any intermediates) and the
    /// private key in `key_pem`.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        Self::build(cert_pem, key_pem, "the certificate", "the key")
    }

    /// [`from_pem`](Self::from_pem) from two files (they may be the same file).
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.to_owned(),
                source,
            })
        };
        Self::build(
            &read(cert)?,
            &read(key)?,
            &cert.display().to_string(),
            &key.display().to_string(),
        )
    }

    fn build(cert_pem: &[u8], key_pem: &[u8], cert: &str, key: &str) -> Result<Self, TlsError> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| TlsError::Certificate {
                what: cert.to_owned(),
                detail: format!(": {e}"),
            })?;
        if chain.is_empty() {
            return Err(TlsError::Certificate {
                what: cert.to_owned(),
                detail: String::new(),
            });
        }
        let private = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Key {
            what: key.to_owned(),
            detail: match e {
                rustls::pki_types::pem::Error::NoItemsFound => String::new(),
                other => format!(": {other}"),
            },
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, private)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        })
    }
}

/// A certificate chain file and its private key file: a settings table's `tls_cert` and
/// `tls_key` (both or neither), checked. A leading `~/` of either stands for `$HOME/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The PEM certificate chain.
    pub cert: PathBuf,
    /// The PEM private key.
    pub key: PathBuf,
}

impl TlsFiles {
    /// `tls_cert` and `tls_key` in a printout of the settings in effect (`ask-user config`), or
    /// a comment saying the server serves plain HTTP.
    pub fn print(tls: Option<&Self>, out: &mut settings_file::Printout<'_>) {
        let quote = |path: &std::path::Path| settings_file::quote(&path.to_string_lossy());
        match tls {
            Some(tls) => {
                out.set("tls_cert", quote(&tls.cert));
                out.set("tls_key", quote(&tls.key));
            }
            None => out.line("# tls_cert, tls_key: not set (plain HTTP)"),
        }
    }
}

/// Why `tls_cert` and `tls_key` make no [`TlsFiles`]. The message names the key that is wrong
/// ([`TlsFilesError::key`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TlsFilesError {
    /// A path that is none ([`home_path`]).
    #[error("`{key}` {error}")]
    Path {
        /// `tls_cert` or `tls_key`.
        key: &'static str,
        /// What is wrong with it.
        error: HomePathError,
    },
    /// `tls_cert` without `tls_key`.
    #[error("`tls_cert` needs `tls_key` beside it")]
    CertAlone,
    /// `tls_key` without `tls_cert`.
    #[error("`tls_key` needs `tls_cert` beside it")]
    KeyAlone,
}

impl TlsFilesError {
    /// The key that is wrong: `tls_cert` or `tls_key`.
    pub fn key(&self) -> &'static str {
        match self {
            Self::Path { key, .. } => key,
            Self::CertAlone => "tls_cert",
            Self::KeyAlone => "tls_key",
        }
    }
}

impl TlsFiles {
    /// `tls_cert` and `tls_key` as written: both, or neither (`None`).
    pub fn pair(cert: Option<&str>, key: Option<&str>) -> Result<Option<Self>, TlsFilesError> {
        let path = |name: &'static str, text: Option<&str>| {
            text.map(|text| {
                home_path(text).map_err(|error| TlsFilesError::Path { key: name, error })
            })
            .transpose()
        };
        match (path("tls_cert", cert)?, path("tls_key", key)?) {
            (Some(cert), Some(key)) => Ok(Some(Self { cert, key })),
            (None, None) => Ok(None),
            (Some(_), None) => Err(TlsFilesError::CertAlone),
            (None, Some(_)) => Err(TlsFilesError::KeyAlone),
        }
    }

    /// The files, read and checked ([`ServerTls::from_pem_files`]).
    pub fn load(&self) -> Result<ServerTls, TlsError> {
        ServerTls::from_pem_files(&self.cert, &self.key)
    }
}

/// Why a text is no path for [`home_path`]; the message follows the key's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HomePathError {
    /// The text is empty.
    #[error("is empty")]
    Empty,
    /// It starts with `~/` (or is `~`), and `HOME` is not set (or empty).
    #[error("starts with `~/` but HOME is not set")]
    NoHome,
}

/// `text` as a path, a leading `~/` (or `~` alone) standing for the home directory, `$HOME`.
pub fn home_path(text: &str) -> Result<PathBuf, HomePathError> {
    if text.is_empty() {
        return Err(HomePathError::Empty);
    }
    let rest = match text {
        "~" => Some(""),
        _ => text.strip_prefix("~/"),
    };
    match rest {
        Some(rest) => {
            let home = std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .ok_or(HomePathError::NoHome)?;
            Ok(Path::new(&home).join(rest))
        }
        None => Ok(PathBuf::from(text)),
    }
}
