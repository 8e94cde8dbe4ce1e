//! What each registry reads, made from the one version: the npm launcher's and platform
//! packages' `package.json`, the Claude Desktop bundle's `manifest.json`, and the MCP Registry's
//! `server.json` with the registry's rules checked.

use serde_json::{Value, json};

use super::platform::{PLATFORMS, Platform};
use super::release::{BINARY, DESCRIPTION, MCP_NAME, NPM_SCOPE, PACKAGE};

/// The MCP Registry schema `server.json` follows.
pub const SERVER_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

/// The arguments every runner line passes: the MCP server, with the timed tool.
pub const SERVER_ARGS: &[&str] = &["mcp", "--mode", "timed"];

/// The license every package declares (the workspace's).
const LICENSE: &str = "MIT";

/// The launcher's `package.json`: the `ask-user` command, each platform package an optional
/// dependency of this exact version (npm installs the one whose `os`, `cpu` and `libc` fit).
#[must_use]
pub fn npm_launcher(version: &str) -> Value {
    let optional: serde_json::Map<String, Value> = PLATFORMS
        .iter()
        .map(|p| (npm_name(p), Value::from(version)))
        .collect();
    json!({
        "name": PACKAGE,
        "version": version,
        "description": DESCRIPTION,
        "license": LICENSE,
        "mcpName": MCP_NAME,
        "keywords": ["mcp", "mcp-server", "human-in-the-loop", "agent", "llm"],
        "bin": { BINARY: "bin/ask-user.js" },
        "files": ["bin/ask-user.js", "README.md"],
        "engines": { "node": ">=18" },
        "optionalDependencies": optional,
    })
}

/// The npm name of a platform's package.
#[must_use]
pub fn npm_name(platform: &Platform) -> String {
    format!("{NPM_SCOPE}/{}", platform.npm)
}

/// A platform package's `package.json`: the binary only, installed where its `os`, `cpu` and
/// `libc` fit.
#[must_use]
pub fn npm_platform(version: &str, platform: &Platform) -> Value {
    let mut package = json!({
        "name": npm_name(platform),
        "version": version,
        "description": format!("The {BINARY} binary for {} {}: installed by the `{PACKAGE}` package.", platform.os, platform.cpu),
        "license": LICENSE,
        "os": [platform.os],
        "cpu": [platform.cpu],
        "files": [format!("bin/{}", platform.exe)],
        "preferUnplugged": true,
    });
    if let Some(libc) = platform.libc {
        package["libc"] = json!([libc]);
    }
    package
}

/// The Claude Desktop bundle's `manifest.json` for `platform`: the binary as the server, the
/// mode and the window as the person's settings.
#[must_use]
pub fn mcpb_manifest(version: &str, platform: &Platform) -> Value {
    let entry = format!("server/{}", platform.exe);
    json!({
        "manifest_version": "0.3",
        "name": PACKAGE,
        "display_name": "ask-user",
        "version": version,
        "description": DESCRIPTION,
        "long_description": "The model asks you with the `ask_user_question` tool. In timed mode the question waits in Claude's form for its window; if you are away it goes pending, the model works on, and your later answer reaches it through `ask_user_question_answer`. `ask-user inbox` puts every agent's questions on one page and on your phone.",
        "author": { "name": "ask-user contributors" },
        "license": LICENSE,
        "keywords": ["human-in-the-loop", "questions", "approvals"],
        "server": {
            "type": "binary",
            "entry_point": entry,
            "mcp_config": {
                "command": format!("${{__dirname}}/{entry}"),
                "args": ["mcp", "--mode", "${user_config.mode}", "--timeout", "${user_config.timeout}"],
            },
        },
        "tools": [
            { "name": "ask_user_question", "description": "Ask the user one to four questions, each with options or free text." },
            { "name": "ask_user_question_answer", "description": "In timed mode: the answer to a question that went pending." },
        ],
        "compatibility": { "platforms": [platform.os] },
        "user_config": {
            "mode": {
                "type": "string",
                "title": "Mode",
                "description": "timed: a question waits its window, then goes pending and stays answerable; legacy: the tool waits until you answer.",
                "default": "timed",
                "required": false,
            },
            "timeout": {
                "type": "number",
                "title": "Window (seconds)",
                "description": "How long a timed question waits in the form before it goes pending (1 to 2147483).",
                "default": tool_ask_user::DEFAULT_TIMEOUT_SECS,
                "min": 1,
                "max": tool_ask_user::MAX_TIMEOUT_SECS,
                "required": false,
            },
        },
    })
}

