//! The catalog xtask, scenario by scenario (SPEC §12.9, K1–K6).
//!
//! The guards, the renderer and the check run on injected inputs: a demo tool that no crate
//! registers, fake `cargo metadata` output over temporary crates, temporary catalog files. Only
//! K1 (the real harvest) and the committed-catalog check read this repository.

// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::process::Command;

use serde_json::{Value, json};
use xtask::check::{self, Check, Difference};
use xtask::guards::{self, Ceiling, Exemption, Failure};
use xtask::model::{CrateCatalog, CrateHarvest, Definition, ErrorCodeDoc, Sample, ToolCrate};
use xtask::tokens::{self, DEFAULT_TOKEN_BUDGET, TokenBudget, Tokenizer, definition_json};
use xtask::workspace::{self, Marker, Member};
use xtask::{CATALOG_PATH, Inputs, generate, manifest, project_root, render};

// ---------------------------------------------------------------------------------------------
// Fixtures.

const DEMO_DESCRIPTION: &str = "Look up the weather for a city.";
const DEMO_SOURCE: &str = "crates/demo-tool/src/lib.rs";

/// The demo tool: one definition, so variant id and label are `default`.
fn demo(description: &str) -> Definition {
    Definition {
        name: "demo".to_owned(),
        variant_id: "default".to_owned(),
        variant_label: "default".to_owned(),
        description: description.to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "days": {"type": "integer", "description": "How many days ahead."}
            },
            "required": ["city"]
        }),
        source_path: DEMO_SOURCE.to_owned(),
        requires: vec!["WeatherService".to_owned()],
        writes: vec![],
        error_codes: vec![ErrorCodeDoc {
            code: "UNKNOWN_CITY".to_owned(),
            meaning: "no forecast exists for that city".to_owned(),
        }],
        samples: vec![],
        cost: None,
    }
}

fn variant(name: &str, id: &str, label: &str, description: &str) -> Definition {
    Definition {
        name: name.to_owned(),
        variant_id: id.to_owned(),
        variant_label: label.to_owned(),
        ..demo(description)
    }
}

fn demo_harvest(definitions: Vec<Result<Definition, String>>) -> CrateHarvest {
    CrateHarvest {
        crate_name: "demo-tool".to_owned(),
        note: "Forecasts come from the host's weather service.".to_owned(),
        definitions,
    }
}

fn demo_crate(definitions: Vec<Definition>) -> CrateCatalog {
    CrateCatalog {
        crate_name: "demo-tool".to_owned(),
        note: "Forecasts come from the host's weather service.".to_owned(),
        definitions,
    }
}

const DEMO_ENTRY: ToolCrate = ToolCrate {
    crate_name: "demo-tool",
    harvest: || demo_harvest(vec![Ok(demo(DEMO_DESCRIPTION))]),
};

/// A repository root holding the demo tool's source file.
fn demo_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let source = root.path().join(DEMO_SOURCE);
    fs::create_dir_all(source.parent().unwrap()).unwrap();
    fs::write(source, "// The demo tool.\n").unwrap();
    root
}

fn tool_member(name: &str) -> Member {
    Member {
        name: name.to_owned(),
        markers: vec![Marker::SchemarsDependency],
    }
}

fn failures(failures: &[Failure]) -> Vec<String> {
    failures.iter().map(ToString::to_string).collect()
}

// ---------------------------------------------------------------------------------------------
// K1: the real harvest.

