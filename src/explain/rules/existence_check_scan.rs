//! `existence-check-scan`: a scan under a LIMIT that looks cheap because the
//! Limit stops it at the first match, where that early stop rests on the
//! planner's default guess for a filter on a function of a column (issue
//! 47's pretix: `SELECT 1 FROM vouchers WHERE UPPER(code) = UPPER($1)
//! LIMIT 1`, Django's `code__iexact=...).exists()`).
//!
//! The planner has no statistics for `upper(code)` and guesses that 0.5 %
//! of the rows match ([`GUESSED_EQ`]), so it costs the Limit as reading 200
//! of 80,000 rows, and `seq-scan` and `full-index-scan` (which judge what
//! the plan is estimated to read) are silent. But an existence check of a
//! value no row holds (a fresh voucher code, a free slug) matches nothing,
//! and the Limit never stops: the scan, a Seq Scan or an index read whole
//! with the filter on its entries, reads every row. Nothing is measured
//! here: where the statistics give the estimate (a plain column, a
//! function of the parameter only, `code = upper($1)`), the early stop is
//! the planner's to judge, as before.

use super::{
    Check, CheckId, Ctx, Finding, Severity, declare_check, describe, finding, generic_only,
    judged_plans, node_json, plan_index, rows_read_in,
};
use crate::explain::plan_tree::{Mode, Plan, PlanKind};

/// The planner's selectivity for a clause on an expression it has no
/// statistics for: an equality (1 / selfuncs.h's `DEFAULT_NUM_DISTINCT`,
/// 200), as `DEFAULT_EQ_SEL`, `DEFAULT_MATCH_SEL` (LIKE) and
/// `DEFAULT_UNK_SEL` are: the estimate of `upper(code) = $1`, whatever the
/// data holds.
pub const GUESSED_EQ: f64 = 1.0 / 200.0;

declare_check! {
    /// index the expression the filter compares (`CREATE INDEX ON t (upper(code))`), so the
    /// check reads only the rows that match, or compare the column itself
    pub struct ExistenceCheckScan => "existence-check-scan";
}

impl Check for ExistenceCheckScan {
    fn id(&self) -> CheckId {
        CheckId::ExistenceCheckScan
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.explained() {
            let mut hits: Vec<Hit> = Vec::new();
            for p in judged_plans(e) {
                for n in p.nodes() {
                    let Some(rel) = n.relation.clone() else {
                        continue;
                    };
                    if !(n.is_seq_scan() || n.is_index_scan()) {
                        continue;
                    }
                    let rows = ctx.catalog.rows(&rel);
                    if rows < ctx.min_rows
                        || rows_read_in(e, p, &n.path, rows) >= ctx.min_rows as f64
                        || !stop_rests_on_guess(ctx, p, &n.path, &rel, rows)
                    {
                        continue;
                    }
                    let what = match &n.index {
                        Some(i) => format!("{} of {i}, read whole,", n.node_type),
                        None => n.node_type.clone(),
                    };
                    let at = hits.iter().position(|h| h.mode == p.mode && h.rel == rel);
                    let h = match at {
                        Some(i) => &mut hits[i],
                        None => {
                            hits.push(Hit {
                                mode: p.mode,
                                rel: rel.clone(),
                                plans: Vec::new(),
                                kinds: Vec::new(),
                                node: (plan_index(e, p), n.path.clone()),
                                what,
                            });
                            hits.last_mut().expect("just pushed")
                        }
                    };
                    let d = describe(p);
                    if !h.plans.contains(&d) {
                        h.plans.push(d);
                    }
                    h.kinds.push(p.kind);
                }
            }
            for Hit {
                mode,
                rel,
                plans,
                kinds,
                node: (plan, path),
                what,
            } in hits
            {
                let rows = crate::output::count(ctx.catalog.rows(&rel));
                let message = format!(
                    "{what} on {rel} ({rows} rows) under a LIMIT in the {}: the Limit stops it \
                     early only where rows match, and the planner, with no statistics for the \
                     filter's expression, guessed 0.5 % of them do; when none does (an existence \
                     check of a new value) it reads all {rows}",
                    plans.join(", ")
                );
                let f = finding(self, Severity::Error, message)
                    .statement(&e.stmt, mode)
                    .relation(rel)
                    .node(plan, &path);
                out.extend(generic_only(ctx, e, mode, &kinds, f));
            }
        }
    }
}

