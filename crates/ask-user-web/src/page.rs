//! The page: one HTML document with its style and script inline, embedded in the binary and
//! byte-stable. The Content-Security-Policy allows exactly that script and that style, by their
//! SHA-256 hashes, and nothing from elsewhere.

use std::sync::LazyLock;

use base64::Engine as _;
use sha2::{Digest, Sha256};

const TEMPLATE: &str = include_str!("../assets/index.html");
const STYLE: &str = include_str!("../assets/page.css");
const SCRIPT: &str = include_str!("../assets/page.js");

struct Page {
    html: String,
    csp: axum::http::HeaderValue,
}

static PAGE: LazyLock<Page> = LazyLock::new(|| {
    let html = TEMPLATE
        .replacen("/*STYLE*/", STYLE, 1)
        .replacen("/*SCRIPT*/", SCRIPT, 1);
    let hash = |text: &str| {
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
    };
    let csp = format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        hash(SCRIPT),
        hash(STYLE)
    );
    // Base64 and the fixed text are ASCII; a policy that could not be a header forbids all.
    let csp = axum::http::HeaderValue::from_str(&csp)
        .unwrap_or_else(|_| axum::http::HeaderValue::from_static("default-src 'none'"));
    Page { html, csp }
});

/// The page, as served at `GET /`.
pub fn html() -> &'static str {
    &PAGE.html
}

/// The Content-Security-Policy every response carries.
pub fn csp() -> &'static str {
    PAGE.csp.to_str().unwrap_or("default-src 'none'")
}

pub(crate) fn csp_header() -> axum::http::HeaderValue {
    PAGE.csp.clone()
}
