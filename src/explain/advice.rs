//! Advice: the fix, proven on the data. For each finding a missing index
//! explains (`seq-scan`, `full-index-scan`, `rls-policy` on a scan), one
//! candidate index ([`candidate`]), built inside a transaction that is
//! always rolled back, and the finding's plan made again in the same mode
//! (role, tenant, values); the advice is reported only when that plan uses
//! the index.
//!
//! The index is built for real only on a database planck manages, or with
//! `--force` (a build holds a SHARE lock: writers wait until the rollback).
//! Elsewhere it is hypothetical, with the `hypopg` extension where the
//! server has it (created inside the same rolled-back transaction when the
//! database lacks it); without it there is no advice, and a note says why.
//! Bounded: one candidate per finding, a time budget per run.

pub(crate) mod candidate;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, SimpleQueryMessage};

pub use candidate::{Candidate, TRIGRAM_EXTENSION};

use super::engine::{Explained, Status};
use super::plan_tree::{Mode, Plan, PlanKind};
use super::rules::{CheckId, Finding, own_help};
use crate::catalog::planner::Catalog;
use crate::error::{Error, Result};
use crate::findings::Advice;
use crate::output::Log;
use crate::params::values::TextParam;
use crate::session::{self, StatsMode};
use crate::tenancy::{Tenancy, TenantContext};

/// The name planck gives the index it builds inside the rolled-back transaction.
const TRIAL_INDEX: &str = "planck_advice_trial";

/// How the advice phase runs.
#[derive(Debug, Clone)]
pub struct AdviceOptions {
    /// Time for the whole phase; candidates left when it is spent get no advice.
    pub budget: Duration,
    /// Build indexes for real (a managed database, or `--force`).
    pub real: bool,
    /// statement_timeout of each re-plan.
    pub timeout_ms: u64,
    pub stats: StatsMode,
}

/// How a candidate index exists while the statements are re-planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builder {
    /// `CREATE INDEX` inside the rolled-back transaction.
    Real,
    /// `hypopg_create_index()`; `create_extension` when the database lacks it.
    Hypothetical { create_extension: bool },
}

impl Builder {
    fn as_str(self) -> &'static str {
        match self {
            Builder::Real => "real",
            Builder::Hypothetical { .. } => "hypothetical",
        }
    }
}

/// What the phase did, for the log and the bench.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Findings a candidate index was proposed for.
    pub proposed: usize,
    /// Of those, findings whose plan used the index.
    pub verified: usize,
    /// Distinct candidate indexes tried.
    pub candidates: usize,
    /// Candidates left untried when the budget ran out.
    pub over_budget: usize,
    /// Why there is no advice at all, when there is none.
    pub note: Option<String>,
    pub elapsed: Duration,
}

/// Where a finding's scan is: the statement, its plan, the node.
#[derive(Debug, Clone)]
struct Target {
    finding: usize,
    result: usize,
    plan: usize,
    path: Vec<usize>,
}

/// The checks whose findings a missing index explains.
fn wants_advice(c: CheckId) -> bool {
    matches!(
        c,
        CheckId::SeqScan | CheckId::FullIndexScan | CheckId::RlsPolicy
    )
}

