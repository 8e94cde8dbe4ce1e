//! The late-reply recogniser: any JSON as a user message. Nothing may panic; a recognised reply
//! names its call.
#![no_main]

use libfuzzer_sys::fuzz_target;
use user_questions::UserMessage;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = serde_json::from_slice::<UserMessage>(data)
        && let Some(reply) = pending_answer::read_reply(&message)
    {
        assert!(pending_answer::is_reply_for(&message, &reply.call_id));
    }
});
