//! planck's own bookkeeping in the user's database: the foreign keys `planck
//! seed` dropped and has not restored yet, and the lock two seeds of one
//! database take.
//!
//! Everything lives in a schema planck owns, `planck` (`planck.seed_saved`),
//! never in the user's `public` schema, and no saved constraint is left
//! behind after a run that completes: the table is dropped, then the schema
//! if it is empty. One table outlives runs on purpose: `planck.seeded`, the
//! tables a seed wrote, which `--truncate` replaces (rows that were there
//! before the first seed are the migrations' reference data, and are kept).
//! And while a seed runs, `planck.seed_run` records it (its parameters and
//! which tables it has loaded), so that the next seed after a stop finishes
//! it to the same dataset; it is dropped when the seed ends.
//! What the table holds is DDL that planck executes, so before anything is
//! read from it the schema's and the table's owner must be the current role
//! or a superuser, and the table must carry planck's marker comment (a user
//! table that merely has the name is refused, clearly). Statements are run
//! one at a time through the extended protocol, so a planted `; DROP ...`
//! cannot ride along.
//!
//! Every command that touches a database calls [`warn_pending`] once: after a
//! SIGKILL the saved foreign keys wait for `planck seed --restore`.
//!
//! A shared layer (rank 2): imports only `db`, `error` and `output`.
#![allow(clippy::result_large_err)] // see src/seed/mod.rs

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;

/// The schema planck owns.
pub const SCHEMA: &str = "planck";
/// The saved foreign keys, schema-qualified.
pub const TABLE: &str = "planck.seed_saved";
/// Where planck 0.x kept them; read once and migrated by [`ensure`].
pub const LEGACY_TABLE: &str = "public.planck_seed_saved";
/// The tables a seed has written, so that `--truncate` replaces what planck
/// wrote and keeps the rows the migrations wrote (issue 9 point 11). It
/// outlives the run: the schema stays while it holds a row.
pub const SEEDED: &str = "planck.seeded";
/// The comment on [`SEEDED`].
const SEEDED_MARKER: &str = "planck seed: tables planck has seeded (format 1)";
/// The seed under way: one row per table it writes, with the run's
/// parameters (their digest and the command that gives them) and whether
/// the table's load committed. Written before the load, each table's mark
/// set in that table's own load transaction, dropped when the run ends: a
/// row left here is a run that was stopped, which the next `planck seed`
/// finishes (the same parameters) or refuses to mix with another dataset.
pub const RUN: &str = "planck.seed_run";
/// The comment on [`RUN`].
const RUN_MARKER: &str = "planck seed: the seed under way (format 1)";
/// The comment on [`TABLE`] that tells planck's table from a user's.
const MARKER: &str = "planck seed: constraints to restore (format 2)";
/// The advisory-lock class planck's locks use (`plnk` in ASCII); the second
/// key says which lock.
const LOCK_CLASS: i32 = 0x706c_6e6b;
const LOCK_SEED: i32 = 1;
const LOCK_SAVE: i32 = 2;

/// What a saved row holds: a foreign key, or an index (rows of planck 0.x
/// only); its `kind` column says `fk` or `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavedKind {
    ForeignKey,
    Index,
}

impl SavedKind {
    fn parse(s: &str) -> SavedKind {
        if s == "index" {
            SavedKind::Index
        } else {
            SavedKind::ForeignKey
        }
    }

    /// `fk` or `index`, as the column and messages say it.
    pub fn as_str(self) -> &'static str {
        match self {
            SavedKind::ForeignKey => "fk",
            SavedKind::Index => "index",
        }
    }
}

/// What a saved constraint's row says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Dropped; the definition is only here.
    Dropped,
    /// Re-added `NOT VALID` (enforced for new rows), not validated yet.
    NotValid,
}

impl State {
    fn parse(s: &str) -> State {
        if s == "not_valid" {
            State::NotValid
        } else {
            State::Dropped
        }
    }
}

/// One constraint `planck seed` saved and has not restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingConstraint {
    pub id: i64,
    pub kind: SavedKind,
    /// The table, schema-qualified and quoted as `pg_class` names it.
    pub table: String,
    pub name: String,
    /// `pg_get_constraintdef` (for an index: `pg_get_indexdef`).
    pub def: String,
    pub state: State,
    /// Whether the row is still in [`LEGACY_TABLE`] (not migrated yet).
    pub legacy: bool,
}

impl PendingConstraint {
    /// `name on table`, as messages say it.
    pub fn label(&self) -> String {
        format!("{} on {}", self.name, self.table)
    }
}

fn dberr(what: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |e| Error::db(what, e)
}

/// Facts about a relation planck would read from: its owner and whether it is planck's.
struct Found {
    owner: String,
    trusted: bool,
    marked: bool,
    has_columns: bool,
}

