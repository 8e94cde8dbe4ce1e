//! The configuration file and `ask-user config`, end to end: the real binary, in an empty
//! environment with a throwaway `HOME` (and `XDG_CONFIG_HOME`, `XDG_STATE_HOME` where a test sets
//! them) in a temporary directory, so the developer's own configuration never takes part.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

/// A webhook secret (`whsec_` and the base64 of `super-secret-key-1`), its key, and other secrets
/// none of which may ever be printed.
const WEBHOOK_SECRET: &str = "whsec_c3VwZXItc2VjcmV0LWtleS0x";
const WEBHOOK_KEY: &str = "c3VwZXItc2VjcmV0LWtleS0x";
const NTFY_TOKEN: &str = "tk_ntfy_token_value_42";
const NTFY_TOPIC: &str = "private-topic-8f3e1c";
const PG_PASSWORD: &str = "hunter2-pg-password";
const MCP_TOKEN: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const MCP_TOKEN_2: &str = "aaaabbbbccccddddeeeeffff00001111";
/// Part of a webhook URL that can carry a credential (a Slack-style path).
const HOOK_PATH: &str = "T0000/B0000/path-token-xyz";

/// What a finished command left.
#[derive(Debug)]
struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Output {
    /// Asserts success and an empty stderr; returns stdout.
    #[track_caller]
    fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "{self:#?}");
        assert_eq!(self.stderr, "", "{self:#?}");
        &self.stdout
    }

    /// Asserts the usage exit status (2) and exactly one line on stderr,
    /// `error[BAD_CONFIG]: …`, and nothing on stdout; returns the message.
    #[track_caller]
    fn bad_config(&self) -> &str {
        assert_eq!(self.code, Some(2), "{self:#?}");
        assert_eq!(self.stdout, "", "{self:#?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one error line: {self:#?}");
        lines[0]
            .strip_prefix("error[BAD_CONFIG]: ")
            .unwrap_or_else(|| panic!("not a BAD_CONFIG error: {self:#?}"))
    }

    /// Asserts that no secret appears anywhere in what the command printed.
    #[track_caller]
    fn reveals_no_secret(&self) {
        for secret in [
            WEBHOOK_SECRET,
            WEBHOOK_KEY,
            NTFY_TOKEN,
            NTFY_TOPIC,
            PG_PASSWORD,
            HOOK_PATH,
            MCP_TOKEN,
            MCP_TOKEN_2,
        ] {
            assert!(!self.stdout.contains(secret), "{secret} in {self:#?}");
            assert!(!self.stderr.contains(secret), "{secret} in {self:#?}");
        }
    }
}

/// A throwaway home: `HOME` is `DIR/home`, `XDG_STATE_HOME` is `DIR/state`, nothing else is set
/// but what a test adds.
struct Home {
    dir: TempDir,
}

