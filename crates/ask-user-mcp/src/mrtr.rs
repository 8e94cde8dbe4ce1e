//! Forms through multi round-trip requests (SEP-2322), the 2026-07-28 revision's way for a server
//! to ask its client for input: a `tools/call` is answered with an `InputRequiredResult` holding
//! the form (`inputRequests`) and a sealed `requestState`; the client shows the form and calls
//! the tool again with the person's answer (`inputResponses`) and the state echoed back.
//!
//! Round one writes nothing: it checks the arguments as the call would and sends the very form
//! the call's form answerer builds. Everything round two needs is in the state (the session log,
//! its session id and the call id round one gave the question), so any server instance holding
//! the key serves it. The state is sealed with HMAC-SHA256 ([`RequestStateCodec`]), bound as
//! associated data to the tool, to a digest of the call's arguments and to the principal (the
//! bearer token the request came with, if any), and expires after [`FORM_ROUND_TTL`]; a state
//! that is forged, changed, expired, sent with other arguments or by another principal is refused
//! before anything is written. Round two runs the call as a handshake-era call runs it, its form
//! answerer taking the answer already given instead of sending the form; a state used once is
//! refused the second time (the call id is in the log: nothing is written).

use std::fmt;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The key of the form in `inputRequests` and `inputResponses`.
pub const FORM_KEY: &str = "ask_user_question";

/// How long a form's `requestState` may be answered: a day (a person may leave a form open
/// overnight). Past it the retry is refused and the model asks again.
pub const FORM_ROUND_TTL: Duration = Duration::from_hours(24);

/// The name of the key file in a state directory.
pub const KEY_FILE: &str = "request-state.key";

/// The secret that seals a form's `requestState`: at least 32 bytes, shared by every server
/// instance that may serve a form's second round. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct RequestStateKey(Arc<[u8]>);

impl fmt::Debug for RequestStateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RequestStateKey(********)")
    }
}

impl RequestStateKey {
    /// The fewest bytes a key has.
    pub const MIN_LEN: usize = 32;

    /// A key of these bytes; `None` when there are fewer than [`MIN_LEN`](Self::MIN_LEN).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Option<Self> {
        let bytes = bytes.into();
        (bytes.len() >= Self::MIN_LEN).then(|| Self(bytes.into()))
    }

    /// A fresh random key (the operating system's random source): for one process alone.
    pub fn generate() -> std::io::Result<Self> {
        let mut bytes = vec![0_u8; Self::MIN_LEN];
        getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
        Ok(Self(bytes.into()))
    }

    /// The key's bytes, to keep it where every instance reads it (a database's shared
    /// secrets, say). They are the secret itself: never log or show them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The key kept in `dir` ([`KEY_FILE`], hex, readable by its owner only), made on first use:
    /// every server over one state directory seals and opens with it.
    pub fn load_or_create(dir: &Path) -> std::io::Result<Self> {
        let path = dir.join(KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                // A key others could read seals nothing: made private (with a warning).
                session_log::private_file(&path)?;
                return Self::from_hex(text.trim()).ok_or_else(|| bad_key_file(&path));
            }
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
            Err(_) => {}
        }
        let key = Self::generate()?;
        let hex = crate::util::hex(&key.0);
        // Written in full under a name of its own, then linked into place: a server that races
        // this one reads a whole key, this one's or its own, never half of one.
        let temp = dir.join(format!(".{KEY_FILE}.{}", std::process::id()));
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)?;
            file.write_all(hex.as_bytes())?;
            file.sync_all()?;
        }
        let linked = std::fs::hard_link(&temp, &path);
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => Ok(key),
            // Another server made it first: its key is the one.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path)?;
                Self::from_hex(text.trim()).ok_or_else(|| bad_key_file(&path))
            }
            Err(error) => Err(error),
        }
    }

    /// A key written as hex (at least 64 digits).
    pub fn from_hex(text: &str) -> Option<Self> {
        if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let bytes: Option<Vec<u8>> = (0..text.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
            .collect();
        Self::new(bytes?)
    }

    fn codec(&self) -> Option<RequestStateCodec> {
        RequestStateCodec::try_new(self.0.to_vec()).ok()
    }
}

fn bad_key_file(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{} is not a request-state key (64 or more hex digits); remove it to make a new one",
            path.display()
        ),
    )
}

/// What round two needs of round one, sealed into the `requestState`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FormRound {
    /// The format's version.
    pub(crate) v: u8,
    /// The session log of the call.
    pub(crate) log: String,
    /// Its session id.
    pub(crate) session: String,
    /// The call id round one gave the question.
    pub(crate) call: String,
    /// SHA-256 of the form sent, so round two answers that form and no other.
    pub(crate) form: String,
    /// Until when (Unix milliseconds) round two is taken; set when sealed.
    #[serde(default)]
    pub(crate) until_ms: u64,
}

