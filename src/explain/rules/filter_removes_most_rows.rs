//! `filter-removes-most-rows` (with `--analyze`): a scan whose filter throws
//! away most of the rows it read, on a big table: the rows are fetched only
//! to be discarded, which an index on the filtered columns would avoid.

use std::collections::BTreeSet;

use super::{declare_check, Check, CheckId, Ctx, Finding, Severity, describe, finding, judged_plans, plan_index};
use crate::output::count;

declare_check! {
    /// the scan reads rows only to discard them; index the filtered columns (needs --analyze,
    /// which measures the rows removed)
    pub struct FilterRemovesMostRows => "filter-removes-most-rows";
}

/// A filter dropping this many times the rows it keeps is flagged.
const RATIO: f64 = 10.0;

impl Check for FilterRemovesMostRows {
    fn id(&self) -> CheckId {
        CheckId::FilterRemovesMostRows
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.explained() {
            let mut seen = BTreeSet::new();
            for p in judged_plans(e) {
                for n in p.nodes() {
                    let (Some(rel), Some(removed)) = (&n.relation, n.removed_by_filter) else {
                        continue;
                    };
                    let kept = n.actual_rows.unwrap_or(0.0) * n.actual_loops.unwrap_or(1.0);
                    let removed = removed * n.actual_loops.unwrap_or(1.0);
                    if removed < ctx.min_rows as f64 || removed < RATIO * kept {
                        continue;
                    }
                    if seen.insert((p.mode, rel.clone())) {
                        out.push(
                            finding(
                                self,
                                Severity::Warning,
                                format!(
                                    "the filter on {rel} removed {} rows to keep {} in the {}",
                                    count(removed as u64),
                                    count(kept as u64),
                                    describe(p)
                                ),
                            )
                            .statement(&e.stmt, p.mode)
                            .relation(rel.clone())
                            .node(plan_index(e, p), &n.path),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use serde_json::json;

    #[test]
    fn flags_filters_that_discard_most_rows() {
        let cat = catalog(&[("events", 50_000)], vec![]);
        let wasteful = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "events",
            "Actual Rows": 3.0, "Actual Loops": 1.0, "Rows Removed by Filter": 49_997.0}}]);
        let fine = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "events",
            "Actual Rows": 40_000.0, "Actual Loops": 1.0, "Rows Removed by Filter": 10_000.0}}]);
        let planned_only = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "events"}}]);
        let results = [
            explained("SELECT 1", vec![(Mode::Admin, PlanKind::Custom, wasteful)]),
            explained("SELECT 2", vec![(Mode::Admin, PlanKind::Custom, fine)]),
            explained(
                "SELECT 3",
                vec![(Mode::Admin, PlanKind::Custom, planned_only)],
            ),
        ];
        let mut out = Vec::new();
        FilterRemovesMostRows.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].query.as_deref(), Some("SELECT 1"));
        assert!(
            out[0].message.contains("removed 49,997 rows to keep 3"),
            "{}",
            out[0].message
        );
    }
}
