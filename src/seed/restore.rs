//! The foreign keys around the load: saved and dropped before it, restored
//! after it (steps 3 and 5 of the choreography in `seed::load`), and
//! what an interrupted run left saved, restored by the next run or by
//! `planck seed --restore`.
//!
//! The definitions are saved in `planck.seed_saved` ([`crate::bookkeeping`])
//! in the transaction that drops them, so they are durable before anything
//! is dropped. Restoring re-adds every key `NOT VALID` in one transaction
//! (instant) and then validates each (one anti-join), deleting its saved row
//! in the same transaction; a SIGKILL in between leaves the keys in place
//! `NOT VALID`, and `planck seed --restore` validates them. planck 0.x also
//! saved indexes; those are restored in parallel first.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_postgres::Client;
use tokio_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use crate::bookkeeping::{self, PendingConstraint, SavedKind, State};
use crate::db::{ConnInfo, quote_ident};
use crate::error::{Error, Result};
use crate::output::Log;
use crate::seed::conn::{connect, disable_triggers, enable_triggers};

pub(crate) type Saved = PendingConstraint;

/// `ALTER TABLE ... ADD CONSTRAINT ...` for a saved foreign key (or the saved
/// `CREATE INDEX` of planck 0.x), `NOT VALID` when asked. The table name is
/// taken from `regclass` (it must name an existing table); the definition is
/// run as one statement of the extended protocol, so nothing rides along.
async fn restore_sql(c: &impl GenericClient, s: &Saved, not_valid: bool) -> Result<String> {
    if s.kind == SavedKind::Index {
        // Only an index definition, as planck 0.x saved them.
        let d = s.def.trim_start().to_ascii_uppercase();
        if !(d.starts_with("CREATE INDEX ") || d.starts_with("CREATE UNIQUE INDEX ")) {
            return Err(Error::usage_hint(
                format!(
                    "saved index {} is not an index definition: {}",
                    s.label(),
                    s.def
                ),
                format!(
                    "planck does not run it; remove the row from {}",
                    bookkeeping::TABLE
                ),
            ));
        }
        return Ok(s.def.clone());
    }
    if !s
        .def
        .trim_start()
        .to_ascii_uppercase()
        .starts_with("FOREIGN KEY")
    {
        return Err(Error::usage_hint(
            format!(
                "saved foreign key {} is not a foreign-key definition: {}",
                s.label(),
                s.def
            ),
            format!(
                "planck does not run it; remove the row from {}",
                bookkeeping::TABLE
            ),
        ));
    }
    let table: Option<String> = c
        .query_one("SELECT to_regclass($1)::text", &[&s.table])
        .await
        .map_err(|e| Error::db("looking up a saved foreign key's table", e))?
        .get(0);
    let Some(table) = table else {
        return Err(Error::Postgres {
            context: format!("restoring foreign key {}", s.label()),
            pg: crate::error::PgError {
                code: "42P01".into(),
                message: format!("relation {} does not exist", s.table),
                detail: None,
                hint: None,
                position: None,
            },
        });
    };
    Ok(format!(
        "ALTER TABLE {table} ADD CONSTRAINT {} {}{}",
        quote_ident(&s.name),
        s.def,
        if not_valid { " NOT VALID" } else { "" }
    ))
}

/// A saved constraint that no longer applies to the schema (a column or
/// table renamed or dropped since it was saved): named, with its definition
/// and the ways out.
pub(crate) fn inapplicable(s: &Saved, e: &Error) -> String {
    let why = match e {
        Error::Postgres { pg, .. } => format!("{} (SQLSTATE {})", pg.message, pg.code),
        other => other.to_string(),
    };
    format!(
        "saved {} {} no longer applies: {why}\n  saved definition: {}\n  \
         hint: re-create it by hand to fit the schema as it is now; `planck seed --restore` \
         then forgets planck's copy\n  hint: or drop planck's copy: `planck seed --restore --forget {}`",
        if s.kind == SavedKind::ForeignKey {
            "foreign key"
        } else {
            "index"
        },
        s.label(),
        s.def,
        s.name
    )
}

