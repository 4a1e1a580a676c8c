//! The plan checks. Each lives in its own file with its tests, has a
//! kebab-case id and a help text; adding a check means adding a file and one
//! line in [`ALL`].

use std::path::Path;

use super::engine::{Explained, Status};
use super::plan_tree::{Mode, Plan, PlanKind};
use crate::catalog::planner::Catalog;
pub use crate::findings::{CheckId, Finding, Severity};
use crate::tenancy::Tenancy;

pub mod duplicate_index;
pub mod filter_removes_most_rows;
pub mod full_index_scan;
pub mod multiple_permissive_policies;
pub mod rls_per_row_call;
pub mod rls_policy;
pub mod seq_scan;
pub mod stale_statement;
pub mod tenant_misestimate;
pub mod tenant_plan_reuse;
pub mod unused_index;
pub mod unused_partial_index;

/// Every check, in report order.
pub const ALL: &[&dyn Check] = &[
    &seq_scan::SeqScan,
    &full_index_scan::FullIndexScan,
    &unused_index::UnusedIndex,
    &unused_partial_index::UnusedPartialIndex,
    &rls_policy::RlsPolicy,
    &stale_statement::StaleStatement,
    &filter_removes_most_rows::FilterRemovesMostRows,
    &rls_per_row_call::RlsPerRowCall,
    &tenant_plan_reuse::TenantPlanReuse,
    &tenant_misestimate::TenantMisestimate,
    &multiple_permissive_policies::MultiplePermissivePolicies,
    &duplicate_index::DuplicateIndex,
];

/// What the probe phases measured on the server, for the checks that
/// report it (`explain::per_row_call`, `explain::plan_reuse`).
#[derive(Debug, Default)]
pub struct Probes {
    pub functions: Vec<crate::explain::per_row_call::UserFn>,
    pub calls: Vec<crate::explain::per_row_call::Counted>,
    pub reuse: Vec<crate::explain::plan_reuse::Reuse>,
    pub permissive: Vec<crate::explain::policy_groups::PermissiveGroup>,
}

/// How a finding only the generic plan shows counts (`[explain] generic`,
/// issue 13 §1). A driver that binds values client-side (psycopg, most
/// Python, Ruby and PHP stacks, anything on the simple protocol) never runs
/// a generic plan; only a statement the application prepares does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenericPlans {
    /// As any other finding.
    Judge,
    /// Errors become warnings, and say so: the default without evidence of
    /// how the application sends the statement.
    #[default]
    Warn,
    /// Dropped.
    Ignore,
}

impl GenericPlans {
    pub fn parse(s: &str) -> Option<GenericPlans> {
        match s {
            "judge" => Some(GenericPlans::Judge),
            "warn" => Some(GenericPlans::Warn),
            "ignore" => Some(GenericPlans::Ignore),
            _ => None,
        }
    }
}

/// A finding on `e` that only its generic plan shows, `kinds` being the
/// kinds of plan that show it. Only when `e` has a judged custom plan in the
/// finding's mode that could have shown it. Where the recording knows how
/// the application sent `e` (`sent`, issue 13 §1), that evidence decides: a
/// prepared statement can run the generic plan, so the finding is judged
/// and says so; one sent with literals never does, so it is dropped.
/// Without evidence, `ctx.generic` decides (None: dropped).
pub fn generic_only(
    ctx: &Ctx,
    e: &Explained,
    mode: Mode,
    kinds: &[PlanKind],
    mut f: Finding,
) -> Option<Finding> {
    use crate::queries::Sent;
    let only_generic = !kinds.is_empty() && kinds.iter().all(|k| *k == PlanKind::Generic);
    let has_custom = judged_plans(e).any(|p| p.mode == mode && p.kind == PlanKind::Custom);
    if !(only_generic && has_custom) {
        return Some(f);
    }
    match (e.stmt.sent, ctx.generic) {
        (Some(Sent::Prepared), _) => {
            f.message.push_str(
                "; only the generic plan shows it, and the recording saw the application \
                 prepare the statement (sent = \"prepared\"): the server can switch it to \
                 that plan",
            );
            Some(f)
        }
        (Some(Sent::Unprepared), _) => None,
        (None, GenericPlans::Judge) => Some(f),
        (None, GenericPlans::Ignore) => None,
        (None, GenericPlans::Warn) => {
            if f.severity == Severity::Error {
                f.severity = Severity::Warning;
            }
            f.message.push_str(
                "; only the generic plan shows it (the custom plans, with values bound, do \
                 not): it counts where the application prepares the statement",
            );
            Some(f)
        }
    }
}

