//! `planck explain` as a library call: [`run`] takes the resolved
//! [`ExplainSettings`], a connection and a [`Log`], and returns the
//! [`ExplainReport`]; rendering and the exit code are the command's.
//!
//! The phases, in order: read the statements, read the catalog, work out the
//! tenancy, plan (the engine), re-plan with partial-index literals, judge
//! (checks, ignores, baseline).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio_postgres::Client;

use super::data;
use super::engine::{Engine, EngineOptions, Explained, Status, used_indexes};
use super::options::{ExplainSettings, StatementSource};
use super::plan_tree::{Mode, PlanKind};
use super::probes::{Measure, Probes};
use super::report::ExplainReport;
use super::rules::unused_partial_index::{literal_binds, predicate_literals};
use super::rules::{self, CheckId, Ctx, Severity};
use super::stats_source;
use crate::catalog::planner::Catalog;
use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::findings::baseline::{self, Baseline};
use crate::findings::{
    self, Finding,
    ignore::{IgnoreRule, ignored_by},
};
use crate::output::{Log, counted};
use crate::queries::{QueryFile, Statement};
use crate::session::{self, StatsMode};
use crate::tenancy::{self, Tenancy};

/// Plans every statement and judges the plans.
pub async fn run(conn: &ConnInfo, s: &ExplainSettings, log: Log) -> Result<ExplainReport> {
    let client = conn.connect().await?;
    let stats = session::quiet_stats(&client, log).await?;
    let (statements, created_relations) = read_statements(&client, s, stats, log).await?;
    if statements.is_empty() {
        log.warn("no statements to explain (the queries file or pg_stat_statements is empty)");
        return Ok(ExplainReport::default());
    }

    let clock = Instant::now();
    let catalog = Arc::new(Catalog::load(&client, stats).await?);
    log.debug(&format!(
        "catalog read in {:.2}s",
        clock.elapsed().as_secs_f64()
    ));
    warn_unmatched_ignores(&s.ignores, &catalog, &statements, log);
    let tenancy = resolve_tenancy(&client, &catalog, s, &statements, stats, log).await?;
    let mut modes = Vec::new();
    if tenancy.is_some() {
        modes.push(Mode::Tenant);
    }
    if s.want_admin() {
        modes.push(Mode::Admin);
    }
    let engine = Engine::new(
        conn,
        catalog.clone(),
        tenancy.clone(),
        EngineOptions {
            modes,
            all_modes: s.all_modes,
            analyze: s.analyze,
            timeout_ms: s.timeout_ms,
            jobs: s.jobs,
            stats,
            created_relations,
            planner: s.planner.clone(),
        },
        log,
    )?;
    let mut results = plan(&engine, statements.clone(), log).await?;

    let clock = Instant::now();
    literal_pass(&engine, &catalog, &mut results).await?;
    log.debug(&format!(
        "literal re-plans in {:.2}s",
        clock.elapsed().as_secs_f64()
    ));
    let (judged, not_judged) = judge_data(&client, &catalog, &mut results, s, log).await?;
    let below_min_rows = data::below_min_rows(&results, &catalog, s.min_rows);
    if let Some(line) = below_min_rows.line() {
        log.warn(&format!(
            "{line}; seed more rows (`planck seed --rows N`) or lower --min-rows"
        ));
    }

    let probes = probe_phases(
        &client,
        conn,
        &catalog,
        tenancy.as_ref(),
        &results,
        s,
        stats,
        log,
    )
    .await?;
    let ctx = Ctx {
        probes: &probes,
        catalog: &catalog,
        results: &results,
        tenancy: tenancy.as_ref(),
        min_rows: s.min_rows,
        min_table_rows: s.min_table_rows,
        unjudged: data::unjudged_tables(&results, &catalog),
        knobs: &s.knobs,
        source: s.app_source.as_deref(),
        generic: s.generic,
        withheld: Default::default(),
    };
    let clock = Instant::now();
    let mut all = rules::run_all(&ctx, &s.disabled);
    let not_judged_objects =
        data::NotJudgedObjects::new(s.min_table_rows, s.min_rows, ctx.withheld.take());
    if let Some(line) = not_judged_objects.line(5) {
        log.warn(&format!(
            "{line}; seed more rows (`planck seed --rows N`) or lower --min-table-rows"
        ));
    }
    if judged == 0 && not_judged > 0 {
        // Nothing the data can show: only what needs no data stands (a
        // statement that no longer plans), so no finding about the catalog
        // alone makes the gate pass or fail either.
        all.retain(|f| f.check == CheckId::StaleStatement);
    }
    log.debug(&format!(
        "checks run in {:.2}s",
        clock.elapsed().as_secs_f64()
    ));
    guessed_types_warn(&mut all, &results);
    if let StatementSource::Queries(path) = &s.statements {
        let shown = match &s.source_root {
            Some(root) => findings::source::relative(path, root),
            None => path.clone(),
        };
        findings::locate(&mut all, &statements, &shown);
    }
    let (mut findings, ignored) = judge(all, &results, s, log)?;
    advice_phase(
        &client,
        conn,
        &catalog,
        tenancy.as_ref(),
        &results,
        &mut findings,
        s,
        stats,
        log,
    )
    .await?;
    Ok(ExplainReport {
        results,
        findings,
        ignored,
        tenant_rows: tenancy.and_then(|t| t.heaviest_rows),
        below_min_rows,
        not_judged_objects,
    })
}

