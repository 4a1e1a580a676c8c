//! `repartition-join` (issue 36, 3): on Citus, a statement whose plan joins
//! distributed tables off their distribution columns, so Citus moves rows
//! between the workers to join them: its job has dependent jobs of map and
//! merge tasks (`Dependent Jobs` in the `Distributed Query`). Citus refuses
//! such a join unless `citus.enable_repartition_joins` is on (0A000, "the
//! query contains a join that requires repartitioning"); planck plans with it
//! on (see `explain::citus::REPARTITION_SETTING`) so the statement has a
//! plan to report. Either way the application pays for it: an error without
//! the setting, every row of both sides across the network with it.
//!
//! Severity as `multi-shard`'s: an error in tenant mode, a warning in admin
//! mode (an admin report may mean to read every tenant).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    Check, CheckId, Ctx, DISTRIBUTION_PROBE, Distribution, Finding, Probe, Severity,
    declare_check, describe, distributions, finding, judged_plans,
};
use crate::explain::plan_tree::Mode;

declare_check! {
    /// join distributed tables on their distribution columns (co-locate them: distribute both
    /// by the tenant and join on it), or make the smaller side a reference table
    /// (create_reference_table)
    pub struct RepartitionJoin => "repartition-join";
}

/// The map and merge tasks of the repartitions in a plan (summed over its
/// dependent jobs), when it has any.
fn repartitions(json: &Value) -> Option<(u64, u64)> {
    fn walk(v: &Value, out: &mut Option<(u64, u64)>) {
        match v {
            Value::Object(m) => {
                if let Some(deps) = m.get("Dependent Jobs").and_then(Value::as_array)
                    && !deps.is_empty()
                {
                    let (maps, merges) = out.get_or_insert((0, 0));
                    for d in deps {
                        *maps += d.get("Map Task Count").and_then(Value::as_u64).unwrap_or(0);
                        *merges += d
                            .get("Merge Task Count")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                    }
                }
                m.values().for_each(|c| walk(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut out = None;
    walk(json, &mut out);
    out
}

impl Check for RepartitionJoin {
    fn id(&self) -> CheckId {
        CheckId::RepartitionJoin
    }

    fn probe(&self) -> Option<Probe> {
        Some(DISTRIBUTION_PROBE)
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let dist = distributions(ctx, self.id());
        for e in ctx.explained() {
            // mode -> (map tasks, merge tasks, plans that repartition)
            let mut hits: BTreeMap<Mode, (u64, u64, Vec<String>)> = BTreeMap::new();
            for p in judged_plans(e) {
                let Some((maps, merges)) = repartitions(&p.json) else {
                    continue;
                };
                let hit = hits.entry(p.mode).or_default();
                hit.0 = hit.0.max(maps);
                hit.1 = hit.1.max(merges);
                let d = describe(p);
                if !hit.2.contains(&d) {
                    hit.2.push(d);
                }
            }
            let mut tables: Vec<String> = e
                .analysis
                .tables
                .iter()
                .map(|t| ctx.catalog.resolve(t).unwrap_or(t).to_string())
                .collect();
            tables.sort();
            tables.dedup();
            for (mode, (maps, merges, plans)) in hits {
                let severity = match mode {
                    Mode::Tenant => Severity::Error,
                    Mode::Admin => Severity::Warning,
                };
                let named: Vec<String> = tables
                    .iter()
                    .map(|t| dist.get(t).map_or(t.to_string(), |d| d.describe(t)))
                    .collect();
                let mut f = finding(
                    self,
                    severity,
                    format!(
                        "joins {} off their distribution columns: Citus repartitions the rows \
                         across the workers ({maps} map tasks, {merges} merge tasks) in the {}; \
                         without citus.enable_repartition_joins the server refuses the \
                         statement; fix: {}",
                        if named.is_empty() {
                            "distributed tables".to_string()
                        } else {
                            named.join(", ")
                        },
                        plans.join(", "),
                        fix(&tables, &dist)
                    ),
                )
                .statement(&e.stmt, mode);
                if let Some(first) = tables.first() {
                    f = f.relation(first);
                }
                out.push(f);
            }
        }
    }
}

/// Co-location (join on the distribution columns) or a reference table.
fn fix(tables: &[String], dist: &BTreeMap<String, Distribution>) -> String {
    let by: Vec<String> = tables
        .iter()
        .filter_map(|t| match dist.get(t)? {
            Distribution::By(c) => Some(format!("{t}.{c}")),
            Distribution::Reference => None,
        })
        .collect();
    let join = match by.as_slice() {
        [first, rest @ ..] if !rest.is_empty() => format!(
            "join on the distribution columns ({}) so each shard joins its co-located shard \
             (tables distributed by the same column type, create_distributed_table(..., \
             colocate_with => ...))",
            rest.iter()
                .map(|r| format!("{first} = {r}"))
                .collect::<Vec<_>>()
                .join(" AND ")
        ),
        _ => "join on the distribution columns (co-locate the tables: distribute both by the \
              tenant and join on it)"
            .to_string(),
    };
    format!("{join}, or make the smaller side a reference table (create_reference_table)")
}

#[cfg(test)]
mod tests {
    use super::super::testing::{catalog, explained, findings_of, probed};
    use super::*;
    use crate::explain::plan_tree::PlanKind;

    /// The shape of Citus 13.2's EXPLAIN (FORMAT JSON) of a repartition join
    /// (abridged): an Aggregate over the Custom Scan whose job depends on
    /// two repartition jobs.
    fn repartition_plan() -> Value {
        serde_json::json!([{ "Plan": { "Node Type": "Aggregate", "Plans": [{
            "Node Type": "Custom Scan", "Custom Plan Provider": "Citus Adaptive",
            "Distributed Query": { "Job": {
                "Task Count": 12, "Tasks Shown": "None, not supported for re-partition queries",
                "Dependent Jobs": [
                    { "Map Task Count": 32, "Merge Task Count": 12 },
                    { "Map Task Count": 32, "Merge Task Count": 12 }
                ] } } }] } }])
    }

    fn run(plans: Vec<(Mode, PlanKind, Value)>) -> Vec<Finding> {
        let cat = catalog(&[("ads", 1000), ("campaigns", 100)], vec![]);
        let results = vec![explained(
            "SELECT count(*) FROM ads a JOIN campaigns c ON c.id = a.campaign_id",
            plans,
        )];
        let rows = ["ads", "campaigns"]
            .map(|t| {
                serde_json::json!({"schema": "public", "table": t, "method": "h",
                    "column": "company_id"})
            })
            .to_vec();
        let probes = probed(&RepartitionJoin, rows);
        let ctx = Ctx {
            probes: &probes,
            ..super::super::testing::ctx(&cat, &results)
        };
        findings_of(&RepartitionJoin, &ctx)
    }

    #[test]
    fn a_join_off_the_distribution_columns_is_reported_a_colocated_one_is_not() {
        let f = run(vec![
            (Mode::Tenant, PlanKind::Custom, repartition_plan()),
            (Mode::Admin, PlanKind::Custom, repartition_plan()),
        ]);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[1].severity, Severity::Warning);
        assert_eq!(f[0].relation.as_deref(), Some("ads"));
        assert!(
            f[0].message.starts_with(
                "joins ads (distributed by company_id), campaigns (distributed by company_id) \
                 off their distribution columns: Citus repartitions the rows across the \
                 workers (64 map tasks, 24 merge tasks)"
            ),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.contains(
                "fix: join on the distribution columns (ads.company_id = campaigns.company_id)"
            ),
            "{}",
            f[0].message
        );
        let colocated = serde_json::json!([{ "Plan": {
            "Node Type": "Custom Scan", "Custom Plan Provider": "Citus Adaptive",
            "Distributed Query": { "Job": { "Task Count": 1, "Tasks": [] } } } }]);
        assert!(run(vec![(Mode::Tenant, PlanKind::Custom, colocated)]).is_empty());
    }
}
