//! `seq-scan`: a whole-table scan of a table above the row threshold.

use std::collections::BTreeMap;

use super::{Check, CheckId, Ctx, Finding, Severity, describe, finding, judged_plans, plan_index};

pub struct SeqScan;

/// A plan's index among the statement's plans and a node's path in it.
type NodeAt = (usize, Vec<usize>);

impl Check for SeqScan {
    fn id(&self) -> CheckId {
        CheckId::SeqScan
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.explained() {
            // (mode, table) -> the plans that scan it.
            let mut hits: BTreeMap<_, (Vec<String>, NodeAt)> = BTreeMap::new();
            for p in judged_plans(e) {
                for n in p.nodes() {
                    if let Some(rel) = n.relation.clone().filter(|_| n.is_seq_scan())
                        && ctx.catalog.rows(&rel) >= ctx.min_rows
                    {
                        // The first node found is the one the finding points at.
                        let (v, _) = hits
                            .entry((p.mode, rel))
                            .or_insert_with(|| (Vec::new(), (plan_index(e, p), n.path.clone())));
                        let d = describe(p);
                        if !v.contains(&d) {
                            v.push(d);
                        }
                    }
                }
            }
            for ((mode, rel), (plans, (plan, path))) in hits {
                let rows = crate::output::count(ctx.catalog.rows(&rel));
                out.push(
                    finding(
                        self,
                        Severity::Error,
                        format!(
                            "Seq Scan on {rel} ({rows} rows) in the {}",
                            plans.join(", ")
                        ),
                    )
                    .statement(&e.stmt, mode)
                    .relation(rel)
                    .node(plan, &path),
                );
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

    fn scan(rel: &str) -> serde_json::Value {
        json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": rel, "Total Cost": 100.0}}])
    }

    #[test]
    fn flags_big_tables_only_in_judged_modes() {
        let cat = catalog(&[("events", 20_000), ("rate_limits", 10)], vec![]);
        let mut e = explained(
            "SELECT * FROM events",
            vec![
                (Mode::Tenant, PlanKind::Generic, scan("events")),
                (Mode::Tenant, PlanKind::Custom, scan("events")),
                (Mode::Admin, PlanKind::Generic, scan("events")),
            ],
        );
        e.judged = vec![Mode::Tenant];
        let small = explained(
            "SELECT * FROM rate_limits",
            vec![(Mode::Admin, PlanKind::Generic, scan("rate_limits"))],
        );
        let results = [e, small];
        let mut out = Vec::new();
        SeqScan.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].relation.as_deref(), Some("events"));
        assert_eq!(out[0].mode, Some(Mode::Tenant));
        assert_eq!(out[0].severity, Severity::Error);
        assert!(out[0].message.contains("20,000 rows"), "{}", out[0].message);
        assert!(
            out[0]
                .message
                .contains("generic plan, custom plan (heaviest tenant)")
        );
    }
}
