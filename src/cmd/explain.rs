//! `planck explain`: plans every recorded statement as a tenant under
//! row-level security and as admin, runs the checks, renders the report and
//! gates CI (exit 1 on error findings the baseline does not hold).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use crate::catalog::planner::Catalog;
use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::explain::engine::{Engine, EngineOptions, column_params};
use crate::explain::plan_tree::{Mode, PlanKind};
use crate::explain::report::{self, Report, counted};
use crate::explain::rules::{self, CheckId, Ctx, Severity};
use crate::findings::baseline::{self, Baseline};
use crate::findings::ignore::{IgnoreRule, ignored_by};
use crate::output::Format;
use crate::queries::{self, QueryFile, Statement};
use crate::settings::Settings;
use crate::tenancy::{self, TenantOptions};

/// Defaults of the thresholds (planck.toml `[explain]` and flags override).
pub const DEFAULT_MIN_ROWS: u64 = 10_000;
pub const DEFAULT_RLS_COST_RATIO: f64 = 10.0;
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;

#[derive(Debug, Clone, Default, Args)]
#[command(
    after_help = "Checks: seq-scan, full-index-scan, unused-index, unused-partial-index \
(and partial-index-needs-literal), rls-policy, stale-statement, filter-removes-most-rows \
(--analyze).\n\
Exit codes: 0 no new errors, 1 error findings not in the baseline, 2 usage or configuration \
error, 3 database unreachable."
)]
pub struct ExplainArgs {
    /// Queries file [default: queries/recorded.toml of the project]
    #[arg(long, value_name = "PATH", conflicts_with = "from_stats")]
    pub queries: Option<PathBuf>,

    /// Read the statements from pg_stat_statements instead of a queries file
    #[arg(long)]
    pub from_stats: bool,

    /// Plan as the application role under row-level security only
    #[arg(long)]
    pub as_tenant: bool,

    /// Plan as the owner/admin role (no row-level security) only
    #[arg(long)]
    pub as_admin: bool,

    /// Judge every statement in every mode (default: by the role that recorded it)
    #[arg(long)]
    pub all_modes: bool,

    /// The application role [default: the role that recorded the statements]
    #[arg(long, value_name = "ROLE")]
    pub tenant_role: Option<String>,

    /// The setting the policies read [default: from current_setting() in pg_policies]
    #[arg(long, value_name = "NAME")]
    pub tenant_setting: Option<String>,

    /// The tenant to plan as [default: the heaviest]
    #[arg(long, value_name = "ID")]
    pub tenant_id: Option<String>,

    /// Tables with fewer rows are not flagged for scans [default: 10000]
    #[arg(long, value_name = "N")]
    pub min_rows: Option<u64>,

    /// EXPLAIN ANALYZE the custom plans (inside a transaction always rolled back)
    #[arg(long)]
    pub analyze: bool,

    /// Planning timeout per statement [default: 5000]
    #[arg(long, value_name = "MS")]
    pub statement_timeout_ms: Option<u64>,

    /// Application source to search for the literals partial indexes need
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,

    /// Baseline file [default: queries/baseline.toml of the project]
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,

    /// Write the current error and warning findings to the baseline, then exit 0
    #[arg(long)]
    pub write_baseline: bool,

    /// Connections planning in parallel [default: 4]
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

impl ExplainArgs {
    /// Both modes, the project's queries file: what `planck explain` does bare.
    pub fn new() -> ExplainArgs {
        ExplainArgs::default()
    }

