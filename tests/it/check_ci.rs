//! planck in CI: its GitHub Action (action.yml), the workflows and the
//! GitLab job under tools/ci, read as YAML (a key that stands only in a
//! comment does not count). Every planck command line in their steps parses
//! with planck's own command line (clap's `try_parse_from`); the workflows
//! and the action have what docs/ci.md promises (history, paths,
//! permissions, the SARIF upload, the one comment, the install of
//! planck-pg); every action they use is pinned to a commit; the action's
//! check step runs with the real planck; tools/lint-workflows (zizmor)
//! passes on the files and fails on a copy with an unpinned action planted;
//! and `planck --version` names the crate and the PostgreSQL it found.

use std::path::Path;
use std::process::Output;

use planck::cli::{Cli, Command};

use clap::Parser;
use serde_yaml::Value;

use crate::common::{assert_exit, bindir, git, planck_cmd, project_dir, repo_root, stderr, stdout};

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

/// The GitHub files the linters read: the action and every workflow under
/// tools/ci (gitlab-ci.yml is GitLab's), as paths from the repository root.
fn github_files() -> Vec<String> {
    let mut workflows: Vec<String> = std::fs::read_dir(repo_root().join("tools/ci"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yml") && !n.starts_with("gitlab-"))
        .map(|n| format!("tools/ci/{n}"))
        .collect();
    workflows.sort();
    let mut out = vec!["action.yml".to_string()];
    out.extend(workflows);
    out
}

fn steps_of<'a>(v: &'a Value, rel: &str, path: &[&str]) -> &'a [Value] {
    at(v, rel, path)
        .as_sequence()
        .unwrap_or_else(|| panic!("{rel}: {} is not a list", path.join(".")))
}

/// The first step of `steps` that uses `action` (`owner/repo[/path]`, any ref).
fn step_using<'a>(steps: &'a [Value], rel: &str, action: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| {
            s.get("uses")
                .and_then(Value::as_str)
                .is_some_and(|u| u.starts_with(&format!("{action}@")))
        })
        .unwrap_or_else(|| panic!("{rel}: no step uses {action}"))
}

fn step_with_id<'a>(steps: &'a [Value], rel: &str, id: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s.get("id").and_then(Value::as_str) == Some(id))
        .unwrap_or_else(|| panic!("{rel}: no step with id {id}"))
}

fn run_of<'a>(step: &'a Value, rel: &str) -> &'a str {
    at(step, rel, &["run"]).as_str().unwrap()
}

/// A workflow's permission `p` for `job`: the job's own, else the workflow's.
fn permission<'a>(w: &'a Value, job: &str, p: &str) -> Option<&'a str> {
    let of = |v: Option<&'a Value>| v?.get("permissions")?.get(p)?.as_str();
    of(w.get("jobs").and_then(|j| j.get(job))).or_else(|| of(Some(w)))
}

/// What the short workflow and the written-out one share: pull requests that
/// touch migrations or queries, code scanning and the comment allowed, the
/// whole history checked out and no credentials left in it, and the way out
/// for forks (a second workflow on workflow_run) in the opening comment,
/// which is advice to the reader.
fn assert_pull_request_workflow(rel: &str) -> Value {
    let w = yaml(rel);
    let paths = strings(at(&w, rel, &["on", "pull_request", "paths"]));
    assert_eq!(paths, ["migrations/**", "queries/**"], "{rel}");
    for p in ["security-events", "pull-requests"] {
        assert_eq!(permission(&w, "check", p), Some("write"), "{rel}: {p}");
    }
    let steps = steps_of(&w, rel, &["jobs", "check", "steps"]);
    let checkout = step_using(steps, rel, "actions/checkout");
    assert_eq!(
        at(checkout, rel, &["with", "fetch-depth"]).as_u64(),
        Some(0)
    );
    assert_eq!(
        at(checkout, rel, &["with", "persist-credentials"]).as_bool(),
        Some(false)
    );
    let header: String = file(rel)
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(header.contains("workflow_run"), "{header}");
    w
}

