//! The late-reply message (SPEC §6): how [`LateAnswers`](crate::LateAnswers) builds it, and how
//! anyone reads it back.
//!
//! The message is an ordinary user message whose **source** marks it as a reply:
//! `{"kind":"user-question-reply","callId":…,"outcome":"answered","provenance":{…}}`. Its one text
//! block is compact JSON the model reads:
//! `{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":…,"questions":[…],"answers":[…]}`.
//!
//! Recognition goes by the source alone, as the projection's does: a message whose text is the same
//! JSON but whose source is an ordinary one is not a reply. The text is read only for the answer
//! batch, with the projection's own reader, so a reader here and the fold always agree on what a
//! reply settles.

use serde::Serialize;
use user_questions::{
    AnswerBatch, AnswerItem, CallId, ContentBlock, MessageSource, Provenance, Question,
    QuestionOption, TOOL_NAME, UserMessage,
};
use user_questions_projection::TextReading;

/// The `kind` discriminator of the reply text.
pub const REPLY_TEXT_KIND: &str = "answer_to_pending_question";

/// The `outcome` of every reply source: there is no dismissal message.
pub const REPLY_OUTCOME: &str = "answered";

/// The role of every user message.
const USER_ROLE: &str = "user";

/// A fresh message id: a UUID v4 in its hyphenated text form.
pub fn new_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The reply text (SPEC §6): compact JSON with exactly the keys `kind, tool, callId, questions,
/// answers`, in that order.
///
/// `questions` are written in service vocabulary with only the keys `id, question, [detail],
/// [header], [options: {label, [description]}], [multiSelect]` (an `intent` is never written);
/// `answers` with only `id, selected, [custom]`, in the given order. The answers are written as
/// given: [`LateAnswers::answer`](crate::LateAnswers::answer) validates them first.
pub fn reply_text(call_id: &CallId, questions: &[Question], answers: &AnswerBatch) -> String {
    let text = ReplyText {
        kind: REPLY_TEXT_KIND,
        tool: TOOL_NAME,
        call_id: call_id.as_str(),
        questions: questions.iter().map(ReplyQuestion::of).collect(),
        answers: answers.answers.iter().map(ReplyAnswer::of).collect(),
    };
    // Serialising strings, booleans and sequences of them into a `String` cannot fail.
    serde_json::to_string(&text).unwrap_or_default()
}

/// The late-reply message (SPEC §6) with the given id: role `user`, a reply source (with
/// `provenance` as its optional trailing key), and one text block holding [`reply_text`].
pub fn reply_message(
    message_id: impl Into<String>,
    call_id: &CallId,
    questions: &[Question],
    answers: &AnswerBatch,
    provenance: Option<Provenance>,
) -> UserMessage {
    let mut source = MessageSource::of_kind(MessageSource::REPLY_KIND);
    source.call_id = Some(call_id.clone());
    source.outcome = Some(REPLY_OUTCOME.to_owned());
    source.provenance = provenance;
    UserMessage {
        id: message_id.into(),
        role: USER_ROLE.to_owned(),
        source,
        content: vec![ContentBlock::text(reply_text(call_id, questions, answers))],
    }
}

/// A late reply read back from a message ([`read_reply`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LateReply {
    /// The message id.
    pub message_id: String,
    /// The call the reply answers (`source.callId`).
    pub call_id: CallId,
    /// Who answered (`source.provenance`), when the source carries it.
    pub provenance: Option<Provenance>,
    /// The answer batch of the first text block, read as the projection reads it (SPEC §8.5: any
    /// JSON object with an `answers` array of strict `{id, selected, custom?}` items; other keys are
    /// ignored). `None` when the text holds no such batch: the projection then settles the call
    /// with no answers.
    pub answers: Option<AnswerBatch>,
}

/// Reads a late reply from a message. The source decides: only a message whose source kind is
/// `user-question-reply` and that names a call is a reply, whatever its text says; an ordinary
/// message whose text is reply JSON is not one.
pub fn read_reply(message: &UserMessage) -> Option<LateReply> {
    let call_id = message.reply_call_id()?;
    let answers = first_text(message)
        .and_then(|text| TextReading::read(text).answers)
        .map(AnswerBatch::new);
    Some(LateReply {
        message_id: message.id.clone(),
        call_id: call_id.clone(),
        provenance: message.source.provenance.clone(),
        answers,
    })
}

/// Whether a message is a late reply for `call_id` (by its source alone).
pub fn is_reply_for(message: &UserMessage, call_id: &CallId) -> bool {
    message.reply_call_id() == Some(call_id)
}

/// The first text block (SPEC §8.5): blocks of other types before it are skipped.
fn first_text(message: &UserMessage) -> Option<&str> {
    message.content.iter().find_map(ContentBlock::as_text)
}

// Wire shapes of the reply text. They borrow from the vocabulary types and name every key
// explicitly, so the text has exactly the keys SPEC §6 lists, whatever the vocabulary types grow.

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReplyText<'a> {
    kind: &'static str,
    tool: &'static str,
    call_id: &'a str,
    questions: Vec<ReplyQuestion<'a>>,
    answers: Vec<ReplyAnswer<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReplyQuestion<'a> {
    id: &'a str,
    question: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    header: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<Vec<ReplyOption<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multi_select: Option<bool>,
}

impl<'a> ReplyQuestion<'a> {
    fn of(question: &'a Question) -> Self {
        Self {
            id: &question.id,
            question: &question.question,
            detail: question.detail.as_deref(),
            header: question.header.as_deref(),
            options: question
                .options
                .as_ref()
                .map(|options| options.iter().map(ReplyOption::of).collect()),
            multi_select: question.multi_select,
        }
    }
}

#[derive(Serialize)]
struct ReplyOption<'a> {
    label: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

impl<'a> ReplyOption<'a> {
    fn of(option: &'a QuestionOption) -> Self {
        Self {
            label: &option.label,
            description: option.description.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct ReplyAnswer<'a> {
    id: &'a str,
    selected: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<&'a str>,
}

impl<'a> ReplyAnswer<'a> {
    fn of(item: &'a AnswerItem) -> Self {
        Self {
            id: &item.id,
            selected: &item.selected,
            custom: item.custom.as_deref(),
        }
    }
}
