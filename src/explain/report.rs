//! The report and its renderers: `table` (comfy-table, one row per finding,
//! then a summary), `markdown` (a PR comment) and `json`. The JSON wire
//! types below are the contract (`format_version` 1) and live apart from the
//! internal types so a refactor cannot change the output by accident.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::engine::{Explained, Status};
use super::rules::{CheckId, Finding, Severity};
use crate::output::{count, md_cell, table};

pub const FORMAT_VERSION: u32 = 1;

/// What `planck explain` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub results: Vec<Explained>,
    /// Findings after ignores, each marked when the baseline holds it.
    pub findings: Vec<(Finding, bool)>,
    /// Findings an ignore rule removed.
    pub ignored: usize,
}

impl Report {
    pub fn explained(&self) -> usize {
        self.results
            .iter()
            .filter(|e| e.status == Status::Explained)
            .count()
    }

    pub fn skipped(&self) -> usize {
        self.results.len() - self.explained()
    }

    /// Error findings the baseline does not hold: these fail CI.
    pub fn new_errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|(f, base)| f.severity == Severity::Error && !base)
            .count()
    }

    /// The gate: 1 on a new error finding, or (with `fail_on_skipped`) on a
    /// skipped statement; else 0.
    pub fn exit_code(&self, fail_on_skipped: bool) -> i32 {
        if self.new_errors() > 0 || (fail_on_skipped && self.skipped() > 0) {
            1
        } else {
            0
        }
    }

    pub fn by_check(&self) -> BTreeMap<CheckId, usize> {
        let mut m = BTreeMap::new();
        for (f, _) in &self.findings {
            *m.entry(f.check).or_default() += 1;
        }
        m
    }
}

// ---- JSON wire types ------------------------------------------------------

#[derive(Serialize)]
pub struct JsonReport<'a> {
    pub format_version: u32,
    pub statements: Vec<JsonStatement<'a>>,
    pub findings: Vec<JsonFinding<'a>>,
    pub summary: JsonSummary,
}

#[derive(Serialize)]
pub struct JsonStatement<'a> {
    pub id: &'a str,
    pub query: &'a str,
    pub role: Option<&'a str>,
    /// `tenant`, `admin`, or `both` with --all-modes: the modes it is judged in.
    pub mode: Option<&'static str>,
    pub status: &'static str,
    pub reason: Option<&'a str>,
    /// The text planned, when repairs changed it.
    pub planned_query: Option<&'a str>,
    pub repairs: &'a [String],
    pub param_types: &'a [String],
    pub notes: &'a [String],
    pub plans: Vec<JsonPlan<'a>>,
}

#[derive(Serialize)]
pub struct JsonPlan<'a> {
    pub mode: &'static str,
    /// `generic`, `custom` or `literal`.
    pub kind: &'static str,
    /// Whose values: `heaviest`, `median`, `chosen`, `common`; null for generic plans.
    pub tenant: Option<&'a str>,
    pub tenant_id: Option<&'a str>,
    pub params: &'a [Option<String>],
    /// PostgreSQL's EXPLAIN (FORMAT JSON), untouched.
    pub plan: &'a serde_json::Value,
}

#[derive(Serialize)]
pub struct JsonFinding<'a> {
    pub check: &'static str,
    pub severity: &'static str,
    pub mode: Option<&'static str>,
    pub statement_id: Option<&'a str>,
    pub query: Option<&'a str>,
    pub relation: Option<&'a str>,
    pub index: Option<&'a str>,
    pub message: &'a str,
    pub help: &'static str,
    /// Held by the baseline: does not fail CI.
    pub baseline: bool,
}

#[derive(Serialize)]
pub struct JsonSummary {
    pub explained: usize,
    pub skipped: usize,
    pub findings: BTreeMap<&'static str, usize>,
    pub ignored: usize,
    pub new_errors: usize,
}

fn judged_str(e: &Explained) -> Option<&'static str> {
    match e.judged.as_slice() {
        [] => None,
        [m] => Some(m.as_str()),
        _ => Some("both"),
    }
}