#[test]
fn github_workflow_is_the_action_after_a_checkout_with_history() {
    let rel = "tools/ci/github-actions.yml";
    let w = assert_pull_request_workflow(rel);
    let steps = steps_of(&w, rel, &["jobs", "check", "steps"]);
    // The checkout, then planck's action at a commit: nothing else to copy.
    assert_eq!(steps.len(), 2, "{steps:?}");
    let uses = at(&steps[1], rel, &["uses"]).as_str().unwrap();
    let (repo, commit) = uses.split_once('@').unwrap();
    assert!(repo.ends_with("/planck"), "{uses}");
    assert_eq!(commit.len(), 40, "{uses}");
}

#[test]
fn written_out_workflow_planck_lines_parse_and_it_uploads_and_comments() {
    let rel = "tools/ci/github-actions-manual.yml";
    let w = assert_pull_request_workflow(rel);
    let steps = steps_of(&w, rel, &["jobs", "check", "steps"]);
    let runs: Vec<&str> = steps
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .collect();
    let lines = planck_lines(runs.iter().copied());
    assert_check_lines(rel, &lines);
    // The report planck writes is the one uploaded and the one posted, and
    // the comment is updated in place.
    assert!(
        lines
            .iter()
            .any(|l| l.windows(2).any(|w| w == ["--sarif", "planck.sarif"])),
        "{lines:?}"
    );
    assert_eq!(
        at(
            step_using(steps, rel, "github/codeql-action/upload-sarif"),
            rel,
            &["with", "sarif_file"]
        )
        .as_str(),
        Some("planck.sarif")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.windows(2).any(|w| w == ["--markdown", "planck.md"])),
        "{lines:?}"
    );
    let comment = runs
        .iter()
        .find(|r| r.contains("<!-- planck check -->"))
        .expect("a step that writes the comment");
    assert!(comment.contains("--method PATCH"), "{comment}");
    assert!(comment.contains("cat planck.md"), "{comment}");
    // The gate's verdict outlives the uploads: planck check may fail, the
    // last step fails the job when it did.
    let check = step_with_id(steps, rel, "check");
    assert_eq!(at(check, rel, &["continue-on-error"]).as_bool(), Some(true));
    let last = run_of(steps.last().unwrap(), rel);
    assert_eq!(last.trim(), "exit 1");
}

/// `[name]=file` pairs of the action's check step: the reports it can write.
fn action_reports(script: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in script.split('[').skip(1) {
        let Some((name, rest)) = part.split_once("]=") else {
            continue;
        };
        let file: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != ')')
            .collect();
        out.push((name.to_string(), file));
    }
    out
}

#[test]
fn action_has_its_inputs_and_each_report_is_a_planck_check_flag() {
    let rel = "action.yml";
    let a = yaml(rel);
    assert_eq!(at(&a, rel, &["runs", "using"]).as_str(), Some("composite"));
    let inputs = at(&a, rel, &["inputs"]).as_mapping().unwrap();
    let names: Vec<&str> = inputs.keys().filter_map(Value::as_str).collect();
    assert_eq!(
        names,
        [
            "base",
            "fail-on",
            "reports",
            "version",
            "comment",
            "working-directory",
            "github-token"
        ]
    );
    let steps = steps_of(&a, rel, &["runs", "steps"]);
    let script = run_of(step_with_id(steps, rel, "check"), rel);
    let reports = action_reports(script);
    let mut names: Vec<&str> = reports.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        ["gitlab", "html", "json", "junit", "markdown", "sarif"],
        "{script}"
    );
    // Each report is the flag of its name, and the files are the ones the
    // rest of the action and docs/ci.md name.
    let mut words: Vec<String> = ["planck", "check", "--base", "origin/x", "--fail-on"]
        .map(String::from)
        .into();
    words.push("errors,regressions".into());
    for (name, file) in &reports {
        words.push(format!("--{name}"));
        words.push(file.clone());
    }
    let cli = Cli::try_parse_from(&words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
    let Command::Check(c) = cli.command else {
        panic!("{words:?} is not planck check")
    };
    assert_eq!(c.base.as_deref(), Some("origin/x"));
    assert_eq!(c.fail_on, ["errors", "regressions"]);
    assert_eq!(c.files.sarif.as_deref(), Some(Path::new("planck.sarif")));
    assert_eq!(c.files.markdown.as_deref(), Some(Path::new("planck.md")));
    assert_eq!(c.json.as_deref(), Some(Path::new("planck.json")));
    assert_eq!(
        c.files.gitlab.as_deref(),
        Some(Path::new("gl-code-quality-report.json"))
    );
    // The input's description lists every report with its file.
    let described = at(&inputs["reports"], rel, &["description"])
        .as_str()
        .unwrap();
    for (name, file) in &reports {
        assert!(
            described.contains(&format!("{name} ({file})")),
            "{described}"
        );
    }
    // The SARIF uploaded is the one check wrote; the comment is one, found
    // by its marker and updated in place; the install is planck-pg.
    assert_eq!(
        at(
            step_using(steps, rel, "github/codeql-action/upload-sarif"),
            rel,
            &["with", "sarif_file"]
        )
        .as_str(),
        Some("${{ steps.check.outputs.sarif }}")
    );
    let comment = steps
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .find(|r| r.contains("<!-- planck check -->"))
        .expect("a step that writes the comment");
    assert!(comment.contains("--method PATCH"), "{comment}");
    let install = steps
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .find(|r| r.contains("cargo install"))
        .expect("a step that installs planck");
    assert!(install.contains(" planck-pg --version "), "{install}");
    assert!(
        install.contains("--path \"$GITHUB_ACTION_PATH\""),
        "{install}"
    );
}

