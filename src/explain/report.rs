//! The report and its renderers: `table` (comfy-table, one row per finding,
//! then a summary) and `markdown` (a PR comment); the `json` one lives with
//! the wire types' building in [`super::json`], which reads the report. Each
//! renderer is `fn(w: &mut impl Write, &ExplainReport)`; every line fits an
//! 80-column terminal.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::engine::{Explained, Status};
use super::rules::{CheckId, Finding, Severity};
use crate::output::{count, counted, md_cell, table};

/// What `planck explain` found.
#[derive(Debug, Clone, Default)]
pub struct ExplainReport {
    pub results: Vec<Explained>,
    /// Findings after ignores, each marked when the baseline holds it.
    pub findings: Vec<(Finding, bool)>,
    /// Findings an ignore rule removed.
    pub ignored: usize,
    /// The heaviest tenant's rows per table, as the tenancy counted them
    /// (explain's JSON reports its share from them).
    pub tenant_rows: Option<crate::tenancy::TenantRows>,
    /// The judged statements that read only tables below `min_rows`.
    pub below_min_rows: super::data::BelowMinRows,
    /// The indexes and tables the checks drew no verdict on for want of rows.
    pub not_judged_objects: super::data::NotJudgedObjects,
}

impl ExplainReport {
    pub fn explained(&self) -> usize {
        self.results
            .iter()
            .filter(|e| e.status == Status::Explained)
            .count()
    }

    /// Statements not planned (stale, timed out, refused, utility).
    pub fn skipped(&self) -> usize {
        self.results
            .iter()
            .filter(|e| matches!(e.status, Status::Skipped(_)))
            .count()
    }

    /// Statements planned on data that cannot show production's plan.
    pub fn not_judged(&self) -> usize {
        self.results
            .iter()
            .filter(|e| matches!(e.status, Status::NotJudged(_)))
            .count()
    }

    /// Error findings the baseline does not hold: these fail CI.
    pub fn new_errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|(f, base)| f.severity == Severity::Error && !base)
            .count()
    }

    /// The gate: 1 on a new error finding, or (with `fail_on_skipped`) on a
    /// skipped or not judged statement; else 0.
    pub fn exit_code(&self, fail_on_skipped: bool) -> i32 {
        if self.new_errors() > 0 || (fail_on_skipped && self.skipped() + self.not_judged() > 0) {
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
        // An index's schema is its table's: `audit.events.events_kind_idx`.
        (Some(r), Some(i)) => format!("{r}.{}", i.rsplit('.').next().unwrap_or(i)),
        (Some(r), None) => r.clone(),
        (None, Some(i)) => i.clone(),
        (None, None) => String::new(),
    }
}

/// Joins `parts` with `, ` into lines of at most `width` columns.
fn wrap_parts(parts: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for p in parts {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 2 + p.chars().count() <= width => {
                l.push_str(", ");
                l.push_str(p);
            }
            Some(l) => {
                l.push(',');
                lines.push(p.clone());
            }
            None => lines.push(p.clone()),
        }
    }
    lines
}

/// `text` broken at spaces into lines of at most `width` columns.
fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// `12 statements explained, 3 skipped, 4 findings (1 new error)`, then the
/// findings per check, wrapped at 80 columns.
fn summary_lines(r: &ExplainReport) -> Vec<String> {
    let mut parts = vec![
        format!(
            "{} explained",
            counted(r.explained() as u64, "statement", "statements")
        ),
        format!("{} skipped", count(r.skipped() as u64)),
    ];
    if r.not_judged() > 0 {
        parts.push(format!(
            "{} not judged (too few rows to show a plan)",
            count(r.not_judged() as u64)
        ));
    }
    parts.extend([format!(
        "{} ({})",
        counted(r.findings.len() as u64, "finding", "findings"),
        counted(r.new_errors() as u64, "new error", "new errors")
    )]);
    if r.ignored > 0 {
        parts.push(format!("{} ignored", count(r.ignored as u64)));
    }
    let mut v = wrap_parts(&parts, 80);
    // Issue 48: said beside the counts, so "0 new errors" on data too small
    // to show a scan does not read as a pass.
    if let Some(line) = r.below_min_rows.line() {
        v.extend(wrap_words(&line, 80));
    }
    // Issue 47, 3: beside the counts too, so "no unused-index" on tables
    // too small to show an index's use does not read as a pass.
    if let Some(line) = r.not_judged_objects.line(10) {
        v.extend(wrap_words(&line, 80));
    }
    let by: Vec<String> = r
        .by_check()
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    v.extend(wrap_parts(&by, 80));
    v
}

