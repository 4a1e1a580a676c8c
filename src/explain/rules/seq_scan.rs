//! `seq-scan`: a whole-table scan of a table above the row threshold.
//!
//! What counts is the rows the plan is estimated to read in one execution
//! (issue 13 §4), not the table's size: a scan under a Limit that stops early
//! (`SELECT 1 FROM t LIMIT 1`) reads a few rows and is no finding. A
//! statement that asks for whole tables (no WHERE, no LIMIT:
//! `SELECT count(*) FROM t`, over joins too) reads them by design:
//! informational, and so does an UPDATE or DELETE of every row (`UPDATE t
//! SET c = $1`, issue 47), except where the scan runs in a subquery of its
//! own (a correlated SubPlan reads its table once per row, which an index
//! serves). So does a scan whose filter keeps most of the table's rows
//! (`WHERE active = $1` over a half-true column, `WHERE NOT (name = $1)`:
//! [`MOST`] of the table or more, no Limit stopping it early): an index
//! would fetch the same rows one by one, touching every page anyway, and the
//! planner rightly prefers the scan; what would make it selective is the
//! data, not an index. A filter the planner had no statistics for (an
//! expression such as `LENGTH(title) > $1`, issue 47's bakerydemo) is
//! estimated at its default third of the rows ([`GUESSED`]): that is no
//! measure of what the filter keeps, so where every custom plan's scan rests
//! on that guess the finding is a warning saying so (`--analyze` measures it).

use std::collections::BTreeMap;

use crate::explain::plan_tree::{Mode, PlanKind};

use super::check::in_subquery;
use super::{
    Check, CheckId, Ctx, Finding, Severity, declare_check, describe, finding, generic_only,
    judged_plans, node_json, plan_index, reads_all_by_design, rows_read_in,
};
use crate::explain::plan_tree::Plan;

/// The share of a table's rows a scan's filter must keep for the scan to be
/// a whole-table read by design (issue 47: "most" of them; issue 13 had 90 %,
/// which left filters keeping half the rows, booleans and three-valued
/// columns, as errors no index could fix): the rows out against the rows the
/// filter removed, measured with --analyze, else as the planner estimates.
pub const MOST: f64 = 0.5;

/// The planner's selectivity for a range comparison it has no statistics
/// for (selfuncs.h's `DEFAULT_INEQ_SEL`): the estimate of a scan whose
/// filter is `f(col) > x`, whatever the data.
pub const GUESSED: f64 = 1.0 / 3.0;

declare_check! {
    /// add an index that leads with the columns the statement filters or joins on, or raise
    /// --min-rows if the table stays small
    pub struct SeqScan => "seq-scan";
}

/// A plan's index among the statement's plans and a node's path in it.
type NodeAt = (usize, Vec<usize>);

/// The plans that show a scan: their descriptions and kinds, the node the
/// finding points at, the smallest share of the table a scan there keeps,
/// when every one of them reads it all through a filter keeping [`MOST`] or
/// more (`Some(None)` otherwise, `None` while only guessed scans were seen),
/// whether every scan is the statement's own read of all rows by design
/// (none in a subquery), and whether a custom plan's scan rests on the
/// planner's guess ([`GUESSED`]) with none measured.
type Hit = (
    Vec<String>,
    Vec<PlanKind>,
    NodeAt,
    Option<Option<f64>>,
    bool,
    Guess,
);

/// Whether the custom plans' scans of a table rest on the planner's default
/// guess for their filter: `guessed` when one does, `measured` when one
/// does not (a generic plan's scan is neither: its parameters are always
/// guessed at).
#[derive(Default, Clone, Copy)]
struct Guess {
    guessed: bool,
    measured: bool,
}

