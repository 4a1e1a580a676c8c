//! A whole replay: the refusals checked before anything starts, parameter
//! pools sampled up front, the integrity counters and checksums taken
//! before and after, and the ladder's steps in order.
//!
//! The checks before the run are in [`preflight`], the integrity counters
//! and their comparison in [`integrity`]; this file runs the ladder.

mod integrity;
mod preflight;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_postgres::Client;

use super::exec::{Pools, Shared, pool_columns, sample_pools};
use super::ladder::{StepOptions, StepResult, run_step};
use super::options::Options;
use super::report::{self, Counters, ReplayReport};
use super::workload::Workload;
use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;

use integrity::{integrity, server_counters};
use preflight::{check_connections, check_roles, check_workload, type_parameters, unbound};

/// Runs the ladder; `stop` (Ctrl-C, SIGTERM) ends it after the finished steps.
pub async fn run(
    conn: &ConnInfo,
    mut workload: Workload,
    opts: &Options,
    log: Log,
    stop: Arc<AtomicBool>,
) -> Result<ReplayReport> {
    check_workload(&workload, opts, conn.managed)?;
    let admin = conn.connect().await?;
    let stats_mode = crate::session::untrack(&admin)
        .await
        .unwrap_or(crate::session::StatsMode::Tagged);
    let (server_version, version_num) = crate::session::server_version(&admin, stats_mode).await?;
    let top = opts.top_clients();
    let top = opts.pool.map_or(top, |p| p.min(top));
    check_connections(&admin, top, opts.sampler, opts.rate.is_some()).await?;
    let skipped = skip_stale(&admin, &mut workload, log).await?;
    let tenant = super::tenant::resolve(&admin, &workload, &opts.tenant, stats_mode, log).await?;
    check_roles(&admin, &workload, tenant.as_ref()).await?;
    let pools = sample_pools(&admin, &workload, opts.pool_rows, tenant.as_ref())
        .await
        .map_err(|e| Error::db("sampling parameter values", e))?;
    let mut unsatisfied = Vec::new();
    let fresh = super::fresh::plan(&admin, &workload, &mut unsatisfied)
        .await
        .map_err(|e| Error::db("reading the INSERTs' key columns", e))?;
    warn_workload(log, &workload, opts, &pools, unsatisfied);
    let defaults = type_parameters(&admin, &mut workload).await;
    for (what, s, p) in unbound(&workload, &defaults) {
        log.warn(&format!(
            "{what}: ${p} of statement {s} is bound to no column, value or result: it is sent as NULL \
             (add a [[transaction.bind]] entry, or a cast: $n::type)"
        ));
    }
    let relations = workload.written_relations();
    let before = server_counters(&admin, version_num, &relations, opts.verify_max_rows).await?;
    let returns = super::exec::returns_read(&workload);
    let shared = Arc::new(Shared {
        returns,
        workload,
        pools,
        statement_timeout_ms: opts.statement_timeout_ms,
        commit: opts.commit,
        defaults,
        tenant,
        fresh,
        fresh_next: std::sync::atomic::AtomicU64::new(0),
        stop: stop.clone(),
    });
    let app = format!("planck replay {}", std::process::id());
    let mut steps: Vec<StepResult> = Vec::new();
    let mut interrupted = false;
    for (i, &c) in opts.ladder.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let (clients, rate) = match opts.rate {
            Some(clients) => (clients, Some(f64::from(c))),
            None => (c, None),
        };
        let (merged, stopped) = repeated_step(
            conn,
            (&admin, version_num),
            &shared,
            opts,
            i,
            clients,
            rate,
            &app,
            &stop,
        )
        .await?;
        interrupted |= stopped;
        let Some(r) = merged else { break };
        if interrupted {
            break;
        }
        log_step(log, opts, &shared.workload, i, c, clients, rate, &r);
        steps.push(r);
    }
    // A server restarted mid-run took this connection with it.
    let admin = if admin.is_closed() {
        log.warn("the server closed planck's connection during the run: reconnecting for the integrity line");
        conn.connect().await?
    } else {
        admin
    };
    wait_for_workers(&admin, &app, interrupted).await?;
    let after = server_counters(&admin, version_num, &relations, opts.verify_max_rows).await?;
    let totals = totals_of(&steps);
    let mut integrity = integrity(&totals, &before, &after, opts, interrupted);
    integrity.skipped = skipped;
    let mut report = report::build(
        &shared.workload,
        &steps,
        integrity,
        opts.sample_ms,
        interrupted,
    );
    report.server_version = server_version;
    Ok(report)
}

