//! The plan checks. Each lives in its own file with its tests, has a
//! kebab-case id and a help text; adding a check means adding a file and one
//! line in [`ALL`].

use std::path::Path;

use super::catalog::Catalog;
use super::engine::{Explained, Status};
use super::plan::{Mode, Plan, PlanKind};
use super::tenant::Tenancy;

pub mod filter_removes_most_rows;
pub mod full_index_scan;
pub mod rls_policy;
pub mod seq_scan;
pub mod stale_statement;
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
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A finding is data, not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub check: &'static str,
    pub severity: Severity,
    /// `None` for findings about the schema as a whole (unused indexes).
    pub mode: Option<Mode>,
    pub statement: Option<String>,
    pub query: Option<String>,
    pub relation: Option<String>,
    pub index: Option<String>,
    pub message: String,
    pub help: &'static str,
}

impl Finding {
    pub fn new(check: &dyn Check, severity: Severity, message: String) -> Finding {
        Finding {
            check: check.id(),
            severity,
            mode: None,
            statement: None,
            query: None,
            relation: None,
            index: None,
            message,
            help: check.help(),
        }
    }

    pub fn statement(mut self, e: &Explained, mode: Mode) -> Finding {
        self.statement = Some(e.stmt.id.clone());
        self.query = Some(e.stmt.query.clone());
        self.mode = Some(mode);
        self
    }

    pub fn mode(mut self, m: Mode) -> Finding {
        self.mode = Some(m);
        self
    }

    pub fn relation(mut self, r: impl Into<String>) -> Finding {
        self.relation = Some(r.into());
        self
    }

    pub fn index(mut self, i: impl Into<String>) -> Finding {
        self.index = Some(i.into());
        self
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
            s.extend(e.analysis.tables.iter().cloned());
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

pub trait Check: Sync {
    fn id(&self) -> &'static str;
    fn help(&self) -> &'static str;
    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>);
}

/// Runs every check not disabled.
pub fn run_all(ctx: &Ctx, disabled: &[String]) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in ALL {
        if !disabled.iter().any(|d| d == c.id()) {
            c.run(ctx, &mut out);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builders for check tests: a catalog and explained statements by hand.
    use super::*;
    use crate::explain::catalog::{Index, Table};
    use crate::explain::sql;
    use crate::queries::Statement;
    use serde_json::Value;

    pub fn catalog(tables: &[(&str, u64)], indexes: Vec<Index>) -> Catalog {
        Catalog {
            server_version_num: 150000,
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
            analysis: sql::analyze(query),
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
            notes: vec![],
        }
    }

    pub fn ctx<'a>(catalog: &'a Catalog, results: &'a [Explained]) -> Ctx<'a> {
        Ctx {
            catalog,
            results,
            tenancy: None,
            min_rows: 10_000,
            rls_cost_ratio: 10.0,
            source: None,
        }
    }
}
