//! Definitions, schemas, configuration, registration and catalog metadata: SPEC §12.6 T1–T6 and
//! T23, the schema snapshots, the byte-identity check and the size measurement.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fmt::Write as _;

use common::*;
use serde_json::{Value, json};
use tool_ask_user::{
    ANSWER_TOOL_NAME, AskUserConfig, AskUserMode, AskUserTool, CATALOG, ConfigError,
    LateAnswerRoute, RegistryError, TOOL_NAME, ToolDefinition, ToolRegistry, definition,
};
use user_questions::ErrorCode;

fn legacy_definition() -> ToolDefinition {
    definition(&AskUserConfig::LEGACY).unwrap()
}

fn timed_definition(timeout: i64) -> ToolDefinition {
    definition(&AskUserConfig::timed_secs(timeout)).unwrap()
}

/// The timed definition worded for late answers through the companion tool (an MCP server).
fn timed_mcp_definition(timeout: i64) -> ToolDefinition {
    definition(
        &AskUserConfig::timed_secs(timeout).with_late_answers(LateAnswerRoute::CompanionTool),
    )
    .unwrap()
}

fn properties(definition: &ToolDefinition) -> &serde_json::Map<String, Value> {
    definition.parameters["properties"].as_object().unwrap()
}

fn timeout_description(definition: &ToolDefinition) -> &str {
    definition.parameters["properties"]["timeout"]["description"]
        .as_str()
        .unwrap()
}

/// The header entry a host logs for a definition, read back as the projection reads it.
fn header_tools(definitions: &[ToolDefinition]) -> Value {
    serde_json::from_str(&serde_json::to_string(definitions).unwrap()).unwrap()
}

#[test]
fn t1_no_config_registers_exactly_the_legacy_definition() {
    let w = world();
    let tool = AskUserTool::new(w.seam.clone(), None).unwrap();
    assert_eq!(tool.mode(), AskUserMode::Legacy);
    let registry = ToolRegistry::new();
    let _guard = tool.register(&registry).unwrap();
    let listed = registry.definitions();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, TOOL_NAME);
    assert!(!properties(&listed[0]).contains_key("timeout"));
    assert!(!listed[0].declares_timeout());
    assert_eq!(listed[0], legacy_definition());
    // A config read from `{}` is the same as no config.
    assert_eq!(
        AskUserConfig::from_json("{}").unwrap(),
        AskUserConfig::default()
    );
}