pub fn to_json(r: &Report) -> JsonReport<'_> {
    JsonReport {
        format_version: FORMAT_VERSION,
        statements: r
            .results
            .iter()
            .map(|e| JsonStatement {
                id: &e.stmt.id,
                query: &e.stmt.query,
                role: e.stmt.role.as_deref(),
                mode: judged_str(e),
                status: match e.status {
                    Status::Explained => "explained",
                    Status::Skipped(_) => "skipped",
                },
                reason: match &e.status {
                    Status::Skipped(r) => Some(r),
                    Status::Explained => None,
                },
                planned_query: (e.text != e.stmt.query.trim()).then_some(e.text.as_str()),
                repairs: &e.repairs,
                param_types: &e.param_types,
                notes: &e.notes,
                plans: e
                    .plans
                    .iter()
                    .map(|p| JsonPlan {
                        mode: p.mode.as_str(),
                        kind: p.kind.as_str(),
                        tenant: p.tenant.as_deref(),
                        tenant_id: p.tenant_id.as_deref(),
                        params: &p.params,
                        plan: &p.json,
                    })
                    .collect(),
            })
            .collect(),
        findings: r
            .findings
            .iter()
            .map(|(f, base)| JsonFinding {
                check: f.check.as_str(),
                severity: f.severity.as_str(),
                mode: f.mode.map(|m| m.as_str()),
                statement_id: f.statement.as_deref(),
                query: f.query.as_deref(),
                relation: f.relation.as_deref(),
                index: f.index.as_deref(),
                message: &f.message,
                help: f.help,
                baseline: *base,
            })
            .collect(),
        summary: JsonSummary {
            explained: r.explained(),
            skipped: r.skipped(),
            findings: r
                .by_check()
                .into_iter()
                .map(|(c, n)| (c.as_str(), n))
                .collect(),
            ignored: r.ignored,
            new_errors: r.new_errors(),
        },
    }
}

pub fn render_json(w: &mut impl Write, r: &Report) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, &to_json(r))?;
    writeln!(w)
}

fn short(q: &str, n: usize) -> String {
    let q = crate::queries::normalize_space(q);
    if q.chars().count() <= n {
        q
    } else {
        format!("{}…", q.chars().take(n - 1).collect::<String>())
    }
}

fn target(f: &Finding) -> String {
    match (&f.relation, &f.index) {
        (Some(r), Some(i)) => format!("{r}.{i}"),
        (Some(r), None) => r.clone(),
        (None, Some(i)) => i.clone(),
        (None, None) => String::new(),
    }
}

/// A count and its noun, singular or plural: `1 statement`, `2,000 statements`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

