//! The session-log reader and the fold: any bytes as a log. Nothing may panic or overflow the
//! stack; a clean fold's state must survive its own checkpoint round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use user_questions_projection::{fold_log, restore};

fuzz_target!(|data: &[u8]| {
    if let Ok(folded) = fold_log(data) {
        let json = folded.state.to_json();
        let restored = restore(&json).expect("a fold's own state restores");
        assert_eq!(restored, folded.state);
    }
});