/// Whether an error says the saved definition does not fit the schema as it
/// is now: a column, table or type renamed or dropped, no unique key to
/// reference, a changed type, or a definition that does not parse. (Not a
/// missing privilege: that is the role's problem, reported as it is.)
pub(crate) fn is_inapplicable(e: &Error) -> bool {
    matches!(
        e.sqlstate(),
        Some("42703" | "42P01" | "42704" | "42830" | "42804" | "42601" | "42P10" | "42809")
    )
}

/// Re-creates one saved object (validating it) and forgets it, atomically.
/// An object that already exists (restored by hand) is just forgotten.
async fn restore_one(c: &mut Client, s: &Saved) -> Result<()> {
    let tx = c
        .transaction()
        .await
        .map_err(|e| Error::db("restoring", e))?;
    let sql = restore_sql(&tx, s, false).await?;
    match tx.execute(&sql, &[]).await {
        Ok(_) => {}
        Err(e)
            if e.code() == Some(&SqlState::DUPLICATE_OBJECT)
                || e.code() == Some(&SqlState::DUPLICATE_TABLE) =>
        {
            drop(tx);
            bookkeeping::forget(c, s).await?;
            return Ok(());
        }
        Err(e) => {
            return Err(Error::db(
                format!("restoring {} {}", s.kind.as_str(), s.label()),
                e,
            ));
        }
    }
    bookkeeping::forget(&tx, s).await?;
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("restoring {}", s.name), e))
}

/// What to do with a foreign key whose rows do not hold (yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unmatched {
    /// An error: the load was supposed to be complete.
    Fail,
    /// Keep it saved (dropped): other shards (or the next run) complete the rows.
    Keep,
    /// Empty the referencing table (a failed load: a child loaded, its parent did not).
    Empty,
    /// Leave it in place `NOT VALID` and say why (`planck seed --restore`).
    Report,
}

#[derive(Debug, Default)]
pub struct Restored {
    /// Foreign keys left saved.
    pub pending: Vec<String>,
    /// Foreign keys re-created and validated.
    pub restored: Vec<String>,
    /// Tables emptied so their foreign keys hold.
    pub emptied: Vec<String>,
    /// The same tables' oids, to name them as the plan does.
    pub emptied_oids: Vec<u32>,
    /// Saved constraints that no longer fit the schema, each with its hint.
    pub inapplicable: Vec<String>,
    /// Foreign keys whose rows do not hold (Report), each with its hint.
    pub unmatched: Vec<String>,
}

