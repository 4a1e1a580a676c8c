//! The review page as a reader uses it (issue 48, 6): a table of contents
//! whose links land, the plans of statements with no finding folded away
//! (one click opens them), numbers with thousands separators, statements
//! explain did not judge named near the top, and, in headless Chromium,
//! charts as wide as their row with every label inside them. No database:
//! the renderers' fixture, plus what the demo's page has and the fixture
//! lacks (trivial INSERT statements with six plans and no finding, a
//! statement planned on tables too small to judge, the knee at the top step).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use planck::wire::explain::{JsonBelowMinRows, JsonStatement, JsonTableRows};

// The renderers' fixture, as report_files.rs includes it; that module's
// copy is private to it, so this file includes its own.
#[path = "../../src/report/fixture.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod fixture;

/// The fixture's inputs with two INSERT statements that have six plans and
/// no finding (as the demo's page has), and one statement not judged.
fn demo_like() -> planck::report::Inputs {
    let mut i = fixture::inputs();
    let judged = i.explain.statements[0].clone();
    for (n, id) in ["0f1e2d3c", "4b5a6978"].into_iter().enumerate() {
        let mut s: JsonStatement = judged.clone();
        s.id = id.into();
        s.query = format!("INSERT INTO events_{n} (account_id, kind) VALUES ($1, $2)");
        let plan = s.plans[0].clone();
        s.plans = (0..6).map(|_| plan.clone()).collect();
        i.explain.statements.push(s);
    }
    let mut small = judged;
    small.id = "aa00bb11".into();
    small.query = "SELECT * FROM rate_limits WHERE key = $1".into();
    small.status = "not_judged".into();
    small.reason = Some("rate_limits has 500 rows, below min_rows (10,000)".into());
    i.explain.statements.push(small);
    i.explain.summary.not_judged = 1;
    // And one INSERT read only a table below min_rows (explain's
    // below_min_rows).
    i.explain.below_min_rows = Some(JsonBelowMinRows {
        min_rows: 10_000,
        statements: vec!["0f1e2d3c".into()],
        tables: vec![JsonTableRows {
            name: "events_0".into(),
            rows: 2_500,
        }],
    });
    // The knee at the ladder's top step, no USL peak beyond it (the demo's
    // replay): the knee's mark stands near the chart's right edge.
    let r = i.replay.as_mut().unwrap();
    r.verdict.peak_concurrency = r.steps.iter().map(|s| s.concurrency).max();
    if let Some(u) = r.verdict.usl.as_mut() {
        u.n_star = None;
    }
    i
}

fn page(i: &planck::report::Inputs) -> String {
    fixture::text(planck::report::Output::Html, i)
}

