//! `full-index-scan`: an index scan whose conditions do not constrain the
//! index's leading column, on a big table: the whole index is read.
//!
//! Not when the plan reads few of its entries (a Limit above it stops early,
//! `ORDER BY id DESC LIMIT 20` on a backward primary-key scan), nor when the
//! index is partial and no row it yields is filtered out: its predicate then
//! implies the statement's conditions on the table, so the whole index is
//! exactly the rows wanted (`count(*) WHERE processed IS NULL` on an index
//! `WHERE processed IS NULL`), the plan one wants (issue 13 §4).

use super::{declare_check, 
    Check, CheckId, Ctx, Finding, Severity, describe, finding, generic_only, judged_plans,
    node_json, plan_index, reads_all_by_design, rows_read_in,
};
use crate::params::binding::{Tok, lex};

declare_check! {
    /// the scan does not constrain the index's first column; add an index that leads with the
    /// filtered column, or filter on the leading one
    pub struct FullIndexScan => "full-index-scan";
}

/// Whether `cond` names `column` (as a word or quoted identifier).
pub fn mentions_column(cond: &str, column: &str) -> bool {
    lex(cond).into_iter().any(|t| match t.kind {
        Tok::Word => cond[t.start..t.end].eq_ignore_ascii_case(column),
        Tok::Quoted => cond.get(t.start + 1..t.end.saturating_sub(1)) == Some(column),
        _ => false,
    })
}

impl Check for FullIndexScan {
    fn id(&self) -> CheckId {
        CheckId::FullIndexScan
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.explained() {
            let mut seen = Vec::new();
            for p in judged_plans(e) {
                for n in p.nodes() {
                    let (Some(rel), Some(idx)) = (&n.relation, &n.index) else {
                        // Bitmap Index Scans name no relation: use the index's table.
                        if let (None, Some(idx)) = (&n.relation, &n.index)
                            && n.node_type == "Bitmap Index Scan"
                            && let Some(ix) = ctx.catalog.index(idx)
                        {
                            self.judge(ctx, e, p, &ix.table.clone(), idx, n, &mut seen);
                        }
                        continue;
                    };
                    if n.is_index_scan() {
                        self.judge(ctx, e, p, rel, idx, n, &mut seen);
                    }
                }
            }
            for ((mode, _), kinds, f) in seen {
                out.extend(generic_only(ctx, e, mode, &kinds, f));
            }
        }
    }
}

/// A finding per (mode, index) of a statement, with the kinds of plan that show it.
type Found = (
    (crate::explain::plan_tree::Mode, String),
    Vec<crate::explain::plan_tree::PlanKind>,
    Finding,
);

impl FullIndexScan {
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &self,
        ctx: &Ctx,
        e: &crate::explain::engine::Explained,
        p: &crate::explain::plan_tree::Plan,
        rel: &str,
        idx: &str,
        n: &crate::explain::plan_tree::Node,
        seen: &mut Vec<Found>,
    ) {
        let cond = n.index_cond.as_deref();
        let rows = ctx.catalog.rows(rel);
        // No WHERE, no LIMIT: every entry is asked for.
        if rows < ctx.min_rows || reads_all_by_design(&e.text) {
            return;
        }
        let Some(ix) = ctx.catalog.index(idx) else {
            return;
        };
        let Some(Some(lead)) = ix.columns.first() else {
            return;
        };
        if cond.is_some_and(|c| mentions_column(c, lead)) {
            return;
        }
        // A partial index holds fewer entries than its table has rows: the
        // bound below would not hold for it.
        if ix.predicate.is_none() && skips(n, rows) {
            return;
        }
        if rows_read_in(e, p, &n.path, rows) < ctx.min_rows as f64 {
            return;
        }
        if ix.predicate.is_some() && !filtered(p, n) {
            return;
        }
        let key = (p.mode, idx.to_string());
        if let Some((_, kinds, _)) = seen.iter_mut().find(|(k, _, _)| *k == key) {
            kinds.push(p.kind);
            return;
        }
        seen.push((
            key,
            vec![p.kind],
            finding(self,
                Severity::Warning,
                format!(
                    "{idx} on {rel} ({} rows) is read without a condition on its leading column {lead} in the {}",
                    crate::output::count(rows),
                    describe(p)
                ),
            )
            .statement(&e.stmt, p.mode)
            .relation(rel)
            .index(idx)
            .node(plan_index(e, p), &n.path),
        ));
    }
}

