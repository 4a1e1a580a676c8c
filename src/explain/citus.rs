//! Explain on Citus (issue 36, 3): which plans of a distributed statement
//! are the ones the application runs.
//!
//! Citus cannot make a generic plan of a statement it plans only with its
//! parameters' values (a multi-shard read, a join or GROUP BY across
//! shards): PostgreSQL's `force_generic_plan`, which planck uses to show the
//! generic plan, fails with "could not create distributed plan" (0A000).
//! In the application that plan never runs: Citus gives such a generic plan
//! an exorbitant cost (`DissuadePlannerFromUsingPlan` in Citus's
//! `distributed_planner.c`), so the plan cache keeps choosing custom plans,
//! planned with each execution's values. So on Citus the custom plans with
//! the sampled values are the statement's plans, and the missing generic one
//! is said in a note, not taken for a failure.
//!
//! Citus is recognised by the plans themselves (a `Custom Scan` whose
//! provider is Citus's), not by the error's text.

use serde_json::Value;

use super::plan_tree::{Mode, Plan};
use crate::error::PgError;
use crate::session::PlannerSetting;

/// The setting planck plans with on a Citus coordinator, unless
/// `[explain] settings` or production's settings name it: Citus refuses a
/// join off the distribution columns without it (0A000, "the query contains a
/// join that requires repartitioning"), and with it the statement has a plan
/// the `repartition-join` check reports.
pub const REPARTITION_SETTING: &str = "citus.enable_repartition_joins";

/// [`REPARTITION_SETTING`] on, as the run's planner settings say it.
pub fn repartition_setting() -> PlannerSetting {
    PlannerSetting {
        name: REPARTITION_SETTING.to_string(),
        value: "on".to_string(),
        source: "on Citus, so that a repartition join has a plan to report".to_string(),
    }
}

/// True when a plan (EXPLAIN's JSON) was made by Citus's distributed planner.
pub fn is_distributed(json: &Value) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Object(m) => {
                m.get("Custom Plan Provider")
                    .and_then(Value::as_str)
                    .is_some_and(|p| p.starts_with("Citus"))
                    || m.values().any(walk)
            }
            Value::Array(a) => a.iter().any(walk),
            _ => false,
        }
    }
    walk(json)
}

/// True when the generic plan's failure `pg` is Citus refusing a statement
/// whose custom plans (`plans`, of the same mode) it distributed: the
/// statement is then judged on those, see the module's comment.
pub fn refuses_generic<'a>(pg: &PgError, mut plans: impl Iterator<Item = &'a Plan>) -> bool {
    pg.code == tokio_postgres::error::SqlState::FEATURE_NOT_SUPPORTED.code()
        && plans.any(|p| is_distributed(&p.json))
}

/// The note for a statement without a generic plan on Citus.
pub fn no_generic_note(mode: Mode) -> String {
    format!(
        "{} mode: no generic plan on Citus (it cannot distribute the statement without its \
         parameters' values, and makes the application run custom plans instead): judged on \
         the custom plans",
        mode.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::plan_tree::PlanKind;

    fn plan(json: Value) -> Plan {
        Plan {
            mode: Mode::Admin,
            kind: PlanKind::Custom,
            tenant: None,
            tenant_id: None,
            params: vec![],
            json,
            flat: Default::default(),
        }
    }

    fn pg(code: &str) -> PgError {
        PgError {
            code: code.into(),
            message: "could not create distributed plan".into(),
            detail: None,
            hint: None,
            position: None,
        }
    }

    #[test]
    fn only_citus_refusing_a_distributed_statement_drops_the_generic_plan() {
        let citus = plan(serde_json::json!([{ "Plan": {
            "Node Type": "Custom Scan", "Custom Plan Provider": "Citus Adaptive",
            "Distributed Query": { "Job": { "Task Count": 32 } } } }]));
        let local = plan(serde_json::json!([{ "Plan": { "Node Type": "Seq Scan" } }]));
        assert!(refuses_generic(&pg("0A000"), [&citus].into_iter()));
        // Another error, or plans Citus did not make: a real failure.
        assert!(!refuses_generic(&pg("42P01"), [&citus].into_iter()));
        assert!(!refuses_generic(&pg("0A000"), [&local].into_iter()));
        assert!(!refuses_generic(&pg("0A000"), std::iter::empty()));
        assert!(no_generic_note(Mode::Admin).starts_with("admin mode: no generic plan on Citus"));
    }
}
