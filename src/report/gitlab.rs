//! GitLab's code-quality report (a JSON array of issues, shown on the merge
//! request): one issue per finding the baseline does not hold, at its
//! statement's line in the queries file, or the migration's.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Inputs, finding_key, sorted_findings};

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

pub fn render(i: &Inputs) -> String {
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
                // A location is required: a finding without one (none planck
                // writes today) points at the project's config file.
                location: match &f.location {
                    Some(l) => Location {
                        path: l.path.clone(),
                        lines: Lines {
                            begin: l.line.max(1),
                        },
                    },
                    None => Location {
                        path: "planck.toml".into(),
                        lines: Lines { begin: 1 },
                    },
                },
            }
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&issues).expect("issues serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

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
}