/// Warns of what will not run as recorded: INSERTs without fresh keys,
/// long pauses, idle flags, and tables with no rows to bind from.
fn warn_workload(
    log: Log,
    workload: &Workload,
    opts: &Options,
    pools: &Pools,
    unsatisfied: Vec<String>,
) {
    for column in unsatisfied {
        log.warn(&format!(
            "{column}: no fresh value planck makes passes its CHECK constraints: the INSERTs keep \
             sampled values, which collide with existing rows (bind the parameter in a [[transaction.bind]])"
        ));
    }
    for what in long_pauses(workload, opts.duration)
        .into_iter()
        .chain(idle_flags(opts))
    {
        log.warn(&what);
    }
    for (table, _) in pool_columns(workload) {
        if pools.get(&table).is_none_or(|p| p.rows.is_empty()) {
            log.warn(&format!(
                "table {table} has no rows: its bound parameters are NULL"
            ));
        }
    }
}

/// The rows the database's tables have given up to scans (see
/// `Counters::rows_read`); `None` before PostgreSQL 15 or when the server
/// cannot be read (a restart took the connection).
async fn rows_read(admin: &Client, version: i32) -> Option<u64> {
    if version < 150000 {
        return None;
    }
    // planck's own reads on this connection (sampling, checksums) are
    // flushed first, so that they count before the step, not in it.
    admin
        .batch_execute("SELECT pg_stat_force_next_flush()")
        .await
        .ok()?;
    admin
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await
        .ok()?;
    let rows: i64 = admin
        .query_one(
            "SELECT (SELECT coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables)::int8 \
             + (SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes)::int8",
            &[],
        )
        .await
        .ok()?
        .get(0);
    u64::try_from(rows).ok()
}

/// Runs step `i` (`clients`, at `rate` in an open loop) `--repeat` times,
/// merged: `None` when interrupted before any run finished; and whether
/// a run was interrupted.
#[allow(clippy::too_many_arguments)]
async fn repeated_step(
    conn: &ConnInfo,
    (admin, version): (&Client, i32),
    shared: &Arc<Shared>,
    opts: &Options,
    i: usize,
    clients: u32,
    rate: Option<f64>,
    app: &str,
    stop: &Arc<AtomicBool>,
) -> Result<(Option<StepResult>, bool)> {
    let mut interrupted = false;
    let mut merged: Option<StepResult> = None;
    for run in 0..opts.repeat.max(1) {
        let step = StepOptions {
            concurrency: clients,
            rate,
            pool: opts.pool,
            warmup: opts.warmup,
            duration: opts.duration,
            sample_ms: opts.sample_ms,
            sampler: opts.sampler,
            workers: opts.workers,
            seed: opts
                .seed
                .wrapping_add(i as u64)
                .wrapping_add((run as u64) << 32),
            app: app.to_string(),
        };
        let rows_before = rows_read(admin, version).await;
        let mut r = run_step(conn, shared.clone(), &step, stop.clone()).await?;
        if r.interrupted {
            interrupted = true;
            break;
        }
        // The step's backends flush their counts as they exit.
        if rows_before.is_some() && wait_for_workers(admin, app, false).await.is_ok() {
            r.stats.counters.rows_read = rows_read(admin, version)
                .await
                .zip(rows_before)
                .map(|(after, before)| after.saturating_sub(before));
        }
        merged = Some(match merged {
            None => r,
            Some(m) => m.append(r),
        });
    }
    Ok((merged, interrupted))
}

