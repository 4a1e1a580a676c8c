//! The load choreography: safe, restartable, and fast.
//!
//! 1. Restore what an earlier, interrupted run left saved (see [`recover`]),
//!    so a re-run needs no manual clean-up.
//! 2. Refuse tables that hold rows unless `--truncate`.
//! 3. Save the definition of every foreign key touching the seeded tables into
//!    `planck_seed_saved` and drop them, in one transaction: the saved rows are
//!    durable before anything is dropped. Without them, tables load in any
//!    order and in parallel, and a cycle (A -> B -> A) is no problem.
//! 4. Load each table in its own transaction: `TRUNCATE`, drop its secondary
//!    indexes and primary-key/unique constraints, `COPY ... (FORMAT binary,
//!    FREEZE)`, re-create them from their exact definitions, `COMMIT`. Values
//!    are generated on rayon workers into buffers of a few MiB, with a bounded
//!    queue between generation and the socket (bounded memory); several
//!    tables stream at once on separate connections. A table is thus either
//!    fully loaded with its indexes, or rolled back to what it was, indexes
//!    included, whatever kills the load.
//! 5. Restore the foreign keys (each validation is one anti-join), deleting
//!    each saved row in the same transaction as its re-creation; `setval` the
//!    sequences; `VACUUM (ANALYZE)`.
//!
//! On Ctrl-C or a lost connection the running COPYs are abandoned (their
//! transactions roll back), step 5 still runs (a table whose parent did not
//! load is emptied so every foreign key holds again), and the error says which
//! tables were loaded.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::SinkExt;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;
use tokio_postgres::Client;

use crate::db::{ConnInfo, quote_ident};
use crate::error::{Error, Result};
use crate::seed::copy;
use crate::seed::plan::Plan;
use crate::settings::Settings;

const CHUNK_BYTES: usize = 4 << 20;
pub const SAVED_TABLE: &str = "public.planck_seed_saved";
const APP_NAME: &str = "planck seed";

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub truncate: bool,
    pub threads: usize,
    /// (k, n): load only the k-th of n slices (1-based).
    pub shard: Option<(u64, u64)>,
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
}

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
}

#[derive(Debug, Clone)]
struct Saved {
    id: i64,
    kind: String,
    table: String,
    name: String,
    def: String,
}

async fn connect(conn: &ConnInfo) -> Result<Client> {
    let c = conn.connect().await?;
    c.batch_execute(&format!(
        "SET application_name = '{APP_NAME}'; SET maintenance_work_mem = '256MB'"
    ))
    .await
    .map_err(|e| Error::db("configuring a connection", e))?;
    Ok(c)
}

async fn ensure_saved_table(c: &Client) -> Result<()> {
    c.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {SAVED_TABLE} (
            id bigserial PRIMARY KEY,
            kind text NOT NULL CHECK (kind IN ('index', 'fk')),
            table_name text NOT NULL,
            name text NOT NULL,
            def text NOT NULL,
            saved_at timestamptz NOT NULL DEFAULT now())"
    ))
    .await
    .map_err(|e| Error::db("creating planck_seed_saved", e))
}

async fn saved(c: &Client) -> Result<Vec<Saved>> {
    let rows = c
        .query(
            &format!(
                "SELECT id, kind, table_name, name, def FROM {SAVED_TABLE} ORDER BY kind DESC, id"
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("reading planck_seed_saved", e))?;
    Ok(rows
        .iter()
        .map(|r| Saved {
            id: r.get(0),
            kind: r.get(1),
            table: r.get(2),
            name: r.get(3),
            def: r.get(4),
        })
        .collect())
}

/// Whether `planck_seed_saved` exists (it does once a run has saved anything).
async fn saved_table_exists(c: &Client) -> Result<bool> {
    Ok(c.query_one(
        "SELECT to_regclass('public.planck_seed_saved') IS NOT NULL",
        &[],
    )
    .await
    .map_err(|e| Error::db("looking for planck_seed_saved", e))?
    .get(0))
}

fn restore_sql(s: &Saved) -> String {
    if s.kind == "index" {
        s.def.clone()
    } else {
        format!(
            "ALTER TABLE {} ADD CONSTRAINT {} {}",
            s.table,
            quote_ident(&s.name),
            s.def
        )
    }
}

/// Re-creates one saved object and forgets it, atomically. An object that
/// already exists (restored by hand) is just forgotten.
async fn restore_one(c: &mut Client, s: &Saved) -> Result<()> {
    let tx = c
        .transaction()
        .await
        .map_err(|e| Error::db("restoring", e))?;
    match tx.batch_execute(&restore_sql(s)).await {
        Ok(()) => {}
        Err(e)
            if e.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_OBJECT)
                || e.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_TABLE) =>
        {
            drop(tx);
            c.execute(
                &format!("DELETE FROM {SAVED_TABLE} WHERE id = $1"),
                &[&s.id],
            )
            .await
            .map_err(|e| Error::db("forgetting a restored object", e))?;
            return Ok(());
        }
        Err(e) => {
            return Err(Error::db(
                format!("restoring {} {} on {}", s.kind, s.name, s.table),
                e,
            ));
        }
    }
    tx.execute(
        &format!("DELETE FROM {SAVED_TABLE} WHERE id = $1"),
        &[&s.id],
    )
    .await
    .map_err(|e| Error::db("forgetting a restored object", e))?;
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("restoring {}", s.name), e))
}