/// Marks the statements the data cannot judge (see [`data`]); returns how
/// many are left to judge and how many were marked. When statements were
/// planned and none can be judged, that is an error (exit 2) naming `planck
/// seed`, unless `--allow-unseeded`.
async fn judge_data(
    client: &Client,
    catalog: &Catalog,
    results: &mut [Explained],
    s: &ExplainSettings,
    log: Log,
) -> Result<(usize, usize)> {
    let seeded: std::collections::HashSet<String> = crate::bookkeeping::seeded(client)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(crate::catalog::planner::display)
        .collect();
    let threshold = data::Threshold {
        min_table_rows: s.min_table_rows,
        seeded: &seeded,
    };
    let marked = data::mark(results, catalog, &threshold);
    let judged = results
        .iter()
        .filter(|e| e.status == Status::Explained)
        .count();
    if marked == 0 {
        return Ok((judged, 0));
    }
    let hint = "fill the database with production-sized data (`planck seed`), or point \
                --database-url at a copy that has it";
    if judged == 0 && !s.allow_unseeded {
        let mut small: Vec<&str> = data::unjudged_tables(results, catalog)
            .into_iter()
            .filter(|t| catalog.rows(t) < s.min_table_rows)
            .map(|t| {
                catalog
                    .tables
                    .get_key_value(&t)
                    .map_or("", |(k, _)| k.as_str())
            })
            .filter(|t| !t.is_empty())
            .collect();
        small.sort_by_key(|t| catalog.rows(t));
        let named: Vec<String> = small
            .iter()
            .take(5)
            .map(|t| format!("{t}: {}", counted(catalog.rows(t), "row", "rows")))
            .collect();
        return Err(Error::usage_hint(
            format!(
                "no statement can be judged on this data: {} ({}{}), and plans made on \
                 them say nothing about production",
                if marked == 1 {
                    "the one planned reads tables that are empty or nearly".to_string()
                } else {
                    format!("all {marked} planned read tables that are empty or nearly")
                },
                named.join(", "),
                if small.len() > 5 {
                    format!(" and {} more", small.len() - 5)
                } else {
                    String::new()
                }
            ),
            format!("{hint}; --allow-unseeded reports them as not judged and exits 0"),
        ));
    }
    log.warn(&format!(
        "{}: {} (the report names {}); {hint}",
        counted(
            marked as u64,
            "statement not judged",
            "statements not judged"
        ),
        if marked == 1 {
            "a table it reads holds too few rows to show production's plan"
        } else {
            "tables they read hold too few rows to show production's plans"
        },
        if marked == 1 { "it" } else { "them" }
    ));
    Ok((judged, marked))
}

