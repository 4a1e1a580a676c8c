//! `full-index-scan`: an index scan whose conditions do not constrain the
//! index's leading column, on a big table: the whole index is read.

use super::{Check, CheckId, Ctx, Finding, Severity, describe, finding, judged_plans, plan_index};
use crate::params::binding::{Tok, lex};

pub struct FullIndexScan;

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
                            self.judge(ctx, e, p, &ix.table.clone(), idx, &n, &mut seen, out);
                        }
                        continue;
                    };
                    if n.is_index_scan() {
                        self.judge(ctx, e, p, rel, idx, &n, &mut seen, out);
                    }
                }
            }
        }
    }
}

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
        seen: &mut Vec<(crate::explain::plan_tree::Mode, String)>,
        out: &mut Vec<Finding>,
    ) {
        let cond = n.index_cond.as_deref();
        let rows = ctx.catalog.rows(rel);
        if rows < ctx.min_rows {
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
        if seen.contains(&(p.mode, idx.to_string())) {
            return;
        }
        seen.push((p.mode, idx.to_string()));
        out.push(
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
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use serde_json::json;

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
            explained("SELECT 1", vec![(Mode::Admin, PlanKind::Generic, full)]),
            explained("SELECT 2", vec![(Mode::Admin, PlanKind::Generic, fine)]),
        ];
        let mut out = Vec::new();
        FullIndexScan.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].index.as_deref(), Some("items_account_pouch"));
        assert_eq!(out[0].query.as_deref(), Some("SELECT 1"));
    }

    #[test]
    fn column_mention_is_by_word() {
        assert!(mentions_column("(account_id = 1)", "account_id"));
        assert!(!mentions_column("(x_account_id = 1)", "account_id"));
        assert!(mentions_column("(\"Weird\" = 1)", "Weird"));
    }
}