/// What the planner charges for reading one index entry
/// (`cpu_index_tuple_cost`'s default): a scan that reads every entry of an
/// index of `rows` entries costs at least `rows` times this.
const COST_PER_ENTRY: f64 = 0.005;

/// Whether the plan's own cost says the scan `n` does not read the whole
/// index of a table of `rows` rows, although its conditions leave the
/// leading column free: PostgreSQL 18's skip scan descends once per
/// distinct leading value (few of them: cheap), which EXPLAIN does not name.
/// Judged by the figure, not the server's version: a scan that reads every
/// entry cannot cost less than processing them (a node without a cost, as
/// in hand-written plans, is not judged here).
fn skips(n: &crate::explain::plan_tree::Node, rows: u64) -> bool {
    n.total_cost > 0.0 && n.total_cost < COST_PER_ENTRY * rows as f64
}

/// Whether rows the scan `n` yields are filtered out (a Bitmap Index Scan's
/// by its Bitmap Heap Scan).
fn filtered(p: &crate::explain::plan_tree::Plan, n: &crate::explain::plan_tree::Node) -> bool {
    if n.node_type != "Bitmap Index Scan" {
        return n.filter.is_some();
    }
    let parent = n.path.split_last().map(|(_, up)| up).unwrap_or_default();
    node_json(p, parent).is_none_or(|v| v.get("Filter").is_some())
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use serde_json::json;

    /// Issue 31: PostgreSQL 18 answers a condition on a later column with a
    /// skip scan where the leading column has few values; EXPLAIN shows the
    /// same Index Scan node, only the cost tells it reads a sliver.
    #[test]
    fn a_scan_that_costs_less_than_reading_every_entry_skips() {
        let cat = catalog(
            &[("items", 50_000)],
            vec![index(
                "items_account_pouch",
                "items",
                &["account_id", "pouch_id"],
            )],
        );
        let scan = |cost: f64| {
            json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items",
                "Index Name": "items_account_pouch", "Index Cond": "(pouch_id = '3'::bigint)",
                "Total Cost": cost, "Plan Rows": 10}}])
        };
        let results = [
            // 50 leading values, one descent each: far below 50,000 entries' 250.
            explained(
                "SELECT 1",
                vec![(Mode::Admin, PlanKind::Generic, scan(120.0))],
            ),
            // Every entry read: 1,900 for the index.
            explained(
                "SELECT 2",
                vec![(Mode::Admin, PlanKind::Generic, scan(1900.0))],
            ),
        ];
        let mut out = Vec::new();
        FullIndexScan.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].query.as_deref(), Some("SELECT 2"), "{out:?}");
    }

    #[test]
    fn leading_column_unconstrained_is_flagged() {
        let cat = catalog(
            &[("items", 50_000)],
            vec![index(
                "items_account_pouch",
                "items",
                &["account_id", "pouch_id"],
            )],
        );
        let full = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items",
            "Index Name": "items_account_pouch", "Index Cond": "(pouch_id = '3'::bigint)"}}]);
        let fine = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items",
            "Index Name": "items_account_pouch", "Index Cond": "((account_id = 1) AND (pouch_id = 3))"}}]);
        let results = [
            explained(
                "SELECT 1",
                vec![(Mode::Admin, PlanKind::Generic, full.clone())],
            ),
            explained("SELECT 2", vec![(Mode::Admin, PlanKind::Generic, fine)]),
            // No WHERE, no LIMIT: the whole index is what it asks for.
            explained(
                "SELECT count(*) FROM items JOIN pouches p ON p.id = items.pouch_id",
                vec![(Mode::Admin, PlanKind::Generic, full)],
            ),
        ];
        let mut out = Vec::new();
        FullIndexScan.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].index.as_deref(), Some("items_account_pouch"));
        assert_eq!(out[0].query.as_deref(), Some("SELECT 1"));
    }

    #[test]
    fn issue13_backward_pk_scan_under_limit_and_exact_partial_index_are_fine() {
        let mut pk = index("pings_pkey", "pings", &["id"]);
        pk.primary = true;
        let mut unprocessed = index("pings_unprocessed", "pings", &["id"]);
        unprocessed.predicate = Some("(processed IS NULL)".into());
        let cat = catalog(&[("pings", 200_000)], vec![pk, unprocessed]);
        let backward = |limit_total: f64| {
            json!([{"Plan": {"Node Type": "Limit", "Startup Cost": 0.42, "Total Cost": limit_total,
                "Plans": [{"Node Type": "Index Scan", "Relation Name": "pings",
                    "Index Name": "pings_pkey", "Scan Direction": "Backward",
                    "Parent Relationship": "Outer", "Startup Cost": 0.42,
                    "Total Cost": 9000.0, "Plan Rows": 200000}]}}])
        };
        let partial = |filter: Option<&str>| {
            let mut scan = json!({"Node Type": "Index Only Scan", "Relation Name": "pings",
                "Index Name": "pings_unprocessed", "Total Cost": 40.0});
            if let Some(f) = filter {
                scan["Filter"] = json!(f);
            }
            json!([{"Plan": {"Node Type": "Aggregate", "Plans": [scan]}}])
        };
        let results = [
            explained(
                "SELECT * FROM pings ORDER BY id DESC LIMIT 20",
                vec![(Mode::Admin, PlanKind::Custom, backward(1.3))],
            ),
            explained(
                "SELECT * FROM pings ORDER BY id DESC LIMIT 150000",
                vec![(Mode::Admin, PlanKind::Custom, backward(6750.0))],
            ),
            explained(
                "SELECT count(*) FROM pings WHERE processed IS NULL",
                vec![(Mode::Admin, PlanKind::Custom, partial(None))],
            ),
            explained(
                "SELECT count(*) FROM pings WHERE processed IS NULL AND kind = $1",
                vec![(
                    Mode::Admin,
                    PlanKind::Custom,
                    partial(Some("(kind = 'x'::text)")),
                )],
            ),
        ];
        let mut out = Vec::new();
        FullIndexScan.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out.iter().map(|f| f.query.as_deref().unwrap()).collect();
        assert_eq!(
            got,
            vec![
                "SELECT * FROM pings ORDER BY id DESC LIMIT 150000",
                "SELECT count(*) FROM pings WHERE processed IS NULL AND kind = $1"
            ]
        );
    }

    /// The generic plan of `ORDER BY id DESC LIMIT $1` costs the Limit at a
    /// tenth of the index (16,000 of 160,000 entries); the custom plan binds 20.
    #[test]
    fn issue13_generic_limit_param_pulls_what_the_custom_plan_binds() {
        let mut pk = index("pings_pkey", "pings", &["id"]);
        pk.primary = true;
        let cat = catalog(&[("pings", 160_000)], vec![pk]);
        let plan = |rows: u64, total: f64| {
            json!([{"Plan": {"Node Type": "Limit", "Startup Cost": 0.42, "Total Cost": total,
                "Plan Rows": rows,
                "Plans": [{"Node Type": "Index Only Scan", "Relation Name": "pings",
                    "Index Name": "pings_pkey", "Parent Relationship": "Outer",
                    "Startup Cost": 0.42, "Total Cost": 4168.0, "Plan Rows": 160000}]}}])
        };
        let mut e = explained(
            "SELECT id FROM pings ORDER BY id DESC LIMIT $1",
            vec![
                (Mode::Admin, PlanKind::Generic, plan(16000, 417.0)),
                (Mode::Admin, PlanKind::Custom, plan(20, 0.94)),
            ],
        );
        e.plans[1].params = vec![Some("20".into())];
        let mut big = e.clone();
        big.stmt.query = "big".into();
        big.plans[1].params = vec![Some("150000".into())];
        let results = [e, big];
        let mut out = Vec::new();
        FullIndexScan.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out.iter().map(|f| f.query.as_deref().unwrap()).collect();
        assert_eq!(got, vec!["big"], "{out:?}");
    }

    #[test]
    fn column_mention_is_by_word() {
        assert!(mentions_column("(account_id = 1)", "account_id"));
        assert!(!mentions_column("(x_account_id = 1)", "account_id"));
        assert!(mentions_column("(\"Weird\" = 1)", "Weird"));
    }
}