/// The statements, from the queries file or pg_stat_statements.
async fn read_statements(
    client: &Client,
    s: &ExplainSettings,
    stats: StatsMode,
    log: Log,
) -> Result<(Vec<Statement>, Vec<String>)> {
    match &s.statements {
        StatementSource::Stats => {
            let (statements, dropped) = stats_source::read(client, stats).await?;
            if !dropped.is_empty() {
                let parts: Vec<String> = dropped
                    .iter()
                    .map(|(n, k)| format!("{k} {}", n.describe()))
                    .collect();
                // `left out 5 of planck's own, 21 server FK checks, 1 stats resets`
                log.info(&format!("left out {}", parts.join(", ")));
            }
            Ok((statements, Vec::new()))
        }
        StatementSource::Queries(path) => {
            if !path.is_file() {
                return Err(Error::usage_hint(
                    format!("no queries file at {}", path.display()),
                    "record one with `planck record -- <your tests>`, pass --queries PATH, or use --from-stats",
                ));
            }
            let f = QueryFile::load(path)?;
            Ok((f.statements, f.created_relations))
        }
    }
}

/// Tenant mode's role, setting and tenant, or None (admin only).
async fn resolve_tenancy(
    client: &Client,
    catalog: &Catalog,
    s: &ExplainSettings,
    statements: &[Statement],
    stats: StatsMode,
    log: Log,
) -> Result<Option<Tenancy>> {
    if !(s.want_tenant() && (s.tenant_only || !catalog.policies.is_empty())) {
        if s.want_tenant() && !s.admin_only {
            log.info("no row-level security policies: planning as admin only");
        }
        return Ok(None);
    }
    // No tenant to plan as, and the user said the data is not seeded:
    // admin mode plans what there is (none of it judged, see `data`).
    if s.allow_unseeded
        && !s.tenant_only
        && s.tenant.id.is_none()
        && catalog.tables.values().all(|t| !t.rls || t.rows == 0)
    {
        log.info(
            "the row-level security tables are empty: planning as admin only (--allow-unseeded)",
        );
        return Ok(None);
    }
    // The roles the statements ran as, except those recorded bypassing RLS;
    // a hand-added entry with a role and no bypass_rls counts (the role is
    // checked to be subject to the policies before it is used).
    let recorded: Vec<String> = statements
        .iter()
        .filter(|s| s.bypass_rls != Some(true))
        .filter_map(|s| s.role.clone())
        .collect();
    let clock = Instant::now();
    let t = tenancy::resolve_measured(
        client,
        catalog,
        &s.tenant,
        &recorded,
        stats,
        s.identity_budget,
    )
    .await?;
    log.debug(&format!(
        "tenancy worked out in {:.2}s",
        clock.elapsed().as_secs_f64()
    ));
    log_visibility(&t, log);
    let shown = match t.values.get(&t.id) {
        Some(v) => format!("{} (for tenant {})", v.as_text(), t.id),
        None => t.id.clone(),
    };
    if let Some(path) = &t.read_through {
        log.info(&format!("the policies read the tenant through {path}"));
    }
    log.info(&format!(
        "tenant mode: role {}, {} = {}{}",
        t.role,
        t.setting,
        shown,
        if t.heaviest.as_deref() == Some(t.id.as_str()) {
            " (heaviest tenant)"
        } else {
            ""
        }
    ));
    Ok(Some(t))
}