/// Logs step `i`'s throughput, latency and errors (and, with --verbose,
/// its round trips per unit).
#[allow(clippy::too_many_arguments)]
fn log_step(
    log: Log,
    opts: &Options,
    workload: &Workload,
    i: usize,
    c: u32,
    clients: u32,
    rate: Option<f64>,
    r: &StepResult,
) {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    let errors: u64 = r.stats.units.errors.values().map(|e| e.count).sum();
    let what = match rate {
        Some(r) => format!(
            "{r} units/s offered over {}",
            crate::output::count_of(u64::from(clients), "client")
        ),
        None => crate::output::count_of(u64::from(c), "client"),
    };
    log.info(&format!(
        "step {}/{}: {what}, {:.1} units/s, p95 {:.2} ms, {}{}",
        i + 1,
        opts.ladder.len(),
        r.stats.units.latency.count() as f64 / secs,
        r.stats.units.latency.percentile_ms(95.0),
        crate::output::count_of(errors, "error"),
        error_summary(workload, &r.stats),
    ));
    let units = r.stats.counters.attempted.max(1) as f64;
    log.debug(&format!(
        "step {}: round trips per unit: {:.2} carrying the workload's statements, {:.2} of \
         planck's own (role and session settings, PREPARE, a COMMIT or ROLLBACK sent alone)",
        i + 1,
        r.stats.counters.workload_round_trips as f64 / units,
        r.stats.counters.planck_round_trips as f64 / units,
    ));
}

/// Waits for the step's connections (`app`) to close, so that their
/// statistics are flushed; cancels their statements first when interrupted.
async fn wait_for_workers(admin: &Client, app: &str, interrupted: bool) -> Result<()> {
    // Interrupted: statements still running are cancelled (the server
    // would run a long one to its end after the client left), so the
    // workers roll back and close their connections now.
    if interrupted {
        let _ = admin
            .execute(
                "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = $1 AND pid <> pg_backend_pid()",
                &[&app],
            )
            .await;
    }
    // Backends flush their statistics as they exit: wait for them to go.
    for _ in 0..100 {
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&app],
            )
            .await
            .map_err(|e| Error::db("waiting for replay's connections to close", e))?
            .get(0);
        if n == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The run's totals over its steps, as the integrity line counts them.
fn totals_of(steps: &[StepResult]) -> Counters {
    let mut totals = Counters::default();
    for s in steps {
        totals.merge(&s.stats.counters);
    }
    totals
}

/// Skips the units that run a stale statement (what it names is gone since
/// the recording), one warning per statement; nothing left is an error.
async fn skip_stale(
    client: &Client,
    w: &mut Workload,
    log: Log,
) -> Result<Vec<crate::wire::replay::SkippedJson>> {
    let skipped = super::stale::skip(client, w).await?;
    for k in &skipped {
        log.warn(&super::stale::warning(k));
    }
    if w.units.is_empty() {
        return Err(super::stale::all_stale(&skipped));
    }
    if !skipped.is_empty() {
        log.info(
            "the queries file is older than this database's schema: re-record it \
             (`planck record -- <tests>`) to replay the skipped statements",
        );
    }
    Ok(skipped)
}

/// The step's errors by SQLSTATE, each with its first text and the
/// statement that failed most with it: `: 57014 x3 (canceling statement
/// due to statement timeout) in `UPDATE items ...``; empty without errors.
pub fn error_summary(w: &Workload, stats: &super::exec::WorkerStats) -> String {
    let mut codes: Vec<(&String, &super::exec::ErrorCount)> = stats.units.errors.iter().collect();
    codes.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    let parts: Vec<String> = codes
        .iter()
        .map(|(code, e)| {
            let worst = stats
                .statements
                .iter()
                .filter_map(|(s, t)| Some((*s, t.errors.get(*code)?.count)))
                .max_by_key(|(s, n)| (*n, std::cmp::Reverse(*s)));
            let at = match worst {
                Some((s, _)) => format!(
                    " in `{}`",
                    crate::output::shorten(&w.statements[s].query, 60)
                ),
                None => String::new(),
            };
            format!("{code} x{} ({}){at}", e.count, e.first)
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join("; "))
    }
}

