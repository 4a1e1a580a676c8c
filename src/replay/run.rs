//! A whole replay: the refusals checked before anything starts, parameter
//! pools sampled up front, the integrity counters and checksums taken
//! before and after, and the ladder's steps in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_postgres::Client;

use super::exec::{Pools, Shared, param_count, pool_columns, sample_pools};
use super::ladder::{StepOptions, StepResult, run_step};
use super::options::Options;
use super::report::{self, Counters, IntegrityJson, ReplayReport};
use super::workload::Workload;
use crate::db::{ConnInfo, quote_ident};
use crate::error::{Error, Result};
use crate::output::Log;

/// The counters and checksums the integrity line compares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerCounters {
    pub rows_changed: i64,
    pub xact_commit: i64,
    pub xact_rollback: i64,
    /// (relation, rows, checksum); `None` when skipped.
    pub checksums: Vec<(String, i64, Option<String>)>,
}

fn qualified(rel: &str) -> String {
    rel.split('.')
        .map(quote_ident)
        .collect::<Vec<_>>()
        .join(".")
}

/// How long the counters of a server before 15 are given to settle (see
/// [`server_counters`]).
const COLLECTOR_LAG_MS: u64 = 600;

/// Reads the server's counters and the written tables' checksums.
/// `version`: the server's `server_version_num`.
pub async fn server_counters(
    client: &Client,
    version: i32,
    relations: &[String],
    max_rows: u64,
) -> Result<ServerCounters> {
    let ctx = |what: &'static str| move |e| Error::db(what, e);
    if version < 150000 {
        // Before 15 the counters go through the statistics collector: a
        // backend's last changes reach it over a socket, and a snapshot may
        // be up to 500 ms (PGSTAT_STAT_INTERVAL) old. Waiting past that
        // counts the changes made just before (the run's own, or the
        // setup's) on the side they belong to.
        tokio::time::sleep(std::time::Duration::from_millis(COLLECTOR_LAG_MS)).await;
    }
    client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await
        .map_err(ctx("clearing the statistics snapshot"))?;
    let rows: i64 = client
        .query_one(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int8 FROM pg_stat_user_tables",
            &[],
        )
        .await
        .map_err(ctx("reading pg_stat_user_tables"))?
        .get(0);
    let x = client
        .query_one(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
        .map_err(ctx("reading pg_stat_database"))?;
    let mut checksums = Vec::new();
    for rel in relations {
        let q = qualified(rel);
        let n: i64 = match client
            .query_one(&format!("SELECT count(*) FROM {q}"), &[])
            .await
        {
            Ok(r) => r.get(0),
            // A relation the text names that is not a table here (a CTE name).
            Err(_) => continue,
        };
        let sum = if n as u64 <= max_rows {
            let r = client
                .query_one(
                    &format!(
                        "SELECT md5(coalesce(string_agg(h, '' ORDER BY h), '')) \
                         FROM (SELECT md5(t::text) AS h FROM {q} t) s"
                    ),
                    &[],
                )
                .await
                .map_err(ctx("checksumming a table"))?;
            Some(r.get::<_, String>(0))
        } else {
            None
        };
        checksums.push((rel.clone(), n, sum));
    }
    Ok(ServerCounters {
        rows_changed: rows,
        xact_commit: x.get(0),
        xact_rollback: x.get(1),
        checksums,
    })
}

/// The refusals that hold before anything runs.
pub fn check_workload(w: &Workload, opts: &Options, managed: bool) -> Result<()> {
    if w.units.is_empty() {
        return Err(Error::usage_hint(
            "no statements to replay",
            "record some with `planck record -- <tests>`, or write [[statement]] entries by hand",
        ));
    }
    if opts.ladder.is_empty() || opts.ladder.contains(&0) {
        return Err(Error::usage(
            "--ladder takes client counts above 0, e.g. 1,2,4,8",
        ));
    }
    if opts.commit && !managed && !opts.force {
        return Err(Error::usage_hint(
            "--commit refused: this database is not planck's own managed one, and the writes would stay",
            "replay without --commit (every unit is rolled back), or add --force if this database is disposable",
        ));
    }
    if !opts.allow_side_effects
        && let Some((s, why)) = w.side_effects().first()
    {
        return Err(Error::usage_hint(
            format!(
                "statement {} has an effect a rollback does not undo: {why}",
                s.id
            ),
            "add --allow-side-effects to replay it anyway, or mark it ignore = \"...\" in the queries file",
        ));
    }
    Ok(())
}

/// Parameters nothing binds and whose type has no value to send (so they
/// go as NULL): (unit, statement id, $n). `defaults` as in
/// [`type_parameters`].
pub fn unbound(w: &Workload, defaults: &[Vec<Option<String>>]) -> Vec<(String, String, u32)> {
    let mut out = Vec::new();
    for (u, _) in &w.units {
        let own = match u {
            super::workload::Unit::Transaction(t) => w.transactions[*t].bind.as_slice(),
            super::workload::Unit::Lone(_) => &[],
        };
        for s in w.unit_statements(*u) {
            let st = &w.statements[s];
            for p in 1..=param_count(&st.sql) {
                let typed = defaults
                    .get(s)
                    .and_then(|d| d.get(p as usize - 1))
                    .is_some_and(Option::is_some);
                let bound = typed
                    || st.auto_bind.iter().any(|b| b.param == p)
                    || own.iter().any(|b| b.statement == st.id && b.param == p);
                let entry = (w.unit_name(*u), st.id.clone(), p);
                if !bound && !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
    }
    out
}

/// SQLSTATEs of a text the server cannot type on its own (normalized
/// literals: `$1 + $2`, `coalesce(max(n), $1)`).
const UNTYPED: [&str; 4] = ["42P18", "42725", "42883", "42804"];

/// Prepares every statement once, on `client` outside any transaction, for
/// its parameters' types, and returns per statement a value of each type
/// (the shared params layer's [`fill_defaults`](crate::params::values::fill_defaults), as explain plans them):
/// what a parameter no bind or sample feeds is sent (a normalized literal:
/// `interval $3` of a rate limit's window, `coalesce(max(number), $7) + $8`).
/// A text the server cannot type gets the casts of the first of the params
/// layer's typing attempts that prepares (`sql` becomes that text). A
/// statement that does not prepare keeps NULLs: its executions fail and
/// are counted with their error.
pub async fn type_parameters(client: &Client, w: &mut Workload) -> Vec<Vec<Option<String>>> {
    use crate::params::typing;
    use crate::params::values::fill_defaults;
    let mut out = Vec::with_capacity(w.statements.len());
    for s in &mut w.statements {
        let n = param_count(&s.sql) as usize;
        let types = match client.prepare(&s.sql).await {
            Ok(p) => Some(p.params().to_vec()),
            Err(e) if e.code().is_some_and(|c| UNTYPED.contains(&c.code())) => {
                let u = typing::untyped(&s.sql);
                let loose = if u.loose.is_empty() {
                    typing::uncast(&s.sql)
                } else {
                    u.loose
                };
                let mut found = None;
                for a in typing::attempts(&loose, &Default::default()) {
                    let text = typing::apply(&s.sql, &a.casts);
                    if let Ok(p) = client.prepare(&text).await {
                        s.sql = text;
                        found = Some(p.params().to_vec());
                        break;
                    }
                }
                found
            }
            Err(_) => None,
        };
        let mut d = match types {
            Some(t) => fill_defaults(Vec::new(), &t),
            None => Vec::new(),
        };
        d.resize(n, None);
        out.push(d);
    }
    out
}

/// The top step, the sampler and the connections in use must fit the
/// server's limit (`max_connections` less the reserved ones).
pub async fn check_connections(client: &Client, top: u32, sampler: bool, rate: bool) -> Result<()> {
    let r = client
        .query_one(
            "SELECT current_setting('max_connections')::int \
                  - current_setting('superuser_reserved_connections')::int \
                  - coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0), \
                    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading max_connections", e))?;
    let limit = i64::from(r.get::<_, i32>(0));
    let in_use = i64::from(r.get::<_, i32>(1));
    // In 64 bits: a ladder of 2^31 clients wrapped around in 32.
    let need = i64::from(top) + i64::from(sampler);
    if need + in_use > limit {
        return Err(Error::usage_hint(
            format!(
                "the top step needs {need} connections and {in_use} are in use, but the server takes {limit} \
                 (max_connections less the reserved ones)"
            ),
            if rate {
                "lower --clients, or raise max_connections on the server"
            } else {
                "lower the top of --ladder, or raise max_connections on the server"
            },
        ));
    }
    Ok(())
}

/// Every role the units run as exists and the connecting user may `SET
/// ROLE` to it (PostgreSQL 16+: the membership's SET option; 14 and 15:
/// membership), checked before the run rather than failing every unit.
pub async fn check_roles(
    client: &Client,
    w: &Workload,
    tenant: Option<&super::tenant::TenantRun>,
) -> Result<()> {
    let mut roles: Vec<&str> = w
        .units
        .iter()
        .filter_map(|(u, _)| super::tenant::unit_role(w, *u))
        .chain(tenant.map(|t| t.role.as_str()))
        .collect();
    roles.sort_unstable();
    roles.dedup();
    for role in roles {
        let row = client
            .query_one(
                "SELECT session_user::text, \
                        current_setting('server_version_num')::int >= 160000, \
                        EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1), \
                        CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) \
                             THEN session_user = $1::name OR pg_has_role(session_user, $1::name, \
                                  CASE WHEN current_setting('server_version_num')::int >= 160000 \
                                       THEN 'SET' ELSE 'MEMBER' END) END",
                &[&role],
            )
            .await
            .map_err(|e| Error::db("reading the recorded roles", e))?;
        let (user, sixteen, exists, may): (String, bool, bool, Option<bool>) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let grant = format!(
            "GRANT {} TO {}{}",
            quote_ident(role),
            quote_ident(&user),
            if sixteen { " WITH SET TRUE" } else { "" }
        );
        if !exists {
            return Err(Error::usage_hint(
                format!(
                    "the workload was recorded as role {role}, which does not exist on this server"
                ),
                format!(
                    "create it (CREATE ROLE {}) and let {user} use it ({grant}), or re-record as a role this server has",
                    quote_ident(role)
                ),
            ));
        }
        if may != Some(true) {
            return Err(Error::usage_hint(
                format!(
                    "the workload was recorded as role {role}, and {user} may not SET ROLE to it"
                ),
                format!("grant it: {grant}"),
            ));
        }
    }
    Ok(())
}

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

/// The integrity line: planck's own counters, each counted on its own, beside
/// the server's deltas and the checksums.
pub fn integrity(
    t: &Counters,
    before: &ServerCounters,
    after: &ServerCounters,
    opts: &Options,
    interrupted: bool,
) -> IntegrityJson {
    let mut notes = Vec::new();
    let server_rows = after.rows_changed - before.rows_changed;
    if interrupted {
        // The server saw the dropped step's executions, planck's counters
        // did not: comparing them would raise a false alarm.
        notes.push(
            "counters not cross-checked: the run was interrupted, and the executions of the step \
             that was running are not counted"
                .to_string(),
        );
    } else if server_rows > t.rows_written as i64 && t.writes_failed > 0 {
        // A write that fails midway (a deadlock, a timeout, a constraint)
        // has changed rows the server counts; its error reports none.
        notes.push(format!(
            "the server counted {server_rows} rows inserted, updated or deleted, planck's executions \
             reported {}: the {} more are rows that {} write{} changed before failing (the server \
             counts them though they were rolled back; a failed statement reports none)",
            t.rows_written,
            server_rows - t.rows_written as i64,
            t.writes_failed,
            if t.writes_failed == 1 { "" } else { "s" },
        ));
    } else if server_rows != t.rows_written as i64 {
        notes.push(format!(
            "MISMATCH: the server counted {server_rows} rows inserted, updated or deleted, planck's executions reported {}",
            t.rows_written
        ));
    }
    if !interrupted && t.attempted != t.succeeded + t.failed {
        notes.push(format!(
            "MISMATCH: {} attempted but {} succeeded and {} failed (units cut off by the end of the run)",
            t.attempted, t.succeeded, t.failed
        ));
    }
    let server_rollbacks = after.xact_rollback - before.xact_rollback;
    if !interrupted && server_rollbacks < t.rollbacks as i64 {
        notes.push(format!(
            "MISMATCH: planck rolled back {} transactions, the server counted {server_rollbacks}",
            t.rollbacks
        ));
    }
    let mut unchanged = true;
    for (rel, n, sum) in &before.checksums {
        let a = after.checksums.iter().find(|(r, _, _)| r == rel);
        match (sum, a) {
            (None, _) => notes.push(format!(
                "{rel} not checksummed: {n} rows, above --verify-max-rows {}",
                opts.verify_max_rows
            )),
            (Some(s), Some((_, an, Some(asum)))) if s == asum && n == an => {}
            (Some(_), Some((_, an, _))) => {
                unchanged = false;
                notes.push(format!(
                    "{rel} changed: {n} rows before, {an} after, checksum differs"
                ));
            }
            (Some(_), None) => {
                unchanged = false;
                notes.push(format!("{rel} could not be read after the run"));
            }
        }
    }
    if t.reconnects > 0 {
        notes.push(format!(
            "{} connections were lost mid-run and re-established (the server restarted, or \
             terminated them): the units they were running count as failed, under 08006 or the \
             server's SQLSTATE (57P01 at a shutdown)",
            t.reconnects
        ));
    }
    if !opts.commit {
        notes.push(
            "every unit ran inside BEGIN .. ROLLBACK: production's commit (its WAL flush, so locks are held a \
             little longer there) and READ COMMITTED waiters re-checking a committed row are left out; sequences advance"
                .into(),
        );
    }
    IntegrityJson {
        attempted: t.attempted,
        succeeded: t.succeeded,
        failed: t.failed,
        planck_rows_changed: t.rows_written,
        server_rows_changed: Some(server_rows),
        planck_rollbacks: t.rollbacks,
        planck_commits: t.commits,
        server_xact_rollback: Some(server_rollbacks),
        server_xact_commit: Some(after.xact_commit - before.xact_commit),
        data_unchanged: (!before.checksums.is_empty()).then_some(unchanged),
        notes,
        skipped: Vec::new(),
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
