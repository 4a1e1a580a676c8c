//! Migrations: `migrations/*.sql` applied in file-name order.
//!
//! Each file runs in its own transaction and is recorded, with a SHA-256 of
//! its text, in `planck_migrations`. A file changed after it was applied is an
//! error naming it. A failing file is reported at file:line:col (the server's
//! error position mapped back to the file) and leaves earlier files applied.
//!
//! A file runs statement by statement ([`split`]), and the indexes and
//! constraints each statement created, dropped, rebuilt or renamed are
//! recorded with its line ([`objects`]), so a later finding about an index
//! can point at the migration line that made it ([`objects::ObjectMap`]).
//!
//! A file whose first line is `-- planck:no-transaction` ([`NO_TRANSACTION`],
//! what `planck explain --write-advice` writes) runs its statements one at a
//! time outside any transaction, as `CREATE INDEX CONCURRENTLY` needs; it is
//! recorded once all of them succeeded. A failure names the statement's
//! line, and the statements before it stay applied.

pub(crate) mod measure;
pub(crate) mod objects;
pub(crate) mod report;
pub(crate) mod split;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio_postgres::Client;

use crate::config::line_col;
use crate::db::ConnInfo;
use crate::error::{Error, PgError, Result};
use crate::output::Log;

pub use objects::{
    Action, DroppedIndex, Kind, ObjectChange, ObjectMap, Origin, index_columns, object_origin,
};

#[derive(Debug, Clone)]
pub struct Migration {
    pub name: String,
    pub path: PathBuf,
    pub sql: String,
    pub checksum: String,
}

#[derive(Debug, Default)]
pub struct Outcome {
    /// Files applied by this run.
    pub applied: Vec<String>,
    /// Files that were already applied.
    pub already: usize,
    /// The indexes and constraints this run's files changed, file by file.
    pub objects: Vec<ObjectChange>,
}

/// The header that runs a file outside a transaction. `explain`'s advice
/// file starts with the same text (a domain does not import another: the
/// two are compared by tests/it/explain_advice.rs).
pub const NO_TRANSACTION: &str = "-- planck:no-transaction";

/// Whether the file's first line is the [`NO_TRANSACTION`] header.
pub fn without_transaction(sql: &str) -> bool {
    sql.lines()
        .next()
        .is_some_and(|l| l.trim_end() == NO_TRANSACTION)
}

/// Lock key for `pg_advisory_lock`, so two planck processes never migrate
/// the same database at once ('planck' in ASCII).
const LOCK_KEY: i64 = 0x706c_616e_636b;

/// Reads the `*.sql` files of `dir`, sorted by name.
/// [`discover`] for the project's folder: a missing one is a usage error
/// saying where migrations go.
pub fn discover_project(dir: &Path) -> Result<Vec<Migration>> {
    discover(dir).map_err(|e| match e {
        Error::ReadFile { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::usage_hint(
                format!("no migrations folder at {}", path.display()),
                "put your schema in migrations/*.sql, or set [paths] migrations in planck.toml",
            )
        }
        other => other,
    })
}

pub fn discover(dir: &Path) -> Result<Vec<Migration>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::ReadFile {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql") && p.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let sql = std::fs::read_to_string(&path).map_err(|source| Error::ReadFile {
                path: path.clone(),
                source,
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let checksum = hex(&Sha256::digest(sql.as_bytes()));
            Ok(Migration {
                name,
                path,
                sql,
                checksum,
            })
        })
        .collect()
}