#[test]
fn t2_timed_declares_timeout_with_default_120() {
    let config = AskUserConfig::from_json(r#"{"mode":"timed"}"#).unwrap();
    assert_eq!(config, AskUserConfig::timed_secs(120));
    let timed = definition(&config).unwrap();
    assert!(properties(&timed).contains_key("timeout"));
    assert!(timed.declares_timeout());
    assert!(timeout_description(&timed).contains("(default 120)"));
}

#[test]
fn t3_timeout_description_states_the_configured_default() {
    let at_45 = timed_definition(45);
    assert!(timeout_description(&at_45).contains("(default 45)"));
    assert!(!timeout_description(&at_45).contains("(default 120)"));
    assert!(timeout_description(&timed_definition(-1)).contains("(default -1)"));
    assert!(timeout_description(&timed_definition(2_147_483)).contains("(default 2147483)"));
}

#[track_caller]
fn check_config(text: &str, expected: &Result<AskUserConfig, &str>) {
    let read = AskUserConfig::from_json(text);
    match (expected, &read) {
        (Ok(config), Ok(read)) => assert_eq!(read, config, "{text}"),
        (Err(fragment), Err(error)) => {
            let message = error.to_string();
            assert!(message.contains(fragment), "{text}: {message}");
        }
        _ => panic!("{text}: expected {expected:?}, got {read:?}"),
    }
}

#[test]
fn t4_invalid_configs_are_rejected() {
    let w = world();
    for timeout in [0, 2_147_484, -2, i64::MIN, i64::MAX] {
        for config in [
            AskUserConfig {
                mode: AskUserMode::Legacy,
                timeout,
                ..AskUserConfig::LEGACY
            },
            AskUserConfig::timed_secs(timeout),
        ] {
            let error = AskUserTool::new(w.seam.clone(), Some(config)).unwrap_err();
            assert_eq!(error, ConfigError::Timeout { timeout });
            assert!(error.to_string().contains("-1"), "{error}");
            assert!(error.to_string().contains("2147483"), "{error}");
            assert_eq!(definition(&config), Err(ConfigError::Timeout { timeout }));
        }
    }
    check_config(
        r#"{"mode":"timed","timeout":0}"#,
        &Err("invalid ask_user_question timeout 0"),
    );
    check_config(
        r#"{"timeout":2147484}"#,
        &Err("invalid ask_user_question timeout 2147484"),
    );
    check_config(r#"{"mode":"timed","wait":5}"#, &Err("unknown field `wait`"));
    check_config(r#"{"mode":"blocking"}"#, &Err("unknown variant `blocking`"));
    check_config(r#"{"timeout":"120"}"#, &Err("invalid type"));
    check_config("mode: timed", &Err("invalid ask_user_question config"));
    check_config(
        r#"{"mode":"legacy","timeout":-1}"#,
        &Ok(AskUserConfig {
            mode: AskUserMode::Legacy,
            timeout: -1,
            ..AskUserConfig::LEGACY
        }),
    );
    check_config(
        r#"{"mode":"timed","timeout":2147483}"#,
        &Ok(AskUserConfig::timed_secs(2_147_483)),
    );
    check_config(
        r#"{"mode":"timed","late_answers":"companion_tool"}"#,
        &Ok(AskUserConfig::timed_secs(120).with_late_answers(LateAnswerRoute::CompanionTool)),
    );
    check_config(
        r#"{"mode":"timed","late_answers":"user_message"}"#,
        &Ok(AskUserConfig::timed_secs(120)),
    );
    check_config(
        r#"{"mode":"timed","late_answers":"mcp"}"#,
        &Err("unknown variant `mcp`"),
    );
}

#[test]
fn t5_timed_schema_shape() {
    let timed = timed_definition(120);
    let p = &timed.parameters;
    assert_eq!(p["type"], "object");
    assert_eq!(
        properties(&timed).keys().collect::<Vec<_>>(),
        ["questions", "timeout"]
    );
    assert_eq!(p["properties"]["questions"]["type"], "array");
    assert_eq!(p["properties"]["timeout"]["type"], "integer");
    assert_eq!(p["required"], json!(["questions"]));
    let item = &p["properties"]["questions"]["items"];
    assert_eq!(item["type"], "object");
    let item_properties = item["properties"].as_object().unwrap();
    assert_eq!(
        item_properties.keys().collect::<Vec<_>>(),
        ["id", "question", "header", "options", "multi_select"]
    );
    for key in ["id", "question", "header"] {
        assert_eq!(item_properties[key]["type"], "string", "{key}");
    }
    assert_eq!(item_properties["options"]["type"], "array");
    assert_eq!(item_properties["multi_select"]["type"], "boolean");
    assert_eq!(item["required"], json!(["id", "question"]));
    let option = &item_properties["options"]["items"];
    let option_properties = option["properties"].as_object().unwrap();
    assert_eq!(
        option_properties.keys().collect::<Vec<_>>(),
        ["label", "description"]
    );
    assert_eq!(option_properties["label"]["type"], "string");
    assert_eq!(option_properties["description"]["type"], "string");
    assert_eq!(option["required"], json!(["label"]));
    let text = serde_json::to_string(p).unwrap();
    for absent in [
        "\"value\"",
        "\"recommended\"",
        "\"preview\"",
        "null",
        "$schema",
        "title",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
    // The same accepted arguments as legacy, apart from the root `timeout`: equal schemas once
    // the model-facing descriptions (worded per variant) are set aside.
    let mut stripped = p.clone();
    stripped["properties"]
        .as_object_mut()
        .unwrap()
        .remove("timeout");
    assert_eq!(
        without_descriptions(stripped),
        without_descriptions(legacy_definition().parameters)
    );
}

/// A schema without its `description` keywords: what it accepts, not what it tells the model. A
/// property that is *named* `description` (an option's) is part of what is accepted and stays.
fn without_descriptions(schema: Value) -> Value {
    strip(schema, false)
}

fn strip(schema: Value, is_properties_map: bool) -> Value {
    match schema {
        Value::Object(map) => map
            .into_iter()
            .filter(|(key, _)| is_properties_map || key != "description")
            .map(|(key, value)| {
                let value = strip(value, !is_properties_map && key == "properties");
                (key, value)
            })
            .collect(),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| strip(v, false)).collect()),
        other => other,
    }
}

/// Everything a definition tells the model in words: its description and every property's.
fn model_text(definition: &tool_ask_user::ToolDefinition) -> String {
    fn walk(schema: &Value, out: &mut String) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("description", Value::String(text)) => {
                            out.push('\n');
                            out.push_str(text);
                        }
                        _ => walk(value, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = definition.description.clone();
    walk(&definition.parameters, &mut out);
    out
}

/// What each definition must tell the model (the facts of the model-experience rewrite), in
/// whatever words the token budget allows: checked as phrases of the definition's own text.
#[test]
fn both_definitions_keep_every_fact_the_model_needs() {
    let common = [
        ("ask only when needed", "only when you need"),
        ("1-4 questions", "1-4"),
        (
            "each question's own id comes back",
            "Unique id, returned with its answer",
        ),
        ("a short header", "Short heading"),
        ("options, recommended first", "a recommended one first"),
        ("the recommended suffix", "\" (Recommended)\""),
        ("several choices", "Allow several choices"),
        (
            "what a skipped answer looks like",
            "Skipped: empty selected, no custom",
        ),
    ];
    let legacy = model_text(&legacy_definition());
    let timed = model_text(&timed_definition(120));
    for (fact, phrase) in common {
        assert!(legacy.contains(phrase), "legacy lacks {fact}: {phrase:?}");
        assert!(timed.contains(phrase), "timed lacks {fact}: {phrase:?}");
    }
    assert!(legacy.contains("wait for the answers"), "legacy blocks");
    // An option has a description (its property name says what it is for).
    for definition in [legacy_definition(), timed_definition(120)] {
        let option = &definition.parameters["properties"]["questions"]["items"]["properties"]["options"]
            ["items"]["properties"];
        assert_eq!(option["description"]["type"], "string");
    }
    for (fact, phrase) in [
        ("questions in the person's words", "in their words"),
        ("pending is not an answer", "Pending: no answer yet"),
        ("pending is not permission", "not permission"),
        (
            "only independent work while pending",
            "do only independent work",
        ),
        (
            "the late answer is a user message",
            "a late answer comes as a user message",
        ),
        ("the default window", "(default 120)"),
        (
            "-1 only when work needs the answer",
            "-1 (no limit) only if work needs the answer",
        ),
    ] {
        assert!(timed.contains(phrase), "timed lacks {fact}: {phrase:?}");
    }
}

#[test]
fn t6_legacy_definition_is_frozen() {
    let legacy = legacy_definition();
    insta::assert_json_snapshot!("legacy_definition", legacy);
    assert!(
        legacy.description.contains("wait for the answers"),
        "the legacy tool says it blocks: {}",
        legacy.description
    );
    assert!(!properties(&legacy).contains_key("timeout"));
    assert!(!is_timed_header(&header_tools(std::slice::from_ref(
        &legacy
    ))));
    assert!(is_timed_header(&header_tools(&[timed_definition(120)])));
    insta::assert_snapshot!(
        "legacy_parameters_compact",
        serde_json::to_string(&legacy.parameters).unwrap()
    );
}

#[test]
fn timed_schema_snapshots() {
    insta::assert_json_snapshot!("timed_definition_120", timed_definition(120));
    insta::assert_json_snapshot!("timed_definition_45", timed_definition(45));
    insta::assert_json_snapshot!("timed_definition_minus_1", timed_definition(-1));
}

#[test]
fn timed_mcp_schema_snapshots() {
    insta::assert_json_snapshot!("timed_mcp_definition_120", timed_mcp_definition(120));
    insta::assert_json_snapshot!("timed_mcp_definition_minus_1", timed_mcp_definition(-1));
}

/// Over MCP the timed definition differs from the timed one only in how it says a late answer
/// comes back: the same description, the same accepted arguments, `timeout` still declared (the
/// projection's timed marker), the same output schema; the `timeout` description names the
/// companion tool and the callId instead of a user message. The route never changes legacy.
#[test]
fn the_mcp_variant_differs_only_in_where_a_late_answer_comes_from() {
    let timed = timed_definition(120);
    let mcp = timed_mcp_definition(120);
    assert_eq!(mcp.name, timed.name);
    assert_eq!(mcp.description, timed.description);
    assert!(mcp.declares_timeout());
    assert!(is_timed_header(&header_tools(std::slice::from_ref(&mcp))));
    assert_eq!(mcp.output_schema, timed.output_schema);
    assert_eq!(
        without_descriptions(mcp.parameters.clone()),
        without_descriptions(timed.parameters.clone())
    );
    let mut rest_of_mcp = mcp.parameters.clone();
    let mut rest_of_timed = timed.parameters.clone();
    for schema in [&mut rest_of_mcp, &mut rest_of_timed] {
        schema["properties"]["timeout"]
            .as_object_mut()
            .unwrap()
            .remove("description");
    }
    assert_eq!(rest_of_mcp, rest_of_timed, "only the timeout text differs");
    let text = timeout_description(&mcp);
    for phrase in [
        ANSWER_TOOL_NAME,
        "the callId",
        "(default 120)",
        "do only independent work",
        "-1 (no limit) only if work needs the answer",
    ] {
        assert!(text.contains(phrase), "{phrase:?} not in {text:?}");
    }
    assert!(!text.contains("user message"), "{text}");
    assert!(timeout_description(&timed_mcp_definition(45)).contains("(default 45)"));
    // The route is ignored by legacy: the frozen definition, byte for byte.
    let legacy_routed =
        definition(&AskUserConfig::LEGACY.with_late_answers(LateAnswerRoute::CompanionTool))
            .unwrap();
    assert_eq!(
        serde_json::to_vec(&legacy_routed).unwrap(),
        serde_json::to_vec(&legacy_definition()).unwrap()
    );
}

#[test]
fn output_schema_snapshots() {
    insta::assert_json_snapshot!("legacy_output_schema", legacy_definition().output_schema);
    insta::assert_json_snapshot!("timed_output_schema", timed_definition(120).output_schema);
}

/// Keyword order inside every schema object (SPEC §5.2): `type, description,
/// additionalProperties, properties, required`; arrays `type, description, items`.
#[test]
fn schema_keyword_order_is_exact() {
    fn walk(schema: &Value, path: &str) {
        let Some(object) = schema.as_object() else {
            return;
        };
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        let order = [
            "type",
            "description",
            "additionalProperties",
            "properties",
            "required",
            "items",
        ];
        let positions: Vec<usize> = keys
            .iter()
            .map(|k| order.iter().position(|o| o == k).expect(k))
            .collect();
        assert!(positions.is_sorted(), "{path}: {keys:?}");
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                walk(property, &format!("{path}.{name}"));
            }
        }
        if let Some(items) = object.get("items") {
            walk(items, &format!("{path}[]"));
        }
    }
    walk(&legacy_definition().parameters, "legacy");
    walk(&timed_definition(120).parameters, "timed");
    walk(&timed_mcp_definition(120).parameters, "timed-mcp");
    let legacy = legacy_definition().parameters;
    assert_eq!(
        legacy.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "properties", "required"]
    );
}

/// Two independent builds serialise to identical bytes: no map-order or hash-order drift.
#[test]
fn definitions_are_byte_identical_across_builds() {
    for config in [
        AskUserConfig::LEGACY,
        AskUserConfig::timed_secs(120),
        AskUserConfig::timed_secs(-1),
        AskUserConfig::timed_secs(120).with_late_answers(LateAnswerRoute::CompanionTool),
    ] {
        let first = definition(&config).unwrap();
        let second = std::thread::spawn(move || definition(&config).unwrap())
            .join()
            .unwrap();
        for (a, b) in [
            (&first.parameters, &second.parameters),
            (&first.output_schema, &second.output_schema),
        ] {
            assert_eq!(
                serde_json::to_vec(a).unwrap(),
                serde_json::to_vec(b).unwrap()
            );
        }
        assert_eq!(
            serde_json::to_vec(&first).unwrap(),
            serde_json::to_vec(&second).unwrap()
        );
    }
}

/// The serialised definition is exactly `{name, description, parameters}` (SPEC §7.6).
#[test]
fn definition_serialises_as_a_header_tool_entry() {
    let timed = timed_definition(120);
    let entry: Value = serde_json::to_value(&timed).unwrap();
    assert_eq!(
        entry.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["name", "description", "parameters"]
    );
    assert_eq!(entry["parameters"], timed.parameters);
}

/// Schema sizes (SPEC §10; the reference's legacy schema is 1 079 bytes with a 111-character
/// description). Both descriptions must fit the 200-character catalog gate.
#[test]
fn schema_sizes_and_description_lengths() {
    let mut report = String::new();
    for (label, d) in [
        ("legacy", legacy_definition()),
        ("timed (default 120)", timed_definition(120)),
        ("timed over MCP (default 120)", timed_mcp_definition(120)),
    ] {
        let bytes = serde_json::to_string(&d.parameters).unwrap().len();
        let chars = d.description.chars().count();
        assert!(chars <= 200, "{label}: {chars} characters");
        writeln!(
            report,
            "{label}: parameters {bytes} bytes, description {chars} characters"
        )
        .unwrap();
    }
    insta::assert_snapshot!("schema_sizes", report);
}

#[test]
fn t23_dropping_the_guard_unlists_the_tool() {
    let w = world();
    let registry = ToolRegistry::new();
    let tool = w.timed(120);
    let guard = tool.register(&registry).unwrap();
    assert_eq!(registry.definitions().len(), 1);
    assert!(registry.get(TOOL_NAME).is_some());
    // Registering a second `ask_user_question` while one is listed is refused.
    let legacy = w.legacy();
    assert_eq!(
        legacy.register(&registry).unwrap_err(),
        RegistryError::DuplicateName(TOOL_NAME.to_owned())
    );
    drop(guard);
    assert!(registry.definitions().is_empty());
    assert!(registry.get(TOOL_NAME).is_none());
    // Dispose is idempotent, and a guard outliving its registry is harmless.
    let mut guard = legacy.register(&registry).unwrap();
    guard.dispose();
    guard.dispose();
    assert!(registry.definitions().is_empty());
    let orphan = legacy.register(&registry).unwrap();
    drop(registry);
    drop(orphan);
}

#[test]
fn catalog_metadata_matches_the_definitions() {
    assert_eq!(CATALOG.crate_name, "tool-ask-user");
    assert_eq!(CATALOG.tool_name, TOOL_NAME);
    let ids: Vec<_> = CATALOG.variants.iter().map(|v| v.id).collect();
    assert_eq!(ids, ["legacy", "timed", "timed-mcp"]);
    assert_eq!(CATALOG.variants[0].label, "legacy (default)");
    assert_eq!(CATALOG.variants[1].label, "timed (opt-in)");
    assert_eq!(CATALOG.variants[2].label, "timed over MCP (opt-in)");
    assert_eq!(
        CATALOG.variants[0].definition().unwrap(),
        legacy_definition()
    );
    assert_eq!(
        CATALOG.variants[1].definition().unwrap(),
        timed_definition(120)
    );
    assert_eq!(
        CATALOG.variants[2].definition().unwrap(),
        timed_mcp_definition(120)
    );
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.parent().unwrap().parent().unwrap();
    for variant in CATALOG.variants {
        assert!(
            workspace.join(variant.source_path).is_file(),
            "{}",
            variant.source_path
        );
        assert!(!variant.requires.is_empty());
        assert!(!variant.writes.is_empty());
        for code in variant.error_codes {
            assert!(!matches!(code, ErrorCode::Other(_)));
            assert!(!code.meaning().is_empty());
        }
    }
    assert!(CATALOG.note.contains("pending"));
    insta::assert_debug_snapshot!("catalog", CATALOG);
}
