//! `planck seed`'s machinery, one module per concern: the catalog it reads,
//! the spec users write, the checks it understands, the column generators it
//! picks, the plan it derives, the value generators and pinned RNG, the
//! binary COPY encoder, the load choreography (indexes, transactions,
//! progress, recovery), the stop signals it survives and the summary it
//! renders. [`run`] is the entry point (`planck seed`, `planck demo`).

// The foundation's `Error` carries a large `Migration` variant; boxing it is
// a crate-wide decision, so seed code follows `Result<T, Error>` as it is.
#![allow(clippy::result_large_err)]

pub mod check_expr;
pub mod columns;
pub mod copy;
pub mod generate;
pub mod layout;
pub mod load;
pub mod rng;
pub mod server_check;
pub mod shape;
pub mod spec;
pub mod summary;

use std::path::PathBuf;
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

/// What one `planck seed` does, every value resolved and validated (by
/// `settings::seed`, from flags, planck.toml and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SeedOptions {
    /// The spec file; None: seed every table from the catalog alone.
    pub spec: Option<PathBuf>,
    pub seed: u64,
    pub scale: f64,
    pub rows: Option<u64>,
    pub threads: usize,
    /// (k, n): load only the k-th of n slices (1-based).
    pub shard: Option<(u64, u64)>,
    pub truncate: bool,
    pub dry_run: bool,
    pub generate_only: bool,
    /// `--restore`: restore what an interrupted run left saved, load nothing.
    pub restore: bool,
    /// `--forget NAME` (with `--restore`): drop planck's copy of a saved constraint.
    pub forget: Vec<String>,
}

/// Seeds the database `conn` names; the summary to render. Catches SIGINT,
/// SIGTERM and SIGHUP from its start (see [`signal`]); on one it returns
/// `Error::Interrupted` and [`signal::received`] says which.
pub async fn run(conn: &ConnInfo, opts: &SeedOptions, log: Log) -> Result<Summary> {
    let signals = signal::Signals::install()?;
    if opts.restore {
        return restore(conn, opts, &signals, log).await;
    }
    let sf = match &opts.spec {
        Some(p) => SpecFile::load(p)?,
        None => SpecFile::default(),
    };
    let plan_opts = layout::Options {
        seed: opts.seed,
        scale: opts.scale,
        default_rows: opts.rows,
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
            l = SeedLock::acquire(conn, sharded, load::APP_NAME, log) => l?,
            s = signals.wait() => return Err(signal::interrupted(s, "nothing was written")),
        };
        lock = Some(l);
        if sharded {
            // Another shard may be saving and dropping the foreign keys right
            // now: read the saved keys and the catalog on one side of that.
            // (After the seed lock: an unsharded run holding it may be saving.)
            bookkeeping::hold_saves(&client).await?;
        }
        load::recover(conn, opts.threads, sharded, log).await?
    } else {
        bookkeeping::warn_pending(&client, log).await;
        load::pending_fks(conn).await?
    };
    let cat = catalog::load(&mut client, &pending).await?;
    if opts.shard.is_some() && writes {
        bookkeeping::allow_saves(&client).await?;
    }
    drop(client);
    let started = Instant::now();
    let plan = Arc::new(layout::build(&cat, &sf, &plan_opts)?);
    log_plan(&plan, &sf, log);
    if opts.generate_only {
        generate_only(&plan, opts.threads, log)?;
        return Ok(Summary::of(&plan, None, 0.0, false));
    }
    let Some(mut lock) = lock else {
        log.info("dry run: nothing written");
        return Ok(Summary::of(&plan, None, 0.0, true));
    };
    let report = load::run(
        conn,
        plan.clone(),
        &LoadOptions {
            truncate: opts.truncate,
            threads: opts.threads,
            shard: opts.shard,
            fault: None,
        },
        &mut lock,
        &signals,
        log,
    )
    .await?;
    Ok(Summary::of(
        &plan,
        Some(&report),
        started.elapsed().as_secs_f64(),
        false,
    ))
}

/// `planck seed --restore`.
async fn restore(
    conn: &ConnInfo,
    opts: &SeedOptions,
    signals: &signal::Signals,
    log: Log,
) -> Result<Summary> {
    let lock = tokio::select! {
        l = SeedLock::acquire(conn, false, load::APP_NAME, log) => l?,
        s = signals.wait() => return Err(signal::interrupted(s, "nothing was restored")),
    };
    let r = load::restore_command(conn, opts.threads, &opts.forget, log).await?;
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

fn log_plan(plan: &layout::Plan, sf: &SpecFile, log: Log) {
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
            "  {}: {} rows, {}; {}",
            tp.display,
            tp.rows,
            tp.layout_name(),
            fks.join(", ")
        ));
    }
}

/// `--generate-only`: generate and encode every row, send nothing, report MB/s.
fn generate_only(plan: &Arc<layout::Plan>, threads: usize, log: Log) -> Result<()> {
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
                    copy::encode_chunk(plan, t, &cols, r, 1 << 20).len()
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