    /// The same, on another queries file (for `planck demo`).
    pub fn with_queries(path: impl Into<PathBuf>) -> ExplainArgs {
        ExplainArgs {
            queries: Some(path.into()),
            ..Default::default()
        }
    }
}

pub async fn run(args: ExplainArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    run_on(&conn, args, settings).await
}

/// `planck explain` on a given database (what `planck demo` calls, with
/// `ExplainArgs::with_queries(...)` and the demo's connection): renders the
/// report to stdout in `settings.format` and returns the exit code.
pub async fn run_on(conn: &ConnInfo, args: ExplainArgs, settings: &Settings) -> Result<i32> {
    let (report, code) = explain(conn, &args, settings).await?;
    let mut buf = Vec::new();
    match settings.format {
        Format::Json => report::render_json(&mut buf, &report),
        Format::Markdown => report::render_markdown(&mut buf, &report),
        Format::Table => report::render_table(&mut buf, &report),
    }
    .map_err(|e| Error::Other(e.into()))?;
    crate::output::emit(&buf).map_err(|e| Error::Other(e.into()))?;
    Ok(code)
}

/// Everything but rendering: the report and the exit code.
pub async fn explain(
    conn: &ConnInfo,
    args: &ExplainArgs,
    settings: &Settings,
) -> Result<(Report, i32)> {
    let cfg = &settings.config.explain;
    let min_rows = args.min_rows.or(cfg.min_rows).unwrap_or(DEFAULT_MIN_ROWS);
    let ratio = cfg.rls_cost_ratio.unwrap_or(DEFAULT_RLS_COST_RATIO);
    let timeout_ms = args
        .statement_timeout_ms
        .or(cfg.statement_timeout_ms)
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    let mut disabled = Vec::new();
    for d in &cfg.disable {
        disabled.push(d.parse::<CheckId>().map_err(|e| {
            Error::usage_hint(
                format!("[explain] disable names an unknown check {:?}", e.0),
                CheckId::known(),
            )
        })?);
    }
    let ignores: Vec<IgnoreRule> = cfg
        .ignore
        .iter()
        .map(|r| IgnoreRule {
            check: r.check.as_deref().and_then(|c| c.parse().ok()),
            relation: r.table.clone(),
            statement: r.statement.clone(),
            reason: r.reason.clone(),
            origin: None,
        })
        .collect();

    let source = args.source.as_ref().map(|s| settings.project_path(s));
    if let Some(dir) = &source
        && !dir.is_dir()
    {
        return Err(Error::usage_hint(
            if dir.exists() {
                format!("--source {} is not a directory", dir.display())
            } else {
                format!("--source {} does not exist", dir.display())
            },
            "pass the directory of the application's code, or leave --source out",
        ));
    }

    let client = conn.connect().await?;
    let statements = if args.from_stats {
        from_stats(&client).await?
    } else {
        let path = match &args.queries {
            Some(p) => settings.project_path(p),
            None => queries::default_path(&settings.queries_dir()),
        };
        if !path.is_file() {
            return Err(Error::usage_hint(
                format!("no queries file at {}", path.display()),
                "record one with `planck record -- <your tests>`, pass --queries PATH, or use --from-stats",
            ));
        }
        QueryFile::load(&path)?.statements
    };
    if statements.is_empty() {
        settings.warn("no statements to explain (the queries file or pg_stat_statements is empty)");
        let report = Report {
            results: Vec::new(),
            findings: Vec::new(),
            ignored: 0,
        };
        return Ok((report, 0));
    }

    let clock = std::time::Instant::now();
    let catalog = Arc::new(Catalog::load(&client).await?);
    settings.debug(&format!(
        "catalog read in {:.2}s",
        clock.elapsed().as_secs_f64()
    ));
    let want_tenant = args.as_tenant || !args.as_admin;
    let want_admin = args.as_admin || !args.as_tenant;
    let tenant_opts = TenantOptions {
        role: args
            .tenant_role
            .clone()
            .or(settings.config.tenant.role.clone()),
        setting: args
            .tenant_setting
            .clone()
            .or(settings.config.tenant.setting.clone()),
        id: args.tenant_id.clone().or(settings.config.tenant.id.clone()),
        id_source: Some(if args.tenant_id.is_some() {
            "--tenant-id"
        } else {
            "[tenant] id in planck.toml"
        }),
    };
    let tenancy = if want_tenant && (args.as_tenant || !catalog.policies.is_empty()) {
        let recorded: Vec<String> = statements
            .iter()
            .filter(|s| s.bypass_rls == Some(false))
            .filter_map(|s| s.role.clone())
            .collect();
        let clock = std::time::Instant::now();
        let t = tenancy::resolve(&client, &catalog, &tenant_opts, &recorded).await?;
        settings.debug(&format!(
            "tenancy worked out in {:.2}s",
            clock.elapsed().as_secs_f64()
        ));
        Some(t)
    } else {
        if want_tenant && !args.as_admin {
            settings.info("no row-level security policies: planning as admin only");
        }
        None
    };
    let mut modes = Vec::new();
    if tenancy.is_some() {
        modes.push(Mode::Tenant);
    }
    if want_admin {
        modes.push(Mode::Admin);
    }
    if let Some(t) = &tenancy {
        settings.info(&format!(
            "tenant mode: role {}, {} = {}{}",
            t.role,
            t.setting,
            t.id,
            if t.heaviest.as_deref() == Some(t.id.as_str()) {
                " (heaviest tenant)"
            } else {
                ""
            }
        ));
    }

    let engine = Engine::new(
        conn,
        catalog.clone(),
        tenancy.clone(),
        EngineOptions {
            modes,
            all_modes: args.all_modes,
            analyze: args.analyze,
            timeout_ms,
            jobs: args.jobs.unwrap_or(4),
        },
    )?;
    let started = std::time::Instant::now();
    let n = statements.len();
    settings.info(&format!(
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
    let bar = if settings.quiet {
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
    let mut results = engine.run(statements, &|| bar.inc(1)).await?;
    bar.finish_and_clear();
    settings.info(&format!(
        "planned {} in {:.1} s",
        counted(n as u64, "statement", "statements"),
        started.elapsed().as_secs_f64()
    ));

    let clock = std::time::Instant::now();
    literal_pass(&engine, &catalog, &mut results).await?;
    settings.debug(&format!(
        "literal re-plans in {:.2}s",
        clock.elapsed().as_secs_f64()
    ));

    let ctx = Ctx {
        catalog: &catalog,
        results: &results,
        tenancy: tenancy.as_ref(),
        min_rows,
        rls_cost_ratio: ratio,
        source: source.as_deref(),
    };
    let all = rules::run_all(&ctx, &disabled);

    let base_path = match &args.baseline {
        Some(p) => settings.project_path(p),
        None => baseline::default_path(&settings.queries_dir()),
    };
    let mut ignored = 0;
    let mut kept = Vec::new();
    for f in all {
        if let Some(rule) = ignored_by(&ignores, &f) {
            settings.debug(&format!("ignored {} ({})", f.message, rule.reason));
            ignored += 1;
        } else {
            kept.push(f);
        }
    }
    if args.write_baseline {
        let gate: Vec<_> = kept
            .iter()
            .filter(|f| f.severity != Severity::Info)
            .collect();
        baseline::write(&base_path, &gate)?;
        settings.info(&format!(
            "wrote {} to {}",
            counted(gate.len() as u64, "finding", "findings"),
            base_path.display()
        ));
    }
    // Errors first, then a stable order.
    kept.sort_by(|a, b| {
        (
            a.severity,
            a.check,
            &a.relation,
            &a.index,
            &a.statement,
            &a.mode,
        )
            .cmp(&(
                b.severity,
                b.check,
                &b.relation,
                &b.index,
                &b.statement,
                &b.mode,
            ))
    });
    let base = Baseline::load(&base_path)?;
    let findings = kept
        .into_iter()
        .map(|f| {
            let b = base.contains(&f);
            (f, b)
        })
        .collect();
    let report = Report {
        results,
        findings,
        ignored,
    };
    let code = if report.new_errors() > 0 { 1 } else { 0 };
    Ok((report, code))
}

/// Re-plans statements comparing a partial index's predicate column with a
/// parameter, with the constant put back (see the unused-partial-index check).
async fn literal_pass(
    engine: &Engine,
    catalog: &Catalog,
    results: &mut [crate::explain::engine::Explained],
) -> Result<()> {
    use crate::explain::rules::unused_partial_index::predicate_literals;
    let used = crate::explain::engine::used_indexes(results);
    let mut todo = Vec::new();
    for ix in &catalog.indexes {
        let Some(pred) = &ix.predicate else { continue };
        if used
            .get(&ix.name)
            .is_some_and(|k| k.contains(PlanKind::Generic.as_str()))
        {
            continue;
        }
        for (col, lit) in predicate_literals(pred) {
            for (i, e) in results.iter().enumerate() {
                if e.status != crate::explain::engine::Status::Explained {
                    continue;
                }
                for (n, t, c) in column_params(e, catalog) {
                    if t == ix.table && c == col {
                        for m in &e.judged {
                            todo.push((i, *m, n, lit.clone()));
                        }
                    }
                }
            }
        }
    }
    todo.sort();
    todo.dedup();
    // Concurrent, bounded by the pool's size.
    let plans = futures_util::future::join_all(todo.iter().map(|(i, mode, n, lit)| {
        let e = &results[*i];
        async move { (*i, engine.plan_with_literal(e, *mode, *n, lit).await) }
    }))
    .await;
    for (i, p) in plans {
        if let Some(p) = p? {
            results[i].plans.push(p);
        }
    }
    Ok(())
}

/// The statements of this database in pg_stat_statements.
async fn from_stats(client: &tokio_postgres::Client) -> Result<Vec<Statement>> {
    let rows = client
        .query(
            "SELECT s.query, r.rolname::text, (r.rolsuper OR r.rolbypassrls)
                    OR EXISTS (SELECT 1 FROM pg_class c WHERE c.relowner = r.oid AND c.relrowsecurity),
                    s.queryid, s.calls, s.rows
               FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
              WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              ORDER BY s.calls DESC, s.query",
            &[],
        )
        .await
        .map_err(|e| {
            let missing = e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE)
                || e.code() == Some(&tokio_postgres::error::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
            if missing {
                Error::usage_hint(
                    "pg_stat_statements is not available in this database",
                    "CREATE EXTENSION pg_stat_statements (with shared_preload_libraries), or use --queries",
                )
            } else {
                Error::db("reading pg_stat_statements", e)
            }
        })?;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for r in rows {
        let query: String = r.get(0);
        let role: String = r.get(1);
        let id = queries::identity(&query, Some(&role));
        if !seen.insert(id.clone()) {
            continue;
        }
        out.push(Statement {
            id,
            query,
            role: Some(role),
            bypass_rls: r.get(2),
            queryid: r.get(3),
            calls: Some(r.get::<_, i64>(4).max(0) as u64),
            rows: Some(r.get::<_, i64>(5).max(0) as u64),
            ..Default::default()
        });
    }
    Ok(out)
}