impl Home {
    fn new() -> Self {
        let home = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(home.home()).unwrap();
        home
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// `~/.config/ask-user/config.toml`.
    fn home_file(&self) -> PathBuf {
        self.home().join(".config/ask-user/config.toml")
    }

    /// Runs `ask-user ARGS` with the environment `vars` adds to the empty one.
    #[track_caller]
    fn run(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let output = Command::new(env!("CARGO_BIN_EXE_ask-user"))
            .args(args)
            .current_dir(self.root())
            .env_clear()
            .env("HOME", self.home())
            .env("XDG_STATE_HOME", self.root().join("state"))
            .envs(vars.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Output {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// `ask-user config`'s stdout, the temporary directory written `$TMP` (and a line that
    /// holds it aligned as though the directory had that name).
    #[track_caller]
    fn config(&self, args: &[&str], vars: &[(&str, &str)]) -> String {
        let mut all = args.to_vec();
        all.push("config");
        let root = self.root().to_str().unwrap();
        let mut text = String::new();
        for line in self.run(&all, vars).ok().lines() {
            let line = match line.split_once("  # from ") {
                Some((setting, source)) if setting.contains(root) => {
                    let setting = setting.trim_end().replace(root, "$TMP");
                    let source = source.replace(root, "$TMP");
                    format!("{setting:<40}  # from {source}")
                }
                _ => line.replace(root, "$TMP"),
            };
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    /// The error `ask-user --config FILE config` reports for a file of `text`, the file written
    /// `FILE`; asserts that it reveals no secret.
    #[track_caller]
    fn error_for(&self, text: &str) -> String {
        let file = write(self.root().join("bad.toml"), text);
        let out = self.run(&["--config", file.to_str().unwrap(), "config"], &[]);
        out.reveals_no_secret();
        out.bad_config().replace(file.to_str().unwrap(), "FILE")
    }
}

/// Writes `text` to `path` (directories made), readable by its owner alone as a file that may
/// hold secrets should be; returns the path.
fn write(path: PathBuf, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// The `# from …` comment of `key`'s line in a printout (the first such line).
#[track_caller]
fn source_of<'a>(printout: &'a str, key: &str) -> &'a str {
    printout
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .and_then(|l| l.split_once("# from "))
        .unwrap_or_else(|| panic!("no {key} line in\n{printout}"))
        .1
}

/// The value of `key`'s line in a printout (the first such line).
#[track_caller]
fn value_of<'a>(printout: &'a str, key: &str) -> &'a str {
    let line = printout
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no {key} line in\n{printout}"));
    line[key.len() + 3..]
        .split("  # from")
        .next()
        .unwrap()
        .trim()
}

// --- the printout --------------------------------------------------------------------------------

#[test]
fn without_a_file_every_setting_is_its_built_in_default() {
    let home = Home::new();
    assert_eq!(
        home.config(&[], &[]),
        r#"# The configuration in effect. A command-line flag overrides it.
# file: none ($TMP/home/.config/ask-user/config.toml from $HOME does not exist)

state_dir = "$TMP/state/ask-user/mcp"     # from built-in default
mode = "legacy"                           # from built-in default
timeout = 120                             # from built-in default

[web]
# addr: not set (127.0.0.1 on a free port)
# public_url: not set (the address served)
# tls_cert, tls_key: not set (plain HTTP)

[notify]
after = 10                                # from built-in default
text = false                              # from built-in default
bell = false                              # from built-in default
ignore_claims = false                     # from built-in default

# [notify.ntfy]: not set (no ntfy notifications)

# [[notify.webhooks]]: none

[pg]
# url: not set (log files, no database)
schema = "ask_user"                       # from built-in default

[mcp]
# tokens: not set (mcp --http serves loopback only)
# tls_cert, tls_key: not set (plain HTTP)
"#
    );
}

#[test]
fn every_setting_of_a_file_is_printed_with_its_line_and_secrets_masked() {
    let home = Home::new();
    write(
        home.home_file(),
        &format!(
            "\
# Every key.
state_dir = \"~/sessions\"
mode = \"timed\"
timeout = -1

[web]
addr = \"0.0.0.0:8766\"
public_url = \"http://192.168.1.20:8766\"
tls_cert = \"~/tls/cert.pem\"
tls_key = \"/etc/ask-user/key.pem\"

[notify]
after = 2.5
text = true
bell = true
ignore_claims = true

[notify.ntfy]
topic = \"{NTFY_TOPIC}\"
server = \"https://user:pw@ntfy.example:8443/\"
token = \"{NTFY_TOKEN}\"

[[notify.webhooks]]
url = \"https://hooks.example/{HOOK_PATH}\"
secret = \"{WEBHOOK_SECRET}\"

[pg]
url = \"postgres://ask:{PG_PASSWORD}@db.internal:5432/agents\"
schema = \"agents\"

[mcp]
tokens = [\"{MCP_TOKEN}\", \"{MCP_TOKEN_2}\"]
tls_cert = \"/etc/ask-user/mcp.pem\"
tls_key = \"/etc/ask-user/mcp.key\"
"
        ),
    );
    let out = home.run(&["config"], &[]);
    out.reveals_no_secret();
    let f = "$TMP/home/.config/ask-user/config.toml";
    assert_eq!(
        home.config(&[], &[]),
        format!(
            r#"# The configuration in effect. A command-line flag overrides it.
# file: {f} (from $HOME)

state_dir = "$TMP/home/sessions"          # from {f}:2
mode = "timed"                            # from {f}:3
timeout = -1                              # from {f}:4

[web]
addr = "0.0.0.0:8766"                     # from {f}:7
public_url = "http://192.168.1.20:8766"   # from {f}:8
tls_cert = "$TMP/home/tls/cert.pem"       # from {f}:9
tls_key = "/etc/ask-user/key.pem"         # from {f}:10

[notify]
after = 2.5                               # from {f}:13
text = true                               # from {f}:14
bell = true                               # from {f}:15
ignore_claims = true                      # from {f}:16

[notify.ntfy]
topic = "********"                        # from {f}:19
server = "https://ntfy.example:8443/"     # from {f}:20
token = "********"                        # from {f}:21

[[notify.webhooks]]
url = "https://hooks.example/…"           # from {f}:24
secret = "********"                       # from {f}:25

[pg]
url = "postgres://ask:********@db.internal:5432/agents"  # from {f}:28
schema = "agents"                         # from {f}:29

[mcp]
tokens = ["********", "********"]         # from {f}:32
tls_cert = "/etc/ask-user/mcp.pem"        # from {f}:33
tls_key = "/etc/ask-user/mcp.key"         # from {f}:34
"#
        )
    );
}

#[test]
fn a_setting_the_file_leaves_out_keeps_its_default() {
    let home = Home::new();
    write(home.home_file(), "[notify]\nbell = true\n");
    let printout = home.config(&[], &[]);
    assert_eq!(value_of(&printout, "bell"), "true");
    assert!(source_of(&printout, "bell").ends_with("config.toml:2"));
    assert_eq!(value_of(&printout, "text"), "false");
    assert_eq!(source_of(&printout, "text"), "built-in default");
    assert_eq!(source_of(&printout, "mode"), "built-in default");
}

// --- which file --------------------------------------------------------------------------------

#[test]
fn xdg_config_home_is_read_instead_of_home() {
    let home = Home::new();
    write(home.home_file(), "mode = \"legacy\"\ntimeout = 30\n");
    let xdg = home.root().join("xdg");
    write(xdg.join("ask-user/config.toml"), "mode = \"timed\"\n");
    let printout = home.config(&[], &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
    assert!(
        printout.contains("# file: $TMP/xdg/ask-user/config.toml (from $XDG_CONFIG_HOME)"),
        "{printout}"
    );
    assert_eq!(value_of(&printout, "mode"), "\"timed\"");
    assert_eq!(
        source_of(&printout, "mode"),
        "$TMP/xdg/ask-user/config.toml:1"
    );
    // One file is read, not a merge: HOME's timeout does not apply.
    assert_eq!(source_of(&printout, "timeout"), "built-in default");
}

#[test]
fn an_xdg_config_home_without_the_file_means_no_file_even_when_home_has_one() {
    let home = Home::new();
    write(home.home_file(), "mode = \"timed\"\n");
    let xdg = home.root().join("xdg");
    fs::create_dir_all(&xdg).unwrap();
    let printout = home.config(&[], &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
    assert!(
        printout.contains(
            "# file: none ($TMP/xdg/ask-user/config.toml from $XDG_CONFIG_HOME does not exist)"
        ),
        "{printout}"
    );
    assert_eq!(source_of(&printout, "mode"), "built-in default");
}

#[test]
fn an_empty_or_relative_xdg_config_home_is_ignored_for_home() {
    let home = Home::new();
    write(home.home_file(), "mode = \"timed\"\n");
    write(
        home.root().join("rel/ask-user/config.toml"),
        "timeout = 5\n",
    );
    for xdg in ["", "rel"] {
        let printout = home.config(&[], &[("XDG_CONFIG_HOME", xdg)]);
        assert!(printout.contains("(from $HOME)"), "{xdg:?}: {printout}");
        assert_eq!(value_of(&printout, "mode"), "\"timed\"", "{xdg:?}");
        assert_eq!(source_of(&printout, "timeout"), "built-in default");
    }
}

#[test]
fn the_config_flag_is_read_instead_of_xdg_config_home_before_or_after_the_command() {
    let home = Home::new();
    let xdg = home.root().join("xdg");
    write(xdg.join("ask-user/config.toml"), "mode = \"legacy\"\n");
    let mine = write(home.root().join("mine.toml"), "\n\nmode = \"timed\"\n");
    let vars = [("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
    let before = home.config(&["--config", mine.to_str().unwrap()], &vars);
    assert!(
        before.contains("# file: $TMP/mine.toml (from --config)"),
        "{before}"
    );
    assert_eq!(value_of(&before, "mode"), "\"timed\"");
    assert_eq!(source_of(&before, "mode"), "$TMP/mine.toml:3");
    // After the command, and relative to the working directory.
    let after = home
        .run(&["config", "--config", "mine.toml"], &vars)
        .ok()
        .to_owned();
    assert_eq!(value_of(&after, "mode"), "\"timed\"");
    assert_eq!(source_of(&after, "mode"), "mine.toml:3");
}

#[test]
fn a_config_file_the_flag_names_must_exist() {
    let home = Home::new();
    // Even with a default file there to fall back on.
    write(home.home_file(), "mode = \"timed\"\n");
    let out = home.run(&["--config", "missing.toml", "config"], &[]);
    let message = out.bad_config();
    assert!(
        message.starts_with("cannot read the configuration file missing.toml: "),
        "{message}"
    );
    let out = home.run(&["--config", ".", "config"], &[]);
    assert_eq!(
        out.bad_config(),
        ".: the configuration file is not a regular file (a directory)"
    );
}

#[test]
fn a_default_file_that_cannot_be_read_is_an_error() {
    let home = Home::new();
    // A directory where the file should be.
    fs::create_dir_all(home.home_file()).unwrap();
    let out = home.run(&["config"], &[]);
    assert!(
        out.bad_config().contains("config.toml"),
        "names the file: {out:#?}"
    );
}

// --- secrets -------------------------------------------------------------------------------------

#[test]
fn secrets_never_reach_stdout_or_stderr_even_with_debug_logging() {
    let home = Home::new();
    let file = write(
        home.home_file(),
        &format!(
            "\
[notify.ntfy]
topic = \"{NTFY_TOPIC}\"
token = \"{NTFY_TOKEN}\"

[[notify.webhooks]]
url = \"https://hooks.example/{HOOK_PATH}\"
secret = \"{WEBHOOK_SECRET}\"

[pg]
url = \"host=db.internal user=ask password={PG_PASSWORD} dbname=agents\"
"
        ),
    );
    for args in [&["config"][..], &["-vv", "config"], &["config", "--help"]] {
        let out = home.run(args, &[]);
        assert_eq!(out.code, Some(0), "{out:#?}");
        out.reveals_no_secret();
    }
    let printout = home.config(&[], &[]);
    assert_eq!(value_of(&printout, "secret"), "\"********\"");
    assert_eq!(value_of(&printout, "token"), "\"********\"");
    assert_eq!(value_of(&printout, "topic"), "\"********\"");
    assert_eq!(value_of(&printout, "url"), "\"https://hooks.example/…\"");
    // Of a connection string, only the password.
    assert!(
        printout.contains(
            "url = \"host=db.internal user=ask password=******** dbname=agents\"  # from "
        ),
        "{printout}"
    );
    // A file broken below its secrets: the error quotes none of them.
    let text = fs::read_to_string(&file).unwrap();
    let message = home.error_for(&format!("{text}\n[web]\naddr = 8766\n"));
    assert!(message.starts_with("FILE:13:8: "), "{message}");
}

#[test]
fn a_secret_of_the_wrong_type_or_under_a_wrong_key_is_not_quoted_in_the_error() {
    let home = Home::new();
    for (text, at) in [
        // A secret under a key that takes a boolean.
        (format!("[notify]\nbell = \"{NTFY_TOKEN}\"\n"), "FILE:2:8: "),
        // A secret without its quotes.
        (
            format!(
                "[[notify.webhooks]]\nurl = \"https://x.example\"\nsecret = {WEBHOOK_SECRET}\n"
            ),
            "FILE:3:10: ",
        ),
        // A webhook secret in the wrong form.
        (
            format!(
                "[[notify.webhooks]]\nurl = \"https://x.example\"\nsecret = \"{PG_PASSWORD}\"\n"
            ),
            "FILE:3:10: ",
        ),
        // A secret as a key.
        (format!("{WEBHOOK_SECRET} = 1\n"), "FILE:1:1: "),
    ] {
        let message = home.error_for(&text);
        assert!(message.starts_with(at), "{text}: {message}");
    }
}

#[test]
fn a_secret_from_the_environment_is_masked_and_names_its_variable_as_source() {
    let home = Home::new();
    write(
        home.home_file(),
        "\
[notify.ntfy]
topic_env = \"MY_TOPIC\"
token_env = \"MY_NTFY_TOKEN\"

[[notify.webhooks]]
url = \"https://hooks.example/a\"
secret_env = \"MY_HOOK_SECRET\"

[pg]
url_env = \"MY_DATABASE\"
",
    );
    let vars = [
        ("MY_TOPIC", NTFY_TOPIC),
        ("MY_NTFY_TOKEN", NTFY_TOKEN),
        ("MY_HOOK_SECRET", WEBHOOK_SECRET),
        (
            "MY_DATABASE",
            &format!("postgres://ask:{PG_PASSWORD}@db.internal/agents"),
        ),
    ];
    let out = home.run(&["config"], &vars);
    out.reveals_no_secret();
    let printout = out.ok();
    for (key, var) in [
        ("topic", "MY_TOPIC"),
        ("token", "MY_NTFY_TOKEN"),
        ("secret", "MY_HOOK_SECRET"),
        ("url = \"postgres", "MY_DATABASE"),
    ] {
        let line = printout
            .lines()
            .find(|l| l.starts_with(key) && l.contains(" = "))
            .unwrap_or_else(|| panic!("no {key} in {printout}"));
        assert!(line.ends_with(&format!("# from env {var}")), "{line}");
        assert!(line.contains("********"), "{line}");
    }
    assert!(
        printout.contains("url = \"postgres://ask:********@db.internal/agents\""),
        "{printout}"
    );
}

#[test]
fn a_secret_whose_variable_is_not_set_or_empty_leaves_its_table_out() {
    let home = Home::new();
    let file = write(
        home.root().join("c.toml"),
        "[[notify.webhooks]]\nurl = \"https://hooks.example/a\"\nsecret_env = \"MY_HOOK_SECRET\"\n",
    );
    let args = ["--config", file.to_str().unwrap(), "config"];
    // Not set, or empty: the webhook is left out (no command needs it), and said.
    let unset = home.run(&args, &[]).ok().to_owned();
    assert!(
        unset.contains(
            "# [[notify.webhooks]] left out: FILE:3:14: `secret_env`: the environment variable MY_HOOK_SECRET is not set"
                .replace("FILE", file.to_str().unwrap())
                .as_str()
        ),
        "{unset}"
    );
    assert!(unset.contains("# [[notify.webhooks]]: none"), "{unset}");
    let empty = home.run(&args, &[("MY_HOOK_SECRET", "")]).ok().to_owned();
    assert!(empty.contains("MY_HOOK_SECRET is empty"), "{empty}");
    // Set but not a webhook secret: the error names the variable, never its value.
    let wrong = home.run(&args, &[("MY_HOOK_SECRET", PG_PASSWORD)]);
    wrong.reveals_no_secret();
    assert!(
        wrong
            .bad_config()
            .contains("c.toml:3:14: the webhook secret in MY_HOOK_SECRET: "),
        "{wrong:#?}"
    );
}

#[test]
fn a_secret_given_both_in_the_file_and_by_a_variable_is_an_error() {
    let home = Home::new();
    let message = home.error_for(&format!(
        "[pg]\nurl = \"host=db password={PG_PASSWORD}\"\nurl_env = \"MY_DATABASE\"\n"
    ));
    assert_eq!(message, "FILE:3:11: give `url` or `url_env`, not both");
    let message = home.error_for("[pg]\nurl_env = \"NOT A NAME\"\n");
    assert_eq!(
        message,
        "FILE:2:11: `url_env` names an environment variable: letters, digits and '_'"
    );
}

// --- bad files -----------------------------------------------------------------------------------

#[test]
fn a_malformed_file_is_an_error_naming_the_file_and_line() {
    let home = Home::new();
    for (text, expected) in [
        (
            "mode = \"timed\"\n\n[web\naddr = \"127.0.0.1:1\"\n",
            "FILE:3:5: ",
        ),
        ("mode = \"timed\ntimeout = 5\n", "FILE:1:14: "),
        ("timeout = 5\ntimeout 6\n", "FILE:2:"),
        (
            "mode = \"timed\"\nmode = \"legacy\"\n",
            "FILE:2:1: duplicate key",
        ),
        // A table where an array of tables belongs.
        (
            "[notify.webhooks]\nurl = \"https://x.example\"\n",
            "FILE:1:1: invalid type: map, expected a sequence",
        ),
    ] {
        let message = home.error_for(text);
        assert!(message.starts_with(expected), "{text:?}: {message}");
    }
    // Not UTF-8.
    let file = write(home.root().join("latin1.toml"), "");
    fs::write(&file, b"mode = \"\xe9\"\n").unwrap();
    let out = home.run(&["--config", file.to_str().unwrap(), "config"], &[]);
    assert!(
        out.bad_config()
            .ends_with("latin1.toml: the configuration file is not UTF-8 text"),
        "{out:#?}"
    );
}

#[test]
fn an_unknown_key_is_an_error_naming_the_key_the_file_and_the_line() {
    let home = Home::new();
    for (text, expected) in [
        (
            "mode = \"timed\"\ncolour = \"blue\"\n",
            "FILE:2:1: unknown field `colour`, expected one of `state_dir`, `mode`, `timeout`, `web`, `notify`, `pg`, `mcp`",
        ),
        (
            "[notify]\nafter = 5\nbel = true\n",
            "FILE:3:1: unknown field `bel`, expected one of `after`, `text`, `bell`, `ignore_claims`, `ntfy`, `webhooks`",
        ),
        (
            "[web]\nport = 8766\n",
            "FILE:2:1: unknown field `port`, expected one of `addr`, `public_url`, `tls_cert`, `tls_key`",
        ),
        (
            "[[notify.webhooks]]\nurl = \"https://x.example\"\nsecrte = \"x\"\n",
            "FILE:3:1: unknown field `secrte`, expected one of `url`, `secret`, `secret_env`",
        ),
        (
            "[notify.ntfy]\ntopic = \"t\"\npassword = \"x\"\n",
            "FILE:3:1: unknown field `password`, expected one of `topic`, `topic_env`, `server`, `token`, `token_env`",
        ),
        (
            "[pg]\nhost = \"db\"\n",
            "FILE:2:1: unknown field `host`, expected one of `url`, `url_env`, `schema`",
        ),
        (
            "[database]\nurl = \"x\"\n",
            "FILE:1:2: unknown field `database`, expected one of `state_dir`, `mode`, `timeout`, `web`, `notify`, `pg`, `mcp`",
        ),
    ] {
        assert_eq!(home.error_for(text), expected, "{text:?}");
    }
}

#[test]
fn a_value_of_the_wrong_type_or_out_of_range_is_an_error_at_its_line() {
    let home = Home::new();
    for (text, expected) in [
        (
            "mode = \"fast\"\n",
            r#"FILE:1:8: `mode` takes "legacy" or "timed", in quotes"#,
        ),
        (
            "timeout = 0\n",
            "FILE:1:11: `timeout` is -1 (wait indefinitely) or 1 to 2147483 seconds",
        ),
        (
            "timeout = 1.5\n",
            "FILE:1:11: `timeout` takes a number of seconds without quotes: -1 (wait indefinitely) or 1 to 2147483",
        ),
        ("state_dir = \"\"\n", "FILE:1:13: `state_dir` is empty"),
        (
            "[web]\naddr = \"localhost\"\n",
            "FILE:2:8: `addr` is an IP address and a port, like `127.0.0.1:8766`",
        ),
        (
            "[web]\npublic_url = \"192.168.1.20:8766\"\n",
            "FILE:2:14: `public_url` is an http:// or https:// URL",
        ),
        (
            "[notify]\nafter = 86401\n",
            "FILE:2:9: `after` is 0 to 86400 seconds",
        ),
        (
            "[notify]\ntext = \"yes\"\n",
            "FILE:2:8: invalid type: string \"…\", expected a boolean",
        ),
        (
            "[notify.ntfy]\ntopic = \"no spaces\"\n",
            "FILE:2:9: notification configuration: an ntfy topic is 1 to 64 letters, digits, '-' or '_'",
        ),
        (
            "[notify.ntfy]\ntopic = \"t\"\nserver = \"ntfy.sh\"\n",
            "FILE:3:10: notification configuration: the ntfy server must be an http:// or https:// URL",
        ),
        (
            "[notify.ntfy]\nserver = \"https://ntfy.sh\"\n",
            "FILE:1:1: [notify.ntfy] needs `topic` or `topic_env`",
        ),
        (
            "[[notify.webhooks]]\nurl = \"https://x.example\"\n",
            "FILE:1:1: [[notify.webhooks]] needs `secret` or `secret_env`",
        ),
        (
            &format!("[[notify.webhooks]]\nsecret = \"{WEBHOOK_SECRET}\"\n"),
            "FILE:1:1: missing field `url`",
        ),
        (
            &format!(
                "[[notify.webhooks]]\nurl = \"ftp://x.example\"\nsecret = \"{WEBHOOK_SECRET}\"\n"
            ),
            "FILE:2:7: notification configuration: the webhook URL must be an http:// or https:// URL",
        ),
        ("[pg]\nurl = \" \"\n", "FILE:2:7: `url` is empty"),
        ("[pg]\nschema = \"\"\n", "FILE:2:10: `schema` is empty"),
    ] {
        assert_eq!(home.error_for(text), expected, "{text:?}");
    }
}

#[test]
fn control_characters_in_the_file_never_reach_the_terminal() {
    let home = Home::new();
    write(
        home.home_file(),
        "[web]\npublic_url = \"http://x.example/\\u001b]0;owned\\u0007\"\n[pg]\nschema = \"a\\u001b[2Jb\\u202e\"\n",
    );
    let printout = home.config(&[], &[]);
    assert!(
        !printout
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{printout:?}"
    );
    assert!(
        printout.contains(r#"schema = "a\u{1b}[2Jb\u{202e}""#),
        "{printout}"
    );
    // A URL is printed masked: its host, nothing of its path.
    assert!(
        printout.contains(r#"public_url = "http://x.example/…""#),
        "{printout}"
    );
}

#[test]
fn the_help_lists_the_config_command_and_the_global_option() {
    let home = Home::new();
    let top = home.run(&["--help"], &[]);
    let text = top.ok();
    assert!(text.contains("config"), "{text}");
    assert!(text.contains("--config <FILE>"), "{text}");
    let help = home.run(&["config", "--help"], &[]);
    let text = help.ok();
    assert!(text.contains("Example:"), "{text}");
    assert!(text.contains("ask-user config"), "{text}");
    // The global option is on every command's page.
    let ask = home.run(&["ask", "--help"], &[]);
    assert!(ask.ok().contains("--config <FILE>"), "{ask:#?}");
}

/// `[mcp]` and the TLS keys: a token that is too short or has other characters is named by its
/// place, never quoted; `tls_cert` and `tls_key` come together; `tokens_env` reads one or more
/// tokens from a variable, shown masked.
#[test]
fn mcp_tokens_and_tls_files_are_checked_and_never_quoted() {
    let home = Home::new();
    for (text, expected) in [
        (
            format!(
                "[mcp]\ntokens = [\"{MCP_TOKEN}\", \"{}\"]\n",
                &MCP_TOKEN_2[..20]
            ),
            "FILE:2:{col}: token 2 of `tokens`: a bearer token has 32 to 512 characters, this one 20",
        ),
        (
            format!("[mcp]\ntokens = [\"{MCP_TOKEN} x\"]\n"),
            "FILE:2:11: token 1 of `tokens`: a bearer token has letters, digits and `-._~+/` only (then `=` padding), e.g. the output of `openssl rand -hex 32`",
        ),
        (
            "[mcp]\ntokens = []\n".to_owned(),
            "FILE:2:10: `tokens` is empty: leave it out, or give one",
        ),
        (
            "[web]\ntls_key = \"/k.pem\"\n".to_owned(),
            "FILE:2:11: `tls_key` needs `tls_cert` beside it",
        ),
        (
            "[mcp]\ntls_cert = \"/c.pem\"\n".to_owned(),
            "FILE:2: `tls_cert` needs `tls_key` beside it",
        ),
    ] {
        let col = format!("[mcp]\ntokens = [\"{MCP_TOKEN}\", ").len() - "[mcp]\n".len() + 1;
        let expected = expected.replace("{col}", &col.to_string());
        assert_eq!(home.error_for(&text), expected, "{text:?}");
    }

    write(
        home.home_file(),
        "[mcp]\ntokens_env = \"ASK_USER_TEST_MCP_TOKENS\"\n",
    );
    let tokens = format!("{MCP_TOKEN}, {MCP_TOKEN_2}");
    let printout = home.config(&[], &[("ASK_USER_TEST_MCP_TOKENS", &tokens)]);
    assert_eq!(value_of(&printout, "tokens"), r#"["********", "********"]"#);
    assert_eq!(
        source_of(&printout, "tokens"),
        "env ASK_USER_TEST_MCP_TOKENS"
    );
    let out = home.run(&["config"], &[("ASK_USER_TEST_MCP_TOKENS", "short")]);
    assert!(
        out.bad_config().contains(
            "token 1 of env ASK_USER_TEST_MCP_TOKENS: a bearer token has 32 to 512 characters"
        ),
        "{out:?}"
    );
}

/// `mcp --http` beyond loopback without tokens does not start, and says what it needs; with a
/// certificate that cannot be read, it says which file.
#[test]
fn mcp_beyond_loopback_needs_bearer_tokens() {
    let home = Home::new();
    let out = home.run(&["mcp", "--http", "0.0.0.0:0"], &[]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("serving MCP beyond loopback needs bearer tokens"),
        "{out:?}"
    );
    let out = home.run(
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            "/nonexistent/cert.pem",
            "--tls-key",
            "/nonexistent/key.pem",
        ],
        &[],
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("error[BAD_TLS]: cannot read /nonexistent/cert.pem"),
        "{out:?}"
    );
}

/// A value of the wrong kind says what the key takes: text needs quotes, a number none.
#[test]
fn a_value_of_the_wrong_kind_says_what_the_key_takes() {
    let home = Home::new();
    assert_eq!(
        home.error_for("mode = timed\n"),
        r#"FILE:1:8: invalid boolean, expected `true`: text needs quotes, as in "timed""#
    );
    assert_eq!(
        home.error_for("mode = 1\n"),
        r#"FILE:1:8: `mode` takes "legacy" or "timed", in quotes"#
    );
    assert!(
        home.error_for("timeout = \"300\"\n")
            .starts_with("FILE:1:11: `timeout` takes a number of seconds without quotes"),
    );
}

// --- files that are not settings files ---------------------------------------------------------

/// A device, a FIFO, a file too large and a link to nothing are each a clear error, at once:
/// nothing is read without end, nothing hangs, and a dangling link at the default place is not
/// taken for "no file".
#[test]
fn only_a_regular_file_of_sensible_size_is_read() {
    let home = Home::new();
    let out = home.run(&["--config", "/dev/zero", "config"], &[]);
    assert!(
        out.bad_config()
            .ends_with("the configuration file is not a regular file (a device)"),
        "{out:#?}"
    );
    let fifo = home.root().join("fifo.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let out = home.run(&["--config", fifo.to_str().unwrap(), "config"], &[]);
    assert!(
        out.bad_config()
            .ends_with("the configuration file is not a regular file (a FIFO)"),
        "{out:#?}"
    );
    let big = write(home.root().join("big.toml"), &"# padding\n".repeat(200_000));
    let out = home.run(&["--config", big.to_str().unwrap(), "config"], &[]);
    assert!(
        out.bad_config()
            .ends_with("the configuration file is larger than 1024 KiB"),
        "{out:#?}"
    );
    fs::create_dir_all(home.home_file().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(home.root().join("gone.toml"), home.home_file()).unwrap();
    let out = home.run(&["config"], &[]);
    assert!(
        out.bad_config()
            .ends_with("the configuration file is a symbolic link to a file that does not exist"),
        "{out:#?}"
    );
}

/// Secrets in a file other users can read draw a warning naming the keys (never the values);
/// the same file readable by its owner alone, or one whose secrets come from the environment,
/// draws none.
#[test]
fn secrets_in_a_file_others_can_read_draw_a_warning() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = Home::new();
    let text = format!("[notify.ntfy]\ntopic = \"{NTFY_TOPIC}\"\ntoken = \"{NTFY_TOKEN}\"\n");
    let file = write(home.home_file(), &text);
    assert_eq!(home.run(&["config"], &[]).stderr, "");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    let out = home.run(&["config"], &[]);
    out.reveals_no_secret();
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert!(
        out.stderr.starts_with("warning: ")
            && out.stderr.contains("notify.ntfy.topic, notify.ntfy.token")
            && out.stderr.contains("chmod 600"),
        "{out:#?}"
    );
    write(home.home_file(), "[notify.ntfy]\ntopic_env = \"TOPIC\"\n");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(home.run(&["config"], &[("TOPIC", NTFY_TOPIC)]).stderr, "");
}

/// `[web] public_url` is printed without its user, password or query.
#[test]
fn the_public_url_is_printed_masked() {
    let home = Home::new();
    write(
        home.home_file(),
        "[web]\npublic_url = \"https://ana:pw-secret@inbox.example/?k=q-secret\"\n",
    );
    let printout = home.config(&[], &[]);
    let url = value_of(&printout, "public_url");
    assert_eq!(url, "\"https://inbox.example/…\"", "{printout}");
    assert!(!printout.contains("secret"), "{printout}");
}
