//! The load choreography: safe, restartable, and fast.
//!
//! 0. The caller holds the database's seed lock ([`crate::bookkeeping::SeedLock`]):
//!    exclusive, or shared by the shards of one set.
//! 1. Restore what an earlier, interrupted run left saved (see
//!    [`crate::seed::restore::recover`]),
//!    so a re-run needs no manual clean-up.
//! 2. Leave alone the tables the plan keeps (rows the migrations wrote, when
//!    not `--truncate`: see [`crate::seed::reference`]), and refuse to empty
//!    tables that tables left alone reference with rows.
//! 3. Save the definition of every foreign key touching the seeded tables into
//!    `planck.seed_saved` ([`crate::bookkeeping`]) and drop them, in one
//!    transaction: the saved rows are durable before anything is dropped.
//!    Without them, tables load in any order and in parallel, and a cycle
//!    (A -> B -> A) is no problem.
//! 4. Load each table in its own transaction: `TRUNCATE`, drop its secondary
//!    indexes and primary-key/unique constraints, `COPY ... (FORMAT binary,
//!    FREEZE)`, check COPY's row count, re-create the indexes from their exact
//!    definitions, move the table's sequences past the loaded keys, `COMMIT`.
//!    Values are generated on rayon workers into buffers of a few MiB, with a
//!    bounded queue between generation and the socket (bounded memory); a
//!    generator that dies fails its table. Several tables stream at once on
//!    separate connections. A table is thus either fully loaded with its
//!    indexes and sequences, or rolled back to what it was, whatever kills the load.
//! 5. Restore the foreign keys ([`crate::seed::restore`]): all of them re-added `NOT VALID` in one
//!    transaction (instant), then each validated (one anti-join), its saved
//!    row deleted in the same transaction; `VACUUM (ANALYZE)`; drop the
//!    bookkeeping when nothing is left in it.
//!
//! This module runs steps 2 and 4 and calls the others; saving and
//! restoring the foreign keys (steps 1, 3 and 5) is [`crate::seed::restore`]'s,
//! the connections and triggers [`crate::seed::conn`]'s.
//!
//! On Ctrl-C, SIGTERM, SIGHUP or a lost connection the running COPYs are
//! abandoned (their transactions roll back), step 5 still runs (a table whose
//! parent did not load is emptied so every foreign key holds again), and the
//! error says which tables were loaded. A SIGKILL during step 5 leaves the
//! keys in place `NOT VALID`; `planck seed --restore` validates them.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::SinkExt;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget};
use tokio::sync::mpsc;
use tokio_postgres::Client;

use crate::bookkeeping::{self, PendingConstraint, SeedLock};
use crate::db::{ConnInfo, quote_ident};
use crate::error::{Error, Result};
use crate::output::Log;
use crate::seed::conn::{
    APP_NAME, connect, disable_triggers, enable_triggers, firing_event_triggers,
};
use crate::seed::copy;
use crate::seed::restore::{Restored, Unmatched, restore_all, save_and_drop};
use crate::seed::row::plan::{SeedPlan, TablePlan};
use crate::seed::server_check;
use crate::signal::{self, Signals};

const CHUNK_BYTES: usize = 4 << 20;

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub truncate: bool,
    pub threads: usize,
    /// (k, n): load only the k-th of n slices (1-based).
    pub shard: Option<(u64, u64)>,
    /// Tests only: a failure injected into the generator of the named table.
    #[doc(hidden)]
    pub fault: Option<(String, Fault)>,
    /// Oids of plan tables kept as they are (reference data): not
    /// truncated, not loaded, their foreign keys untouched.
    pub keep: Vec<u32>,
    /// Oids of plan tables grown past the rows they hold (see
    /// [`crate::seed::reference::Grown`]): loaded without `TRUNCATE`.
    pub grow: Vec<u32>,
    /// Of those, each one's statement deleting the rows past the
    /// migrations' (an earlier seed's), run in its load transaction.
    pub trim: Vec<(u32, String)>,
    /// Every table kept as it was (reference data and migration
    /// bookkeeping), for the summary.
    pub kept_names: Vec<String>,
    /// `--all-or-nothing`: a table whose rows the server refuses stops the
    /// whole load (else the others load, see [`table_problem`]).
    pub all_or_nothing: bool,
    /// Oids of plan tables a stopped run with the same parameters loaded
    /// already (see [`crate::bookkeeping::UnfinishedRun`]): not loaded
    /// again, but their foreign keys saved and restored, and the tables
    /// analyzed and measured, like the tables this run loads.
    pub done: Vec<u32>,
    /// Whether the run is recorded in `planck.seed_run`: each table's load
    /// then marks it loaded in its own transaction.
    pub record: bool,
}

#[derive(Debug, Clone)]
pub struct TableReport {
    pub table: String,
    pub rows: u64,
    /// Heap and TOAST bytes (pg_table_size, partitions included).
    pub data_bytes: u64,
    /// With indexes (pg_total_relation_size).
    pub bytes: u64,
    /// Bytes of COPY data sent.
    pub copy_bytes: u64,
    /// Seconds of the table's COPY transaction.
    pub seconds: f64,
    /// On a Citus coordinator, a distributed table's spread over its shards.
    pub shards: Option<ShardSpread>,
}

pub use crate::wire::seed::ShardSpread;

/// What a load did, for the summary and the benchmark.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    pub tables: Vec<TableReport>,
    /// Wall-clock seconds of the COPY phase (all tables).
    pub load_seconds: f64,
    /// Wall-clock seconds during which at least one COPY was streaming.
    pub copy_seconds: f64,
    /// Seconds restoring foreign keys (indexes are rebuilt inside each table's load).
    pub index_seconds: f64,
    /// Seconds of sequences and VACUUM (ANALYZE).
    pub vacuum_seconds: f64,
    /// What the load did beyond loading, for the summary.
    pub notes: LoadNotes,
    /// The tables the server refused rows of (each with its error, the
    /// table left as it was), and those emptied because they referenced
    /// one: a partial load (issue 30 point 4).
    pub not_loaded: Vec<crate::seed::row::plan::Unseedable>,
}

/// What a load did to the schema's own machinery, and what it left alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadNotes {
    /// User triggers disabled for the load and enabled again, and on how many tables.
    pub triggers_disabled: usize,
    pub trigger_tables: usize,
    /// Event triggers that fired on planck's DDL (`name (event)`): planck
    /// silences them only as superuser.
    pub event_triggers: Vec<String>,
    /// `table: constraint (why)`: keys and indexes loaded in place (slower)
    /// because another object depends on them.
    pub kept_in_place: Vec<String>,
    /// Tables left as they were: rows the migrations wrote (reference
    /// data) and migration tools' bookkeeping.
    pub tables_kept: Vec<String>,
    /// Those of [`LoadNotes::tables_kept`] whose rows an earlier `planck
    /// seed` wrote (not the migrations: `--truncate` replaces them).
    pub seeded_before: Vec<String>,
    /// Those of [`LoadNotes::tables_kept`] kept because rows of a table
    /// left alone reference them, each `table (rows of X reference it)`.
    pub tables_held: Vec<String>,
    /// Partitions planck created for partitioned tables that had none,
    /// `table: N partition(s) (how)`.
    pub partitions_created: Vec<String>,
}

struct Progress {
    multi: Option<MultiProgress>,
    plain: bool,
}

impl Progress {
    fn bar(&self, name: &str, rows: u64) -> Option<ProgressBar> {
        let m = self.multi.as_ref()?;
        let pb = m.add(ProgressBar::new(rows));
        pb.set_style(crate::output::bar_style());
        pb.set_prefix(name.to_string());
        Some(pb)
    }
}

/// What a table's load does with its indexes and key constraints.
#[derive(Debug, Default)]
struct TableDdl {
    drops: Vec<String>,
    creates: Vec<String>,
    /// Constraints and indexes left in place because another object depends
    /// on them, each as `name (why)`.
    kept: Vec<String>,
}

