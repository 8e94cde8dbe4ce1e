//! The protocol between a linked host and the inbox: one JSON object per line over a local
//! stream socket, each tagged by `t`. A line longer than [`MAX_LINE`] ends the connection.
//!
//! Host → inbox: `hello`, `session` (a session's name and where it runs), `open` (a question in
//! its window), `over` (how its window ended: answered elsewhere, failed, pending, cancelled),
//! `continued` (its pending result is durable), `settled` (a late reply was admitted), and
//! `late-reply` (what became of a late answer the inbox forwarded).
//!
//! Inbox → host: `answer` (an answer given in the inbox to a question in its window) and `late`
//! (a late answer to a continued question, which the host answers `late-reply`).
//!
//! A shell (`ask-user answer`) sends `answer` (an answer to a question in its window) and reads
//! back `answered`.

use futures::{SinkExt as _, StreamExt as _};
use pending_answer::{Accepted, DeskError, DeskErrorKind, LateRefusal, NotWaiting, Queued};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec};
use user_questions::{
    AnswerBatch, CallId, ErrorCode, Provenance, Question, UserMessage, UserQuestionError,
};

/// The longest line either side takes: a batch of questions at the seam's limits fits many times.
pub const MAX_LINE: usize = 1024 * 1024;

/// How long a line may stay unfinished: a peer that starts a line and stalls is dropped then, so
/// a stalled peer holds at most one partial line for this long.
pub const LINE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// How often a reader looks whether an unfinished line has waited too long.
const LINE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// What a host tells the inbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case")]
pub(crate) enum ToInbox {
    Hello {
        pid: u32,
    },
    Session {
        session: String,
        client: Option<String>,
        cwd: Option<String>,
    },
    Open {
        session: String,
        call: CallId,
        questions: Vec<Question>,
        timed: bool,
        #[serde(rename = "askedAtMs")]
        asked_at_ms: i64,
        /// When the host's window of a timed question closes (wall-clock Unix ms); absent when
        /// untimed, or from a host that does not say.
        #[serde(rename = "endsAtMs", default, skip_serializing_if = "Option::is_none")]
        ends_at_ms: Option<i64>,
    },
    Over {
        session: String,
        call: CallId,
        how: Over,
    },
    Continued {
        session: String,
        call: CallId,
    },
    Settled {
        session: String,
        call: CallId,
        provenance: Provenance,
    },
    LateReply {
        id: u64,
        result: WireLate,
    },
    /// Not a host's: an agent's hook telling that its agent waits for its person at its own
    /// terminal, where no card can answer it ([`tell_attention`](crate::tell_attention)).
    Attention {
        id: u64,
        #[serde(flatten)]
        attention: crate::Attention,
    },
    /// Not a host's: a shell answering a question in its window (`ask-user answer`).
    Answer {
        id: u64,
        session: String,
        call: CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    },
}

/// How a question's window ended at its host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub(crate) enum Over {
    /// Another surface of the host answered (the client's form, a script).
    Answered {
        answers: AnswerBatch,
        provenance: Provenance,
    },
    /// The window closed: the call went pending.
    Pending,
    /// The request ended without an answer (cancelled, declined, an error).
    Failed {
        code: Option<String>,
        message: String,
    },
}

/// What the inbox tells a host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case")]
pub(crate) enum ToHost {
    Answer {
        session: String,
        call: CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    },
    Late {
        id: u64,
        session: String,
        call: CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    },
    /// What became of a shell's answer ([`ToInbox::Answer`]).
    Answered { id: u64, result: WireAnswer },
    /// An attention was taken: how many of the inbox's notifiers heard it.
    Noted { id: u64, notifiers: usize },
    /// The inbox does not take this connection (too many links, another user's process); it
    /// closes it after this line.
    Refused { code: String, message: String },
}

/// What became of an answer given in a question's window through the inbox's socket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub(crate) enum WireAnswer {
    /// Taken: the question's ask ends with it (first answer wins).
    Taken,
    /// No question of the session with that call waits in its window here.
    NotWaiting,
    /// The answers do not fit the questions.
    BadAnswer { code: String, message: String },
}

