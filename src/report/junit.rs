//! JUnit XML, so every CI shows findings as failed tests: one test case per
//! statement and mode (failed when it has an error finding the baseline does
//! not hold, skipped when the statement was skipped), and one per schema
//! object with findings (an unused index, an RLS policy). With a replay,
//! one case per ladder step (its p95 and throughput in the output); from
//! `planck check`, one failed case per reason of the gate that no other
//! case carries (a blocking migration statement, a missed SLO).

use std::collections::BTreeMap;
use std::io;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::inputs::{Inputs, finding_help, not_judged_objects, sorted_findings, subject};
use super::plan;
use crate::wire::explain::{JsonFinding, JsonStatement};

/// Writes the XML: the report's cases and, with `planck check`'s gate in
/// `i`, the gate's own reasons.
pub fn render(w: &mut impl io::Write, i: &Inputs) -> io::Result<()> {
    let mut report = build(i);
    if let Some(g) = &i.gate {
        report.add_test_suite(gate_suite(g));
    }
    report.serialize(w).map_err(io::Error::other)
}

/// `planck check --junit`'s suite of the gate reasons no statement case
/// carries (a blocking migration statement, a missed SLO).
fn gate_suite(g: &crate::wire::check::JsonGate) -> TestSuite {
    let mut gate = TestSuite::new("planck check: gate");
    // Errors and regressions fail the cases above; the rest fail here.
    for f in g
        .failures
        .iter()
        .filter(|f| f.gate != "errors" && f.gate != "regressions")
    {
        let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
        st.set_message(f.message.clone());
        st.set_type(f.gate.clone());
        let mut case = TestCase::new(format!("{}: {}", f.gate, f.message), st);
        case.set_classname(match (&f.file, f.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            _ => "check".to_string(),
        });
        gate.add_test_case(case);
    }
    gate
}

fn build(i: &Inputs) -> Report {
    let r = &i.explain;
    let findings = sorted_findings(&r.findings);
    let mut statements = TestSuite::new("planck explain: statements");
    for s in &r.statements {
        for mode in modes(s) {
            let mine: Vec<&JsonFinding> = findings
                .iter()
                .copied()
                .filter(|f| {
                    f.statement_id.as_deref() == Some(s.id.as_str())
                        && f.mode.as_deref().is_none_or(|m| m == mode)
                })
                .collect();
            let name = format!("{} ({mode})", s.id);
            // Issue 48: a statement the data could not judge (a table
            // empty or nearly, or only tables below min_rows) and with no
            // finding is skipped, not passed.
            let small = i
                .explain
                .below_min_rows
                .as_ref()
                .filter(|b| mine.is_empty() && b.statements.contains(&s.id))
                .map(|b| {
                    format!(
                        "not judged: it reads only tables below min_rows ({})",
                        crate::output::count(b.min_rows)
                    )
                });
            let mut case = if s.status == "skipped" || s.status == "not_judged" || small.is_some() {
                let mut st = TestCaseStatus::skipped();
                st.set_message(
                    s.reason
                        .clone()
                        .or(small)
                        .unwrap_or_else(|| "skipped".into()),
                );
                TestCase::new(name, st)
            } else {
                TestCase::new(name, status(&mine, Some(s)))
            };
            case.set_classname(classname(&mine, "queries"));
            case.set_system_out(format!("{}\n", s.query.trim()));
            statements.add_test_case(case);
        }
    }

    // Findings about a schema object rather than a statement, one case per object.
    let mut objects: BTreeMap<(String, String), Vec<&JsonFinding>> = BTreeMap::new();
    for f in findings.iter().filter(|f| f.statement_id.is_none()) {
        objects
            .entry((f.check.clone(), subject(f)))
            .or_default()
            .push(f);
    }
    let mut schema = TestSuite::new("planck explain: schema");
    for ((check, about), fs) in &objects {
        let mut case = TestCase::new(format!("{check} {about}"), status(fs, None));
        case.set_classname(classname(fs, "schema"));
        schema.add_test_case(case);
    }
    // Issue 47, 3: an index or table no check judged for want of rows is a
    // skipped case that says why, not a passed one (nor a missing one).
    for o in not_judged_objects(i) {
        let about = match &o.index {
            Some(ix) => format!("{ix} on {}", o.table),
            None => o.table.clone(),
        };
        let mut st = TestCaseStatus::skipped();
        st.set_message(format!("not judged: {}", o.reason));
        let mut case = TestCase::new(format!("{} {about}", o.check), st);
        case.set_classname("schema");
        schema.add_test_case(case);
    }

    let mut report = Report::new("planck");
    report.add_test_suite(statements);
    report.add_test_suite(schema);
    // With a diff: a plan the change made worse fails a case of its own.
    if let Some(d) = &i.diff {
        let mut changes = TestSuite::new("planck check: plan regressions");
        for c in d.regressions() {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_message(c.summary());
            st.set_description(format!("{}\n{}\n", c.query.trim(), c.summary()));
            let mut case =
                TestCase::new(format!("{} ({}, {})", c.statement_id, c.mode, c.kind), st);
            case.set_classname(match c.dropped.first() {
                Some(d) => format!("{}:{}", d.path, d.line),
                None => "queries".to_string(),
            });
            changes.add_test_case(case);
        }
        report.add_test_suite(changes);
    }
    if let Some(rp) = &i.replay {
        let mut ladder = TestSuite::new("planck replay: ladder");
        for s in &rp.steps {
            let mut case = TestCase::new(
                format!(
                    "replay at {}",
                    crate::output::count_of(u64::from(s.concurrency), "client")
                ),
                TestCaseStatus::success(),
            );
            case.set_classname("replay");
            case.set_system_out(format!(
                "p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, {:.1} units/s, {} errors\n",
                s.p50_ms,
                s.p95_ms,
                s.p99_ms,
                s.throughput_per_s,
                s.errors.values().sum::<u64>()
            ));
            ladder.add_test_case(case);
        }
        report.add_test_suite(ladder);
    }
    report
}