/// What measuring the identities found (issue 10 section 3).
fn log_visibility(t: &Tenancy, log: Log) {
    let Some(v) = &t.visibility else { return };
    if v.exact {
        log.info(&format!(
            "identities: measured {} of {} candidate identities exactly from the data, without \
             counting under row-level security: every policy compares a tenant column with {} \
             directly, so an identity sees the rows carrying it (rows visible in {}): heaviest \
             identity {} sees {} rows, median identity {} sees {} (both chosen among the {} \
             measured)",
            v.measured,
            v.candidates,
            t.setting,
            v.tables.join(", "),
            v.heaviest.0,
            crate::output::count(v.heaviest.1.max(0) as u64),
            v.median.0,
            crate::output::count(v.median.1.max(0) as u64),
            v.measured,
        ));
        return;
    }
    let mut line = format!(
        "identities: measured {} of {} candidate identities (the rows each sees) under row-level \
         security in {:.1} s (rows visible in {}): heaviest identity {} sees {} rows, median \
         identity {} sees {} (both chosen among the {} measured)",
        v.measured,
        v.candidates,
        v.seconds,
        v.tables.join(", "),
        v.heaviest.0,
        crate::output::count(v.heaviest.1.max(0) as u64),
        v.median.0,
        crate::output::count(v.median.1.max(0) as u64),
        v.measured,
    );
    if v.failed > 0 {
        line.push_str(&format!(
            "; {} could not be counted (timeout or error)",
            v.failed
        ));
    }
    if v.budget_hit {
        line.push_str("; the --identity-budget ran out first");
    }
    log.info(&line);
}

/// Every statement through the engine, with a progress bar on a terminal.
async fn plan(engine: &Engine, statements: Vec<Statement>, log: Log) -> Result<Vec<Explained>> {
    let started = Instant::now();
    let n = statements.len();
    log.info(&format!(
        "planning {} ({}) over {}",
        counted(n as u64, "statement", "statements"),
        engine
            .modes()
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(" and "),
        counted(engine.jobs() as u64, "connection", "connections")
    ));
    // On stderr, drawn only on a terminal (indicatif hides it otherwise).
    let bar = if log.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(n as u64)
    };
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} {elapsed}")
    {
        bar.set_style(style);
    }
    bar.set_message(if n == 1 { "statement" } else { "statements" });
    let results = engine.run(statements, &|| bar.inc(1)).await?;
    bar.finish_and_clear();
    log.info(&format!(
        "planned {} in {:.1} s",
        counted(n as u64, "statement", "statements"),
        started.elapsed().as_secs_f64()
    ));
    Ok(results)
}

/// What the checks ask of the server, by check: each declared SELECT
/// ([`rules::Check::probe`]) and each check's own measurement
/// ([`rules::Check::measure`]: the policies' functions and their calls,
/// prepared-plan reuse across tenants, ...), for the checks not disabled.
#[allow(clippy::too_many_arguments)]
async fn probe_phases(
    client: &Client,
    conn: &ConnInfo,
    catalog: &Catalog,
    tenancy: Option<&Tenancy>,
    results: &[Explained],
    s: &ExplainSettings,
    stats: StatsMode,
    log: Log,
) -> Result<Probes> {
    let mut probes = Probes {
        declared: declared_probes(client, &s.disabled, tenancy, stats).await?,
        ..Probes::new()
    };
    let on = Measure {
        client,
        conn,
        catalog,
        tenancy,
        results,
        jobs: s.jobs,
        timeout_ms: s.timeout_ms,
        analyze: s.analyze,
        stats,
        log,
    };
    let clock = Instant::now();
    for c in rules::ALL.iter().filter(|c| !s.disabled.contains(&c.id())) {
        let Some(measuring) = c.measure(&on) else {
            continue;
        };
        if let Some(found) = measuring.await? {
            probes.measured.insert(c.id(), found);
        }
    }
    if !probes.measured.is_empty() {
        let ids: Vec<&str> = probes.measured.keys().map(|c| c.as_str()).collect();
        log.debug(&format!(
            "measured for {} in {:.2}s",
            ids.join(", "),
            clock.elapsed().as_secs_f64()
        ));
    }
    Ok(probes)
}

