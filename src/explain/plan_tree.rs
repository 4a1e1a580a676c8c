//! The plan model: PostgreSQL's `EXPLAIN (FORMAT JSON)` output, kept as it
//! is (so PEV2 and friends can show it), with a flat view of its nodes for
//! the checks.

use serde_json::Value;

pub use crate::tenancy::Mode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// The plan a prepared statement falls back to: no parameter values.
    Generic,
    /// Planned with real values taken from the data.
    Custom,
    /// Custom plan with a partial index's literal put back (see unused-partial-index).
    Literal,
}

impl PlanKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanKind::Generic => "generic",
            PlanKind::Custom => "custom",
            PlanKind::Literal => "literal",
        }
    }
}

/// One plan of one statement.
#[derive(Debug, Clone)]
pub struct Plan {
    pub mode: Mode,
    pub kind: PlanKind,
    /// Which tenant's values (`heaviest`, `median`), for custom plans.
    pub tenant: Option<String>,
    pub tenant_id: Option<String>,
    /// The values bound to `$1..$n` (text form), `None` for NULL.
    pub params: Vec<Option<String>>,
    /// EXPLAIN's JSON, untouched.
    pub json: Value,
    /// [`Plan::nodes`], flattened once: every check walks the nodes of
    /// every plan, and walking the JSON each time was most of the checks'
    /// time on a thousand statements.
    pub flat: std::sync::OnceLock<Vec<Node>>,
}

/// One node of a plan tree, flattened.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// Child indexes from the root to this node (`[]` is the root).
    pub path: Vec<usize>,
    pub node_type: String,
    pub relation: Option<String>,
    pub index: Option<String>,
    pub index_cond: Option<String>,
    pub filter: Option<String>,
    pub total_cost: f64,
    pub plan_rows: f64,
    /// ON CONFLICT arbiter indexes (ModifyTable nodes).
    pub arbiters: Vec<String>,
    /// EXPLAIN ANALYZE only: rows returned per loop, loops, rows a filter dropped.
    pub actual_rows: Option<f64>,
    pub actual_loops: Option<f64>,
    pub removed_by_filter: Option<f64>,
}

impl Node {
    pub fn is_seq_scan(&self) -> bool {
        matches!(self.node_type.as_str(), "Seq Scan" | "Parallel Seq Scan")
    }

    pub fn is_index_scan(&self) -> bool {
        matches!(
            self.node_type.as_str(),
            "Index Scan" | "Index Only Scan" | "Bitmap Index Scan"
        )
    }
}

impl Plan {
    /// The top node's `Plan` object.
    pub fn root(&self) -> Option<&Value> {
        root(&self.json)
    }

