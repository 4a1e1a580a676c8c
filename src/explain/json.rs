//! `planck explain --format json`: the wire types, the contract
//! (`format_version` 1). Owned `Serialize + Deserialize` structs, apart from
//! the internal types, so a refactor inside cannot change the output by
//! accident and a consumer (report, a CI script, a test) can read it back.
//! Fields are only ever added within a format version.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::engine::{Explained, Status};
use super::report::Report;
use crate::findings::{Finding, Location};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonReport {
    pub format_version: u32,
    pub statements: Vec<JsonStatement>,
    pub findings: Vec<JsonFinding>,
    pub summary: JsonSummary,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonStatement {
    pub id: String,
    pub query: String,
    pub role: Option<String>,
    /// `tenant`, `admin`, or `both` with --all-modes: the modes it is judged in.
    pub mode: Option<String>,
    /// `explained` or `skipped`.
    pub status: String,
    pub reason: Option<String>,
    /// The text planned, when repairs changed it.
    pub planned_query: Option<String>,
    pub repairs: Vec<String>,
    pub param_types: Vec<String>,
    pub notes: Vec<String>,
    pub plans: Vec<JsonPlan>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonPlan {
    pub mode: String,
    /// `generic`, `custom` or `literal`.
    pub kind: String,
    /// Whose values: `heaviest`, `median`, `chosen`, `common`; null for generic plans.
    pub tenant: Option<String>,
    pub tenant_id: Option<String>,
    pub params: Vec<Option<String>>,
    /// PostgreSQL's EXPLAIN (VERBOSE, FORMAT JSON), untouched.
    pub plan: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonFinding {
    /// A check id (`seq-scan`, ...).
    pub check: String,
    pub severity: String,
    pub mode: Option<String>,
    pub statement_id: Option<String>,
    pub query: Option<String>,
    pub relation: Option<String>,
    pub index: Option<String>,
    pub message: String,
    pub help: String,
    /// Held by the baseline: does not fail CI.
    pub baseline: bool,
    /// The statement's entry in the queries file (or the migration), when known.
    pub location: Option<JsonLocation>,
    /// The plan node the finding was read from.
    pub node: Option<JsonNode>,
    /// The index that fixes it, verified by re-planning (absent when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<JsonAdvice>,
}

/// A verified index (see `explain::advice`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonAdvice {
    /// `CREATE INDEX ON devices (user_id)`.
    pub sql: String,
    pub table: String,
    pub columns: Vec<String>,
    pub predicate: Option<String>,
    /// The plan's total cost without and with the index.
    pub cost_before: f64,
    pub cost_after: f64,
    /// The scan before (`Seq Scan`) and the node reading the index after.
    pub node_before: String,
    pub node_after: String,
    /// Always true: advice the plan did not take is not reported.
    pub verified: bool,
    /// `real` (built in the rolled-back transaction) or `hypothetical` (hypopg).
    pub index: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLocation {
    /// `queries` or `migration`.
    pub kind: String,
    pub path: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNode {
    /// Index into the statement's `plans`.
    pub plan: usize,
    /// Child indexes from that plan's root node (`[]`: the root).
    pub path: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSummary {
    pub explained: usize,
    pub skipped: usize,
    /// Findings per check id.
    pub findings: BTreeMap<String, usize>,
    pub ignored: usize,
    pub new_errors: usize,
}

fn judged_str(e: &Explained) -> Option<String> {
    match e.judged.as_slice() {
        [] => None,
        [m] => Some(m.as_str().to_string()),
        _ => Some("both".to_string()),
    }
}

fn statement(e: &Explained) -> JsonStatement {
    JsonStatement {
        id: e.stmt.id.clone(),
        query: e.stmt.query.clone(),
        role: e.stmt.role.clone(),
        mode: judged_str(e),
        status: match e.status {
            Status::Explained => "explained",
            Status::Skipped(_) => "skipped",
        }
        .to_string(),
        reason: match &e.status {
            Status::Skipped(r) => Some(r.clone()),
            Status::Explained => None,
        },
        planned_query: (e.text != e.stmt.query.trim()).then(|| e.text.clone()),
        repairs: e.repairs.clone(),
        param_types: e.param_types.clone(),
        notes: e.notes.clone(),
        plans: e
            .plans
            .iter()
            .map(|p| JsonPlan {
                mode: p.mode.as_str().to_string(),
                kind: p.kind.as_str().to_string(),
                tenant: p.tenant.clone(),
                tenant_id: p.tenant_id.clone(),
                params: p.params.clone(),
                plan: p.json.clone(),
            })
            .collect(),
    }
}

fn finding(f: &Finding, baseline: bool) -> JsonFinding {
    JsonFinding {
        check: f.check.as_str().to_string(),
        severity: f.severity.as_str().to_string(),
        mode: f.mode.map(|m| m.as_str().to_string()),
        statement_id: f.statement.clone(),
        query: f.query.clone(),
        relation: f.relation.clone(),
        index: f.index.clone(),
        message: f.message.clone(),
        help: f.help.to_string(),
        baseline,
        location: match &f.location {
            Location::Queries { path, line } => Some(JsonLocation {
                kind: "queries".into(),
                path: path.display().to_string(),
                line: *line,
            }),
            Location::Migration { path, line } => Some(JsonLocation {
                kind: "migration".into(),
                path: path.display().to_string(),
                line: *line,
            }),
            Location::None => None,
        },
        node: f.node.as_ref().map(|n| JsonNode {
            plan: n.plan,
            path: n.path.clone(),
        }),
        advice: f.advice.as_ref().map(|a| JsonAdvice {
            sql: a.sql.clone(),
            table: a.table.clone(),
            columns: a.columns.clone(),
            predicate: a.predicate.clone(),
            cost_before: a.cost_before,
            cost_after: a.cost_after,
            node_before: a.node_before.clone(),
            node_after: a.node_after.clone(),
            verified: a.verified,
            index: a.how.to_string(),
        }),
    }
}

pub fn from_report(r: &Report) -> JsonReport {
    JsonReport {
        format_version: FORMAT_VERSION,
        statements: r.results.iter().map(statement).collect(),
        findings: r.findings.iter().map(|(f, b)| finding(f, *b)).collect(),
        summary: JsonSummary {
            explained: r.explained(),
            skipped: r.skipped(),
            findings: r
                .by_check()
                .into_iter()
                .map(|(c, n)| (c.as_str().to_string(), n))
                .collect(),
            ignored: r.ignored,
            new_errors: r.new_errors(),
        },
    }
}
