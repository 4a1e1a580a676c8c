//! `tenant-misestimate` (`--analyze`): a tenant plan node whose actual rows
//! are at least 10x off its estimate, where that count drives a nested loop
//! (how often the inner side runs) or a sort (its memory): the planner's
//! statistics do not see the tenant's share of the rows.

use super::{
    Check, CheckId, Ctx, Finding, Severity, declare_check, finding, judged_plans, plan_index,
};
use crate::explain::plan_tree::{Mode, Node};

declare_check! {
    /// raise the statistics target of the filtered columns, or create extended statistics on
    /// (tenant column, filtered column), then ANALYZE
    pub struct TenantMisestimate => "tenant-misestimate";
}

/// How far off an estimate must be.
pub const RATIO: f64 = 10.0;

impl Check for TenantMisestimate {
    fn id(&self) -> CheckId {
        CheckId::TenantMisestimate
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.explained() {
            let mut seen = std::collections::BTreeSet::new();
            for p in judged_plans(e).filter(|p| p.mode == Mode::Tenant) {
                let nodes = p.nodes();
                for n in nodes {
                    let Some(actual) = n.actual_rows else {
                        continue;
                    };
                    let Some(parent) = n.path.split_last().map(|(_, up)| up) else {
                        continue;
                    };
                    let Some(parent) = nodes.iter().find(|x| x.path == parent) else {
                        continue;
                    };
                    if !matches!(
                        parent.node_type.as_str(),
                        "Nested Loop" | "Sort" | "Incremental Sort"
                    ) {
                        continue;
                    }
                    let est = n.plan_rows.max(1.0);
                    let ratio = (actual.max(1.0) / est).max(est / actual.max(1.0));
                    if ratio < RATIO {
                        continue;
                    }
                    let Some(table) = table_below(nodes, n) else {
                        continue;
                    };
                    // Issue 47, 3: a table of a few rows gives estimates
                    // no statistics target can make right or wrong.
                    if let Some(why) = ctx.table_not_judged(&table) {
                        ctx.withhold(self.id(), &table, None, why);
                        continue;
                    }
                    if !seen.insert(table.clone()) {
                        continue;
                    }
                    let tenant_col = ctx
                        .tenancy
                        .and_then(|t| t.columns.get(&table))
                        .map(|c| format!(" (tenant column {c})"))
                        .unwrap_or_default();
                    out.push(
                        finding(
                            self,
                            Severity::Warning,
                            format!(
                                "{} on {table}{tenant_col} estimated {} rows, read {} ({ratio:.0}x off), \
                                 feeding a {}: raise the statistics of the filtered columns \
                                 (ALTER TABLE {table} ALTER COLUMN ... SET STATISTICS 1000, then \
                                 ANALYZE), or create extended statistics on (tenant column, \
                                 filtered column): CREATE STATISTICS ON ... FROM {table}",
                                n.node_type,
                                crate::output::count(n.plan_rows as u64),
                                crate::output::count(actual as u64),
                                parent.node_type
                            ),
                        )
                        .statement(&e.stmt, Mode::Tenant)
                        .relation(&table)
                        .node(plan_index(e, p), &n.path),
                    );
                }
            }
        }
    }
}

/// The table a node reads: its own, else the first below it.
fn table_below(nodes: &[Node], n: &Node) -> Option<String> {
    n.relation.clone().or_else(|| {
        nodes
            .iter()
            .filter(|x| x.path.starts_with(&n.path))
            .find_map(|x| x.relation.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::plan_tree::PlanKind;
    use crate::explain::rules::testing::{catalog, ctx, explained};
    use serde_json::json;

    fn run(inner_actual: f64) -> Vec<Finding> {
        let c = catalog(&[("tickets", 100_000)], vec![]);
        let e = explained(
            "SELECT 1",
            vec![(
                Mode::Tenant,
                PlanKind::Custom,
                json!([{"Plan": {"Node Type": "Sort", "Plan Rows": 30.0, "Actual Rows": 500.0,
                    "Actual Loops": 1.0, "Plans": [{"Node Type": "Seq Scan",
                    "Relation Name": "tickets", "Plan Rows": 30.0,
                    "Actual Rows": inner_actual, "Actual Loops": 1.0}]}}]),
            )],
        );
        let results = [e];
        let mut out = Vec::new();
        TenantMisestimate.run(&ctx(&c, &results), &mut out);
        out
    }

    #[test]
    fn ten_times_off_under_a_sort_is_flagged_naming_the_table() {
        let f = run(500.0);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].relation.as_deref(), Some("tickets"));
        assert!(
            f[0].message.contains("estimated 30 rows, read 500"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("CREATE STATISTICS"));
        assert!(run(200.0).is_empty(), "under 10x is not flagged");
    }
}