/// What a check sees.
pub struct Ctx<'a> {
    pub catalog: &'a Catalog,
    pub results: &'a [Explained],
    pub tenancy: Option<&'a Tenancy>,
    pub min_rows: u64,
    pub rls_cost_ratio: f64,
    pub source: Option<&'a Path>,
    pub probes: &'a Probes,
    pub generic: GenericPlans,
}

impl Ctx<'_> {
    pub fn explained(&self) -> impl Iterator<Item = &Explained> {
        self.results
            .iter()
            .filter(|e| e.status == Status::Explained)
    }

    /// Tables some explained statement touches and no statement not judged
    /// reads (how such a statement would use their indexes is unknown, so
    /// none of them is judged unused).
    pub fn touched(&self) -> std::collections::BTreeSet<String> {
        let unjudged = crate::explain::data::unjudged_tables(self.results, self.catalog);
        let mut s = std::collections::BTreeSet::new();
        for e in self.explained() {
            s.extend(
                e.analysis
                    .tables
                    .iter()
                    .filter_map(|t| self.catalog.resolve(t))
                    .map(str::to_string),
            );
            for p in &e.plans {
                s.extend(p.nodes().iter().filter_map(|n| n.relation.clone()));
            }
        }
        s.retain(|t| !unjudged.contains(t));
        s
    }
}

/// "in any mode", or "in admin mode" when only one mode was planned.
pub fn modes_phrase(ctx: &Ctx) -> String {
    let modes: std::collections::BTreeSet<Mode> = ctx
        .results
        .iter()
        .flat_map(|e| e.plans.iter().map(|p| p.mode))
        .collect();
    match modes.iter().next() {
        Some(m) if modes.len() == 1 => format!("in {} mode", m.as_str()),
        _ => "in any mode".to_string(),
    }
}

/// The judged plans of a statement (literal re-plans excluded).
pub fn judged_plans(e: &Explained) -> impl Iterator<Item = &Plan> {
    e.plans
        .iter()
        .filter(|p| p.kind != PlanKind::Literal && e.judged.contains(&p.mode))
}

/// `generic plan` / `custom plan (heaviest tenant)`.
pub fn describe(p: &Plan) -> String {
    match (&p.kind, &p.tenant) {
        (PlanKind::Generic, _) => "generic plan".to_string(),
        (_, Some(t)) => format!("{} plan ({t} tenant)", p.kind.as_str()),
        (_, None) => format!("{} plan", p.kind.as_str()),
    }
}

/// One plan check. Its help text lives with its id ([`CheckId::help`]).
pub trait Check: Sync {
    fn id(&self) -> CheckId;
    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>);
}

/// A finding of check `c` (what `Finding::new(self, ...)` reads as in a check).
pub fn finding(c: &(impl Check + ?Sized), severity: Severity, message: String) -> Finding {
    Finding::new(c.id(), severity, message)
}

/// Runs every check not disabled; a disabled id also drops the findings a
/// check emits under another id (`partial-index-needs-literal`).
///
/// Findings on migration bookkeeping (`django_migrations`,
/// `schema_migrations`, planck's own tables: see
/// `catalog::schema::is_migration_bookkeeping`) are dropped: those tables
/// are not the application's data (issue 13 §6).
pub fn run_all(ctx: &Ctx, disabled: &[CheckId]) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in ALL {
        c.run(ctx, &mut out);
    }
    out.retain(|f| !disabled.contains(&f.check) && !on_bookkeeping(f, ctx.results));
    out
}