/// What to do with a foreign key whose rows do not hold (yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unmatched {
    /// An error: the load was supposed to be complete.
    Fail,
    /// Keep it saved: other shards (or the next run) complete the rows.
    Keep,
    /// Empty the referencing table (a failed load: a child loaded, its parent did not).
    Empty,
}

#[derive(Debug, Default)]
struct Restored {
    /// Foreign keys left in planck_seed_saved.
    pending: Vec<String>,
    /// Foreign keys re-created and validated.
    restored: Vec<String>,
    /// Tables emptied so their foreign keys hold.
    emptied: Vec<String>,
    /// The same tables' oids, to name them as the plan does.
    emptied_oids: Vec<u32>,
}

/// Restores every saved object: indexes in parallel, then foreign keys one by one.
async fn restore_all(conn: &ConnInfo, threads: usize, unmatched: Unmatched) -> Result<Restored> {
    let c = connect(conn).await?;
    let all = saved(&c).await?;
    let mut out = Restored::default();
    if all.is_empty() {
        return Ok(out);
    }
    let (indexes, fks): (Vec<Saved>, Vec<Saved>) = all.into_iter().partition(|s| s.kind == "index");
    let queue = Arc::new(tokio::sync::Mutex::new(indexes));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..threads.max(1) {
        let queue = queue.clone();
        let conn = conn.clone();
        set.spawn(async move {
            let mut c = connect(&conn).await?;
            loop {
                let next = queue.lock().await.pop();
                let Some(s) = next else { break };
                restore_one(&mut c, &s).await?;
            }
            Ok::<(), Error>(())
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
            Ok(Ok(())) => {}
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let mut c = c;
    for s in &fks {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match restore_one(&mut c, s).await {
                Ok(()) => {
                    out.restored.push(format!("{} on {}", s.name, s.table));
                    break;
                }
                Err(e) if e.sqlstate() == Some("23503") && unmatched == Unmatched::Keep => {
                    out.pending.push(format!("{} on {}", s.name, s.table));
                    break;
                }
                Err(e)
                    if e.sqlstate() == Some("23503")
                        && unmatched == Unmatched::Empty
                        && attempts < 3 =>
                {
                    // CASCADE also empties tables whose foreign keys to this one are back.
                    c.batch_execute(&format!("TRUNCATE {} CASCADE", s.table))
                        .await
                        .map_err(|e| Error::db(format!("emptying {}", s.table), e))?;
                    let oid: u32 = c
                        .query_one("SELECT $1::text::regclass::oid", &[&s.table])
                        .await
                        .map_err(|e| Error::db(format!("looking up {}", s.table), e))?
                        .get(0);
                    out.emptied.push(s.table.clone());
                    out.emptied_oids.push(oid);
                }
                Err(e) => return Err(e),
            }
        }
    }
    // The caller says what the outcome means: only it knows whether this is
    // the restore before a load or the final one.
    Ok(out)
}

/// The foreign keys an interrupted run left saved, without touching anything
/// (for `--dry-run`), as (table, name, definition).
pub async fn pending_fks(conn: &ConnInfo) -> Result<Vec<(String, String, String)>> {
    let c = connect(conn).await?;
    if !saved_table_exists(&c).await? {
        return Ok(Vec::new());
    }
    Ok(saved(&c)
        .await?
        .into_iter()
        .filter(|s| s.kind == "fk")
        .map(|s| (s.table, s.name, s.def))
        .collect())
}

/// Restores what an interrupted run left in `planck_seed_saved` and returns
/// the foreign keys that still cannot be validated (their tables hold partial
/// data until this run truncates them), as (table, name, definition).
/// `sharded`: foreign keys saved by earlier shards are expected, not leftovers
/// of an interrupted run, so nothing is said about them here; the end of the
/// run says what stays saved.
pub async fn recover(
    conn: &ConnInfo,
    threads: usize,
    sharded: bool,
    settings: &Settings,
) -> Result<Vec<(String, String, String)>> {
    let c = connect(conn).await?;
    if !saved_table_exists(&c).await? {
        return Ok(Vec::new());
    }
    let leftovers = saved(&c).await?;
    if !leftovers.is_empty() {
        let indexes = leftovers.iter().filter(|s| s.kind == "index").count();
        let r = restore_all(conn, threads, Unmatched::Keep).await?;
        let n = indexes + r.restored.len();
        if sharded {
            settings.debug(&format!(
                "{} foreign key(s) saved by earlier shards",
                leftovers.len() - indexes
            ));
        } else if n > 0 {
            settings.info(&format!(
                "restored {n} index(es)/foreign key(s) an earlier run left saved in planck_seed_saved"
            ));
        }
        if !sharded && !r.pending.is_empty() {
            settings.debug(&format!(
                "{} foreign key(s) of an earlier partial load stay saved until this load completes",
                r.pending.len()
            ));
        }
    }
    Ok(saved(&c)
        .await?
        .into_iter()
        .filter(|s| s.kind == "fk")
        .map(|s| (s.table, s.name, s.def))
        .collect())
}

/// Saves and drops the secondary indexes and foreign keys touching `oids`.
async fn save_and_drop(c: &mut Client, oids: &[u32]) -> Result<usize> {
    let tx = c
        .transaction()
        .await
        .map_err(|e| Error::db("saving indexes", e))?;
    tx.batch_execute("SET LOCAL search_path = pg_catalog")
        .await
        .map_err(|e| Error::db("saving indexes", e))?;
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
    let ins =
        format!("INSERT INTO {SAVED_TABLE} (kind, table_name, name, def) VALUES ($1, $2, $3, $4)");
    for r in &fks {
        let (t, n, d): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        tx.execute(&ins, &[&"fk", &t, &n, &d])
            .await
            .map_err(|e| Error::db("saving a foreign key", e))?;
        tx.batch_execute(&format!(
            "ALTER TABLE {t} DROP CONSTRAINT {}",
            quote_ident(&n)
        ))
        .await
        .map_err(|e| Error::db(format!("dropping foreign key {n}"), e))?;
    }
    tx.commit()
        .await
        .map_err(|e| Error::db("saving indexes", e))?;
    Ok(fks.len())
}

struct Progress {
    multi: Option<MultiProgress>,
    plain: bool,
}

impl Progress {
    fn bar(&self, name: &str, rows: u64) -> Option<ProgressBar> {
        let m = self.multi.as_ref()?;
        let pb = m.add(ProgressBar::new(rows));
        pb.set_style(
            ProgressStyle::with_template(
                "{prefix:>16} {bar:30} {human_pos}/{human_len} rows {msg} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_prefix(name.to_string());
        Some(pb)
    }
}

/// The statements that drop a table's secondary indexes and its primary-key and
/// unique constraints, and those that re-create them exactly (definitions from
/// `pg_get_indexdef`/`pg_get_constraintdef`, schema-qualified). Indexes that
/// carry a replica identity or CLUSTER mark, and the constraints of a
/// partitioned table, stay in place.
async fn table_ddl(
    tx: &tokio_postgres::Transaction<'_>,
    oid: u32,
    partitioned: bool,
) -> Result<(Vec<String>, Vec<String>)> {
    let err = |e| Error::db("reading index definitions", e);
    tx.batch_execute("SET LOCAL search_path = pg_catalog")
        .await
        .map_err(err)?;
    let mut drops = Vec::new();
    let mut creates = Vec::new();
    if !partitioned {
        for r in tx
            .query(
                "SELECT c.conrelid::regclass::text, quote_ident(c.conname), pg_get_constraintdef(c.oid)
                   FROM pg_constraint c JOIN pg_index i ON i.indexrelid = c.conindid
                  WHERE c.conrelid = $1 AND c.contype IN ('p', 'u')
                    AND NOT i.indisreplident AND NOT i.indisclustered
                  ORDER BY c.contype, c.conname",
                &[&oid],
            )
            .await
            .map_err(err)?
        {
            let (t, n, d): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            drops.push(format!("ALTER TABLE {t} DROP CONSTRAINT {n}"));
            creates.push(format!("ALTER TABLE {t} ADD CONSTRAINT {n} {d}"));
        }
    }
    for r in tx
        .query(
            "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
               FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
              WHERE (i.indrelid = $1 OR i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1))
                AND t.relkind = 'r' AND NOT i.indisreplident AND NOT i.indisclustered
                AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
                AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = i.indexrelid AND d.deptype = 'i')
              ORDER BY 1",
            &[&oid],
        )
        .await
        .map_err(err)?
    {
        let (n, d): (String, String) = (r.get(0), r.get(1));
        drops.push(format!("DROP INDEX {n}"));
        creates.push(d);
    }
    tx.batch_execute("SET LOCAL search_path TO DEFAULT")
        .await
        .map_err(err)?;
    Ok((drops, creates))
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
            "each shard loads once into the same tables; to start over, run `planck seed --truncate` without --shard",
        )
    } else {
        Error::db(format!("{doing} {table}"), e)
    }
}