/// Applies every migration not yet applied; checks the checksums of the others.
pub async fn apply(client: &mut Client, migrations: &[Migration], log: Log) -> Result<Outcome> {
    // Migrating is planck's work, never the application's: out of
    // pg_stat_statements (a suite that runs `planck migrate` under `planck
    // record` must not record the migrations or planck's catalog reads).
    if crate::session::untrack(client).await? == crate::session::StatsMode::Tagged {
        log.debug(
            "this role may not set pg_stat_statements.track: migrate's statements stay tracked",
        );
    }
    keep_out_of_bookkeeping_schema(client, log).await?;
    client
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS planck_migrations (
                name text PRIMARY KEY,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(),
                duration_ms bigint NOT NULL
            );
            {};",
            objects::COLUMN_DDL
        ))
        .await
        .map_err(|e| Error::db("creating planck_migrations", e))?;
    client
        .execute("SELECT /* planck */ pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(|e| Error::db("taking the migration lock", e))?;
    let result = apply_locked(client, migrations, log).await;
    let _ = client
        .execute("SELECT /* planck */ pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await;
    result
}

/// A role named like planck's bookkeeping schema (`planck`, the managed
/// cluster's own role) has that schema first on its search path (`"$user"`)
/// once a seed has created it: `planck_migrations` would then be created
/// anew there and every migration applied again, into it. Migrate leaves
/// that schema off the session's search path.
async fn keep_out_of_bookkeeping_schema(client: &Client, log: Log) -> Result<()> {
    let row = client
        .query_one(
            "SELECT /* planck */ current_schema() IS NOT DISTINCT FROM $1, current_setting('search_path')",
            &[&crate::bookkeeping::SCHEMA],
        )
        .await
        .map_err(|e| Error::db("reading the search path", e))?;
    if !row.get::<_, bool>(0) {
        return Ok(());
    }
    let path: String = row.get(1);
    let own = crate::db::quote_ident(crate::bookkeeping::SCHEMA);
    let kept: Vec<&str> = path
        .split(',')
        .map(str::trim)
        .filter(|s| {
            !matches!(*s, "\"$user\"" | "$user") && *s != crate::bookkeeping::SCHEMA && *s != own
        })
        .collect();
    let kept = if kept.is_empty() {
        "public".to_string()
    } else {
        kept.join(", ")
    };
    log.debug(&format!(
        "search_path {path} leads with planck's bookkeeping schema: migrating with {kept}"
    ));
    client
        .batch_execute(&format!("SET search_path = {kept}"))
        .await
        .map_err(|e| Error::db("setting the search path", e))
}

async fn apply_locked(client: &mut Client, migrations: &[Migration], log: Log) -> Result<Outcome> {
    let rows = client
        .query(
            "SELECT /* planck */ name, checksum FROM planck_migrations",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading planck_migrations", e))?;
    let applied: std::collections::HashMap<String, String> =
        rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let mut outcome = Outcome::default();
    for (i, m) in migrations.iter().enumerate() {
        if let Err(e) = apply_one(client, m, &applied, &mut outcome, log).await {
            let not_run = migrations[i + 1..]
                .iter()
                .filter(|later| !applied.contains_key(&later.name))
                .count();
            log.info(&failure_summary(&outcome.applied, &m.name, not_run));
            return Err(e);
        }
    }
    Ok(outcome)
}

/// Applies one migration unless it was applied before (then checks its
/// checksum), adding what it did to `outcome`.
async fn apply_one(
    client: &mut Client,
    m: &Migration,
    applied: &std::collections::HashMap<String, String>,
    outcome: &mut Outcome,
    log: Log,
) -> Result<()> {
    if let Some(sum) = applied.get(&m.name) {
        if *sum != m.checksum {
            return Err(Error::MigrationChanged {
                name: m.path.display().to_string(),
                applied: sum[..12.min(sum.len())].to_string(),
                current: m.checksum[..12].to_string(),
            });
        }
        outcome.already += 1;
        return Ok(());
    }
    log.info(&format!("applying {}", m.name));
    let started = std::time::Instant::now();
    if without_transaction(&m.sql) {
        let changes = apply_outside_transaction(client, m, started, log).await?;
        outcome.applied.push(m.name.clone());
        outcome.objects.extend(changes);
        return Ok(());
    }
    let tx = client
        .transaction()
        .await
        .map_err(|e| Error::db("starting a transaction", e))?;
    let changes = run_file(&tx, m).await?;
    let ms = started.elapsed().as_millis() as i64;
    tx.execute(
        "INSERT /* planck */ INTO planck_migrations (name, checksum, duration_ms, objects) \
         VALUES ($1, $2, $3, $4)",
        &[&m.name, &m.checksum, &ms, &objects::to_json(&changes)],
    )
    .await
    .map_err(|e| Error::db("recording the migration", e))?;
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("committing {}", m.name), e))?;
    outcome.applied.push(m.name.clone());
    outcome.objects.extend(changes);
    Ok(())
}

