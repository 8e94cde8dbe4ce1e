//! A certificate authority made in the test, and server certificates it signs: what the TLS
//! tests of the page, MCP HTTP and the database trust (or, with another CA, refuse).

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A throwaway CA: its certificate (PEM) and what signs with it.
pub struct TestCa {
    /// The CA's certificate, to trust.
    pub cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A server certificate and its key, in PEM.
pub struct ServerCert {
    /// The certificate (signed by the CA).
    pub cert_pem: String,
    /// Its private key (PKCS #8).
    pub key_pem: String,
}

/// Where [`TestCa::write`] put the files.
pub struct TlsFiles {
    /// The CA's certificate.
    pub ca: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's key.
    pub key: PathBuf,
}

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `names` (host names or IP addresses), signed by this CA.
    pub fn server(&self, names: &[&str]) -> ServerCert {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "ask-user test server");
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// The CA's certificate and a server certificate for `localhost`, `127.0.0.1` and `::1`,
    /// written to `dir` as `ca.pem`, `cert.pem` and `key.pem`.
    pub fn write(&self, dir: &Path) -> TlsFiles {
        let server = self.server(&["localhost", "127.0.0.1", "::1"]);
        let files = TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        std::fs::write(&files.ca, &self.cert_pem).unwrap();
        std::fs::write(&files.cert, &server.cert_pem).unwrap();
        std::fs::write(&files.key, &server.key_pem).unwrap();
        files
    }
}