/// The action's check step (its shell script, run by bash as the runner
/// runs it) in `dir`, with the real planck and no database configuration
/// from the environment but `env`'s (which also overrides the rest);
/// returns its output and what it wrote to GITHUB_OUTPUT.
fn run_action_check_step(dir: &Path, reports: &str, env: &[(&str, &str)]) -> (Output, String) {
    let a = yaml("action.yml");
    let steps = steps_of(&a, "action.yml", &["runs", "steps"]);
    let script = run_of(step_with_id(steps, "action.yml", "check"), "action.yml");
    let outputs = dir.join("github-output");
    std::fs::write(&outputs, "").unwrap();
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-c", script])
        .current_dir(dir)
        .env("PLANCK", env!("CARGO_BIN_EXE_planck"))
        .env("PLANCK_BASE", "")
        .env("PLANCK_FAIL_ON", "")
        .env("PLANCK_REPORTS", reports)
        .env("PLANCK_COMMENT", "true")
        .env("GITHUB_BASE_REF", "main")
        .env("GITHUB_OUTPUT", &outputs);
    crate::common::clear_database_env(&mut cmd);
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    (out, std::fs::read_to_string(&outputs).unwrap())
}

/// An unknown report is refused before planck runs (exit 2, an annotation
/// naming it); a planck that fails hands its exit code on (the step itself
/// succeeds, so the SARIF and the comment still go out), with the base
/// taken from the pull request's target branch.
#[test]
fn action_check_step_refuses_an_unknown_report_and_hands_planck_exit_code_on() {
    let dir = project_dir();
    let (out, outputs) = run_action_check_step(dir.path(), "sarif, nope", &[]);
    assert_exit(&out, 2);
    assert!(
        stdout(&out).contains("::error title=planck::reports: unknown report 'nope'"),
        "{}",
        stdout(&out)
    );
    assert_eq!(outputs, "", "planck must not have run");

    // A repository with no origin/main: planck check --base origin/main
    // stops at the base with a usage error (2).
    git(dir.path(), &["init", "--quiet"]);
    git(
        dir.path(),
        &["commit", "--quiet", "--allow-empty", "-m", "one"],
    );
    let (out, outputs) = run_action_check_step(dir.path(), "sarif,json", &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("--base origin/main: no such commit"),
        "{}",
        stderr(&out)
    );
    let lines: Vec<&str> = outputs.lines().collect();
    assert_eq!(lines, ["exit-code=2"], "no report was written");
}