/// Proposes and verifies one index per finding a missing index explains;
/// sets `advice` on the findings whose plan used it.
pub async fn advise(
    client: &Client,
    catalog: &Catalog,
    tenancy: Option<&Tenancy>,
    results: &[Explained],
    findings: &mut [(Finding, bool)],
    opts: &AdviceOptions,
    log: Log,
) -> Result<Summary> {
    let started = Instant::now();
    let mut summary = Summary::default();
    // finding -> its candidate, grouped by candidate (first finding's order).
    let mut groups: Vec<(Candidate, Vec<Target>)> = Vec::new();
    // Whether the server has pg_trgm, asked at the first trigram candidate.
    let mut pg_trgm = None;
    for (i, (f, _)) in findings.iter_mut().enumerate() {
        if !wants_advice(f.check) {
            continue;
        }
        let Some(t) = target(i, f, results, catalog) else {
            continue;
        };
        let Some(c) = candidate_for(&t, results, catalog, tenancy) else {
            log.debug(&format!("advice: no index candidate for {}", f.message));
            continue;
        };
        if c.trigram && !trigram_ready(client, opts, &mut pg_trgm).await? {
            // Nothing to verify on this server: say what would serve the scan.
            f.help = own_help(format!(
                "the scan matches {}.{} with an infix LIKE/ILIKE pattern, which no btree index \
                 serves; a trigram index would ({TRIGRAM_EXTENSION}; {}), but this server has no \
                 pg_trgm extension (PostgreSQL's contrib): install it, or match a prefix \
                 (`LIKE 'abc%'`) that a btree serves",
                c.table,
                c.columns.join(", "),
                c.sql()
            ));
            continue;
        }
        if c.trigram {
            f.help = own_help(format!(
                "the scan matches {}.{} with an infix LIKE/ILIKE pattern, which no btree index \
                 serves; a trigram index does: {TRIGRAM_EXTENSION}; {}",
                c.table,
                c.columns.join(", "),
                c.sql()
            ));
        }
        if exists_already(catalog, &c) {
            log.debug(&format!(
                "advice: {} exists already and the planner did not use it",
                c.sql()
            ));
            continue;
        }
        summary.proposed += 1;
        match groups.iter_mut().find(|(g, _)| *g == c) {
            Some((_, v)) => v.push(t),
            None => groups.push((c, vec![t])),
        }
    }
    if groups.is_empty() {
        summary.elapsed = started.elapsed();
        return Ok(summary);
    }
    let builder = match builder(client, opts).await? {
        Ok(b) => b,
        Err(note) => {
            log.info(&format!("advice: {note}"));
            summary.note = Some(note);
            summary.proposed = 0;
            summary.elapsed = started.elapsed();
            return Ok(summary);
        }
    };
    for (c, targets) in &groups {
        let spent = started.elapsed();
        if spent >= opts.budget {
            summary.over_budget += 1;
            continue;
        }
        summary.candidates += 1;
        let left = opts.budget - spent;
        match verify(
            client, catalog, tenancy, results, c, targets, builder, left, opts,
        )
        .await
        {
            Ok(outcomes) => {
                for (t, outcome) in targets.iter().zip(outcomes) {
                    match outcome {
                        Some(a) if a.verified => {
                            summary.verified += 1;
                            findings[t.finding].0.advice = Some(a);
                        }
                        Some(a) => log.debug(&format!(
                            "advice: with {} the plan does not use it ({} {:.1} -> {:.1}): not proposed",
                            c.sql(),
                            a.node_before,
                            a.cost_before,
                            a.cost_after
                        )),
                        None => log.debug(&format!(
                            "advice: could not re-plan with {} for {}",
                            c.sql(),
                            findings[t.finding].0.message
                        )),
                    }
                }
            }
            Err(why) => log.info(&format!("advice: {} could not be tried: {why}", c.sql())),
        }
    }
    if summary.over_budget > 0 {
        log.info(&format!(
            "advice: the budget ({:.0} s) ran out: {} left untried (raise --advice-budget)",
            opts.budget.as_secs_f64(),
            crate::output::counted(summary.over_budget as u64, "index", "indexes")
        ));
    }
    summary.elapsed = started.elapsed();
    log.info(&format!(
        "advice: {} of {} verified in {:.1} s ({} indexes)",
        summary.verified,
        crate::output::counted(summary.proposed as u64, "finding", "findings"),
        summary.elapsed.as_secs_f64(),
        Builder::as_str(builder)
    ));
    Ok(summary)
}

/// The statement, plan and scan node a finding is about.
fn target(i: usize, f: &Finding, results: &[Explained], catalog: &Catalog) -> Option<Target> {
    let by_id = |id: &str| {
        results
            .iter()
            .position(|e| e.stmt.id == id && e.status == Status::Explained)
    };
    if let (Some(id), Some(node)) = (&f.statement, &f.node) {
        return Some(Target {
            finding: i,
            result: by_id(id)?,
            plan: node.plan,
            path: node.path.clone(),
        });
    }
    // rls-policy: the tenant plan's biggest seq scan (a statement), or a
    // statement whose tenant plan seq-scans the table (the table's finding).
    let scans = |r: usize, table: Option<&str>| {
        let e = &results[r];
        let mut best: Option<(u64, usize, Vec<usize>)> = None;
        for (pi, p) in e.plans.iter().enumerate() {
            if p.mode != Mode::Tenant || p.kind == PlanKind::Literal {
                continue;
            }
            for n in p.nodes() {
                let Some(rel) = n.relation.as_deref().filter(|_| n.is_seq_scan()) else {
                    continue;
                };
                if table.is_some_and(|t| t != rel) {
                    continue;
                }
                let rows = catalog.rows(rel);
                if best.as_ref().is_none_or(|b| rows > b.0) {
                    best = Some((rows, pi, n.path.clone()));
                }
            }
        }
        best.map(|(_, plan, path)| Target {
            finding: i,
            result: r,
            plan,
            path,
        })
    };
    if f.check != CheckId::RlsPolicy || f.mode != Some(Mode::Tenant) {
        return None;
    }
    match (&f.statement, &f.relation) {
        (Some(id), _) => scans(by_id(id)?, None),
        (None, Some(table)) => (0..results.len())
            .filter(|&r| {
                results[r].status == Status::Explained && results[r].judged.contains(&Mode::Tenant)
            })
            .find_map(|r| scans(r, Some(table))),
        (None, None) => None,
    }
}