/// The objects other than their own index that depend on a constraint or
/// index (views, materialized views and rules through `pg_rewrite`, a
/// function's body in SQL-standard form, ...), as the server describes them:
/// what makes `DROP CONSTRAINT` fail (2BP01), and planck never drops a
/// user's object to load faster.
const DEPENDENTS: &str = "(SELECT string_agg(DISTINCT CASE WHEN d.classid = 'pg_rewrite'::regclass
                             THEN (SELECT CASE k.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view '
                                               ELSE 'a rule on ' END || w.ev_class::regclass::text
                                     FROM pg_rewrite w JOIN pg_class k ON k.oid = w.ev_class WHERE w.oid = d.objid)
                             ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END, ', ')
                      FROM pg_depend d
                     WHERE d.deptype = 'n'
                       AND ((d.refclassid = 'pg_constraint'::regclass AND d.refobjid = OBJ_CON)
                            OR (d.refclassid = 'pg_class'::regclass AND d.refobjid = OBJ_IDX)))";

/// The statements that drop a table's secondary indexes and its primary-key and
/// unique constraints, and those that re-create them exactly (definitions from
/// `pg_get_indexdef`/`pg_get_constraintdef`, schema-qualified). Indexes that
/// carry a replica identity or CLUSTER mark, the constraints of a
/// partitioned table, and those another object depends on (a view grouping
/// by the primary key) stay in place.
async fn table_ddl(
    tx: &tokio_postgres::Transaction<'_>,
    oid: u32,
    partitioned: bool,
) -> Result<TableDdl> {
    let err = |e| Error::db("reading index definitions", e);
    tx.batch_execute("SET LOCAL search_path = pg_catalog")
        .await
        .map_err(err)?;
    let mut ddl = TableDdl::default();
    if !partitioned {
        let deps = DEPENDENTS
            .replace("OBJ_CON", "c.oid")
            .replace("OBJ_IDX", "c.conindid");
        for r in tx
            .query(
                &format!(
                    "SELECT c.conrelid::regclass::text, quote_ident(c.conname), pg_get_constraintdef(c.oid), {deps}
                       FROM pg_constraint c JOIN pg_index i ON i.indexrelid = c.conindid
                      WHERE c.conrelid = $1 AND c.contype IN ('p', 'u')
                        AND NOT i.indisreplident AND NOT i.indisclustered
                      ORDER BY c.contype, c.conname"
                ),
                &[&oid],
            )
            .await
            .map_err(err)?
        {
            let (t, n, d): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            if let Some(why) = r.get::<_, Option<String>>(3) {
                ddl.kept.push(format!("{n} ({why} depends on it)"));
                continue;
            }
            ddl.drops.push(format!("ALTER TABLE {t} DROP CONSTRAINT {n}"));
            ddl.creates.push(format!("ALTER TABLE {t} ADD CONSTRAINT {n} {d}"));
        }
    }
    let deps = DEPENDENTS
        .replace("OBJ_CON", "0")
        .replace("OBJ_IDX", "i.indexrelid");
    for r in tx
        .query(
            &format!(
                "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid), {deps}
                   FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                  WHERE (i.indrelid = $1 OR i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1))
                    AND t.relkind = 'r' AND (i.indrelid = $1 OR t.relispartition)
                    AND NOT i.indisreplident AND NOT i.indisclustered
                    AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
                    AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
                    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = i.indexrelid AND d.deptype = 'i')
                  ORDER BY 1"
            ),
            &[&oid],
        )
        .await
        .map_err(err)?
    {
        let (n, d): (String, String) = (r.get(0), r.get(1));
        if let Some(why) = r.get::<_, Option<String>>(2) {
            ddl.kept.push(format!("{n} ({why} depends on it)"));
            continue;
        }
        ddl.drops.push(format!("DROP INDEX {n}"));
        ddl.creates.push(d);
    }
    tx.batch_execute("SET LOCAL search_path TO DEFAULT")
        .await
        .map_err(err)?;
    Ok(ddl)
}

/// A load error, read for what it means in shard mode: shards append to what
/// is there, so a duplicate key (while rebuilding a key, or during COPY into a
/// partitioned table, whose keys stay in place) means this slice went in
/// before. The table's transaction rolls back untouched either way.
fn loaded_twice(e: tokio_postgres::Error, truncate: bool, table: &str, doing: &str) -> Error {
    if !truncate && e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        let detail = e
            .as_db_error()
            .and_then(|d| d.detail())
            .map(|d| format!(" ({})", d.trim_end_matches('.')))
            .unwrap_or_default();
        Error::usage_hint(
            format!(
                "this slice of {table} appears to be loaded already: its rows duplicate existing keys{detail}"
            ),
            "each shard loads once into the same tables: to load the set again, empty them first \
             (`planck migrate --fresh` on planck's managed cluster, or TRUNCATE them), \
             or load the whole dataset in one run with `planck seed --truncate` without --shard",
        )
    } else {
        Error::db(format!("{doing} {table}"), e)
    }
}

/// Moves the table's sequences past the loaded keys, inside the table's own
/// transaction, so a table that commits rows has its sequences moved whatever
/// stops the run afterwards (a sequence is not transactional: a rollback after
/// this leaves only a gap). A shard (`!exclusive`) never moves a sequence
/// back: another shard may have moved it further. A failure is a warning
/// (a savepoint keeps the load), as it always was.
async fn advance_sequences(
    tx: &mut tokio_postgres::Transaction<'_>,
    tp: &TablePlan,
    exclusive: bool,
) {
    for (seq, col) in &tp.sequences {
        let sql = format!(
            "SELECT setval($1::text::regclass, m) FROM (SELECT max({})::bigint AS m FROM {}) s
              WHERE m IS NOT NULL{}",
            quote_ident(col),
            tp.qualified,
            if exclusive {
                ""
            } else {
                " AND m > coalesce(pg_sequence_last_value($1::text::regclass), 0)"
            }
        );
        let r = match tx.savepoint("planck_setval").await {
            Ok(sp) => match sp.query(&sql, &[&seq]).await {
                Ok(_) => sp.commit().await,
                Err(e) => {
                    let _ = sp.rollback().await;
                    Err(e)
                }
            },
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            Log::default().warn(&format!(
                "could not advance sequence {seq}: {}",
                Error::db("setval", e)
            ));
        }
    }
}

/// A failure injected into one table's generator, so tests can show that a
/// dying generator fails the table instead of committing a truncated one.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The generator thread panics once it has produced about this many rows.
    PanicAfter(u64),
    /// The generator stops quietly after about this many rows.
    StopAfter(u64),
}

/// The server processes of the running loads. On a stop signal their
/// queries are cancelled: a backend building an index would otherwise go on
/// (and hold its table) until the build ends, long after planck closed the
/// connection, and the foreign keys could not be re-added before a SIGKILL.
#[derive(Clone, Default)]
struct Backends(Arc<std::sync::Mutex<Vec<i32>>>);

impl Backends {
    fn add(&self, pid: i32) {
        if let Ok(mut v) = self.0.lock() {
            v.push(pid);
        }
    }

    fn remove(&self, pid: i32) {
        if let Ok(mut v) = self.0.lock() {
            v.retain(|p| *p != pid);
        }
    }

    /// Cancels what the still-running loads' backends do (only backends that
    /// are still planck's loads in this database: a pid can be reused).
    async fn cancel_all(&self, conn: &ConnInfo) {
        let pids: Vec<i32> = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        if pids.is_empty() {
            return;
        }
        if let Ok(c) = conn.connect().await {
            let _ = crate::session::untrack(&c).await;
            let _ = c
                .execute(
                    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
                      WHERE pid = ANY ($1) AND application_name = $2 AND datname = current_database()",
                    &[&pids, &APP_NAME],
                )
                .await;
        }
    }
}