/// Warnings for flags that change nothing as given, and a ladder whose
/// verdict cannot mean what it says (each step is read against the one
/// before: growing, plateau, backwards).
fn idle_flags(opts: &Options) -> Vec<String> {
    let mut out = Vec::new();
    if opts.rate.is_none() && opts.ladder.windows(2).any(|w| w[1] <= w[0]) {
        out.push(format!(
            "--ladder {} does not rise step by step: each step's verdict (growing, plateau, \
             backwards) compares it with the step before, so read them with care (--repeat repeats a step)",
            super::ladder::ladder_text(&opts.ladder)
        ));
    }
    let top = opts.top_clients();
    if let Some(pool) = opts.pool.filter(|p| *p >= top) {
        out.push(format!(
            "--pool {pool} is no smaller than the {top} clients of the top step: no client ever waits \
             for a connection, so it changes nothing"
        ));
    }
    if opts.force && !opts.commit {
        out.push("--force goes with --commit (committing on a database planck does not manage): alone, it changes nothing".to_string());
    }
    out
}

/// A warning for each transaction whose pauses (`think_ms` after each of
/// its statements) add up to more than a step: its executions outlast
/// their step, and a pause past the step's end is cut.
fn long_pauses(w: &Workload, step: Duration) -> Vec<String> {
    let step_ms = step.as_secs_f64() * 1000.0;
    w.units
        .iter()
        .filter_map(|(unit, _)| match unit {
            super::workload::Unit::Transaction(t) => {
                let t = &w.transactions[*t];
                let ms = t.think_ms * w.unit_statements(*unit).len() as f64;
                (ms > step_ms).then(|| {
                    format!(
                        "transaction {}: its pauses add up to {} an execution (think_ms = {} after \
                         each statement), longer than a step ({}): executions run past their step, \
                         and a pause past the step's end is cut (lengthen --duration, or shorten think_ms)",
                        t.name,
                        seconds(ms),
                        crate::output::number(t.think_ms),
                        seconds(step_ms)
                    )
                })
            }
            super::workload::Unit::Lone(_) => None,
        })
        .collect()
}

/// Milliseconds as a person reads them: `250 ms`, `1.5 s`.
fn seconds(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{} ms", crate::output::number(ms))
    } else {
        format!("{} s", crate::output::number((ms / 100.0).round() / 10.0))
    }
}

#[cfg(test)]
mod tests {
    use super::integrity::ServerCounters;
    use super::*;
    use crate::replay::options::TenantChoice;

    fn opts() -> Options {
        Options {
            ladder: vec![1],
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            statement_timeout_ms: 1000,
            sample_ms: 20,
            sampler: true,
            commit: false,
            force: false,
            allow_side_effects: false,
            verify_max_rows: 1000,
            workers: 1,
            seed: 1,
            pool_rows: 10,
            rate: None,
            pool: None,
            repeat: 1,
            tenant: TenantChoice::default(),
        }
    }