/// Whether `name` (as written or displayed, perhaps schema-qualified) is a
/// migration tool's bookkeeping table or planck's own.
pub fn is_bookkeeping(name: &str) -> bool {
    let (schema, bare) = match name.rsplit_once('.') {
        Some((s, t)) => (Some(s), t),
        None => (None, name),
    };
    let bare = bare.trim_matches('"');
    schema == Some(crate::bookkeeping::SCHEMA)
        || crate::catalog::schema::is_migration_bookkeeping(bare)
        || crate::catalog::schema::OWN_TABLES.contains(&bare)
}

/// Whether `f` is about a bookkeeping table, or a statement that reads one.
fn on_bookkeeping(f: &Finding, results: &[Explained]) -> bool {
    if f.relation.as_deref().is_some_and(is_bookkeeping) {
        return true;
    }
    results
        .iter()
        .filter(|e| f.statement.as_deref() == Some(e.stmt.id.as_str()))
        .any(|e| e.analysis.tables.iter().any(|t| is_bookkeeping(t)))
}

/// Where a node of `p` (one of `e`'s plans) sits: the plan's index among the
/// statement's plans.
pub fn plan_index(e: &Explained, p: &Plan) -> usize {
    e.plans
        .iter()
        .position(|q| std::ptr::eq(q, p))
        .unwrap_or_default()
}

/// The JSON object of the node at `path` (child indexes from the root) in `p`.
pub fn node_json<'a>(p: &'a Plan, path: &[usize]) -> Option<&'a serde_json::Value> {
    let mut v = p.root()?;
    for &i in path {
        v = v.get("Plans")?.get(i)?;
    }
    Some(v)
}

/// Nodes that consume all their input before returning a first row: a
/// Limit above them stops nothing below them.
const BLOCKING: &[&str] = &[
    "Sort",
    "Incremental Sort",
    "Aggregate",
    "Hash",
    "WindowAgg",
    "Materialize",
    "SetOp",
    "Recursive Union",
    "Bitmap Heap Scan",
    "BitmapAnd",
    "BitmapOr",
];

/// The rows a scan at `path` in `p` is estimated to read in one execution,
/// of a relation of `rows` rows (issue 13 §4): all of them, unless a Limit
/// above it stops early, with only streaming nodes between (no Sort,
/// aggregate, hash or bitmap; through the outer side of joins only, since an
/// inner side is read again per outer row). Then the Limit's share, as the
/// planner costs it: `(limit total - input startup) / (input total - input
/// startup)` is the fraction of its input the Limit pulls.
pub fn rows_read(p: &Plan, path: &[usize], rows: u64) -> f64 {
    rows_read_limited(p, path, rows, None)
}

/// [`rows_read`] of a scan of `e`'s plan `p`. A generic plan of `LIMIT $n`
/// costs the Limit at a guess (a tenth of its input), which no execution
/// meets: there the Limit pulls the rows the custom plans bind for `$n`.
pub fn rows_read_in(e: &Explained, p: &Plan, path: &[usize], rows: u64) -> f64 {
    let limit = e
        .analysis
        .bindings
        .iter()
        .find(|(_, b)| **b == crate::params::binding::Binding::Limit)
        .map(|(n, _)| *n as usize);
    let (Some(n), PlanKind::Generic) = (limit, p.kind) else {
        return rows_read(p, path, rows);
    };
    let bound = e
        .plans
        .iter()
        .filter(|q| q.kind == PlanKind::Custom && q.mode == p.mode)
        .find_map(|q| q.params.get(n.wrapping_sub(1)).cloned().flatten())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(20.0);
    rows_read_limited(p, path, rows, Some(bound))
}

