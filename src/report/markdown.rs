//! The Markdown twin of the review page, written to be a PR comment: the
//! verdict on one line, new findings first, the rest in collapsible
//! sections, under GitHub's comment limit.

use std::fmt::Write;
use std::io;

use super::inputs::{Inputs, finding_key, new_errors, one_line, sorted_findings, subject};
use crate::wire::explain::{JsonFinding, JsonNotJudgedObjects};

/// GitHub refuses comments longer than this (characters).
pub const LIMIT: usize = 65_536;

/// Writes the comment: the gate's verdict first when `i` has one (`planck
/// check --markdown`), then the report, all under [`LIMIT`]. Built whole
/// before it is written, since the limit cuts the end.
pub fn render(w: &mut impl io::Write, i: &Inputs) -> io::Result<()> {
    let text = match &i.gate {
        Some(g) => gate(g, i.explain.not_judged_objects.as_ref()) + &full(i),
        None => full(i),
    };
    w.write_all(truncate(text, LIMIT).as_bytes())
}

/// The gate's verdict as the PR comment opens with it (`planck check
/// --markdown`): passed or failed, and each reason with its file and line.
/// The indexes and tables no check judged (issue 47, 3) are counted under
/// it, listed in their section below.
fn gate(g: &crate::wire::check::JsonGate, objects: Option<&JsonNotJudgedObjects>) -> String {
    let mut out = gate_verdict(g);
    if let Some(o) = objects {
        let _ = writeln!(
            out,
            "{} not judged, their tables too small to show a verdict (see below).\n",
            o.counted()
        );
    }
    out
}

fn gate_verdict(g: &crate::wire::check::JsonGate) -> String {
    let mut out = String::new();
    let fail_on = g.fail_on.join(", ");
    if g.passed && g.not_judged.is_empty() {
        let _ = writeln!(out, "**Gate: passed** (fail_on = [{fail_on}])\n");
        return out;
    }
    if g.passed {
        // Issue 48: no bare "passed" over statements the data could not judge.
        let _ = writeln!(
            out,
            "**Gate: passed for {} of {} statements**; {} not judged (fail_on = [{fail_on}]):\n",
            g.judged(),
            g.statements,
            g.not_judged.len()
        );
        for n in g.not_judged.iter().take(20) {
            let _ = writeln!(
                out,
                "- `{}`: {}",
                cell(&crate::output::shorten(&n.query, 60)).replace('`', "'"),
                cell(&n.reason)
            );
        }
        if g.not_judged.len() > 20 {
            let _ = writeln!(out, "- ... and {} more", g.not_judged.len() - 20);
        }
        out.push('\n');
        return out;
    }
    let _ = writeln!(
        out,
        "**Gate: failed**, {} reason{} (fail_on = [{fail_on}]):\n",
        g.failures.len(),
        if g.failures.len() == 1 { "" } else { "s" }
    );
    // A few lines at most: the sections below hold the details.
    for f in g.failures.iter().take(20) {
        let at = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" (`{file}:{line}`)"),
            _ => String::new(),
        };
        let message = cell(&crate::output::shorten(&f.message, 300));
        let _ = writeln!(out, "- {}: {message}{at}", f.gate);
    }
    if g.failures.len() > 20 {
        let _ = writeln!(out, "- ... and {} more", g.failures.len() - 20);
    }
    out.push('\n');
    out
}

/// Text for a table cell: no pipes, no line breaks, no HTML.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("&#124;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push_str("&#96;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn code(s: &str) -> String {
    format!("<code>{}</code>", cell(s))
}

fn location(f: &JsonFinding) -> String {
    f.location
        .as_ref()
        .map(|l| format!("{}:{}", l.path, l.line))
        .unwrap_or_default()
}

