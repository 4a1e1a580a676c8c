//! The review page: one self-contained HTML file (inline CSS, JS and SVG,
//! no network). Rendered with minijinja templates whose names end in
//! `.html`, so every value is HTML-escaped where it lands (text and
//! attributes alike); the one value written raw is the plan JSON inside
//! `<script type="application/json">`, escaped by [`script_json`] instead.

use std::collections::{BTreeMap, BTreeSet};

use minijinja::{Environment, UndefinedBehavior, Value, context};
use serde::Serialize;

use super::inputs::{Inputs, finding_help, finding_key, new_errors, sorted_findings, subject};
use super::{chart, plan};
use crate::output::thousands;
use crate::wire::explain::{JsonFinding, JsonReport};

/// Every template, by name: the test renders each.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("review.html", include_str!("templates/review.html")),
    ("chart.html", include_str!("templates/chart.html")),
    ("plan.html", include_str!("templates/plan.html")),
];

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("thousands", |v: f64, decimals: Option<usize>| {
        thousands(v, decimals.unwrap_or(0))
    });
    env.add_filter("ratio", ratio);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .expect("templates parse (checked by the tests)");
    }
    env
}

/// A ratio (`1.04`, `12.5`, `8,947`): the places that matter at its size.
pub fn ratio(v: f64) -> String {
    if v.abs() >= 100.0 {
        thousands(v, 0)
    } else if v.abs() >= 10.0 {
        thousands(v, 1)
    } else {
        thousands(v, 2)
    }
}

/// JSON for a `<script type="application/json">` block: `<`, `>`, `&` and
/// U+2028/U+2029 as `\u` escapes, so no text inside can close the element
/// or start markup, and `JSON.parse` still reads the same value.
pub fn script_json(v: &serde_json::Value) -> String {
    let text = serde_json::to_string_pretty(v).expect("a JSON value serializes");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[derive(Serialize)]
struct FindingView {
    anchor: String,
    check: String,
    severity: String,
    mode: Option<String>,
    statement_id: Option<String>,
    statement_anchor: Option<String>,
    query: Option<String>,
    subject: String,
    message: String,
    help: String,
    location: Option<String>,
    baseline: bool,
    new: bool,
    advice: Option<crate::wire::explain::JsonAdvice>,
}

#[derive(Serialize)]
struct PlanView {
    title: String,
    mode: String,
    json_id: String,
    rows: Vec<plan::Row>,
    marked: bool,
}

#[derive(Serialize)]
struct StatementView {
    id: String,
    anchor: String,
    query: String,
    planned_query: Option<String>,
    status: String,
    reason: Option<String>,
    checks: Vec<String>,
    /// Plans side by side, one column per mode (tenant, admin).
    columns: Vec<Vec<PlanView>>,
    plan_count: usize,
    /// Its plans read only tables below explain's `min_rows`.
    below_min_rows: bool,
}

/// explain's `below_min_rows`: the statements no scan check could judge,
/// each with its anchor on the page, and the small tables they read.
#[derive(Serialize)]
struct BelowView {
    min_rows: u64,
    statements: Vec<(String, String)>,
    tables: Vec<crate::wire::explain::JsonTableRows>,
}

/// explain's `not_judged_objects`: the indexes and tables no check judged
/// for want of rows (issue 47, 3), counted in words for the headings.
#[derive(Serialize)]
struct ObjectsView {
    /// `2 indexes and 1 table`.
    counted: String,
    min_table_rows: u64,
    objects: Vec<crate::wire::explain::JsonNotJudgedObject>,
}

#[derive(Serialize)]
struct IndexView {
    name: String,
    table: String,
    used_by: Vec<String>,
    state: &'static str,
}

/// A serializable value for a template.
fn ser<T: Serialize>(v: T) -> Value {
    Value::from(minijinja::value::Serde(v))
}

fn anchor(prefix: &str, id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}-{clean}")
}

