//! JSON Schemas from argument and result types, in the shape of SPEC §5.2 (keyword order, no
//! `$schema` or titles; descriptions only where they carry a fact, see `legacy.rs`).
//!
//! schemars generates the schema (draft 2020-12, pinned with
//! [`SchemaSettings::draft2020_12`], subschemas inlined); one post-processing pass then brings it
//! into the SPEC's shape, because schemars cannot emit it directly:
//!
//! * keyword order `type, description, enum, additionalProperties, properties, required, items,
//!   oneOf` in every schema object (schemars inserts `description` before `type`);
//! * no `$schema`, `title`, `format` or `default` anywhere: they cost tokens and say nothing the
//!   model needs (`format: int64` on `timeout`, for example);
//! * `Option<T>` means *optional*, never *nullable*, on our wire (an unset key is absent, never
//!   `null`), so the `"null"` that schemars adds to an optional property's `type` is removed;
//! * descriptions belong to properties: the doc comment of a type (the root, and array items)
//!   documents the Rust type and is not sent to the model;
//! * a description is one line: schemars joins doc-comment lines with `\n`, we join them with a
//!   space, so doc comments can wrap at the line-width limit.
//!
//! Property order is declaration order (schemars' `preserve_order`). The output is deterministic:
//! every map involved keeps insertion order, and nothing depends on hashing.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Keywords in the order the SPEC gives them (§5.2); any other keyword follows them, in the order
/// schemars produced it.
const KEYWORD_ORDER: [&str; 8] = [
    "type",
    "description",
    "enum",
    "additionalProperties",
    "properties",
    "required",
    "items",
    "oneOf",
];

/// Keywords removed from every schema object.
const DROPPED: [&str; 4] = ["$schema", "title", "format", "default"];

/// Where a schema object sits: a type-level schema (the root, array items, `oneOf` members) or a
/// property.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Type,
    Property,
}

/// The schema of `T` in the SPEC's shape.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    canonical(schema.to_value(), Position::Type)
}

fn canonical(value: Value, position: Position) -> Value {
    let Value::Object(mut map) = value else {
        return value;
    };
    for keyword in DROPPED {
        map.remove(keyword);
    }
    if position == Position::Type {
        map.remove("description");
    }
    if let Some(description) = map.get_mut("description")
        && let Value::String(text) = description
    {
        *text = one_line(text);
    }
    if let Some(types) = map.get_mut("type") {
        *types = without_null(types.take());
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for property in properties.values_mut() {
            *property = canonical(property.take(), Position::Property);
        }
    }
    if let Some(items) = map.get_mut("items") {
        *items = canonical(items.take(), Position::Type);
    }
    if let Some(Value::Array(members)) = map.get_mut("oneOf") {
        for member in members {
            *member = canonical(member.take(), Position::Type);
        }
    }
    let mut ordered = Map::with_capacity(map.len());
    for keyword in KEYWORD_ORDER {
        if let Some(value) = map.remove(keyword) {
            ordered.insert(keyword.to_owned(), value);
        }
    }
    ordered.extend(map);
    Value::Object(ordered)
}

/// `["string", "null"]` → `"string"`; anything else unchanged.
fn without_null(types: Value) -> Value {
    let Value::Array(list) = types else {
        return types;
    };
    let mut kept: Vec<Value> = list
        .into_iter()
        .filter(|t| t.as_str() != Some("null"))
        .collect();
    if kept.len() == 1 {
        kept.remove(0)
    } else {
        Value::Array(kept)
    }
}

fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