fn findings_table(out: &mut String, findings: &[&JsonFinding]) {
    out.push_str("| severity | check | statement | about | where | message |\n");
    out.push_str("| --- | --- | --- | --- | --- | --- |\n");
    for f in findings {
        let stmt = match (&f.statement_id, &f.query) {
            (Some(id), Some(q)) => format!("{} {}", code(id), code(&one_line(q, 60))),
            (Some(id), None) => code(id),
            _ => String::new(),
        };
        let mode = f
            .mode
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let baseline = if f.baseline { " (baseline)" } else { "" };
        let advice = f
            .advice
            .as_ref()
            .map(|a| {
                format!(
                    "<br>fix: {} (cost {:.0} -> {:.0})",
                    code(&a.sql),
                    a.cost_before,
                    a.cost_after
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| {}{baseline} | {}{mode} | {stmt} | {} | {} | {}{advice} |",
            f.severity,
            cell(&f.check),
            cell(&subject(f)),
            cell(&location(f)),
            cell(&f.message),
        );
    }
}

fn full(i: &Inputs) -> String {
    let r = &i.explain;
    let mut out = String::new();
    let errors = new_errors(r);
    let verdict = if errors == 0 { "pass" } else { "fail" };
    let _ = writeln!(
        out,
        "## planck: {verdict}: {errors} new error finding{}, {} finding{} in all, {} statement{} explained, {} skipped\n",
        if errors == 1 { "" } else { "s" },
        r.findings.len(),
        if r.findings.len() == 1 { "" } else { "s" },
        r.summary.explained,
        if r.summary.explained == 1 { "" } else { "s" },
        r.summary.skipped,
    );

    // New findings first: against the base when there is one, else those
    // the baseline does not hold.
    let all = sorted_findings(&r.findings);
    let new: Vec<&JsonFinding> = match &i.diff {
        Some(d) => {
            let keys: std::collections::BTreeSet<String> =
                d.new_findings.iter().map(finding_key).collect();
            all.iter()
                .copied()
                .filter(|f| keys.contains(&finding_key(f)))
                .collect()
        }
        None => all.iter().copied().filter(|f| !f.baseline).collect(),
    };
    let against = match (&i.diff, &i.base_label) {
        (Some(_), Some(l)) => format!(" (against {})", cell(l)),
        (Some(_), None) => " (against the base)".to_string(),
        (None, _) => " (not in the baseline)".to_string(),
    };
    let _ = writeln!(out, "### New findings{against}: {}\n", new.len());
    if new.is_empty() {
        out.push_str("None.\n\n");
    } else {
        findings_table(&mut out, &new);
        out.push('\n');
    }

    if let Some(d) = &i.diff {
        changes_section(&mut out, d);
    }

    let _ = writeln!(
        out,
        "<details><summary>All findings: {}</summary>\n",
        all.len()
    );
    if all.is_empty() {
        out.push_str("None.\n\n");
    } else {
        findings_table(&mut out, &all);
        out.push('\n');
    }
    out.push_str("</details>\n\n");

    skipped_and_environment(&mut out, r);

    replay_section(&mut out, i.replay.as_ref());
    out
}

/// The diff's details: plan changes, replay steps before and after, fixed findings.
fn changes_section(out: &mut String, d: &crate::wire::diff::JsonDiff) {
    let _ = writeln!(
        out,
        "<details><summary>What changed: {} plan change{}, {} fixed finding{}</summary>\n",
        d.plan_changes.len(),
        if d.plan_changes.len() == 1 { "" } else { "s" },
        d.fixed_findings.len(),
        if d.fixed_findings.len() == 1 { "" } else { "s" },
    );
    if !d.plan_changes.is_empty() {
        out.push_str(
            "| statement | mode | plan | cost | change |\n| --- | --- | --- | --- | --- |\n",
        );
        for c in &d.plan_changes {
            let mut what = c.changes.iter().map(|s| cell(s)).collect::<Vec<_>>();
            for (idx, lost) in c.indexes_no_longer_used.iter().zip(c.lost_indexes()) {
                let at = lost.strip_prefix(idx.as_str()).unwrap_or("");
                what.push(format!("no longer uses {}{}", code(idx), cell(at)));
            }
            let _ = writeln!(
                out,
                "| {} {} | {} | {} | {:.1} -> {:.1} ({}x) | {} |",
                code(&c.statement_id),
                code(&one_line(&c.query, 60)),
                cell(&c.mode),
                cell(&c.kind),
                c.base_cost,
                c.head_cost,
                c.cost_ratio,
                what.join("<br>")
            );
        }
        out.push('\n');
    }
    if !d.replay_steps.is_empty() {
        out.push_str("Replay, per ladder step:\n\n");
        out.push_str(
            "| clients | p95 ms before | p95 ms now | p95 | units/s before | units/s now |\n",
        );
        out.push_str("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for s in &d.replay_steps {
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {}x | {:.0} | {:.0} |",
                s.concurrency,
                s.base_p95_ms,
                s.head_p95_ms,
                s.p95_ratio,
                s.base_throughput_per_s,
                s.head_throughput_per_s
            );
        }
        out.push('\n');
    }
    if !d.fixed_findings.is_empty() {
        out.push_str("Fixed:\n\n");
        let fixed = sorted_findings(&d.fixed_findings);
        findings_table(out, &fixed);
        out.push('\n');
    }
    if d.is_empty() {
        out.push_str("Nothing changed beyond the noise.\n\n");
    }
    out.push_str("</details>\n\n");
}

/// The indexes and tables no check judged for want of rows (issue 47, 3),
/// in a collapsed section: each with its check, its table's rows and why.
fn not_judged_objects(out: &mut String, r: &crate::wire::explain::JsonReport) {
    let Some(o) = &r.not_judged_objects else {
        return;
    };
    let _ = writeln!(
        out,
        "<details><summary>Not judged: {} (min_table_rows {})</summary>\n",
        o.counted(),
        crate::output::count(o.min_table_rows)
    );
    out.push_str("| check | index | table | rows | why |\n| --- | --- | --- | ---: | --- |\n");
    for x in &o.objects {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(&x.check),
            x.index.as_deref().map(code).unwrap_or_default(),
            code(&x.table),
            crate::output::count(x.rows),
            cell(&x.reason)
        );
    }
    out.push_str("\n</details>\n\n");
}

