//! What the companion tool returns for a call: its late reply (admitted now, which settles the
//! question), the reply already admitted, or the pending result again; and, asked without a call
//! id, every late reply waiting in the session. [`fetch_reply`] is the tool's entry in a session:
//! one fetch at a time, in a turn of the session (shared with its calls in flight).

use std::sync::Arc;

use ask_user_host::{CheckpointPolicy, Host, HostRuntime, SessionOptions, load_projection};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;
use session_log::{EventBody, LogVisitor, Scanned, SessionStore};
use user_questions::CallId;
use user_questions_projection::Standing;

use crate::companion::{nothing_waiting, read_call_id};
use crate::session::Conn;
use crate::state::ServerInner;
use crate::util::error_result;

/// The companion tool in session `conn`: the model fetches a late reply.
/// A call another principal made is as unknown to `principal` as one that never was.
pub(crate) fn fetch_reply(
    conn: &Arc<Conn>,
    arguments: Option<&serde_json::Map<String, Value>>,
    principal: &str,
) -> CallToolResult {
    let call_id = match read_call_id(arguments) {
        Ok(Some(id)) => CallId::from(id),
        Ok(None) => return fetch_all_replies(conn),
        Err(message) => return error_result(&message),
    };
    if !crate::auth::may_see(call_id.as_str(), principal) {
        return unknown_call(&call_id);
    }
    let _one_at_a_time = conn.one_fetch_at_a_time();
    if conn.owns(&call_id) {
        return match conn.enter(true) {
            Ok(active) => fetch(active.host(), &call_id, conn.log()),
            Err(error) => error_result(&format!("the session log cannot be used: {error}")),
        };
    }
    fetch_elsewhere(conn.server(), &call_id)
}

/// The companion without a call id: every late reply waiting in session `conn`.
fn fetch_all_replies(conn: &Arc<Conn>) -> CallToolResult {
    let _one_at_a_time = conn.one_fetch_at_a_time();
    match conn.enter(true) {
        Ok(active) => fetch_all(active.host()),
        Err(error) => error_result(&format!("the session log cannot be used: {error}")),
    }
}

/// The companion's result without a call id in the open session `host`, inside the current turn:
/// every late reply waiting in the session's inbox, taken into the turn and admitted in the order
/// they were queued (each one settles its question, as [`fetch`] admits one), one text block per
/// reply; with none waiting, a text that says so and names the calls still pending.
fn fetch_all(host: &Host) -> CallToolResult {
    let replies = match host.late().take(None) {
        Ok(replies) => replies,
        Err(error) => return error_result(&format!("the reply could not be admitted: {error}")),
    };
    if replies.is_empty() {
        let state = host.projection();
        let pending: Vec<&str> = state
            .view()
            .active
            .iter()
            .filter(|question| matches!(state.standing(&question.call_id), Standing::Continued(_)))
            .map(|question| question.call_id.as_str())
            .collect();
        return CallToolResult::success(vec![ContentBlock::text(nothing_waiting(&pending))]);
    }
    CallToolResult::success(replies.iter().map(reply_block).collect())
}

/// The companion's result for `call_id` in the open session `host` (whose log is `log`), inside
/// the current turn, by where the call stands:
///
/// 1. a late reply for the call waits in the inbox: it is taken into the turn and admitted (the
///    settlement), and its text is the result;
/// 2. settled: the admitted reply's text again, from the log;
/// 3. continued (no reply yet): the pending result again;
/// 4. open (still in its foreground window), or not a question of this log: an error.
fn fetch(host: &Host, call_id: &CallId, log: &str) -> CallToolResult {
    match host.late().take(Some(call_id)) {
        Ok(replies) => {
            if let Some(reply) = replies.first() {
                return reply_result(reply);
            }
        }
        Err(error) => return error_result(&format!("the reply could not be admitted: {error}")),
    }
    match host.projection().standing(call_id) {
        // Taken by a concurrent call of the same session meanwhile: it is settled now.
        Standing::Settled(_) => settled_result(&**host.runtime().store(), log, call_id),
        Standing::Continued(_) => pending_result(host.runtime(), call_id),
        Standing::Open(_) => error_result(&format!(
            "call {call_id} is still waiting for its answer in the foreground; its own result brings the answer"
        )),
        Standing::Unknown => error_result(&format!(
            "call {call_id} is not a pending question of this server (legacy calls never take late answers)"
        )),
    }
}