pub fn render_table(w: &mut impl Write, r: &ExplainReport) -> io::Result<()> {
    if !r.findings.is_empty() {
        let mut t = table(&["check", "mode", "finding"]);
        for (f, base) in &r.findings {
            let mut finding = f.message.clone();
            if let Some(q) = &f.query {
                finding.push_str(&format!("\n> {}", short(q, 70)));
            }
            if let Some(a) = &f.advice {
                finding.push_str(&format!("\n{}", super::advice::line(a)));
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
        let mut t = table(&[skipped_heading(r), "reason"]);
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

/// The heading of the list of statements [`skipped`] returns.
fn skipped_heading(r: &ExplainReport) -> &'static str {
    if r.not_judged() > 0 {
        "skipped or not judged"
    } else {
        "skipped statement"
    }
}

/// The skipped and the not judged statements with their reasons (a not
/// judged one's starts `not judged:`), in report order.
fn skipped(r: &ExplainReport) -> Vec<(&Explained, &String)> {
    r.results
        .iter()
        .filter_map(|e| match &e.status {
            Status::Skipped(reason) | Status::NotJudged(reason) => Some((e, reason)),
            Status::Explained => None,
        })
        .collect()
}

pub fn render_markdown(w: &mut impl Write, r: &ExplainReport) -> io::Result<()> {
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
                md_cell(&match &f.advice {
                    Some(a) => format!("{}; {}", f.message, super::advice::line(a)),
                    None => f.message.clone(),
                })
            )?;
        }
    }
    let skipped = skipped(r);
    if !skipped.is_empty() {
        writeln!(
            w,
            "\n<details><summary>{} {}</summary>\n",
            counted(skipped.len() as u64, "statement", "statements"),
            if r.not_judged() > 0 {
                "skipped or not judged"
            } else {
                "skipped"
            }
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
    use crate::explain::json::render_json;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use crate::explain::rules::testing::explained;
    use crate::explain::rules::{Check, seq_scan::SeqScan};
    use crate::findings::{CheckId, Finding};
    use serde_json::json;

    fn report() -> ExplainReport {
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
        ExplainReport {
            results: vec![e, skipped],
            findings: vec![(f, false)],
            ignored: 0,
            tenant_rows: None,
            below_min_rows: Default::default(),
            not_judged_objects: Default::default(),
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

    /// A fixed report with something of everything: a finding with a
    /// location and a plan node, one held by the baseline, an index target,
    /// a skipped statement, an ignored count.
    fn full_report() -> ExplainReport {
        let mut e = explained(
            "SELECT id, title FROM items WHERE account_id = $1 AND status = $2 ORDER BY created_at DESC LIMIT $3",
            vec![
                (
                    Mode::Tenant,
                    PlanKind::Generic,
                    json!([{"Plan": {"Node Type": "Limit", "Total Cost": 812.5, "Plans": [
                        {"Node Type": "Seq Scan", "Relation Name": "items", "Schema": "public",
                         "Total Cost": 800.0, "Plan Rows": 40}]}}]),
                ),
                (
                    Mode::Tenant,
                    PlanKind::Custom,
                    json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items",
                        "Schema": "public", "Index Name": "items_created", "Total Cost": 9.1}}]),
                ),
            ],
        );
        e.stmt.id = "3f9a1c0d2b7e4a51".into();
        e.stmt.role = Some("app_user".into());
        e.stmt.line = Some(12);
        e.judged = vec![Mode::Tenant];
        e.param_types = vec!["int8".into(), "text".into(), "int8".into()];
        e.plans[1].params = vec![Some("1".into()), Some("open".into()), Some("50".into())];
        let mut skipped = explained("SELECT pg_sleep($1)", vec![]);
        skipped.stmt.id = "77aa00bb11cc22dd".into();
        skipped.status = Status::Skipped("planning timed out after 300 ms (tenant mode)".into());
        let seq = Finding::new(
            CheckId::SeqScan,
            Severity::Error,
            "Seq Scan on items (40,000 rows) in the generic plan".into(),
        )
        .statement(&e.stmt, Mode::Tenant)
        .relation("items")
        .node(0, &[0]);
        let full = Finding::new(
            CheckId::FullIndexScan,
            Severity::Warning,
            "items_created on items (40,000 rows) is read without a condition on its \
             leading column created_at in the custom plan (heaviest tenant)"
                .into(),
        )
        .statement(&e.stmt, Mode::Tenant)
        .relation("items")
        .index("items_created")
        .node(1, &[]);
        let unused = Finding::new(
            CheckId::UnusedIndex,
            Severity::Warning,
            "audit.events_kind on audit.events is used by no plan, in any mode".into(),
        )
        .relation("audit.events")
        .index("audit.events_kind");
        let mut all = vec![seq, full, unused];
        crate::findings::locate(
            &mut all,
            &[e.stmt.clone()],
            std::path::Path::new("queries/recorded.toml"),
        );
        let mut it = all.into_iter();
        ExplainReport {
            results: vec![e, skipped],
            findings: vec![
                (it.next().unwrap(), false),
                (it.next().unwrap(), true),
                (it.next().unwrap(), false),
            ],
            ignored: 2,
            tenant_rows: None,
            below_min_rows: Default::default(),
            not_judged_objects: Default::default(),
        }
    }

    #[test]
    fn snapshot_table() {
        let mut t = Vec::new();
        render_table(&mut t, &full_report()).unwrap();
        let t = String::from_utf8(t).unwrap();
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        insta::assert_snapshot!(t);
    }

    #[test]
    fn snapshot_markdown() {
        let mut m = Vec::new();
        render_markdown(&mut m, &full_report()).unwrap();
        insta::assert_snapshot!(String::from_utf8(m).unwrap());
    }

    #[test]
    fn snapshot_json() {
        let mut j = Vec::new();
        render_json(&mut j, &full_report()).unwrap();
        let text = String::from_utf8(j).unwrap();
        // The wire types read back what they wrote.
        let back: crate::explain::json::JsonReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, crate::explain::json::from_report(&full_report()));
        insta::assert_snapshot!(text);
    }

    /// Issue 8 section 5: summary lines were 127-154 characters.
    #[test]
    fn issue8_summary_lines_fit_80_columns() {
        let mut r = full_report();
        let f = r.findings[0].0.clone();
        for c in CheckId::ALL {
            let mut g = f.clone();
            g.check = c;
            r.findings.push((g, false));
        }
        r.ignored = 123_456;
        let lines = summary_lines(&r);
        assert!(lines.len() >= 3, "{lines:#?}");
        for l in &lines {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        let joined = lines.join(" ");
        for c in CheckId::ALL {
            assert!(joined.contains(&format!("{c}: ")), "{joined}");
        }
        assert!(joined.contains("1 skipped"), "{joined}");
        assert!(joined.contains("123,456 ignored"), "{joined}");
    }

    #[test]
    fn fail_on_skipped_gates_on_skipped_statements_only_when_asked() {
        let mut r = full_report();
        r.findings.retain(|(f, _)| f.severity != Severity::Error);
        assert_eq!(r.exit_code(false), 0);
        assert_eq!(r.exit_code(true), 1);
        r.results.retain(|e| e.status == Status::Explained);
        assert_eq!(r.exit_code(true), 0);
    }
}
