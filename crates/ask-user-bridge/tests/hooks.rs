//! The bridge's hooks in Claude Code's settings: installed once however often asked, and
//! uninstalled to the file as it was, byte for byte (SPEC §9.7, N6).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use ask_user_bridge::{Hooks, HooksError, HooksReport, Scope};
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
        hooks.status().unwrap(),
        HooksReport::Status {
            found: vec![
                ("PostToolUse".into(), "ask-user hook claude-code".into()),
                (
                    "PermissionRequest".into(),
                    "ask-user hook claude-code".into()
                ),
            ]
        }
    );
    assert_eq!(
        hooks.uninstall().unwrap(),
        HooksReport::Uninstalled { restored: true }
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), THEIRS);
    assert_eq!(hooks.uninstall().unwrap(), HooksReport::NotInstalled);
    assert_eq!(hooks.status().unwrap(), HooksReport::NotInstalled);
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
    assert!(matches!(error, HooksError::NotJson { .. }), "{error}");
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
    assert!(matches!(
        Hooks::of(Agent::Codex, Scope::User, None, folder.path(), state.path()),
        Err(HooksError::Unsupported(_))
    ));
}
