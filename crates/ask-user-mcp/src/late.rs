//! What the companion tool returns for a call: its late reply (admitted now, which settles the
//! question), the reply already admitted, or the pending result again.

use ask_user_host::{CheckpointPolicy, Host, SessionOptions, load_projection};
use rmcp::model::{CallToolResult, ContentBlock};
use session_log::{EventBody, LogVisitor, Scanned};
use tool_ask_user::ToolOutcome;
use user_questions::CallId;

use crate::companion::LATE_ANSWER_HINT;
use crate::connection::error_result;
use crate::server::AskUserMcp;

/// The companion's result for `call_id` in the open session `host` (whose log is `log`), inside
/// the current turn:
///
/// 1. a late reply for the call waits in the inbox: it is claimed and admitted (the settlement),
///    and its text is the result;
/// 2. the question is settled: the admitted reply's text again, from the log;
/// 3. the question is still pending: the pending result again;
/// 4. the question is still in its foreground window, or not a question of this log: an error.
pub(crate) fn fetch(host: &Host, call_id: &CallId, log: &str) -> CallToolResult {
    let queued = host
        .host_agent()
        .next_turn()
        .into_iter()
        .find(|m| m.reply_call_id() == Some(call_id));
    if let Some(queued) = queued {
        let admitted = host
            .claim_queued(&queued.id)
            .and_then(|claimed| match claimed {
                Some(message) => host.admit(&message).map(|()| Some(message)),
                None => Ok(None),
            });
        match admitted {
            Ok(Some(message)) => return reply_result(&message),
            // Claimed by a concurrent call of the same session: it is settled now (below).
            Ok(None) => {}
            Err(error) => {
                return error_result(&format!("the reply could not be admitted: {error}"));
            }
        }
    }
    let state = host.projection();
    if state.view().settled.iter().any(|s| &s.call_id == call_id) {
        return match admitted_text(host, log, call_id) {
            Some(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            None => error_result(&format!(
                "call {call_id} is settled, but its reply cannot be read back from the session log"
            )),
        };
    }
    if state.continued(call_id.as_str()).is_some() {
        return CallToolResult::success(vec![
            ContentBlock::text(ToolOutcome::pending(call_id).text),
            ContentBlock::text(LATE_ANSWER_HINT),
        ]);
    }
    if state.active(call_id.as_str()).is_some() {
        return error_result(&format!(
            "call {call_id} is still waiting for its answer in the foreground; its own result brings the answer"
        ));
    }
    error_result(&format!(
        "call {call_id} is not a pending question of this server (legacy calls never take late answers)"
    ))
}

/// The companion's result for a call of another session in the state directory (a session of an
/// earlier server process): the session whose log knows the call is opened, served like
/// [`fetch`] in a turn of its own, and given up again.
pub(crate) fn fetch_elsewhere(
    server: &AskUserMcp,
    current: &str,
    call_id: &CallId,
) -> CallToolResult {
    let runtime = server.runtime();
    let Some(log) = find_log(server, current, call_id) else {
        return error_result(&format!(
            "call {call_id} is not a question of any session of this server"
        ));
    };
    let options = SessionOptions::named(ask_user_host::new_session_id());
    let host = match runtime.open(&log, options) {
        Ok((host, _)) => host,
        Err(error) => {
            return error_result(&format!(
                "the session of call {call_id} cannot be opened now: {error}"
            ));
        }
    };
    let result = host
        .begin_turn_keeping_inbox()
        .and_then(|()| host.begin_step())
        .map(|()| fetch(&host, call_id, &log));
    let ended = host.end_turn("completed");
    if let Err(error) = host.checkpoint() {
        tracing::warn!(%error, %log, "the checkpoint could not be refreshed");
    }
    match (result, ended) {
        (Ok(result), Ok(())) => result,
        (Err(error), _) | (Ok(_), Err(error)) => error_result(&format!(
            "the session log of call {call_id} failed: {error}"
        )),
    }
}

/// The newest other log of the state directory whose projection knows `call_id`.
fn find_log(server: &AskUserMcp, current: &str, call_id: &CallId) -> Option<String> {
    let entries = std::fs::read_dir(&server.options().state_dir).ok()?;
    let mut logs: Vec<(std::time::SystemTime, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let is_log = std::path::Path::new(&name)
                .extension()
                .is_some_and(|e| e == "jsonl")
                && name != current;
            let modified = entry.metadata().ok()?.modified().ok()?;
            is_log.then_some((modified, name))
        })
        .collect();
    logs.sort_by(|a, b| b.cmp(a));
    let store = server.runtime().store();
    logs.into_iter().map(|(_, name)| name).find(|name| {
        load_projection(&**store, name, CheckpointPolicy::ReadOnly).is_ok_and(|load| {
            load.state.active(call_id.as_str()).is_some()
                || load
                    .state
                    .view()
                    .settled
                    .iter()
                    .any(|s| &s.call_id == call_id)
        })
    })
}

fn reply_result(message: &user_questions::UserMessage) -> CallToolResult {
    let text = message
        .content
        .iter()
        .find_map(user_questions::ContentBlock::as_text)
        .unwrap_or_default();
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// The text of the `user/message` that settled `call_id`, read from the log.
fn admitted_text(host: &Host, log: &str, call_id: &CallId) -> Option<String> {
    struct Find<'a> {
        call_id: &'a CallId,
        text: Option<String>,
    }
    impl LogVisitor for Find<'_> {
        fn line(&mut self, line: &Scanned<'_>) {
            let Scanned::Record(record) = line else {
                return;
            };
            let Some(event) = record.record.event() else {
                return;
            };
            if let EventBody::UserMessage(message) = &event.body
                && message.reply_call_id() == Some(self.call_id)
                && self.text.is_none()
            {
                self.text = first_text(record.raw);
            }
        }
    }
    let mut find = Find {
        call_id,
        text: None,
    };
    host.runtime().store().read(log, &mut find).ok()?;
    find.text
}

/// `data.content[]`'s first text block of a `user/message` line.
fn first_text(raw: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(raw).ok()?;
    value
        .get("data")?
        .get("content")?
        .as_array()?
        .iter()
        .find(|block| block.get("type").and_then(serde_json::Value::as_str) == Some("text"))?
        .get("text")?
        .as_str()
        .map(str::to_owned)
}