/// The values of `attr="..."` in `html`, in order.
fn attrs(html: &str, attr: &str) -> Vec<String> {
    let key = format!("{attr}=\"");
    html.match_indices(&key)
        .map(|(at, _)| {
            let rest = &html[at + key.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// The markup of the element that opens at `start` up to the next element
/// opened with `next` (or the end).
fn block<'a>(html: &'a str, start: &str, next: &str) -> &'a str {
    let at = html
        .find(start)
        .unwrap_or_else(|| panic!("no {start} on the page"));
    let rest = &html[at..];
    let end = rest[start.len()..]
        .find(next)
        .map_or(rest.len(), |e| e + start.len());
    &rest[..end]
}

#[test]
fn the_table_of_contents_links_every_section_and_each_link_lands() {
    let html = page(&demo_like());
    let ids: BTreeSet<String> = attrs(&html, "id").into_iter().collect();
    let toc = block(&html, "<nav class=\"toc\"", "</nav>");
    let links: Vec<String> = attrs(toc, "href");
    assert!(links.len() >= 6, "{toc}");
    for l in &links {
        let target = l.strip_prefix('#').unwrap_or_else(|| panic!("{l}"));
        assert!(ids.contains(target), "the contents link {l} lands nowhere");
    }
    // Every section of the page is in the contents.
    for (at, _) in html.match_indices("<section id=\"") {
        let id = &attrs(&html[at..], "id")[0];
        assert!(
            links.contains(&format!("#{id}")),
            "section {id} is not in the contents"
        );
    }
    // The statements with findings are listed, by their anchors.
    assert!(links.contains(&"#statement-a1b2c3d4".to_string()), "{toc}");
    assert!(!links.contains(&"#statement-0f1e2d3c".to_string()), "{toc}");
}

#[test]
fn plans_of_statements_without_findings_are_folded_closed() {
    let i = demo_like();
    let html = page(&i);
    let with_findings: BTreeSet<&str> = i
        .explain
        .findings
        .iter()
        .filter_map(|f| f.statement_id.as_deref())
        .collect();
    let mut folded = 0;
    for s in i.explain.statements.iter().filter(|s| !s.plans.is_empty()) {
        let div = block(
            &html,
            &format!("<div class=\"statement\" id=\"statement-{}\"", s.id),
            "<div class=\"statement\"",
        );
        let plans = div.find("<div class=\"plans\"").expect("plans");
        let details = div.find("<details");
        if with_findings.contains(s.id.as_str()) {
            assert!(
                details.is_none(),
                "{} has findings, plans open:\n{div}",
                s.id
            );
            continue;
        }
        let details = details.unwrap_or_else(|| panic!("{} not folded:\n{div}", s.id));
        let tag = &div[details..details + div[details..].find('>').unwrap()];
        assert!(!tag.contains("open"), "{tag}");
        assert!(
            details < plans && div[plans..].contains("</details>"),
            "{div}"
        );
        assert!(
            div.contains(&format!("<summary>{} plans, no finding", s.plans.len())),
            "{div}"
        );
        folded += 1;
    }
    assert_eq!(folded, 3, "two INSERTs and the statement not judged");
}

#[test]
fn numbers_on_the_page_carry_thousands_separators() {
    let html = page(&demo_like());
    // The environment's 4,000,000 rows, the plans' costs.
    assert!(
        html.contains("<td class=\"num\">4,000,000</td>"),
        "table rows"
    );
    assert!(html.contains("cost 85,000.00"), "a plan's cost");
    // No number cell or plan cost prints four digits in a row.
    let runs = |text: &str| {
        let mut run = 0;
        text.chars().any(|c| {
            run = if c.is_ascii_digit() { run + 1 } else { 0 };
            run >= 4
        })
    };
    let mut cells = 0;
    for marker in ["<td class=\"num\">", "<span class=\"node-cost\">"] {
        for (at, _) in html.match_indices(marker) {
            let rest = &html[at + marker.len()..];
            let text = &rest[..rest.find('<').unwrap()];
            assert!(!runs(text), "{marker}{text}");
            cells += 1;
        }
    }
    assert!(cells > 10, "{cells} cells read");
}

#[test]
fn statements_not_judged_or_below_min_rows_are_named_before_the_environment() {
    let html = page(&demo_like());
    let section = block(&html, "<section id=\"not-judged\"", "</section>");
    assert!(section.contains("Not judged: 2 statements<"), "{section}");
    assert!(
        section.contains("href=\"#statement-aa00bb11\""),
        "{section}"
    );
    assert!(section.contains("rate_limits has 500 rows, below min_rows (10,000)"));
    // explain's below_min_rows: the statement, the table and its rows.
    assert!(
        section.contains("href=\"#statement-0f1e2d3c\""),
        "{section}"
    );
    assert!(
        section.contains("(10,000 rows)") && section.contains("<code>events_0</code> 2,500 rows"),
        "{section}"
    );
    let div = block(
        &html,
        "id=\"statement-0f1e2d3c\"",
        "<div class=\"statement\"",
    );
    assert!(
        div.contains("<span class=\"badge\">below min_rows</span>"),
        "{div}"
    );
    assert!(html.find("id=\"not-judged\"") < html.find("id=\"environment\""));
    assert!(
        html.contains("1 not judged, 1 on tables below min_rows"),
        "the header's counts"
    );
    // None, no section.
    let html = page(&fixture::inputs());
    assert!(!html.contains("id=\"not-judged\""));
}

// ---- in headless Chromium ----

fn browser() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PLANCK_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

fn headless(browser: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--virtual-time-budget=3000",
            "--window-size=1280,4000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium starts");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Measures the replay charts as laid out and writes the numbers into
/// `body[data-measured]`: per chart its figure's and its SVG's width and
/// top, the row's width, and each marker label's box in the SVG's units.
const MEASURE: &str = r#"<script>
(function () {
  var rows = document.querySelectorAll(".chart-row"), out = [];
  for (var r = 0; r < rows.length; r++) {
    var row = rows[r], figs = row.querySelectorAll("figure.chart"), charts = [];
    for (var f = 0; f < figs.length; f++) {
      var svg = figs[f].querySelector("svg"), vb = svg.viewBox.baseVal, labels = [];
      var texts = svg.querySelectorAll("text");
      for (var t = 0; t < texts.length; t++) {
        var b = texts[t].getBBox();
        labels.push([texts[t].textContent, b.x, b.x + b.width, vb.width]);
      }
      charts.push({figure: figs[f].getBoundingClientRect().width,
        svg: svg.getBoundingClientRect().width, top: figs[f].getBoundingClientRect().top,
        labels: labels});
    }
    var gap = parseFloat(getComputedStyle(row).columnGap) || 0;
    out.push({row: row.getBoundingClientRect().width, gap: gap, charts: charts});
  }
  document.body.setAttribute("data-measured", JSON.stringify(out));
})();
</script></body>"#;

#[derive(Debug, serde::Deserialize)]
struct Row {
    row: f64,
    gap: f64,
    charts: Vec<Chart>,
}

#[derive(Debug, serde::Deserialize)]
struct Chart {
    figure: f64,
    svg: f64,
    top: f64,
    /// text, left, right, the viewBox's width
    labels: Vec<(String, f64, f64, f64)>,
}

#[test]
fn charts_fill_their_row_and_keep_every_label_inside_in_chromium() {
    let Some(chrome) = browser() else {
        crate::skip!(
            Missing,
            "no chromium on PATH (apt-get install -y chromium; .ci/run installs it)"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let html = page(&demo_like());
    let shown = dir.path().join("review.html");
    std::fs::write(&shown, &html).unwrap();
    let measured = dir.path().join("measured.html");
    std::fs::write(&measured, html.replace("</body>", MEASURE)).unwrap();
    let dom = headless(&chrome, &measured, &["--dump-dom".to_string()]);
    assert!(dom.contains("data-console-errors=\"0\""), "{dom}");
    let json = attrs(&dom, "data-measured")
        .pop()
        .unwrap_or_else(|| panic!("not measured:\n{dom}"))
        .replace("&quot;", "\"");
    let rows: Vec<Row> = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(rows.len(), 1, "{json}");
    let row = &rows[0];
    assert_eq!(row.charts.len(), 2, "{json}");
    // The page is 1280 px wide: the row takes most of it.
    assert!(row.row > 1000.0, "{json}");
    for c in &row.charts {
        assert!(
            (c.svg - c.figure).abs() < 1.0,
            "an SVG narrower than its figure: {json}"
        );
        for (text, left, right, width) in &c.labels {
            assert!(
                *left >= 0.0 && *right <= *width,
                "{text:?} runs out of the chart ({left}..{right} of {width})"
            );
        }
        assert!(c.labels.iter().any(|l| l.0.starts_with("knee: ")), "{json}");
    }
    // Charts on one line fill it, gaps included.
    let mut tops: Vec<f64> = row.charts.iter().map(|c| c.top).collect();
    tops.dedup_by(|a, b| (*a - *b).abs() < 1.0);
    for top in tops {
        let line: Vec<&Chart> = row
            .charts
            .iter()
            .filter(|c| (c.top - top).abs() < 1.0)
            .collect();
        let filled: f64 =
            line.iter().map(|c| c.figure).sum::<f64>() + row.gap * (line.len() - 1) as f64;
        assert!(
            (filled - row.row).abs() < 2.0,
            "{filled} of {}: {json}",
            row.row
        );
    }
    // The screenshot, to look at (kept when PLANCK_KEEP_SCREENSHOT names a path).
    let shot = std::env::var_os("PLANCK_KEEP_SCREENSHOT")
        .map_or_else(|| dir.path().join("review.png"), PathBuf::from);
    headless(
        &chrome,
        &shown,
        &[format!("--screenshot={}", shot.display())],
    );
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000));
}
