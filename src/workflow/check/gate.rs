//! The gate: check's verdict on the head report, the diff, the migration
//! measurement and the replay, one reason per failure with the file and
//! line to look at. Each gate of `[check] fail_on` is a function of its own.

use crate::replay::slo::Slo;
use crate::wire::check::{
    JsonGate, JsonGateFailure, JsonLostIndex, JsonMigrationStatement, JsonNotJudged,
    JsonObjectChange,
};
use crate::wire::diff::JsonDiff;
use crate::wire::explain::JsonReport;
use crate::wire::replay::ReplayReport;

use super::lost_index::dropped_by;
use super::plan::{CheckPlan, Gate};

/// The gate's verdict on the head report, the diff and the measurement.
pub fn gate(
    plan: &CheckPlan,
    head: &JsonReport,
    diff: Option<&JsonDiff>,
    objects: &[JsonObjectChange],
    lost: &[JsonLostIndex],
    measured: &[JsonMigrationStatement],
    replay: Option<&ReplayReport>,
) -> JsonGate {
    let mut failures = Vec::new();
    if plan.gates(Gate::Errors) {
        errors(&mut failures, head, objects, lost);
    }
    if plan.gates(Gate::Regressions)
        && let Some(d) = diff
    {
        regressions(&mut failures, d, objects);
    }
    if plan.gates(Gate::BlockingMigration) {
        blocking(&mut failures, measured);
    }
    if plan.gates(Gate::Slo)
        && let Some(slo) = plan.replay.as_ref().and_then(|p| p.slo)
        && let Some(r) = replay
    {
        slo_missed(&mut failures, &slo, r);
    }
    let not_judged = JsonNotJudged::of(head);
    if plan.gates(Gate::NotJudged) {
        for n in &not_judged {
            failures.push(JsonGateFailure {
                gate: Gate::NotJudged.as_str().to_string(),
                message: format!(
                    "not judged: `{}`: {}",
                    crate::output::shorten(&n.query, 60),
                    n.reason
                ),
                statement_id: Some(n.statement_id.clone()),
                query: Some(n.query.clone()),
                index: None,
                file: None,
                line: None,
            });
        }
    }
    let statements = head
        .statements
        .iter()
        .filter(|s| s.status != "skipped")
        .count();
    // A gate that judged nothing does not pass, whatever `fail_on` says:
    // "passed" would then say only that the data was too small to show a
    // finding. With `not-judged` gated, each statement failed above already.
    if statements > 0 && not_judged.len() == statements && !plan.gates(Gate::NotJudged) {
        failures.push(JsonGateFailure {
            gate: Gate::NotJudged.as_str().to_string(),
            message: format!(
                "the data judged none of the {statements} statement(s): every one reads only \
                 tables below min_rows or nearly empty (seed more rows: `[check] rows`, `--rows`)"
            ),
            statement_id: None,
            query: None,
            index: None,
            file: None,
            line: None,
        });
    }
    JsonGate {
        statements,
        not_judged,
        passed: failures.is_empty(),
        fail_on: plan
            .fail_on
            .iter()
            .map(|g| g.as_str().to_string())
            .collect(),
        failures,
    }
}

/// Error findings the baseline does not hold, at the migration line that
/// dropped their index when one did.
fn errors(
    failures: &mut Vec<JsonGateFailure>,
    head: &JsonReport,
    objects: &[JsonObjectChange],
    lost: &[JsonLostIndex],
) {
    for f in head.findings.iter().filter(|f| f.is_new_error()) {
        let dropped = f.index.as_deref().and_then(|i| dropped_by(objects, i));
        let lost = lost.iter().find(|l| l.is_for(f)).map(|l| &l.dropped);
        failures.push(JsonGateFailure {
            gate: Gate::Errors.as_str().to_string(),
            message: format!(
                "{}: {}{}",
                f.check,
                f.message,
                f.query
                    .as_deref()
                    .map(|q| format!(" in `{}`", crate::output::shorten(q, 60)))
                    .unwrap_or_default()
            ),
            statement_id: f.statement_id.clone(),
            query: f.query.clone(),
            index: f.index.clone().or_else(|| lost.map(|d| d.index.clone())),
            file: dropped
                .map(|o| o.file.clone())
                .or_else(|| lost.map(|d| d.path.clone()))
                .or_else(|| f.location.as_ref().map(|l| l.path.clone())),
            line: dropped
                .map(|o| o.line)
                .or_else(|| lost.map(|d| d.line))
                .or_else(|| f.location.as_ref().map(|l| l.line)),
        });
    }
}

/// Plans that got costlier beyond the noise or lost an index.
fn regressions(failures: &mut Vec<JsonGateFailure>, d: &JsonDiff, objects: &[JsonObjectChange]) {
    for c in d.regressions() {
        let index = c.indexes_no_longer_used.first().cloned();
        let dropped = index.as_deref().and_then(|i| dropped_by(objects, i));
        let what = if c.changes.is_empty() {
            "the same plan".to_string()
        } else {
            c.changes.join("; ")
        };
        failures.push(JsonGateFailure {
            gate: Gate::Regressions.as_str().to_string(),
            message: format!(
                "`{}` ({}, {}): {what}, cost x{}{}",
                crate::output::shorten(&c.query, 60),
                c.mode,
                c.kind,
                c.cost_ratio,
                match &index {
                    Some(i) => format!(", no longer uses {i}"),
                    None => String::new(),
                }
            ),
            statement_id: Some(c.statement_id.clone()),
            query: Some(c.query.clone()),
            index,
            file: dropped.map(|o| o.file.clone()),
            line: dropped.map(|o| o.line),
        });
    }
}

/// Migration statements that held a blocking lock or rewrote a table.
fn blocking(failures: &mut Vec<JsonGateFailure>, measured: &[JsonMigrationStatement]) {
    for m in measured.iter().filter(|m| m.blocking) {
        let lock = m.locks.first();
        failures.push(JsonGateFailure {
            gate: Gate::BlockingMigration.as_str().to_string(),
            message: format!(
                "`{}` held {} for {:.1} s (blocks {}){}",
                crate::output::shorten(&m.statement, 60),
                lock.map(|l| format!("{} on {}", l.mode, l.relation))
                    .unwrap_or_else(|| "a lock".into()),
                lock.map(|l| l.held_seconds).unwrap_or(m.seconds),
                lock.map(|l| l.blocks.as_str()).unwrap_or("?"),
                if m.rewritten.is_empty() {
                    String::new()
                } else {
                    format!(", rewrote {}", m.rewritten.join(", "))
                }
            ),
            statement_id: None,
            query: None,
            index: None,
            file: Some(m.file.clone()),
            line: Some(m.line),
        });
    }
}

/// The head's replay against the objective.
fn slo_missed(failures: &mut Vec<JsonGateFailure>, slo: &Slo, r: &ReplayReport) {
    let missed = match slo.met(r) {
        Some(Ok(())) => None,
        Some(Err(why)) => Some(why),
        // The step did not finish (an interrupted replay).
        None => Some(format!(
            "the replay has no step at {} clients to hold p{} to",
            slo.concurrency, slo.percentile
        )),
    };
    if let Some(message) = missed {
        failures.push(JsonGateFailure {
            gate: Gate::Slo.as_str().to_string(),
            message: format!("SLO missed: {message}"),
            statement_id: None,
            query: None,
            index: None,
            file: None,
            line: None,
        });
    }
}
