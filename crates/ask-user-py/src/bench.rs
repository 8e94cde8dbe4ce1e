//! The Rust side of the round-trip benchmark (`packaging/pypi/bench/round_trip.py`): the same
//! call as the Python one, on the same runtime, timed in the same process.

use std::time::Instant;

use ask_user_host::Host;
use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;
use tool_ask_user::AskUserConfig;
use user_questions::{AnswerItem, CallId};

/// Runs `n` calls of `arguments` on an in-memory timed host whose fixed answerer answers
/// `answers` (JSON answer items), each in a step of one turn as the Python loop does, and
/// returns the seconds they took.
#[pyfunction]
pub(crate) fn rust_round_trips(
    py: Python<'_>,
    n: usize,
    arguments: String,
    answers: &str,
) -> PyResult<f64> {
    let items: Vec<AnswerItem> =
        serde_json::from_str(answers).map_err(|e| crate::error::bad_json("answers", &e))?;
    py.detach(move || {
        let runtime = crate::bridge::runtime();
        let _enter = runtime.enter();
        let host =
            Host::in_memory(AskUserConfig::timed_secs(120)).map_err(|e| crate::error::host(&e))?;
        let _fixed = crate::answerer::fixed_on(host.seam(), items);
        host.begin_turn().map_err(|e| crate::error::host(&e))?;
        host.begin_step().map_err(|e| crate::error::host(&e))?;
        host.log_request_header()
            .map_err(|e| crate::error::host(&e))?;
        let started = Instant::now();
        runtime.block_on(async {
            for i in 0..n {
                let call = CallId::from(format!("rust-{i}").as_str());
                host.call_tool(&call, &arguments, CancellationToken::new())
                    .await
                    .map_err(|e| crate::error::host(&e))?;
            }
            Ok::<(), PyErr>(())
        })?;
        Ok(started.elapsed().as_secs_f64())
    })
}