/// Re-adds every saved foreign key `NOT VALID`, in ONE transaction (a
/// savepoint each, so one that no longer fits does not stop the others):
/// instant whatever the table sizes, so a SIGKILL arriving while the
/// validations run finds every constraint in place. Returns the keys now in
/// place (state NotValid).
async fn add_not_valid(c: &mut Client, fks: Vec<Saved>, out: &mut Restored) -> Result<Vec<Saved>> {
    let mut tx = c
        .transaction()
        .await
        .map_err(|e| Error::db("re-adding foreign keys", e))?;
    let mut placed = Vec::new();
    // PostgreSQL refuses `NOT VALID` on a foreign key of a partitioned
    // table (42809): those are re-created validating, after the commit.
    let mut validating = Vec::new();
    for mut s in fks {
        if s.state == State::NotValid {
            placed.push(s);
            continue;
        }
        // PostgreSQL 18's NOT ENFORCED keys check nothing and cannot be
        // validated: put back exactly as they were, after the commit.
        if s.def.contains("NOT ENFORCED") {
            validating.push(s);
            continue;
        }
        let sp = tx
            .savepoint("planck_fk")
            .await
            .map_err(|e| Error::db("re-adding foreign keys", e))?;
        let r = match restore_sql(&sp, &s, true).await {
            Ok(sql) => sp
                .execute(&sql, &[])
                .await
                .map_err(|e| Error::db(format!("restoring foreign key {}", s.label()), e)),
            Err(e) => Err(e),
        };
        match r {
            Ok(_) => {
                bookkeeping::mark_not_valid(&sp, s.id).await?;
                sp.commit()
                    .await
                    .map_err(|e| Error::db("re-adding foreign keys", e))?;
                s.state = State::NotValid;
                placed.push(s);
            }
            Err(e) if e.sqlstate() == Some("42710") => {
                // Already there (re-created by hand): forget planck's copy.
                sp.rollback()
                    .await
                    .map_err(|e| Error::db("re-adding foreign keys", e))?;
                bookkeeping::forget(&tx, &s).await?;
            }
            Err(e) if is_inapplicable(&e) => {
                sp.rollback()
                    .await
                    .map_err(|e| Error::db("re-adding foreign keys", e))?;
                if e.sqlstate() == Some("42809") && partitioned(&tx, &s).await? {
                    validating.push(s);
                } else {
                    out.inapplicable.push(inapplicable(&s, &e));
                    out.pending.push(s.label());
                }
            }
            Err(e) => return Err(e),
        }
    }
    tx.commit()
        .await
        .map_err(|e| Error::db("re-adding foreign keys", e))?;
    for s in validating {
        match restore_one(c, &s).await {
            Ok(()) => out.restored.push(s.label()),
            // Rows that do not hold (a failed load): the key stays saved,
            // so `planck seed --restore` or the next run puts it back.
            Err(e) if e.sqlstate() == Some("23503") => {
                out.unmatched.push(format!(
                    "foreign key {} does not hold: {}. It stays saved (a partitioned \
                     table's key cannot be left NOT VALID); load everything again with \
                     `planck seed --truncate`, or delete the rows that break it and run \
                     `planck seed --restore`",
                    s.label(),
                    e.to_string().lines().next().unwrap_or_default()
                ));
                out.pending.push(s.label());
            }
            Err(e) if is_inapplicable(&e) => {
                out.inapplicable.push(inapplicable(&s, &e));
                out.pending.push(s.label());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(placed)
}

/// Whether a saved foreign key's table is partitioned.
async fn partitioned(c: &impl GenericClient, s: &Saved) -> Result<bool> {
    let row = c
        .query_one(
            "SELECT coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass($1)), false)",
            &[&s.table],
        )
        .await
        .map_err(|e| Error::db(format!("looking up {}", s.table), e))?;
    Ok(row.get(0))
}

/// Validates one foreign key that is in place `NOT VALID`, forgetting it in
/// the same transaction. A constraint that vanished since (dropped by hand)
/// is added again, validating.
async fn validate_one(c: &mut Client, s: &Saved) -> Result<()> {
    let tx = c
        .transaction()
        .await
        .map_err(|e| Error::db("validating", e))?;
    let table: Option<String> = tx
        .query_one("SELECT to_regclass($1)::text", &[&s.table])
        .await
        .map_err(|e| Error::db("looking up a saved foreign key's table", e))?
        .get(0);
    let sql = match table {
        Some(t) => format!(
            "ALTER TABLE {t} VALIDATE CONSTRAINT {}",
            quote_ident(&s.name)
        ),
        None => restore_sql(&tx, s, false).await?,
    };
    match tx.execute(&sql, &[]).await {
        Ok(_) => {}
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_OBJECT) => {
            drop(tx);
            return restore_one(c, s).await;
        }
        Err(e) => {
            return Err(Error::db(
                format!("validating foreign key {}", s.label()),
                e,
            ));
        }
    }
    bookkeeping::forget(&tx, s).await?;
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("validating {}", s.name), e))
}

/// One key's outcome in [`validate_parallel`]: its label, or its label and
/// why it no longer applies.
type Validated = std::result::Result<String, (String, String)>;