    pub fn total_cost(&self) -> f64 {
        self.root()
            .and_then(|r| r.get("Total Cost"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }

    pub fn nodes(&self) -> &[Node] {
        self.flat.get_or_init(|| {
            let mut out = Vec::new();
            if let Some(r) = self.root() {
                walk(r, None, &mut Vec::new(), &mut out);
            }
            out
        })
    }

    /// Every index the plan reads, arbiters included; on Citus, also the
    /// indexes its worker plans read on the shards (see [`shard_indexes`]).
    pub fn indexes(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes()
            .iter()
            .flat_map(|n| n.index.iter().chain(&n.arbiters).cloned())
            .collect();
        if self.nodes().iter().any(|n| n.node_type == "Custom Scan") {
            shard_indexes(&self.json, &mut v);
        }
        v.sort();
        v.dedup();
        v
    }

    pub fn uses_any_index(&self) -> bool {
        self.nodes().iter().any(Node::is_index_scan)
    }

    /// Whether any node condition mentions `needle` (e.g. the policy's setting).
    pub fn mentions(&self, needle: &str) -> bool {
        self.nodes().iter().any(|n| {
            [&n.index_cond, &n.filter]
                .into_iter()
                .flatten()
                .any(|c| c.contains(needle))
        })
    }
}

/// `[{"Plan": {...}}]` -> the inner `Plan`.
pub fn root(json: &Value) -> Option<&Value> {
    json.get(0)?.get("Plan")
}

/// Citus: the indexes the worker plans of a distributed plan read
/// (`Distributed Query` -> `Job` -> `Tasks` -> `Remote Plan`), named as the
/// coordinator's index: a shard's index is the index's name with the
/// shard's id appended (`ads_pkey_102008` is `ads_pkey`). Without them an
/// index that only the shards use looked unused on a coordinator.
fn shard_indexes(json: &Value, out: &mut Vec<String>) {
    match json {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "Remote Plan" {
                    remote_plans(v, out);
                } else {
                    shard_indexes(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| shard_indexes(v, out)),
        _ => {}
    }
}

/// The indexes of the plans in a `Remote Plan` (an EXPLAIN's JSON, nested
/// in arrays), without their shard suffix.
fn remote_plans(json: &Value, out: &mut Vec<String>) {
    match json {
        Value::Object(m) => match m.get("Plan") {
            Some(plan) => {
                let mut nodes = Vec::new();
                walk(plan, None, &mut Vec::new(), &mut nodes);
                for n in &nodes {
                    for ix in n.index.iter().chain(&n.arbiters) {
                        out.push(without_shard_id(ix).to_string());
                    }
                }
                // A worker plan of its own may be distributed again.
                shard_indexes(plan, out);
            }
            None => m.values().for_each(|v| remote_plans(v, out)),
        },
        Value::Array(a) => a.iter().for_each(|v| remote_plans(v, out)),
        _ => {}
    }
}

/// `ads_pkey_102008` -> `ads_pkey` (a Citus shard's relation or index name).
pub fn without_shard_id(name: &str) -> &str {
    match name.rsplit_once('_') {
        Some((base, id))
            if !base.is_empty() && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => name,
    }
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

/// Walks the tree depth first. `schema` is the nearest ancestor's `Schema`
/// (EXPLAIN VERBOSE names it on scan nodes; a Bitmap Index Scan's is its
/// Bitmap Heap Scan's, an index's schema being its table's), so relations and
/// indexes come out as display names (`events`, `audit.events`).
fn walk(v: &Value, schema: Option<&str>, path: &mut Vec<usize>, out: &mut Vec<Node>) {
    let own = v.get("Schema").and_then(Value::as_str);
    let schema = own.or(schema);
    let qualify = |name: String| match schema {
        Some(sc) => crate::catalog::display_name(sc, &name),
        None => name,
    };
    let cond = [
        "Index Cond",
        "Recheck Cond",
        "Hash Cond",
        "Merge Cond",
        "Join Filter",
    ]
    .iter()
    .filter_map(|k| s(v, k))
    .collect::<Vec<_>>();
    out.push(Node {
        node_type: s(v, "Node Type").unwrap_or_default(),
        path: path.clone(),
        relation: s(v, "Relation Name").map(qualify),
        index: s(v, "Index Name").map(qualify),
        index_cond: s(v, "Index Cond"),
        filter: {
            let mut f: Vec<String> = s(v, "Filter").into_iter().collect();
            f.extend(
                cond.into_iter()
                    .filter(|c| Some(c) != s(v, "Index Cond").as_ref()),
            );
            (!f.is_empty()).then(|| f.join(" AND "))
        },
        total_cost: v.get("Total Cost").and_then(Value::as_f64).unwrap_or(0.0),
        plan_rows: v.get("Plan Rows").and_then(Value::as_f64).unwrap_or(0.0),
        arbiters: v
            .get("Conflict Arbiter Indexes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(|x| qualify(x.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
        actual_rows: v.get("Actual Rows").and_then(Value::as_f64),
        actual_loops: v.get("Actual Loops").and_then(Value::as_f64),
        removed_by_filter: v.get("Rows Removed by Filter").and_then(Value::as_f64),
    });
    if let Some(children) = v.get("Plans").and_then(Value::as_array) {
        for (i, c) in children.iter().enumerate() {
            path.push(i);
            walk(c, schema, path, out);
            path.pop();
        }
    }
}

#[cfg(test)]
pub(crate) fn test_plan(mode: Mode, json: Value) -> Plan {
    Plan {
        mode,
        kind: PlanKind::Generic,
        tenant: None,
        tenant_id: None,
        params: vec![],
        json,
        flat: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// EXPLAIN (FORMAT JSON, VERBOSE) of a multi-shard SELECT on a Citus
    /// 13.2 coordinator with two workers (abridged): the index the worker
    /// plan reads is the coordinator's `ads_name`, not the shard's name.
    #[test]
    fn a_citus_plan_reads_the_indexes_of_its_worker_plans() {
        let plan = test_plan(
            Mode::Admin,
            json!([{"Plan": {
                "Node Type": "Custom Scan", "Custom Plan Provider": "Citus Adaptive",
                "Total Cost": 0.0, "Plan Rows": 100000,
                "Distributed Query": {"Job": {"Task Count": 32, "Tasks Shown": "One of 32",
                    "Tasks": [{
                        "Query": "SELECT company_id, id, name FROM public.ads_102008 ads WHERE (name OPERATOR(pg_catalog.=) 'n5'::text)",
                        "Node": "host=127.0.0.1 port=41341 dbname=planck",
                        "Remote Plan": [[{"Plan": {
                            "Node Type": "Index Scan", "Index Name": "ads_name_102008",
                            "Relation Name": "ads_102008", "Schema": "public", "Alias": "ads",
                            "Total Cost": 8.29, "Plan Rows": 1,
                            "Index Cond": "(ads.name = 'n5'::text)"}}]]
                    }]}}
            }}]),
        );
        assert_eq!(plan.indexes(), vec!["ads_name".to_string()]);
        assert_eq!(without_shard_id("ads_pkey_102008"), "ads_pkey");
        assert_eq!(without_shard_id("events_2024_x"), "events_2024_x");
        assert_eq!(without_shard_id("_12"), "_12");
    }

    #[test]
    fn flattens_nodes_and_collects_indexes() {
        let p = test_plan(
            Mode::Tenant,
            json!([{"Plan": {"Node Type": "ModifyTable", "Total Cost": 9.5,
                "Conflict Arbiter Indexes": ["rate_limits_pkey"],
                "Plans": [{"Node Type": "Index Scan", "Relation Name": "items",
                    "Index Name": "items_pkey", "Index Cond": "(id = $1)",
                    "Filter": "(account_id = (current_setting('app.account_id'::text))::bigint)"}]}}]),
        );
        let n = p.nodes();
        assert_eq!(n.len(), 2);
        assert!(n[1].is_index_scan());
        assert_eq!(p.indexes(), vec!["items_pkey", "rate_limits_pkey"]);
        assert!(p.mentions("current_setting('app.account_id'"));
        assert_eq!(p.total_cost(), 9.5);
    }

    /// Issue 8: plans named relations by bare name, so `a.events` and
    /// `b.events` were one table to the checks.
    #[test]
    fn issue8_verbose_schema_qualifies_relations_and_indexes_down_the_tree() {
        let p = test_plan(
            Mode::Admin,
            json!([{"Plan": {"Node Type": "Nested Loop", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "events", "Schema": "audit"},
                {"Node Type": "Bitmap Heap Scan", "Relation Name": "events", "Schema": "public",
                 "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "events_kind"}]}
            ]}}]),
        );
        let n = p.nodes();
        assert_eq!(n[1].relation.as_deref(), Some("audit.events"));
        assert_eq!(n[1].path, vec![0]);
        assert_eq!(n[2].relation.as_deref(), Some("events"));
        assert_eq!(n[3].index.as_deref(), Some("events_kind"));
        assert_eq!(n[3].path, vec![1, 0]);
        assert_eq!(n[0].path, Vec::<usize>::new());
    }
}