/// Unix milliseconds of `at`.
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why a retry's state or answer is refused; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RoundError {
    /// The state was not made here for this call and principal, or was changed.
    #[error(
        "the requestState does not belong to this call: it was changed, made by another server, or sent with other arguments or by another client; nothing was written, call ask_user_question again"
    )]
    Forged,
    /// The state expired.
    #[error(
        "the requestState has expired (the form was answered more than 24 hours after it was shown); nothing was written, call ask_user_question again"
    )]
    Expired,
    /// The retry has no usable answer to the form.
    #[error(
        "the retry carries no answer to the form (inputResponses.{FORM_KEY} must be an elicitation result); nothing was written"
    )]
    NoAnswer,
    /// The state was used already: its question is settled.
    #[error(
        "the requestState was used already: the question of call {0} has its answer; nothing was written"
    )]
    Used(String),
    /// No key to seal or open with.
    #[error("this server cannot seal form rounds (no request-state key)")]
    NoKey,
}

/// The associated data a state is bound to: the tool, its arguments and the principal.
fn associated_data(tool: &str, arguments: &str, principal: &str) -> Vec<u8> {
    let digest = Sha256::digest(arguments.as_bytes());
    let mut data = b"ask-user-mcp/form-round/v1\n".to_vec();
    data.extend_from_slice(tool.as_bytes());
    data.push(b'\n');
    data.extend_from_slice(&digest);
    data.push(b'\n');
    data.extend_from_slice(principal.as_bytes());
    data
}

/// The digest of a form, as [`FormRound::form`] holds it.
pub(crate) fn form_digest(params: &ElicitRequestParams) -> String {
    let text = serde_json::to_string(params).unwrap_or_default();
    crate::util::hex(&Sha256::digest(text.as_bytes()))
}

/// What a call's rounds are bound to: the tool, its arguments (the JSON text of the request's
/// `arguments`) and the principal.
pub(crate) struct Binding<'a> {
    pub(crate) tool: &'a str,
    pub(crate) arguments: &'a str,
    pub(crate) principal: &'a str,
}