/// Loads one table; returns (rows, bytes).
#[allow(clippy::too_many_arguments)]
async fn load_table(
    conn: ConnInfo,
    plan: Arc<SeedPlan>,
    t: usize,
    range: std::ops::Range<u64>,
    empty: (bool, Option<String>),
    pool: Arc<rayon::ThreadPool>,
    cancel: Arc<AtomicBool>,
    bar: Option<ProgressBar>,
    trace: bool,
    fault: Option<Fault>,
    pids: Backends,
    record: bool,
) -> Loaded {
    let expected = range.end - range.start;
    let mut client = connect(&conn).await?;
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| Error::db("configuring a connection", e))?
        .get(0);
    pids.add(pid);
    let r = load_table_on(
        &mut client,
        plan.clone(),
        t,
        range,
        empty,
        pool,
        cancel,
        bar,
        trace,
        fault,
        expected,
        record,
    )
    .await;
    pids.remove(pid);
    r
}

/// [`load_table`] on its connection.
#[allow(clippy::too_many_arguments)]
async fn load_table_on(
    client: &mut Client,
    plan: Arc<SeedPlan>,
    t: usize,
    range: std::ops::Range<u64>,
    (truncate, trim): (bool, Option<String>),
    pool: Arc<rayon::ThreadPool>,
    cancel: Arc<AtomicBool>,
    bar: Option<ProgressBar>,
    trace: bool,
    fault: Option<Fault>,
    expected: u64,
    record: bool,
) -> Loaded {
    let tp = &plan.tables[t];
    let mut tx = client
        .transaction()
        .await
        .map_err(|e| Error::db(format!("loading {}", tp.display), e))?;
    // User triggers are off for the load, the TRUNCATE included (ON
    // TRUNCATE triggers), and on again before the commit.
    let triggers = disable_triggers(&tx, tp.oid).await?;
    empty_or_lock(&tx, tp, truncate).await?;
    if let Some(sql) = &trim {
        // A grown table an earlier seed wrote: its rows past the
        // migrations' go, the migrations' stay.
        tx.batch_execute(sql).await.map_err(|e| {
            Error::db(
                format!("deleting an earlier seed's rows of {}", tp.display),
                e,
            )
        })?;
    }
    // Indexes and key constraints are dropped and re-created inside this
    // transaction: bulk index builds beat row-by-row maintenance, and if the
    // load fails or is killed, the rollback brings them back untouched.
    let TableDdl {
        drops,
        creates,
        kept,
    } = table_ddl(&tx, tp.oid, tp.partitioned).await?;
    for d in &drops {
        tx.batch_execute(d)
            .await
            .map_err(|e| Error::db(format!("preparing {}", tp.display), e))?;
    }
    let cols: Vec<usize> = (0..tp.cols.len()).filter(|c| tp.cols[*c].include).collect();
    if cols.is_empty() {
        // Nothing to COPY (a table without columns, or only generated ones).
        return commit_without_rows(tx, tp, &creates, &triggers, kept, record).await;
    }
    // CHECKs the server decides: each row's accepted attempt, before the COPY.
    let settled = server_check::settle(&tx, &plan, t, range.clone(), &pool).await?;
    if trace && let Some((_, st)) = &settled {
        trace_settled(tp, st);
    }
    let attempts = Arc::new(settled.map(|s| s.0));
    let stmt = copy_statement(tp, &cols, truncate);
    let sink = tx
        .copy_in::<_, Bytes>(&stmt)
        .await
        .map_err(|e| Error::db(format!("starting COPY into {}", tp.display), e))?;
    futures_util::pin_mut!(sink);

    // Producer: rayon encodes windows of chunks in parallel, in row order.
    let (txq, mut rxq) = mpsc::channel::<(BytesMut, u64)>(4);
    let window = pool.current_num_threads().max(1) * 2;
    let gen_nanos = Arc::new(AtomicU64::new(0));
    let producer = Producer {
        plan: plan.clone(),
        t,
        range,
        cols: cols.clone(),
        attempts: attempts.clone(),
        pool,
        cancel: cancel.clone(),
        fault,
        window,
        gen_nanos: gen_nanos.clone(),
        txq,
    }
    .spawn();
    let mut bytes_sent = 0u64;
    let mut rows_sent = 0u64;
    let mut send_nanos = 0u64;
    let started = Instant::now();
    while let Some((chunk, n)) = rxq.recv().await {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        bytes_sent += chunk.len() as u64;
        rows_sent += n;
        let ts = Instant::now();
        sink.send(chunk.freeze())
            .await
            .map_err(|e| loaded_twice(e, truncate, &tp.display, "copying into"))?;
        send_nanos += ts.elapsed().as_nanos() as u64;
        if let Some(pb) = &bar {
            pb.set_position(rows_sent);
            let secs = started.elapsed().as_secs_f64().max(0.001);
            pb.set_message(format!("{:.0} MB/s", bytes_sent as f64 / 1e6 / secs));
        }
        if signal::test_stop(signal::Point::Rows(&tp.display, rows_sent)).await {
            stopped_by_test(&cancel).await;
            break;
        }
    }
    drop(rxq);
    // A generator that panicked closed the channel early: that must fail the
    // table (the transaction rolls back), never commit what came before.
    if let Err(panic) = producer.join() {
        return Err(generator_failed(tp, panic));
    }
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted {
            message: format!("{} not loaded", tp.display),
            signal: signal::received().map_or(2, |s| s.code()),
        });
    }
    sink.send(Bytes::from_static(copy::TRAILER))
        .await
        .map_err(|e| loaded_twice(e, truncate, &tp.display, "copying into"))?;
    let n = sink
        .as_mut()
        .finish()
        .await
        .map_err(|e| loaded_twice(e, truncate, &tp.display, "copying into"))?;
    if n != expected {
        // Returning drops the transaction: the server rolls the COPY back.
        return Err(wrong_count(tp, n, expected));
    }
    if let Some(pb) = &bar {
        pb.set_message("indexing".to_string());
    }
    let copy_secs = started.elapsed().as_secs_f64();
    let copy_span = (started, Instant::now());
    if signal::test_stop(signal::Point::Indexing(&tp.display)).await {
        stopped_by_test(&cancel).await;
        return Err(Error::Interrupted {
            message: format!("{} not loaded", tp.display),
            signal: signal::received().map_or(2, |s| s.code()),
        });
    }
    recreate_indexes(&tx, tp, &creates, truncate, trace).await?;
    if trace {
        eprintln!(
            "planck: {}: copy {copy_secs:.2} s (generating {:.2} s, sending {:.2} s), total {:.2} s",
            tp.display,
            gen_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            send_nanos as f64 / 1e9,
            started.elapsed().as_secs_f64()
        );
    }
    advance_sequences(&mut tx, tp, truncate).await;
    enable_triggers(&tx, &triggers).await?;
    if record {
        bookkeeping::mark_loaded(&tx, tp.oid).await?;
    }
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("committing {}", tp.display), e))?;
    if let Some(pb) = &bar {
        pb.finish_with_message("done");
    }
    Ok(Outcome {
        rows: n,
        bytes: bytes_sent,
        span: copy_span,
        triggers: triggers.len(),
        kept,
    })
}