fn summary_lines(r: &Report) -> Vec<String> {
    let mut v = vec![format!(
        "{} explained, {} skipped, {} ({}{})",
        counted(r.explained() as u64, "statement", "statements"),
        count(r.skipped() as u64),
        counted(r.findings.len() as u64, "finding", "findings"),
        counted(r.new_errors() as u64, "new error", "new errors"),
        if r.ignored > 0 {
            format!(", {} ignored", r.ignored)
        } else {
            String::new()
        }
    )];
    let by = r.by_check();
    if !by.is_empty() {
        v.push(
            by.iter()
                .map(|(c, n)| format!("{c}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    v
}

pub fn render_table(w: &mut impl Write, r: &Report) -> io::Result<()> {
    if !r.findings.is_empty() {
        let mut t = table(&["check", "mode", "finding"]);
        for (f, base) in &r.findings {
            let mut finding = f.message.clone();
            if let Some(q) = &f.query {
                finding.push_str(&format!("\n> {}", short(q, 70)));
            }
            t.add_row(vec![
                format!(
                    "{}\n{}{}",
                    f.check,
                    f.severity.as_str(),
                    if *base { " (baseline)" } else { "" }
                ),
                f.mode.map_or("-", |m| m.as_str()).to_string(),
                finding,
            ]);
        }
        writeln!(w, "{t}")?;
    }
    let skipped = skipped(r);
    if !skipped.is_empty() {
        let mut t = table(&["skipped statement", "reason"]);
        for (e, reason) in skipped {
            t.add_row(vec![short(&e.stmt.query, 40), reason.clone()]);
        }
        writeln!(w, "{t}")?;
    }
    for l in summary_lines(r) {
        writeln!(w, "{l}")?;
    }
    Ok(())
}

/// The skipped statements with their reasons, in report order.
fn skipped(r: &Report) -> Vec<(&Explained, &String)> {
    r.results
        .iter()
        .filter_map(|e| match &e.status {
            Status::Skipped(reason) => Some((e, reason)),
            Status::Explained => None,
        })
        .collect()
}

pub fn render_markdown(w: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(w, "### planck explain\n")?;
    for l in summary_lines(r) {
        writeln!(w, "{l}  ")?;
    }
    if !r.findings.is_empty() {
        writeln!(
            w,
            "\n| severity | check | mode | statement | on | message |"
        )?;
        writeln!(w, "|---|---|---|---|---|---|")?;
        for (f, base) in &r.findings {
            writeln!(
                w,
                "| {}{} | `{}` | {} | {} | {} | {} |",
                f.severity.as_str(),
                if *base { " (baseline)" } else { "" },
                f.check,
                f.mode.map_or("-", |m| m.as_str()),
                f.query
                    .as_deref()
                    .map(|q| format!("`{}`", md_cell(&short(q, 60)).replace('`', "'")))
                    .unwrap_or_default(),
                md_cell(&target(f)),
                md_cell(&f.message)
            )?;
        }
    }
    let skipped = skipped(r);
    if !skipped.is_empty() {
        writeln!(
            w,
            "\n<details><summary>{} skipped</summary>\n",
            counted(skipped.len() as u64, "statement", "statements")
        )?;
        writeln!(w, "| statement | reason |\n|---|---|")?;
        for (e, reason) in skipped {
            writeln!(
                w,
                "| `{}` | {} |",
                md_cell(&short(&e.stmt.query, 60)).replace('`', "'"),
                md_cell(reason)
            )?;
        }
        writeln!(w, "\n</details>")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use crate::explain::rules::testing::explained;
    use crate::explain::rules::{Check, seq_scan::SeqScan};
    use serde_json::json;

    fn report() -> Report {
        let e = explained(
            "SELECT * FROM events WHERE kind = $1",
            vec![(
                Mode::Tenant,
                PlanKind::Generic,
                json!([{"Plan": {"Node Type": "Seq Scan"}}]),
            )],
        );
        let mut skipped = explained("SET x = 1", vec![]);
        skipped.stmt.id = "s2".into();
        skipped.status = Status::Skipped("utility statement (SET)".into());
        let f = crate::explain::rules::Finding::new(
            SeqScan.id(),
            Severity::Error,
            "Seq Scan on events".into(),
        )
        .statement(&e.stmt, Mode::Tenant)
        .relation("events");
        Report {
            results: vec![e, skipped],
            findings: vec![(f, false)],
            ignored: 0,
        }
    }

    #[test]
    fn json_has_the_documented_shape() {
        let mut buf = Vec::new();
        render_json(&mut buf, &report()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["format_version"], 1);
        let s = &v["statements"][0];
        for k in ["id", "query", "role", "mode", "status", "reason", "plans"] {
            assert!(s.get(k).is_some(), "statement key {k}");
        }
        assert_eq!(s["status"], "explained");
        assert_eq!(s["plans"][0]["plan"][0]["Plan"]["Node Type"], "Seq Scan");
        assert_eq!(v["statements"][1]["status"], "skipped");
        let f = &v["findings"][0];
        for k in [
            "check",
            "severity",
            "mode",
            "statement_id",
            "query",
            "relation",
            "index",
            "message",
            "help",
        ] {
            assert!(f.get(k).is_some(), "finding key {k}");
        }
        assert_eq!(f["check"], SeqScan.id().as_str());
        assert_eq!(f["index"], serde_json::Value::Null);
        assert_eq!(f["mode"], "tenant");
    }

    /// New-user review: "planning 1 statements" and "1 findings (1 new errors)".
    #[test]
    fn counts_are_singular_or_plural() {
        assert_eq!(counted(1, "statement", "statements"), "1 statement");
        assert_eq!(counted(0, "statement", "statements"), "0 statements");
        assert_eq!(counted(2_000, "finding", "findings"), "2,000 findings");
    }

    #[test]
    fn table_and_markdown_show_findings_and_summary() {
        let r = report();
        let mut t = Vec::new();
        render_table(&mut t, &r).unwrap();
        let t = String::from_utf8(t).unwrap();
        assert!(t.contains("seq-scan"), "{t}");
        assert!(t.contains("> SELECT * FROM events WHERE kind = $1"), "{t}");
        assert!(
            t.contains("1 statement explained, 1 skipped, 1 finding (1 new error)"),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        let mut m = Vec::new();
        render_markdown(&mut m, &r).unwrap();
        let m = String::from_utf8(m).unwrap();
        assert!(m.contains("| error | `seq-scan` | tenant |"), "{m}");
        assert!(m.contains("1 statement skipped"), "{m}");
    }
}