/// The skipped statements and the environment, each in a collapsed section.
fn skipped_and_environment(out: &mut String, r: &crate::wire::explain::JsonReport) {
    not_judged_objects(out, r);
    let skipped: Vec<_> = r
        .statements
        .iter()
        .filter(|s| s.status == "skipped")
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Skipped statements: {}</summary>\n",
            skipped.len()
        );
        out.push_str("| statement | reason |\n| --- | --- |\n");
        for s in skipped {
            let _ = writeln!(
                out,
                "| {} {} | {} |",
                code(&s.id),
                code(&one_line(&s.query, 60)),
                cell(s.reason.as_deref().unwrap_or(""))
            );
        }
        out.push_str("\n</details>\n\n");
    }

    if let Some(env) = &r.environment {
        out.push_str("<details><summary>Environment</summary>\n\n");
        let _ = writeln!(out, "PostgreSQL {}\n", cell(&env.server_version));
        if let Some(t) = &env.tenant {
            let _ = writeln!(
                out,
                "Heaviest tenant: {} ({:.0}% of the rows)\n",
                code(&t.id),
                t.share * 100.0
            );
        }
        if !env.tables.is_empty() {
            out.push_str("| table | rows | size |\n| --- | ---: | ---: |\n");
            for t in &env.tables {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    code(&t.name),
                    t.rows,
                    bytes(t.bytes)
                );
            }
            out.push('\n');
        }
        if !env.settings.is_empty() {
            out.push_str("| setting | value |\n| --- | --- |\n");
            for (k, v) in &env.settings {
                let _ = writeln!(out, "| {} | {} |", code(k), code(v));
            }
            out.push('\n');
        }
        out.push_str("</details>\n\n");
    }
}

