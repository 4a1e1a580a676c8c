//! The CI snippets under tools/ci, read as YAML (a key that stands only in a
//! comment does not count): every planck command line in their steps parses
//! with planck's own command line (clap's `try_parse_from`), and the GitHub
//! workflow has what the README promises (history, paths, permissions, the
//! SARIF upload and the comment).

use planck::cli::{Cli, Command};

use clap::Parser;
use serde_yaml::Value;

/// The planck command lines among `commands` (the `run:` or `script:` texts
/// of a CI file): lines that start with `planck `. `${{ expr }}` and `$VAR`
/// become `x`, quotes go.
fn planck_lines<'a>(commands: impl IntoIterator<Item = &'a str>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in commands.into_iter().flat_map(str::lines) {
        let t = line.trim();
        if !t.starts_with("planck ") {
            continue;
        }
        let mut s = String::new();
        let mut rest = t;
        while let Some(i) = rest.find("${{") {
            s.push_str(&rest[..i]);
            s.push('x');
            let end = rest[i..].find("}}").expect("an unclosed ${{") + i + 2;
            rest = &rest[end..];
        }
        s.push_str(rest);
        let words = s
            .split_whitespace()
            .map(|w| {
                let w = w.replace('"', "");
                match w.find('$') {
                    Some(i) => format!("{}x", &w[..i]),
                    None => w,
                }
            })
            .collect();
        out.push(words);
    }
    out
}

fn file(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

fn yaml(rel: &str) -> Value {
    serde_yaml::from_str(&file(rel)).unwrap_or_else(|e| panic!("{rel} is not YAML: {e}"))
}

/// `v[path...]`, failing the test with the path when a key is missing.
fn at<'a>(v: &'a Value, rel: &str, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| {
        v.get(k)
            .unwrap_or_else(|| panic!("{rel}: no {} in {v:?}", path.join(".")))
    })
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_sequence()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn assert_check_lines(rel: &str, lines: &[Vec<String>]) {
    assert!(!lines.is_empty(), "no planck command in {rel}");
    for words in lines {
        let cli = Cli::try_parse_from(words).unwrap_or_else(|e| panic!("{rel}: {words:?}: {e}"));
        match cli.command {
            Command::Check(a) => assert_eq!(a.base.as_deref(), Some("origin/x"), "{words:?}"),
            other => panic!("{rel}: expected planck check, got {other:?}"),
        }
    }
}

#[test]
fn github_workflow_planck_lines_parse_and_it_has_history_paths_and_permissions() {
    let rel = "tools/ci/github-actions.yml";
    let w = yaml(rel);
    let steps = at(&w, rel, &["jobs", "check", "steps"])
        .as_sequence()
        .expect("the check job's steps");
    let step_using = |action: &str| {
        steps
            .iter()
            .find(|s| {
                s.get("uses")
                    .and_then(Value::as_str)
                    .is_some_and(|u| u.starts_with(&format!("{action}@")))
            })
            .unwrap_or_else(|| panic!("{rel}: no step uses {action}"))
    };
    let runs: Vec<&str> = steps
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .collect();
    let lines = planck_lines(runs.iter().copied());
    assert_check_lines(rel, &lines);
    assert!(
        runs.iter()
            .any(|r| r.starts_with("planck check --base origin/${{ github.base_ref }} ")),
        "{runs:?}"
    );

    // History: `--base` needs the merge base.
    assert_eq!(
        at(
            step_using("actions/checkout"),
            rel,
            &["with", "fetch-depth"]
        )
        .as_u64(),
        Some(0)
    );
    // Paths: only pull requests that touch migrations or queries.
    let paths = strings(at(&w, rel, &["on", "pull_request", "paths"]));
    assert_eq!(paths, ["migrations/**", "queries/**"]);
    // Permissions: SARIF upload and the comment.
    let perms = at(&w, rel, &["permissions"]);
    for p in ["security-events", "pull-requests"] {
        assert_eq!(at(perms, rel, &[p]).as_str(), Some("write"), "{perms:?}");
    }
    // The report planck writes is the one uploaded, and the comment is
    // updated in place.
    assert!(
        lines
            .iter()
            .any(|l| l.windows(2).any(|w| w == ["--sarif", "planck.sarif"]))
    );
    assert_eq!(
        at(
            step_using("github/codeql-action/upload-sarif"),
            rel,
            &["with", "sarif_file"]
        )
        .as_str(),
        Some("planck.sarif")
    );
    let script = at(
        step_using("actions/github-script"),
        rel,
        &["with", "script"],
    )
    .as_str()
    .unwrap();
    assert!(script.contains("updateComment"), "{script}");
    assert!(script.contains("planck.md"), "{script}");
    // The way out for forks (a second workflow on workflow_run) is advice
    // to the reader: it stands in the file's opening comment.
    let header: String = file(rel)
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(header.contains("workflow_run"), "{header}");
}

#[test]
fn gitlab_snippet_planck_lines_parse_and_it_reports_code_quality() {
    let rel = "tools/ci/gitlab-ci.yml";
    let g = yaml(rel);
    let job = at(&g, rel, &["planck-check"]);
    let script = strings(at(job, rel, &["script"]));
    let lines = planck_lines(script.iter().copied());
    assert_check_lines(rel, &lines);
    assert_eq!(
        at(job, rel, &["variables", "GIT_DEPTH"]).as_str(),
        Some("0")
    );
    assert_eq!(
        at(job, rel, &["artifacts", "reports", "codequality"]).as_str(),
        Some("gl-code-quality-report.json")
    );
    // The code-quality report is the file planck writes.
    assert!(
        lines.iter().any(|l| l
            .windows(2)
            .any(|w| w == ["--gitlab", "gl-code-quality-report.json"])),
        "{lines:?}"
    );
}

#[test]
fn a_bad_planck_line_is_caught() {
    let lines = planck_lines(["planck check --bsae origin/${{ github.base_ref }}\n"]);
    assert_eq!(lines, vec![vec!["planck", "check", "--bsae", "origin/x"]]);
    assert!(Cli::try_parse_from(&lines[0]).is_err());
}

/// A key that stands only in a comment is not read as one.
#[test]
fn a_key_in_a_comment_is_not_read() {
    let v: Value = serde_yaml::from_str(
        "# fetch-depth: 0\nsteps:\n  - uses: actions/checkout@v4\n    # with:\n    #   fetch-depth: 0\n",
    )
    .unwrap();
    assert_eq!(v.get("fetch-depth"), None);
    assert_eq!(v["steps"][0].get("with"), None);
}
