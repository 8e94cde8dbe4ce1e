//! What a store writes: the header record of a new log (SPEC §7.2) and the event envelope (§7.3).
//! A store interprets only the envelope; `data` is opaque JSON text. Hosts build envelopes from
//! typed [`Record`](crate::Record)s.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::value::RawValue;
use user_questions::SessionId;

use crate::event::SessionEvent;

/// The format version our writer puts in every header (SPEC §7.2): the reference generation whose
/// event shapes §7.5 describes.
pub const SESSION_FORMAT_VERSION: i64 = 4;

/// What the header record of a new log holds (SPEC §7.2). Our writer always writes `isSeeded`
/// (as the reference's version-4 writer does) and never `seedLength`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    /// `id`.
    pub id: SessionId,
    /// `createdAt`: wall-clock Unix milliseconds.
    pub created_at: u64,
    /// `cwd`.
    pub cwd: Option<String>,
    /// `parentSession`.
    pub parent_session: Option<String>,
    /// `isSeeded`: whether the log is a fork with an inherited prefix (its cut is a
    /// `session/end-seed {"inherited":true}` event).
    pub is_seeded: bool,
    /// `origin` (e.g. `"subagent"`).
    pub origin: Option<String>,
    /// `delegationDepth`.
    pub delegation_depth: u64,
    /// `agentPreset`.
    pub agent_preset: Option<String>,
}

impl NewSession {
    /// A root, unseeded session created now, with nothing else set.
    pub fn new(id: impl Into<SessionId>) -> Self {
        Self {
            id: id.into(),
            created_at: now_ms().unsigned_abs(),
            cwd: None,
            parent_session: None,
            is_seeded: false,
            origin: None,
            delegation_depth: 0,
            agent_preset: None,
        }
    }

    /// The header record's line, `\n` included, with the keys in the order of §7.2.
    pub fn header_line(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct HeaderRecord<'a> {
            #[serde(rename = "type")]
            record_type: &'static str,
            version: i64,
            id: &'a str,
            created_at: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            cwd: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            parent_session: Option<&'a str>,
            is_seeded: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            origin: Option<&'a str>,
            delegation_depth: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            agent_preset: Option<&'a str>,
        }
        let record = HeaderRecord {
            record_type: "session",
            version: SESSION_FORMAT_VERSION,
            id: self.id.as_str(),
            created_at: self.created_at,
            cwd: self.cwd.as_deref(),
            parent_session: self.parent_session.as_deref(),
            is_seeded: self.is_seeded,
            origin: self.origin.as_deref(),
            delegation_depth: self.delegation_depth,
            agent_preset: self.agent_preset.as_deref(),
        };
        // Serialising strings, integers and booleans cannot fail.
        let mut line = serde_json::to_string(&record).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// One event to append: the envelope of SPEC §7.3, keys in its order
/// (`type, seq, time, data, ignorable?, sourceEventSeqs?, surfaceOp?`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEvent {
    /// `type`, e.g. `"tool/result"`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// `seq`: the writer checks it against the log (§7.3).
    pub seq: u64,
    /// `time`: wall-clock Unix milliseconds at append.
    pub time: i64,
    /// `data`: a JSON object, kept as text.
    pub data: Box<RawValue>,
    /// `ignorable`: readers that do not know the type may skip it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignorable: Option<bool>,
    /// `sourceEventSeqs` (message-producing events only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_event_seqs: Option<Vec<u64>>,
    /// `surfaceOp` (message-producing events only): `"append"`, or an object such as
    /// `{"op":"replace",…}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<Box<RawValue>>,
}

impl LogEvent {
    /// An event stamped with the current time.
    pub fn new(event_type: impl Into<String>, seq: u64, data: Box<RawValue>) -> Self {
        Self {
            event_type: event_type.into(),
            seq,
            time: now_ms(),
            data,
            ignorable: None,
            source_event_seqs: None,
            surface_op: None,
        }
    }

    /// An event whose `data` is `data` serialised as compact JSON.
    pub fn from_data<T: Serialize + ?Sized>(
        event_type: impl Into<String>,
        seq: u64,
        data: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(
            event_type,
            seq,
            serde_json::value::to_raw_value(data)?,
        ))
    }

    /// Sets `time`.
    #[must_use]
    pub fn at(mut self, time: i64) -> Self {
        self.time = time;
        self
    }

    /// Sets `ignorable: true`.
    #[must_use]
    pub fn ignorable(mut self) -> Self {
        self.ignorable = Some(true);
        self
    }

    /// Sets `sourceEventSeqs`.
    #[must_use]
    pub fn with_source_event_seqs(mut self, seqs: Vec<u64>) -> Self {
        self.source_event_seqs = Some(seqs);
        self
    }

    /// Sets `surfaceOp: "append"`, as every message-producing event the reference host logs in
    /// order does.
    #[must_use]
    pub fn surface_append(mut self) -> Self {
        self.surface_op = RawValue::from_string("\"append\"".to_owned()).ok();
        self
    }

    /// The record's line, `\n` included, checked to be exactly one record that our own reader
    /// decodes as one event with this `seq`: a store never writes a line it would later report
    /// as corrupt, or one that would shift the `seq`s after it. Every store checks each event
    /// with it before appending.
    pub fn to_line(&self) -> Result<(String, SessionEvent), String> {
        if !self.data.get().trim_start().starts_with('{') {
            return Err("`data` is not a JSON object".to_owned());
        }
        let mut line = serde_json::to_string(self).map_err(|e| e.to_string())?;
        if line.contains('\n') {
            return Err("the record contains a line break (pretty-printed `data`?)".to_owned());
        }
        let record = SessionEvent::from_record(&line, self.seq)
            .map_err(|reason| format!("the record does not read back: {reason}"))?;
        if !record.has_explicit_seq() || record.first_seq() != self.seq || record.is_packed() {
            return Err(format!(
                "the record does not read back as one event with seq {} (type {:?} is reserved \
                 for packed chunk rows?)",
                self.seq, self.event_type
            ));
        }
        let event = record
            .into_events()
            .next()
            .ok_or("the record holds no event")?;
        line.push('\n');
        Ok((line, event))
    }
}

/// Wall-clock Unix milliseconds (0 before the epoch; saturating far after it).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