/// On the bundled example with its committed baseline (outside a pull
/// request: no base) the step runs the whole check, writes the reports
/// asked for and the comment's Markdown, and hands on planck's exit code
/// and the paths the SARIF upload and the comment read.
#[test]
fn action_check_step_writes_the_reports_and_hands_their_paths_on() {
    let db = test_db!();
    let dir = project_dir();
    let p = dir.path();
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .args(["migrations", "seeds", "queries"].map(|d| repo_root().join(d)))
        .arg(p)
        .status()
        .unwrap();
    assert!(copied.success());
    // The check databases get this test's prefix (`--name`, which keeps
    // parallel tests apart on the shared server; the action passes none).
    let planck = p.join("planck-named");
    std::fs::write(
        &planck,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" --name {}\n",
            env!("CARGO_BIN_EXE_planck"),
            db.name
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&planck, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (out, outputs) = run_action_check_step(
        p,
        "sarif,json,junit",
        &[
            ("PLANCK", planck.to_str().unwrap()),
            ("GITHUB_BASE_REF", ""),
            ("DATABASE_URL", &db.url),
        ],
    );
    assert_exit(&out, 0);
    let d = p.display();
    assert_eq!(
        outputs.lines().collect::<Vec<_>>(),
        [
            "exit-code=0".to_string(),
            format!("sarif={d}/planck.sarif"),
            format!("markdown={d}/planck.md"),
            format!("json={d}/planck.json"),
        ],
        "{}",
        stderr(&out)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("planck.json")).unwrap()).unwrap();
    assert_eq!(json["gate"]["passed"], true);
    assert!(json["base"].is_null(), "no base outside a pull request");
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("planck.sarif")).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(p.join("planck-junit.xml").is_file());
    assert!(!p.join("planck.html").exists(), "html was not asked for");
    assert!(
        std::fs::read_to_string(p.join("planck.md"))
            .unwrap()
            .contains("passed"),
        "the comment's Markdown says the verdict"
    );
}

/// Every `uses:` line of the GitHub files names a commit (40 hex digits)
/// and, after it, the version that commit is (`# v7.0.1`): a tag can be
/// moved to other code, a commit cannot. tools/lint-workflows checks the
/// same with zizmor; this runs where zizmor is not installed.
#[test]
fn every_action_the_github_files_use_is_pinned_to_a_commit_with_its_version() {
    let mut seen = 0;
    for rel in github_files() {
        let yaml_uses = count_uses(&yaml(&rel));
        let mut line_uses = 0;
        for (n, line) in file(&rel).lines().enumerate() {
            let t = line.trim_start().trim_start_matches("- ");
            let Some(rest) = t.strip_prefix("uses:") else {
                continue;
            };
            line_uses += 1;
            let (value, comment) = rest.split_once(" # ").unwrap_or((rest, ""));
            let (action, commit) = value
                .trim()
                .split_once('@')
                .unwrap_or_else(|| panic!("{rel}:{}: {line}: no @<commit>", n + 1));
            assert!(
                commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()),
                "{rel}:{}: {action} is not pinned to a commit: {line}",
                n + 1
            );
            assert!(
                comment.starts_with('v') && comment[1..].starts_with(|c: char| c.is_ascii_digit()),
                "{rel}:{}: no `# v<version>` after the commit: {line}",
                n + 1
            );
        }
        // Every `uses` the YAML holds was read as a line above.
        assert_eq!(line_uses, yaml_uses, "{rel}");
        seen += yaml_uses;
    }
    assert!(seen >= 6, "only {seen} uses: read");
}

fn count_uses(v: &Value) -> usize {
    match v {
        Value::Mapping(m) => m
            .iter()
            .map(|(k, v)| usize::from(k.as_str() == Some("uses")) + count_uses(v))
            .sum(),
        Value::Sequence(s) => s.iter().map(count_uses).sum(),
        _ => 0,
    }
}

/// Copies the GitHub files into a fresh folder with the same layout.
fn copy_github_files(dir: &Path) {
    std::fs::create_dir_all(dir.join("tools/ci")).unwrap();
    for rel in github_files() {
        std::fs::copy(repo_root().join(&rel), dir.join(&rel)).unwrap();
    }
}

/// Runs tools/lint-workflows on `dir`, never installing zizmor; `None` when
/// zizmor (the script's pinned version) is not installed.
fn lint_workflows(dir: &Path) -> Option<Output> {
    let out = std::process::Command::new(repo_root().join("tools/lint-workflows"))
        .arg(dir)
        .env("LINT_WORKFLOWS_INSTALL", "no")
        .output()
        .unwrap();
    (out.status.code() != Some(3)).then_some(out)
}