impl Check for SeqScan {
    fn id(&self) -> CheckId {
        CheckId::SeqScan
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.explained() {
            let by_design = reads_all_by_design(&e.text);
            // (mode, table) -> the plans that scan it.
            let mut hits: BTreeMap<(Mode, String), Hit> = BTreeMap::new();
            for p in judged_plans(e) {
                for n in p.nodes() {
                    let Some(rel) = n.relation.clone().filter(|_| n.is_seq_scan()) else {
                        continue;
                    };
                    let rows = ctx.catalog.rows(&rel);
                    let read = rows_read_in(e, p, &n.path, rows);
                    if rows >= ctx.min_rows && read >= ctx.min_rows as f64 {
                        let share = kept_share(p, &n.path, rows);
                        let guessed = p.kind != PlanKind::Generic
                            && share.is_some_and(|k| is_guess(k, rows))
                            && node_json(p, &n.path).is_some_and(|j| {
                                j.get("Actual Rows").is_none()
                                    && j.get("Filter").and_then(|f| f.as_str()).is_some_and(
                                        |f| [" > ", " < ", " >= ", " <= "].iter().any(|op| f.contains(op)),
                                    )
                            });
                        let kept = share.filter(|k| *k >= MOST && read >= rows as f64);
                        let design = by_design && !in_subquery(p, &n.path);
                        // The first node found is the one the finding points at.
                        let (v, kinds, _, near, all_design, guess) =
                            hits.entry((p.mode, rel)).or_insert_with(|| {
                                (
                                    Vec::new(),
                                    Vec::new(),
                                    (plan_index(e, p), n.path.clone()),
                                    None,
                                    design,
                                    Guess::default(),
                                )
                            });
                        if guessed {
                            guess.guessed = true;
                        } else {
                            guess.measured |= p.kind != PlanKind::Generic;
                            *near = Some(match (*near, kept) {
                                (None, k) => k,
                                (Some(Some(a)), Some(b)) => Some(a.min(b)),
                                _ => None,
                            });
                        }
                        *all_design &= design;
                        let d = describe(p);
                        if !v.contains(&d) {
                            v.push(d);
                        }
                        kinds.push(p.kind);
                    }
                }
            }
            for ((mode, rel), (plans, kinds, (plan, path), near, by_design, guess)) in hits {
                if literal_avoids(e, mode, &rel) {
                    continue;
                }
                let rows = crate::output::count(ctx.catalog.rows(&rel));
                let (severity, message) = if by_design {
                    (
                        Severity::Info,
                        format!(
                            "reads all of {rel}, {rows} rows: the statement has no WHERE and no LIMIT"
                        ),
                    )
                } else if guess.guessed && !guess.measured {
                    (
                        Severity::Warning,
                        format!(
                            "Seq Scan on {rel} ({rows} rows) in the {}: the planner has no statistics \
                             for its filter and guessed it keeps a third of the rows, so whether an \
                             index would read fewer is unknown (explain --analyze measures it)",
                            plans.join(", ")
                        ),
                    )
                } else if let Some(kept) = near.flatten() {
                    (
                        Severity::Info,
                        format!(
                            "reads all of {rel}, {rows} rows: its filter keeps an estimated {} % of them, so no index would read fewer",
                            (kept * 100.0).floor().min(100.0)
                        ),
                    )
                } else {
                    (
                        Severity::Error,
                        format!(
                            "Seq Scan on {rel} ({rows} rows) in the {}",
                            plans.join(", ")
                        ),
                    )
                };
                let f = finding(self, severity, message)
                    .statement(&e.stmt, mode)
                    .relation(rel)
                    .node(plan, &path);
                out.extend(generic_only(ctx, e, mode, &kinds, f));
            }
        }
    }
}

