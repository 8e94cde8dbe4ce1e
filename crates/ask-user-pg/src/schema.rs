//! The schema: versioned migrations embedded in the binary, applied in order in one transaction
//! each, under an advisory lock so that workers starting together migrate once. A database whose
//! schema is newer than this build knows is refused, never written.

use postgres::{Client, GenericClient};

use crate::PgError;
use crate::db::quote_ident;

/// The migrations, in order; the schema version is the number of them applied.
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_sessions",
        include_str!("../migrations/0001_sessions.sql"),
    ),
    ("0002_ledger", include_str!("../migrations/0002_ledger.sql")),
    ("0003_claims", include_str!("../migrations/0003_claims.sql")),
    (
        "0004_json_text",
        include_str!("../migrations/0004_json_text.sql"),
    ),
    (
        "0005_secrets",
        include_str!("../migrations/0005_secrets.sql"),
    ),
    (
        "0006_ledger_length",
        include_str!("../migrations/0006_ledger_length.sql"),
    ),
    (
        "0007_lines_lz4",
        include_str!("../migrations/0007_lines_lz4.sql"),
    ),
    (
        "0008_checkpoint_lz4",
        include_str!("../migrations/0008_checkpoint_lz4.sql"),
    ),
    (
        "0009_checkpoint_end",
        include_str!("../migrations/0009_checkpoint_end.sql"),
    ),
];

/// The schema version this build writes.
// A handful of migrations: the count fits an `i32`.
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Brings the schema `schema` to [`SCHEMA_VERSION`], creating it when missing. Returns the
/// version found before.
pub(crate) fn migrate(client: &mut Client, schema: &str) -> Result<i32, PgError> {
    check_encoding(client)?;
    let mut tx = client.transaction().map_err(PgError::Query)?;
    // One migrator at a time per schema; the lock ends with the transaction.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('ask-user-pg:' || $1))",
        &[&schema],
    )
    .map_err(PgError::Query)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.ask_user_schema (
             version integer NOT NULL,
             name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
        schema = quote_ident(schema)
    ))
    .map_err(PgError::Query)?;
    let found = version(&mut tx, schema)?;
    if found > SCHEMA_VERSION {
        return Err(PgError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, (name, sql)) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(found).unwrap_or(0))
    {
        tx.batch_execute(sql)
            .map_err(|source| PgError::Migration { name, source })?;
        let version = i32::try_from(index + 1).unwrap_or(i32::MAX);
        tx.execute(
            "INSERT INTO ask_user_schema (version, name) VALUES ($1, $2)",
            &[&version, name],
        )
        .map_err(PgError::Query)?;
    }
    tx.commit().map_err(PgError::Query)?;
    Ok(found)
}

/// Refuses a database whose `text` cannot hold every character: one that is neither `UTF8` nor
/// `SQL_ASCII` (which keeps the bytes it is given). A question in any script, stored in `LATIN1`,
/// would fail to be written.
fn check_encoding(client: &mut Client) -> Result<(), PgError> {
    let encoding: String = client
        .query_one("SELECT current_setting('server_encoding')", &[])
        .map_err(PgError::Query)?
        .get(0);
    match encoding.as_str() {
        "UTF8" | "SQL_ASCII" => Ok(()),
        _ => Err(PgError::Encoding(encoding)),
    }
}

/// The newest migration applied in `schema` (0: none), whose version table exists.
fn version(client: &mut impl GenericClient, schema: &str) -> Result<i32, PgError> {
    Ok(client
        .query_one(
            &format!(
                "SELECT coalesce(max(version), 0) FROM {}.ask_user_schema",
                quote_ident(schema)
            ),
            &[],
        )
        .map_err(PgError::Query)?
        .get(0))
}

/// Checks that the schema `schema` is at [`SCHEMA_VERSION`] without changing anything (for a
/// read-only connection): a missing or older schema is [`PgError::NoSchema`], a newer one
/// [`PgError::NewerSchema`].
pub(crate) fn check(client: &mut Client, schema: &str) -> Result<(), PgError> {
    check_encoding(client)?;
    let exists: bool = client
        .query_one(
            "SELECT to_regclass(quote_ident($1) || '.ask_user_schema') IS NOT NULL",
            &[&schema],
        )
        .map_err(PgError::Query)?
        .get(0);
    let found = if exists { version(client, schema)? } else { 0 };
    match found.cmp(&SCHEMA_VERSION) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(PgError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        }),
        std::cmp::Ordering::Less => Err(PgError::NoSchema {
            schema: schema.to_owned(),
            found,
        }),
    }
}
