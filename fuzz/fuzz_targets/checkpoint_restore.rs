//! The checkpoint restore: any text as a saved projection state. Nothing may panic; what it
//! accepts round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use user_questions_projection::restore;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(state) = restore(text) {
        let again = restore(&state.to_json()).expect("its own output restores");
        assert_eq!(again, state);
    }
});