/// The share of a table of `rows` rows that the scan at `path` in `p`
/// returns through its filter (`None` without a filter): measured, with
/// --analyze, as its actual rows out over those and the rows its filter
/// removed; else as the planner estimates it, its rows out over the
/// table's. A parallel scan's estimated rows are per process: times the
/// planner's parallel divisor (the workers the Gather above it plans, and
/// the leader's share, as costsize.c's `get_parallel_divisor` computes it).
fn kept_share(p: &Plan, path: &[usize], rows: u64) -> Option<f64> {
    let node = node_json(p, path)?;
    node.get("Filter")?;
    let f = |k: &str| node.get(k).and_then(serde_json::Value::as_f64);
    if let (Some(out), Some(removed)) = (f("Actual Rows"), f("Rows Removed by Filter"))
        && out + removed > 0.0
    {
        return Some(out / (out + removed));
    }
    let mut out = node.get("Plan Rows")?.as_f64()?;
    if node.get("Node Type").and_then(serde_json::Value::as_str) == Some("Parallel Seq Scan") {
        let workers = (0..path.len())
            .rev()
            .filter_map(|k| node_json(p, &path[..k]))
            .find(|n| {
                matches!(
                    n.get("Node Type").and_then(serde_json::Value::as_str),
                    Some("Gather" | "Gather Merge")
                )
            })
            .and_then(|g| g.get("Workers Planned"))
            .and_then(serde_json::Value::as_f64)?;
        let leader = 1.0 - 0.3 * workers;
        out *= workers + leader.max(0.0);
    }
    (rows > 0).then(|| out / rows as f64)
}

/// Whether a share `k` of a table of `rows` rows is the planner's default
/// guess ([`GUESSED`]), to the row: a share its statistics gave (a column
/// whose three values each hold a third, `note = $1`) is the same only by
/// chance, and only with an equality, which the caller rules out (the guess
/// is a range comparison's).
fn is_guess(k: f64, rows: u64) -> bool {
    (k - GUESSED).abs() * rows as f64 <= (rows as f64 * 1e-4).max(1.0)
}