/// [`rows_read`], the Limit pulling `limit` rows of its input when given.
fn rows_read_limited(p: &Plan, path: &[usize], rows: u64, limit: Option<f64>) -> f64 {
    let all = rows as f64;
    if node_json(p, path)
        .and_then(|n| n.get("Node Type"))
        .and_then(serde_json::Value::as_str)
        == Some("Bitmap Index Scan")
    {
        return all;
    }
    for k in (0..path.len()).rev() {
        let Some(parent) = node_json(p, &path[..k]) else {
            return all;
        };
        let Some(child) = node_json(p, &path[..=k]) else {
            return all;
        };
        let kind = parent.get("Node Type").and_then(serde_json::Value::as_str);
        let relationship = child
            .get("Parent Relationship")
            .and_then(serde_json::Value::as_str);
        if matches!(relationship, Some("InitPlan" | "SubPlan")) {
            return all;
        }
        match kind {
            Some("Limit") => {
                let f = |v: &serde_json::Value, k: &str| {
                    v.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0)
                };
                if let Some(n) = limit {
                    let input = f(child, "Plan Rows");
                    return if input > 0.0 {
                        all * (n / input).clamp(0.0, 1.0)
                    } else {
                        all
                    };
                }
                let (startup, total) = (f(child, "Startup Cost"), f(child, "Total Cost"));
                let span = total - startup;
                if span <= 0.0 {
                    return all;
                }
                let share = ((f(parent, "Total Cost") - startup) / span).clamp(0.0, 1.0);
                return all * share;
            }
            Some(k) if BLOCKING.contains(&k) => return all,
            Some("Nested Loop" | "Hash Join" | "Merge Join") if path[k] != 0 => return all,
            _ => {}
        }
    }
    all
}

/// Whether `text` reads whole tables by design: one SELECT with no WHERE
/// and no LIMIT (`SELECT count(*) FROM t`, the same over joins: every row
/// of what it reads is asked for).
pub fn reads_all_by_design(text: &str) -> bool {
    use sqlparser::ast::{SetExpr, Statement};
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;
    let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, text) else {
        return false;
    };
    let [Statement::Query(q)] = statements.as_slice() else {
        return false;
    };
    if q.limit_clause.is_some() || q.fetch.is_some() || q.with.is_some() {
        return false;
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    s.selection.is_none() && !s.from.is_empty()
}

/// How much an error weighs in the report order (issue 13 §4): the estimated
/// cost of its statement's heaviest judged plan in its mode, times the calls
/// the recording counted (1 when it counted none). 0 for findings on no
/// statement.
pub fn weight(f: &Finding, results: &[Explained]) -> f64 {
    let Some(e) = results
        .iter()
        .find(|e| f.statement.as_deref() == Some(e.stmt.id.as_str()))
    else {
        return 0.0;
    };
    let cost = judged_plans(e)
        .filter(|p| f.mode.is_none_or(|m| m == p.mode))
        .map(Plan::total_cost)
        .fold(0.0, f64::max);
    cost * e.stmt.calls.unwrap_or(1).max(1) as f64
}