/// After the test hook sent its signal inside a table's load: waits for
/// the load to be told to stop (see [`signal::test_stop`]), as a real
/// signal arriving at that point would stop it.
async fn stopped_by_test(cancel: &AtomicBool) {
    while !cancel.load(Ordering::Relaxed) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// The table's `COPY ... FROM STDIN` of columns `cols` (`FREEZE` into a
/// table this transaction truncated).
fn copy_statement(tp: &TablePlan, cols: &[usize], truncate: bool) -> String {
    let list = cols
        .iter()
        .map(|c| quote_ident(&tp.cols[*c].name))
        .collect::<Vec<_>>()
        .join(", ");
    let freeze = if truncate && !tp.partitioned {
        ", FREEZE"
    } else {
        ""
    };
    format!(
        "COPY {} ({list}) FROM STDIN (FORMAT binary{freeze})",
        tp.qualified
    )
}

/// The table's error for a COPY that wrote another number of rows than
/// were generated.
fn wrong_count(tp: &TablePlan, n: u64, expected: u64) -> Error {
    Error::Seed {
        table: tp.display.clone(),
        column: None,
        message: format!(
            "COPY wrote {n} rows where {expected} were generated; the table's load was rolled back"
        ),
        hint: Some("this is a bug in planck: please report it with the spec".into()),
    }
}

/// `TRUNCATE` the table (`truncate`), else lock it: shards of one set load
/// a table one at a time.
async fn empty_or_lock(
    tx: &tokio_postgres::Transaction<'_>,
    tp: &TablePlan,
    truncate: bool,
) -> Result<()> {
    if truncate {
        // ONLY: an old-style inheritance parent's children are tables the
        // plan loads on their own (a partitioned table cannot be ONLY).
        let only = if tp.partitioned { "" } else { "ONLY " };
        // Under the superuser's replica mode (see `conn::connect`) internal
        // triggers set to fire on origin do not fire either, and Citus
        // empties a distributed table's shards from one (its truncate
        // trigger): the TRUNCATE alone runs as origin. The table's user
        // triggers are already disabled, and TRUNCATE fires no rule nor
        // event trigger, so nothing else changes.
        let truncate = format!("TRUNCATE {only}{}", tp.qualified);
        let replica: bool = tx
            .query_one(
                "SELECT current_setting('session_replication_role') = 'replica'",
                &[],
            )
            .await
            .map_err(|e| Error::db(format!("truncating {}", tp.display), e))?
            .get(0);
        let sql = if replica {
            format!(
                "SET LOCAL session_replication_role = origin; {truncate}; \
                 SET LOCAL session_replication_role = replica"
            )
        } else {
            truncate
        };
        tx.batch_execute(&sql)
            .await
            .map_err(|e| Error::db(format!("truncating {}", tp.display), e))?;
    } else {
        // Shards of one set load a table one at a time: each drops and
        // re-creates the table's indexes, which must not interleave (the
        // lock TRUNCATE takes in an unsharded run).
        tx.batch_execute(&format!(
            "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
            tp.qualified
        ))
        .await
        .map_err(|e| Error::db(format!("locking {}", tp.display), e))?;
    }
    Ok(())
}

/// A table with nothing to COPY: its indexes back, its triggers on, committed.
async fn commit_without_rows(
    tx: tokio_postgres::Transaction<'_>,
    tp: &TablePlan,
    creates: &[String],
    triggers: &[crate::seed::conn::Trigger],
    kept: Vec<String>,
    record: bool,
) -> Loaded {
    for c in creates {
        tx.batch_execute(c)
            .await
            .map_err(|e| Error::db(format!("re-creating an index of {}", tp.display), e))?;
    }
    enable_triggers(&tx, triggers).await?;
    if record {
        bookkeeping::mark_loaded(&tx, tp.oid).await?;
    }
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("committing {}", tp.display), e))?;
    let now = Instant::now();
    Ok(Outcome {
        rows: 0,
        bytes: 0,
        span: (now, now),
        triggers: triggers.len(),
        kept,
    })
}

/// `--verbose` at trace level: how the server's CHECKs settled the rows.
fn trace_settled(tp: &TablePlan, st: &server_check::Settled) {
    eprintln!(
        "planck: {}: CHECK {} evaluated by the server: acceptance {:.1}% ({} candidates for {} rows, {} set to NULL; {} rounds, the largest {} bytes)",
        tp.display,
        tp.checked
            .checks
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        st.acceptance() * 100.0,
        st.candidates,
        st.rows,
        st.nulls,
        st.rounds,
        st.largest_round
    );
}

/// The table's error for a generator thread that panicked.
fn generator_failed(tp: &TablePlan, panic: Box<dyn std::any::Any + Send>) -> Error {
    let why = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    Error::Seed {
        table: tp.display.clone(),
        column: None,
        message: format!("a generator thread failed ({why}); the table's load was rolled back"),
        hint: Some("this is a bug in planck: please report it with the spec".into()),
    }
}

/// Re-creates the table's indexes after its COPY (each timed at trace level).
async fn recreate_indexes(
    tx: &tokio_postgres::Transaction<'_>,
    tp: &TablePlan,
    creates: &[String],
    truncate: bool,
    trace: bool,
) -> Result<()> {
    for c in creates {
        let t0 = Instant::now();
        tx.batch_execute(c)
            .await
            .map_err(|e| loaded_twice(e, truncate, &tp.display, "re-creating an index of"))?;
        if trace {
            eprintln!("planck:   {:.2} s {c}", t0.elapsed().as_secs_f64());
        }
    }
    Ok(())
}

/// The thread that generates a table's rows: rayon encodes windows of
/// chunks in parallel, in row order, into a bounded queue the COPY drains.
struct Producer {
    plan: Arc<SeedPlan>,
    t: usize,
    range: std::ops::Range<u64>,
    cols: Vec<usize>,
    attempts: Arc<Option<crate::seed::row::attempt::Attempts>>,
    pool: Arc<rayon::ThreadPool>,
    cancel: Arc<AtomicBool>,
    fault: Option<Fault>,
    /// Chunks encoded in parallel at a time.
    window: usize,
    /// Time spent generating (for `--verbose` at trace level).
    gen_nanos: Arc<AtomicU64>,
    txq: mpsc::Sender<(BytesMut, u64)>,
}

impl Producer {
    fn spawn(self) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || self.run())
    }

    fn run(self) {
        let Producer {
            plan,
            t,
            range,
            cols,
            attempts,
            pool,
            cancel,
            fault,
            window,
            gen_nanos,
            txq,
        } = self;
        let mut next = range.start;
        let limit = match fault {
            Some(Fault::PanicAfter(n) | Fault::StopAfter(n)) => range.start + n,
            None => u64::MAX,
        };
        let mut rows_per_chunk: u64 = 2048;
        let mut first = true;
        while next < range.end && !cancel.load(Ordering::Relaxed) {
            if next >= limit {
                // The test-only fault (see [`Fault`]): a generator that
                // dies, or one that stops early without a word.
                match fault {
                    Some(Fault::PanicAfter(_)) => panic!("injected generator failure"),
                    _ => return,
                }
            }
            let mut ranges = Vec::new();
            for _ in 0..window {
                if next >= range.end {
                    break;
                }
                let end = (next + rows_per_chunk).min(range.end);
                ranges.push(next..end);
                next = end;
            }
            let tg = Instant::now();
            let chunks: Vec<(BytesMut, u64)> = pool.install(|| {
                use rayon::prelude::*;
                ranges
                    .par_iter()
                    .map(|r| {
                        (
                            server_check::encode_chunk(
                                &plan,
                                t,
                                &cols,
                                r.clone(),
                                CHUNK_BYTES + (CHUNK_BYTES >> 2),
                                attempts.as_ref().as_ref(),
                            ),
                            r.end - r.start,
                        )
                    })
                    .collect()
            });
            gen_nanos.fetch_add(tg.elapsed().as_nanos() as u64, Ordering::Relaxed);
            // Aim for chunks of CHUNK_BYTES.
            let (bytes, rows): (usize, u64) = chunks
                .iter()
                .fold((0, 0), |a, c| (a.0 + c.0.len(), a.1 + c.1));
            if rows > 0 && bytes > 0 {
                let per_row = (bytes as f64 / rows as f64).max(1.0);
                rows_per_chunk = ((CHUNK_BYTES as f64 / per_row) as u64).clamp(64, 1 << 20);
            }
            for (mut c, n) in chunks {
                if first {
                    let mut h = BytesMut::with_capacity(c.len() + copy::HEADER.len());
                    h.put_slice(copy::HEADER);
                    h.put_slice(&c);
                    c = h;
                    first = false;
                }
                if txq.blocking_send((c, n)).is_err() {
                    return;
                }
            }
        }
        if first {
            let mut h = BytesMut::new();
            h.put_slice(copy::HEADER);
            let _ = txq.blocking_send((h, 0));
        }
    }
}