/// Round one's result at `now`: the form, and the state sealed for round two (taken until
/// [`FORM_ROUND_TTL`] after `now`).
pub(crate) fn input_required(
    key: &RequestStateKey,
    round: &FormRound,
    params: ElicitRequestParams,
    binding: &Binding<'_>,
    now: SystemTime,
) -> Result<InputRequiredResult, RoundError> {
    let codec = key.codec().ok_or(RoundError::NoKey)?;
    let data = associated_data(binding.tool, binding.arguments, binding.principal);
    let round = FormRound {
        until_ms: unix_ms(now + FORM_ROUND_TTL),
        ..round.clone()
    };
    let sealed = codec
        .seal_json_with(&round, &SealOptions::new().associated_data(&data))
        .map_err(|_| RoundError::NoKey)?;
    let mut requests = InputRequests::new();
    requests.insert(
        FORM_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
}

/// Round two's state opened at `now`, and the person's answer to the form.
pub(crate) fn open(
    key: &RequestStateKey,
    state: &str,
    responses: Option<&rmcp::model::InputResponses>,
    binding: &Binding<'_>,
    now: SystemTime,
) -> Result<(FormRound, ElicitResult), RoundError> {
    let codec = key.codec().ok_or(RoundError::NoKey)?;
    let data = associated_data(binding.tool, binding.arguments, binding.principal);
    let round: FormRound = codec
        .open_json_with(state, &data)
        .map_err(|_| RoundError::Forged)?;
    if round.v != 1 {
        return Err(RoundError::Forged);
    }
    if unix_ms(now) > round.until_ms {
        return Err(RoundError::Expired);
    }
    let answer = responses
        .and_then(|responses| responses.get(FORM_KEY))
        .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
        .ok_or(RoundError::NoAnswer)?;
    Ok((round, answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ElicitationAction, ElicitationSchema};
    use serde_json::json;

    const ARGUMENTS: &str = r#"{"questions":[{"id":"db","question":"Which?"}]}"#;

    fn params() -> ElicitRequestParams {
        let schema = json!({"type": "object", "properties": {"q01": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "Answer".to_owned(),
            requested_schema: ElicitationSchema::from_json_schema(schema).unwrap(),
        }
    }

    fn round() -> FormRound {
        FormRound {
            v: 1,
            log: "mcp-1-x.jsonl".to_owned(),
            session: "session-x".to_owned(),
            call: "call_x_1".to_owned(),
            form: form_digest(&params()),
            until_ms: 0,
        }
    }

    fn binding<'a>(arguments: &'a str, principal: &'a str) -> Binding<'a> {
        Binding {
            tool: FORM_KEY,
            arguments,
            principal,
        }
    }

    fn answered() -> rmcp::model::InputResponses {
        let mut responses = rmcp::model::InputResponses::new();
        responses.insert(
            FORM_KEY.to_owned(),
            json!({"action": "accept", "content": {"q01": "yes"}}),
        );
        responses
    }

    /// A sealed state opens for its call only: not changed, not with other arguments, not for
    /// another principal or key, not past its day, and only with an answer to the form.
    #[test]
    fn a_state_opens_for_its_own_call_only() {
        let key = RequestStateKey::generate().unwrap();
        let now = SystemTime::now();
        let first =
            input_required(&key, &round(), params(), &binding(ARGUMENTS, "alice"), now).unwrap();
        let state = first.request_state.clone().unwrap();
        assert!(first.input_requests.unwrap().contains_key(FORM_KEY));
        let responses = answered();

        let (opened, answer) = open(
            &key,
            &state,
            Some(&responses),
            &binding(ARGUMENTS, "alice"),
            now,
        )
        .unwrap();
        assert_eq!(opened.call, "call_x_1");
        assert_eq!(answer.action, ElicitationAction::Accept);

        let open_as = |state: &str, arguments: &str, principal: &str, at: SystemTime| {
            open(
                &key,
                state,
                Some(&responses),
                &binding(arguments, principal),
                at,
            )
            .map(|_| ())
        };
        // Another call's arguments, another principal, a later day.
        let other = r#"{"questions":[{"id":"db","question":"Which one?"}]}"#;
        assert_eq!(
            open_as(&state, other, "alice", now),
            Err(RoundError::Forged)
        );
        assert_eq!(
            open_as(&state, ARGUMENTS, "bob", now),
            Err(RoundError::Forged)
        );
        let tomorrow = now + FORM_ROUND_TTL + Duration::from_secs(1);
        assert_eq!(
            open_as(&state, ARGUMENTS, "alice", tomorrow),
            Err(RoundError::Expired)
        );
        // Changed anywhere, or made up.
        let mut changed = state.clone().into_bytes();
        let at = changed.len() / 2;
        changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        assert_eq!(
            open_as(&changed, ARGUMENTS, "alice", now),
            Err(RoundError::Forged)
        );
        assert_eq!(
            open_as("rs1.e30.AAAA", ARGUMENTS, "alice", now),
            Err(RoundError::Forged)
        );
        assert_eq!(
            open_as("", ARGUMENTS, "alice", now),
            Err(RoundError::Forged)
        );
        // Another server's key.
        let stranger = RequestStateKey::generate().unwrap();
        assert_eq!(
            open(
                &stranger,
                &state,
                Some(&responses),
                &binding(ARGUMENTS, "alice"),
                now
            )
            .map(|_| ()),
            Err(RoundError::Forged)
        );
        // No answer, or one that is not an elicitation result.
        assert_eq!(
            open(&key, &state, None, &binding(ARGUMENTS, "alice"), now).map(|_| ()),
            Err(RoundError::NoAnswer)
        );
        let mut wrong = rmcp::model::InputResponses::new();
        wrong.insert(FORM_KEY.to_owned(), json!({"roots": []}));
        assert_eq!(
            open(
                &key,
                &state,
                Some(&wrong),
                &binding(ARGUMENTS, "alice"),
                now
            )
            .map(|_| ()),
            Err(RoundError::NoAnswer)
        );
    }

    #[test]
    fn keys_are_long_enough_and_kept_in_the_state_directory() {
        use std::os::unix::fs::PermissionsExt as _;
        assert!(RequestStateKey::new(vec![7; 31]).is_none());
        assert!(RequestStateKey::from_hex("abc").is_none());
        assert!(RequestStateKey::from_hex(&"zz".repeat(32)).is_none());
        assert!(RequestStateKey::from_hex(&"0f".repeat(32)).is_some());
        let dir = tempfile::tempdir().unwrap();
        let first = RequestStateKey::load_or_create(dir.path()).unwrap();
        let again = RequestStateKey::load_or_create(dir.path()).unwrap();
        assert_eq!(first.0, again.0);
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(format!("{first:?}"), "RequestStateKey(********)");
        std::fs::write(dir.path().join(KEY_FILE), "short").unwrap();
        let error = RequestStateKey::load_or_create(dir.path()).unwrap_err();
        assert!(
            error.to_string().contains("is not a request-state key"),
            "{error}"
        );
    }
}