fn candidate_for(
    t: &Target,
    results: &[Explained],
    catalog: &Catalog,
    tenancy: Option<&Tenancy>,
) -> Option<Candidate> {
    let e = &results[t.result];
    let plan = e.plans.get(t.plan)?;
    let node = plan.nodes().iter().find(|n| n.path == t.path)?;
    let table = match (&node.relation, &node.index) {
        (Some(r), _) => r.clone(),
        (None, Some(i)) => catalog.index(i)?.table.clone(),
        (None, None) => return None,
    };
    let columns = &catalog.tables.get(&table)?.columns;
    let tenant_column = tenancy
        .filter(|_| plan.mode == Mode::Tenant)
        .and_then(|ty| ty.columns.get(&table))
        .map(String::as_str);
    candidate::candidate(&candidate::Source {
        plan: &plan.json,
        path: &t.path,
        table: &table,
        columns,
        text: &e.text,
        tenant_column,
    })
}

/// Whether the server can build a trigram index: pg_trgm is among its
/// available extensions (`pg_available_extensions`, installed or not: the
/// advice creates it in its rolled-back transaction). Asked once a run.
async fn trigram_ready(
    client: &Client,
    opts: &AdviceOptions,
    known: &mut Option<bool>,
) -> Result<bool> {
    if let Some(k) = known {
        return Ok(*k);
    }
    let rows = client
        .query(
            &session::tag(
                opts.stats,
                "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'",
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("looking for the pg_trgm extension", e))?;
    *known = Some(!rows.is_empty());
    Ok(!rows.is_empty())
}

/// An index with these leading columns and this predicate exists: the
/// planner had it and chose not to use it, so proposing it again is wrong.
/// A trigram candidate exists as a gin index with pg_trgm's operator class
/// on its column.
fn exists_already(catalog: &Catalog, c: &Candidate) -> bool {
    if c.trigram {
        return catalog.indexes.iter().any(|i| {
            i.table == c.table
                && i.definition.contains("gin_trgm_ops")
                && i.columns.first() == Some(&c.columns.first().cloned())
        });
    }
    catalog.indexes.iter().any(|i| {
        i.table == c.table
            && i.columns.len() >= c.columns.len()
            && i.columns
                .iter()
                .zip(&c.columns)
                .all(|(a, b)| a.as_deref() == Some(b.as_str()))
            && (c.predicate.is_none() || i.predicate.is_some())
    })
}

/// Real indexes where allowed, else hypopg where the server has it, else a note.
async fn builder(client: &Client, opts: &AdviceOptions) -> Result<Result<Builder, String>> {
    if opts.real {
        return Ok(Ok(Builder::Real));
    }
    let rows = client
        .query(
            &session::tag(
                opts.stats,
                "SELECT installed_version IS NOT NULL FROM pg_available_extensions WHERE name = 'hypopg'",
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("looking for the hypopg extension", e))?;
    Ok(match rows.first().map(|r| r.get::<_, bool>(0)) {
        Some(installed) => Ok(Builder::Hypothetical {
            create_extension: !installed,
        }),
        None => Err(
            "no advice: this database is not one planck manages (building a candidate \
                     index would block writers to its table), and the server has no hypopg \
                     extension for hypothetical indexes; install it (Debian: \
                     postgresql-15-hypopg) or pass --force"
                .to_string(),
        ),
    })
}

/// Builds `c` (or its hypothetical twin) in a transaction rolled back at the
/// end and re-plans each target's plan under it, in a savepoint each (its
/// role and settings undone by the rollback to the savepoint). Per target:
/// the advice (verified or not), or None when the plan could not be made.
#[allow(clippy::too_many_arguments)]
async fn verify(
    client: &Client,
    catalog: &Catalog,
    tenancy: Option<&Tenancy>,
    results: &[Explained],
    c: &Candidate,
    targets: &[Target],
    builder: Builder,
    left: Duration,
    opts: &AdviceOptions,
) -> std::result::Result<Vec<Option<Advice>>, String> {
    let tag = |s: &str| session::tag(opts.stats, s);
    let build_ms = left.as_millis().max(1) as u64;
    client
        .batch_execute(&tag(&format!(
            "BEGIN; SET LOCAL statement_timeout = {build_ms}"
        )))
        .await
        .map_err(|e| e.to_string())?;
    let r = async {
        let index_name = build(client, c, builder, &tag).await?;
        client
            .batch_execute(&tag(&format!(
                "SET LOCAL statement_timeout = {}",
                opts.timeout_ms
            )))
            .await
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for t in targets {
            out.push(
                replan(client, catalog, tenancy, results, t, opts)
                    .await
                    .map(|(before, after)| advice(c, builder, t, &before, &after, &index_name)),
            );
        }
        Ok::<_, String>(out)
    }
    .await;
    let _ = client.batch_execute("ROLLBACK").await;
    if matches!(builder, Builder::Hypothetical { .. }) {
        // hypopg's indexes live in the backend, not the transaction.
        let _ = client
            .batch_execute(&tag(
                "DO $$ BEGIN PERFORM hypopg_reset(); EXCEPTION WHEN undefined_function THEN NULL; END $$",
            ))
            .await;
    }
    r
}

/// Creates the candidate; returns the name plans will show for it.
async fn build(
    client: &Client,
    c: &Candidate,
    builder: Builder,
    tag: &impl Fn(&str) -> String,
) -> std::result::Result<String, String> {
    if c.trigram {
        // Rolled back with the index when the database did not have it.
        client
            .batch_execute(&tag(TRIGRAM_EXTENSION))
            .await
            .map_err(|e| pg_text(&e))?;
    }
    match builder {
        Builder::Real => {
            client
                .batch_execute(&tag(&c.quoted_sql(TRIAL_INDEX)))
                .await
                .map_err(|e| pg_text(&e))?;
            Ok(TRIAL_INDEX.to_string())
        }
        Builder::Hypothetical { create_extension } => {
            if create_extension {
                client
                    .batch_execute(&tag("CREATE EXTENSION hypopg"))
                    .await
                    .map_err(|e| pg_text(&e))?;
            }
            let row = client
                .query_one(
                    &tag("SELECT indexname::text FROM hypopg_create_index($1)"),
                    &[&c.quoted_sql(TRIAL_INDEX)],
                )
                .await
                .map_err(|e| pg_text(&e))?;
            Ok(row.get(0))
        }
    }
}

fn pg_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => crate::error::PgError::from_db(db).to_string(),
        None => e.to_string(),
    }
}