    /// Flags that change nothing as given, and a ladder that does not rise,
    /// are named; the usual ladder, a smaller pool and --force with
    /// --commit are not.
    #[test]
    fn idle_flags_and_falling_ladders_are_named() {
        let quiet = Options {
            ladder: vec![1, 4, 16],
            pool: Some(8),
            commit: true,
            force: true,
            ..opts()
        };
        assert!(idle_flags(&quiet).is_empty(), "{:?}", idle_flags(&quiet));
        let noisy = Options {
            ladder: vec![4, 2, 2],
            pool: Some(4),
            force: true,
            ..opts()
        };
        let w = idle_flags(&noisy);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].starts_with("--ladder 4,2,2 does not rise step by step"),
            "{w:?}"
        );
        assert!(
            w[1].starts_with("--pool 4 is no smaller than the 4 clients"),
            "{w:?}"
        );
        assert!(w[2].starts_with("--force goes with --commit"), "{w:?}");
        // In rate mode the ladder lists rates, in any order.
        let rates = Options {
            ladder: vec![200, 100],
            rate: Some(4),
            ..opts()
        };
        assert!(idle_flags(&rates).is_empty(), "{:?}", idle_flags(&rates));
    }

    /// A planted mismatch (the server saw a row change planck did not
    /// report, and a table's checksum moved) is reported, not hidden.
    #[test]
    fn integrity_reports_a_planted_mismatch() {
        let t = Counters {
            attempted: 10,
            succeeded: 10,
            rollbacks: 10,
            rows_written: 5,
            ..Default::default()
        };
        let before = ServerCounters {
            rows_changed: 100,
            xact_commit: 0,
            xact_rollback: 0,
            checksums: vec![("accounts".into(), 3, Some("a".into()))],
        };
        let mut after = ServerCounters {
            rows_changed: 105,
            xact_commit: 1,
            xact_rollback: 10,
            checksums: vec![("accounts".into(), 3, Some("a".into()))],
        };
        let ok = integrity(&t, &before, &after, &opts(), false);
        assert_eq!(ok.data_unchanged, Some(true));
        assert!(
            !ok.notes.iter().any(|n| n.contains("MISMATCH")),
            "{:?}",
            ok.notes
        );
        after.rows_changed = 106;
        after.checksums[0].2 = Some("b".into());
        // Interrupted, the counters are not compared (the dropped step's
        // executions are the server's only), and the note says so.
        let cut = integrity(&t, &before, &after, &opts(), true);
        assert!(
            !cut.notes.iter().any(|n| n.contains("MISMATCH"))
                && cut
                    .notes
                    .iter()
                    .any(|n| n.starts_with("counters not cross-checked")),
            "{:?}",
            cut.notes
        );
        let bad = integrity(&t, &before, &after, &opts(), false);
        assert_eq!(bad.data_unchanged, Some(false));
        assert!(
            bad.notes
                .iter()
                .any(|n| n.starts_with("MISMATCH: the server counted 6")),
            "{:?}",
            bad.notes
        );
        assert!(bad.notes.iter().any(|n| n.contains("accounts changed")));
    }

    #[test]
    fn commit_on_an_unmanaged_database_is_refused_without_force() {
        let w = Workload::new(
            vec![super::super::workload::Statement::new(
                "s".into(),
                "UPDATE t SET a = 1".into(),
                None,
                1,
            )],
            vec![],
            Default::default(),
            false,
        );
        let mut o = opts();
        o.commit = true;
        assert!(check_workload(&w, &o, false).is_err());
        assert!(check_workload(&w, &o, true).is_ok());
        o.force = true;
        assert!(check_workload(&w, &o, false).is_ok());
    }

    /// The step line names each SQLSTATE with its first text and the
    /// statement that failed most with it.
    #[test]
    fn step_errors_are_summarised_by_sqlstate() {
        let w = Workload::new(
            vec![
                super::super::workload::Statement::new("a".into(), "SELECT 1 / 0".into(), None, 1),
                super::super::workload::Statement::new(
                    "b".into(),
                    "SELECT pg_sleep(9)".into(),
                    None,
                    1,
                ),
            ],
            vec![],
            Default::default(),
            false,
        );
        let mut st = super::super::exec::WorkerStats::default();
        assert_eq!(error_summary(&w, &st), "");
        for (s, code, text) in [
            (0, "22012", "division by zero"),
            (1, "57014", "timeout"),
            (1, "57014", "timeout"),
        ] {
            super::super::exec::add_error(&mut st.units.errors, code, text);
            super::super::exec::add_error(
                &mut st.statements.entry(s).or_default().errors,
                code,
                text,
            );
        }
        assert_eq!(
            error_summary(&w, &st),
            ": 57014 x2 (timeout) in `SELECT pg_sleep(9)`; 22012 x1 (division by zero) in `SELECT 1 / 0`"
        );
    }

    #[test]
    fn no_statements_is_an_error() {
        let w = Workload::default();
        let e = check_workload(&w, &opts(), true).unwrap_err();
        assert!(e.to_string().contains("no statements"));
    }
}