/// Whether `table` (schema-qualified) exists, and who owns it and its schema
/// (`legacy`: the table of planck 0.x in `public`, a schema nobody in
/// particular owns (`pg_database_owner` on 15): only the table's owner counts).
async fn find(c: &Client, table: &str, columns: &[&str], legacy: bool) -> Result<Option<Found>> {
    let cols: Vec<String> = columns.iter().map(|s| s.to_string()).collect();
    let row = c
        .query_opt(
            "SELECT r.rolname::text, n.nspowner = u.oid OR s.rolsuper OR $4,
                    c.relowner = u.oid OR o.rolsuper,
                    c.relkind = 'r' AND obj_description(c.oid, 'pg_class') IS NOT DISTINCT FROM $3,
                    (SELECT count(*) FROM pg_attribute a
                      WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                        AND a.attname = ANY ($2::text[])) = cardinality($2::text[])
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               JOIN pg_roles o ON o.oid = c.relowner
               JOIN pg_roles r ON r.oid = c.relowner
               JOIN pg_roles s ON s.oid = n.nspowner
               CROSS JOIN (SELECT oid FROM pg_roles WHERE rolname = current_user) u
              WHERE c.oid = to_regclass($1)",
            &[&table, &cols, &MARKER, &legacy],
        )
        .await
        .map_err(dberr("looking for planck's bookkeeping"))?;
    Ok(row.map(|r| {
        let (schema_ok, table_ok): (bool, bool) = (r.get(1), r.get(2));
        Found {
            owner: r.get(0),
            trusted: schema_ok && table_ok,
            marked: r.get(3),
            has_columns: r.get(4),
        }
    }))
}

const COLUMNS: &[&str] = &["id", "kind", "table_name", "name", "def", "state"];
const LEGACY_COLUMNS: &[&str] = &["id", "kind", "table_name", "name", "def"];

fn not_ours(table: &str, why: &str) -> Error {
    Error::usage_hint(
        format!("{table} exists but is not planck's bookkeeping: {why}"),
        format!(
            "planck keeps what `planck seed` must restore in {TABLE}; rename or move your \
             table (or schema `{SCHEMA}`), then run planck again"
        ),
    )
}

fn untrusted(table: &str, owner: &str) -> Error {
    Error::usage_hint(
        format!(
            "{table} belongs to role {owner}, neither you nor a superuser: planck does not \
             run the definitions it holds"
        ),
        format!(
            "inspect it (`SELECT * FROM {table}`), re-create what it lists by hand, then drop it \
             (`DROP TABLE {table}`)"
        ),
    )
}

/// Checks that `table`, when it exists, is planck's and trusted; returns whether it exists.
async fn check(c: &Client, table: &str, columns: &[&str], legacy: bool) -> Result<bool> {
    let Some(f) = find(c, table, columns, legacy).await? else {
        return Ok(false);
    };
    if !f.has_columns {
        return Err(not_ours(
            table,
            "it lacks the columns planck writes (id, kind, table_name, name, def)",
        ));
    }
    if !legacy && !f.marked {
        return Err(not_ours(table, "it lacks planck's marker comment"));
    }
    if !f.trusted {
        return Err(untrusted(table, &f.owner));
    }
    Ok(true)
}

async fn read(c: &Client, table: &str, legacy: bool) -> Result<Vec<PendingConstraint>> {
    let state = if legacy { "'dropped'" } else { "state" };
    let rows = c
        .query(
            &format!(
                "SELECT id, kind, table_name, name, def, {state} FROM {table} ORDER BY kind DESC, id"
            ),
            &[],
        )
        .await
        .map_err(dberr("reading planck's saved constraints"))?;
    Ok(rows
        .iter()
        .map(|r| PendingConstraint {
            id: r.get(0),
            kind: SavedKind::parse(r.get(1)),
            table: r.get(2),
            name: r.get(3),
            def: r.get(4),
            state: State::parse(r.get(5)),
            legacy,
        })
        .collect())
}

/// Whether [`TABLE`] exists (checked: planck's, and trusted).
pub async fn exists(c: &Client) -> Result<bool> {
    check(c, TABLE, COLUMNS, false).await
}

/// Every constraint an interrupted `planck seed` left to restore, in
/// [`TABLE`] or (not migrated yet) [`LEGACY_TABLE`]. Reads only. Errors when
/// a table of that name is not planck's or not trusted.
pub async fn pending(c: &Client) -> Result<Vec<PendingConstraint>> {
    let mut out = Vec::new();
    if check(c, TABLE, COLUMNS, false).await? {
        out.extend(read(c, TABLE, false).await?);
    }
    if check(c, LEGACY_TABLE, LEGACY_COLUMNS, true).await? {
        out.extend(read(c, LEGACY_TABLE, true).await?);
    }
    Ok(out)
}

/// The warning [`warn_pending`] prints, or None when nothing waits.
pub fn pending_message(p: &[PendingConstraint]) -> Option<String> {
    if p.is_empty() {
        return None;
    }
    let not_valid = p.iter().filter(|x| x.state == State::NotValid).count();
    let mut names: Vec<String> = p.iter().take(5).map(PendingConstraint::label).collect();
    if p.len() > 5 {
        names.push(format!("and {} more", p.len() - 5));
    }
    Some(format!(
        "{} constraint(s) an interrupted `planck seed` dropped wait to be restored{}: {}; \
         run `planck seed --restore`",
        p.len(),
        if not_valid > 0 {
            format!(" ({not_valid} in place as NOT VALID, not yet validated)")
        } else {
            String::new()
        },
        names.join(", ")
    ))
}