/// A late answer's outcome on the wire: what the host's desk did ([`Accepted`]) or a
/// [`LateRefusal`], kept typed where the inbox's desk acts on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub(crate) enum WireLate {
    Queued {
        call: CallId,
        #[serde(rename = "messageId")]
        message_id: String,
    },
    Admitted {
        reply: Box<UserMessage>,
        settled: bool,
    },
    Recorded {
        #[serde(rename = "answerId")]
        answer_id: String,
    },
    UnknownSession {
        session: String,
    },
    NotWaiting {
        why: String,
    },
    ReplyQueued {
        call: CallId,
        #[serde(rename = "messageId")]
        message_id: Option<String>,
    },
    BadAnswer {
        code: String,
        message: String,
    },
    Refused {
        code: String,
        message: String,
    },
}

impl WireLate {
    pub(crate) fn from_outcome(outcome: &Result<Accepted, LateRefusal>) -> Self {
        match outcome {
            Ok(Accepted::Queued(queued)) => Self::Queued {
                call: queued.call_id.clone(),
                message_id: queued.message_id.clone(),
            },
            Ok(Accepted::Admitted { reply, settled }) => Self::Admitted {
                reply: reply.clone(),
                settled: *settled,
            },
            Ok(Accepted::Recorded { answer_id }) => Self::Recorded {
                answer_id: answer_id.clone(),
            },
            Err(LateRefusal::UnknownSession(session)) => Self::UnknownSession {
                session: session.clone(),
            },
            Err(LateRefusal::NotWaiting(why)) => Self::NotWaiting {
                why: not_waiting_name(*why).to_owned(),
            },
            Err(LateRefusal::ReplyQueued {
                call_id,
                message_id,
                ..
            }) => Self::ReplyQueued {
                call: call_id.clone(),
                message_id: message_id.clone(),
            },
            Err(LateRefusal::BadAnswer(error)) => Self::BadAnswer {
                code: error.code().to_owned(),
                message: error.message().to_owned(),
            },
            Err(refusal) => Self::Refused {
                code: refusal.code().unwrap_or("UNAVAILABLE").to_owned(),
                message: refusal.to_string(),
            },
        }
    }

    pub(crate) fn into_outcome(self) -> Result<Accepted, LateRefusal> {
        match self {
            Self::Queued { call, message_id } => Ok(Accepted::Queued(Queued {
                call_id: call,
                message_id,
            })),
            Self::Admitted { reply, settled } => Ok(Accepted::Admitted { reply, settled }),
            Self::Recorded { answer_id } => Ok(Accepted::Recorded { answer_id }),
            Self::UnknownSession { session } => Err(LateRefusal::UnknownSession(session)),
            Self::NotWaiting { why } => Err(LateRefusal::NotWaiting(not_waiting_of(&why))),
            Self::ReplyQueued { call, message_id } => Err(LateRefusal::ReplyQueued {
                call_id: call,
                message_id,
                settled_by: None,
            }),
            Self::BadAnswer { code, message } => Err(LateRefusal::BadAnswer(
                UserQuestionError::new(ErrorCode::parse(&code), message),
            )),
            Self::Refused { code, message } => Err(LateRefusal::Unavailable(DeskError::new(
                DeskErrorKind::Store,
                "UNAVAILABLE",
                format!("{code}: {message}"),
            ))),
        }
    }
}

fn not_waiting_name(why: NotWaiting) -> &'static str {
    match why {
        NotWaiting::Open => "open",
        NotWaiting::Closing => "closing",
        NotWaiting::Settled => "settled",
        NotWaiting::Dropped => "dropped",
        NotWaiting::Unknown => "unknown",
    }
}

fn not_waiting_of(name: &str) -> NotWaiting {
    match name {
        "open" => NotWaiting::Open,
        "closing" => NotWaiting::Closing,
        "settled" => NotWaiting::Settled,
        "dropped" => NotWaiting::Dropped,
        _ => NotWaiting::Unknown,
    }
}