/// A table a statement's plans read this way in one mode: the plans that
/// show it, their kinds, the node the finding points at (the first found)
/// and how it reads (`Seq Scan`, `Index Only Scan of i, read whole,`).
struct Hit {
    mode: Mode,
    rel: String,
    plans: Vec<String>,
    kinds: Vec<PlanKind>,
    node: (usize, Vec<usize>),
    what: String,
}

/// Whether the scan at `path` in `p` (of `rel`, `rows` rows), which a Limit
/// above it stops early on the planner's estimate, owes that estimate to
/// the planner's default guess ([`GUESSED_EQ`]) for a filter on a function
/// of one of `rel`'s columns (`upper((code)::text) = 'X'::text`), with no
/// index condition narrowing it: no statistics say how many rows match,
/// and an existence check of a value none holds reads them all. Not for a
/// function of a parameter only (`code = upper($1)`: the column's
/// statistics give the estimate).
fn stop_rests_on_guess(ctx: &Ctx, p: &Plan, path: &[usize], rel: &str, rows: u64) -> bool {
    let Some(node) = node_json(p, path) else {
        return false;
    };
    let Some(filter) = node.get("Filter").and_then(serde_json::Value::as_str) else {
        return false;
    };
    if node.get("Index Cond").is_some() || rows == 0 {
        return false;
    }
    let Some(est) = node.get("Plan Rows").and_then(serde_json::Value::as_f64) else {
        return false;
    };
    let Some(table) = ctx.catalog.tables.get(rel) else {
        return false;
    };
    // The planner rounds its row estimates: the guess to the row.
    let all = rows as f64;
    (est - all * GUESSED_EQ).abs() <= (all * 1e-4).max(1.0)
        && call_arguments(filter).iter().any(|args| {
            table
                .columns
                .iter()
                .any(|c| super::full_index_scan::mentions_column(args, c))
        })
}