/// The checks' own probes ([`rules::Check::probe`]): each check not
/// disabled that declares one gets its SELECT's rows as JSON objects; none
/// when the probe's guard is false (a Citus probe without Citus). A probe
/// reading the tenant gets the heaviest tenant's id as `$1`.
async fn declared_probes(
    client: &Client,
    disabled: &[CheckId],
    tenancy: Option<&Tenancy>,
    stats: StatsMode,
) -> Result<std::collections::BTreeMap<CheckId, Vec<serde_json::Value>>> {
    let mut out = std::collections::BTreeMap::new();
    let heaviest: Option<String> = tenancy.and_then(|t| t.heaviest.clone());
    // Checks share guards and probes (the Citus ones): each text runs once.
    let mut guards: HashMap<&str, bool> = HashMap::new();
    let mut answers: HashMap<&str, Vec<serde_json::Value>> = HashMap::new();
    for c in rules::ALL.iter().filter(|c| !disabled.contains(&c.id())) {
        let Some(probe) = c.probe() else { continue };
        let what = || format!("reading what check {} needs", c.id());
        if let Some(guard) = probe.guard {
            if !guards.contains_key(guard) {
                let holds: Option<bool> = client
                    .query_one(&session::tag(stats, guard), &[])
                    .await
                    .map_err(|e| Error::db(what(), e))?
                    .get(0);
                guards.insert(guard, holds == Some(true));
            }
            if !guards[guard] {
                continue;
            }
        }
        if !answers.contains_key(probe.sql) {
            let sql = format!(
                "SELECT coalesce(json_agg(p), '[]'::json) FROM ({}) AS p",
                probe.sql
            );
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = if probe.tenant {
                vec![&heaviest]
            } else {
                vec![]
            };
            let rows: serde_json::Value = client
                .query_one(&session::tag(stats, &sql), &params)
                .await
                .map_err(|e| Error::db(what(), e))?
                .get(0);
            answers.insert(probe.sql, rows.as_array().cloned().unwrap_or_default());
        }
        out.insert(c.id(), answers[probe.sql].clone());
    }
    Ok(out)
}

/// A finding on a statement planned with a fixed-order type guess rests
/// on that guess: it is a warning, and says so.
fn guessed_types_warn(all: &mut [Finding], results: &[Explained]) {
    for f in all.iter_mut() {
        let Some(e) = results
            .iter()
            .find(|e| f.statement.as_deref() == Some(e.stmt.id.as_str()))
        else {
            continue;
        };
        if e.guesses.is_empty() {
            continue;
        }
        if f.severity == Severity::Error {
            f.severity = Severity::Warning;
        }
        f.message
            .push_str(&format!(" (planned with {})", e.guesses.join("; ")));
    }
}

/// An ignore rule naming a table the database does not have, or a statement
/// this run does not explain, matches nothing: most often a typo, which would
/// otherwise go unseen until the finding it meant to silence fails CI. Said,
/// not refused: a table a later migration dropped leaves such a rule behind.
fn warn_unmatched_ignores(
    rules: &[IgnoreRule],
    catalog: &Catalog,
    statements: &[Statement],
    log: Log,
) {
    for r in rules {
        let at = r
            .origin
            .as_deref()
            .map(|o| format!("{o}: "))
            .unwrap_or_default();
        if let Some(t) = &r.relation
            && !catalog.tables.contains_key(t)
            && catalog.index(t).is_none()
        {
            let known = || catalog.tables.keys().map(String::as_str);
            let hint = match catalog.resolve(t) {
                Some(k) if k != t => format!(" (findings name it `{k}`)"),
                _ => crate::error::suggest(t, known())
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default(),
            };
            log.warn(&format!(
                "{at}[[explain.ignore]] names table `{t}`, which is not a table of the \
                 database, so it matches nothing{hint}"
            ));
        }
        if let Some(id) = &r.statement
            && !statements.iter().any(|s| &s.id == id)
        {
            let hint = crate::error::suggest(id, statements.iter().map(|s| s.id.as_str()))
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            log.warn(&format!(
                "{at}[[explain.ignore]] names statement `{id}`, which is not among the \
                 statements explained, so it matches nothing{hint}"
            ));
        }
    }
}