/// Refuses to empty tables that rows planck leaves alone reference. Tables
/// of the catalog never do (see [`crate::seed::reference`]: a table whose
/// rows a kept table references is kept too); this guards the tables planck
/// does not read (another schema, or one the role may not read), whose
/// references would break the restore after a whole load. A row with a NULL
/// in the key references nothing.
async fn refuse_to_overwrite(admin: &Client, plan: &SeedPlan, opts: &LoadOptions) -> Result<()> {
    let seeded = seeded_oids(plan, opts);
    // A grown table is not emptied: its kept rows stay referenced.
    let emptied: Vec<u32> = seeded
        .iter()
        .copied()
        .filter(|o| !opts.grow.contains(o))
        .collect();
    let blockers = admin
        .query(
            "SELECT c.conrelid::regclass::text,
                    array_agg(quote_ident(a.attname) ORDER BY k.n)
               FROM pg_constraint c
               CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY k(attnum, n)
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
              WHERE c.contype = 'f' AND c.confrelid = ANY($2) AND NOT c.conrelid = ANY($1)
                AND NOT c.conrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = ANY($1))
              GROUP BY c.oid, c.conrelid",
            &[&seeded, &emptied],
        )
        .await
        .map_err(|e| Error::db("listing referencing tables", e))?;
    for r in blockers {
        let name: String = r.get(0);
        let cols: Vec<String> = r.get(1);
        let not_null = cols
            .iter()
            .map(|c| format!("{c} IS NOT NULL"))
            .collect::<Vec<_>>()
            .join(" AND ");
        let has: bool = admin
            .query_one(
                &format!("SELECT EXISTS (SELECT 1 FROM {name} WHERE {not_null})"),
                &[],
            )
            .await
            .map_err(|e| Error::db(format!("looking into {name}"), e))?
            .get(0);
        if has {
            return Err(Error::usage_hint(
                format!("{name} is not seeded but holds rows referencing seeded tables"),
                format!("empty {name}, or stop excluding it so planck seeds it too"),
            ));
        }
    }
    Ok(())
}

/// What one table's load did.
#[derive(Debug)]
struct Outcome {
    rows: u64,
    /// COPY bytes sent.
    bytes: u64,
    /// When its COPY streamed.
    span: (Instant, Instant),
    /// User triggers disabled for the load (and enabled again).
    triggers: usize,
    /// Constraints and indexes left in place, each `name (why)`.
    kept: Vec<String>,
}

type Loaded = Result<Outcome>;

/// The tables the load writes: the plan's, less those kept as they are.
fn seeded_oids(plan: &SeedPlan, opts: &LoadOptions) -> Vec<u32> {
    plan.tables
        .iter()
        .map(|t| t.oid)
        .filter(|o| !opts.keep.contains(o))
        .collect()
}

/// The COPY phase: the time during which at least one COPY was streaming
/// (index builds that overlap no COPY are left out), to compare with
/// `pgbench -i`'s client-side generate phase.
fn streaming_seconds(results: &BTreeMap<usize, (Loaded, f64)>) -> f64 {
    let mut spans: Vec<(Instant, Instant)> = results
        .values()
        .filter_map(|(r, _)| r.as_ref().ok().map(|x| x.span))
        .collect();
    spans.sort();
    let mut copy_seconds = 0.0;
    let mut cur: Option<(Instant, Instant)> = None;
    for (a, b) in spans {
        cur = match cur {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                copy_seconds += (cb - ca).as_secs_f64();
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((ca, cb)) = cur {
        copy_seconds += (cb - ca).as_secs_f64();
    }
    copy_seconds
}

/// The rows of the shard (or of the whole table) table `rows` loads.
fn slice(rows: u64, shard: Option<(u64, u64)>) -> std::ops::Range<u64> {
    match shard {
        Some((k, n)) => (rows * (k - 1) / n)..(rows * k / n),
        None => 0..rows,
    }
}

/// Loads every table, several at once; stops them all on the first failure
/// or stop signal. Returns each table's outcome and the signal, if one came.
async fn load_tables(
    conn: &ConnInfo,
    plan: &Arc<SeedPlan>,
    opts: &LoadOptions,
    signals: &Signals,
    log: Log,
) -> Result<(BTreeMap<usize, (Loaded, f64)>, Option<signal::Stop>)> {
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads.max(1))
            .build()
            .map_err(|e| Error::Other(anyhow::anyhow!("starting worker threads: {e}")))?,
    );
    let cancel = Arc::new(AtomicBool::new(false));
    let progress = Progress {
        multi: (!log.quiet && std::io::stderr().is_terminal())
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
        plain: !log.quiet,
    };
    // Loads start in plan order (parents before children), at most
    // `threads` at once: a permit is taken before a table's task is spawned
    // (tasks spawned at once would start in whatever order the scheduler
    // picks, and a child could commit before its parent).
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.threads.max(1)));
    let mut set = tokio::task::JoinSet::new();
    let sharded = opts.shard.is_some();
    let backends = Backends::default();
    let mut bars: Vec<Option<ProgressBar>> = plan
        .tables
        .iter()
        .map(|tp| {
            let r = slice(tp.rows, opts.shard);
            if opts.keep.contains(&tp.oid) || opts.done.contains(&tp.oid) {
                return None;
            }
            progress.bar(&tp.display, r.end - r.start)
        })
        .collect();
    let spawn = |t: usize,
                 permit: tokio::sync::OwnedSemaphorePermit,
                 bar: Option<ProgressBar>,
                 set: &mut tokio::task::JoinSet<(usize, Loaded, f64)>| {
        let tp = &plan.tables[t];
        let range = slice(tp.rows, opts.shard);
        let (conn, plan, pool, cancel, pids) = (
            conn.clone(),
            plan.clone(),
            pool.clone(),
            cancel.clone(),
            backends.clone(),
        );
        let truncate = !sharded && !opts.grow.contains(&tp.oid);
        let trim = opts
            .trim
            .iter()
            .find(|(o, _)| !sharded && *o == tp.oid)
            .map(|(_, sql)| sql.clone());
        let partial = !sharded && !opts.all_or_nothing;
        let trace = log.verbose && !log.quiet;
        let fault = opts
            .fault
            .as_ref()
            .filter(|(name, _)| *name == tp.display)
            .map(|f| f.1);
        let record = opts.record;
        set.spawn(async move {
            let _permit = permit;
            let t0 = Instant::now();
            let r = load_table(
                conn,
                plan,
                t,
                range,
                (truncate, trim),
                pool,
                cancel.clone(),
                bar,
                trace,
                fault,
                pids,
                record,
            )
            .await;
            if r.as_ref().is_err_and(|e| !partial || !table_problem(e)) {
                cancel.store(true, Ordering::Relaxed);
            }
            (t, r, t0.elapsed().as_secs_f64())
        });
    };
    let mut results: BTreeMap<usize, (Loaded, f64)> = BTreeMap::new();
    let mut stopped = signals.received();
    let mut next = 0;
    // A table some of whose CHECKs only the server decides may call the
    // schema's own functions, which read other tables (`CHECK
    // (role_is(role_id, 'user'))` looks the parent up): its candidates are
    // judged once every table started before it has committed, or the
    // function sees a parent still loading, or none (every attempt false).
    let waits_for_earlier = |t: usize| {
        let c = &plan.tables[t].checked;
        c.checks.len() > c.solved.len()
    };
    loop {
        // (`signals.received()`: a signal the select below has not
        // taken yet starts no other table either.)
        let more = next < plan.tables.len()
            && stopped.is_none()
            && signals.received().is_none()
            && !cancel.load(Ordering::Relaxed);
        if !more && set.is_empty() {
            break;
        }
        if more && opts.keep.contains(&plan.tables[next].oid) {
            next += 1;
            continue;
        }
        if more && opts.done.contains(&plan.tables[next].oid) {
            if progress.plain {
                log.info(&format!(
                    "{}: loaded already by the stopped run, kept",
                    plan.tables[next].display
                ));
            }
            next += 1;
            continue;
        }
        let start = more && (set.is_empty() || !waits_for_earlier(next));
        tokio::select! {
            permit = sem.clone().acquire_owned(), if start => {
                let permit = permit.map_err(|e| Error::Other(anyhow::anyhow!("load queue closed: {e}")))?;
                spawn(next, permit, bars[next].take(), &mut set);
                next += 1;
            }
            r = set.join_next(), if !set.is_empty() => match r {
                None => {}
                Some(Ok((t, res, secs))) => {
                    if res.is_ok() {
                        signal::test_stop(signal::Point::Loaded(&plan.tables[t].display)).await;
                    }
                    if let Ok(o) = &res
                        && progress.plain && progress.multi.is_none()
                    {
                        log.info(&format!(
                            "seeded {}: {}, {} sent in {:.1} s",
                            plan.tables[t].display,
                            crate::output::count_of(o.rows, "row"),
                            crate::output::bytes(o.bytes),
                            secs
                        ));
                    }
                    results.insert(t, (res, secs));
                }
                Some(Err(e)) => {
                    cancel.store(true, Ordering::Relaxed);
                    if !e.is_cancelled() {
                        results.insert(usize::MAX - results.len(), (Err(Error::Other(anyhow::anyhow!("a load task failed: {e}"))), 0.0));
                    }
                }
            },
            s = signals.wait(), if stopped.is_none() => {
                stopped = Some(s);
                cancel.store(true, Ordering::Relaxed);
                log.warn(&format!(
                    "{}: abandoning running loads (their transactions roll back), restoring foreign keys",
                    if s == signal::Stop::Interrupt { "interrupted".to_string() } else { format!("{} received", s.name()) }
                ));
                // Dropping the tasks closes their connections: the server rolls back.
                set.abort_all();
                backends.cancel_all(conn).await;
            }
        }
    }
    if let Some(m) = &progress.multi {
        let _ = m.clear();
    }
    Ok((results, stopped))
}

