//! Standard Webhooks signatures: `v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::config::Secret;

/// The `webhook-signature` header value for one attempt.
pub fn signature(secret: &Secret, id: &str, timestamp: i64, body: &str) -> String {
    // Any key length is valid for HMAC.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.key()) else {
        return String::new();
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn the_specification_example_signs_as_published() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