/// The MCP Registry's `server.json`: the npm and PyPI packages of this version, each run over
/// stdio with [`SERVER_ARGS`].
#[must_use]
pub fn server_json(version: &str) -> Value {
    let arguments: Vec<Value> = vec![
        json!({ "type": "positional", "value": "mcp", "valueHint": "command" }),
        json!({
            "type": "named",
            "name": "--mode",
            "value": "timed",
            "description": "timed: a question goes pending after its window and stays answerable",
        }),
    ];
    let package = |registry: &str, runtime: &str| {
        json!({
            "registryType": registry,
            "identifier": PACKAGE,
            "version": version,
            "runtimeHint": runtime,
            "transport": { "type": "stdio" },
            "packageArguments": arguments,
        })
    };
    json!({
        "$schema": SERVER_SCHEMA,
        "name": MCP_NAME,
        "description": DESCRIPTION,
        "version": version,
        "packages": [package("npm", "npx"), package("pypi", "uvx")],
    })
}

/// The registry's rules for `server.json` that this file can break, each one broken said (the
/// publisher's own check is the last word: docs/release.md).
#[must_use]
pub fn server_json_problems(server: &Value, version: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let text = |key: &str| server.get(key).and_then(Value::as_str).unwrap_or_default();
    let name = text("name");
    let (namespace, short) = name.split_once('/').unwrap_or_default();
    let name_chars = |s: &str, extra: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    };
    if !(name_chars(namespace, ".-") && name_chars(short, "._-") && name.len() <= 200) {
        problems.push(format!("name {name:?} is not reverse DNS with one slash"));
    }
    if text("$schema") != SERVER_SCHEMA {
        problems.push(format!("$schema is not {SERVER_SCHEMA}"));
    }
    let description = text("description").chars().count();
    if !(1..=100).contains(&description) {
        problems.push(format!(
            "description has {description} characters (1 to 100)"
        ));
    }
    if text("version") != version {
        problems.push(format!("version is not {version}"));
    }
    let packages = server.get("packages").and_then(Value::as_array);
    for (i, package) in packages.into_iter().flatten().enumerate() {
        let field = |key: &str| package.get(key).and_then(Value::as_str).unwrap_or_default();
        if !matches!(field("registryType"), "npm" | "pypi") {
            problems.push(format!("package {i}: registryType is not npm or pypi"));
        }
        if field("identifier") != PACKAGE {
            problems.push(format!("package {i}: identifier is not {PACKAGE}"));
        }
        let package_version = field("version");
        let range = package_version.starts_with(['^', '~', '>', '<', '='])
            || package_version.contains(['x', '*'])
            || package_version == "latest";
        if package_version != version || range {
            problems.push(format!(
                "package {i}: version {package_version:?} is not exactly {version}"
            ));
        }
        if package.pointer("/transport/type").and_then(Value::as_str) != Some("stdio") {
            problems.push(format!("package {i}: transport is not stdio"));
        }
        let named_without_name = (package.get("packageArguments").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .any(|a| a["type"] == "named" && a.get("name").is_none());
        if named_without_name {
            problems.push(format!("package {i}: a named argument has no name"));
        }
    }
    if packages.is_none_or(Vec::is_empty) {
        problems.push("no packages".to_owned());
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::platform::of_target;

    #[test]
    fn the_server_json_names_both_packages_of_this_version() {
        let server = server_json("1.2.3");
        assert_eq!(server_json_problems(&server, "1.2.3"), Vec::<String>::new());
        let registries: Vec<&str> = server["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["registryType"].as_str().unwrap())
            .collect();
        assert_eq!(registries, ["npm", "pypi"]);
        insta::assert_json_snapshot!("server_json", server);
    }

    #[test]
    fn a_server_json_that_breaks_the_registry_rules_is_refused() {
        let mut server = server_json("1.2.3");
        server["name"] = json!("ask-user");
        server["description"] = json!("x".repeat(101));
        server["packages"][0]["version"] = json!("^1.2.3");
        server["packages"][1]["transport"] = json!({ "type": "sse" });
        let problems = server_json_problems(&server, "1.2.3");
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(server_json_problems(&server_json("1.2.3"), "1.2.4")[0].contains("version"));
    }

    #[test]
    fn the_launcher_depends_on_every_platform_package_of_its_version() {
        let launcher = npm_launcher("1.2.3");
        assert_eq!(launcher["mcpName"], MCP_NAME);
        let optional = launcher["optionalDependencies"].as_object().unwrap();
        assert_eq!(optional.len(), PLATFORMS.len());
        assert!(optional.values().all(|v| v == "1.2.3"));
        let linux = npm_platform("1.2.3", of_target("x86_64-unknown-linux-gnu").unwrap());
        insta::assert_json_snapshot!("npm_linux_x64_gnu", linux);
        let windows = npm_platform("1.2.3", of_target("x86_64-pc-windows-msvc").unwrap());
        assert!(windows.get("libc").is_none());
        assert_eq!(windows["files"], json!(["bin/ask-user.exe"]));
    }

    #[test]
    fn the_bundle_exposes_the_mode_and_the_window() {
        let manifest = mcpb_manifest("1.2.3", of_target("x86_64-unknown-linux-gnu").unwrap());
        insta::assert_json_snapshot!("mcpb_linux_x64", manifest);
    }
}
