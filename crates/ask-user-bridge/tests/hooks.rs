//! The bridge's hooks in Claude Code's settings: installed once however often asked, and
//! uninstalled to the file as it was, byte for byte (SPEC §9.7, N6).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use ask_user_bridge::{FoundHook, Hooks, HooksError, HooksReport, ListedHook, Scope};
use native_asks::Agent;
use serde_json::{Value, json};

/// A user's settings as Claude Code writes them (two-space JSON), with a hook of their own.
const THEIRS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(git status)"
    ]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit",
        "hooks": [
          {
            "type": "command",
            "command": "prettier --write"
          }
        ]
      }
    ]
  }
}
"#;

fn found(event: &str, command: &str, trust: Option<&str>) -> FoundHook {
    FoundHook {
        event: event.into(),
        command: command.into(),
        trust: trust.map(str::to_owned),
    }
}

fn hooks(home: &Path, state: &Path) -> Hooks {
    Hooks::of(Agent::ClaudeCode, Scope::User, Some(home), home, state).unwrap()
}

/// A home whose settings are [`THEIRS`], and the bridge's hooks of it.
fn theirs() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
    Hooks,
) {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let file = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, THEIRS).unwrap();
    let hooks = hooks(home.path(), state.path());
    (home, state, file, hooks)
}

fn settings(home: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(home.join(".claude/settings.json")).unwrap())
        .unwrap()
}

#[test]
fn n6_install_twice_then_uninstall_leaves_the_settings_byte_identical() {
    let (home, _state, file, hooks) = theirs();
    assert_eq!(hooks.install("ask-user").unwrap(), HooksReport::Installed);
    let installed = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        hooks.install("/other/ask-user").unwrap(),
        HooksReport::AlreadyInstalled
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);
    let settings = settings(home.path());
    assert_eq!(settings["model"], "opus", "theirs kept");
    assert_eq!(
        settings["hooks"]["PermissionRequest"],
        json!([{"matcher": "*", "hooks": [{"type": "command", "command": "ask-user hook claude-code", "timeout": 86400}]}])
    );
    let post = settings["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post.len(), 2, "their hook and ours");
    assert_eq!(post[0]["matcher"], "Edit");
    assert_eq!(
        hooks.status(None).unwrap(),
        HooksReport::Status {
            found: vec![
                found("PostToolUse", "ask-user hook claude-code", None),
                found("PermissionRequest", "ask-user hook claude-code", None),
                found("Notification", "ask-user hook claude-code", None),
            ]
        }
    );
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: true }
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), THEIRS);
    assert_eq!(hooks.uninstall().unwrap(), HooksReport::NotInstalled);
    assert_eq!(hooks.status(None).unwrap(), HooksReport::NotInstalled);
}

#[test]
fn a_file_that_was_not_there_is_not_there_after() {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let hooks = hooks(home.path(), state.path());
    hooks.install("ask-user").unwrap();
    assert!(hooks.settings().exists());
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: true }
    );
    assert!(!hooks.settings().exists());
}

#[test]
fn a_file_changed_since_keeps_the_change_and_loses_only_our_hooks() {
    let (home, _state, file, hooks) = theirs();
    hooks.install("ask-user").unwrap();
    // The person changes the model afterwards, as Claude Code would write it.
    let mut changed = settings(home.path());
    changed["model"] = json!("sonnet");
    std::fs::write(
        &file,
        format!("{}\n", serde_json::to_string_pretty(&changed).unwrap()),
    )
    .unwrap();
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: false }
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        THEIRS.replace("\"opus\"", "\"sonnet\""),
        "theirs kept, ours gone, nothing else moved"
    );
}

#[test]
fn a_project_installs_in_its_local_settings_and_a_broken_file_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let hooks = Hooks::of(
        Agent::ClaudeCode,
        Scope::Project,
        None,
        folder.path(),
        state.path(),
    )
    .unwrap();
    assert_eq!(
        hooks.settings(),
        folder.path().join(".claude/settings.local.json")
    );
    std::fs::create_dir_all(folder.path().join(".claude")).unwrap();
    std::fs::write(hooks.settings(), "{ not json").unwrap();
    let error = hooks.install("ask-user").unwrap_err();
    assert!(matches!(error, HooksError::Malformed { .. }), "{error}");
    assert_eq!(
        std::fs::read_to_string(hooks.settings()).unwrap(),
        "{ not json",
        "left as it was"
    );
    assert!(matches!(
        Hooks::of(
            Agent::ClaudeCode,
            Scope::User,
            None,
            folder.path(),
            state.path()
        ),
        Err(HooksError::NoHome)
    ));
    let codex = Hooks::of(
        Agent::Codex,
        Scope::Project,
        None,
        folder.path(),
        state.path(),
    );
    let codex = codex.unwrap();
    assert_eq!(codex.settings(), folder.path().join(".codex/config.toml"));
    std::fs::create_dir_all(folder.path().join(".codex")).unwrap();
    std::fs::write(codex.settings(), "model = [unclosed").unwrap();
    let error = codex.install("ask-user").unwrap_err();
    assert!(matches!(error, HooksError::Malformed { .. }), "{error}");
}

/// A Codex configuration as a person writes it: comments, a provider, and a hook of their own.
const CODEX_THEIRS: &str = r#"# my Codex
model = "gpt-5.4"
approval_policy = "on-request"

[model_providers.local]
base_url = "http://127.0.0.1:1/v1" # a comment kept
wire_api = "responses"

[[hooks.PermissionRequest]]
matcher = "Bash"

[[hooks.PermissionRequest.hooks]]
type = "command"
command = "/usr/local/bin/audit"
"#;