/// The target's plan made again, in a savepoint, as it was made: same
/// mode and tenant, same kind, same values. (plan before, plan after)
async fn replan(
    client: &Client,
    catalog: &Catalog,
    tenancy: Option<&Tenancy>,
    results: &[Explained],
    t: &Target,
    opts: &AdviceOptions,
) -> Option<(Plan, Plan)> {
    let e = &results[t.result];
    let before = e.plans.get(t.plan)?;
    let ctx = match tenancy {
        Some(ty) => ty.context(before.mode, before.tenant_id.as_deref()),
        None => TenantContext::admin(),
    };
    let tag = |s: &str| session::tag(opts.stats, s);
    client
        .batch_execute(&tag("SAVEPOINT planck_advice"))
        .await
        .ok()?;
    let made = async {
        if let Some(role) = &ctx.role {
            client
                .batch_execute(&tag(&format!(
                    "SET LOCAL ROLE {}",
                    crate::db::quote_ident(role)
                )))
                .await
                .ok()?;
        }
        session::apply_settings(client, &ctx).await.ok()?;
        let json = match before.kind {
            PlanKind::Generic => generic(client, catalog, &e.text, before.params.len(), &tag).await,
            PlanKind::Custom | PlanKind::Literal => {
                custom(client, &e.text, &before.params, &tag).await
            }
        }?;
        Some(Plan {
            json,
            // A new plan: its nodes are its own, not the cached ones of `before`.
            flat: Default::default(),
            ..before.clone()
        })
    }
    .await;
    let _ = client
        .batch_execute("ROLLBACK TO SAVEPOINT planck_advice")
        .await;
    if before.kind == PlanKind::Generic && catalog.server_version_num < 160000 {
        // Not transactional: left behind when the EXPLAIN failed. Only when
        // it is there, so the DEALLOCATE cannot abort the transaction.
        let left = client
            .query(
                &tag("SELECT 1 FROM pg_prepared_statements WHERE name = 'planck_advice'"),
                &[],
            )
            .await
            .map(|r| !r.is_empty())
            .unwrap_or(false);
        if left {
            let _ = client.batch_execute("DEALLOCATE planck_advice").await;
        }
    }
    made.map(|after| (before.clone(), after))
}

