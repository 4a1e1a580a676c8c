//! `planck seed`'s machinery, one module per concern. [`run`] is the entry
//! point (`planck seed`, `planck demo`).
//!
//! Modules import each other one way only, from top to bottom:
//! - the load: [`load`] (each table's COPY, the choreography), [`restore`]
//!   (foreign keys saved, dropped and restored around it), [`conn`] (its
//!   connections and the user triggers it silences), [`summary`] (what the
//!   run did, rendered), [`partitions`] (partitions created for tables that
//!   have none), [`resume`] (a stopped seed finished to the same dataset);
//! - the planner: [`planner`] (rows, layout and generators per table), with
//!   [`sizing_roles`] (each table's role in the foreign-key graph, which
//!   sizes it),
//!   [`columns`] (a column's generator from its type, name and spec),
//!   [`reference`](mod@reference) (tables left as they are), [`check_expr`] (CHECKs read
//!   into facts), [`check_solve`] (CHECKs solved row by row),
//!   [`server_check`] (CHECKs the server decides), [`regex`] (patterns
//!   read for generation) and [`spec`] (the spec users write);
//! - the encoders: [`copy`] (binary COPY) and [`direct`] (the hot loop's
//!   compiled encoders);
//! - the row model: [`row`], what a worker thread reads to produce any row
//!   alone (the plan, values, generators, the pinned RNG); it imports no
//!   other module of `seed`.

// The foundation's `Error` carries a large `Migration` variant; boxing it is
// a crate-wide decision, so seed code follows `Result<T, Error>` as it is.
#![allow(clippy::result_large_err)]

pub(crate) mod check_expr;
pub(crate) mod check_solve;
pub(crate) mod columns;
pub(crate) mod conn;
pub mod copy;
pub mod direct;
pub(crate) mod distinct;
pub(crate) mod histogram;
pub mod load;
pub(crate) mod options;
pub(crate) mod partitions;
pub mod planner;
pub mod reference;
pub(crate) mod regex;
pub(crate) mod restore;
pub(crate) mod resume;
pub mod row;
pub(crate) mod server_check;
pub mod sizing_roles;
pub mod spec;
pub mod summary;

use std::sync::Arc;
use std::time::Instant;

use crate::bookkeeping::{self, SeedLock};
use crate::catalog::schema as catalog;
use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::{self, Log};
use crate::seed::load::LoadOptions;
use crate::seed::spec::SpecFile;
use crate::seed::summary::Summary;
use crate::signal;

pub use options::SeedOptions;

