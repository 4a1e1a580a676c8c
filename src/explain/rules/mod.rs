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

/// What a check sees.
pub struct Ctx<'a> {
    pub catalog: &'a Catalog,
    pub results: &'a [Explained],
    pub tenancy: Option<&'a Tenancy>,
    pub min_rows: u64,
    pub rls_cost_ratio: f64,
    pub source: Option<&'a Path>,
    pub probes: &'a Probes,
}

impl Ctx<'_> {
    pub fn explained(&self) -> impl Iterator<Item = &Explained> {
        self.results
            .iter()
            .filter(|e| e.status == Status::Explained)
    }

    /// Tables some explained statement touches.
    pub fn touched(&self) -> std::collections::BTreeSet<String> {
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
                s.extend(p.nodes().into_iter().filter_map(|n| n.relation));
            }
        }
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
pub fn run_all(ctx: &Ctx, disabled: &[CheckId]) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in ALL {
        c.run(ctx, &mut out);
    }
    out.retain(|f| !disabled.contains(&f.check));
    out
}

/// Where a node of `p` (one of `e`'s plans) sits: the plan's index among the
/// statement's plans.
pub fn plan_index(e: &Explained, p: &Plan) -> usize {
    e.plans
        .iter()
        .position(|q| std::ptr::eq(q, p))
        .unwrap_or_default()
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
        }
    }
}