/// `.ci/run`'s workflow check (tools/lint-workflows: zizmor, offline) passes
/// on the files as they are, and fails on a copy where one step of a
/// workflow, or of the action, uses an action by its tag, naming the file
/// and the line planted.
#[test]
fn workflow_lint_passes_and_fails_on_an_unpinned_action_naming_file_and_line() {
    let clean = tempfile::tempdir().unwrap();
    copy_github_files(clean.path());
    let Some(out) = lint_workflows(clean.path()) else {
        crate::skip!(
            Missing,
            "zizmor is not installed (tools/lint-workflows installs its pinned version; .ci/run runs it first)"
        );
    };
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_exit(&out, 0);
    assert!(text.contains("are clean"), "{text}");

    for (rel, steps_line) in [
        ("tools/ci/github-actions.yml", "    steps:"),
        ("action.yml", "  steps:"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        copy_github_files(dir.path());
        let original = file(rel);
        let mut lines: Vec<&str> = original.lines().collect();
        let steps_at = lines
            .iter()
            .position(|l| *l == steps_line)
            .unwrap_or_else(|| panic!("{rel}: no `{steps_line}` line"));
        let indent = if rel == "action.yml" {
            "    "
        } else {
            "      "
        };
        let planted = format!("{indent}- uses: actions/checkout@v4");
        lines.insert(steps_at + 1, planted.as_str());
        std::fs::write(dir.path().join(rel), lines.join("\n") + "\n").unwrap();
        let out = lint_workflows(dir.path()).expect("zizmor ran on the clean copy");
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert_exit(&out, 1);
        assert!(text.contains("unpinned-uses"), "{text}");
        // The planted line (1-based: the line after `steps:`).
        assert!(
            text.contains(&format!("{rel}:{}", steps_at + 2)),
            "{rel}: {text}"
        );
    }
}

/// docs/ci.md shows the written-out workflow whole (docs::the_ci_page_shows_the_ci_files_as_they_are
/// covers the other two), and names every input of the action.
#[test]
fn ci_page_shows_the_written_out_workflow_and_every_action_input() {
    let page = file("docs/ci.md");
    for rel in github_files().iter().filter(|r| r.starts_with("tools/ci/")) {
        let text = file(rel);
        assert!(
            page.contains(&format!("```yaml\n{text}```\n")),
            "docs/ci.md does not show {rel} as it is"
        );
    }
    let a = yaml("action.yml");
    for name in at(&a, "action.yml", &["inputs"])
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
    {
        assert!(
            page.contains(&format!("| `{name}` |")),
            "docs/ci.md has no row for the action's input `{name}`"
        );
    }
}

/// The crate is planck-pg: no `cargo install` in the manual, the CI files
/// or the action installs the crate named `planck` (an unrelated one).
#[test]
fn every_cargo_install_by_name_installs_planck_pg() {
    let mut files: Vec<String> = vec!["README.md".into(), "action.yml".into()];
    for dir in ["docs", "tools/ci"] {
        for e in std::fs::read_dir(repo_root().join(dir)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") || name.ends_with(".yml") {
                files.push(format!("{dir}/{name}"));
            }
        }
    }
    let mut by_name = 0;
    for rel in &files {
        for (n, line) in file(rel).lines().enumerate() {
            for (i, _) in line.match_indices("cargo install ") {
                let command: Vec<&str> = line[i..]
                    .split(['`', ';', '|', ')', '#'])
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .map(|w| w.trim_matches('"'))
                    .collect();
                assert!(
                    !command.contains(&"planck"),
                    "{rel}:{}: installs the crate `planck`, not planck-pg: {line}",
                    n + 1
                );
                by_name += usize::from(command.contains(&"planck-pg"));
            }
        }
    }
    assert!(by_name >= 3, "only {by_name} installs of planck-pg found");
}

/// `planck --version` names the crate it was installed as (the binary's
/// name is not the crate's) and the PostgreSQL it found: the server
/// binaries and their version, or why there are none; `-V` stays one line.
#[test]
fn version_names_the_crate_and_the_postgresql_it_found() {
    let dir = project_dir();
    let bindir = bindir();
    let out = planck_cmd(dir.path())
        .arg("--version")
        .env("PLANCK_PG_BINDIR", &bindir)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("planck {} (crate planck-pg)", env!("CARGO_PKG_VERSION"))
    );
    let version = planck::cluster::server_version(&bindir).unwrap();
    assert_eq!(
        lines.last().copied(),
        Some(
            format!(
                "PostgreSQL found: {version} in {} (PLANCK_PG_BINDIR)",
                bindir.display()
            )
            .as_str()
        ),
        "{text}"
    );

    let empty = tempfile::tempdir().unwrap();
    let out = planck_cmd(dir.path())
        .arg("--version")
        .env("PLANCK_PG_BINDIR", empty.path())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.trim_end().ends_with(&format!(
            "PostgreSQL found: none (PLANCK_PG_BINDIR is {}, which holds no initdb and pg_ctl)",
            empty.path().display()
        )),
        "{text}"
    );

    let out = planck_cmd(dir.path()).arg("-V").output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        format!("planck {}\n", env!("CARGO_PKG_VERSION"))
    );
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