#[test]
fn k1_harvest_has_ask_user_question_legacy_then_timed_then_timed_over_mcp() {
    let (catalogs, failed) = guards::harvest(manifest::MANIFEST, &project_root());
    assert_eq!(failures(&failed), Vec::<String>::new());
    let ask_user = catalogs
        .iter()
        .find(|catalog| catalog.crate_name == "tool-ask-user")
        .expect("tool-ask-user is harvested");
    let variants = ask_user
        .definitions
        .iter()
        .map(|definition| {
            (
                definition.name.as_str(),
                definition.variant_id.as_str(),
                definition.variant_label.as_str(),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(
        variants,
        [
            ("ask_user_question", "legacy", "legacy (default)"),
            ("ask_user_question", "timed", "timed (opt-in)"),
            ("ask_user_question", "timed-mcp", "timed over MCP (opt-in)"),
        ]
    );
    for definition in catalogs.iter().flat_map(|catalog| &catalog.definitions) {
        assert_eq!(
            definition.parameters["type"], "object",
            "{} [{}]",
            definition.name, definition.variant_id
        );
    }
    // The timed definitions are the ones built with `timeout: 120`, and only they declare
    // `timeout`; the one for MCP names the companion tool where the other names a user message.
    let [legacy, timed, timed_mcp] = &ask_user.definitions[..] else {
        unreachable!("three variants, checked above")
    };
    assert_eq!(legacy.parameters["properties"].get("timeout"), None);
    for (definition, route) in [
        (timed, "a user message"),
        (timed_mcp, "ask_user_question_answer"),
    ] {
        let timeout = definition.parameters["properties"]["timeout"]["description"]
            .as_str()
            .unwrap();
        assert!(timeout.contains("(default 120)"), "{timeout}");
        assert!(timeout.contains(route), "{timeout}");
    }
}

#[test]
fn k1_harvest_carries_error_codes_with_meanings() {
    let (catalogs, _) = guards::harvest(manifest::MANIFEST, &project_root());
    let ask_user = &catalogs[0];
    let codes = |index: usize| {
        ask_user.definitions[index]
            .error_codes
            .iter()
            .map(|error| error.code.as_str())
            .collect::<Vec<_>>()
    };
    assert!(codes(0).contains(&"NO_PROVIDER"));
    assert!(!codes(0).contains(&"DUPLICATE_WAIT"));
    assert!(codes(1).contains(&"DUPLICATE_WAIT"));
    for definition in &ask_user.definitions {
        for error in &definition.error_codes {
            assert!(!error.meaning.is_empty(), "{}", error.code);
            assert!(!error.meaning.contains('\n'), "{}", error.code);
        }
    }
}

#[test]
fn k1_real_tool_crate_carries_both_markers() {
    let members = workspace::load(&project_root()).unwrap();
    let marked = |name: &str| {
        members
            .iter()
            .find(|member| member.name == name)
            .unwrap_or_else(|| panic!("{name} is a workspace member"))
            .markers
            .clone()
    };
    assert_eq!(
        marked("tool-ask-user"),
        [
            Marker::SchemarsDependency,
            Marker::CatalogItem {
                file: "src/catalog.rs".to_owned()
            }
        ]
    );
    // The seam never depends on schemars, and this crate's own lists are no tool.
    assert_eq!(marked("user-questions"), []);
    assert_eq!(marked("xtask"), []);
}

// ---------------------------------------------------------------------------------------------
// K2: completeness, over fake `cargo metadata` output and temporary crates.

/// A fake workspace member: its dependencies as `(package, kind)` and its source files.
struct FakeCrate {
    name: &'static str,
    dependencies: &'static [(&'static str, Option<&'static str>)],
    sources: &'static [(&'static str, &'static str)],
}

const PLAIN: FakeCrate = FakeCrate {
    name: "plain",
    dependencies: &[("serde", None)],
    sources: &[("src/lib.rs", "pub const VERSION: u32 = 1;\n")],
};

/// Writes the crates under a temporary directory and reads them back through
/// `workspace::from_metadata`, as `cargo metadata` would describe them.
fn fake_workspace(crates: &[FakeCrate]) -> Vec<Member> {
    let dir = tempfile::tempdir().unwrap();
    let packages = crates
        .iter()
        .map(|fake| {
            let crate_dir = dir.path().join(fake.name);
            fs::create_dir_all(&crate_dir).unwrap();
            fs::write(
                crate_dir.join("Cargo.toml"),
                format!("[package]\nname = {:?}\n", fake.name),
            )
            .unwrap();
            for (path, text) in fake.sources {
                let file = crate_dir.join(path);
                fs::create_dir_all(file.parent().unwrap()).unwrap();
                fs::write(file, text).unwrap();
            }
            let dependencies = fake
                .dependencies
                .iter()
                .map(|(name, kind)| json!({"name": name, "kind": kind, "rename": null}))
                .collect::<Vec<_>>();
            json!({
                "name": fake.name,
                "version": "0.1.0",
                "manifest_path": crate_dir.join("Cargo.toml"),
                "dependencies": dependencies,
            })
        })
        .collect::<Vec<_>>();
    let metadata = json!({"packages": packages, "workspace_root": dir.path()});
    workspace::from_metadata(&metadata.to_string()).unwrap()
}

#[track_caller]
fn check_completeness(
    crates: &[FakeCrate],
    listed: &[ToolCrate],
    exemptions: &[Exemption],
    expect: &[&str],
) {
    let members = fake_workspace(crates);
    assert_eq!(
        failures(&guards::completeness(&members, listed, exemptions)),
        expect
    );
}

fn entry(crate_name: &'static str) -> ToolCrate {
    ToolCrate {
        crate_name,
        harvest: || demo_harvest(vec![]),
    }
}

#[test]
fn k2_unlisted_tool_crate_is_named() {
    const WEATHER: FakeCrate = FakeCrate {
        name: "weather-tool",
        dependencies: &[("schemars", None), ("serde", None)],
        sources: &[("src/lib.rs", "//! Weather.\n")],
    };
    const CATALOGUED: FakeCrate = FakeCrate {
        name: "search-tool",
        dependencies: &[],
        sources: &[
            ("src/lib.rs", "mod meta;\n"),
            ("src/meta/mod.rs", "pub const CATALOG: Catalog = Catalog;\n"),
        ],
    };
    const STATIC_CATALOG: FakeCrate = FakeCrate {
        name: "static-tool",
        dependencies: &[],
        sources: &[(
            "src/lib.rs",
            "    pub static CATALOG : Catalog = Catalog;\n",
        )],
    };
    const NOT_CATALOG: FakeCrate = FakeCrate {
        name: "lookalike",
        dependencies: &[("schemars", Some("dev")), ("schemars", Some("build"))],
        sources: &[(
            "src/lib.rs",
            "pub const CATALOG_VERSION: u32 = 1;\n// pub const CATALOG: () = ();\n\
             pub(crate) const CATALOG: () = ();\nconst CATALOG: () = ();\n",
        )],
    };
    const NO_SOURCES: FakeCrate = FakeCrate {
        name: "no-sources",
        dependencies: &[],
        sources: &[],
    };

    // Not a tool crate at all: no markers, nothing to list.
    check_completeness(&[PLAIN, NOT_CATALOG, NO_SOURCES], &[], &[], &[]);
    // Each marker alone makes a tool crate; every missing crate is named in one report.
    check_completeness(
        &[PLAIN, WEATHER, CATALOGUED, STATIC_CATALOG],
        &[],
        &[],
        &[
            "completeness: `search-tool` registers model-facing tools (declares `CATALOG` in \
             src/meta/mod.rs) but is not in the manifest (xtask/src/manifest.rs)",
            "completeness: `static-tool` registers model-facing tools (declares `CATALOG` in \
             src/lib.rs) but is not in the manifest (xtask/src/manifest.rs)",
            "completeness: `weather-tool` registers model-facing tools (depends on `schemars`) \
             but is not in the manifest (xtask/src/manifest.rs)",
        ],
    );
    // Listed crates pass.
    check_completeness(
        &[PLAIN, WEATHER, CATALOGUED, STATIC_CATALOG],
        &[
            entry("weather-tool"),
            entry("search-tool"),
            entry("static-tool"),
        ],
        &[],
        &[],
    );
}

#[test]
fn k2_manifest_and_exemptions_must_match_the_workspace() {
    const CONFIG_SCHEMA: FakeCrate = FakeCrate {
        name: "config-schema",
        dependencies: &[("schemars", None)],
        sources: &[("src/lib.rs", "//! Config schema.\n")],
    };
    let justified = Exemption {
        crate_name: "config-schema",
        reason: "schemas for the host's configuration file, never shown to a model",
    };
    // A justified exemption lets a marked crate stay out of the manifest.
    check_completeness(&[PLAIN, CONFIG_SCHEMA], &[], &[justified], &[]);
    // An exemption needs a reason, and a crate that still carries a marker.
    check_completeness(
        &[PLAIN, CONFIG_SCHEMA],
        &[],
        &[
            Exemption {
                crate_name: "config-schema",
                reason: " ",
            },
            Exemption {
                crate_name: "plain",
                reason: "it used to depend on schemars",
            },
        ],
        &[
            "completeness: exemption for `config-schema`: it gives no reason",
            "completeness: exemption for `plain`: no workspace member of that name carries a \
             tool marker; remove the exemption",
        ],
    );
    // The manifest may only list workspace members (a renamed crate is caught here).
    check_completeness(
        &[PLAIN],
        &[entry("old-name")],
        &[],
        &["completeness: the manifest lists `old-name`, which is not a workspace member"],
    );
}

#[test]
fn k2_generation_fails_naming_the_missing_crate() {
    let root = demo_root();
    let members = [tool_member("demo-tool"), tool_member("forgotten-tool")];
    let error = generate(&Inputs {
        root: root.path(),
        members: &members,
        manifest: &[DEMO_ENTRY],
        exemptions: &[],
        ceilings: &[],
        token_budgets: &[],
    })
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the tool catalog cannot be generated:\n  - completeness: `forgotten-tool` registers \
         model-facing tools (depends on `schemars`) but is not in the manifest \
         (xtask/src/manifest.rs)"
    );
}

// ---------------------------------------------------------------------------------------------
// K3: harvest.

#[track_caller]
fn check_harvest(entries: &[ToolCrate], expect_failures: &[&str], expect_crates: &[&str]) {
    let root = demo_root();
    let (catalogs, failed) = guards::harvest(entries, root.path());
    assert_eq!(failures(&failed), expect_failures);
    let harvested = catalogs
        .iter()
        .map(|catalog| catalog.crate_name.as_str())
        .collect::<Vec<_>>();
    assert_eq!(harvested, expect_crates);
}

#[test]
fn k3_entry_without_definitions_is_named() {
    const EMPTY: ToolCrate = ToolCrate {
        crate_name: "empty-tool",
        harvest: || CrateHarvest {
            crate_name: "empty-tool".to_owned(),
            note: String::new(),
            definitions: vec![],
        },
    };
    check_harvest(&[DEMO_ENTRY], &[], &["demo-tool"]);
    // The good crate is still harvested; the empty one is named.
    check_harvest(
        &[EMPTY, DEMO_ENTRY],
        &["harvest: `empty-tool` yields no definition"],
        &["demo-tool"],
    );
}

/// Harvests one `demo-tool` entry: with no failure expected, the crate must be catalogued.
#[track_caller]
fn check_demo_harvest(harvest: fn() -> CrateHarvest, expect: &[&str]) {
    let entry = ToolCrate {
        crate_name: "demo-tool",
        harvest,
    };
    let expect_crates: &[&str] = if expect.is_empty() {
        &["demo-tool"]
    } else {
        &[]
    };
    check_harvest(&[entry], expect, expect_crates);
}

#[test]
fn k3_definitions_that_cannot_be_built_are_named() {
    check_demo_harvest(
        || demo_harvest(vec![Err("demo [broken]: timeout 0 is out of range".into())]),
        &["harvest: `demo-tool`: demo [broken]: timeout 0 is out of range"],
    );
    check_harvest(
        &[ToolCrate {
            crate_name: "other-name",
            harvest: || demo_harvest(vec![Ok(demo(DEMO_DESCRIPTION))]),
        }],
        &["harvest: `other-name`: its catalog metadata names the crate `demo-tool`"],
        &[],
    );
    check_demo_harvest(
        || {
            demo_harvest(vec![Ok(Definition {
                source_path: "/abs/src/lib.rs".into(),
                ..demo(DEMO_DESCRIPTION)
            })])
        },
        &[
            "harvest: `demo-tool`: demo [default]: source path \"/abs/src/lib.rs\" is not a \
           repository-relative path",
        ],
    );
    check_demo_harvest(
        || {
            demo_harvest(vec![Ok(Definition {
                source_path: "crates/demo-tool/src/gone.rs".into(),
                ..demo(DEMO_DESCRIPTION)
            })])
        },
        &["harvest: `demo-tool`: demo [default]: source file \
           \"crates/demo-tool/src/gone.rs\" does not exist"],
    );
}

#[test]
fn k3_definitions_of_the_wrong_shape_are_named() {
    check_demo_harvest(
        || {
            demo_harvest(vec![Ok(Definition {
                parameters: json!({"type": "array"}),
                ..demo("")
            })])
        },
        &[
            "harvest: `demo-tool`: demo [default]: the description is empty",
            "harvest: `demo-tool`: demo [default]: `parameters.type` is not \"object\"",
        ],
    );
    check_demo_harvest(
        || {
            demo_harvest(vec![Ok(variant(
                "demo",
                "legacy",
                "legacy (default)",
                "Demo.",
            ))])
        },
        &[
            "harvest: `demo-tool`: demo [legacy]: a tool with one definition must have variant \
           id and label `default`",
        ],
    );
    check_demo_harvest(
        || {
            demo_harvest(vec![
                Ok(variant("demo", "fast", "fast (default)", "Demo.")),
                Ok(variant("demo", "fast", "fast (opt-in)", "Demo.")),
            ])
        },
        &["harvest: `demo-tool`: demo [fast]: the variant id is used twice"],
    );
    check_demo_harvest(
        || {
            demo_harvest(vec![
                Ok(variant("demo", "fast", "fast (default)", "Demo.")),
                Ok(variant("demo", "slow", "slow (opt-in)", "Demo.")),
            ])
        },
        &[],
    );
}

// ---------------------------------------------------------------------------------------------
// K4: rendering a demo tool.

#[test]
fn k4_render_demo_tool() {
    let text = render::render(&[demo_crate(vec![demo(DEMO_DESCRIPTION)])]);
    let lines = text.lines().collect::<Vec<_>>();
    assert!(
        lines[0].starts_with("<!-- Generated by `cargo xtask catalog`")
            && lines[0].contains("Do not edit by hand")
            && lines[0].ends_with("-->"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("cargo xtask catalog --check"),
        "{}",
        lines[1]
    );
    assert!(
        text.ends_with("|\n") && !text.ends_with("\n\n"),
        "one final newline"
    );
    assert!(!text.contains('\r'));
    for expected in [
        "| [`demo-tool`](#demo-tool) | `demo` | default | `WeatherService` | - | Forecasts come \
         from the host's weather service. |",
        "<a id=\"demo-tool\"></a>\n\n## `demo-tool`\n\n### `demo` — default\n\n\
         Look up the weather for a city.\n\n```json\n{\n  \"type\": \"object\",",
        "\n```\n\nSource: [`crates/demo-tool/src/lib.rs`](../crates/demo-tool/src/lib.rs)\n\n\
         Forecasts come from the host's weather service.\n\n",
        "| `UNKNOWN_CITY` | `default` | no forecast exists for that city |",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn k4_map_order_and_cell_escaping() {
    // Tools sorted by name within the crate (the harvest sorts), default variant first, and a
    // note with `|` and line breaks kept on one table line.
    const MIXED: ToolCrate = ToolCrate {
        crate_name: "demo-tool",
        harvest: || CrateHarvest {
            note: "Pipes | and\nline breaks\r\nstay in the cell.".to_owned(),
            ..demo_harvest(vec![
                Ok(variant("zeta", "default", "default", "Zeta.")),
                Ok(variant("alpha", "fast", "fast (default)", "Alpha fast.")),
                Ok(variant("alpha", "slow", "slow (opt-in)", "Alpha slow.")),
            ])
        },
    };
    let root = demo_root();
    let text = generate(&Inputs {
        root: root.path(),
        members: &[tool_member("demo-tool")],
        manifest: &[MIXED],
        exemptions: &[],
        ceilings: &[],
        token_budgets: &[],
    })
    .unwrap();
    let rows = text
        .lines()
        .filter(|line| line.starts_with("| [`demo-tool`]"))
        .collect::<Vec<_>>();
    let note = "Pipes \\| and<br>line breaks<br>stay in the cell.";
    assert_eq!(
        rows,
        [
            format!(
                "| [`demo-tool`](#demo-tool) | `alpha` | fast (default) | `WeatherService` | - | {note} |"
            ),
            format!(
                "| [`demo-tool`](#demo-tool) | `alpha` | slow (opt-in) | `WeatherService` | - | {note} |"
            ),
            format!(
                "| [`demo-tool`](#demo-tool) | `zeta` | default | `WeatherService` | - | {note} |"
            ),
        ]
    );
    let headings = text
        .lines()
        .filter(|line| line.starts_with("### "))
        .collect::<Vec<_>>();
    assert_eq!(
        headings,
        [
            "### `alpha` — fast (default)",
            "### `alpha` — slow (opt-in)",
            "### `zeta` — default"
        ]
    );
    // With several tools in a crate, the error table names tool and variant.
    assert!(
        text.contains(
            "| `UNKNOWN_CITY` | `alpha` [fast], `alpha` [slow], `zeta` [default] | no forecast \
             exists for that city |"
        ),
        "{text}"
    );
}

#[test]
fn k4_parameters_keep_schema_key_order() {
    let mut definition = demo(DEMO_DESCRIPTION);
    definition.parameters = serde_json::from_str(
        r#"{"type":"object","properties":{"zulu":{"type":"string"},"alpha":{"type":"string"}}}"#,
    )
    .unwrap();
    let text = render::render(&[demo_crate(vec![definition])]);
    let zulu = text.find("\"zulu\"").unwrap();
    let alpha = text.find("\"alpha\"").unwrap();
    assert!(zulu < alpha, "schema key order is kept");
    assert!(text.contains("{\n  \"type\": \"object\",\n  \"properties\": {\n    \"zulu\""));
}

#[test]
fn k4_real_catalog_has_no_absolute_paths() {
    let root = project_root();
    let text = xtask::generate_workspace(&root).unwrap();
    assert!(!text.contains(root.to_str().unwrap()));
    for line in text.lines().filter(|line| line.starts_with("Source: ")) {
        assert!(line.starts_with("Source: [`crates/"), "{line}");
    }
    assert_eq!(
        xtask::generate_workspace(&root).unwrap(),
        text,
        "deterministic"
    );
}

// ---------------------------------------------------------------------------------------------
// K5: the description-length gate.

#[track_caller]
fn check_length(descriptions: &[String], ceilings: &[Ceiling], expect: &[&str]) {
    let definitions = descriptions
        .iter()
        .enumerate()
        .map(|(index, description)| {
            if descriptions.len() == 1 {
                demo(description)
            } else {
                variant(
                    "demo",
                    &format!("v{index}"),
                    &format!("v{index}"),
                    description,
                )
            }
        })
        .collect();
    let failed = guards::description_lengths(&[demo_crate(definitions)], ceilings);
    assert_eq!(failures(&failed), expect);
}

fn chars(count: usize) -> String {
    "a".repeat(count)
}

#[test]
fn k5_description_length_gate() {
    let justified = |limit| Ceiling {
        key: "demo default",
        limit,
        justification: "a demo that needs room",
    };
    check_length(&[chars(200)], &[], &[]);
    check_length(
        &[chars(201)],
        &[],
        &["description length: demo [default] 201>200"],
    );
    // Unicode scalar values, not bytes: 200 two-byte characters fit.
    check_length(&["é".repeat(200)], &[], &[]);
    check_length(
        &["é".repeat(201)],
        &[],
        &["description length: demo [default] 201>200"],
    );
    // A registered ceiling is honoured, and it is a limit too.
    check_length(&[chars(250)], &[justified(250)], &[]);
    check_length(
        &[chars(251)],
        &[justified(250)],
        &["description length: demo [default] 251>250"],
    );
    // Every offender in one report.
    check_length(
        &[chars(201), chars(10), chars(300)],
        &[],
        &[
            "description length: demo [v0] 201>200",
            "description length: demo [v2] 300>200",
        ],
    );
}

#[test]
fn k5_ceilings_need_a_justification_and_a_user() {
    check_length(
        &[chars(10)],
        &[
            Ceiling {
                key: "demo default",
                limit: 300,
                justification: "",
            },
            Ceiling {
                key: "gone default",
                limit: 300,
                justification: "a tool that was removed",
            },
        ],
        &[
            "description length: ceiling \"demo default\": it gives no justification",
            "description length: ceiling \"gone default\": no catalogued tool variant has this \
             key; remove the ceiling",
        ],
    );
}

#[test]
fn k5_generation_fails_on_a_long_description() {
    const LONG: ToolCrate = ToolCrate {
        crate_name: "demo-tool",
        harvest: || demo_harvest(vec![Ok(demo(&"a".repeat(201)))]),
    };
    let root = demo_root();
    let error = generate(&Inputs {
        root: root.path(),
        members: &[tool_member("demo-tool")],
        manifest: &[LONG],
        exemptions: &[],
        ceilings: &[],
        token_budgets: &[],
    })
    .unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("\n  - description length: demo [default] 201>200"),
        "{error}"
    );
}

#[test]
fn k5_ask_user_question_fits_without_a_ceiling() {
    assert!(
        manifest::CEILINGS
            .iter()
            .all(|ceiling| !ceiling.key.starts_with("ask_user_question ")),
        "SPEC §10: both ask_user_question descriptions fit 200 characters with no ceiling"
    );
    let (catalogs, _) = guards::harvest(manifest::MANIFEST, &project_root());
    assert_eq!(guards::description_lengths(&catalogs, &[]), []);
}

// ---------------------------------------------------------------------------------------------
// K6: `--check`.

const GENERATED: &str = "<!-- generated -->\n# Title\nline three\nlast line\n";

/// Writes `committed` (or nothing) to a temporary file and checks it against [`GENERATED`].
#[track_caller]
fn check_committed(committed: Option<&str>) -> Check {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tool-catalog.md");
    if let Some(committed) = committed {
        fs::write(&path, committed).unwrap();
    }
    check::check_file(&path, CATALOG_PATH, GENERATED).unwrap()
}

#[track_caller]
fn check_difference(committed: Option<&str>, line: usize, was: Option<&str>, now: Option<&str>) {
    let check = check_committed(committed);
    assert_eq!(check.exit_code(), 1);
    let Check::Stale(difference) = check else {
        panic!("expected a difference, got {check:?}")
    };
    assert_eq!(
        (
            difference.line,
            difference.committed.as_deref(),
            difference.generated.as_deref()
        ),
        (line, was, now)
    );
}

#[test]
fn k6_check_finds_the_first_differing_line() {
    let identical = check_committed(Some(GENERATED));
    assert_eq!((identical.exit_code(), &identical), (0, &Check::UpToDate));

    let one_changed = "<!-- generated -->\n# Title\nline 3 edited\nlast line\n";
    check_difference(
        Some(one_changed),
        3,
        Some("line 3 edited\n"),
        Some("line three\n"),
    );
    // A missing file is a difference at line 1.
    check_difference(None, 1, None, Some("<!-- generated -->\n"));
    // A truncated file ends early; an extended one goes on past the generated end.
    check_difference(
        Some("<!-- generated -->\n# Title\n"),
        3,
        None,
        Some("line three\n"),
    );
    check_difference(Some(&format!("{GENERATED}\n")), 5, Some("\n"), None);
    // Line endings count: a lost final newline or `\r\n` endings are differences.
    check_difference(
        Some(GENERATED.trim_end()),
        4,
        Some("last line"),
        Some("last line\n"),
    );
    check_difference(
        Some(&GENERATED.replace('\n', "\r\n")),
        1,
        Some("<!-- generated -->\r\n"),
        Some("<!-- generated -->\n"),
    );
}

#[test]
fn k6_check_message_names_the_command_and_both_lines() {
    let Check::Stale(changed) = check_committed(Some(
        "<!-- generated -->\n# Title\nline 3 edited\nlast line\n",
    )) else {
        panic!("expected a difference")
    };
    let Check::Stale(missing) = check_committed(None) else {
        panic!("expected a difference")
    };
    let message = changed.to_string();
    assert!(message.contains("out of date"), "{message}");
    assert!(message.contains("`cargo xtask catalog`"), "{message}");
    assert!(message.contains("line 3"), "{message}");
    assert!(message.contains(r#""line 3 edited\n""#), "{message}");
    assert!(message.contains(r#""line three\n""#), "{message}");
    insta::assert_snapshot!("k6_changed_line", message);
    insta::assert_snapshot!("k6_missing_file", missing.to_string());
}

#[test]
fn k6_compare_bytes_that_are_not_utf8() {
    let check = check::compare(CATALOG_PATH, Some(b"<!-- generated -->\n\xff\n"), GENERATED);
    assert_eq!(
        check,
        Check::Stale(Difference {
            display_path: CATALOG_PATH.to_owned(),
            missing: false,
            line: 2,
            committed: Some("\u{fffd}\n".to_owned()),
            generated: Some("# Title\n".to_owned()),
        })
    );
}

/// The committed catalog is what `cargo xtask catalog` writes, so `cargo test` alone catches a
/// stale catalog.
#[test]
fn k6_committed_catalog_is_current() {
    match xtask::check_workspace(&project_root()).unwrap() {
        Check::UpToDate => {}
        Check::Stale(difference) => panic!("{difference}"),
    }
}

#[test]
fn k6_command_line() {
    let xtask = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    let (code, stdout, _) = xtask(&["catalog", "--check"]);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "docs/tool-catalog.md is up to date\n")
    );
    let (code, _, stderr) = xtask(&["catalog", "--chek"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("usage: cargo xtask catalog [--check]"),
        "{stderr}"
    );
    let (code, _, stderr) = xtask(&[]);
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn k4_committed_catalog_json_blocks_parse() {
    let text = fs::read_to_string(project_root().join(CATALOG_PATH)).unwrap();
    let blocks = text
        .split("```json\n")
        .skip(1)
        .map(|block| serde_json::from_str::<Value>(block.split("\n```").next().unwrap()).unwrap())
        .collect::<Vec<_>>();
    let (catalogs, _) = guards::harvest(manifest::MANIFEST, &project_root());
    let parameters = catalogs
        .iter()
        .flat_map(|catalog| &catalog.definitions)
        .map(|definition| definition.parameters.clone())
        .collect::<Vec<_>>();
    assert_eq!(blocks, parameters);
}

// ---------------------------------------------------------------------------------------------
// Token budgets: what a definition costs on every request, counted with `o200k_base`.

/// Generates the demo tool's catalog with these budgets.
fn generate_with_budgets(budgets: &[TokenBudget]) -> Result<String, xtask::guards::GuardFailures> {
    const DEMO: ToolCrate = ToolCrate {
        crate_name: "demo-tool",
        harvest: || demo_harvest(vec![Ok(demo(DEMO_DESCRIPTION))]),
    };
    let root = demo_root();
    generate(&Inputs {
        root: root.path(),
        members: &[tool_member("demo-tool")],
        manifest: &[DEMO],
        exemptions: &[],
        ceilings: &[],
        token_budgets: budgets,
    })
}

/// The demo definition's cost, as the catalog states it.
fn demo_tokens() -> usize {
    let tokenizer = Tokenizer::o200k();
    let demo = demo(DEMO_DESCRIPTION);
    tokenizer.definition(&demo.name, &demo.description, &demo.parameters)
}

#[test]
fn token_counts_are_o200k_base_of_the_compact_definition() {
    let tokenizer = Tokenizer::o200k();
    // Known o200k_base counts: a fixed phrase, and the compact JSON a host sends.
    assert_eq!(tokenizer.count("hello world"), 2);
    let text = definition_json("demo", "d", &json!({"type": "object"}));
    assert_eq!(
        text,
        r#"{"name":"demo","description":"d","parameters":{"type":"object"}}"#
    );
    assert_eq!(
        tokenizer.count(&text),
        tokenizer.definition("demo", "d", &json!({"type": "object"}))
    );
}

#[test]
fn the_catalog_states_each_definitions_cost_and_budget() {
    let text = generate_with_budgets(&[]).unwrap();
    let line = format!(
        "Cost: {} tokens (`o200k_base`; budget {DEFAULT_TOKEN_BUDGET}), ",
        demo_tokens()
    );
    assert!(text.contains(&line), "{text}");
}

#[test]
fn check_fails_on_a_definition_over_its_token_budget_and_says_by_how_much() {
    let tokens = demo_tokens();
    let budget = tokens - 3;
    let error = generate_with_budgets(&[TokenBudget {
        key: "demo default",
        tokens: budget,
    }])
    .unwrap_err();
    assert!(
        error.to_string().ends_with(&format!(
            "\n  - token budget: demo [default] the definition costs {tokens} tokens, 3 over its \
             budget of {budget}"
        )),
        "{error}"
    );
    // At the budget exactly, it passes.
    generate_with_budgets(&[TokenBudget {
        key: "demo default",
        tokens,
    }])
    .unwrap();
}

#[test]
fn a_token_budget_nothing_uses_is_an_error() {
    let error = generate_with_budgets(&[TokenBudget {
        key: "demo gone",
        tokens: 10,
    }])
    .unwrap_err();
    assert_eq!(
        error.0,
        [Failure::BadTokenBudget {
            key: "demo gone".to_owned(),
            problem: "no catalogued tool variant has this key; remove the budget",
        }]
    );
}

#[test]
fn ask_user_question_fits_its_token_budgets_and_the_samples_are_counted() {
    let (mut catalogs, failures) = guards::harvest(manifest::MANIFEST, &project_root());
    assert_eq!(failures, []);
    let tokenizer = Tokenizer::o200k();
    assert_eq!(
        tokens::measure(&mut catalogs, manifest::TOKEN_BUDGETS, &tokenizer, true),
        []
    );
    let costs: Vec<_> = catalogs[0]
        .definitions
        .iter()
        .map(|d| {
            let cost = d.cost.as_ref().unwrap();
            (d.variant_id.as_str(), cost.budget, cost.samples.len())
        })
        .collect();
    // 0.8x the reference's 255 and 314 tokens; over MCP the timed budget.
    assert_eq!(
        costs,
        [("legacy", 204, 0), ("timed", 251, 2), ("timed-mcp", 251, 2)]
    );
    for timed in &catalogs[0].definitions[1..] {
        let pending = &timed.cost.as_ref().unwrap().samples[0];
        assert!(
            pending.label.starts_with("pending result"),
            "{}",
            pending.label
        );
        assert_eq!(pending.budget, Some(69), "0.8x the reference's 86 tokens");
        assert!(
            pending.tokens <= 69,
            "the pending result costs {} tokens",
            pending.tokens
        );
    }
}

#[test]
fn a_budget_registered_twice_is_an_error() {
    let budget = TokenBudget {
        key: "demo default",
        tokens: 1_000,
    };
    let error = generate_with_budgets(&[budget, budget]).unwrap_err();
    assert_eq!(
        error.0,
        [Failure::BadTokenBudget {
            key: "demo default".to_owned(),
            problem: "registered twice; keep one",
        }]
    );
}

#[test]
fn a_sample_over_its_budget_fails_and_every_sample_is_rendered_with_its_cost() {
    const WITH_SAMPLES: ToolCrate = ToolCrate {
        crate_name: "demo-tool",
        harvest: || {
            demo_harvest(vec![Ok(Definition {
                samples: vec![
                    Sample {
                        label: "forecast result".to_owned(),
                        text: "Sunny, 21 degrees, light wind from the west.".to_owned(),
                        budget: Some(3),
                    },
                    Sample {
                        label: "error result".to_owned(),
                        text: "Error: unknown city".to_owned(),
                        budget: None,
                    },
                ],
                ..demo(DEMO_DESCRIPTION)
            })])
        },
    };
    let root = demo_root();
    let inputs = |budgets| Inputs {
        root: root.path(),
        members: &[],
        manifest: &[WITH_SAMPLES],
        exemptions: &[],
        ceilings: &[],
        token_budgets: budgets,
    };
    let members = [tool_member("demo-tool")];
    let error = generate(&Inputs {
        members: &members,
        ..inputs(&[])
    })
    .unwrap_err();
    let tokenizer = Tokenizer::o200k();
    let forecast = tokenizer.count("Sunny, 21 degrees, light wind from the west.");
    assert_eq!(
        error.to_string(),
        format!(
            "the tool catalog cannot be generated:\n  - token budget: demo [default] forecast \
             result costs {forecast} tokens, {} over its budget of 3",
            forecast - 3
        )
    );
    // Rendered (with a budget that fits): each sample's tokens, budget and bytes.
    let mut catalogs = vec![demo_crate(vec![Definition {
        samples: vec![Sample {
            label: "error result".to_owned(),
            text: "Error: unknown city".to_owned(),
            budget: Some(50),
        }],
        ..demo(DEMO_DESCRIPTION)
    }])];
    assert_eq!(tokens::measure(&mut catalogs, &[], &tokenizer, true), []);
    let text = render::render(&catalogs);
    let errors = tokenizer.count("Error: unknown city");
    assert!(
        text.contains(&format!(
            "\n- error result: {errors} tokens (budget 50), 19 bytes\n"
        )),
        "{text}"
    );
}