/// Validates the keys a complete load placed `NOT VALID`, on `threads`
/// connections at once (each validation is one anti-join, CPU-bound on the
/// server). The keys of one table go to one connection: `VALIDATE` takes a
/// SHARE UPDATE EXCLUSIVE lock on its table, which would only queue a second
/// connection behind the first; on the referenced table it takes ROW SHARE,
/// which conflicts with no other validation, so no two connections wait on
/// each other. Only for [`Unmatched::Fail`]: a key that does not hold is an
/// error, nothing is emptied while other keys are being validated.
async fn validate_parallel(
    conn: &ConnInfo,
    threads: usize,
    placed: Vec<Saved>,
    out: &mut Restored,
) -> Result<()> {
    // Groups by table, largest first (the longest validations start first),
    // keeping the position of each key for the report's order.
    let mut groups: BTreeMap<String, Vec<(usize, Saved)>> = BTreeMap::new();
    for (i, s) in placed.into_iter().enumerate() {
        groups.entry(s.table.clone()).or_default().push((i, s));
    }
    let mut groups: Vec<Vec<(usize, Saved)>> = groups.into_values().collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    groups.reverse(); // popped from the end
    let queue = Arc::new(tokio::sync::Mutex::new(groups));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..threads {
        let (queue, conn) = (queue.clone(), conn.clone());
        set.spawn(async move {
            let mut c = connect(&conn).await?;
            let mut done: Vec<(usize, Validated)> = Vec::new();
            loop {
                let next = queue.lock().await.pop();
                let Some(group) = next else { break };
                for (i, s) in group {
                    match validate_one(&mut c, &s).await {
                        Ok(()) => done.push((i, Ok(s.label()))),
                        Err(e) if is_inapplicable(&e) => {
                            done.push((i, Err((s.label(), inapplicable(&s, &e)))));
                        }
                        Err(e) => {
                            // The others stop at their next key.
                            queue.lock().await.clear();
                            return Err(e);
                        }
                    }
                }
            }
            Ok::<_, Error>(done)
        });
    }
    let mut all = Vec::new();
    let mut first_err = None;
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(done)) => all.extend(done),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(Error::Other(anyhow::anyhow!(
                    "foreign key validation task failed: {e}"
                )));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    all.sort_by_key(|d| d.0);
    for (_, d) in all {
        match d {
            Ok(label) => out.restored.push(label),
            Err((label, why)) => {
                out.inapplicable.push(why);
                out.pending.push(label);
            }
        }
    }
    Ok(())
}