/// The replay's section: its steps, USL fit and lock hotspots.
fn replay_section(out: &mut String, replay: Option<&crate::wire::replay::ReplayReport>) {
    match replay {
        None => out.push_str(
            "_No replay was given (`--replay`), so this report has no replay section._\n",
        ),
        Some(rp) => {
            let _ = writeln!(out, "### Replay: {}\n", cell(&rp.verdict.text));
            if !rp.server_version.is_empty() {
                let _ = writeln!(out, "On PostgreSQL {}.\n", cell(&rp.server_version));
            }
            let metrics = crate::wire::replay::STEP_METRICS;
            out.push_str("| clients | units/s | p50 ms | p95 ms | p99 ms |");
            for m in metrics {
                let _ = write!(out, " {} |", m.header);
            }
            out.push_str(" errors | shape |\n| ---: | ---: | ---: | ---: | ---: |");
            out.push_str(&" ---: |".repeat(metrics.len()));
            out.push_str(" ---: | --- |\n");
            for s in &rp.steps {
                let errors: u64 = s.errors.values().sum();
                let _ = write!(
                    out,
                    "| {} | {:.0} | {:.1} | {:.1} | {:.1} |",
                    s.concurrency, s.throughput_per_s, s.p50_ms, s.p95_ms, s.p99_ms,
                );
                for m in metrics {
                    let _ = write!(out, " {} |", cell(&(m.cell)(s)));
                }
                let _ = writeln!(out, " {errors} | {} |", s.shape.as_str());
            }
            if let Some(u) = &rp.verdict.usl {
                let _ = writeln!(
                    out,
                    "\nUSL fit: lambda {:.1}, sigma {:.4}, kappa {:.5}, R² {:.3}{}",
                    u.lambda,
                    u.sigma,
                    u.kappa,
                    u.r2,
                    u.n_star
                        .map(|n| format!(", peak near {n:.1} clients"))
                        .unwrap_or_default()
                );
            }
            if rp.interrupted {
                out.push_str("\nThe replay was interrupted: finished steps only.\n");
            }
            if !rp.hotspots.is_empty() {
                let _ = writeln!(
                    out,
                    "\n<details><summary>Lock hotspots: {}</summary>\n",
                    rp.hotspots.len()
                );
                out.push_str("| step | lock | relation | row | waiting | blocker | wait s |\n");
                out.push_str("| ---: | --- | --- | --- | --- | --- | ---: |\n");
                for h in &rp.hotspots {
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} | {} | {} | {:.2} |",
                        h.step_index,
                        cell(&h.lock_type),
                        cell(h.relation.as_deref().unwrap_or("")),
                        cell(&h.row),
                        code(&one_line(h.waiting_statement.as_deref().unwrap_or(""), 50)),
                        cell(&h.blocker_state),
                        h.wait_seconds
                    );
                }
                out.push_str("\n</details>\n");
            }
        }
    }
}

