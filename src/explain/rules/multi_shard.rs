//! `multi-shard` (issue 36, 3): on Citus, a statement whose plan sends a
//! task to every shard of a distributed table (its `Custom Scan (Citus
//! Adaptive)` job has more than one task) rather than one: it reads without
//! a filter on the distribution column, so each execution costs a
//! connection and a query on every worker. A router statement (one task) is
//! no finding.
//!
//! The statement's mode says how much it matters: planned as the tenant (the
//! application's tenant-scoped statements), an error; as admin, planck
//! cannot tell an admin job from an application statement that forgot its
//! tenant, so a warning (an admin job meant to read every tenant can be
//! ignored in the baseline). The tables are the distributed tables whose
//! shards the tasks read (a shard is `<table>_<shard id>`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    Check, CheckId, Ctx, DISTRIBUTION_PROBE, Distribution, Finding, Probe, Severity,
    declare_check, describe, distributions, finding, judged_plans,
};
use crate::explain::plan_tree::{Mode, without_shard_id};

declare_check! {
    /// filter on the table's distribution column (the tenant) so Citus routes the statement to
    /// one shard; join distributed tables on their distribution columns (co-located), or make a
    /// small shared table a reference table
    pub struct MultiShard => "multi-shard";
}

/// The Citus jobs of a plan: (task count, the tables their tasks read).
fn jobs(json: &Value, out: &mut Vec<(u64, BTreeSet<String>)>) {
    match json {
        Value::Object(m) => {
            if let Some(job) = m.get("Distributed Query").and_then(|d| d.get("Job")) {
                let tasks = job.get("Task Count").and_then(Value::as_u64).unwrap_or(0);
                let mut shards = BTreeSet::new();
                relations(job, &mut shards);
                out.push((tasks, shards));
            }
            for v in m.values() {
                jobs(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| jobs(v, out)),
        _ => {}
    }
}

/// The `Relation Name`s anywhere under `v`.
fn relations(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("Relation Name").and_then(Value::as_str) {
                out.insert(r.to_string());
            }
            m.values().for_each(|v| relations(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| relations(v, out)),
        _ => {}
    }
}

impl Check for MultiShard {
    fn id(&self) -> CheckId {
        CheckId::MultiShard
    }

    fn probe(&self) -> Option<Probe> {
        Some(DISTRIBUTION_PROBE)
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let dist = distributions(ctx, self.id());
        for e in ctx.explained() {
            // mode -> (most tasks, tables, plans that fan out)
            let mut hits: BTreeMap<Mode, (u64, BTreeSet<String>, Vec<String>)> = BTreeMap::new();
            for p in judged_plans(e) {
                let mut found = Vec::new();
                jobs(&p.json, &mut found);
                for (tasks, shards) in found.into_iter().filter(|(t, _)| *t > 1) {
                    let hit = hits.entry(p.mode).or_default();
                    hit.0 = hit.0.max(tasks);
                    hit.1.extend(shards.iter().map(|s| {
                        let t = without_shard_id(s);
                        ctx.catalog.resolve(t).unwrap_or(t).to_string()
                    }));
                    let d = describe(p);
                    if !hit.2.contains(&d) {
                        hit.2.push(d);
                    }
                }
            }
            for (mode, (tasks, tables, plans)) in hits {
                let severity = match mode {
                    Mode::Tenant => Severity::Error,
                    Mode::Admin => Severity::Warning,
                };
                let names: Vec<&str> = tables.iter().map(String::as_str).collect();
                let what = if names.is_empty() {
                    "distributed tables".to_string()
                } else {
                    names
                        .iter()
                        .map(|t| dist.get(*t).map_or(t.to_string(), |d| d.describe(t)))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut f = finding(
                    self,
                    severity,
                    format!(
                        "fans out to {tasks} shards of {what} in the {} (a Citus multi-shard \
                         statement); fix: {}",
                        plans.join(", "),
                        fix(&names, &dist)
                    ),
                )
                .statement(&e.stmt, mode);
                if let Some(first) = names.first() {
                    f = f.relation(*first);
                }
                out.push(f);
            }
        }
    }
}

/// What routes the statement to one shard: a filter on each distributed
/// table's distribution column (by the tenant, it routes every one).
fn fix(tables: &[&str], dist: &BTreeMap<String, Distribution>) -> String {
    let filters: Vec<String> = tables
        .iter()
        .filter_map(|t| match dist.get(*t)? {
            Distribution::By(c) => Some(format!("{t}.{c}")),
            Distribution::Reference => None,
        })
        .collect();
    if filters.is_empty() {
        "filter on the distribution column of each distributed table it reads (the tenant)"
            .to_string()
    } else {
        format!(
            "filter on {} (the tenant) so Citus routes the statement to one shard",
            filters.join(" and ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{catalog, explained, findings_of, probed};
    use super::*;
    use crate::explain::plan_tree::PlanKind;

    fn citus_plan(tasks: u64) -> Value {
        serde_json::json!([{ "Plan": {
            "Node Type": "Custom Scan", "Custom Plan Provider": "Citus Adaptive",
            "Distributed Query": { "Job": { "Task Count": tasks, "Tasks": [{
                "Remote Plan": [[{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "ads_102072" } }]]
            }] } } } }])
    }

    fn run(plans: Vec<(Mode, PlanKind, Value)>) -> Vec<Finding> {
        let cat = catalog(&[("ads", 1000)], vec![]);
        let results = vec![explained("SELECT * FROM ads WHERE campaign_id = $1", plans)];
        let row = serde_json::json!({"schema": "public", "table": "ads", "method": "h",
            "column": "company_id"});
        let probes = probed(&MultiShard, vec![row]);
        let ctx = Ctx {
            probes: &probes,
            ..super::super::testing::ctx(&cat, &results)
        };
        findings_of(&MultiShard, &ctx)
    }

    #[test]
    fn a_statement_sent_to_every_shard_is_reported_a_router_one_is_not() {
        let f = run(vec![
            (Mode::Tenant, PlanKind::Custom, citus_plan(32)),
            (Mode::Admin, PlanKind::Custom, citus_plan(32)),
        ]);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[1].severity, Severity::Warning);
        assert_eq!(f[0].relation.as_deref(), Some("ads"));
        assert!(
            f[0].message.starts_with(
                "fans out to 32 shards of ads (distributed by company_id) in the custom plan \
                 (heaviest tenant) (a Citus multi-shard statement); fix: filter on \
                 ads.company_id (the tenant)"
            ),
            "{}",
            f[0].message
        );
        assert!(run(vec![(Mode::Tenant, PlanKind::Custom, citus_plan(1))]).is_empty());
        let local =
            serde_json::json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "ads" } }]);
        assert!(run(vec![(Mode::Tenant, PlanKind::Custom, local)]).is_empty());
    }

    #[test]
    fn shards_are_named_by_their_table() {
        assert_eq!(without_shard_id("ads_102072"), "ads");
        assert_eq!(without_shard_id("order_items_7"), "order_items");
        assert_eq!(without_shard_id("ads"), "ads");
        assert_eq!(without_shard_id("v_"), "v_");
    }
}
