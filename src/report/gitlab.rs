//! GitLab's code-quality report (a JSON array of issues, shown on the merge
//! request): one issue per finding the baseline does not hold, at its
//! statement's line in the queries file, or the migration's.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::inputs::{Inputs, finding_key, not_judged, not_judged_objects, sorted_findings};

#[derive(Serialize)]
struct Issue {
    description: String,
    check_name: String,
    /// Stable across runs: a hash of the baseline key.
    fingerprint: String,
    severity: &'static str,
    location: Location,
}

#[derive(Serialize)]
struct Location {
    path: String,
    lines: Lines,
}

#[derive(Serialize)]
struct Lines {
    begin: usize,
}

/// GitLab's scale: info, minor, major, critical, blocker.
fn severity(s: &str) -> &'static str {
    match s {
        "error" => "critical",
        "warning" => "major",
        _ => "info",
    }
}

/// Writes the issues, a JSON array.
pub fn render(w: &mut impl std::io::Write, i: &Inputs) -> std::io::Result<()> {
    // A location is required. A finding without one (an index when another
    // tool migrated, a table's policies) is placed at the top of the queries
    // file the other findings point at: a file the merge request has.
    // planck.toml only when no finding names a file.
    let fallback = i
        .explain
        .findings
        .iter()
        .filter_map(|f| f.location.as_ref())
        .find(|l| l.kind == "queries")
        .map_or_else(|| "planck.toml".to_string(), |l| l.path.clone());
    let issues: Vec<Issue> = sorted_findings(&i.explain.findings)
        .into_iter()
        .filter(|f| !f.baseline)
        .map(|f| {
            let digest = Sha256::digest(finding_key(f).as_bytes());
            let mut description = f.message.clone();
            if let Some(id) = &f.statement_id {
                let mode = f
                    .mode
                    .as_deref()
                    .map(|m| format!(" as {m}"))
                    .unwrap_or_default();
                description = format!("{description} (statement {id}{mode})");
            }
            Issue {
                description,
                check_name: f.check.clone(),
                fingerprint: digest.iter().take(16).map(|b| format!("{b:02x}")).collect(),
                severity: severity(&f.severity),
                location: match &f.location {
                    Some(l) => Location {
                        path: l.path.clone(),
                        lines: Lines {
                            begin: l.line.max(1),
                        },
                    },
                    None => Location {
                        path: fallback.clone(),
                        lines: Lines { begin: 1 },
                    },
                },
            }
        })
        .collect();
    let mut issues = issues;
    // The statements the data could not judge (issue 48): an info issue
    // each, so the merge request shows that they passed unjudged.
    issues.extend(not_judged(i).into_iter().map(|n| {
        let digest = Sha256::digest(format!("not-judged:{}", n.statement_id).as_bytes());
        Issue {
            description: format!(
                "not judged: `{}`: {} (statement {})",
                crate::output::shorten(&n.query, 60),
                n.reason,
                n.statement_id
            ),
            check_name: "not-judged".to_string(),
            fingerprint: digest.iter().take(16).map(|b| format!("{b:02x}")).collect(),
            severity: "info",
            location: Location {
                path: fallback.clone(),
                lines: Lines { begin: 1 },
            },
        }
    }));
    // The indexes and tables no check judged (issue 47, 3): an info issue
    // each too, keyed by what it is about.
    issues.extend(not_judged_objects(i).iter().map(|o| {
        let key = format!(
            "not-judged:{}:{}:{}",
            o.check,
            o.table,
            o.index.as_deref().unwrap_or("")
        );
        let digest = Sha256::digest(key.as_bytes());
        Issue {
            description: format!("not judged: {}: {}", o.subject(), o.reason),
            check_name: "not-judged".to_string(),
            fingerprint: digest.iter().take(16).map(|b| format!("{b:02x}")).collect(),
            severity: "info",
            location: Location {
                path: fallback.clone(),
                lines: Lines { begin: 1 },
            },
        }
    }));
    serde_json::to_writer_pretty(&mut *w, &issues)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The output as text, written through the module's renderer.
    fn render(i: &Inputs) -> String {
        fixture::text(crate::report::Output::Gitlab, i)
    }

    /// A statement the data could not judge is an info issue of its own.
    #[test]
    fn unjudged_statements_are_info_issues() {
        let v: serde_json::Value =
            serde_json::from_str(&render(&crate::report::inputs::inputs_with_unjudged())).unwrap();
        let unjudged: Vec<&serde_json::Value> = v
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["check_name"] == "not-judged")
            .collect();
        assert_eq!(unjudged.len(), 1, "{v:#}");
        assert_eq!(unjudged[0]["severity"], "info");
        let d = unjudged[0]["description"].as_str().unwrap();
        assert!(
            d.contains("(statement s9)") && d.contains("cards 4,000 rows"),
            "{d}"
        );
        let v: serde_json::Value = serde_json::from_str(&render(&fixture::inputs())).unwrap();
        assert!(
            v.as_array()
                .unwrap()
                .iter()
                .all(|i| i["check_name"] != "not-judged"),
            "{v:#}"
        );
    }

    /// Issue 47, 3: an index or table no check judged is an info issue of
    /// its own, with a fingerprint of its own.
    #[test]
    fn unjudged_indexes_and_tables_are_info_issues() {
        let i = crate::report::inputs::inputs_with_unjudged_objects();
        let v: serde_json::Value = serde_json::from_str(&render(&i)).unwrap();
        let unjudged: Vec<&serde_json::Value> = v
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["check_name"] == "not-judged")
            .collect();
        assert_eq!(unjudged.len(), 2, "{v:#}");
        assert!(unjudged.iter().all(|i| i["severity"] == "info"), "{v:#}");
        assert_eq!(
            unjudged[0]["description"],
            "not judged: index menu_items_label_idx on menu_items (unused-index): menu_items \
             holds 6 rows, below min_table_rows (100)"
        );
        assert_ne!(unjudged[0]["fingerprint"], unjudged[1]["fingerprint"]);
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&fixture::inputs()));
    }

    #[test]
    fn baseline_findings_are_left_out_and_fingerprints_are_distinct() {
        let v: serde_json::Value = serde_json::from_str(&render(&fixture::inputs())).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), 3);
        let fp: std::collections::BTreeSet<&str> = a
            .iter()
            .map(|i| i["fingerprint"].as_str().unwrap())
            .collect();
        assert_eq!(fp.len(), 3);
        assert_eq!(a[0]["location"]["path"], "queries/queries.toml");
        assert_eq!(a[0]["location"]["lines"]["begin"], 4);
        assert_eq!(a[2]["location"]["path"], "migrations/0002_items.sql");
    }

    #[test]
    fn a_finding_without_a_location_sits_at_the_top_of_the_queries_file() {
        let mut i = fixture::inputs();
        let unplaced = i
            .explain
            .findings
            .iter_mut()
            .find(|f| !f.baseline && f.location.as_ref().is_some_and(|l| l.kind == "migration"))
            .unwrap();
        unplaced.location = None;
        let v: serde_json::Value = serde_json::from_str(&render(&i)).unwrap();
        let placed: Vec<(&str, u64)> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["location"]["path"].as_str().unwrap(),
                    i["location"]["lines"]["begin"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(placed.contains(&("queries/queries.toml", 1)), "{placed:?}");
        // With no file named by any finding: the config file.
        for f in &mut i.explain.findings {
            f.location = None;
        }
        let v: serde_json::Value = serde_json::from_str(&render(&i)).unwrap();
        assert!(
            v.as_array()
                .unwrap()
                .iter()
                .all(|i| i["location"]["path"] == "planck.toml"),
            "{v:#}"
        );
    }
}