fn finding_views(r: &JsonReport, new: &BTreeSet<String>) -> Vec<FindingView> {
    sorted_findings(&r.findings)
        .into_iter()
        .enumerate()
        .map(|(n, f)| FindingView {
            anchor: format!("finding-{n}"),
            check: f.check.clone(),
            severity: f.severity.clone(),
            mode: f.mode.clone(),
            statement_id: f.statement_id.clone(),
            statement_anchor: f.statement_id.as_deref().map(|s| anchor("statement", s)),
            query: f.query.clone(),
            subject: subject(f),
            message: f.message.clone(),
            help: finding_help(&f.check, &f.help),
            location: f
                .location
                .as_ref()
                .map(|l| format!("{}:{}", l.path, l.line)),
            baseline: f.baseline,
            new: new.contains(&finding_key(f)),
            advice: f.advice.clone(),
        })
        .collect()
}

/// The statements to show plans for: those with findings, then the rest.
fn statement_views(r: &JsonReport, scripts: &mut Vec<(String, String)>) -> Vec<StatementView> {
    let mut by_statement: BTreeMap<&str, Vec<&JsonFinding>> = BTreeMap::new();
    for f in &r.findings {
        if let Some(id) = &f.statement_id {
            by_statement.entry(id.as_str()).or_default().push(f);
        }
    }
    let mut order: Vec<_> = r.statements.iter().collect();
    order.sort_by_key(|s| !by_statement.contains_key(s.id.as_str()));
    order
        .into_iter()
        .map(|s| {
            let fs = by_statement.get(s.id.as_str()).cloned().unwrap_or_default();
            let mut columns: BTreeMap<String, Vec<PlanView>> = BTreeMap::new();
            for (pi, p) in s.plans.iter().enumerate() {
                let marked: Vec<&[usize]> = fs
                    .iter()
                    .filter_map(|f| f.node.as_ref())
                    .filter(|n| n.plan == pi)
                    .map(|n| n.path.as_slice())
                    .collect();
                let json_id = format!("plan-{}-{pi}", anchor("s", &s.id));
                scripts.push((json_id.clone(), script_json(&p.plan)));
                let whose = p
                    .tenant
                    .as_deref()
                    .map(|t| {
                        let id = p
                            .tenant_id
                            .as_deref()
                            .map(|i| format!(" {i}"))
                            .unwrap_or_default();
                        format!(", {t} tenant{id}")
                    })
                    .unwrap_or_default();
                columns.entry(p.mode.clone()).or_default().push(PlanView {
                    title: format!("{} · {} plan{whose}", p.mode, p.kind),
                    mode: p.mode.clone(),
                    json_id,
                    rows: plan::rows(&p.plan, &marked),
                    marked: !marked.is_empty(),
                });
            }
            // Tenant on the left, admin on the right.
            let mut cols: Vec<(String, Vec<PlanView>)> = columns.into_iter().collect();
            cols.sort_by_key(|(m, _)| if m == "tenant" { 0 } else { 1 });
            let mut checks: Vec<String> = fs.iter().map(|f| f.check.clone()).collect();
            checks.dedup();
            StatementView {
                id: s.id.clone(),
                anchor: anchor("statement", &s.id),
                query: s.query.clone(),
                planned_query: s.planned_query.clone(),
                status: s.status.clone(),
                reason: s.reason.clone(),
                checks,
                plan_count: s.plans.len(),
                below_min_rows: r
                    .below_min_rows
                    .as_ref()
                    .is_some_and(|b| b.statements.contains(&s.id)),
                columns: cols.into_iter().map(|(_, v)| v).collect(),
            }
        })
        .collect()
}