/// Warns when an interrupted `planck seed` left constraints to restore (what
/// every command touching a database calls once). Never fails: a check
/// that cannot run is itself a warning.
pub async fn warn_pending(c: &Client, log: Log) {
    match pending(c).await {
        Ok(p) => {
            if let Some(m) = pending_message(&p) {
                log.warn(&m);
            }
        }
        Err(e) => {
            let text = crate::error::render(&e);
            log.warn(text.strip_prefix("error: ").unwrap_or(&text))
        }
    }
}

/// [`warn_pending`] on a connection of its own (untracked), for commands
/// that do their work elsewhere: explain, migrate, replay. Never fails: an
/// unreachable database is the command's own error to report.
pub async fn warn_pending_on(conn: &ConnInfo, log: Log) {
    if let Ok(c) = conn.connect().await
        && crate::session::untrack(&c).await.is_ok()
    {
        warn_pending(&c, log).await;
    }
}

/// Creates [`SCHEMA`] and [`TABLE`] when missing, checks both are planck's
/// and trusted, and migrates the rows of [`LEGACY_TABLE`] once (dropping it).
/// Shards starting together run this one at a time (a session-level lock
/// around it): concurrent `CREATE`s of one name collide in the catalog.
pub async fn ensure(c: &mut Client) -> Result<()> {
    c.execute(
        "SELECT pg_advisory_lock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("waiting to create planck's bookkeeping"))?;
    let r = ensure_locked(c).await;
    c.execute(
        "SELECT pg_advisory_unlock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("releasing a lock"))?;
    r
}

async fn ensure_locked(c: &mut Client) -> Result<()> {
    ensure_schema(c).await?;
    ensure_saved_table(c).await
}

/// Schema planck, created when missing; an error when another role owns it.
async fn ensure_schema(c: &Client) -> Result<()> {
    let schema: Option<(bool, String)> = c
        .query_opt(
            "SELECT n.nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
                    OR r.rolsuper, r.rolname::text
               FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE n.nspname = $1",
            &[&SCHEMA],
        )
        .await
        .map_err(dberr("looking for schema planck"))?
        .map(|r| (r.get(0), r.get(1)));
    match schema {
        Some((false, owner)) => {
            return Err(Error::usage_hint(
                format!(
                    "schema {SCHEMA} belongs to role {owner}, neither you nor a superuser: \
                     planck keeps its bookkeeping there and runs what it holds"
                ),
                format!(
                    "if it is yours, rename it (`ALTER SCHEMA {SCHEMA} RENAME TO ...`); \
                     if it is planck's, `ALTER SCHEMA {SCHEMA} OWNER TO` the role that seeds"
                ),
            ));
        }
        Some((true, _)) => {}
        None => {
            // USAGE and CREATE for every role: the schema outlives a run
            // (planck.seeded), and the next seed may run as another role,
            // which keeps its own saved keys there. What planck executes
            // from the schema is checked for its owner before it is read.
            if let Err(e) = c
                .batch_execute(&format!(
                    "CREATE SCHEMA IF NOT EXISTS {SCHEMA};
                     GRANT USAGE, CREATE ON SCHEMA {SCHEMA} TO PUBLIC"
                ))
                .await
            {
                if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
                    let r = c
                        .query_one(
                            "SELECT quote_ident(current_database()), quote_ident(current_user)",
                            &[],
                        )
                        .await
                        .map_err(dberr("naming the database"))?;
                    let (db, role): (String, String) = (r.get(0), r.get(1));
                    return Err(Error::usage_hint(
                        format!(
                            "role {role} may not create schema {SCHEMA}, where planck keeps the \
                             foreign keys it drops during a seed"
                        ),
                        format!(
                            "ask the database's owner or a superuser to run `GRANT CREATE ON \
                             DATABASE {db} TO {role};`"
                        ),
                    ));
                }
                return Err(Error::db("creating schema planck", e));
            }
        }
    }
    Ok(())
}

/// [`TABLE`], created when missing; [`LEGACY_TABLE`] migrated into it.
async fn ensure_saved_table(c: &mut Client) -> Result<()> {
    if !check(c, TABLE, COLUMNS, false).await? {
        let tx = c
            .transaction()
            .await
            .map_err(dberr("creating planck.seed_saved"))?;
        tx.execute(
            &format!(
                "CREATE TABLE {TABLE} (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    kind text NOT NULL CHECK (kind IN ('index', 'fk')),
                    table_name text NOT NULL,
                    name text NOT NULL,
                    def text NOT NULL,
                    state text NOT NULL DEFAULT 'dropped' CHECK (state IN ('dropped', 'not_valid')),
                    saved_at timestamptz NOT NULL DEFAULT now())"
            ),
            &[],
        )
        .await
        .map_err(dberr("creating planck.seed_saved"))?;
        tx.execute(
            &format!(
                "COMMENT ON TABLE {TABLE} IS {}",
                crate::db::quote_literal(MARKER)
            ),
            &[],
        )
        .await
        .map_err(dberr("creating planck.seed_saved"))?;
        tx.commit()
            .await
            .map_err(dberr("creating planck.seed_saved"))?;
    }
    if check(c, LEGACY_TABLE, LEGACY_COLUMNS, true).await? {
        let tx = c
            .transaction()
            .await
            .map_err(dberr("migrating planck_seed_saved"))?;
        tx.execute(
            &format!(
                "INSERT INTO {TABLE} (kind, table_name, name, def)
                 SELECT kind, table_name, name, def FROM {LEGACY_TABLE} ORDER BY id"
            ),
            &[],
        )
        .await
        .map_err(dberr("migrating public.planck_seed_saved"))?;
        tx.execute(&format!("DROP TABLE {LEGACY_TABLE}"), &[])
            .await
            .map_err(dberr("dropping public.planck_seed_saved"))?;
        tx.commit()
            .await
            .map_err(dberr("migrating planck_seed_saved"))?;
    }
    Ok(())
}

