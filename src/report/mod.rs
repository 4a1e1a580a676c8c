//! `planck report`: the DBA's review in one file, and the machine outputs CI
//! reads (Markdown for a PR comment, JUnit, SARIF, GitLab code quality).
//!
//! Everything here is rendered from the wire types only (explain's and
//! replay's JSON, and the diff of two explain runs), so a report can be made
//! from files written by another machine, and `planck check` renders the same
//! outputs from what it has in memory.

mod chart;
mod gitlab;
mod html;
mod junit;
mod markdown;
mod plan;
mod sarif;

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::wire;
use crate::wire::explain::JsonFinding;
pub use crate::wire::explain::JsonReport;
pub use crate::wire::replay::Report;

/// What one report is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub explain: wire::explain::JsonReport,
    pub replay: Option<wire::replay::Report>,
    /// What changed since a previous run or the base of a branch.
    pub diff: Option<wire::diff::JsonDiff>,
    /// What the diff compares against (`origin/main`, `previous run`).
    pub base_label: Option<String>,
    /// The folder the findings' relative paths are relative to (the
    /// project's git work tree, see [`crate::findings::source`]): SARIF's
    /// `%SRCROOT%`.
    pub source_root: Option<std::path::PathBuf>,
}

/// The self-contained review page (inline CSS, JS and SVG).
pub fn html(i: &Inputs) -> String {
    html::render(i)
}

/// The Markdown twin of the page, short enough for a PR comment.
pub fn markdown(i: &Inputs) -> String {
    markdown::render(i)
}

/// JUnit XML: one test case per statement and mode, one per schema object
/// with findings.
pub fn junit(i: &Inputs) -> String {
    junit::render(i)
}

/// SARIF 2.1.0, for code scanning.
pub fn sarif(i: &Inputs) -> String {
    sarif::render(i)
}

/// `planck check --sarif`: [`sarif`], a new error that lost an index a
/// migration dropped located at the DROP (the CREATE related).
pub fn sarif_with_lost(i: &Inputs, lost: &[wire::check::JsonLostIndex]) -> String {
    sarif::render_with_lost(i, lost)
}

/// GitLab's code-quality report.
pub fn gitlab(i: &Inputs) -> String {
    gitlab::render(i)
}

/// The PR comment of `planck check --markdown`: the gate's verdict (which
/// also counts regressions, blocking statements and the SLO) on top, then
/// the report, all under the comment limit.
pub fn markdown_with_gate(i: &Inputs, gate: &wire::check::JsonGate) -> String {
    markdown::render_with_gate(i, gate)
}

/// `planck check --junit`: [`junit`] and a failed case per gate reason no
/// statement case carries (a blocking migration statement, a missed SLO).
pub fn junit_with_gate(i: &Inputs, gate: &wire::check::JsonGate) -> String {
    junit::render_with_gate(i, gate)
}

/// Reads `planck explain --format json` output.
pub fn read_explain(path: &Path) -> Result<JsonReport> {
    read_json(path, "explain", wire::explain::FORMAT_VERSION)
}

/// Reads `planck replay --format json` output.
pub fn read_replay(path: &Path) -> Result<Report> {
    read_json(path, "replay", wire::replay::FORMAT_VERSION)
}

fn read_json<T: DeserializeOwned>(path: &Path, what: &str, version: u32) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |e: serde_json::Error, message: String| Error::Config {
        path: path.to_path_buf(),
        line: Some(e.line()),
        column: Some(e.column()),
        message,
        hint: None,
    };
    // serde_json puts the position at the end of its message; the error
    // carries it apart, and Config prints it as path:line:col.
    let reason = |e: &serde_json::Error| {
        let s = e.to_string();
        s.split(" at line ").next().unwrap_or(&s).to_string()
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        let m = format!("not valid JSON ({}); expected {what}'s JSON", reason(&e));
        bad(e, m)
    })?;
    let found = value
        .get("format_version")
        .and_then(serde_json::Value::as_u64);
    if found != Some(u64::from(version)) {
        let found = found.map_or_else(|| "none".to_string(), |v| v.to_string());
        return Err(Error::Usage {
            message: format!(
                "{}: format_version {found}, but this planck reads {what}'s format_version {version}",
                path.display()
            ),
            hint: Some(format!(
                "write it again with this planck (`planck {what} --format json`)"
            )),
        });
    }
    serde_json::from_str(&text).map_err(|e| {
        let m = format!("not {what}'s JSON: {}", reason(&e));
        bad(e, m)
    })
}