/// Whether a plan of `e` with a partial index's literals put back (a
/// `literal` plan, see unused-partial-index) reads `rel` without a Seq Scan:
/// the scan is the placeholder's doing, not the statement's (issue 13 §5).
fn literal_avoids(e: &crate::explain::engine::Explained, mode: Mode, rel: &str) -> bool {
    e.plans
        .iter()
        .filter(|p| p.kind == PlanKind::Literal && p.mode == mode)
        .any(|p| {
            !p.nodes()
                .iter()
                .any(|n| n.is_seq_scan() && n.relation.as_deref() == Some(rel))
        })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use serde_json::json;

    fn scan(rel: &str) -> serde_json::Value {
        json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": rel, "Total Cost": 100.0}}])
    }

    #[test]
    fn flags_big_tables_only_in_judged_modes() {
        let cat = catalog(&[("events", 20_000), ("rate_limits", 10)], vec![]);
        // A WHERE: without one, the whole table is what the statement asks for.
        let mut e = explained(
            "SELECT * FROM events WHERE kind = $1",
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

    #[test]
    fn issue13_a_scan_the_literal_plan_avoids_is_not_reported() {
        let cat = catalog(&[("checks", 50_000)], vec![]);
        let uses = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "checks",
            "Index Name": "checks_not_down"}}]);
        let mut fixed = explained(
            "SELECT * FROM checks WHERE alert_after < $1 AND NOT (status = $2)",
            vec![
                (Mode::Admin, PlanKind::Generic, scan("checks")),
                (Mode::Admin, PlanKind::Literal, uses),
            ],
        );
        fixed.judged = vec![Mode::Admin];
        let mut still = explained(
            "SELECT * FROM checks WHERE alert_after < $1 AND kind = $2",
            vec![
                (Mode::Admin, PlanKind::Generic, scan("checks")),
                (Mode::Admin, PlanKind::Literal, scan("checks")),
            ],
        );
        still.judged = vec![Mode::Admin];
        let results = [fixed, still];
        let mut out = Vec::new();
        SeqScan.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].query.as_deref().unwrap().contains("kind = $2"));
    }

    /// Issue 13 §1: `api_key LIKE $1` scans in the generic plan only.
    #[test]
    fn issue13_generic_only_scans_follow_the_generic_setting() {
        use crate::explain::options::GenericPlans;
        let cat = catalog(&[("keys", 50_000)], vec![]);
        let uses = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "keys",
            "Index Name": "keys_api_key"}}]);
        let mut generic_only = explained(
            "SELECT * FROM keys WHERE api_key LIKE $1",
            vec![
                (Mode::Admin, PlanKind::Generic, scan("keys")),
                (Mode::Admin, PlanKind::Custom, uses),
            ],
        );
        generic_only.judged = vec![Mode::Admin];
        let mut both = explained(
            "SELECT * FROM keys WHERE note = $1",
            vec![
                (Mode::Admin, PlanKind::Generic, scan("keys")),
                (Mode::Admin, PlanKind::Custom, scan("keys")),
            ],
        );
        both.judged = vec![Mode::Admin];
        let results = [generic_only, both];
        let run = |generic| {
            let mut c = ctx(&cat, &results);
            c.generic = generic;
            let mut out = Vec::new();
            SeqScan.run(&c, &mut out);
            out.into_iter()
                .map(|f| (f.query.unwrap(), f.severity, f.message))
                .collect::<Vec<_>>()
        };
        let warn = run(GenericPlans::Warn);
        assert_eq!(warn.len(), 2, "{warn:?}");
        assert_eq!(warn[0].1, Severity::Warning);
        assert!(
            warn[0].2.contains("only the generic plan shows it"),
            "{}",
            warn[0].2
        );
        assert_eq!(warn[1].1, Severity::Error);
        assert!(!warn[1].2.contains("only the generic plan"));
        let judge = run(GenericPlans::Judge);
        assert!(judge.iter().all(|f| f.1 == Severity::Error), "{judge:?}");
        let ignore = run(GenericPlans::Ignore);
        assert_eq!(ignore.len(), 1);
        assert!(ignore[0].0.contains("note = $1"));
    }

    /// `.exists()`: a Limit pulls one row of a 160,000-row scan.
    fn limited(limit_total: f64, below: serde_json::Value) -> serde_json::Value {
        json!([{"Plan": {"Node Type": "Limit", "Startup Cost": 0.0, "Total Cost": limit_total,
            "Plan Rows": 1, "Plans": [below]}}])
    }

    #[test]
    fn issue13_scan_under_an_early_limit_is_not_a_whole_table_read() {
        let cat = catalog(&[("flips", 160_000)], vec![]);
        let scan = json!({"Node Type": "Seq Scan", "Relation Name": "flips",
            "Parent Relationship": "Outer", "Startup Cost": 0.0, "Total Cost": 2500.0,
            "Plan Rows": 160000});
        // The same scan behind a Sort: the Limit stops nothing below it.
        let sorted = json!({"Node Type": "Sort", "Parent Relationship": "Outer",
            "Startup Cost": 20000.0, "Total Cost": 20400.0, "Plan Rows": 160000,
            "Plans": [scan.clone()]});
        // A filter that keeps one row: the Limit waits for the whole scan.
        let filtered = json!({"Node Type": "Seq Scan", "Relation Name": "flips",
            "Parent Relationship": "Outer", "Startup Cost": 0.0, "Total Cost": 2900.0,
            "Plan Rows": 1, "Filter": "(email = 'a'::text)"});
        let results = [
            explained(
                "SELECT 1 FROM flips LIMIT 1",
                vec![(Mode::Admin, PlanKind::Custom, limited(0.02, scan))],
            ),
            explained(
                "SELECT 1 FROM flips ORDER BY x LIMIT 1",
                vec![(Mode::Admin, PlanKind::Custom, limited(20400.0, sorted))],
            ),
            explained(
                "SELECT 1 FROM flips WHERE email = $1 LIMIT 21",
                vec![(Mode::Admin, PlanKind::Custom, limited(2900.0, filtered))],
            ),
        ];
        let mut out = Vec::new();
        SeqScan.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out.iter().map(|f| f.query.as_deref().unwrap()).collect();
        assert_eq!(
            got,
            vec![
                "SELECT 1 FROM flips ORDER BY x LIMIT 1",
                "SELECT 1 FROM flips WHERE email = $1 LIMIT 21"
            ]
        );
        assert!(out.iter().all(|f| f.severity == Severity::Error));
    }

    /// Issue 13 §4: `WHERE NOT (name = $1)` keeps nearly every row: the
    /// whole-table read is the statement's design (info); a selective
    /// filter, or a near-total one a Limit stops early, is judged as before.
    #[test]
    fn issue13_a_filter_keeping_nearly_every_row_reads_all_by_design() {
        let cat = catalog(&[("checks", 20_000)], vec![]);
        let filtered = |rows: f64| {
            json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "checks",
                "Total Cost": 400.0, "Plan Rows": rows, "Filter": "(name <> 'x'::text)"}}])
        };
        // A parallel scan's rows are per process: 2 workers and the leader
        // (divisor 2.4), 7,900 each, 94.8 % of the table.
        let parallel = json!([{"Plan": {"Node Type": "Gather", "Workers Planned": 2,
            "Total Cost": 400.0, "Plan Rows": 18960, "Plans": [{"Node Type": "Parallel Seq Scan",
            "Relation Name": "checks", "Parent Relationship": "Outer", "Total Cost": 300.0,
            "Plan Rows": 7900, "Filter": "(name <> 'x'::text)"}]}}]);
        let results = [
            explained(
                "SELECT id FROM checks WHERE NOT (name = $1)",
                vec![(Mode::Admin, PlanKind::Custom, filtered(19_999.0))],
            ),
            explained(
                "SELECT id FROM checks WHERE name <> $1",
                vec![(Mode::Admin, PlanKind::Custom, parallel)],
            ),
            // True positives: a selective filter, and one keeping 30 %
            // (issue 47: one keeping most rows is by design, see below).
            explained(
                "SELECT id FROM checks WHERE name = $1",
                vec![(Mode::Admin, PlanKind::Custom, filtered(1.0))],
            ),
            explained(
                "SELECT id FROM checks WHERE kind = $1",
                vec![(Mode::Admin, PlanKind::Custom, filtered(6_000.0))],
            ),
            // Near-total in one plan, selective in the other: judged.
            explained(
                "SELECT id FROM checks WHERE owner = $1",
                vec![
                    (Mode::Admin, PlanKind::Custom, filtered(19_000.0)),
                    (Mode::Admin, PlanKind::Generic, filtered(3.0)),
                ],
            ),
        ];
        let mut out = Vec::new();
        SeqScan.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|f| (f.query.as_deref().unwrap(), f.severity, f.message.as_str()))
            .collect();
        let info = |q| {
            (
                q,
                Severity::Info,
                "reads all of checks, 20,000 rows: its filter keeps an estimated 99 % of them, so no index would read fewer",
            )
        };
        assert_eq!(got.len(), 5, "{got:#?}");
        assert_eq!(got[0], info("SELECT id FROM checks WHERE NOT (name = $1)"));
        assert_eq!(
            got[1],
            (
                "SELECT id FROM checks WHERE name <> $1",
                Severity::Info,
                "reads all of checks, 20,000 rows: its filter keeps an estimated 94 % of them, so no index would read fewer"
            )
        );
        for f in &got[2..] {
            assert_eq!(f.1, Severity::Error, "{f:?}");
            assert!(f.2.starts_with("Seq Scan on checks"), "{f:?}");
        }
    }

    #[test]
    fn issue13_no_where_no_limit_reads_all_by_design() {
        let cat = catalog(&[("pings", 50_000)], vec![]);
        let results = [
            explained(
                "SELECT count(*) FROM pings",
                vec![(Mode::Admin, PlanKind::Custom, scan("pings"))],
            ),
            explained(
                "SELECT count(*) FROM pings JOIN kinds ON kinds.id = pings.kind_id",
                vec![(Mode::Admin, PlanKind::Custom, scan("pings"))],
            ),
            explained(
                "SELECT count(*) FROM pings WHERE kind = $1",
                vec![(Mode::Admin, PlanKind::Custom, scan("pings"))],
            ),
        ];
        let mut out = Vec::new();
        SeqScan.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|f| (f.severity, f.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Severity::Info,
                    "reads all of pings, 50,000 rows: the statement has no WHERE and no LIMIT"
                ),
                (
                    Severity::Info,
                    "reads all of pings, 50,000 rows: the statement has no WHERE and no LIMIT"
                ),
                (
                    Severity::Error,
                    "Seq Scan on pings (50,000 rows) in the custom plan (heaviest tenant)"
                )
            ]
        );
    }

    /// A correlated subquery in an UPDATE of every row.
    const RESYNC: &str = "UPDATE threads SET last_id = (SELECT max(id) FROM posts WHERE posts.thread_id = threads.id)";

    /// Issue 47: statements that read every row by design are no error:
    /// an UPDATE or DELETE with no WHERE, and a filter keeping most rows
    /// (estimated, or measured with --analyze, which wins); a correlated
    /// subquery's scan inside such an UPDATE is still the error it is.
    #[test]
    fn whole_table_writes_and_filters_keeping_most_rows_are_not_index_errors() {
        let cat = catalog(
            &[("notes", 20_000), ("threads", 20_000), ("posts", 50_000)],
            vec![],
        );
        let write = |op: &str, rel: &str| {
            json!([{"Plan": {"Node Type": "ModifyTable", "Operation": op, "Relation Name": rel,
                "Total Cost": 400.0, "Plans": [{"Node Type": "Seq Scan", "Relation Name": rel,
                "Parent Relationship": "Outer", "Total Cost": 400.0, "Plan Rows": 20000}]}}])
        };
        let resync = json!([{"Plan": {"Node Type": "ModifyTable", "Operation": "Update",
            "Relation Name": "threads", "Total Cost": 9e6, "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "threads", "Parent Relationship": "Outer",
                 "Total Cost": 9e6, "Plan Rows": 20000, "Plans": [
                    {"Node Type": "Aggregate", "Parent Relationship": "SubPlan",
                     "Subplan Name": "SubPlan 1", "Total Cost": 450.0, "Plans": [
                        {"Node Type": "Seq Scan", "Relation Name": "posts",
                         "Parent Relationship": "Outer", "Total Cost": 440.0, "Plan Rows": 3,
                         "Filter": "(thread_id = threads.id)"}]}]}]}}]);
        let filtered = |est: f64, actual: Option<(f64, f64)>| {
            let mut n = json!({"Node Type": "Seq Scan", "Relation Name": "notes",
                "Total Cost": 400.0, "Plan Rows": est, "Filter": "(active = true)"});
            if let Some((out, removed)) = actual {
                n["Actual Rows"] = out.into();
                n["Rows Removed by Filter"] = removed.into();
            }
            json!([{"Plan": n}])
        };
        let one = |q: &str, plan| explained(q, vec![(Mode::Admin, PlanKind::Custom, plan)]);
        let results = [
            one("UPDATE notes SET created_at = $1", write("Update", "notes")),
            one("DELETE FROM notes", write("Delete", "notes")),
            one(RESYNC, resync),
            one(
                "SELECT id FROM notes WHERE active = $1",
                filtered(10_000.0, None),
            ),
            one(
                "SELECT id FROM notes WHERE kept = $1",
                filtered(15_000.0, Some((9_000.0, 11_000.0))),
            ),
            one(
                "UPDATE notes SET n = $1 WHERE id > $2",
                write("Update", "notes"),
            ),
        ];
        let mut out = Vec::new();
        SeqScan.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|f| {
                (
                    f.query.as_deref().unwrap(),
                    f.relation.as_deref().unwrap(),
                    f.severity,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("UPDATE notes SET created_at = $1", "notes", Severity::Info),
                ("DELETE FROM notes", "notes", Severity::Info),
                (RESYNC, "posts", Severity::Error),
                (RESYNC, "threads", Severity::Info),
                (
                    "SELECT id FROM notes WHERE active = $1",
                    "notes",
                    Severity::Info
                ),
                (
                    "SELECT id FROM notes WHERE kept = $1",
                    "notes",
                    Severity::Error
                ),
                (
                    "UPDATE notes SET n = $1 WHERE id > $2",
                    "notes",
                    Severity::Error
                ),
            ]
        );
        assert_eq!(
            out[4].message,
            "reads all of notes, 20,000 rows: its filter keeps an estimated 50 % of them, so no \
             index would read fewer"
        );
    }
}