/// Whether [`SEEDED`] exists; an error when a table of that name is not planck's.
async fn seeded_exists(c: &Client) -> Result<bool> {
    marked_exists(c, SEEDED, SEEDED_MARKER).await
}

/// Whether `table` exists; an error when it lacks planck's `marker`.
async fn marked_exists(c: &Client, table: &str, marker: &str) -> Result<bool> {
    let marked: Option<bool> = c
        .query_opt(
            "SELECT obj_description(c.oid, 'pg_class') IS NOT DISTINCT FROM $2
               FROM pg_class c WHERE c.oid = to_regclass($1)",
            &[&table, &marker],
        )
        .await
        .map_err(dberr("looking for planck's bookkeeping"))?
        .map(|r| r.get(0));
    match marked {
        None => Ok(false),
        Some(true) => Ok(true),
        Some(false) => Err(not_ours(table, "it lacks planck's marker comment")),
    }
}

/// Whether the current role or a superuser owns `table` (which exists):
/// only such a record decides which tables planck replaces.
async fn owned(c: &Client, table: &str) -> Result<bool> {
    Ok(c.query_one(
        "SELECT c.relowner = u.oid OR o.rolsuper
               FROM pg_class c JOIN pg_roles o ON o.oid = c.relowner
              CROSS JOIN (SELECT oid FROM pg_roles WHERE rolname = current_user) u
              WHERE c.oid = to_regclass($1)",
        &[&table],
    )
    .await
    .map_err(dberr("looking for planck's bookkeeping"))?
    .get(0))
}

/// The seed a stop signal, a kill or a lost connection left unfinished
/// (its rows in [`RUN`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnfinishedRun {
    /// The digest of its parameters (what makes its dataset).
    pub fingerprint: String,
    /// The `planck seed` command that gives its parameters.
    pub command: String,
    /// Each table it writes (`schema.table`), its oid, and whether its
    /// load committed (and was not emptied since).
    pub tables: Vec<(String, u32, bool)>,
}

impl UnfinishedRun {
    /// Whether `table` (`schema.table`) is one the run writes.
    pub fn writes(&self, table: &str) -> bool {
        self.tables.iter().any(|(t, _, _)| t == table)
    }

    /// The tables whose load committed, as `schema.table`.
    pub fn loaded(&self) -> Vec<&str> {
        self.tables
            .iter()
            .filter(|t| t.2)
            .map(|t| t.0.as_str())
            .collect()
    }
}

/// The unfinished seed of this database, if one is recorded (by the
/// current role or a superuser: a record another role could write does not
/// decide what planck replaces). Reads only.
pub async fn unfinished_run(c: &Client) -> Result<Option<UnfinishedRun>> {
    if !marked_exists(c, RUN, RUN_MARKER).await? || !owned(c, RUN).await? {
        return Ok(None);
    }
    let rows = c
        .query(
            &format!(
                "SELECT table_name, oid::bigint, loaded, fingerprint, command FROM {RUN} ORDER BY table_name"
            ),
            &[],
        )
        .await
        .map_err(dberr("reading planck.seed_run"))?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(UnfinishedRun {
        fingerprint: first.get(3),
        command: first.get(4),
        tables: rows
            .iter()
            .map(|r| (r.get(0), r.get::<_, i64>(1) as u32, r.get(2)))
            .collect(),
    }))
}

/// Records the seed about to load `tables` (`schema.table` and oid) with
/// its parameters' `fingerprint` and `command`, before it writes anything.
/// The same fingerprint as the recorded run keeps each table's mark (the
/// run resumes); another replaces the record. Returns whether the run is
/// recorded: a role that may not write the record (another role's) loads
/// without one, as before this record existed, and says so.
pub async fn start_run(
    c: &Client,
    tables: &[(String, u32)],
    fingerprint: &str,
    command: &str,
    log: Log,
) -> Result<bool> {
    if marked_exists(c, RUN, RUN_MARKER).await? {
        if !owned(c, RUN).await? {
            log.warn(&format!(
                "{RUN} belongs to another role: this seed is not recorded, so if it is \
                 stopped, the next one cannot finish it (`planck seed --truncate` starts over)"
            ));
            return Ok(false);
        }
    } else {
        create_marked(c, RUN, RUN_MARKER, &run_ddl()).await?;
    }
    let names: Vec<&str> = tables.iter().map(|t| t.0.as_str()).collect();
    let oids: Vec<i64> = tables.iter().map(|t| i64::from(t.1)).collect();
    // One transaction (the lock's connection is shared, hence no
    // `Transaction`): a kill never leaves the record half replaced.
    c.batch_execute("BEGIN")
        .await
        .map_err(dberr("recording the seed under way"))?;
    let written = write_run(c, &names, &oids, fingerprint, command).await;
    let end = if written.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    c.batch_execute(end)
        .await
        .map_err(dberr("recording the seed under way"))?;
    written?;
    Ok(true)
}

