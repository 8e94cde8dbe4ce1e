//! The configuration file reader: any text as `config.toml`. Nothing may panic; an error is one
//! line that names the file, and never quotes a secret it could not read.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = std::path::Path::new("/fuzz/config.toml");
    if let Err(message) = ask_user_cli::cli::check_config_text(text, path) {
        assert!(!message.contains('\n'), "one line: {message:?}");
        assert!(message.contains("/fuzz/config.toml"), "names the file: {message:?}");
    }
});