/// What Codex's `hooks/list` says of the bridge's hook in `file`.
fn listed(file: &Path, hash: &str, index: usize) -> ListedHook {
    ListedHook {
        key: format!("{}:permission_request:{index}:0", file.display()),
        command: "ask-user hook codex".into(),
        source_path: file.to_path_buf(),
        current_hash: hash.into(),
        trust_status: "untrusted".into(),
    }
}

fn codex(
    text: Option<&str>,
) -> (
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
    Hooks,
) {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let file = home.path().join("codex-home/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    if let Some(text) = text {
        std::fs::write(&file, text).unwrap();
    }
    let hooks = Hooks::of(
        Agent::Codex,
        Scope::User,
        Some(home.path()),
        home.path(),
        state.path(),
    );
    let hooks = hooks.unwrap().at(file.clone(), state.path());
    (home, state, file, hooks)
}

#[test]
fn n6_codex_install_and_trust_twice_then_uninstall_leaves_the_config_byte_identical() {
    let (_home, _state, file, hooks) = codex(Some(CODEX_THEIRS));
    assert_eq!(hooks.settings(), file);
    assert_eq!(hooks.install("ask-user").unwrap(), HooksReport::Installed);
    let trusted = hooks.trust(&[listed(&file, "sha256:abc", 1)]).unwrap();
    assert_eq!(
        trusted,
        vec![format!("{}:permission_request:1:0", file.display())]
    );
    let installed = std::fs::read_to_string(&file).unwrap();
    assert!(
        installed.starts_with(CODEX_THEIRS),
        "theirs kept as written:\n{installed}"
    );
    let parsed: toml::Table = toml::from_str(&installed).unwrap();
    let groups = parsed["hooks"]["PermissionRequest"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "their group and ours");
    assert_eq!(groups[1]["matcher"].as_str(), Some("*"));
    let ours = &groups[1]["hooks"][0];
    assert_eq!(ours["command"].as_str(), Some("ask-user hook codex"));
    assert_eq!(ours["timeout"].as_integer(), Some(90));
    let state = &parsed["hooks"]["state"][&trusted[0]];
    assert_eq!(state["trusted_hash"].as_str(), Some("sha256:abc"));
    // Again: nothing changes.
    assert_eq!(
        hooks.install("/elsewhere/ask-user").unwrap(),
        HooksReport::AlreadyInstalled
    );
    assert!(
        hooks
            .trust(&[listed(&file, "sha256:abc", 1)])
            .unwrap()
            .is_empty()
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);
    assert_eq!(
        hooks.status(None).unwrap(),
        HooksReport::Status {
            found: vec![found(
                "PermissionRequest",
                "ask-user hook codex",
                Some("trust recorded")
            )]
        }
    );
    let mut told = listed(&file, "sha256:abc", 1);
    told.trust_status = "trusted".into();
    assert_eq!(
        hooks.status(Some(&[told])).unwrap(),
        HooksReport::Status {
            found: vec![found(
                "PermissionRequest",
                "ask-user hook codex",
                Some("trusted")
            )]
        }
    );
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: true }
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), CODEX_THEIRS);
}

#[test]
fn n6_codex_config_changed_since_loses_only_the_bridge_hook_and_its_trust() {
    let (_home, _state, file, hooks) = codex(None);
    assert_eq!(hooks.install("ask-user").unwrap(), HooksReport::Installed);
    hooks.trust(&[listed(&file, "sha256:abc", 0)]).unwrap();
    // The person changes the file since: a setting of theirs, kept by the uninstall.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n[tui]\nnotifications = true\n");
    std::fs::write(&file, &text).unwrap();
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: false }
    );
    let left: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(left.get("hooks"), None, "ours and our trust gone: {left:?}");
    assert_eq!(left["tui"]["notifications"].as_bool(), Some(true));
}

#[test]
fn codex_hooks_written_as_inline_arrays_take_the_bridge_the_same_way() {
    let inline = "[hooks]\nPermissionRequest = [{ matcher = \"Bash\", hooks = [{ type = \"command\", command = \"audit\" }] }]\n";
    let (_home, _state, file, hooks) = codex(Some(inline));
    assert_eq!(hooks.install("ask-user").unwrap(), HooksReport::Installed);
    let parsed: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let groups = parsed["hooks"]["PermissionRequest"].as_array().unwrap();
    assert_eq!(
        groups[1]["hooks"][0]["command"].as_str(),
        Some("ask-user hook codex")
    );
    // Someone else's edit: only the bridge's group goes.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("audit", "audit2");
    std::fs::write(&file, &text).unwrap();
    hooks.uninstall().unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        inline.replace("audit", "audit2")
    );
}

#[test]
fn n6_gemini_notification_hook_installed_once_and_uninstalled_byte_identical() {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let file = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let theirs = "{\n  \"theme\": \"Dracula\"\n}\n";
    std::fs::write(&file, theirs).unwrap();
    let hooks = Hooks::of(
        Agent::Gemini,
        Scope::User,
        Some(home.path()),
        home.path(),
        state.path(),
    );
    let hooks = hooks.unwrap();
    assert_eq!(hooks.settings(), file);
    assert_eq!(hooks.install("ask-user").unwrap(), HooksReport::Installed);
    assert_eq!(
        hooks.install("ask-user").unwrap(),
        HooksReport::AlreadyInstalled
    );
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(settings["theme"], "Dracula");
    assert_eq!(
        settings["hooks"],
        json!({"Notification": [{"matcher": "*", "hooks": [
            {"name": "ask-user", "type": "command", "command": "ask-user hook gemini", "timeout": 30000}
        ]}]})
    );
    assert_eq!(
        hooks.status(None).unwrap(),
        HooksReport::Status {
            found: vec![found("Notification", "ask-user hook gemini", None)]
        }
    );
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: true }
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);
}