fn first_json(msgs: Vec<SimpleQueryMessage>) -> Option<Value> {
    msgs.into_iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => r.get(0).and_then(|t| serde_json::from_str(t).ok()),
        _ => None,
    })
}

/// The generic plan: GENERIC_PLAN on 16+, else PREPARE and force it.
async fn generic(
    client: &Client,
    catalog: &Catalog,
    text: &str,
    nparams: usize,
    tag: &impl Fn(&str) -> String,
) -> Option<Value> {
    let sql = if catalog.server_version_num >= 160000 {
        tag(&format!(
            "EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON) {text}"
        ))
    } else {
        let nulls = vec!["NULL"; nparams].join(", ");
        let args = if nparams == 0 {
            String::new()
        } else {
            format!("({nulls})")
        };
        [
            // The `;` on a line of its own: the text may end in a `--` comment.
            format!("PREPARE planck_advice AS {text}\n"),
            "SET LOCAL plan_cache_mode = force_generic_plan".to_string(),
            format!("EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE planck_advice{args}"),
            "DEALLOCATE planck_advice".to_string(),
        ]
        .map(|s| tag(&s))
        .join(";\n")
    };
    first_json(client.simple_query(&sql).await.ok()?)
}

/// A custom plan with the values the finding's plan was made with.
async fn custom(
    client: &Client,
    text: &str,
    values: &[Option<String>],
    tag: &impl Fn(&str) -> String,
) -> Option<Value> {
    let stmt = client
        .prepare(&tag(&format!("EXPLAIN (VERBOSE, FORMAT JSON) {text}")))
        .await
        .ok()?;
    let mut values = values.to_vec();
    values.resize(stmt.params().len(), None);
    let params: Vec<TextParam> = values.into_iter().map(TextParam).collect();
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    let row = client.query_one(&stmt, &refs).await.ok()?;
    row.try_get(0).ok()
}

/// The advice for one target: verified when the new plan reads the index.
fn advice(
    c: &Candidate,
    builder: Builder,
    t: &Target,
    before: &Plan,
    after: &Plan,
    index_name: &str,
) -> Advice {
    let bare = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
    let node_before = before
        .nodes()
        .iter()
        .find(|n| n.path == t.path)
        .map(|n| n.node_type.clone())
        .unwrap_or_default();
    let using = after
        .nodes()
        .iter()
        .find(|n| n.index.as_deref().map(bare).as_deref() == Some(index_name));
    Advice {
        sql: if c.trigram {
            format!("{TRIGRAM_EXTENSION}; {}", c.sql())
        } else {
            c.sql()
        },
        table: c.table.clone(),
        columns: c.columns.clone(),
        predicate: c.predicate.clone(),
        cost_before: before.total_cost(),
        cost_after: after.total_cost(),
        node_before,
        node_after: using
            .as_ref()
            .map(|n| n.node_type.clone())
            .unwrap_or_default(),
        verified: using.is_some(),
        how: builder.as_str(),
    }
}

/// `with `CREATE INDEX ON devices (user_id)`: Seq Scan 1,234 -> Index Scan
/// 12.4 (cost), verified`: the line every renderer shows under a finding.
pub fn line(a: &Advice) -> String {
    format!(
        "with `{}`: {} {} -> {} {} (cost), verified{}",
        a.sql,
        a.node_before,
        cost(a.cost_before),
        a.node_after,
        cost(a.cost_after),
        if a.how == "hypothetical" {
            " (hypothetical index)"
        } else {
            ""
        }
    )
}