/// The report order: errors first, the heaviest first (see [`weight`]), then
/// a stable order by check, relation, index, statement and mode.
pub fn sort_for_report(findings: &mut Vec<Finding>, results: &[Explained]) {
    let mut keyed: Vec<(f64, Finding)> = std::mem::take(findings)
        .into_iter()
        .map(|f| {
            let w = if f.severity == Severity::Error {
                weight(&f, results)
            } else {
                0.0
            };
            (w, f)
        })
        .collect();
    keyed.sort_by(|(wa, a), (wb, b)| {
        a.severity
            .cmp(&b.severity)
            .then(wb.total_cmp(wa))
            .then_with(|| {
                (a.check, &a.relation, &a.index, &a.statement, &a.mode).cmp(&(
                    b.check,
                    &b.relation,
                    &b.index,
                    &b.statement,
                    &b.mode,
                ))
            })
    });
    findings.extend(keyed.into_iter().map(|(_, f)| f));
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builders for check tests: a catalog and explained statements by hand.
    use super::*;
    use crate::catalog::planner::{Index, Table};
    use crate::params::binding;
    use crate::queries::Statement;
    use serde_json::Value;

    pub fn catalog(tables: &[(&str, u64)], indexes: Vec<Index>) -> Catalog {
        Catalog {
            server_version_num: 150000,
            search_path: vec!["public".into()],
            tables: tables
                .iter()
                .map(|(n, rows)| {
                    (
                        n.to_string(),
                        Table {
                            name: n.to_string(),
                            rows: *rows,
                            rls: true,
                            columns: vec!["id".into(), "account_id".into(), "status".into()],
                            root: None,
                        },
                    )
                })
                .collect(),
            indexes,
            policies: vec![],
            policy_calls: vec![],
        }
    }

    pub fn index(name: &str, table: &str, cols: &[&str]) -> Index {
        Index {
            name: name.into(),
            table: table.into(),
            columns: cols.iter().map(|c| Some(c.to_string())).collect(),
            definition: format!("CREATE INDEX {name} ON {table}"),
            ..Default::default()
        }
    }

    pub fn explained(query: &str, plans: Vec<(Mode, PlanKind, Value)>) -> Explained {
        Explained {
            stmt: Statement {
                id: "s1".into(),
                query: query.into(),
                ..Default::default()
            },
            text: query.into(),
            repairs: vec![],
            analysis: binding::analyze(query),
            judged: vec![Mode::Tenant, Mode::Admin],
            status: Status::Explained,
            param_types: vec![],
            plans: plans
                .into_iter()
                .map(|(mode, kind, json)| Plan {
                    mode,
                    kind,
                    tenant: Some("heaviest".into()),
                    tenant_id: None,
                    params: vec![],
                    json,
                    flat: Default::default(),
                })
                .collect(),
            stale: None,
            guesses: Vec::new(),
            notes: vec![],
        }
    }

    pub static NO_PROBES: Probes = Probes {
        functions: Vec::new(),
        calls: Vec::new(),
        reuse: Vec::new(),
        permissive: Vec::new(),
    };

    pub fn ctx<'a>(catalog: &'a Catalog, results: &'a [Explained]) -> Ctx<'a> {
        Ctx {
            catalog,
            results,
            tenancy: None,
            min_rows: 10_000,
            rls_cost_ratio: 10.0,
            source: None,
            probes: &NO_PROBES,
            generic: GenericPlans::Judge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn issue13_bookkeeping_tables_are_recognised() {
        for t in [
            "django_migrations",
            "public.schema_migrations",
            "flyway_schema_history",
            "__diesel_schema_migrations",
            "goose_db_version",
            "_sqlx_migrations",
            "knex_migrations",
            "alembic_version",
            "planck_migrations",
            "planck.seeded",
        ] {
            assert!(is_bookkeeping(t), "{t}");
        }
        assert!(!is_bookkeeping("migrations_report"));
        assert!(!is_bookkeeping("public.django_session"));
    }

    #[test]
    fn issue13_errors_are_ranked_by_cost_times_calls() {
        let plan = |cost: f64| json!([{"Plan": {"Node Type": "Seq Scan", "Total Cost": cost}}]);
        // a: cost 100 x 1,000 calls; b: cost 5,000 x 1 call; c: cost 1,000 x 10 calls.
        let mut results = Vec::new();
        for (id, cost, calls) in [("a", 100.0, 1000), ("b", 5000.0, 1), ("c", 1000.0, 10)] {
            let mut e = explained(id, vec![(Mode::Admin, PlanKind::Custom, plan(cost))]);
            e.stmt.id = id.into();
            e.stmt.calls = Some(calls);
            results.push(e);
        }
        let f = |id: &str, sev| {
            let mut f = Finding::new(CheckId::SeqScan, sev, id.to_string());
            f.statement = Some(id.to_string());
            f.mode = Some(Mode::Admin);
            f
        };
        let mut all = vec![
            f("b", Severity::Error),
            f("a", Severity::Warning),
            f("c", Severity::Error),
            f("a", Severity::Error),
        ];
        sort_for_report(&mut all, &results);
        let got: Vec<_> = all
            .iter()
            .map(|f| (f.message.as_str(), f.severity))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Severity::Error),
                ("c", Severity::Error),
                ("b", Severity::Error),
                ("a", Severity::Warning)
            ]
        );
        assert_eq!(weight(&all[0], &results), 100_000.0);
    }
}
