//! What changed between two explain runs of the same statements: the base
//! (before a migration, or a previous run) and the head. Read by
//! `planck check --base` for its gate and by `planck report` for its "what
//! changed" section, so both say the same thing.
//!
//! Findings are matched by what they are about (check, statement, mode,
//! relation, index), never by message text, so a reworded message or a new
//! row count is not a change. Plans are matched per statement by mode, kind
//! (generic, custom, literal) and whose values they used, and compared by
//! shape: for each relation, how it is read (`Seq Scan`, `Index Scan using
//! items_pkey`...), and which join methods the plan uses. A cost difference
//! within the noise threshold is no change; a plan whose shape is the same
//! but whose cost moved beyond it is reported with the ratio.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::explain::{JsonFinding, JsonPlan, JsonReport};

/// The diff's own version, written beside the reports it compares.
pub const FORMAT_VERSION: u32 = 1;

/// Cost changes smaller than this ratio (either way) count as unchanged.
pub const DEFAULT_COST_NOISE: f64 = 1.2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonDiff {
    pub format_version: u32,
    /// The ratio under which a cost change is noise.
    pub cost_noise: f64,
    /// Findings the head has and the base has not.
    pub new_findings: Vec<JsonFinding>,
    /// Findings the base had and the head has not.
    pub fixed_findings: Vec<JsonFinding>,
    /// Statements whose plan changed shape, or cost beyond the noise.
    pub plan_changes: Vec<PlanChange>,
    /// Statements explained on one side only (ids).
    pub only_in_base: Vec<String>,
    pub only_in_head: Vec<String>,
    /// p95 and throughput per ladder step on both sides, when both were
    /// replayed (`planck check --base --replay`); steps run on one side only
    /// are left out.
    #[serde(default)]
    pub replay_steps: Vec<StepDelta>,
}

/// One ladder step replayed on the base and on the head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepDelta {
    pub concurrency: u32,
    pub base_p95_ms: f64,
    pub head_p95_ms: f64,
    /// head / base p95 (1.0 when the base's is 0).
    pub p95_ratio: f64,
    pub base_throughput_per_s: f64,
    pub head_throughput_per_s: f64,
}