/// Severities from the worst; anything unknown sorts last.
pub(crate) fn severity_rank(s: &str) -> usize {
    match s {
        "error" => 0,
        "warning" => 1,
        "info" => 2,
        _ => 3,
    }
}

/// Findings worst first, then by check and statement: the order every output uses.
pub(crate) fn sorted_findings(findings: &[JsonFinding]) -> Vec<&JsonFinding> {
    let mut v: Vec<&JsonFinding> = findings.iter().collect();
    v.sort_by(|a, b| {
        (
            severity_rank(&a.severity),
            &a.check,
            &a.statement_id,
            &a.mode,
        )
            .cmp(&(
                severity_rank(&b.severity),
                &b.check,
                &b.statement_id,
                &b.mode,
            ))
    });
    v
}

/// A finding's identity across runs (the baseline's key): check, statement,
/// mode, relation, index. Code scanning tracks a finding across pushes by it.
pub(crate) fn finding_key(f: &JsonFinding) -> String {
    let part = |o: &Option<String>| o.clone().unwrap_or_default();
    format!(
        "{}/{}/{}/{}/{}",
        f.check,
        part(&f.statement_id),
        part(&f.mode),
        part(&f.relation),
        part(&f.index)
    )
}

/// Errors not held by the baseline: what fails CI.
pub(crate) fn new_errors(r: &JsonReport) -> usize {
    r.findings
        .iter()
        .filter(|f| f.severity == "error" && !f.baseline)
        .count()
}

/// What a finding is about, in a few words: `items` or `items_account_idx on items`.
pub(crate) fn subject(f: &JsonFinding) -> String {
    match (&f.index, &f.relation) {
        (Some(i), Some(r)) => format!("{i} on {r}"),
        (Some(i), None) => i.clone(),
        (None, Some(r)) => r.clone(),
        (None, None) => String::new(),
    }
}

/// The help text of a check: planck's own, else what the finding carried.
pub(crate) fn check_help(check: &str, fallback: &str) -> String {
    crate::findings::CheckId::ALL
        .iter()
        .find(|c| c.as_str() == check)
        .map_or_else(|| fallback.to_string(), |c| c.help().to_string())
}

/// `query` on one line, cut to `max` characters.
pub(crate) fn one_line(query: &str, max: usize) -> String {
    let flat = crate::queries::normalize_space(query);
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
pub(crate) mod fixture;

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn another_format_version_is_an_error_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "e.json",
            r#"{"format_version": 7, "statements": []}"#,
        );
        let e = read_explain(&p).unwrap_err().to_string();
        assert!(e.contains("format_version 7"), "{e}");
        assert!(e.contains("format_version 1"), "{e}");
        assert!(e.contains("e.json"), "{e}");
    }

    #[test]
    fn truncated_json_names_the_file_and_the_position() {
        let dir = tempfile::tempdir().unwrap();
        let full = serde_json::to_string_pretty(&fixture::explain()).unwrap();
        let p = write(dir.path(), "cut.json", &full[..full.len() / 2]);
        let e = read_explain(&p).unwrap_err();
        let Error::Config { line, column, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(line.unwrap() > 1 && column.is_some());
        let text = e.to_string();
        assert!(text.starts_with(&format!("{}:", p.display())), "{text}");
        assert!(text.contains("EOF while parsing"), "{text}");
        // The whole file reads back.
        let p = write(dir.path(), "full.json", &full);
        assert_eq!(read_explain(&p).unwrap(), fixture::explain());
    }

    #[test]
    fn a_replay_file_given_as_explain_is_refused_by_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "r.json",
            &serde_json::to_string(&fixture::replay()).unwrap(),
        );
        let e = read_explain(&p).unwrap_err().to_string();
        assert!(e.contains("not explain's JSON"), "{e}");
        assert!(read_replay(&p).is_ok());
    }
}