async fn write_run(
    tx: &Client,
    names: &[&str],
    oids: &[i64],
    fingerprint: &str,
    command: &str,
) -> Result<()> {
    // Another run's record (other parameters), or tables this run no
    // longer writes, or a table re-created since (another oid): gone.
    tx.execute(
        &format!(
            "DELETE FROM {RUN} r WHERE r.fingerprint <> $3
                 OR NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::bigint[]) t(n, o)
                                 WHERE t.n = r.table_name AND t.o = r.oid)"
        ),
        &[&names, &oids, &fingerprint],
    )
    .await
    .map_err(dberr("recording the seed under way"))?;
    tx.execute(
        &format!(
            "INSERT INTO {RUN} (table_name, oid, fingerprint, command)
             SELECT n, o, $3, $4 FROM unnest($1::text[], $2::bigint[]) t(n, o)
             ON CONFLICT (table_name) DO NOTHING"
        ),
        &[&names, &oids, &fingerprint, &command],
    )
    .await
    .map_err(dberr("recording the seed under way"))?;
    Ok(())
}

fn run_ddl() -> String {
    format!(
        "CREATE TABLE {RUN} (
            table_name text PRIMARY KEY,
            oid bigint NOT NULL,
            fingerprint text NOT NULL,
            command text NOT NULL,
            loaded boolean NOT NULL DEFAULT false,
            started_at timestamptz NOT NULL DEFAULT now())"
    )
}

/// Marks table `oid` loaded, inside the transaction that loads it: the
/// mark commits with the rows, or neither does.
pub async fn mark_loaded(tx: &tokio_postgres::Transaction<'_>, oid: u32) -> Result<()> {
    tx.execute(
        &format!("UPDATE {RUN} SET loaded = true WHERE oid = $1"),
        &[&i64::from(oid)],
    )
    .await
    .map_err(dberr("marking a table loaded in planck.seed_run"))?;
    Ok(())
}

/// Unmarks the tables `oids` (inside the transaction that empties them,
/// after a failed load), when a run is recorded.
pub async fn mark_emptied(tx: &tokio_postgres::Transaction<'_>, oids: &[u32]) -> Result<()> {
    let recorded: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&RUN])
        .await
        .map_err(dberr("looking for planck.seed_run"))?
        .get(0);
    if recorded {
        let oids: Vec<i64> = oids.iter().map(|o| i64::from(*o)).collect();
        tx.execute(
            &format!("UPDATE {RUN} SET loaded = false WHERE oid = ANY ($1)"),
            &[&oids],
        )
        .await
        .map_err(dberr("unmarking emptied tables in planck.seed_run"))?;
    }
    Ok(())
}

/// Drops the record of the seed under way (it ended), then schema planck
/// when nothing else is in it.
pub async fn finish_run(c: &Client) -> Result<()> {
    if !marked_exists(c, RUN, RUN_MARKER).await? || !owned(c, RUN).await? {
        return Ok(());
    }
    let quiet = quiet(c).await?;
    let dropped = async {
        c.execute(&format!("DROP TABLE {RUN}"), &[])
            .await
            .map_err(dberr("dropping planck.seed_run"))?;
        drop_schema_if_empty(c).await
    }
    .await;
    loud(c, quiet).await?;
    dropped
}

/// The tables (`schema.table`) an earlier `planck seed` wrote in this database.
pub async fn seeded(c: &Client) -> Result<std::collections::HashSet<String>> {
    if !seeded_exists(c).await? {
        return Ok(Default::default());
    }
    // Only a record the current role or a superuser wrote decides what
    // --truncate replaces.
    let trusted: bool = c
        .query_one(
            "SELECT c.relowner = u.oid OR o.rolsuper
               FROM pg_class c JOIN pg_roles o ON o.oid = c.relowner
              CROSS JOIN (SELECT oid FROM pg_roles WHERE rolname = current_user) u
              WHERE c.oid = to_regclass($1)",
            &[&SEEDED],
        )
        .await
        .map_err(dberr("looking for planck.seeded"))?
        .get(0);
    if !trusted {
        return Ok(Default::default());
    }
    Ok(c.query(&format!("SELECT table_name FROM {SEEDED}"), &[])
        .await
        .map_err(dberr("reading planck.seeded"))?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// The tables an earlier `planck seed` grew past the rows the migrations
/// wrote into them (issue 47), as `(schema.table, last key, rows kept)`:
/// the migrations' rows are those up to `last`, which a later `--truncate`
/// keeps. Empty when the record predates these columns or is not trusted.
pub async fn seeded_grown(c: &Client) -> Result<Vec<(String, i64, u64)>> {
    if !seeded_exists(c).await? || !owned(c, SEEDED).await? || !seeded_has_grown(c).await? {
        return Ok(Vec::new());
    }
    Ok(c.query(
        &format!(
            "SELECT table_name, grown_last, grown_kept FROM {SEEDED}
                  WHERE grown_last IS NOT NULL AND grown_kept IS NOT NULL ORDER BY table_name"
        ),
        &[],
    )
    .await
    .map_err(dberr("reading planck.seeded"))?
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get::<_, i64>(2).max(0) as u64))
    .collect())
}

