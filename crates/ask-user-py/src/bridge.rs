//! Rust futures as asyncio futures, and every call from a Rust thread into Python, through one
//! gate that the interpreter's exit closes.
//!
//! A tokio worker takes the interpreter's lock itself (to start a Python answerer, cancel one, end
//! a future): its holder gives it up within the switch interval (5 ms), less than a thread hop
//! would cost every call.
//!
//! A thread that is inside Python when the interpreter finalizes is ended there by the
//! interpreter, mid-call, and the Rust frames it unwinds crash the process (reproduced with
//! `pyo3-async-runtimes`, whose completions call into the event loop from a Rust thread at any
//! time). So every such call here goes through [`attach`], which counts the threads inside, and
//! the package's `atexit` hook calls [`shutdown`]: from then on no thread enters, and the hook
//! waits, the interpreter's lock released, until those inside have left.

use std::future::Future;
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// The runtime every host of the process runs on.
pub(crate) fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ask-user")
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("cannot start the ask-user runtime: {error}"))
    })
}

#[derive(Default)]
struct Gate {
    closing: bool,
    inside: usize,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    closing: false,
    inside: 0,
});
static LEFT: Condvar = Condvar::new();

/// Runs `f` with the interpreter, from any thread: `None` once the interpreter is exiting.
pub(crate) fn attach<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    {
        let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        if gate.closing {
            return None;
        }
        gate.inside += 1;
    }
    let result = Python::attach(f);
    let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    gate.inside -= 1;
    LEFT.notify_all();
    Some(result)
}

/// Closes the gate and waits, at most `within` seconds, for the threads inside to leave
/// (`atexit`).
#[pyfunction]
pub(crate) fn shutdown(py: Python<'_>, within: f64) {
    let within = Duration::try_from_secs_f64(within.max(0.0)).unwrap_or(Duration::ZERO);
    py.detach(|| {
        let deadline = Instant::now() + within;
        let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        gate.closing = true;
        while gate.inside > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            gate = LEFT
                .wait_timeout(gate, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    });
}

/// The running asyncio event loop (`asyncio.get_running_loop()`).
pub(crate) fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("asyncio")?.call_method0("get_running_loop")
}

/// What a future ends with: a value for Python (JSON text, or `None`), or `(code, message)`,
/// raised as `AskUserError` on the loop.
pub(crate) type Outcome = Result<Option<String>, (String, String)>;

/// Cancels a token when the asyncio future it is given to is cancelled (a done callback).
#[pyclass(module = "ask_user._native", frozen)]
pub struct CancelWith {
    token: CancellationToken,
}

#[pymethods]
impl CancelWith {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.token.cancel();
        }
        Ok(())
    }
}

/// An asyncio future on `event_loop` that `make(token)` resolves. Cancelling the asyncio future
/// cancels `token`; the Rust future runs to its end either way (it decides what a cancel means).
pub(crate) fn future<'py, F>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
    make: impl FnOnce(CancellationToken) -> F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome> + Send + 'static,
{
    let py_future = event_loop.call_method0("create_future")?;
    let token = CancellationToken::new();
    py_future.call_method1(
        "add_done_callback",
        (Py::new(
            py,
            CancelWith {
                token: token.clone(),
            },
        )?,),
    )?;
    let work = make(token);
    let (target, event_loop) = (py_future.clone().unbind(), event_loop.clone().unbind());
    runtime().spawn(async move {
        let outcome = work.await;
        // In the worker itself: a thread hop would cost more than the wait for the interpreter's
        // lock, which its holder gives up within the switch interval (5 ms).
        let deliver = move || {
            attach(|py| {
                let (value, error) = match outcome {
                    Ok(value) => (value, None),
                    Err(error) => (None, Some(error)),
                };
                let resolved = py
                    .import("ask_user._bridge")
                    .and_then(|m| m.getattr("resolve"))
                    .and_then(|resolve| {
                        event_loop.bind(py).call_method1(
                            "call_soon_threadsafe",
                            (resolve, target.bind(py), value, error),
                        )
                    });
                // A loop closed before the future ended: nobody awaits it any more.
                drop(resolved);
            });
        };
        deliver();
    });
    Ok(py_future)
}