/// Restores every saved object. Indexes of planck 0.x in parallel; then,
/// except in Keep mode, every foreign key is re-added `NOT VALID` in one
/// transaction and validated one by one; in Keep mode (shards) each is
/// re-added validating, and stays saved (dropped) when its rows do not hold.
pub(crate) async fn restore_all(
    conn: &ConnInfo,
    threads: usize,
    unmatched: Unmatched,
) -> Result<Restored> {
    let c = connect(conn).await?;
    let all: Vec<Saved> = bookkeeping::pending(&c)
        .await?
        .into_iter()
        .filter(|p| !p.legacy)
        .collect();
    let mut out = Restored::default();
    if all.is_empty() {
        return Ok(out);
    }
    let (indexes, fks): (Vec<Saved>, Vec<Saved>) =
        all.into_iter().partition(|s| s.kind == SavedKind::Index);
    let queue = Arc::new(tokio::sync::Mutex::new(indexes));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..threads.max(1) {
        let queue = queue.clone();
        let conn = conn.clone();
        set.spawn(async move {
            let mut c = connect(&conn).await?;
            let mut gone = Vec::new();
            loop {
                let next = queue.lock().await.pop();
                let Some(s) = next else { break };
                match restore_one(&mut c, &s).await {
                    Ok(()) => {}
                    Err(e) if is_inapplicable(&e) => gone.push(inapplicable(&s, &e)),
                    Err(e) => return Err(e),
                }
            }
            Ok::<Vec<String>, Error>(gone)
        });
    }
    let mut first_err = None;
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(Error::Other(anyhow::anyhow!(
                    "index restore task failed: {e}"
                )));
            }
            Ok(Ok(gone)) => out.inapplicable.extend(gone),
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let mut c = c;
    if unmatched == Unmatched::Keep {
        for s in &fks {
            let r = if s.state == State::NotValid {
                validate_one(&mut c, s).await
            } else {
                restore_one(&mut c, s).await
            };
            match r {
                Ok(()) => out.restored.push(s.label()),
                Err(e) if e.sqlstate() == Some("23503") => out.pending.push(s.label()),
                Err(e) if is_inapplicable(&e) => {
                    out.inapplicable.push(inapplicable(s, &e));
                    out.pending.push(s.label());
                }
                Err(e) => return Err(e),
            }
        }
        return Ok(out);
    }
    let placed = add_not_valid(&mut c, fks, &mut out).await?;
    crate::signal::test_stop(crate::signal::Point::Validate).await;
    if unmatched == Unmatched::Fail && threads > 1 {
        validate_parallel(conn, threads, placed, &mut out).await?;
        return Ok(out);
    }
    for s in &placed {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match validate_one(&mut c, s).await {
                Ok(()) => {
                    out.restored.push(s.label());
                    break;
                }
                Err(e)
                    if e.sqlstate() == Some("23503")
                        && unmatched == Unmatched::Empty
                        && attempts < 3 =>
                {
                    // CASCADE also empties the tables that reference this one
                    // (their foreign keys are back, NOT VALID), which could not
                    // hold either.
                    let table: String = c
                        .query_one("SELECT $1::text::regclass::text", &[&s.table])
                        .await
                        .map_err(|e| Error::db(format!("looking up {}", s.table), e))?
                        .get(0);
                    let oid: u32 = c
                        .query_one("SELECT $1::text::regclass::oid", &[&s.table])
                        .await
                        .map_err(|e| Error::db(format!("looking up {}", s.table), e))?
                        .get(0);
                    empty_cascade(&mut c, &table, oid).await?;
                    out.emptied.push(s.table.clone());
                    out.emptied_oids.push(oid);
                }
                Err(e) if e.sqlstate() == Some("23503") && unmatched == Unmatched::Report => {
                    out.unmatched.push(format!(
                        "foreign key {} does not hold: {}. It stays in place NOT VALID (new rows \
                         are checked); delete the rows that break it, or load everything again \
                         with `planck seed --truncate`, then run `planck seed --restore`",
                        s.label(),
                        e.to_string().lines().next().unwrap_or_default()
                    ));
                    out.pending.push(s.label());
                    break;
                }
                Err(e) if is_inapplicable(&e) => {
                    out.inapplicable.push(inapplicable(s, &e));
                    out.pending.push(s.label());
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    // The caller says what the outcome means: only it knows whether this is
    // the restore before a load or the final one.
    Ok(out)
}

/// `TRUNCATE table CASCADE` with the user triggers of every table it
/// reaches (referencing tables, recursively, and inheritance children)
/// disabled around it, in one transaction: emptying a failed load's
/// children is planck's clean-up, not the application's (ON TRUNCATE
/// triggers stay quiet here too).
async fn empty_cascade(c: &mut Client, table: &str, oid: u32) -> Result<()> {
    let err = |e| Error::db("emptying", e);
    let tx = c.transaction().await.map_err(err)?;
    let reached: Vec<u32> = tx
        .query(
            "WITH RECURSIVE r(oid) AS (
                 SELECT $1::oid
                 UNION
                 SELECT x FROM r, LATERAL (
                     SELECT conrelid FROM pg_constraint WHERE contype = 'f' AND confrelid = r.oid
                     UNION SELECT inhrelid FROM pg_inherits WHERE inhparent = r.oid) n(x))
             SELECT oid FROM r",
            &[&oid],
        )
        .await
        .map_err(err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut disabled = Vec::new();
    for o in &reached {
        disabled.extend(disable_triggers(&tx, *o).await?);
    }
    tx.batch_execute(&format!("TRUNCATE {table} CASCADE"))
        .await
        .map_err(err)?;
    // Emptied, they are no longer loaded: the next seed loads them again.
    bookkeeping::mark_emptied(&tx, &reached).await?;
    enable_triggers(&tx, &disabled).await?;
    tx.commit().await.map_err(err)
}

/// The foreign keys an interrupted run left saved, without touching anything
/// (for `--dry-run`), as (table, name, definition).
pub async fn pending_fks(conn: &ConnInfo) -> Result<Vec<(String, String, String)>> {
    dropped_fks(&connect(conn).await?).await
}

/// The foreign keys planck's bookkeeping holds as dropped, as (table, name,
/// definition).
async fn dropped_fks(c: &Client) -> Result<Vec<(String, String, String)>> {
    Ok(bookkeeping::pending(c)
        .await?
        .into_iter()
        .filter(|s| s.kind == SavedKind::ForeignKey && s.state == State::Dropped)
        .map(|s| (s.table, s.name, s.def))
        .collect())
}

/// Restores what an interrupted run left saved and returns the foreign keys
/// that still cannot be validated (their tables hold partial data until this
/// run truncates them), as (table, name, definition). Migrates the rows of
/// planck 0.x's `public.planck_seed_saved` first.
/// `sharded`: foreign keys saved by earlier shards belong to the set; they
/// are restored by the shard that completes it, not here.
pub async fn recover(
    conn: &ConnInfo,
    threads: usize,
    sharded: bool,
    log: Log,
) -> Result<Vec<(String, String, String)>> {
    let mut c = connect(conn).await?;
    let leftovers = bookkeeping::pending(&c).await?;
    if leftovers.is_empty() {
        return Ok(Vec::new());
    }
    // (A shard migrates planck 0.x's rows when it loads: here it holds off
    // other shards' saves, which ensure() would wait for.)
    if !sharded && leftovers.iter().any(|p| p.legacy) {
        bookkeeping::ensure(&mut c).await?;
    }
    if sharded {
        log.debug(&format!(
            "{} foreign key(s) saved by earlier shards",
            leftovers
                .iter()
                .filter(|s| s.kind == SavedKind::ForeignKey)
                .count()
        ));
    } else {
        let r = restore_all(conn, threads, Unmatched::Keep).await?;
        let n = r.restored.len();
        if n > 0 {
            log.info(&format!(
                "restored {n} index(es)/foreign key(s) an earlier run left saved in {}",
                bookkeeping::TABLE
            ));
        }
        for m in &r.inapplicable {
            log.warn(m);
        }
        if !r.pending.is_empty() {
            log.debug(&format!(
                "{} foreign key(s) of an earlier partial load stay saved until this load completes",
                r.pending.len()
            ));
        }
    }
    dropped_fks(&c).await
}

/// `planck seed --restore`: restores every saved constraint (validating
/// those a kill left `NOT VALID`), says what cannot be restored and why, and
/// cleans up. `forget`: names of saved constraints to drop planck's copy of
/// first (the way out for one that no longer applies).
pub async fn restore_command(
    conn: &ConnInfo,
    threads: usize,
    forget: &[String],
    log: Log,
) -> Result<Restored> {
    let mut c = connect(conn).await?;
    let before = bookkeeping::pending(&c).await?;
    if before.iter().any(|p| p.legacy) {
        bookkeeping::ensure(&mut c).await?;
    }
    for name in forget {
        let hits: Vec<_> = bookkeeping::pending(&c)
            .await?
            .into_iter()
            .filter(|p| &p.name == name)
            .collect();
        if hits.is_empty() {
            return Err(Error::usage_hint(
                format!("no saved constraint is named {name}"),
                "`planck seed --restore` alone lists what is saved",
            ));
        }
        for p in &hits {
            bookkeeping::forget(&c, p).await?;
            log.info(&format!("forgot planck's copy of {}: {}", p.label(), p.def));
        }
    }
    let r = restore_all(conn, threads, Unmatched::Report).await?;
    Ok(r)
}

/// Saves and drops the foreign keys touching `oids` (one transaction: the
/// saved rows are durable before anything is dropped). Shards of one set
/// take a transaction-level lock first, so two starting together do not save
/// the same keys twice.
pub(crate) async fn save_and_drop(c: &mut Client, oids: &[u32]) -> Result<usize> {
    let tx = c
        .transaction()
        .await
        .map_err(|e| Error::db("saving foreign keys", e))?;
    bookkeeping::serialize_saves(&tx).await?;
    tx.batch_execute("SET LOCAL search_path = pg_catalog")
        .await
        .map_err(|e| Error::db("saving foreign keys", e))?;
    let all_oids = "(SELECT unnest($1::oid[]) UNION SELECT inhrelid FROM pg_inherits WHERE inhparent = ANY($1::oid[]))";
    let fks = tx
        .query(
            &format!(
                "SELECT quote_ident(n.nspname) || '.' || quote_ident(r.relname), c.conname, pg_get_constraintdef(c.oid)
                   FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
                   JOIN pg_namespace n ON n.oid = r.relnamespace
                  WHERE c.contype = 'f' AND c.conparentid = 0
                    AND (c.conrelid IN {all_oids} OR c.confrelid IN {all_oids})
                  ORDER BY 1, 2"
            ),
            &[&oids],
        )
        .await
        .map_err(|e| Error::db("listing foreign keys", e))?;
    for r in &fks {
        let (t, n, d): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        // A key left NOT VALID (by a kill during a restore) comes back validated.
        let d = d.strip_suffix(" NOT VALID").unwrap_or(&d);
        bookkeeping::save_fk(&tx, &t, &n, d).await?;
        tx.batch_execute(&format!(
            "ALTER TABLE {t} DROP CONSTRAINT {}",
            quote_ident(&n)
        ))
        .await
        .map_err(|e| Error::db(format!("dropping foreign key {n}"), e))?;
    }
    tx.commit()
        .await
        .map_err(|e| Error::db("saving foreign keys", e))?;
    Ok(fks.len())
}
