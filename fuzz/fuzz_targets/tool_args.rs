//! The tool-argument reader: any text as the arguments of a legacy and a timed call. Nothing may
//! panic; the outcome is an error result or (with nobody to answer) `NO_PROVIDER` / pending.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tool_ask_user::{AskUserConfig, AskUserTool, ToolContext};
use user_questions::{HostBindings, UserQuestions, UserQuestionsConfig};

struct Fixture {
    runtime: tokio::runtime::Runtime,
    legacy: AskUserTool,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let seam = UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default())
            .expect("the default seam");
        let legacy = AskUserTool::new(seam, Some(AskUserConfig::default())).expect("legacy");
        Fixture { runtime, legacy }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(arguments) = std::str::from_utf8(data) else {
        return;
    };
    let fixture = fixture();
    // With no answerer registered, valid arguments end in NO_PROVIDER at once: the fuzzer spends
    // its time in the reader and the checks.
    let outcome = fixture.runtime.block_on(
        fixture
            .legacy
            .execute(arguments, ToolContext::new("call_fuzz")),
    );
    assert!(outcome.is_error || outcome.value.is_some());
    assert!(outcome.text.len() < 64 * 1024, "bounded error text");
});