/// The companion's result for a call of another session in the store (a session of an earlier
/// server process), found by the session UUID the call id carries. A settled question is answered
/// from a read-only load of that log; only a pending one, whose reply may wait in the log's inbox,
/// has the session opened, its queued reply admitted in a turn of its own, and given up. A call
/// the log shows open, whose server died in its window, is continued by that open's resume
/// repair first (another process's window still running refuses the open).
fn fetch_elsewhere(server: &ServerInner, call_id: &CallId) -> CallToolResult {
    let runtime = server.runtime();
    let store = runtime.store();
    let unknown = || unknown_call(call_id);
    let Some(log) = log_of_call(&**store, call_id) else {
        return unknown();
    };
    let state = match load_projection(&**store, &log, CheckpointPolicy::ReadOnly) {
        Ok(load) => load.state,
        Err(error) => {
            return error_result(&format!(
                "the session log of call {call_id} cannot be read: {error}"
            ));
        }
    };
    // A call open in the log whose server is gone (killed in the window) is continued by the
    // open's resume repair: opening the session makes it answerable, as `ask-user answer` does.
    let open_in_log = match state.standing(call_id) {
        Standing::Settled(_) => return settled_result(&**store, &log, call_id),
        Standing::Unknown => return unknown(),
        Standing::Open(_) => true,
        Standing::Continued(_) => false,
    };
    let options = SessionOptions::named(ask_user_host::new_session_id());
    let host = match runtime.open(&log, options) {
        Ok((host, _)) => host,
        Err(error) if open_in_log => {
            return error_result(&format!(
                "call {call_id} is still waiting for its answer in the foreground of another process ({error}); its own result brings the answer"
            ));
        }
        Err(error) => {
            return error_result(&format!(
                "the session of call {call_id} cannot be opened now: {error}"
            ));
        }
    };
    if !matches!(host.projection().standing(call_id), Standing::Continued(_)) {
        return unknown();
    }
    // A reply waiting in that session's inbox is settled in a turn of its own; else the
    // question is still pending.
    let result = match host.late().settle(call_id) {
        Ok(Some(reply)) => reply_result(&reply),
        Ok(None) => pending_result(runtime, call_id),
        Err(error) => error_result(&format!(
            "the session log of call {call_id} failed: {error}"
        )),
    };
    if let Err(error) = host.checkpoint() {
        tracing::warn!(%error, %log, "the checkpoint could not be refreshed");
    }
    result
}

/// A task this process does not hold (another instance's, or one from before a restart), as its
/// session's log shows it: settled, its result; continued, the pending result; open, `working`.
/// `None` when no session of the store has the call.
pub(crate) fn task_from_log(
    server: &ServerInner,
    call_id: &CallId,
) -> Option<rmcp::model::DetailedTask> {
    let runtime = server.runtime();
    let store = runtime.store();
    let log = log_of_call(&**store, call_id)?;
    let state = load_projection(&**store, &log, CheckpointPolicy::ReadOnly)
        .ok()?
        .state;
    let id = call_id.as_str();
    let now = std::time::SystemTime::now();
    let task = crate::tasks::task_of(id, now, now);
    // A call that went pending keeps its pending result as the task's, however it was answered
    // later (the companion delivers that answer); one answered in its window, its answers.
    let answered_late = || admitted(&**store, &log, call_id).is_some_and(|(_, late)| late);
    let payload = match state.standing(call_id) {
        Standing::Settled(_) if !answered_late() => rmcp::model::TaskPayload::Completed {
            result: crate::tasks::as_object(&settled_result(&**store, &log, call_id)),
        },
        Standing::Settled(_) | Standing::Continued(_) => rmcp::model::TaskPayload::Completed {
            result: crate::tasks::as_object(&pending_result(runtime, call_id)),
        },
        Standing::Open(_) => rmcp::model::TaskPayload::Working,
        Standing::Unknown => return None,
    };
    Some(rmcp::model::DetailedTask::new(task, payload))
}