/// The index table: explain's list when it has one, else the indexes the
/// plans read; with what the findings say about each.
fn index_views(r: &JsonReport) -> Vec<IndexView> {
    let mut uses: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    if r.indexes.is_empty() {
        for s in &r.statements {
            for p in &s.plans {
                let mut names = BTreeMap::new();
                index_names(plan_root(&p.plan), &mut names);
                for (name, table) in names {
                    uses.entry((name, table))
                        .or_default()
                        .insert(format!("{} ({})", s.id, p.mode));
                }
            }
        }
    } else {
        for i in &r.indexes {
            let e = uses.entry((i.name.clone(), i.table.clone())).or_default();
            for u in &i.used_by {
                e.insert(format!("{} ({})", u.statement_id, u.mode));
            }
        }
    }
    // Indexes only a finding names (unused, duplicate) still get a row.
    for f in &r.findings {
        if let (Some(i), Some(t)) = (&f.index, &f.relation) {
            uses.entry((i.clone(), t.clone())).or_default();
        }
    }
    uses.into_iter()
        .map(|((name, table), used_by)| {
            let about = |check: &str| {
                r.findings
                    .iter()
                    .any(|f| f.check == check && f.index.as_deref() == Some(name.as_str()))
            };
            let state = if about("partial-index-needs-literal") {
                "partial: needs a literal"
            } else if about("unused-index") || about("unused-partial-index") || used_by.is_empty() {
                "unused"
            } else if about("duplicate-index") {
                "duplicate"
            } else {
                "used"
            };
            IndexView {
                name,
                table,
                used_by: used_by.into_iter().collect(),
                state,
            }
        })
        .collect()
}

fn plan_root(plan: &serde_json::Value) -> &serde_json::Value {
    plan.get(0)
        .and_then(|r| r.get("Plan"))
        .or_else(|| plan.get("Plan"))
        .unwrap_or(plan)
}

fn index_names(node: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    let s = |k: &str| node.get(k).and_then(serde_json::Value::as_str);
    if let Some(i) = s("Index Name") {
        let table = s("Relation Name").unwrap_or("").to_string();
        out.entry(i.to_string()).or_insert(table);
    }
    for c in node
        .get("Plans")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
    {
        index_names(c, out);
    }
}