/// Ignores, the baseline (written first with `--write-baseline`), and the
/// report order (`rules::sort_for_report`).
fn judge(
    all: Vec<Finding>,
    results: &[Explained],
    s: &ExplainSettings,
    log: Log,
) -> Result<(Vec<(Finding, bool)>, usize)> {
    let mut ignored = 0;
    let mut kept = Vec::new();
    for f in all {
        if let Some(rule) = ignored_by(&s.ignores, &f) {
            log.debug(&format!("ignored {} ({})", f.message, rule.reason));
            ignored += 1;
        } else {
            kept.push(f);
        }
    }
    if s.write_baseline {
        write_baseline(&s.baseline, &kept, log)?;
    }
    rules::sort_for_report(&mut kept, results);
    let base = Baseline::load(&s.baseline)?;
    let findings = kept
        .into_iter()
        .map(|f| {
            let b = base.contains(&f);
            (f, b)
        })
        .collect();
    Ok((findings, ignored))
}

fn write_baseline(path: &Path, kept: &[Finding], log: Log) -> Result<()> {
    let gate: Vec<_> = kept
        .iter()
        .filter(|f| f.severity != Severity::Info)
        .collect();
    baseline::write(path, &gate)?;
    log.info(&format!(
        "wrote {} to {}",
        counted(gate.len() as u64, "finding", "findings"),
        path.display()
    ));
    Ok(())
}

/// The fix, proven on the data (see `advice`): an index per finding a
/// missing index explains, verified by re-planning; `--write-advice` writes
/// the verified ones.
#[allow(clippy::too_many_arguments)]
async fn advice_phase(
    client: &Client,
    conn: &ConnInfo,
    catalog: &Catalog,
    tenancy: Option<&Tenancy>,
    results: &[Explained],
    findings: &mut [(Finding, bool)],
    s: &ExplainSettings,
    stats: StatsMode,
    log: Log,
) -> Result<()> {
    if !s.advice.enabled {
        return Ok(());
    }
    let opts = super::advice::AdviceOptions {
        budget: std::time::Duration::from_secs_f64(s.advice.budget_s),
        real: conn.managed || s.advice.force,
        timeout_ms: s.timeout_ms,
        stats,
    };
    super::advice::advise(client, catalog, tenancy, results, findings, &opts, log).await?;
    if let Some(path) = &s.advice.write {
        super::advice::write_file(path, findings, log)?;
    }
    Ok(())
}

/// Re-plans statements comparing a partial index's predicate column with a
/// parameter, with the constants put back (see the unused-partial-index check).
async fn literal_pass(engine: &Engine, catalog: &Catalog, results: &mut [Explained]) -> Result<()> {
    let used = used_indexes(results);
    let mut todo = Vec::new();
    for ix in &catalog.indexes {
        let Some(pred) = &ix.predicate else { continue };
        if used
            .get(&ix.name)
            .is_some_and(|k| k.contains(PlanKind::Generic.as_str()))
        {
            continue;
        }
        let lits = predicate_literals(pred);
        for (i, e) in results.iter().enumerate() {
            if e.status != Status::Explained {
                continue;
            }
            let binds = literal_binds(e, catalog, &ix.table, &lits);
            if binds.is_empty() {
                continue;
            }
            for m in &e.judged {
                todo.push((i, *m, binds.clone()));
            }
        }
    }
    todo.sort();
    todo.dedup();
    // Concurrent, bounded by the pool's size.
    let plans = futures_util::future::join_all(todo.iter().map(|(i, mode, binds)| {
        let e = &results[*i];
        async move { (*i, engine.plan_with_literals(e, *mode, binds).await) }
    }))
    .await;
    for (i, p) in plans {
        if let Some(p) = p? {
            results[i].plans.push(p);
        }
    }
    Ok(())
}