/// Whether [`SEEDED`] (which exists) has the grown tables' columns (a
/// record written before them has not).
async fn seeded_has_grown(c: &Client) -> Result<bool> {
    Ok(c.query_one(
        "SELECT count(*) = 2 FROM pg_attribute
          WHERE attrelid = to_regclass($1) AND attname IN ('grown_last', 'grown_kept')
            AND NOT attisdropped",
        &[&SEEDED],
    )
    .await
    .map_err(dberr("looking for planck.seeded"))?
    .get(0))
}

/// Records that this seed writes `tables` (`schema.table`), before it
/// writes them: a run stopped halfway still left planck's rows there.
/// `grown`: those it grows past the migrations' rows, each with the last
/// key and the row count the migrations left (see [`seeded_grown`]).
pub async fn record_seeded(
    c: &Client,
    tables: &[String],
    seed: u64,
    grown: &[(String, i64, u64)],
) -> Result<()> {
    if tables.is_empty() {
        return Ok(());
    }
    c.execute(
        "SELECT pg_advisory_lock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("waiting to create planck's bookkeeping"))?;
    let created = create_seeded(c).await;
    c.execute(
        "SELECT pg_advisory_unlock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("releasing a lock"))?;
    created?;
    // A record of a planck before the grown tables' columns gains them
    // (by its owner; another role's record stays without, as before).
    let grown_columns = seeded_has_grown(c).await? || {
        let quiet = quiet(c).await?;
        let added = c
            .batch_execute(&format!(
                "ALTER TABLE {SEEDED} ADD COLUMN IF NOT EXISTS grown_last bigint,
                                      ADD COLUMN IF NOT EXISTS grown_kept bigint"
            ))
            .await
            .is_ok();
        loud(c, quiet).await?;
        added
    };
    let recorded = if grown_columns {
        let last: Vec<Option<i64>> = tables
            .iter()
            .map(|t| grown.iter().find(|g| &g.0 == t).map(|g| g.1))
            .collect();
        let kept: Vec<Option<i64>> = tables
            .iter()
            .map(|t| grown.iter().find(|g| &g.0 == t).map(|g| g.2 as i64))
            .collect();
        c.execute(
            &format!(
                "INSERT INTO {SEEDED} (table_name, seed, grown_last, grown_kept)
                 SELECT t, $2, l, k FROM unnest($1::text[], $3::bigint[], $4::bigint[]) u(t, l, k)
                 ON CONFLICT (table_name) DO UPDATE SET seed = excluded.seed, seeded_at = now(),
                     grown_last = excluded.grown_last, grown_kept = excluded.grown_kept"
            ),
            &[&tables, &(seed as i64), &last, &kept],
        )
        .await
    } else {
        c.execute(
            &format!(
                "INSERT INTO {SEEDED} (table_name, seed) SELECT t, $2 FROM unnest($1::text[]) t
                 ON CONFLICT (table_name) DO UPDATE SET seed = excluded.seed, seeded_at = now()"
            ),
            &[&tables, &(seed as i64)],
        )
        .await
    };
    match recorded {
        // Another role (a superuser) keeps the record: its next --truncate
        // keeps these tables' rows, as it would rows the migrations wrote.
        Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => Ok(()),
        r => r
            .map(|_| ())
            .map_err(dberr("recording the tables planck seeds")),
    }
}

async fn create_seeded(c: &Client) -> Result<()> {
    if seeded_exists(c).await? {
        return Ok(());
    }
    let ddl = format!(
        "CREATE TABLE {SEEDED} (
            table_name text PRIMARY KEY,
            seed bigint NOT NULL,
            seeded_at timestamptz NOT NULL DEFAULT now(),
            grown_last bigint,
            grown_kept bigint)"
    );
    create_marked(c, SEEDED, SEEDED_MARKER, &ddl).await
}

/// Creates one of planck's marked tables (`ddl`, readable by every role)
/// in schema planck, quietly (see below).
async fn create_marked(c: &Client, table: &str, marker: &str, ddl: &str) -> Result<()> {
    let quiet = quiet(c).await?;
    let created = create_marked_table(c, table, marker, ddl).await;
    loud(c, quiet).await?;
    created
}

/// As superuser, event triggers (Supabase-style databases have them) do
/// not fire on planck's own DDL, as during the load: replica mode until
/// [`loud`]. Returns whether it was set.
async fn quiet(c: &Client) -> Result<bool> {
    let quiet: bool = c
        .query_one(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map_err(dberr("reading the role"))?
        .get(0);
    if quiet {
        c.batch_execute("SET session_replication_role = replica")
            .await
            .map_err(dberr("silencing event triggers"))?;
    }
    Ok(quiet)
}

/// Ends [`quiet`] (`quiet`: what it returned).
async fn loud(c: &Client, quiet: bool) -> Result<()> {
    if quiet {
        c.batch_execute("RESET session_replication_role")
            .await
            .map_err(dberr("resetting session_replication_role"))?;
    }
    Ok(())
}

async fn create_marked_table(c: &Client, table: &str, marker: &str, ddl: &str) -> Result<()> {
    ensure_schema(c).await?;
    // One simple-protocol string is one transaction: the table never
    // exists without its marker.
    c.batch_execute(&format!(
        "{ddl};
         COMMENT ON TABLE {table} IS {};
         GRANT SELECT ON {table} TO PUBLIC",
        crate::db::quote_literal(marker)
    ))
    .await
    .map_err(|e| Error::db(format!("creating {table}"), e))
}

/// Saves one dropped foreign key (inside the caller's transaction, before the drop).
pub async fn save_fk(
    tx: &tokio_postgres::Transaction<'_>,
    table: &str,
    name: &str,
    def: &str,
) -> Result<()> {
    tx.execute(
        &format!("INSERT INTO {TABLE} (kind, table_name, name, def) VALUES ('fk', $1, $2, $3)"),
        &[&table, &name, &def],
    )
    .await
    .map_err(dberr("saving a foreign key"))?;
    Ok(())
}

/// Marks a saved foreign key as re-added `NOT VALID` (inside the caller's transaction).
pub async fn mark_not_valid(tx: &tokio_postgres::Transaction<'_>, id: i64) -> Result<()> {
    tx.execute(
        &format!("UPDATE {TABLE} SET state = 'not_valid' WHERE id = $1"),
        &[&id],
    )
    .await
    .map_err(dberr("noting a NOT VALID foreign key"))?;
    Ok(())
}

/// Forgets one saved constraint (inside the caller's transaction or not).
pub async fn forget(c: &impl tokio_postgres::GenericClient, p: &PendingConstraint) -> Result<()> {
    let table = if p.legacy { LEGACY_TABLE } else { TABLE };
    c.execute(&format!("DELETE FROM {table} WHERE id = $1"), &[&p.id])
        .await
        .map_err(dberr("forgetting a restored constraint"))?;
    Ok(())
}

/// Drops [`TABLE`] when it holds nothing, then [`SCHEMA`] when it is empty:
/// after a run that completes, planck leaves only `planck.seeded`.
/// Returns whether the table is gone.
pub async fn clean_up(c: &Client) -> Result<bool> {
    if !exists(c).await? {
        return Ok(true);
    }
    let left: i64 = c
        .query_one(&format!("SELECT count(*) FROM {TABLE}"), &[])
        .await
        .map_err(dberr("counting saved constraints"))?
        .get(0);
    if left > 0 {
        return Ok(false);
    }
    c.execute(&format!("DROP TABLE {TABLE}"), &[])
        .await
        .map_err(dberr("dropping planck.seed_saved"))?;
    drop_schema_if_empty(c).await?;
    Ok(true)
}

/// Drops [`SCHEMA`] when nothing is in it.
async fn drop_schema_if_empty(c: &Client) -> Result<()> {
    let empty: bool = c
        .query_one(
            "SELECT NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_namespace n ON n.oid = d.refobjid
                                 WHERE d.refclassid = 'pg_namespace'::regclass AND n.nspname = $1)",
            &[&SCHEMA],
        )
        .await
        .map_err(dberr("looking into schema planck"))?
        .get(0);
    if empty {
        // RESTRICT: a user object that slipped in since keeps the schema.
        let _ = c
            .execute(&format!("DROP SCHEMA {SCHEMA} RESTRICT"), &[])
            .await;
    }
    Ok(())
}

/// Serializes the saving of foreign keys between shards of one set (inside
/// the caller's transaction, released at its end): two shards starting
/// together would otherwise both save, and then both try to drop, the same keys.
pub async fn serialize_saves(tx: &tokio_postgres::Transaction<'_>) -> Result<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("waiting to save foreign keys"))?;
    Ok(())
}

/// Holds off the saving of foreign keys (by other shards) on this session
/// until [`allow_saves`]: what a shard reads of the saved keys and of the
/// catalog is then one consistent state (before a save, or after it).
pub async fn hold_saves(c: &Client) -> Result<()> {
    c.execute(
        "SELECT pg_advisory_lock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("waiting for other shards to save their foreign keys"))?;
    Ok(())
}

/// Ends [`hold_saves`].
pub async fn allow_saves(c: &Client) -> Result<()> {
    c.execute(
        "SELECT pg_advisory_unlock($1, $2)",
        &[&LOCK_CLASS, &LOCK_SAVE],
    )
    .await
    .map_err(dberr("releasing a lock"))?;
    Ok(())
}

/// Who holds the seed lock of the current database, for the waiting message.
async fn holders(c: &Client) -> Result<Vec<String>> {
    let rows = c
        .query(
            "SELECT l.pid, coalesce(a.application_name, ''), l.mode,
                    to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SS TZ')
               FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND l.classid = $1::int::oid AND l.objid = $2::int::oid AND l.objsubid = 2
              ORDER BY l.pid",
            &[&LOCK_CLASS, &LOCK_SEED],
        )
        .await
        .map_err(dberr("looking for the seed lock's holder"))?;
    Ok(rows
        .iter()
        .map(|r| {
            let (pid, app, mode, since): (i32, String, String, Option<String>) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            format!(
                "pid {pid} ({}, {}) since {}",
                if app.is_empty() {
                    "no application_name"
                } else {
                    &app
                },
                if mode == "ShareLock" {
                    "shared, a --shard run"
                } else {
                    "exclusive"
                },
                since.unwrap_or_else(|| "an unknown time".into())
            )
        })
        .collect())
}

/// The per-database seed lock, held for as long as this value lives (it
/// keeps its own connection: a session-level advisory lock).
pub struct SeedLock {
    client: Client,
    shared: bool,
}

impl SeedLock {
    /// Takes the seed lock of the connection's database: exclusive for a
    /// whole seed or a restore, shared for `--shard` runs (they load one
    /// database together). When another run holds it, says who and waits.
    pub async fn acquire(conn: &ConnInfo, shared: bool, app: &str, log: Log) -> Result<SeedLock> {
        let client = conn.connect().await?;
        // The lock is planck's, never the application's statement.
        crate::session::untrack(&client).await?;
        client
            .execute("SELECT set_config('application_name', $1, false)", &[&app])
            .await
            .map_err(dberr("configuring the lock connection"))?;
        let f = if shared {
            "pg_try_advisory_lock_shared"
        } else {
            "pg_try_advisory_lock"
        };
        let got: bool = client
            .query_one(&format!("SELECT {f}($1, $2)"), &[&LOCK_CLASS, &LOCK_SEED])
            .await
            .map_err(dberr("taking the seed lock"))?
            .get(0);
        if !got {
            let who = holders(&client).await?;
            log.warn(&format!(
                "another planck seed is running on database {}: waiting for it (held by {})",
                conn.dbname(),
                if who.is_empty() {
                    "a session that just left".to_string()
                } else {
                    who.join("; ")
                }
            ));
            let f = if shared {
                "pg_advisory_lock_shared"
            } else {
                "pg_advisory_lock"
            };
            client
                .execute(&format!("SELECT {f}($1, $2)"), &[&LOCK_CLASS, &LOCK_SEED])
                .await
                .map_err(dberr("waiting for the seed lock"))?;
        }
        Ok(SeedLock { client, shared })
    }

    /// For a shard: gives up the shared lock and tries, without waiting, to
    /// take the lock alone. True when no other run holds it any more (this
    /// shard is the last of its set to finish and may restore the set's
    /// constraints). Of shards finishing together at least one succeeds: each
    /// releases its own share before trying.
    pub async fn try_alone(&mut self) -> Result<bool> {
        if self.shared {
            self.client
                .execute(
                    "SELECT pg_advisory_unlock_shared($1, $2)",
                    &[&LOCK_CLASS, &LOCK_SEED],
                )
                .await
                .map_err(dberr("releasing the seed lock"))?;
            self.shared = false;
        }
        Ok(self
            .client
            .query_one(
                "SELECT pg_try_advisory_lock($1, $2)",
                &[&LOCK_CLASS, &LOCK_SEED],
            )
            .await
            .map_err(dberr("taking the seed lock"))?
            .get(0))
    }

    /// The lock's connection, for bookkeeping that must happen under it.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, state: State) -> PendingConstraint {
        PendingConstraint {
            id: 1,
            kind: SavedKind::ForeignKey,
            table: "public.items".into(),
            name: name.into(),
            def: "FOREIGN KEY (a) REFERENCES t(id)".into(),
            state,
            legacy: false,
        }
    }

    /// The text of the bookkeeping's refusals (issue 8 section 6: snapshots
    /// of the main errors).
    #[test]
    fn refusals_read_plainly() {
        insta::assert_snapshot!(
            "untrusted",
            crate::error::render(&untrusted(LEGACY_TABLE, "mallory"))
        );
        insta::assert_snapshot!(
            "not_ours",
            crate::error::render(&not_ours(TABLE, "it lacks planck's marker comment"))
        );
    }

    #[test]
    fn the_pending_warning_counts_names_and_says_what_to_run() {
        assert_eq!(pending_message(&[]), None);
        let m = pending_message(&[p("a_fk", State::Dropped), p("b_fk", State::NotValid)]).unwrap();
        assert_eq!(
            m,
            "2 constraint(s) an interrupted `planck seed` dropped wait to be restored \
             (1 in place as NOT VALID, not yet validated): a_fk on public.items, b_fk on \
             public.items; run `planck seed --restore`"
        );
        let many: Vec<_> = (0..7)
            .map(|i| p(&format!("f{i}"), State::Dropped))
            .collect();
        assert!(pending_message(&many).unwrap().contains("and 2 more"));
    }
}