/// Reads lines of `T`: `None` at the end of the stream, on a read error, on a line too long, or
/// on a line left unfinished for [`LINE_WITHIN`]; a line that is not a `T` is skipped with a
/// warning (a newer peer's message, say), its text escaped.
pub(crate) struct Reader<R, T> {
    lines: FramedRead<R, LinesCodec>,
    /// Since when the buffer has held an unfinished line.
    partial_since: Option<tokio::time::Instant>,
    _kind: std::marker::PhantomData<T>,
}

impl<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>> Reader<R, T> {
    pub(crate) fn new(read: R) -> Self {
        Self {
            lines: FramedRead::new(read, LinesCodec::new_with_max_length(MAX_LINE)),
            partial_since: None,
            _kind: std::marker::PhantomData,
        }
    }

    pub(crate) async fn next(&mut self) -> Option<T> {
        loop {
            // Reading a line is cancel safe: what arrived stays in the buffer.
            let read = tokio::select! {
                read = self.lines.next() => read?,
                () = tokio::time::sleep(LINE_CHECK) => {
                    if self.lines.read_buffer().is_empty() {
                        self.partial_since = None;
                    } else if self
                        .partial_since
                        .get_or_insert_with(tokio::time::Instant::now)
                        .elapsed()
                        >= LINE_WITHIN
                    {
                        tracing::warn!("an inbox peer left a line unfinished; disconnected");
                        return None;
                    }
                    continue;
                }
            };
            self.partial_since = None;
            match read {
                Ok(line) => match serde_json::from_str(&line) {
                    Ok(message) => return Some(message),
                    Err(error) => {
                        let error =
                            user_questions::sanitize::visible(&error.to_string()).into_owned();
                        tracing::warn!(%error, "an inbox message that cannot be read; skipped");
                    }
                },
                Err(error) => {
                    tracing::warn!(%error, "the inbox connection broke");
                    return None;
                }
            }
        }
    }
}

/// Writes lines of JSON.
pub(crate) struct Writer<W> {
    lines: FramedWrite<W, LinesCodec>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    pub(crate) fn new(write: W) -> Self {
        Self {
            lines: FramedWrite::new(write, LinesCodec::new_with_max_length(MAX_LINE)),
        }
    }

    pub(crate) async fn send<T: Serialize>(&mut self, message: &T) -> std::io::Result<()> {
        let line = serde_json::to_string(message).map_err(std::io::Error::other)?;
        self.lines.send(line).await.map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_tagged_lines() {
        let open = ToInbox::Open {
            session: "mcp-1.jsonl".to_owned(),
            call: CallId::from("call_1"),
            questions: vec![Question::new("q", "Which?")],
            timed: true,
            asked_at_ms: 5,
            ends_at_ms: Some(30_005),
        };
        let line = serde_json::to_string(&open).unwrap();
        assert!(
            line.starts_with(r#"{"t":"open","session":"mcp-1.jsonl""#),
            "{line}"
        );
        assert!(line.contains(r#""endsAtMs":30005"#), "{line}");
        assert_eq!(serde_json::from_str::<ToInbox>(&line).unwrap(), open);
        // From a host that does not tell its window's end.
        let older = line.replace(r#","endsAtMs":30005"#, "");
        let ToInbox::Open { ends_at_ms, .. } = serde_json::from_str(&older).unwrap() else {
            panic!("{older}");
        };
        assert_eq!(ends_at_ms, None);
        let over = ToInbox::Over {
            session: "s".to_owned(),
            call: CallId::from("c"),
            how: Over::Pending,
        };
        let line = serde_json::to_string(&over).unwrap();
        assert!(line.contains(r#""how":{"how":"pending"}"#), "{line}");
    }

    #[test]
    fn refusals_keep_their_kind_across_the_wire() {
        let refused: Result<Accepted, LateRefusal> =
            Err(LateRefusal::NotWaiting(NotWaiting::Settled));
        let back = WireLate::from_outcome(&refused).into_outcome();
        assert!(matches!(
            back,
            Err(LateRefusal::NotWaiting(NotWaiting::Settled))
        ));
        let queued = Queued {
            call_id: CallId::from("c"),
            message_id: "m".to_owned(),
        };
        let back = WireLate::from_outcome(&Ok(Accepted::Queued(queued.clone()))).into_outcome();
        assert!(matches!(back, Ok(Accepted::Queued(q)) if q == queued));
    }
}