/// Runs the whole choreography. Returns a report per table, in load order.
/// `lock` is the seed lock the caller took (shared for a shard).
pub async fn run(
    conn: &ConnInfo,
    plan: Arc<SeedPlan>,
    opts: &LoadOptions,
    lock: &mut SeedLock,
    signals: &Signals,
    log: Log,
) -> Result<LoadReport> {
    let mut admin = connect(conn).await?;
    let sharded = opts.shard.is_some();
    refuse_to_overwrite(&admin, &plan, opts).await?;
    let event_triggers = firing_event_triggers(&admin).await?;
    // A signal before anything is dropped: stop with nothing to undo.
    signals.check("nothing was written")?;
    bookkeeping::ensure(&mut admin).await?;
    save_keys(&mut admin, &seeded_oids(&plan, opts), sharded, log).await?;
    signal::test_stop(signal::Point::Start).await;

    let started = Instant::now();
    let (results, stopped) = load_tables(conn, &plan, opts, signals, log).await?;
    let load_secs = started.elapsed().as_secs_f64();
    log.debug(&format!(
        "loaded in {load_secs:.1} s; restoring foreign keys"
    ));
    let copy_seconds = streaming_seconds(&results);
    let per_table: BTreeMap<usize, (u64, f64)> = results
        .iter()
        .filter_map(|(t, (r, secs))| r.as_ref().ok().map(|o| (*t, (o.bytes, *secs))))
        .collect();
    let notes = load_notes(&plan, opts, event_triggers, &results);

    // Restore, whatever happened. A shard restores the set's foreign keys
    // only when it is the last of the set still running (others may be
    // loading rows the keys would check).
    let t_restore = Instant::now();
    let failed_load = stopped.is_some() || results.values().any(|(r, _)| r.is_err());
    // A table whose rows the server refused leaves the others loaded
    // (issue 30 point 4); a stop, a lost connection or a bug stops all.
    let partial = !sharded
        && !opts.all_or_nothing
        && stopped.is_none()
        && results
            .values()
            .all(|(r, _)| r.as_ref().err().is_none_or(table_problem));
    let alone = if sharded {
        lock.try_alone().await?
    } else {
        true
    };
    signal::test_stop(signal::Point::Restore).await;
    let restore = restore_keys(conn, &admin, opts.threads, alone, sharded, failed_load).await?;
    let index_seconds = t_restore.elapsed().as_secs_f64();
    if alone && let Ok(r) = &restore {
        for m in &r.inapplicable {
            log.warn(m);
        }
        if r.pending.is_empty() {
            // Nothing left to restore: the saves go (`planck.seeded` stays).
            // The admin connection may have died with the load's (a server
            // restart, a terminated backend): the restore reconnected, so
            // does this; and a failed clean-up never hides why the load failed.
            let cleaned = async {
                if admin.is_closed() {
                    admin = connect(conn).await?;
                }
                bookkeeping::clean_up(&admin).await
            }
            .await;
            match cleaned {
                Err(e) if failed_load => log.warn(&format!(
                    "could not drop planck's bookkeeping ({}): the next `planck seed` drops it",
                    crate::error::render(&e)
                )),
                other => {
                    other?;
                }
            }
        }
    }
    if failed_load && !partial {
        return Err(failure(&plan, results, &opts.done, &restore, stopped, log));
    }
    let restored = restore?;
    let not_loaded = not_loaded(&plan, &results, &restored);
    for u in &not_loaded {
        log.warn(&format!("not loaded: {}", u.cause));
    }
    // A signal during the restore: everything is back, stop before VACUUM.
    if let Some(s) = signals.received() {
        return Err(signal::interrupted(
            s,
            "every table loaded; foreign keys restored; VACUUM (ANALYZE) skipped",
        ));
    }
    if !sharded && !restored.pending.is_empty() {
        return Err(Error::usage_hint(
            format!(
                "{} saved constraint(s) could not be restored: {}",
                restored.pending.len(),
                restored.pending.join(", ")
            ),
            "see the warnings above; `planck seed --restore` retries",
        ));
    }
    if sharded {
        log_shard_keys(&restored, log);
    }

    let t_vacuum = Instant::now();
    vacuum_all(conn, &plan, opts, &per_table).await?;
    let vacuum_seconds = t_vacuum.elapsed().as_secs_f64();
    let mut tables = measure(conn, &plan, opts, &per_table).await?;
    tables.retain(|t| !not_loaded.iter().any(|u| u.table == t.table));
    Ok(LoadReport {
        tables,
        load_seconds: load_secs,
        notes,
        not_loaded,
        copy_seconds,
        index_seconds,
        vacuum_seconds,
    })
}

/// Saves and drops the foreign keys touching the seeded tables `seeded`;
/// on failure (nothing was dropped: one transaction) leaves nothing behind.
async fn save_keys(admin: &mut Client, seeded: &[u32], sharded: bool, log: Log) -> Result<()> {
    let dropped = match save_and_drop(admin, seeded).await {
        Ok(n) => n,
        Err(e) => {
            // Nothing was dropped (one transaction): leave nothing behind.
            if !sharded {
                let _ = bookkeeping::clean_up(admin).await;
            }
            return Err(e);
        }
    };
    log.debug(&format!(
        "dropped {dropped} foreign key(s), saved in {}",
        bookkeeping::TABLE
    ));
    Ok(())
}

/// What the load did to the schema's machinery, from each table's outcome.
fn load_notes(
    plan: &SeedPlan,
    opts: &LoadOptions,
    event_triggers: Vec<String>,
    results: &BTreeMap<usize, (Loaded, f64)>,
) -> LoadNotes {
    let mut notes = LoadNotes {
        event_triggers,
        tables_kept: opts.kept_names.clone(),
        ..LoadNotes::default()
    };
    for (t, (r, _)) in results {
        if let (Ok(o), Some(tp)) = (r, plan.tables.get(*t)) {
            if o.triggers > 0 {
                notes.triggers_disabled += o.triggers;
                notes.trigger_tables += 1;
            }
            for k in &o.kept {
                notes.kept_in_place.push(format!("{}: {k}", tp.display));
            }
        }
    }
    notes
}

