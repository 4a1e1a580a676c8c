//! Building explain's JSON (`planck explain --format json`) from a report.
//! The wire types themselves live in [`crate::wire::explain`], so readers of
//! the format do not depend on explain.

use std::io::{self, Write};

use super::engine::{Explained, Status};
use super::report::ExplainReport;
use crate::findings::{Finding, Location};
pub use crate::wire::explain::*;
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
            Status::NotJudged(_) => "not_judged",
        }
        .to_string(),
        reason: match &e.status {
            Status::Skipped(r) | Status::NotJudged(r) => Some(r.clone()),
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

pub fn from_report(r: &ExplainReport) -> JsonReport {
    JsonReport {
        format_version: FORMAT_VERSION,
        statements: r.results.iter().map(statement).collect(),
        findings: r.findings.iter().map(|(f, b)| finding(f, *b)).collect(),
        summary: JsonSummary {
            explained: r.explained(),
            skipped: r.skipped(),
            not_judged: r.not_judged(),
            findings: r
                .by_check()
                .into_iter()
                .map(|(c, n)| (c.as_str().to_string(), n))
                .collect(),
            ignored: r.ignored,
            new_errors: r.new_errors(),
        },
        environment: None,
        indexes: vec![],
        below_min_rows: JsonBelowMinRows::from_parts(
            r.below_min_rows.min_rows,
            &r.below_min_rows.statements,
            &r.below_min_rows.tables,
        ),
        not_judged_objects: not_judged_objects(&r.not_judged_objects),
    }
}

fn not_judged_objects(n: &super::data::NotJudgedObjects) -> Option<JsonNotJudgedObjects> {
    (!n.objects.is_empty()).then(|| JsonNotJudgedObjects {
        min_table_rows: n.min_table_rows,
        indexes: n.indexes(),
        objects: n
            .objects
            .iter()
            .map(|o| JsonNotJudgedObject {
                check: o.check.as_str().to_string(),
                table: o.table.clone(),
                index: o.index.clone(),
                rows: o.rows,
                reason: o.reason(n.min_table_rows, n.min_rows),
            })
            .collect(),
    })
}

/// `planck explain --format json`: the report as its wire type, pretty.
pub fn render_json(w: &mut impl Write, r: &ExplainReport) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, &from_report(r))?;
    writeln!(w)
}