/// Costs as EXPLAIN shows them, with thousands separators above 1,000.
fn cost(c: f64) -> String {
    if c >= 1000.0 {
        crate::output::count(c.round() as u64)
    } else {
        format!("{c:.1}")
    }
}

/// The first line of an advice file: `planck migrate` runs such a file's
/// statements one at a time outside a transaction (CONCURRENTLY needs it).
pub const NO_TRANSACTION: &str = "-- planck:no-transaction";

/// The advice file: one `CREATE INDEX CONCURRENTLY` per distinct verified
/// index, each after a comment naming the findings it serves.
pub fn advice_file(findings: &[(Finding, bool)]) -> (String, usize) {
    // Ordered by table, columns, predicate.
    let mut by: BTreeMap<Candidate, Vec<String>> = BTreeMap::new();
    for (f, _) in findings {
        let Some(a) = f.advice.as_ref().filter(|a| a.verified) else {
            continue;
        };
        let c = Candidate {
            trigram: a.sql.contains("gin_trgm_ops"),
            table: a.table.clone(),
            columns: a.columns.clone(),
            predicate: a.predicate.clone(),
        };
        let statement = f
            .statement
            .as_deref()
            .map(|s| format!(" statement {s}"))
            .unwrap_or_default();
        let who = format!(
            "{}{statement} ({} mode, cost {} -> {})",
            f.check,
            f.mode.map_or("-", |m| m.as_str()),
            cost(a.cost_before),
            cost(a.cost_after)
        );
        let entry = by.entry(c).or_default();
        if !entry.contains(&who) {
            entry.push(who);
        }
    }
    let mut out = String::new();
    out.push_str(NO_TRANSACTION);
    out.push('\n');
    out.push_str(
        "-- Indexes planck explain proposed and verified on the data (--write-advice).\n\
         -- planck migrate runs each statement on its own, outside a transaction.\n",
    );
    if by.keys().any(|c| c.trigram) {
        out.push_str(&format!(
            "\n-- the trigram indexes' operator class\n{TRIGRAM_EXTENSION};\n"
        ));
    }
    for (c, who) in &by {
        out.push('\n');
        for w in who {
            out.push_str(&format!("-- serves {w}\n"));
        }
        out.push_str(&c.concurrent_sql());
        out.push_str(";\n");
    }
    (out, by.len())
}

/// Writes the advice file (see [`advice_file`]).
pub fn write_file(path: &Path, findings: &[(Finding, bool)], log: Log) -> Result<()> {
    let (text, n) = advice_file(findings);
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::File::create(path)?;
        f.write_all(text.as_bytes())
    };
    write().map_err(|e| Error::Other(anyhow::anyhow!("writing {}: {e}", path.display())))?;
    log.info(&format!(
        "wrote {} to {}",
        crate::output::counted(n as u64, "index", "indexes"),
        path.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;

    fn devices_advice() -> Advice {
        Advice {
            sql: "CREATE INDEX ON devices (user_id)".into(),
            table: "devices".into(),
            columns: vec!["user_id".into()],
            predicate: None,
            cost_before: 18_422.4,
            cost_after: 12.43,
            node_before: "Seq Scan".into(),
            node_after: "Index Scan".into(),
            verified: true,
            how: "real",
        }
    }

    #[test]
    fn the_advice_line() {
        insta::assert_snapshot!(line(&devices_advice()), @"with `CREATE INDEX ON devices (user_id)`: Seq Scan 18,422 -> Index Scan 12.4 (cost), verified");
    }

    #[test]
    fn one_statement_per_distinct_index_naming_every_finding() {
        let mk = |stmt: &str, mode: Mode| {
            let mut f = Finding::new(CheckId::SeqScan, Severity::Error, "m".into());
            f.statement = Some(stmt.into());
            f.mode = Some(mode);
            f.advice = Some(devices_advice());
            (f, false)
        };
        let mut unverified = mk("c3", Mode::Admin);
        unverified.0.advice.as_mut().unwrap().verified = false;
        let (text, n) = advice_file(&[mk("a1", Mode::Admin), mk("b2", Mode::Tenant), unverified]);
        assert_eq!(n, 1);
        assert!(text.starts_with("-- planck:no-transaction\n"), "{text}");
        insta::assert_snapshot!(text);
    }
}