/// The line printed before a failed run's error: which files this run
/// committed before `failed` (they stay applied, and the next run skips
/// them), and how many pending files after it did not run. The "applying"
/// lines above it may have scrolled away; this one says it in one place.
fn failure_summary(applied: &[String], failed: &str, not_run: usize) -> String {
    let before = match applied {
        [] => format!("{failed} failed; no file was applied before it in this run"),
        [one] => format!("{failed} failed; applied and committed before it: {one}"),
        many => format!(
            "{failed} failed; applied and committed before it ({} files): {}",
            many.len(),
            many.join(", ")
        ),
    };
    match not_run {
        0 => before,
        1 => format!("{before}; 1 file after it did not run"),
        n => format!("{before}; {n} files after it did not run"),
    }
}

/// A [`NO_TRANSACTION`] file: each statement on its own (autocommit), then
/// the bookkeeping row. On a failure the earlier statements stay, and the
/// file is not recorded (the next run starts it again).
async fn apply_outside_transaction(
    client: &Client,
    m: &Migration,
    started: std::time::Instant,
    log: Log,
) -> Result<Vec<ObjectChange>> {
    log.debug(&format!(
        "{}: {NO_TRANSACTION}: its statements run one at a time, outside a transaction",
        m.name
    ));
    let changes = match run_file(client, m).await {
        Ok(c) => c,
        Err(e) => {
            log.warn(&format!(
                "{} runs outside a transaction: the statements before the failing one stay \
                 applied, and the file is not recorded",
                m.name
            ));
            return Err(e);
        }
    };
    let ms = started.elapsed().as_millis() as i64;
    client
        .execute(
            "INSERT /* planck */ INTO planck_migrations (name, checksum, duration_ms, objects) \
             VALUES ($1, $2, $3, $4)",
            &[&m.name, &m.checksum, &ms, &objects::to_json(&changes)],
        )
        .await
        .map_err(|e| Error::db("recording the migration", e))?;
    Ok(changes)
}

/// Runs a file's statements one by one, diffing the indexes and
/// constraints around each. A file the tokenizer cannot cut runs whole,
/// its changes put on its first statement's line.
async fn run_file(
    tx: &impl tokio_postgres::GenericClient,
    m: &Migration,
) -> Result<Vec<ObjectChange>> {
    let pieces = split::statements(&m.sql).unwrap_or_else(|| {
        vec![split::Piece {
            text: m.sql.clone(),
            offset: 0,
            line: m
                .sql
                .lines()
                .position(|l| !l.trim().is_empty())
                .unwrap_or(0)
                + 1,
        }]
    });
    let mut changes = Vec::new();
    let mut before = objects::snapshot(tx).await?;
    for piece in &pieces {
        if let Err(e) = tx.batch_execute(&piece.text).await {
            return Err(statement_error(m, piece, e));
        }
        let after = objects::snapshot(tx).await?;
        changes.extend(objects::diff(&before, &after, &m.name, piece.line));
        before = after;
    }
    Ok(changes)
}

/// A failed statement, at its file:line:col (the server counts the
/// position from the start of the statement's text).
fn statement_error(m: &Migration, piece: &split::Piece, e: tokio_postgres::Error) -> Error {
    match e.as_db_error() {
        Some(db) => {
            let pg = PgError::from_db(db);
            let (line, column) = match pg.position {
                Some(pos) => {
                    let before = m.sql[..piece.offset].chars().count();
                    let (l, c) = char_position_to_line_col(&m.sql, before + pos as usize);
                    (Some(l), Some(c))
                }
                None => (Some(piece.line), None),
            };
            Error::Migration {
                path: m.path.clone(),
                line,
                column,
                pg,
            }
        }
        None => Error::db(format!("applying {}", m.name), e),
    }
}