/// Restores the saved foreign keys after the load (`alone`: no other shard
/// of the set is still loading, else they all stay saved): kept saved
/// for the set (a shard), the referencing tables emptied after a failed
/// load, an error when a key of a complete load does not hold.
async fn restore_keys(
    conn: &ConnInfo,
    admin: &Client,
    threads: usize,
    alone: bool,
    sharded: bool,
    failed_load: bool,
) -> Result<Result<Restored>> {
    if !alone {
        return Ok(Ok(Restored {
            pending: bookkeeping::pending(admin)
                .await?
                .iter()
                .filter(|p| p.kind == crate::bookkeeping::SavedKind::ForeignKey)
                .map(PendingConstraint::label)
                .collect(),
            ..Restored::default()
        }));
    }
    let unmatched = if sharded {
        Unmatched::Keep
    } else if failed_load {
        Unmatched::Empty
    } else {
        Unmatched::Fail
    };
    Ok(restore_all(conn, threads, unmatched).await)
}

/// Says once what the final restore of a shard left: the only true account
/// of the saved foreign keys after a shard.
fn log_shard_keys(restored: &Restored, log: Log) {
    if !restored.pending.is_empty() {
        log.info(&format!(
            "{} foreign key(s) stay saved in {} until the other shards are loaded \
             (the shard that completes the set restores and validates them): {}",
            restored.pending.len(),
            bookkeeping::TABLE,
            restored.pending.join(", ")
        ));
    } else if !restored.restored.is_empty() {
        log.info(&format!(
            "restored and validated {} foreign key(s) saved by the shards; nothing is left saved",
            restored.restored.len()
        ));
    }
}

/// Whether a table's failed load is that table's own problem, which leaves
/// the other tables loading: the server refused its rows (SQLSTATE class
/// 22, data exception, or 23, integrity constraint violation: a value or a
/// constraint planck got wrong for it). A lost connection, a stop or a
/// planck error stops the whole load ([`Error::Seed`] at load time is a
/// generator that died, a bug). The server's CHECKs accepting no candidate
/// row ([`Error::CheckUnsatisfied`]) is the table's own problem too.
fn table_problem(e: &Error) -> bool {
    matches!(e, Error::CheckUnsatisfied { .. })
        || e.sqlstate()
            .is_some_and(|c| c.starts_with("22") || c.starts_with("23"))
}

/// The tables of a partial load that hold none of its rows: each one the
/// server refused rows of (left as it was, its error the cause) and each
/// one emptied because it referenced rows that did not load.
fn not_loaded(
    plan: &SeedPlan,
    results: &BTreeMap<usize, (Loaded, f64)>,
    restored: &Restored,
) -> Vec<crate::seed::row::plan::Unseedable> {
    let mut out: Vec<crate::seed::row::plan::Unseedable> = results
        .iter()
        .filter_map(|(t, (r, _))| {
            let (tp, e) = (plan.tables.get(*t)?, r.as_ref().err()?);
            Some(crate::seed::row::plan::Unseedable::of(
                tp.cat,
                &tp.display,
                e,
            ))
        })
        .collect();
    for oid in &restored.emptied_oids {
        let Some(tp) = plan.tables.iter().find(|t| t.oid == *oid) else {
            continue;
        };
        if out.iter().any(|u| u.table == tp.display) {
            continue;
        }
        out.push(crate::seed::row::plan::Unseedable {
            cat: tp.cat,
            table: tp.display.clone(),
            cause: format!(
                "{}: emptied after the load: its rows referenced rows of a table that did not load",
                tp.display
            ),
            hints: vec!["fix the tables above and seed again".into()],
            depends_on: None,
        });
    }
    out
}

/// The error of a load that failed or was stopped: one list per state, each
/// table in exactly one, named as the plan names them.
fn failure(
    plan: &SeedPlan,
    results: BTreeMap<usize, (Loaded, f64)>,
    done: &[u32],
    restore: &Result<Restored>,
    stopped: Option<signal::Stop>,
    log: Log,
) -> Error {
    let emptied: Vec<String> = match restore {
        Ok(r) => r
            .emptied_oids
            .iter()
            .zip(&r.emptied)
            .map(|(oid, raw)| {
                plan.tables
                    .iter()
                    .find(|t| t.oid == *oid)
                    .map_or_else(|| raw.clone(), |t| t.display.clone())
            })
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            }),
        Err(_) => Vec::new(),
    };
    // Loaded by this run, or by the stopped run it finishes.
    let loaded: Vec<String> = plan
        .tables
        .iter()
        .enumerate()
        .filter(|(t, tp)| done.contains(&tp.oid) || results.get(t).is_some_and(|(r, _)| r.is_ok()))
        .map(|(_, tp)| tp.display.clone())
        .filter(|n| !emptied.contains(n))
        .collect();
    let failed: Vec<(usize, Error)> = results
        .into_iter()
        .filter_map(|(t, (r, _))| r.err().map(|e| (t, e)))
        .collect();
    let not_loaded: Vec<String> = plan
        .tables
        .iter()
        .map(|t| t.display.clone())
        .filter(|n| !loaded.contains(n) && !emptied.contains(n))
        .collect();
    if let Err(e) = restore {
        log.warn(&format!(
            "restoring indexes and foreign keys failed: {}",
            crate::error::render(e)
        ));
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let emptied = if emptied.is_empty() {
        String::new()
    } else {
        format!(
            "; emptied (their parent tables did not load): {}",
            emptied.join(", ")
        )
    };
    let kept = match restore {
        Ok(r) if r.pending.is_empty() => "restored".to_string(),
        Ok(r) => format!(
            "restored except {} that stay saved (`planck seed --restore` or the remaining shards restore them)",
            r.pending.len()
        ),
        Err(_) => "NOT restored (`planck seed --restore` restores them)".to_string(),
    };
    let state = format!(
        "loaded: {}; left as they were: {}{emptied}; indexes and foreign keys {kept}",
        list(&loaded),
        list(&not_loaded),
    );
    if let Some(s) = stopped {
        return signal::interrupted(s, &state);
    }
    log.warn(&state);
    let first = failed
        .into_iter()
        .find(|(_, e)| !matches!(e, Error::Interrupted { .. }))
        .map(|(_, e)| e);
    first.unwrap_or(Error::Interrupted {
        message: state,
        signal: signal::received().map_or(2, |s| s.code()),
    })
}

/// What the end of the load runs on a table: `ANALYZE` alone when its rows
/// were loaded by `COPY ... FREEZE` into the table its transaction
/// truncated (an unsharded run, not a partitioned table): they are frozen
/// and their pages marked all-visible and all-frozen in the visibility map
/// by the COPY itself (PostgreSQL 14 and later), so a VACUUM finds nothing
/// to do on the heap, yet still scans every GIN index and the TOAST table;
/// `ANALYZE` sets the same planner statistics (`reltuples`, `relpages`,
/// `relallvisible`). Otherwise `VACUUM (ANALYZE)`: shards' rows were not
/// frozen, and a partitioned table's partitions were loaded through it.
fn finish_sql(tp: &TablePlan, sharded: bool) -> String {
    if sharded || tp.partitioned {
        format!("VACUUM (ANALYZE) {}", tp.qualified)
    } else {
        format!("ANALYZE {}", tp.qualified)
    }
}

/// `VACUUM (ANALYZE)` (or `ANALYZE`, see [`finish_sql`]) every seeded
/// table, several at once, the largest first (by the bytes its COPY sent):
/// started last, the largest table's ANALYZE ran alone on one connection
/// while the others had nothing left to take.
async fn vacuum_all(
    conn: &ConnInfo,
    plan: &SeedPlan,
    opts: &LoadOptions,
    per_table: &BTreeMap<usize, (u64, f64)>,
) -> Result<()> {
    let threads = opts.threads;
    let sharded = opts.shard.is_some();
    let queue = Arc::new(tokio::sync::Mutex::new(analyze_order(
        plan, opts, per_table, sharded,
    )));
    let mut vset = tokio::task::JoinSet::new();
    for _ in 0..threads.max(1) {
        let (queue, conn) = (queue.clone(), conn.clone());
        vset.spawn(async move {
            let c = connect(&conn).await?;
            loop {
                let next = queue.lock().await.pop();
                let Some(t) = next else { break };
                c.batch_execute(&t)
                    .await
                    .map_err(|e| Error::db(format!("running {t}"), e))?;
                if let Some(table) = t.strip_prefix("ANALYZE ") {
                    finish_visibility(&c, table).await?;
                }
            }
            Ok::<(), Error>(())
        });
    }
    while let Some(r) = vset.join_next().await {
        if let Ok(Err(e)) = r {
            return Err(e);
        }
    }
    Ok(())
}