/// Loads one table; returns (rows, bytes).
#[allow(clippy::too_many_arguments)]
async fn load_table(
    conn: ConnInfo,
    plan: Arc<Plan>,
    t: usize,
    range: std::ops::Range<u64>,
    truncate: bool,
    pool: Arc<rayon::ThreadPool>,
    cancel: Arc<AtomicBool>,
    bar: Option<ProgressBar>,
    trace: bool,
) -> Result<(u64, u64, (Instant, Instant))> {
    let tp = &plan.tables[t];
    let mut client = connect(&conn).await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| Error::db(format!("loading {}", tp.display), e))?;
    if truncate {
        tx.batch_execute(&format!("TRUNCATE {}", tp.qualified))
            .await
            .map_err(|e| Error::db(format!("truncating {}", tp.display), e))?;
    }
    // Indexes and key constraints are dropped and re-created inside this
    // transaction: bulk index builds beat row-by-row maintenance, and if the
    // load fails or is killed, the rollback brings them back untouched.
    let (drops, creates) = table_ddl(&tx, tp.oid, tp.partitioned).await?;
    for d in &drops {
        tx.batch_execute(d)
            .await
            .map_err(|e| Error::db(format!("preparing {}", tp.display), e))?;
    }
    let cols: Vec<usize> = (0..tp.cols.len()).filter(|c| tp.cols[*c].include).collect();
    let list = cols
        .iter()
        .map(|c| quote_ident(&tp.cols[*c].name))
        .collect::<Vec<_>>()
        .join(", ");
    if cols.is_empty() {
        // Nothing to COPY (a table without columns, or only generated ones).
        for c in &creates {
            tx.batch_execute(c)
                .await
                .map_err(|e| Error::db(format!("re-creating an index of {}", tp.display), e))?;
        }
        tx.commit()
            .await
            .map_err(|e| Error::db(format!("committing {}", tp.display), e))?;
        let now = Instant::now();
        return Ok((0, 0, (now, now)));
    }
    let freeze = if truncate && !tp.partitioned {
        ", FREEZE"
    } else {
        ""
    };
    let stmt = format!(
        "COPY {} ({list}) FROM STDIN (FORMAT binary{freeze})",
        tp.qualified
    );
    let sink = tx
        .copy_in::<_, Bytes>(&stmt)
        .await
        .map_err(|e| Error::db(format!("starting COPY into {}", tp.display), e))?;
    futures_util::pin_mut!(sink);

    // Producer: rayon encodes windows of chunks in parallel, in row order.
    let (txq, mut rxq) = mpsc::channel::<(BytesMut, u64)>(4);
    let window = pool.current_num_threads().max(1) * 2;
    let gen_nanos = Arc::new(AtomicU64::new(0));
    let producer = {
        let gen_nanos = gen_nanos.clone();
        let plan = plan.clone();
        let cancel = cancel.clone();
        let cols = cols.clone();
        std::thread::spawn(move || {
            let mut next = range.start;
            let mut rows_per_chunk: u64 = 2048;
            let mut first = true;
            while next < range.end && !cancel.load(Ordering::Relaxed) {
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
                                copy::encode_chunk(
                                    &plan,
                                    t,
                                    &cols,
                                    r.clone(),
                                    CHUNK_BYTES + (CHUNK_BYTES >> 2),
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
        })
    };
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
    }
    drop(rxq);
    let _ = producer.join();
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted {
            message: format!("{} not loaded", tp.display),
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
    if let Some(pb) = &bar {
        pb.set_message("indexing".to_string());
    }
    let copy_secs = started.elapsed().as_secs_f64();
    let copy_span = (started, Instant::now());
    for c in &creates {
        let t0 = Instant::now();
        tx.batch_execute(c)
            .await
            .map_err(|e| loaded_twice(e, truncate, &tp.display, "re-creating an index of"))?;
        if trace {
            eprintln!("planck:   {:.2} s {c}", t0.elapsed().as_secs_f64());
        }
    }
    if trace {
        eprintln!(
            "planck: {}: copy {copy_secs:.2} s (generating {:.2} s, sending {:.2} s), total {:.2} s",
            tp.display,
            gen_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            send_nanos as f64 / 1e9,
            started.elapsed().as_secs_f64()
        );
    }
    tx.commit()
        .await
        .map_err(|e| Error::db(format!("committing {}", tp.display), e))?;
    if let Some(pb) = &bar {
        pb.finish_with_message("done");
    }
    Ok((n, bytes_sent, copy_span))
}

/// Runs the whole choreography. Returns a report per table, in load order.
pub async fn run(
    conn: &ConnInfo,
    plan: Arc<Plan>,
    opts: &LoadOptions,
    settings: &Settings,
) -> Result<LoadReport> {
    let mut admin = connect(conn).await?;
    ensure_saved_table(&admin).await?;

    // Refuse non-empty tables.
    let sharded = opts.shard.is_some();
    if !sharded {
        let mut full = Vec::new();
        for tp in &plan.tables {
            let has: bool = admin
                .query_one(
                    &format!("SELECT EXISTS (SELECT 1 FROM {})", tp.qualified),
                    &[],
                )
                .await
                .map_err(|e| Error::db(format!("looking into {}", tp.display), e))?
                .get(0);
            if has {
                full.push(tp.display.clone());
            }
        }
        if !full.is_empty() && !opts.truncate {
            return Err(Error::usage_hint(
                format!(
                    "{} table(s) already hold rows: {}",
                    full.len(),
                    full.join(", ")
                ),
                "pass --truncate to replace their rows, or exclude them in the spec (`exclude = [...]`)",
            ));
        }
    }
    // Tables planck leaves alone must not reference tables it empties.
    let seeded: Vec<u32> = plan.tables.iter().map(|t| t.oid).collect();
    let blockers = admin
        .query(
            "SELECT DISTINCT c.conrelid::regclass::text FROM pg_constraint c
              WHERE c.contype = 'f' AND c.confrelid = ANY($1) AND NOT c.conrelid = ANY($1)
                AND NOT c.conrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = ANY($1))",
            &[&seeded],
        )
        .await
        .map_err(|e| Error::db("listing referencing tables", e))?;
    for r in blockers {
        let name: String = r.get(0);
        let has: bool = admin
            .query_one(&format!("SELECT EXISTS (SELECT 1 FROM {name})"), &[])
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

    let dropped = save_and_drop(&mut admin, &seeded).await?;
    settings.debug(&format!(
        "dropped {dropped} foreign key(s), saved in planck_seed_saved"
    ));

    // Load.
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads.max(1))
            .build()
            .map_err(|e| Error::Other(anyhow::anyhow!("starting worker threads: {e}")))?,
    );
    let cancel = Arc::new(AtomicBool::new(false));
    let progress = Progress {
        multi: (!settings.quiet && std::io::stderr().is_terminal())
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
        plain: !settings.quiet,
    };
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.threads.max(1)));
    let mut set = tokio::task::JoinSet::new();
    let started = Instant::now();
    let done_bytes = Arc::new(AtomicU64::new(0));
    for t in 0..plan.tables.len() {
        let tp = &plan.tables[t];
        let range = match opts.shard {
            Some((k, n)) => (tp.rows * (k - 1) / n)..(tp.rows * k / n),
            None => 0..tp.rows,
        };
        let bar = progress.bar(&tp.display, range.end - range.start);
        let (conn, plan, pool, cancel, sem, done_bytes) = (
            conn.clone(),
            plan.clone(),
            pool.clone(),
            cancel.clone(),
            sem.clone(),
            done_bytes.clone(),
        );
        let truncate = !sharded;
        let trace = settings.verbose && !settings.quiet;
        set.spawn(async move {
            let _permit = sem.acquire_owned().await;
            let t0 = Instant::now();
            if cancel.load(Ordering::Relaxed) {
                return (
                    t,
                    Err(Error::Interrupted {
                        message: "not started".into(),
                    }),
                    0.0,
                );
            }
            let r = load_table(
                conn,
                plan,
                t,
                range,
                truncate,
                pool,
                cancel.clone(),
                bar,
                trace,
            )
            .await;
            if r.is_err() {
                cancel.store(true, Ordering::Relaxed);
            }
            if let Ok((_, b, _)) = &r {
                done_bytes.fetch_add(*b, Ordering::Relaxed);
            }
            (t, r, t0.elapsed().as_secs_f64())
        });
    }
    type Loaded = Result<(u64, u64, (Instant, Instant))>;
    let mut results: BTreeMap<usize, (Loaded, f64)> = BTreeMap::new();
    let mut interrupted = false;
    loop {
        tokio::select! {
            r = set.join_next() => match r {
                None => break,
                Some(Ok((t, res, secs))) => {
                    if let Ok((rows, bytes, _)) = &res
                        && progress.plain && progress.multi.is_none()
                    {
                        settings.info(&format!(
                            "seeded {}: {} rows, {} sent in {:.1} s",
                            plan.tables[t].display,
                            crate::output::count(*rows),
                            crate::output::bytes(*bytes),
                            secs
                        ));
                    }
                    results.insert(t, (res, secs));
                }
                Some(Err(e)) => {
                    cancel.store(true, Ordering::Relaxed);
                    results.insert(usize::MAX - results.len(), (Err(Error::Other(anyhow::anyhow!("a load task failed: {e}"))), 0.0));
                }
            },
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                cancel.store(true, Ordering::Relaxed);
                settings.warn("interrupted: abandoning running loads (their transactions roll back), restoring indexes");
                // Dropping the tasks closes their connections: the server rolls back.
                set.abort_all();
            }
        }
    }
    if let Some(m) = &progress.multi {
        let _ = m.clear();
    }
    let load_secs = started.elapsed().as_secs_f64();
    settings.debug(&format!("loaded in {load_secs:.1} s; restoring indexes"));

    // The COPY phase: the time during which at least one COPY was streaming
    // (index builds that overlap no COPY are left out), to compare with
    // `pgbench -i`'s client-side generate phase.
    let mut spans: Vec<(Instant, Instant)> = results
        .values()
        .filter_map(|(r, _)| r.as_ref().ok().map(|x| x.2))
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
    let per_table: BTreeMap<usize, (u64, f64)> = results
        .iter()
        .filter_map(|(t, (r, secs))| r.as_ref().ok().map(|(_, b, _)| (*t, (*b, *secs))))
        .collect();
    // Restore, whatever happened.
    let t_restore = Instant::now();
    let failed_load = interrupted || results.values().any(|(r, _)| r.is_err());
    let unmatched = if sharded {
        Unmatched::Keep
    } else if failed_load {
        Unmatched::Empty
    } else {
        Unmatched::Fail
    };
    let restore = restore_all(conn, opts.threads, unmatched).await;
    let index_seconds = t_restore.elapsed().as_secs_f64();
    // One list per state, each table in exactly one, named as the plan names them.
    let emptied: Vec<String> = match &restore {
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
    let loaded: Vec<String> = results
        .iter()
        .filter(|(_, (r, _))| r.is_ok())
        .filter_map(|(t, _)| plan.tables.get(*t).map(|tp| tp.display.clone()))
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
    if let Err(e) = &restore {
        settings.warn(&format!(
            "restoring indexes and foreign keys failed: {}",
            crate::error::render(e)
        ));
    }
    if interrupted || !failed.is_empty() {
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
        let state = format!(
            "loaded: {}; left as they were: {}{emptied}; indexes and foreign keys {}",
            list(&loaded),
            list(&not_loaded),
            if restore.is_ok() {
                "restored"
            } else {
                "NOT restored (a re-run restores them from planck_seed_saved)"
            }
        );
        if interrupted {
            return Err(Error::Interrupted { message: state });
        }
        settings.warn(&state);
        let first = failed
            .into_iter()
            .find(|(_, e)| !matches!(e, Error::Interrupted { .. }))
            .map(|(_, e)| e);
        return Err(first.unwrap_or(Error::Interrupted { message: state }));
    }
    let restored = restore?;
    // Say once what the final restore left: the only true account of
    // planck_seed_saved after a shard.
    if sharded {
        if !restored.pending.is_empty() {
            settings.info(&format!(
                "{} foreign key(s) stay saved in planck_seed_saved until the other shards are loaded \
                 (the shard that completes the set restores and validates them): {}",
                restored.pending.len(),
                restored.pending.join(", ")
            ));
        } else if !restored.restored.is_empty() {
            settings.info(&format!(
                "restored and validated {} foreign key(s) saved by the shards; planck_seed_saved is empty",
                restored.restored.len()
            ));
        }
    }

    // Sequences, then statistics.
    let t_vacuum = Instant::now();
    let c = connect(conn).await?;
    for tp in plan.tables.iter() {
        for (seq, col) in &tp.sequences {
            let sql = format!(
                "SELECT setval($1::text::regclass, m) FROM (SELECT max({})::bigint AS m FROM {}) s WHERE m IS NOT NULL",
                quote_ident(col),
                tp.qualified
            );
            if let Err(e) = c.query(&sql, &[&seq]).await {
                settings.warn(&format!(
                    "could not advance sequence {seq}: {}",
                    Error::db("setval", e)
                ));
            }
        }
    }
    let queue = Arc::new(tokio::sync::Mutex::new(
        plan.tables
            .iter()
            .map(|t| t.qualified.clone())
            .collect::<Vec<_>>(),
    ));
    let mut vset = tokio::task::JoinSet::new();
    for _ in 0..opts.threads.max(1) {
        let (queue, conn) = (queue.clone(), conn.clone());
        vset.spawn(async move {
            let c = connect(&conn).await?;
            loop {
                let next = queue.lock().await.pop();
                let Some(t) = next else { break };
                c.batch_execute(&format!("VACUUM (ANALYZE) {t}"))
                    .await
                    .map_err(|e| Error::db(format!("vacuuming {t}"), e))?;
            }
            Ok::<(), Error>(())
        });
    }
    while let Some(r) = vset.join_next().await {
        if let Ok(Err(e)) = r {
            return Err(e);
        }
    }
    let vacuum_seconds = t_vacuum.elapsed().as_secs_f64();
    // Table sizes for the summary.
    let mut reports = Vec::new();
    for (t, tp) in plan.tables.iter().enumerate() {
        let row = c
            .query_one(
                "SELECT COALESCE(sum(pg_table_size(x)), 0)::bigint, COALESCE(sum(pg_total_relation_size(x)), 0)::bigint
                   FROM (SELECT $1::text::regclass AS x
                         UNION ALL SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = $1::text::regclass) s",
                &[&tp.qualified],
            )
            .await
            .map_err(|e| Error::db("measuring tables", e))?;
        let (data, total): (i64, i64) = (row.get(0), row.get(1));
        let rows = match opts.shard {
            Some((k, n)) => (tp.rows * k / n) - (tp.rows * (k - 1) / n),
            None => tp.rows,
        };
        let (copy_bytes, seconds) = per_table.get(&t).copied().unwrap_or((0, 0.0));
        reports.push(TableReport {
            table: tp.display.clone(),
            rows,
            data_bytes: data.max(0) as u64,
            bytes: total.max(0) as u64,
            copy_bytes,
            seconds,
        });
    }
    Ok(LoadReport {
        tables: reports,
        load_seconds: load_secs,
        copy_seconds,
        index_seconds,
        vacuum_seconds,
    })
}