/// The companion's answer for a call it does not know (or may not see: the same words).
fn unknown_call(call_id: &CallId) -> CallToolResult {
    error_result(&format!(
        "call {call_id} is not a question of any session of this server"
    ))
}

/// The log of the session whose UUID `call_id` carries (`call_<uuid>_<n>`): the store's log
/// named `mcp-<time>-<uuid>.jsonl`. The one way this server finds which session holds a call.
pub(crate) fn log_of_call(store: &dyn SessionStore, call_id: &CallId) -> Option<String> {
    let (simple, _) = crate::auth::call_parts(call_id.as_str())?;
    let uuid = uuid::Uuid::try_parse(simple).ok()?;
    let suffix = format!("-{}.jsonl", uuid.hyphenated());
    let names = store.list().ok()?;
    names
        .into_iter()
        .find(|name| name.starts_with("mcp-") && name.ends_with(&suffix))
}

/// The result for a settled call: the text of the reply that settled it, or, for a question
/// answered in its foreground window, its own tool result.
fn settled_result(store: &dyn SessionStore, log: &str, call_id: &CallId) -> CallToolResult {
    match admitted_text(store, log, call_id) {
        Some(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        None => error_result(&format!(
            "call {call_id} is settled, but its answer cannot be read back from the session log"
        )),
    }
}

/// The pending result again, as the tool renders it over MCP: its notice says to call the
/// companion later (one text block).
fn pending_result(runtime: &HostRuntime, call_id: &CallId) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(
        runtime.tool().pending_outcome(call_id).text,
    )])
}

fn reply_result(message: &user_questions::UserMessage) -> CallToolResult {
    CallToolResult::success(vec![reply_block(message)])
}

/// A late reply's text as one content block.
fn reply_block(message: &user_questions::UserMessage) -> ContentBlock {
    let text = message
        .content
        .iter()
        .find_map(user_questions::ContentBlock::as_text)
        .unwrap_or_default();
    ContentBlock::text(text)
}

/// The text that settled `call_id`, read from the log's typed events: the `user/message` reply
/// that settled it, else (a question answered in its foreground window) the text of its
/// `tool/result` (both JSON objects, which the reader keeps).
fn admitted_text(store: &dyn SessionStore, log: &str, call_id: &CallId) -> Option<String> {
    admitted(store, log, call_id).and_then(|(text, _)| text)
}

/// What settled `call_id` ([`admitted_text`]), and whether a late reply did (the call was
/// continued before it); `None` when the log cannot be read.
fn admitted(
    store: &dyn SessionStore,
    log: &str,
    call_id: &CallId,
) -> Option<(Option<String>, bool)> {
    struct Find<'a> {
        call_id: &'a CallId,
        /// Whether a reply for the call was seen; the first one settled it.
        replied: bool,
        /// The JSON text of that first reply, if it holds one.
        reply: Option<String>,
        result: Option<String>,
    }
    impl LogVisitor for Find<'_> {
        fn line(&mut self, line: &Scanned<'_>) {
            let Scanned::Record(record) = line else {
                return;
            };
            let Some(event) = record.record.event() else {
                return;
            };
            match &event.body {
                EventBody::UserMessage(message)
                    if message.reply_call_id() == Some(self.call_id) && !self.replied =>
                {
                    self.replied = true;
                    self.reply.clone_from(&message.text.json);
                }
                EventBody::ToolResult(result) if result.call_id.as_ref() == Some(self.call_id) => {
                    self.result.clone_from(&result.text.json);
                }
                _ => {}
            }
        }
    }
    let mut find = Find {
        call_id,
        replied: false,
        reply: None,
        result: None,
    };
    store.read(log, &mut find).ok()?;
    // A reply settled it: its text, or nothing when it holds no JSON (never the pending result
    // its call ended with).
    Some(if find.replied {
        (find.reply, true)
    } else {
        (find.result, false)
    })
}