/// Writes the page (rendered whole by the template first).
pub fn render(w: &mut impl std::io::Write, i: &Inputs) -> std::io::Result<()> {
    let r = &i.explain;
    let new: BTreeSet<String> = match &i.diff {
        Some(d) => d.new_findings.iter().map(finding_key).collect(),
        None => r
            .findings
            .iter()
            .filter(|f| !f.baseline)
            .map(finding_key)
            .collect(),
    };
    let findings = finding_views(r, &new);
    let mut groups: Vec<(String, Vec<&FindingView>)> = Vec::new();
    for f in &findings {
        match groups.last_mut() {
            Some((s, v)) if *s == f.severity => v.push(f),
            _ => groups.push((f.severity.clone(), vec![f])),
        }
    }
    let mut scripts = Vec::new();
    let statements = statement_views(r, &mut scripts);
    let scripts: Vec<Value> = scripts
        .into_iter()
        .map(|(id, json)| context! { id => id, json => Value::from_safe_string(json) })
        .collect();
    let not_judged: Vec<&StatementView> = statements
        .iter()
        .filter(|s| s.status == "not_judged")
        .collect();
    let below = r.below_min_rows.as_ref().map(|b| BelowView {
        min_rows: b.min_rows,
        statements: b
            .statements
            .iter()
            .map(|id| (id.clone(), anchor("statement", id)))
            .collect(),
        tables: b.tables.clone(),
    });
    let objects = r.not_judged_objects.as_ref().map(|o| ObjectsView {
        counted: o.counted(),
        min_table_rows: o.min_table_rows,
        objects: o.objects.clone(),
    });
    let errors = new_errors(r);
    let replay = i.replay.as_ref();
    // Wait events summed over the steps, biggest first.
    let mut waits: BTreeMap<(String, String), u64> = BTreeMap::new();
    for w in replay.map(|r| r.wait_events.as_slice()).unwrap_or(&[]) {
        *waits
            .entry((w.wait_event_type.clone(), w.wait_event.clone()))
            .or_default() += w.samples;
    }
    let total: u64 = waits.values().sum();
    let mut waits: Vec<_> = waits.into_iter().collect();
    waits.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let waits: Vec<Value> = waits
        .into_iter()
        .map(|((t, e), n)| {
            context! { kind => t, event => e, samples => n,
            share => format!("{:.1}", 100.0 * n as f64 / total.max(1) as f64) }
        })
        .collect();
    let ctx = context! {
        verdict => if errors == 0 { "pass" } else { "fail" },
        new_errors => errors,
        summary => ser(&r.summary),
        finding_count => findings.len(),
        groups => ser(&groups),
        statements => ser(&statements),
        not_judged => ser(&not_judged),
        below => ser(&below),
        objects => ser(&objects),
        scripts => scripts,
        environment => ser(&r.environment),
        table_bytes => ser(r.environment.as_ref().map(|e| e.tables.iter()
            .map(|t| super::markdown::bytes(t.bytes)).collect::<Vec<_>>())),
        indexes => ser(index_views(r)),
        replay => ser(replay),
        // Each step's metrics (`STEP_METRICS`): the headers, and a row of cells per step.
        step_metrics => crate::wire::replay::STEP_METRICS.iter().map(|m| m.header).collect::<Vec<_>>(),
        step_metric_cells => replay.map(|r| r.steps.iter()
            .map(|s| crate::wire::replay::STEP_METRICS.iter().map(|m| (m.cell)(s)).collect::<Vec<_>>())
            .collect::<Vec<_>>()).unwrap_or_default(),
        panels => ser(replay.map(chart::panels).unwrap_or_default()),
        waits => waits,
        diff => ser(&i.diff),
        base_label => i.base_label.as_deref().unwrap_or("the base"),
    };
    let page = environment()
        .get_template("review.html")
        .and_then(|t| t.render(ctx))
        .expect("the review template renders (checked by the tests)");
    w.write_all(page.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The output as text, written through the module's renderer.
    fn render(i: &Inputs) -> String {
        fixture::text(crate::report::Output::Html, i)
    }

    const HOSTILE: &str = "</script><img src=x onerror=alert(1)>";

    #[test]
    fn every_template_renders() {
        // review.html includes the others; render it with and without the
        // optional parts, then each template on its own.
        let full = render(&fixture::inputs());
        assert!(full.contains("<svg"), "chart");
        assert!(full.contains("class=\"plan-node marked\""), "a marked node");
        assert!(full.contains("(PostgreSQL 15.8)"), "the replay's server");
        // Each step metric is a column of the steps' table, a cell per step.
        for m in crate::wire::replay::STEP_METRICS {
            // minijinja escapes `/` as `&#x2f;`.
            let header = m.header.replace('/', "&#x2f;");
            assert!(
                full.contains(&format!("<th class=\"num\">{header}</th>")),
                "{header}"
            );
        }
        let steps = fixture::replay().steps.len() * crate::wire::replay::STEP_METRICS.len();
        assert_eq!(full.matches("<td class=\"num\">-</td>").count(), steps);
        let mut bare = fixture::inputs();
        bare.replay = None;
        bare.diff = None;
        bare.explain.environment = None;
        bare.explain.indexes.clear();
        let html = render(&bare);
        assert!(html.contains("No replay was given"));
        // Indexes read from the plans when explain listed none.
        assert!(html.contains("items_account_created_idx") || html.contains("accounts_pkey"));
        let env = environment();
        for (name, _) in TEMPLATES {
            assert!(env.get_template(name).is_ok(), "{name}");
        }
        let panel = &chart::panels(&fixture::replay())[0];
        let svg = env
            .get_template("chart.html")
            .unwrap()
            .render(context! { panel => ser(panel) })
            .unwrap();
        assert!(svg.contains("knee: 8 clients"), "{svg}");
        let rows = plan::rows(&fixture::explain().statements[0].plans[0].plan, &[&[0]]);
        let tree = env
            .get_template("plan.html")
            .unwrap()
            .render(context! { rows => ser(&rows) })
            .unwrap();
        assert!(tree.contains("Sort"), "{tree}");
        // With both sides replayed, "what changed" carries the p95 per step.
        assert!(!full.contains("replay-deltas"));
        let mut both = fixture::inputs();
        let r = fixture::replay();
        both.diff.as_mut().unwrap().replay_steps = crate::wire::diff::replay_steps(&r, &r);
        let html = render(&both);
        assert!(html.contains("class=\"replay-deltas\""), "p95 deltas");
        assert!(
            html.contains("<td class=\"num\">1.00x</td>"),
            "a ratio cell"
        );
    }

    /// Issue 47, 3: the not-judged section names the indexes and tables no
    /// check judged, with why; the contents count them.
    #[test]
    fn indexes_and_tables_not_judged_are_in_the_not_judged_section() {
        let html = render(&crate::report::inputs::inputs_with_unjudged_objects());
        assert!(
            html.contains("<a href=\"#not-judged\">Not judged: 1 index and 1 table</a>"),
            "{html}"
        );
        assert!(
            html.contains("<h2>Not judged: 1 index and 1 table</h2>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<li>index <code>menu_items_label_idx</code> on <code>menu_items</code> \
                 (unused-index): menu_items holds 6 rows, below min_table_rows (100)</li>"
            ),
            "{html}"
        );
        assert!(!render(&fixture::inputs()).contains("not-judged-objects"));
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(1_234_567.0, 0), "1,234,567");
        assert_eq!(thousands(85_000.456, 2), "85,000.46");
        assert_eq!(thousands(999.95, 1), "1,000.0");
        assert_eq!(thousands(-12_345.0, 0), "-12,345");
        assert_eq!(thousands(-0.001, 1), "0.0");
        assert_eq!(thousands(7.0, 0), "7");
        assert_eq!(ratio(8947.474), "8,947");
        assert_eq!(ratio(12.46), "12.5");
        assert_eq!(ratio(1.0), "1.00");
    }

    #[test]
    fn script_json_escapes_what_could_end_the_element_and_reads_back() {
        let v = serde_json::json!({"Relation Name": format!("{HOSTILE}&\u{2028}\u{2029}")});
        let s = script_json(&v);
        for bad in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
            assert!(!s.contains(bad), "{s}");
        }
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
    }

    #[test]
    fn identifiers_and_literals_from_the_database_render_inert() {
        let mut i = fixture::inputs();
        let s = &mut i.explain.statements[0];
        s.query = format!("SELECT '{HOSTILE}' FROM \"{HOSTILE}\"");
        s.id = format!("x\"{HOSTILE}");
        if let serde_json::Value::Array(a) = &mut s.plans[0].plan {
            a[0]["Plan"]["Relation Name"] = HOSTILE.into();
            a[0]["Plan"]["Filter"] = format!("(x = '{HOSTILE}')").into();
        }
        for f in &mut i.explain.findings {
            f.relation = Some(HOSTILE.into());
            f.message = format!("scan of {HOSTILE}");
            f.statement_id = f.statement_id.as_ref().map(|_| format!("x\"{HOSTILE}"));
        }
        i.explain.environment.as_mut().unwrap().tables[0].name = HOSTILE.into();
        i.replay.as_mut().unwrap().hotspots[0].row = HOSTILE.into();
        let html = render(&i);
        assert!(!html.contains("<img"), "markup got through");
        assert!(
            !html.contains("onerror=alert(1)>"),
            "an unescaped attribute"
        );
        // Only planck's own script elements open and close.
        assert_eq!(
            html.matches("<script").count(),
            html.matches("</script>").count()
        );
        let own = render(&fixture::inputs());
        assert_eq!(
            html.matches("</script>").count(),
            own.matches("</script>").count()
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(html.contains("\\u003c/script\\u003e\\u003cimg"));
    }
}