/// The release workflow (tools/ci/release.yml; it cannot run here) builds
/// the four targets on a version tag and names each archive, and the
/// binary's place in it, as Cargo.toml's `[package.metadata.binstall]`
/// says, so `cargo binstall planck-pg` finds them; each archive goes with
/// its sha256.
#[test]
fn release_archives_are_named_as_binstall_looks_for_them() {
    let rel = "tools/ci/release.yml";
    let w = yaml(rel);
    let tags = strings(at(&w, rel, &["on", "push", "tags"]));
    assert_eq!(tags, ["v[0-9]+.[0-9]+.[0-9]+*"]);
    let include = steps_of(&w, rel, &["jobs", "build", "strategy", "matrix", "include"]);
    let targets: Vec<&str> = include
        .iter()
        .map(|m| at(m, rel, &["target"]).as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        [
            "x86_64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
            "x86_64-apple-darwin",
            "aarch64-apple-darwin"
        ]
    );
    let steps = steps_of(&w, rel, &["jobs", "build", "steps"]);
    let script = steps
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .find(|r| r.contains("cargo build --release --locked"))
        .expect("a step that builds the release");
    let name = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("name="))
        .expect("the archive's name=")
        .trim_matches('"');
    // The folder of that name holds the binary, packed as <name>.tar.gz,
    // with its checksum beside it.
    for line in [
        r#"cp "target/$TARGET/release/planck" README.md LICENSE-MIT LICENSE-APACHE "$name/""#,
        r#"tar -czf "$name.tar.gz" "$name""#,
        r#"shasum -a 256 "$name.tar.gz" > "$name.tar.gz.sha256""#,
    ] {
        assert!(script.lines().any(|l| l.trim() == line), "{line}\n{script}");
    }

    let manifest: toml::Value = toml::from_str(&file("Cargo.toml")).unwrap();
    assert_eq!(manifest["package"]["name"].as_str(), Some("planck-pg"));
    let bins = manifest["bin"].as_array().unwrap();
    assert_eq!(bins[0]["name"].as_str(), Some("planck"));
    let binstall = &manifest["package"]["metadata"]["binstall"];
    assert_eq!(binstall["pkg-fmt"].as_str(), Some("tgz"));
    let version = "1.2.3";
    for target in targets {
        let fill = |template: &str| {
            template
                .replace("{ repo }", "REPO")
                .replace("{ version }", version)
                .replace("{ name }", "planck-pg")
                .replace("{ target }", target)
                .replace("{ bin }", "planck")
                .replace("{ binary-ext }", "")
        };
        let archive = name.replace("$TARGET", target).replace("$version", version);
        assert_eq!(
            fill(binstall["pkg-url"].as_str().unwrap()),
            format!("REPO/releases/download/v{version}/{archive}.tar.gz")
        );
        assert_eq!(
            fill(binstall["bin-dir"].as_str().unwrap()),
            format!("{archive}/planck")
        );
    }
    // The tag is the version binstall asks for: the build refuses another.
    assert!(script.contains(r#"[ "v$version" != "$TAG" ]"#), "{script}");
    // The release job attaches the archives and their checksums.
    let attach = steps_of(&w, rel, &["jobs", "release", "steps"])
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .find(|r| r.contains("gh release upload"))
        .expect("a step that uploads the archives");
    assert!(
        attach.contains("./*.tar.gz ./*.sha256 SHA256SUMS"),
        "{attach}"
    );
    assert_eq!(
        permission(&w, "release", "contents"),
        Some("write"),
        "the release job creates the release"
    );
    assert_eq!(permission(&w, "build", "contents"), Some("read"));
}