/// The p95 and throughput of each step both replays ran, in the head's order.
pub fn replay_steps(
    base: &super::replay::ReplayReport,
    head: &super::replay::ReplayReport,
) -> Vec<StepDelta> {
    head.steps
        .iter()
        .filter_map(|h| {
            let b = base.steps.iter().find(|b| b.concurrency == h.concurrency)?;
            let ratio = if b.p95_ms > 0.0 {
                h.p95_ms / b.p95_ms
            } else {
                1.0
            };
            Some(StepDelta {
                concurrency: h.concurrency,
                base_p95_ms: b.p95_ms,
                head_p95_ms: h.p95_ms,
                p95_ratio: (ratio * 1000.0).round() / 1000.0,
                base_throughput_per_s: b.throughput_per_s,
                head_throughput_per_s: h.throughput_per_s,
            })
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanChange {
    pub statement_id: String,
    pub query: String,
    pub mode: String,
    /// `generic`, `custom` or `literal`.
    pub kind: String,
    pub tenant: Option<String>,
    /// The root's total cost on each side.
    pub base_cost: f64,
    pub head_cost: f64,
    /// head / base (1.0 when the base cost is 0).
    pub cost_ratio: f64,
    /// What changed, one line each: `items: Index Scan using items_account_idx -> Seq Scan`,
    /// `join: Nested Loop -> Hash Join`. Empty when only the cost moved.
    pub changes: Vec<String>,
    /// Indexes the base plan read and the head plan does not.
    pub indexes_no_longer_used: Vec<String>,
    /// Of those, the ones a migration of the change dropped, with the
    /// statement that dropped them (filled by `planck check --base`, which
    /// knows the migrations; empty from a plain diff of two reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<DroppedIndex>,
    /// The statement writes (its plan holds a ModifyTable node: INSERT,
    /// UPDATE, DELETE, MERGE). Its cost moving with the same plan shape is
    /// the cost of maintaining indexes, not a regression.
    #[serde(default)]
    pub write: bool,
}

/// An index a migration dropped, where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedIndex {
    pub index: String,
    /// The migration file, relative to the project, and the line of the statement.
    pub path: String,
    pub line: usize,
    /// The migration statement that had created it, when the object map knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<SourceLine>,
}

/// A file (relative to the project) and a 1-based line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceLine {
    pub path: String,
    pub line: usize,
}

impl PlanChange {
    /// One line: `items: Index Scan using i -> Seq Scan; cost x12.5; no
    /// longer uses i (dropped at migrations/0006_drop.sql:3)`.
    pub fn summary(&self) -> String {
        let mut parts = self.changes.clone();
        parts.push(format!("cost x{}", self.cost_ratio));
        for lost in self.lost_indexes() {
            parts.push(format!("no longer uses {lost}"));
        }
        parts.join("; ")
    }

    /// `events_account_created (dropped at migrations/0006_drop.sql:3)`, per lost index.
    pub fn lost_indexes(&self) -> Vec<String> {
        self.indexes_no_longer_used
            .iter()
            .map(|i| match self.dropped.iter().find(|d| &d.index == i) {
                Some(d) => format!("{i} (dropped at {}:{})", d.path, d.line),
                None => i.clone(),
            })
            .collect()
    }
}

impl JsonDiff {
    /// True when nothing changed beyond the noise.
    pub fn is_empty(&self) -> bool {
        self.new_findings.is_empty()
            && self.fixed_findings.is_empty()
            && self.plan_changes.is_empty()
            && self.only_in_base.is_empty()
            && self.only_in_head.is_empty()
    }

    /// Plan changes that made a statement worse: a cost that rose beyond the
    /// noise, or an index no longer used. A write statement whose plan kept
    /// its shape is exempt from the cost rule: an INSERT or UPDATE costs more
    /// once a new index must be maintained, and that is the price of the
    /// index, not a worse plan.
    pub fn regressions(&self) -> impl Iterator<Item = &PlanChange> {
        self.plan_changes.iter().filter(|c| {
            let same_shape_write = c.write && c.changes.is_empty();
            (c.cost_ratio >= self.cost_noise && !same_shape_write)
                || !c.indexes_no_longer_used.is_empty()
        })
    }
}

/// What a finding is about: its identity across runs.
fn finding_key(
    f: &JsonFinding,
) -> (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    (
        f.check.clone(),
        f.statement_id.clone(),
        f.mode.clone(),
        f.relation.clone(),
        f.index.clone(),
    )
}

/// Compares `head` against `base`. Statements are matched by id.
pub fn diff(base: &JsonReport, head: &JsonReport, cost_noise: f64) -> JsonDiff {
    let base_keys: BTreeSet<_> = base.findings.iter().map(finding_key).collect();
    let head_keys: BTreeSet<_> = head.findings.iter().map(finding_key).collect();
    let new_findings = head
        .findings
        .iter()
        .filter(|f| !base_keys.contains(&finding_key(f)))
        .cloned()
        .collect();
    let fixed_findings = base
        .findings
        .iter()
        .filter(|f| !head_keys.contains(&finding_key(f)))
        .cloned()
        .collect();

    let base_by_id: BTreeMap<&str, _> =
        base.statements.iter().map(|s| (s.id.as_str(), s)).collect();
    let head_by_id: BTreeMap<&str, _> =
        head.statements.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut plan_changes = Vec::new();
    for (id, h) in &head_by_id {
        let Some(b) = base_by_id.get(id) else {
            continue;
        };
        for hp in &h.plans {
            let Some(bp) = b
                .plans
                .iter()
                .find(|bp| bp.mode == hp.mode && bp.kind == hp.kind && bp.tenant == hp.tenant)
            else {
                continue;
            };
            if let Some(change) = compare_plans(id, &h.query, bp, hp, cost_noise) {
                plan_changes.push(change);
            }
        }
    }
    let explained = |r: &JsonReport| -> BTreeSet<String> {
        r.statements
            .iter()
            .filter(|s| s.status == "explained")
            .map(|s| s.id.clone())
            .collect()
    };
    let (be, he) = (explained(base), explained(head));
    JsonDiff {
        format_version: FORMAT_VERSION,
        cost_noise,
        new_findings,
        fixed_findings,
        plan_changes,
        only_in_base: be.difference(&he).cloned().collect(),
        only_in_head: he.difference(&be).cloned().collect(),
        replay_steps: Vec::new(),
    }
}

fn compare_plans(
    id: &str,
    query: &str,
    base: &JsonPlan,
    head: &JsonPlan,
    cost_noise: f64,
) -> Option<PlanChange> {
    let (b, h) = (Scaling::of(&base.plan), Scaling::of(&head.plan));
    let mut changes = Vec::new();
    let relations: BTreeSet<&String> = b.access.keys().chain(h.access.keys()).collect();
    for rel in relations {
        let (ba, ha) = (b.access.get(rel), h.access.get(rel));
        if ba != ha {
            let show = |a: Option<&Vec<String>>| {
                a.map(|v| v.join(" + "))
                    .unwrap_or_else(|| "not read".to_string())
            };
            changes.push(format!("{rel}: {} -> {}", show(ba), show(ha)));
        }
    }
    if b.joins != h.joins {
        let show = |v: &Vec<String>| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        changes.push(format!("join: {} -> {}", show(&b.joins), show(&h.joins)));
    }
    let cost_ratio = if b.cost > 0.0 { h.cost / b.cost } else { 1.0 };
    let beyond_noise = cost_ratio >= cost_noise || cost_ratio <= 1.0 / cost_noise;
    if changes.is_empty() && !beyond_noise {
        return None;
    }
    Some(PlanChange {
        statement_id: id.to_string(),
        query: query.to_string(),
        mode: head.mode.clone(),
        kind: head.kind.clone(),
        tenant: head.tenant.clone(),
        base_cost: b.cost,
        head_cost: h.cost,
        cost_ratio: (cost_ratio * 1000.0).round() / 1000.0,
        changes,
        indexes_no_longer_used: b.indexes.difference(&h.indexes).cloned().collect(),
        dropped: Vec::new(),
        write: h.writes,
    })
}

/// The parts of a plan a change is read from.
#[derive(Debug, Default)]
struct Scaling {
    /// Per relation (by alias where the plan gives one), how it is read, in plan order.
    access: BTreeMap<String, Vec<String>>,
    /// Join nodes, sorted, so two plans joining in another order but with
    /// the same methods compare equal here.
    joins: Vec<String>,
    indexes: BTreeSet<String>,
    cost: f64,
    /// A ModifyTable node somewhere in the plan.
    writes: bool,
}

impl Scaling {
    fn of(plan: &Value) -> Scaling {
        let root = plan
            .get(0)
            .and_then(|r| r.get("Plan"))
            .or_else(|| plan.get("Plan"))
            .unwrap_or(plan);
        let mut s = Scaling {
            cost: root
                .get("Total Cost")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            ..Scaling::default()
        };
        s.walk(root);
        s.joins.sort();
        s
    }

    fn walk(&mut self, node: &Value) {
        let ty = node.get("Node Type").and_then(Value::as_str).unwrap_or("?");
        let index = node.get("Index Name").and_then(Value::as_str);
        if let Some(i) = index {
            self.indexes.insert(i.to_string());
        }
        if let Some(rel) = node.get("Relation Name").and_then(Value::as_str) {
            let alias = node.get("Alias").and_then(Value::as_str).unwrap_or(rel);
            let key = if alias == rel {
                rel.to_string()
            } else {
                format!("{rel} {alias}")
            };
            // A bitmap heap scan names the relation; the bitmap index scans
            // under it name the indexes.
            let mut used: Vec<String> = index.map(str::to_string).into_iter().collect();
            if ty == "Bitmap Heap Scan" {
                bitmap_indexes(node, &mut used);
            }
            let how = if used.is_empty() {
                ty.to_string()
            } else {
                format!("{ty} using {}", used.join(", "))
            };
            self.access.entry(key).or_default().push(how);
        }
        if ty == "ModifyTable" {
            self.writes = true;
        }
        if matches!(ty, "Nested Loop" | "Hash Join" | "Merge Join") {
            self.joins.push(ty.to_string());
        }
        if let Some(children) = node.get("Plans").and_then(Value::as_array) {
            for c in children {
                self.walk(c);
            }
        }
    }
}

fn bitmap_indexes(node: &Value, out: &mut Vec<String>) {
    for c in node
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(i) = c.get("Index Name").and_then(Value::as_str) {
            out.push(i.to_string());
        }
        bitmap_indexes(c, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::explain::{JsonStatement, JsonSummary};
    use serde_json::json;

    fn plan(json: Value) -> JsonPlan {
        JsonPlan {
            mode: "admin".into(),
            kind: "custom".into(),
            tenant: None,
            tenant_id: None,
            params: vec![],
            plan: json,
        }
    }

    fn report(plans: Vec<JsonPlan>, findings: Vec<JsonFinding>) -> JsonReport {
        JsonReport {
            format_version: 1,
            statements: vec![JsonStatement {
                id: "s1".into(),
                query: "SELECT * FROM items WHERE account_id = $1".into(),
                role: None,
                mode: Some("admin".into()),
                status: "explained".into(),
                reason: None,
                planned_query: None,
                repairs: vec![],
                param_types: vec![],
                notes: vec![],
                plans,
            }],
            findings,
            summary: JsonSummary {
                explained: 1,
                skipped: 0,
                not_judged: 0,
                findings: BTreeMap::new(),
                ignored: 0,
                new_errors: 0,
            },
            environment: None,
            indexes: vec![],
            below_min_rows: None,
            not_judged_objects: None,
        }
    }

    fn seq_scan_finding(message: &str) -> JsonFinding {
        JsonFinding {
            check: "seq-scan".into(),
            severity: "error".into(),
            mode: Some("admin".into()),
            statement_id: Some("s1".into()),
            query: None,
            relation: Some("items".into()),
            index: None,
            message: message.into(),
            help: String::new(),
            baseline: false,
            location: None,
            node: None,
            advice: None,
        }
    }

    fn index_scan() -> Value {
        json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items", "Alias": "items",
                         "Index Name": "items_account_idx", "Total Cost": 8.5}}])
    }

    fn seq_scan(cost: f64) -> Value {
        json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "items", "Alias": "items",
                         "Total Cost": cost}}])
    }

    #[test]
    fn a_dropped_index_is_a_plan_change_a_new_finding_and_a_regression() {
        let base = report(vec![plan(index_scan())], vec![]);
        let head = report(
            vec![plan(seq_scan(85000.0))],
            vec![seq_scan_finding("reads 4M rows")],
        );
        let d = diff(&base, &head, DEFAULT_COST_NOISE);
        assert_eq!(d.new_findings.len(), 1);
        assert!(d.fixed_findings.is_empty());
        assert_eq!(d.plan_changes.len(), 1);
        let c = &d.plan_changes[0];
        assert_eq!(
            c.changes,
            vec!["items: Index Scan using items_account_idx -> Seq Scan".to_string()]
        );
        assert_eq!(
            c.indexes_no_longer_used,
            vec!["items_account_idx".to_string()]
        );
        assert_eq!(c.cost_ratio, 10000.0);
        assert_eq!(d.regressions().count(), 1);
        // The other way round it is a fix, and not a regression.
        let back = diff(&head, &base, DEFAULT_COST_NOISE);
        assert_eq!(back.fixed_findings.len(), 1);
        assert_eq!(back.regressions().count(), 0);
    }

    #[test]
    fn the_same_plan_within_the_noise_and_a_reworded_finding_are_no_change() {
        let base = report(
            vec![plan(seq_scan(100.0))],
            vec![seq_scan_finding("reads 4M rows")],
        );
        let head = report(
            vec![plan(seq_scan(110.0))],
            vec![seq_scan_finding("reads 4.1M rows")],
        );
        let d = diff(&base, &head, DEFAULT_COST_NOISE);
        assert!(d.is_empty(), "{d:?}");
        // Beyond the noise, the same shape is reported with its ratio only.
        let head = report(
            vec![plan(seq_scan(300.0))],
            vec![seq_scan_finding("reads 4.1M rows")],
        );
        let d = diff(&base, &head, DEFAULT_COST_NOISE);
        assert_eq!(d.plan_changes.len(), 1);
        assert!(d.plan_changes[0].changes.is_empty());
        assert_eq!(d.plan_changes[0].cost_ratio, 3.0);
    }

    /// issue 14: a cost-only move beyond the noise is a regression for a
    /// read; for a write whose plan kept its shape (the cost of maintaining a
    /// new index) it is reported but is no regression; a write that lost an
    /// index or changed shape still is one.
    #[test]
    fn a_write_whose_plan_kept_its_shape_is_no_regression_by_cost() {
        let insert = |cost: f64| {
            json!([{"Plan": {"Node Type": "ModifyTable", "Operation": "Insert",
                "Relation Name": "items", "Alias": "items", "Total Cost": cost,
                "Plans": [{"Node Type": "Result", "Total Cost": 0.01}]}}])
        };
        let d = diff(
            &report(vec![plan(insert(0.01))], vec![]),
            &report(vec![plan(insert(0.05))], vec![]),
            DEFAULT_COST_NOISE,
        );
        assert_eq!(d.plan_changes.len(), 1, "the move is still shown");
        assert!(d.plan_changes[0].write);
        assert_eq!(d.regressions().count(), 0);
        // The same cost move on a read is a regression.
        let d = diff(
            &report(vec![plan(seq_scan(100.0))], vec![]),
            &report(vec![plan(seq_scan(500.0))], vec![]),
            DEFAULT_COST_NOISE,
        );
        assert!(!d.plan_changes[0].write);
        assert_eq!(d.regressions().count(), 1);
        // A write whose shape changed (an UPDATE that lost its index) still is.
        let update = |scan: Value| {
            json!([{"Plan": {"Node Type": "ModifyTable", "Operation": "Update",
                "Relation Name": "items", "Alias": "items", "Total Cost": 9.0,
                "Plans": [scan[0]["Plan"].clone()]}}])
        };
        let d = diff(
            &report(vec![plan(update(index_scan()))], vec![]),
            &report(vec![plan(update(seq_scan(9000.0)))], vec![]),
            DEFAULT_COST_NOISE,
        );
        assert!(d.plan_changes[0].write);
        assert_eq!(d.regressions().count(), 1);
    }

    #[test]
    fn join_methods_are_compared_and_statements_on_one_side_are_listed() {
        let nl = json!([{"Plan": {"Node Type": "Nested Loop", "Total Cost": 10.0, "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "a", "Alias": "a", "Total Cost": 1.0},
            {"Node Type": "Index Scan", "Relation Name": "b", "Alias": "b", "Index Name": "b_pkey", "Total Cost": 1.0}]}}]);
        let hj = json!([{"Plan": {"Node Type": "Hash Join", "Total Cost": 10.0, "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "a", "Alias": "a", "Total Cost": 1.0},
            {"Node Type": "Hash", "Total Cost": 1.0, "Plans": [
                {"Node Type": "Index Scan", "Relation Name": "b", "Alias": "b", "Index Name": "b_pkey", "Total Cost": 1.0}]}]}}]);
        let base = report(vec![plan(nl)], vec![]);
        let mut head = report(vec![plan(hj)], vec![]);
        head.statements[0].id = "s1".into();
        let d = diff(&base, &head, DEFAULT_COST_NOISE);
        assert_eq!(
            d.plan_changes[0].changes,
            vec!["join: Nested Loop -> Hash Join".to_string()]
        );
        assert!(d.plan_changes[0].indexes_no_longer_used.is_empty());
        head.statements[0].id = "s2".into();
        let d = diff(&base, &head, DEFAULT_COST_NOISE);
        assert_eq!(d.only_in_base, vec!["s1".to_string()]);
        assert_eq!(d.only_in_head, vec!["s2".to_string()]);
        assert!(d.plan_changes.is_empty());
    }
}