/// Seeds the database `conn` names; the summary to render. Catches SIGINT,
/// SIGTERM and SIGHUP from its start (see [`signal`]); on one it returns
/// `Error::Interrupted` and [`signal::received`] says which.
pub async fn run(conn: &ConnInfo, opts: &SeedOptions, log: Log) -> Result<Summary> {
    let signals = signal::Signals::install()?;
    if opts.restore {
        return restore(conn, opts, &signals, log).await;
    }
    let mut sf = opts.spec.clone().unwrap_or_default();
    let mut plan_opts = planner::Options {
        seed: opts.seed,
        scale: opts.scale,
        default_rows: opts.rows,
        reference_keys: reference::ReferenceKeys::new(),
        refused: Default::default(),
        observed: opts.observed.clone(),
    };
    let writes = !(opts.dry_run || opts.generate_only);
    // A dry run writes nothing, not even the clean-up of an interrupted run,
    // and takes no lock.
    let mut lock = None;
    let mut client = conn.connect().await?;
    crate::session::quiet_stats(&client, log).await?;
    let pending = if writes {
        let sharded = opts.shard.is_some();
        let l = tokio::select! {
            l = SeedLock::acquire(conn, sharded, crate::seed::conn::APP_NAME, log) => l?,
            s = signals.wait() => return Err(signal::interrupted(
                s,
                &format!("nothing was written; to seed, run `{}`", resume::command(opts)),
            )),
        };
        lock = Some(l);
        if sharded {
            // Another shard may be saving and dropping the foreign keys right
            // now: read the saved keys and the catalog on one side of that.
            // (After the seed lock: an unsharded run holding it may be saving.)
            bookkeeping::hold_saves(&client).await?;
        }
        restore::recover(conn, opts.threads, sharded, log).await?
    } else {
        bookkeeping::warn_pending(&client, log).await;
        restore::pending_fks(conn).await?
    };
    let mut cat = catalog::load(&mut client, &pending).await?;
    if cat
        .tables
        .iter()
        .all(|t| t.migration_bookkeeping || catalog::is_tool_metadata(&t.name))
    {
        return Err(unmigrated(&client).await);
    }
    let seeded = bookkeeping::seeded(&client).await?;
    // A seed stopped before its end (see [`resume`]): the rows its tables
    // hold are its own, never reference data, so they are planned as the
    // empty tables they were for it.
    let unfinished = if opts.shard.is_none() && !opts.generate_only {
        bookkeeping::unfinished_run(&client).await?
    } else {
        None
    };
    // Not the tables it grew: they hold the migrations' rows, which stay
    // (see [`resume::regrow`]).
    let regrown = unfinished
        .as_ref()
        .map(resume::grown_of)
        .unwrap_or_default();
    let is_regrown = |name: &str| regrown.iter().any(|g| g.table == name);
    if let Some(u) = &unfinished {
        for t in &mut cat.tables {
            let name = format!("{}.{}", t.schema, t.name);
            if u.writes(&name) && !is_regrown(&name) {
                t.has_rows = false;
            }
        }
    }
    let seeded_earlier: std::collections::HashSet<String> =
        seeded.iter().filter(|t| !is_regrown(t)).cloned().collect();
    let mut kept = reference::Kept::decide(
        &client,
        &cat,
        &mut sf,
        opts.scale,
        opts.truncate,
        &seeded_earlier,
        opts.shard.is_some(),
        !opts.generate_only,
    )
    .await?;
    resume::regrow(&regrown, &cat, &mut kept, &mut sf, opts.spec.as_ref());
    // A --truncate after a completed seed that grew a table: the rows past
    // the migrations' last key are replaced, the migrations' rows stay.
    if opts.truncate && opts.shard.is_none() && !opts.generate_only {
        let records: Vec<resume::GrownRecord> = bookkeeping::seeded_grown(&client)
            .await?
            .into_iter()
            .map(|(table, last, kept)| resume::GrownRecord { table, last, kept })
            .collect();
        let again = resume::grown_again(&records, &cat, &kept, opts.spec.as_ref());
        resume::regrow(&again, &cat, &mut kept, &mut sf, opts.spec.as_ref());
        // The rows an earlier seed wrote that this run replaces are no
        // migrations' rows: sized as the empty tables they were for it.
        sizing_roles::forget_replaced(&mut cat, &kept, &seeded_earlier);
    }
    if opts.shard.is_some() && writes {
        bookkeeping::allow_saves(&client).await?;
    }
    drop(client);
    let started = Instant::now();
    (plan_opts.reference_keys, plan_opts.refused) = kept.keys(&cat);
    let mut plan = planner::build_skipping(&cat, &sf, &plan_opts, !opts.all_or_nothing)?;
    kept.wire(&cat, &mut plan);
    let plan = Arc::new(plan);
    let grown_records = resume::GrownRecord::of(&kept, &cat);
    let run_id = resume::RunId::of(opts, &plan, &grown_records);
    let resuming = resume::decide(unfinished.as_ref(), &run_id, opts.truncate, log)?;
    if let (Some(u), None) = (&unfinished, resuming) {
        resume::refuse_replacing_grown(u, &regrown)?;
    }
    log_adjustments(&plan, log);
    let kept_names = kept.names(&cat);
    let held = kept.held_names(&cat);
    if !kept_names.is_empty() {
        log.debug(&format!("kept as they were: {}", kept_names.join(", ")));
    }
    for g in &kept.grown {
        log.info(&format!(
            "{}: its {} kept, new rows from key {} (a core entity: {})",
            cat.tables[g.table].display(),
            crate::output::count_of(g.kept, "row"),
            g.last.saturating_add(1),
            g.why
        ));
    }
    // Rows an earlier seed wrote are not the migrations' reference data, but
    // without --truncate they are kept the same way: say so up front.
    let seeded_before = kept.seeded_before(&cat, &seeded);
    if opts.truncate && !seeded_before.is_empty() {
        // Under --truncate such a table is kept only because rows left
        // alone (the migrations') reference it: --truncate is no way out.
        log.warn(&format!(
            "{} table(s) keep the rows of an earlier planck seed despite --truncate, because rows \
             this seed leaves alone reference them: {}; `planck migrate --fresh` and a new seed replace them",
            seeded_before.len(),
            held.iter()
                .filter(|h| seeded_before.iter().any(|t| h.starts_with(&format!("{t} ("))))
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let seeded_before = if opts.truncate {
        Vec::new()
    } else {
        seeded_before
    };
    if !seeded_before.is_empty() {
        log.warn(&format!(
            "{} table(s) already hold the rows of an earlier planck seed, kept as they are: {}; pass --truncate to replace them",
            seeded_before.len(),
            seeded_before.join(", ")
        ));
    }
    log_plan(&plan, &sf, log);
    if opts.generate_only {
        generate_only(&plan, opts.threads, log)?;
        return Ok(Summary::of(&plan, None, 0.0, false));
    }
    let Some(mut lock) = lock else {
        log.info("dry run: nothing written");
        // The tables a real run would leave alone are not in the plan's list.
        let mut summary = Summary::of(&plan, None, 0.0, true);
        summary.tables.retain(|t| !kept_names.contains(&t.table));
        summary.notes.tables_kept = kept_names;
        summary.notes.seeded_before = seeded_before;
        summary.notes.tables_held = held;
        // Each table's sizing role and why (issue 47): what a dry run is for.
        let reference: Vec<usize> = kept.reference.iter().map(|r| r.0).collect();
        summary.set_roles(&sizing_roles::describe(
            &cat,
            &plan,
            &sf,
            &reference,
            &kept.grown,
        ));
        return Ok(summary);
    };
    let writing_oids: Vec<(String, u32)> = plan
        .tables
        .iter()
        .filter(|t| !kept.skipped_oids(&cat).contains(&t.oid))
        .map(|t| {
            let table = &cat.tables[t.cat];
            (format!("{}.{}", table.schema, table.name), t.oid)
        })
        .collect();
    let writing: Vec<String> = writing_oids.iter().map(|w| w.0.clone()).collect();
    let partitions_created = if opts.create_partitions
        && plan.tables.iter().any(|tp| {
            cat.tables[tp.cat]
                .partitioning
                .as_ref()
                .is_some_and(|p| p.empty)
        }) {
        partitions::ensure_table(lock.client()).await?;
        let made = partitions::create_missing(lock.client(), &cat, &plan).await?;
        for m in &made {
            log.info(&format!("created partitions of {m}"));
        }
        made
    } else {
        Vec::new()
    };
    let grown_seeded: Vec<(String, i64, u64)> = grown_records
        .iter()
        .map(|g| (g.table.clone(), g.last, g.kept))
        .collect();
    bookkeeping::record_seeded(lock.client(), &writing, plan.seed, &grown_seeded).await?;
    let record = opts.shard.is_none()
        && bookkeeping::start_run(
            lock.client(),
            &writing_oids,
            &run_id.fingerprint,
            &run_id.command,
            log,
        )
        .await?;
    let done = resuming
        .map(|u| resume::done(u, &writing_oids, log))
        .unwrap_or_default();
    let report = load::run(
        conn,
        plan.clone(),
        &LoadOptions {
            truncate: opts.truncate,
            threads: opts.threads,
            shard: opts.shard,
            fault: None,
            keep: kept.skipped_oids(&cat),
            grow: kept.grown_oids(&cat),
            trim: kept.trims(&cat),
            kept_names,
            all_or_nothing: opts.all_or_nothing,
            done,
            record,
        },
        &mut lock,
        &signals,
        log,
    )
    .await
    .map_err(|e| resume::next_step(e, &run_id, record))?;
    if record {
        // The seed ended (a partial one too: its summary says what to fix,
        // and the next seed plans afresh).
        bookkeeping::finish_run(lock.client()).await?;
    }
    let mut summary = Summary::of(&plan, Some(&report), started.elapsed().as_secs_f64(), false);
    if summary.partial() {
        log.warn(&format!(
            "partial seed: {} table(s) not seeded (the summary lists why and the spec that fixes each); exit 1",
            summary.not_seeded.len()
        ));
    }
    summary.notes.seeded_before = seeded_before;
    summary.notes.tables_held = held;
    summary.notes.partitions_created = partitions_created;
    Ok(summary)
}

/// `planck seed --restore`.
async fn restore(
    conn: &ConnInfo,
    opts: &SeedOptions,
    signals: &signal::Signals,
    log: Log,
) -> Result<Summary> {
    let lock = tokio::select! {
        l = SeedLock::acquire(conn, false, crate::seed::conn::APP_NAME, log) => l?,
        s = signals.wait() => return Err(signal::interrupted(s, "nothing was restored")),
    };
    // A name among the partitions planck created (or their table) drops
    // them; the other names are saved constraints.
    let mut forget = Vec::new();
    for name in &opts.forget {
        let dropped = partitions::forget(lock.client(), name).await?;
        if dropped.is_empty() {
            forget.push(name.clone());
        } else {
            log.info(&format!(
                "dropped {} partition(s) planck created: {}",
                dropped.len(),
                dropped.join(", ")
            ));
        }
    }
    let r = restore::restore_command(conn, opts.threads, &forget, log).await?;
    for m in r.inapplicable.iter().chain(&r.unmatched) {
        log.warn(m);
    }
    if r.pending.is_empty() {
        bookkeeping::clean_up(lock.client()).await?;
    }
    if r.restored.is_empty() && r.pending.is_empty() {
        log.info("nothing to restore: no constraint is saved");
    } else if !r.restored.is_empty() {
        log.info(&format!(
            "restored and validated {} constraint(s): {}",
            r.restored.len(),
            r.restored.join(", ")
        ));
    }
    if !r.pending.is_empty() {
        return Err(Error::usage_hint(
            format!(
                "{} saved constraint(s) could not be restored: {}",
                r.pending.len(),
                r.pending.join(", ")
            ),
            "see the warnings above for each one's way out",
        ));
    }
    Ok(Summary::restored(r.restored.len()))
}

/// The error for a database with no table to seed (issue 9 point 12): an
/// empty database is a setup problem, never "seeded 0 rows".
async fn unmigrated(client: &tokio_postgres::Client) -> Error {
    let db: String = client
        .query_one("SELECT current_database()::text", &[])
        .await
        .map(|r| r.get(0))
        .unwrap_or_else(|_| "the database".into());
    Error::usage_hint(
        format!("database {db} has no tables to seed"),
        "planck migrate first? planck seeds the tables of a migrated database \
         (a migration tool's bookkeeping tables alone do not count)",
    )
}

/// What planning changed on its own: rows lowered to fit a unique key and
/// each table left out, its cause and the tables that depend on it.
fn log_adjustments(plan: &row::plan::SeedPlan, log: Log) {
    for n in plan.tables.iter().flat_map(|t| &t.notices) {
        log.warn(n);
    }
    for u in plan.skipped.iter().filter(|u| u.depends_on.is_none()) {
        let with: Vec<&str> = plan
            .skipped
            .iter()
            .filter(|d| d.depends_on.as_deref() == Some(u.table.as_str()))
            .map(|d| d.table.as_str())
            .collect();
        let mut msg = format!("skipped {} ({})", u.table, u.cause);
        if !with.is_empty() {
            msg.push_str(&format!("; with it: {}", with.join(", ")));
        }
        log.warn(&msg);
    }
}

fn log_plan(plan: &row::plan::SeedPlan, sf: &SpecFile, log: Log) {
    log.debug(&format!(
        "plan: {} tables, {} rows{}",
        plan.tables.len(),
        output::count(plan.total_rows()),
        sf.path
            .as_ref()
            .map(|p| format!(" from {}", p.display()))
            .unwrap_or_default()
    ));
    for tp in &plan.tables {
        let fks: Vec<String> = tp
            .fks
            .iter()
            .map(|f| {
                format!(
                    "{} -> {} ({})",
                    f.name,
                    plan.tables[f.parent].display,
                    f.pick.label()
                )
            })
            .collect();
        log.debug(&format!(
            "  {}: {}, {}; {}",
            tp.display,
            output::count_of(tp.rows, "row"),
            tp.layout_name(),
            fks.join(", ")
        ));
    }
}

/// `--generate-only`: generate and encode every row, send nothing, report MB/s.
fn generate_only(plan: &Arc<row::plan::SeedPlan>, threads: usize, log: Log) -> Result<()> {
    let t0 = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Other(e.into()))?;
    for (t, tp) in plan.tables.iter().enumerate() {
        let t1 = Instant::now();
        let cols: Vec<usize> = (0..tp.cols.len()).filter(|c| tp.cols[*c].include).collect();
        let bytes: usize = pool.install(|| {
            use rayon::prelude::*;
            (0..tp.rows.div_ceil(4096))
                .into_par_iter()
                .map(|i| {
                    let r = i * 4096..((i + 1) * 4096).min(tp.rows);
                    direct::encode_chunk(plan, t, &cols, r, 1 << 20).len()
                })
                .sum()
        });
        let secs = t1.elapsed().as_secs_f64();
        log.info(&format!(
            "{}: {} in {secs:.2} s, {:.0} MB/s",
            tp.display,
            output::bytes(bytes as u64),
            bytes as f64 / 1e6 / secs.max(1e-9)
        ));
    }
    log.info(&format!("generated in {:.2} s", t0.elapsed().as_secs_f64()));
    Ok(())
}