/// The server counts error positions in characters from 1.
fn char_position_to_line_col(text: &str, pos: usize) -> (usize, usize) {
    let byte = text
        .char_indices()
        .nth(pos.saturating_sub(1))
        .map(|(b, _)| b)
        .unwrap_or(text.len());
    line_col(text, byte)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Applies `dir`'s migrations to `conn`, recreating the database first when `fresh`.
pub async fn run(
    conn: &ConnInfo,
    dir: &Path,
    fresh: bool,
    force: bool,
    log: Log,
) -> Result<Outcome> {
    let migrations = discover_project(dir)?;
    if fresh {
        if !conn.managed && !force {
            return Err(Error::usage_hint(
                format!(
                    "refusing to drop {}: it is not planck's managed database",
                    conn.display()
                ),
                "add --force if you really mean to drop and recreate it",
            ));
        }
        recreate_database(conn, log).await?;
    }
    let mut client = conn.connect().await?;
    apply(&mut client, &migrations, log).await
}

/// Drops and recreates the connection's database.
pub async fn recreate_database(conn: &ConnInfo, log: Log) -> Result<()> {
    let name = conn.dbname();
    log.info(&format!("recreating database {name}"));
    let admin = conn.with_database("postgres").connect().await?;
    let q = crate::db::quote_ident(&name);
    crate::db::drop_database(&admin, &name)
        .await
        .map_err(|e| Error::db(format!("dropping database {name}"), e))?;
    admin
        .batch_execute(&format!("CREATE DATABASE {q}"))
        .await
        .map_err(|e| Error::db(format!("creating database {name}"), e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_names_the_files_it_committed_before_the_failure() {
        let applied = ["0001_a.sql".to_string(), "0002_b.sql".to_string()];
        assert_eq!(
            failure_summary(&applied, "0003_c.sql", 2),
            "0003_c.sql failed; applied and committed before it (2 files): 0001_a.sql, \
             0002_b.sql; 2 files after it did not run"
        );
        assert_eq!(
            failure_summary(&applied[..1], "0002_b.sql", 0),
            "0002_b.sql failed; applied and committed before it: 0001_a.sql"
        );
        assert_eq!(
            failure_summary(&[], "0001_a.sql", 1),
            "0001_a.sql failed; no file was applied before it in this run; 1 file after it did not run"
        );
    }

    #[test]
    fn positions_map_to_lines_and_columns() {
        let sql = "-- café\nCREATE TABLE t (\n  id intt\n);";
        // 'intt' starts at character 28 (1-based).
        let pos = sql
            .chars()
            .take_while(|_| true)
            .collect::<String>()
            .find("intt")
            .unwrap();
        let char_pos = sql[..pos].chars().count() + 1;
        assert_eq!(char_position_to_line_col(sql, char_pos), (3, 6));
    }

    #[test]
    fn the_no_transaction_header_is_the_first_line_only() {
        assert!(without_transaction(
            "-- planck:no-transaction\nCREATE INDEX CONCURRENTLY i ON t (c);"
        ));
        assert!(without_transaction("-- planck:no-transaction\r\nSELECT 1;"));
        assert!(!without_transaction(
            "-- a comment\n-- planck:no-transaction\nSELECT 1;"
        ));
        assert!(!without_transaction("-- planck:no-transactions\nSELECT 1;"));
        assert!(!without_transaction(""));
    }

    #[test]
    fn discovers_sql_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0002_b.sql"), "select 2").unwrap();
        std::fs::write(dir.path().join("0001_a.sql"), "select 1").unwrap();
        std::fs::write(dir.path().join("notes.md"), "x").unwrap();
        let m = discover(dir.path()).unwrap();
        let names: Vec<_> = m.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["0001_a.sql", "0002_b.sql"]);
        assert_eq!(m[0].checksum.len(), 64);
    }
}
