//! The bridge's hook in Codex's `config.toml`, edited in place (comments, order and layout of
//! everything else kept): `[[hooks.PermissionRequest]]` groups, each with
//! `[[hooks.PermissionRequest.hooks]]` handlers (or the same as inline arrays), and Codex's
//! trust of a hook, `[hooks.state."KEY"] trusted_hash = "sha256:…"`.

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, TableLike, Value, value};

/// The event the bridge's Codex hook is installed for.
pub(crate) const EVENT: &str = "PermissionRequest";

/// The tables of an array of tables, or the inline tables of an array.
fn tables(item: &Item) -> Vec<&dyn TableLike> {
    match item {
        Item::ArrayOfTables(array) => array.iter().map(|t| t as &dyn TableLike).collect(),
        Item::Value(Value::Array(array)) => (array.iter())
            .filter_map(Value::as_inline_table)
            .map(|t| t as &dyn TableLike)
            .collect(),
        _ => Vec::new(),
    }
}

/// `(event, command)` of every handler whose command `ours` accepts.
pub(crate) fn found(doc: &DocumentMut, ours: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Item::as_table_like) else {
        return found;
    };
    for (event, groups) in hooks.iter() {
        for group in tables(groups) {
            for handler in group.get("hooks").map(tables).unwrap_or_default() {
                let command = handler.get("command").and_then(Item::as_str);
                if let Some(command) = command.filter(|c| ours(c)) {
                    found.push((event.to_owned(), command.to_owned()));
                }
            }
        }
    }
    found
}

/// Adds a group running `command` for every tool, with `timeout` seconds; `false` when `hooks`
/// or its event is something else than a table and an array (nothing is changed then).
pub(crate) fn add(doc: &mut DocumentMut, command: &str, timeout: u64) -> bool {
    let hooks = doc.entry("hooks").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let Some(hooks) = hooks.as_table_like_mut() else {
        return false;
    };
    let mut handler = Table::new();
    handler.insert("type", value("command"));
    handler.insert("command", value(command));
    handler.insert("timeout", value(i64::try_from(timeout).unwrap_or(i64::MAX)));
    let mut group = Table::new();
    group.insert("matcher", value("*"));
    let event = hooks
        .entry(EVENT)
        .or_insert(Item::ArrayOfTables(ArrayOfTables::new()));
    match event {
        Item::ArrayOfTables(groups) => {
            let mut handlers = ArrayOfTables::new();
            handlers.push(handler);
            group.insert("hooks", Item::ArrayOfTables(handlers));
            groups.push(group);
            true
        }
        Item::Value(Value::Array(groups)) => {
            let mut handlers = toml_edit::Array::new();
            handlers.push(handler.into_inline_table());
            group.insert("hooks", value(handlers));
            groups.push(group.into_inline_table());
            true
        }
        _ => false,
    }
}

/// Takes out every handler `ours` accepts, the groups left with none, and `hooks` when it ends
/// up empty.
pub(crate) fn remove(doc: &mut DocumentMut, ours: &dyn Fn(&str) -> bool) {
    let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_like_mut) else {
        return;
    };
    let not_ours = |handler: &dyn TableLike| {
        (handler.get("command").and_then(Item::as_str)).is_none_or(|c| !ours(c))
    };
    let emptied = |group: &dyn TableLike| group.get("hooks").is_some_and(|h| tables(h).is_empty());
    for (_, groups) in hooks.iter_mut() {
        match groups {
            Item::ArrayOfTables(groups) => {
                for group in groups.iter_mut() {
                    if let Some(handlers) = group.get_mut("hooks") {
                        retain(handlers, &not_ours);
                    }
                }
                groups.retain(|group| !emptied(group));
            }
            Item::Value(Value::Array(groups)) => {
                for group in groups.iter_mut() {
                    if let Some(group) = group.as_inline_table_mut()
                        && let Some(Value::Array(handlers)) = group.get_mut("hooks")
                    {
                        handlers.retain(|h| h.as_inline_table().is_none_or(|h| not_ours(h)));
                    }
                }
                groups.retain(|g| g.as_inline_table().is_none_or(|g| !emptied(g)));
            }
            _ => {}
        }
    }
    let empty = (hooks.iter())
        .filter(|(_, groups)| match groups {
            Item::ArrayOfTables(groups) => groups.is_empty(),
            Item::Value(Value::Array(groups)) => groups.is_empty(),
            _ => false,
        })
        .map(|(event, _)| event.to_owned())
        .collect::<Vec<_>>();
    for event in &empty {
        hooks.remove(event);
    }
    if hooks.is_empty() {
        doc.remove("hooks");
    }
}

fn retain(handlers: &mut Item, keep: &dyn Fn(&dyn TableLike) -> bool) {
    match handlers {
        Item::ArrayOfTables(handlers) => handlers.retain(|h| keep(h)),
        Item::Value(Value::Array(handlers)) => {
            handlers.retain(|h| h.as_inline_table().is_none_or(|h| keep(h)));
        }
        _ => {}
    }
}

/// Records Codex's trust of the hook `key` at `hash`.
pub(crate) fn trust(doc: &mut DocumentMut, key: &str, hash: &str) {
    let Some(state) = state(doc) else { return };
    let mut entry = Table::new();
    entry.insert("trusted_hash", value(hash));
    state.insert(key, Item::Table(entry));
}

/// Forgets Codex's trust of the hooks `keys`, and `[hooks.state]` when it ends up empty.
pub(crate) fn untrust(doc: &mut DocumentMut, keys: &[String]) {
    let Some(state) = state(doc) else { return };
    for key in keys {
        state.remove(key);
    }
    if state.is_empty() {
        let hooks = doc.get_mut("hooks").and_then(Item::as_table_like_mut);
        if let Some(hooks) = hooks {
            hooks.remove("state");
            if hooks.is_empty() {
                doc.remove("hooks");
            }
        }
    }
}

/// The hash Codex trusts the hook `key` at, if any.
pub(crate) fn trusted(doc: &DocumentMut, key: &str) -> Option<String> {
    let state = doc.get("hooks")?.as_table_like()?.get("state")?;
    let entry = state.as_table_like()?.get(key)?;
    Some(
        entry
            .as_table_like()?
            .get("trusted_hash")?
            .as_str()?
            .to_owned(),
    )
}

/// `[hooks.state]`, made an implicit table when missing.
fn state(doc: &mut DocumentMut) -> Option<&mut dyn TableLike> {
    let implicit = || {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    };
    let hooks = doc.entry("hooks").or_insert_with(implicit);
    let hooks = hooks.as_table_like_mut()?;
    hooks
        .entry("state")
        .or_insert(implicit())
        .as_table_like_mut()
}