/// The argument lists of the function calls in a plan's condition, as the
/// server prints it: a name followed at once by `(` (`upper((code)::text)`;
/// `= ANY (...)` and `NOT (...)` have a space).
fn call_arguments(cond: &str) -> Vec<&str> {
    use crate::params::binding::{Tok, lex};
    let toks: Vec<_> = lex(cond)
        .into_iter()
        .filter(|t| !matches!(t.kind, Tok::Space | Tok::Comment))
        .collect();
    let mut out = Vec::new();
    for (i, w) in toks.iter().enumerate() {
        let Some(open) = toks.get(i + 1) else { break };
        if !matches!(w.kind, Tok::Word | Tok::Quoted)
            || open.kind != Tok::Punct('(')
            || open.start != w.end
        {
            continue;
        }
        let mut depth = 0usize;
        for t in &toks[i + 1..] {
            match t.kind {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => {
                    depth -= 1;
                    if depth == 0 {
                        out.push(&cond[open.end..t.start]);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use serde_json::json;

    /// A Limit over `scan`, costed as the planner does: it stops after
    /// 1 / `est` of the scan's cost.
    fn limited(est: f64, mut scan: serde_json::Value) -> serde_json::Value {
        scan["Parent Relationship"] = "Outer".into();
        scan["Startup Cost"] = 0.0.into();
        scan["Total Cost"] = 1700.0.into();
        scan["Plan Rows"] = est.into();
        json!([{"Plan": {"Node Type": "Limit", "Startup Cost": 0.0, "Total Cost": 1700.0 / est,
            "Plan Rows": 1, "Plans": [scan]}}])
    }

    fn seq(filter: &str) -> serde_json::Value {
        json!({"Node Type": "Seq Scan", "Relation Name": "vouchers", "Filter": filter})
    }

    /// Issue 47 (pretix's voucher code generation): `SELECT 1 FROM vouchers
    /// WHERE UPPER(code) = UPPER($1) LIMIT 1` over 80,000 rows, as a Seq
    /// Scan and as an Index Only Scan of another index read whole: the
    /// planner guesses 400 matches, so the Limit looks to read 200 rows; a
    /// fresh code matches none and the scan reads them all. The same Limit
    /// over a filter whose estimate the statistics gave (400 of 80,000 with
    /// no function of a column; 5 %), a function of the parameter only, or
    /// an index condition, is no finding.
    #[test]
    fn a_limit_stopping_on_the_planners_guess_for_an_expression_reads_all() {
        let cat = catalog(&[("vouchers", 80_000)], vec![]);
        let one = |q: &str, plan| explained(q, vec![(Mode::Admin, PlanKind::Custom, plan)]);
        let upper = "(upper(status) = 'ABC'::text)";
        let index_only = json!({"Node Type": "Index Only Scan", "Relation Name": "vouchers",
            "Index Name": "vouchers_status_like", "Filter": upper});
        let narrowed = json!({"Node Type": "Index Scan", "Relation Name": "vouchers",
            "Index Name": "vouchers_account", "Index Cond": "(account_id = 1)", "Filter": upper});
        let results = [
            one(
                "SELECT 1 FROM vouchers WHERE UPPER(status) = UPPER($1) LIMIT 1",
                limited(400.0, seq(upper)),
            ),
            one(
                "SELECT 1 AS a FROM vouchers WHERE UPPER(status) = UPPER($1) LIMIT 1",
                limited(400.0, index_only),
            ),
            one(
                "SELECT 1 FROM vouchers WHERE status = $1 LIMIT 1",
                limited(400.0, seq("(status = 'abc'::text)")),
            ),
            one(
                "SELECT 1 FROM vouchers WHERE UPPER(status) = $1 LIMIT 1",
                limited(4_000.0, seq(upper)),
            ),
            one(
                "SELECT 1 FROM vouchers WHERE status = UPPER($1) LIMIT 1",
                limited(400.0, seq("((status)::text = upper(($1)::text))")),
            ),
            one(
                "SELECT 1 FROM vouchers WHERE account_id = $2 AND UPPER(status) = $1 LIMIT 1",
                limited(400.0, narrowed),
            ),
        ];
        let out = findings_of(&ExistenceCheckScan, &ctx(&cat, &results));
        let got: Vec<_> = out
            .iter()
            .map(|f| (f.query.as_deref().unwrap(), f.severity, f.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "SELECT 1 FROM vouchers WHERE UPPER(status) = UPPER($1) LIMIT 1",
                    Severity::Error,
                    "Seq Scan on vouchers (80,000 rows) under a LIMIT in the custom plan \
                     (heaviest tenant): the Limit stops it early only where rows match, and the \
                     planner, with no statistics for the filter's expression, guessed 0.5 % of \
                     them do; when none does (an existence check of a new value) it reads all \
                     80,000"
                ),
                (
                    "SELECT 1 AS a FROM vouchers WHERE UPPER(status) = UPPER($1) LIMIT 1",
                    Severity::Error,
                    "Index Only Scan of vouchers_status_like, read whole, on vouchers (80,000 \
                     rows) under a LIMIT in the custom plan (heaviest tenant): the Limit stops it \
                     early only where rows match, and the planner, with no statistics for the \
                     filter's expression, guessed 0.5 % of them do; when none does (an existence \
                     check of a new value) it reads all 80,000"
                ),
            ]
        );
    }

    #[test]
    fn call_arguments_are_the_calls_not_any_or_not() {
        assert_eq!(
            call_arguments(
                "((upper((code)::text) = 'X'::text) AND (NOT (a = ANY ('{1}'::int[]))))"
            ),
            vec!["(code)::text"]
        );
        assert_eq!(
            call_arguments("lower(coalesce(name, ''::text))"),
            vec!["coalesce(name, ''::text)", "name, ''::text"]
        );
    }
}