/// After the `ANALYZE` of a table loaded by `COPY ... FREEZE`: PostgreSQL 18
/// leaves some of such a table's pages out of the visibility map (about one
/// in twelve; 14 to 17 mark every page), and a page not all-visible costs
/// every index-only scan a heap fetch. A `VACUUM` that skips the indexes
/// (nothing in them to clean: no row was deleted) marks those pages, reading
/// only them, and its ANALYZE sets `relallvisible` again. Nothing is run
/// where the map is already whole.
async fn finish_visibility(c: &Client, table: &str) -> Result<()> {
    let sql =
        "SELECT /* planck */ relallvisible < relpages FROM pg_class WHERE oid = $1::text::regclass";
    let partial: bool = c
        .query_one(sql, &[&table])
        .await
        .map_err(|e| Error::db(format!("reading the visibility map of {table}"), e))?
        .get(0);
    if partial {
        let vacuum = format!("VACUUM (INDEX_CLEANUP OFF, ANALYZE) {table}");
        c.batch_execute(&vacuum)
            .await
            .map_err(|e| Error::db(format!("running {vacuum}"), e))?;
    }
    Ok(())
}

/// The statements of [`vacuum_all`], smallest first: its workers pop from
/// the end, so the largest tables start first.
fn analyze_order(
    plan: &SeedPlan,
    opts: &LoadOptions,
    per_table: &BTreeMap<usize, (u64, f64)>,
    sharded: bool,
) -> Vec<String> {
    let sizes = plan
        .tables
        .iter()
        .enumerate()
        .filter(|(_, t)| !opts.keep.contains(&t.oid))
        .map(|(i, _)| (i, per_table.get(&i).map_or(0, |p| p.0)));
    largest_last(sizes)
        .into_iter()
        .map(|i| finish_sql(&plan.tables[i], sharded))
        .collect()
}

/// Table indexes by (index, bytes), ordered so that popping from the end
/// yields the largest first, and tables of one size in load order.
fn largest_last(sizes: impl Iterator<Item = (usize, u64)>) -> Vec<usize> {
    let mut v: Vec<(usize, u64)> = sizes.collect();
    v.sort_by_key(|&(i, bytes)| (bytes, std::cmp::Reverse(i)));
    v.into_iter().map(|(i, _)| i).collect()
}

/// Table sizes for the summary.
async fn measure(
    conn: &ConnInfo,
    plan: &SeedPlan,
    opts: &LoadOptions,
    per_table: &BTreeMap<usize, (u64, f64)>,
) -> Result<Vec<TableReport>> {
    let shard = opts.shard;
    let c = connect(conn).await?;
    // On a Citus coordinator a distributed or reference table's rows are in
    // its shards, on the workers: the table here is an empty shell.
    let citus =
        crate::catalog::citus::has_distributed_tables(&c, crate::session::StatsMode::Untracked)
            .await?;
    let (data, total) = if citus {
        (
            "CASE WHEN EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = x) \
                  THEN citus_table_size(x) ELSE pg_table_size(x) END",
            "CASE WHEN EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = x) \
                  THEN citus_total_relation_size(x) ELSE pg_total_relation_size(x) END",
        )
    } else {
        ("pg_table_size(x)", "pg_total_relation_size(x)")
    };
    let sql = format!(
        "SELECT COALESCE(sum({data}), 0)::bigint, COALESCE(sum({total}), 0)::bigint
           FROM (SELECT $1::text::regclass AS x
                 UNION ALL SELECT inhrelid::regclass FROM pg_inherits h JOIN pg_class k ON k.oid = h.inhrelid
                            WHERE inhparent = $1::text::regclass AND k.relispartition) s"
    );
    let mut reports = Vec::new();
    for (t, tp) in plan.tables.iter().enumerate() {
        if opts.keep.contains(&tp.oid) {
            continue;
        }
        let row = c
            .query_one(&sql, &[&tp.qualified])
            .await
            .map_err(|e| Error::db("measuring tables", e))?;
        let (data, total): (i64, i64) = (row.get(0), row.get(1));
        let shards = if citus {
            shard_spread(&c, &tp.qualified).await?
        } else {
            None
        };
        let r = slice(tp.rows, shard);
        let (copy_bytes, seconds) = per_table.get(&t).copied().unwrap_or((0, 0.0));
        reports.push(TableReport {
            table: tp.display.clone(),
            rows: r.end - r.start,
            data_bytes: data.max(0) as u64,
            bytes: total.max(0) as u64,
            copy_bytes,
            seconds,
            shards,
        });
    }
    Ok(reports)
}

/// A Citus distributed table's rows and bytes per shard (rows counted on
/// the shards themselves, in parallel on the workers); None for any other
/// table.
async fn shard_spread(c: &Client, table: &str) -> Result<Option<ShardSpread>> {
    let rows = c
        .query(
            "SELECT s.shardid, s.nodename || ':' || s.nodeport, s.shard_size::bigint,
                    coalesce(r.result, '0')::bigint
               FROM citus_shards s
               LEFT JOIN run_command_on_shards($1::text::regclass, 'SELECT count(*) FROM %s') r
                      ON r.shardid = s.shardid AND r.success
              WHERE s.table_name = $1::text::regclass AND s.citus_table_type = 'distributed'
              ORDER BY 4 DESC, 3 DESC, 1",
            &[&table],
        )
        .await
        .map_err(|e| Error::db(format!("measuring the shards of {table}"), e))?;
    let Some(top) = rows.first() else {
        return Ok(None);
    };
    let mut workers: BTreeMap<String, u64> = BTreeMap::new();
    let (mut total_rows, mut total_bytes) = (0u64, 0u64);
    for r in &rows {
        let bytes = r.get::<_, i64>(2).max(0) as u64;
        total_rows += r.get::<_, i64>(3).max(0) as u64;
        total_bytes += bytes;
        *workers.entry(r.get(1)).or_default() += bytes;
    }
    let mut workers: Vec<(String, u64)> = workers.into_iter().collect();
    workers.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(Some(ShardSpread {
        shards: rows.len() as u64,
        heaviest_shard: top.get(0),
        heaviest_worker: top.get(1),
        heaviest_rows: top.get::<_, i64>(3).max(0) as u64,
        heaviest_bytes: top.get::<_, i64>(2).max(0) as u64,
        rows: total_rows,
        bytes: total_bytes,
        workers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::State;
    use crate::seed::restore::{Saved, inapplicable, is_inapplicable};

    /// The ANALYZE phase's workers pop the largest table first; equal
    /// sizes go in load order.
    #[test]
    fn the_largest_table_is_analyzed_first() {
        let order = largest_last([(0, 10), (1, 50), (2, 10), (3, 0), (4, 900)].into_iter());
        let popped: Vec<usize> = order.into_iter().rev().collect();
        assert_eq!(popped, [4, 1, 0, 2, 3]);
    }

    /// Issue 8 section 2.3: a saved key that no longer applies is reported
    /// with its definition and both ways out.
    #[test]
    fn a_key_that_no_longer_applies_reads_plainly() {
        let s = Saved {
            id: 3,
            kind: crate::bookkeeping::SavedKind::ForeignKey,
            table: "public.items".into(),
            name: "items_pouch_id_fkey".into(),
            def: "FOREIGN KEY (pouch_id) REFERENCES pouches(id) ON DELETE CASCADE".into(),
            state: State::Dropped,
            legacy: false,
        };
        let e = Error::Postgres {
            context: "restoring foreign key items_pouch_id_fkey on public.items".into(),
            pg: crate::error::PgError {
                code: "42703".into(),
                message: "column \"pouch_id\" referenced in foreign key constraint does not exist"
                    .into(),
                detail: None,
                hint: None,
                position: None,
            },
        };
        assert!(is_inapplicable(&e));
        insta::assert_snapshot!(inapplicable(&s, &e));
    }
}