pub(crate) fn bytes(b: i64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Cuts `text` to at most `limit` characters at a line break, closes any
/// collapsible section left open, and says so.
fn truncate(text: String, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text;
    }
    let note = "\n_The report was cut here to stay under GitHub's 65,536-character comment limit; \
                the full review is in review.html._\n";
    // Room for the note and for closing the sections left open.
    let budget = limit - note.chars().count() - 200;
    let cut: String = text.chars().take(budget).collect();
    let cut = match cut.rfind('\n') {
        Some(n) => cut[..=n].to_string(),
        None => cut,
    };
    let open = cut.matches("<details>").count();
    let closed = cut.matches("</details>").count();
    let mut out = cut;
    for _ in closed..open {
        out.push_str("\n</details>\n");
    }
    out.push_str(note);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The output as text, written through the module's renderer.
    fn render(i: &Inputs) -> String {
        fixture::text(crate::report::Output::Markdown, i)
    }

    /// The output with `planck check`'s gate in the inputs.
    fn render_with_gate(i: &Inputs, g: &crate::wire::check::JsonGate) -> String {
        render(&Inputs {
            gate: Some(g.clone()),
            ..i.clone()
        })
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&fixture::inputs()));
    }

    #[test]
    fn without_a_replay_it_says_so_and_without_a_diff_new_means_not_in_the_baseline() {
        let mut i = fixture::inputs();
        i.replay = None;
        i.diff = None;
        let md = render(&i);
        assert!(md.contains("No replay was given"), "{md}");
        assert!(
            md.contains("### New findings (not in the baseline): 3"),
            "{md}"
        );
        assert!(!md.contains("What changed"));
    }

    /// issue 14: with both sides replayed, "what changed" shows the p95
    /// delta of every step both ran.
    #[test]
    fn what_changed_shows_p95_per_step_when_both_sides_replayed() {
        let mut i = fixture::inputs();
        let base = fixture::replay();
        let mut head = base.clone();
        head.steps[1].p95_ms = base.steps[1].p95_ms * 2.0;
        head.steps.pop();
        let steps = crate::wire::diff::replay_steps(&base, &head);
        assert_eq!(steps.len(), head.steps.len(), "{steps:?}");
        assert_eq!(steps[1].p95_ratio, 2.0);
        assert_eq!(steps[0].p95_ratio, 1.0);
        assert!(!render(&i).contains("Replay, per ladder step"));
        i.diff.as_mut().unwrap().replay_steps = steps.clone();
        let md = render(&i);
        assert!(md.contains("Replay, per ladder step"), "{md}");
        let row = format!(
            "| {} | {:.1} | {:.1} | 2x |",
            steps[1].concurrency, steps[1].base_p95_ms, steps[1].head_p95_ms
        );
        assert!(md.contains(&row), "{row} not in:\n{md}");
    }

    /// Issue 47, 3: the indexes and tables no check judged have a section of
    /// their own, and check's comment counts them under its verdict.
    #[test]
    fn indexes_and_tables_not_judged_are_listed_and_counted_under_the_gate() {
        let i = crate::report::inputs::inputs_with_unjudged_objects();
        let md = render(&i);
        assert!(
            md.contains("<details><summary>Not judged: 1 index and 1 table (min_table_rows 100)"),
            "{md}"
        );
        assert!(
            md.contains(
                "| unused-index | <code>menu_items_label_idx</code> | <code>menu_items</code> | 6 | \
                 menu_items holds 6 rows, below min_table_rows (100) |"
            ),
            "{md}"
        );
        let g = crate::report::inputs::inputs_with_unjudged().gate.unwrap();
        let md = render_with_gate(&i, &g);
        assert!(
            md.contains("1 index and 1 table not judged, their tables too small"),
            "{md}"
        );
        assert!(!render(&fixture::inputs()).contains("min_table_rows"));
    }

    /// issue 14: `planck check --markdown` opens with the gate's verdict,
    /// each reason with its file and line, escaped like any cell.
    #[test]
    fn the_check_comment_opens_with_the_gate() {
        use crate::wire::check::{JsonGate, JsonGateFailure};
        let failure = |gate: &str, message: &str, at: Option<(&str, usize)>| JsonGateFailure {
            gate: gate.into(),
            message: message.into(),
            statement_id: None,
            query: None,
            index: None,
            file: at.map(|a| a.0.to_string()),
            line: at.map(|a| a.1),
        };
        let mut g = JsonGate {
            passed: false,
            fail_on: vec!["errors".into(), "slo".into()],
            failures: vec![
                failure(
                    "slo",
                    "SLO missed: p95 at 4 clients is 9.00 ms, above 1.00 ms",
                    None,
                ),
                failure(
                    "regressions",
                    "`SELECT <b>x</b> | y` lost an index",
                    Some(("migrations/0006_drop.sql", 3)),
                ),
            ],
            statements: 0,
            not_judged: vec![],
        };
        let md = render_with_gate(&fixture::inputs(), &g);
        assert!(
            md.starts_with("**Gate: failed**, 2 reasons (fail_on = [errors, slo]):\n"),
            "{md}"
        );
        assert!(
            md.contains("- slo: SLO missed: p95 at 4 clients is 9.00 ms"),
            "{md}"
        );
        assert!(md.contains("(`migrations/0006_drop.sql:3`)"), "{md}");
        assert!(!md.contains("<b>"), "{md}");
        assert!(
            md.contains(&render(&fixture::inputs())),
            "the report follows"
        );
        g.passed = true;
        g.failures.clear();
        assert!(render_with_gate(&fixture::inputs(), &g).starts_with("**Gate: passed**"));
        // Issue 48: statements the data could not judge are said, not passed.
        g.statements = 3;
        g.not_judged = vec![crate::wire::check::JsonNotJudged {
            statement_id: "s1".into(),
            query: "SELECT * FROM cards WHERE board_id = $1".into(),
            reason: "every table it reads is below min_rows (10,000): cards 4,000 rows".into(),
        }];
        let md = render_with_gate(&fixture::inputs(), &g);
        assert!(
            md.starts_with("**Gate: passed for 2 of 3 statements**; 1 not judged"),
            "{md}"
        );
        assert!(md.contains("cards 4,000 rows"), "{md}");
    }

    #[test]
    fn a_long_report_is_cut_under_the_limit_with_a_note() {
        let mut i = fixture::inputs();
        let f = i.explain.findings[0].clone();
        for n in 0..2000 {
            let mut g = f.clone();
            g.statement_id = Some(format!("s{n}"));
            i.explain.findings.push(g);
        }
        let md = render(&i);
        assert!(md.chars().count() <= LIMIT, "{}", md.chars().count());
        assert!(md.contains("was cut here"));
        assert_eq!(
            md.matches("<details>").count(),
            md.matches("</details>").count()
        );
        assert!(md.starts_with("## planck: fail"));
    }

    #[test]
    fn cells_cannot_break_the_table_or_inject_html() {
        assert_eq!(
            cell("a|b\n<img src=x onerror=alert(1)>`"),
            "a&#124;b &lt;img src=x onerror=alert(1)&gt;&#96;"
        );
    }
}
