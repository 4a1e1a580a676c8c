//! Production's planner statistics, captured into a file a team commits
//! (`planck stats capture`, issue 49), and compared with a database's own
//! (the fidelity report). Named apart from [`crate::stats`], which reads
//! pg_stat_statements (what statements ran): this module reads what the
//! planner knows of the data (pg_class, pg_stats, pg_stats_ext), never a
//! row of it.
//!
//! [`capture`] reads ([`capture::read`] every value, then
//! [`values::apply`] keeps what `--values` says); [`compare()`] measures how
//! far a database's statistics are from a file's; [`setup::sql`] is the
//! SQL that lets a role with no SELECT on any table read them.

pub(crate) mod capture;
pub(crate) mod compare;
pub(crate) mod literal;
pub mod seed_spec;
pub mod setup;
pub(crate) mod values;

pub use compare::compare;

use std::path::Path;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;
use crate::wire::stats::{FORMAT_VERSION, StatsFile, ValuesMode};

/// Captures the statistics of the database `conn` names, keeping of the
/// values what `mode` says. Fails when the role can see no column's
/// statistics (naming the role and what would let it), and when no table
/// has any to see.
pub async fn capture(conn: &ConnInfo, mode: ValuesMode, log: Log) -> Result<StatsFile> {
    let client = conn.connect().await?;
    // Kept out of pg_stat_statements where the role may; harmless where not.
    let _ = crate::session::untrack(&client).await;
    let (mut file, reader) = capture::read(&client, log).await?;
    check_visible(&file, &reader)?;
    for t in file.tables.iter().filter(|t| !t.analyzed) {
        log.info(&format!(
            "{}.{}: no statistics ({})",
            t.schema,
            t.name,
            if t.reltuples > 0.0 {
                "hidden from this role"
            } else {
                "never analyzed"
            }
        ));
    }
    values::apply(&mut file, mode);
    Ok(file)
}

/// A capture that saw no statistics at all is an error, not an empty file.
fn check_visible(file: &StatsFile, reader: &capture::Reader) -> Result<()> {
    if file.tables.is_empty() {
        return Err(Error::usage_hint(
            format!(
                "database {} has no table to capture statistics of",
                reader.database
            ),
            "planck stats capture reads the tables outside pg_catalog, information_schema \
             and planck's own schemas; is --database-url the right database?",
        ));
    }
    if file.tables.iter().any(|t| t.analyzed) {
        return Ok(());
    }
    let sized = file.tables.iter().filter(|t| t.reltuples > 0.0).count();
    if sized == 0 {
        return Err(Error::usage_hint(
            format!(
                "no table of database {} has statistics: none was analyzed",
                reader.database
            ),
            "run ANALYZE (or wait for autovacuum) on the database, then capture again",
        ));
    }
    let how = if reader.functions {
        format!(
            "{}'s functions return no statistics: their owner may not SELECT these \
             tables; create them as a superuser or the tables' owner",
            setup::SCHEMA
        )
    } else {
        format!(
            "pg_stats shows a column only to a role that may SELECT it (pg_read_all_stats \
             does not change that); to capture without SELECT on the tables, run the SQL of \
             `planck stats setup-sql --role {}` once as a superuser",
            reader.role
        )
    };
    Err(Error::usage_hint(
        format!(
            "role {} sees the statistics of no column in database {} ({sized} table(s) \
             were analyzed)",
            reader.role, reader.database
        ),
        how,
    ))
}

/// Reads a statistics file, refusing one of a newer format or that does
/// not parse (naming the file, line and column).
pub fn read_file(path: &Path) -> Result<StatsFile> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |line: Option<usize>, column: Option<usize>, message: String| Error::Config {
        path: path.to_path_buf(),
        line,
        column,
        message,
        hint: Some("a file `planck stats capture` wrote, unedited".to_string()),
    };
    let version: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(Some(e.line()), Some(e.column()), e.to_string()))?;
    if let Some(v) = version.get("format_version").and_then(|v| v.as_u64())
        && v > u64::from(FORMAT_VERSION)
    {
        return Err(bad(
            None,
            None,
            format!(
                "format_version {v} is newer than this planck reads ({FORMAT_VERSION}): \
                 upgrade planck"
            ),
        ));
    }
    serde_json::from_str(&text).map_err(|e| bad(Some(e.line()), Some(e.column()), e.to_string()))
}

/// The file's text: pretty JSON, fields in their declared order, a final newline.
pub fn to_text(file: &StatsFile) -> String {
    let mut s = serde_json::to_string_pretty(file).expect("a StatsFile serializes");
    s.push('\n');
    s
}