/// The modes a statement was judged in, from its plans (a skipped one has
/// none: its judged mode, else one case named `-`).
fn modes(s: &JsonStatement) -> Vec<String> {
    let mut m: Vec<String> = Vec::new();
    for p in &s.plans {
        if !m.contains(&p.mode) {
            m.push(p.mode.clone());
        }
    }
    m.sort();
    if m.is_empty() {
        m.push(match s.mode.as_deref() {
            Some("both") | None => "-".to_string(),
            Some(x) => x.to_string(),
        });
    }
    m
}

/// Where the case came from, so CI groups it by file: the queries file or the migration.
fn classname(fs: &[&JsonFinding], fallback: &str) -> String {
    fs.iter().find_map(|f| f.location.as_ref()).map_or_else(
        || fallback.to_string(),
        |l| format!("{}:{}", l.path, l.line),
    )
}

fn status(fs: &[&JsonFinding], s: Option<&JsonStatement>) -> TestCaseStatus {
    let failing: Vec<&&JsonFinding> = fs.iter().filter(|f| f.is_new_error()).collect();
    if failing.is_empty() {
        return TestCaseStatus::success();
    }
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
    st.set_message(
        failing
            .iter()
            .map(|f| format!("{}: {}", f.check, f.message))
            .collect::<Vec<_>>()
            .join("; "),
    );
    st.set_type(failing[0].check.clone());
    let mut body = String::new();
    for f in fs {
        let held = if f.baseline { " (baseline)" } else { "" };
        body.push_str(&format!(
            "{} {}{held}: {}\n",
            f.severity, f.check, f.message
        ));
        body.push_str(&format!("  help: {}\n", finding_help(&f.check, &f.help)));
        if let Some(a) = &f.advice {
            body.push_str(&format!(
                "  fix: {} (cost {:.0} -> {:.0})\n",
                a.sql, a.cost_before, a.cost_after
            ));
        }
        // The plan excerpt: the tree the finding was read from, its node marked.
        if let (Some(n), Some(s)) = (&f.node, s)
            && let Some(p) = s.plans.get(n.plan)
        {
            body.push_str(&format!("  plan ({} {}):\n", p.mode, p.kind));
            let rows = plan::rows(&p.plan, &[n.path.as_slice()]);
            for line in plan::text(&rows).lines() {
                body.push_str(&format!("    {line}\n"));
            }
        }
    }
    st.set_description(body);
    st
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The output as text, written through the module's renderer.
    fn render(i: &Inputs) -> String {
        fixture::text(crate::report::Output::Junit, i)
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

    /// Issue 48: a statement that read only tables below min_rows, with no
    /// finding, is a skipped case that says why, not a passed one.
    #[test]
    fn a_statement_on_tables_below_min_rows_is_skipped_not_passed() {
        let mut i = fixture::inputs();
        // The fixture's index-only lookup, without any finding of its own.
        let clean = "c9d0e1f2".to_string();
        i.explain
            .findings
            .retain(|f| f.statement_id.as_deref() != Some(clean.as_str()));
        let before = render(&i);
        i.explain.below_min_rows = crate::wire::explain::JsonBelowMinRows::from_parts(
            10_000,
            std::slice::from_ref(&clean),
            &[("items".to_string(), 4000)],
        );
        let xml = render(&i);
        let msg = "not judged: it reads only tables below min_rows (10,000)";
        assert!(!before.contains(msg), "{before}");
        assert!(xml.contains(msg), "{xml}");
    }

    /// Issue 47, 3: an index or table no check judged is a skipped case of
    /// the schema suite that says why.
    #[test]
    fn an_index_or_table_not_judged_is_a_skipped_schema_case() {
        let xml = render(&crate::report::inputs::inputs_with_unjudged_objects());
        for (name, msg) in [
            (
                "unused-index menu_items_label_idx on menu_items",
                "not judged: menu_items holds 6 rows, below min_table_rows (100)",
            ),
            (
                "missing-fk-index menu_items",
                "not judged: menu_items holds 6 rows, below min_table_rows (100)",
            ),
        ] {
            let at = xml
                .find(&format!("name=\"{name}\""))
                .unwrap_or_else(|| panic!("{name}: {xml}"));
            let case = &xml[at..at + xml[at..].find("</testcase>").unwrap()];
            assert!(case.contains("<skipped"), "{case}");
            assert!(case.contains(msg), "{case}");
        }
        assert!(!render(&fixture::inputs()).contains("menu_items"));
    }

    /// issue 14: the replay's steps are cases; from check, a missed SLO and
    /// a blocking migration statement fail cases of their own (errors and
    /// regressions already fail the statement cases, so not twice).
    #[test]
    fn replay_steps_and_the_gate_s_own_reasons_are_cases() {
        use crate::wire::check::{JsonGate, JsonGateFailure};
        let i = fixture::inputs();
        let xml = render(&i);
        assert!(xml.contains("name=\"replay at 1 client\""), "{xml}");
        for s in &fixture::replay().steps {
            assert!(
                xml.contains(&format!(
                    "name=\"replay at {}\"",
                    crate::output::count_of(u64::from(s.concurrency), "client")
                )),
                "{xml}"
            );
        }
        let failure = |gate: &str, at: Option<(&str, usize)>| JsonGateFailure {
            gate: gate.into(),
            message: format!("{gate} reason"),
            statement_id: None,
            query: None,
            index: None,
            file: at.map(|a| a.0.to_string()),
            line: at.map(|a| a.1),
        };
        let g = JsonGate {
            passed: false,
            fail_on: vec!["errors".into(), "blocking-migration".into(), "slo".into()],
            failures: vec![
                failure("errors", None),
                failure("blocking-migration", Some(("migrations/0007.sql", 2))),
                failure("slo", None),
            ],
            statements: 0,
            not_judged: vec![],
        };
        let xml = render_with_gate(&i, &g);
        assert!(
            xml.contains("<testsuite name=\"planck check: gate\" tests=\"2\""),
            "{xml}"
        );
        assert!(xml.contains("classname=\"migrations/0007.sql:2\""), "{xml}");
        assert!(xml.contains("type=\"slo\""), "{xml}");
        assert!(!xml.contains("errors reason"), "{xml}");
    }

    #[test]
    fn error_findings_fail_skipped_statements_skip_and_the_baseline_passes() {
        let xml = render(&fixture::inputs());
        // Two error findings, and the fixture's diff holds two plans that
        // lost an index: each fails a case of its own.
        assert_eq!(xml.matches("<failure").count(), 4, "{xml}");
        assert!(
            xml.contains(r#"<testsuite name="planck check: plan regressions" tests="2" skipped="0" errors="0" failures="2">"#),
            "{xml}"
        );
        let mut no_diff = fixture::inputs();
        no_diff.diff = None;
        let xml = render(&no_diff);
        assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
        assert_eq!(xml.matches("<skipped").count(), 1, "{xml}");
        assert!(xml.contains(r#"name="unused-index items_title_idx on items""#));
        assert!(
            xml.contains("    &gt;&gt;     Seq Scan on items  (cost 85000.00"),
            "{xml}"
        );
        // The same report with every finding in the baseline fails nothing.
        let mut i = no_diff;
        for f in &mut i.explain.findings {
            f.baseline = true;
        }
        assert_eq!(render(&i).matches("<failure").count(), 0);
    }
}
