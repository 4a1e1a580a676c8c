//! The CI snippets under tools/ci: every planck command line in them parses
//! with planck's own command line (clap's `try_parse_from`), and the GitHub
//! workflow has what the README promises (history, paths, permissions).

use planck::cli::{Cli, Command};

use clap::Parser;

/// The planck command lines of a CI file: lines whose command (after
/// `run:` or a list's `- `) starts with `planck `. `${{ expr }}` and `$VAR`
/// become `x`, quotes go.
fn planck_lines(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let t = t.strip_prefix("- ").unwrap_or(t);
        let t = t.strip_prefix("run:").map(str::trim_start).unwrap_or(t);
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

fn assert_check_lines(rel: &str) {
    let lines = planck_lines(&file(rel));
    assert!(!lines.is_empty(), "no planck command in {rel}");
    for words in &lines {
        let cli = Cli::try_parse_from(words).unwrap_or_else(|e| panic!("{rel}: {words:?}: {e}"));
        match cli.command {
            Command::Check(a) => assert_eq!(a.base.as_deref(), Some("origin/x"), "{words:?}"),
            other => panic!("{rel}: expected planck check, got {other:?}"),
        }
    }
}

#[test]
fn github_workflow_planck_lines_parse_and_it_has_history_paths_and_permissions() {
    assert_check_lines("tools/ci/github-actions.yml");
    let text = file("tools/ci/github-actions.yml");
    for needle in [
        "fetch-depth: 0",
        "planck check --base origin/${{ github.base_ref }}",
        "- \"migrations/**\"",
        "- \"queries/**\"",
        "security-events: write",
        "pull-requests: write",
        "upload-sarif",
        "updateComment",
        "workflow_run",
    ] {
        assert!(
            text.contains(needle),
            "{needle:?} missing from the workflow"
        );
    }
}

#[test]
fn gitlab_snippet_planck_lines_parse_and_it_reports_code_quality() {
    assert_check_lines("tools/ci/gitlab-ci.yml");
    let text = file("tools/ci/gitlab-ci.yml");
    assert!(text.contains("GIT_DEPTH: \"0\""));
    assert!(text.contains("codequality: gl-code-quality-report.json"));
}

#[test]
fn a_bad_planck_line_is_caught() {
    let lines = planck_lines("      run: planck check --bsae origin/${{ github.base_ref }}\n");
    assert_eq!(lines, vec![vec!["planck", "check", "--bsae", "origin/x"]]);
    assert!(Cli::try_parse_from(&lines[0]).is_err());
}
