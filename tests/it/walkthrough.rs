//! The README's "Five minutes on your own project", run with planck's
//! defaults on a project that is not the bundled example (issue 48): a small
//! multi-tenant task board (tests/fixtures/walkthrough: orgs, people, boards,
//! cards with org_id, row-level security on `app.org_id`, an application
//! role, a 15-statement test run through psql). The defaults must find what
//! planck exists to find (scans of a big table that need an index) and must
//! not pass in silence on data too small to judge; `planck check` must fail
//! on a later migration that drops an index.

use crate::common;

use std::path::Path;

use common::{TestDb, assert_exit, git, stderr, stdout};
use serde_json::Value;

/// A project folder holding the fixture's migrations (not its later
/// `drop_board_index.sql`).
fn taskboard_project() -> tempfile::TempDir {
    let dir = common::project_dir();
    let to = dir.path().join("migrations");
    std::fs::create_dir_all(&to).unwrap();
    let from = common::fixture("walkthrough").join("migrations");
    for e in std::fs::read_dir(&from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    dir
}

/// `planck <args>` in `dir` on `db`, asserting its exit code.
fn planck(db: &TestDb, dir: &Path, args: &[&str], code: i32) -> std::process::Output {
    let out = db.planck(args, dir);
    assert_exit(&out, code);
    out
}

/// The README's first three steps: migrate, record the test run through
/// psql, start again from the bare schema. (`--force`: the test's database
/// is not planck's managed one, which `migrate --fresh` drops without it.)
fn migrate_record_fresh(db: &TestDb, dir: &Path) {
    planck(db, dir, &["migrate"], 0);
    let testrun = common::fixture("walkthrough").join("testrun.sql");
    let testrun = testrun.to_str().unwrap();
    planck(
        db,
        dir,
        &[
            "record",
            "--",
            "psql",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            &db.url,
            "-f",
            testrun,
        ],
        0,
    );
    assert!(dir.join("queries/recorded.toml").is_file());
    planck(db, dir, &["migrate", "--fresh", "--force"], 0);
}

fn explain_json(db: &TestDb, dir: &Path, code: i32) -> Value {
    let out = planck(db, dir, &["--format", "json", "explain"], code);
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

/// The tables the seq-scan errors of `v` (explain's JSON) are on.
fn seq_scan_errors(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "seq-scan" && f["severity"] == "error")
        .map(|f| f["relation"].as_str().unwrap().to_string())
        .collect()
}

/// Acceptance of issue 48: migrate, record, migrate --fresh, seed, explain,
/// each with its defaults, find the scans of `cards` that need an index
/// (exit 1, each an error), and name no statement as below min_rows. The
/// same explain on the old default's dataset (`--rows 1000`) finds no error
/// but says which statements and tables it could not judge.
#[test]
fn the_readme_walkthrough_with_the_defaults_finds_the_scans_that_need_an_index() {
    let db = test_db!();
    let project = taskboard_project();
    let dir = project.path();
    migrate_record_fresh(&db, dir);
    let recorded = std::fs::read_to_string(dir.join("queries/recorded.toml")).unwrap();
    assert!(
        recorded.matches("[[statement]]").count() >= 15,
        "the test run's statements: {recorded}"
    );

    planck(&db, dir, &["seed"], 0);
    let v = explain_json(&db, dir, 1);
    let scans = seq_scan_errors(&v);
    let on_cards = scans.iter().filter(|t| t.ends_with("cards")).count();
    // By assignee, by due date and by title: no index leads with them.
    assert!(on_cards >= 3, "seq-scan errors: {scans:?}\n{v:#}");
    assert!(v["summary"]["new_errors"].as_u64().unwrap() >= 3, "{v:#}");
    assert!(v["below_min_rows"].is_null(), "{:#}", v["below_min_rows"]);

    // The dataset the old default made: every table under min_rows. No
    // error can be found there, and explain says so rather than passing.
    planck(&db, dir, &["seed", "--rows", "1000", "--truncate"], 0);
    let out = planck(&db, dir, &["--format", "json", "explain"], 0);
    let small: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(seq_scan_errors(&small).is_empty(), "{small:#}");
    let below = &small["below_min_rows"];
    assert_eq!(below["min_rows"], 10_000, "{small:#}");
    let named: Vec<&str> = below["statements"]
        .as_array()
        .unwrap_or_else(|| panic!("no below_min_rows: {small:#}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let explained = small["summary"]["explained"].as_u64().unwrap() as usize;
    assert_eq!(named.len(), explained, "every table is small: {below:#}");
    let cards = below["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"].as_str().unwrap().ends_with("cards"))
        .unwrap_or_else(|| panic!("cards not named: {below:#}"));
    assert_eq!(cards["rows"], 4000, "{below:#}");
    let err = stderr(&out);
    assert!(
        err.contains("only tables below min_rows (10,000)") && err.contains("cards 4,000 rows"),
        "{err}"
    );
}

/// `planck check` with its defaults on the same project, in a git
/// repository whose later migration drops the index the board page uses:
/// it fails, naming the DROP INDEX's file and the scans, at a size that can
/// fail (scale 1 without a seed spec) and with every statement judged.
#[test]
fn check_on_the_walkthrough_project_fails_on_the_dropped_index_and_the_scans() {
    let db = test_db!();
    let project = committed_project(&db);
    let p = project.path();
    std::fs::copy(
        common::fixture("walkthrough").join("drop_board_index.sql"),
        p.join("migrations/0004_drop_board_index.sql"),
    )
    .unwrap();
    git(p, &["add", "migrations"]);
    git(p, &["commit", "--quiet", "-m", "drop the board index"]);

    let out = planck(
        &db,
        p,
        &[
            "check",
            "--name",
            &db.name,
            "--json",
            "check.json",
            "--markdown",
            "check.md",
        ],
        1,
    );
    let err = stderr(&out);
    assert!(
        err.contains("[check] scale = 1 (default without a seed spec)"),
        "{err}"
    );
    assert!(
        err.contains("wrote check.json") && err.contains("wrote check.md"),
        "{err}"
    );
    // No queries/baseline.toml: none is named.
    assert!(!err.contains("against queries/baseline.toml"), "{err}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("check.json")).unwrap()).unwrap();
    let gate = &v["gate"];
    assert_eq!(gate["passed"], false, "{gate:#}");
    assert!(gate["not_judged"].is_null(), "{gate:#}");
    let failures = gate["failures"].as_array().unwrap();
    let scans = failures
        .iter()
        .filter(|f| f["gate"] == "errors" && f["message"].as_str().unwrap().starts_with("seq-scan"))
        .count();
    assert!(scans >= 4, "the scans and the board page's: {gate:#}");
    let drop = failures
        .iter()
        .find(|f| {
            f["index"]
                .as_str()
                .is_some_and(|i| i.ends_with("cards_board_id_idx"))
        })
        .unwrap_or_else(|| panic!("no failure names the dropped index: {gate:#}"));
    assert_eq!(
        drop["file"], "migrations/0004_drop_board_index.sql",
        "{drop:#}"
    );
    assert!(
        drop["query"].as_str().unwrap().contains("board_id"),
        "{drop:#}"
    );
}

/// The walkthrough's project, migrated and recorded, committed to a git
/// repository as `planck check` wants it.
fn committed_project(db: &TestDb) -> tempfile::TempDir {
    let project = taskboard_project();
    let p = project.path();
    migrate_record_fresh(db, p);
    git(p, &["init", "--quiet", "-b", "main"]);
    git(p, &["add", "migrations", "queries"]);
    git(p, &["commit", "--quiet", "-m", "taskboard"]);
    project
}

/// A gate that judged nothing does not pass: on data too small for any
/// statement (`--rows 10`), `planck check` fails even with the default
/// `fail_on`, and says why, rather than "check passed for 0 of N".
#[test]
fn check_fails_when_its_data_judges_no_statement() {
    let db = test_db!();
    let project = committed_project(&db);
    let p = project.path();
    let out = planck(
        &db,
        p,
        &[
            "check",
            "--name",
            &db.name,
            "--rows",
            "10",
            "--json",
            "check.json",
        ],
        1,
    );
    let err = stderr(&out);
    assert!(!err.contains("check passed"), "{err}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("check.json")).unwrap()).unwrap();
    let gate = &v["gate"];
    assert_eq!(gate["passed"], false, "{gate:#}");
    let statements = gate["statements"].as_u64().unwrap();
    assert!(statements > 0, "{gate:#}");
    assert_eq!(
        gate["not_judged"].as_array().map(Vec::len),
        Some(statements as usize),
        "{gate:#}"
    );
    let failures = gate["failures"].as_array().unwrap();
    assert!(
        failures
            .iter()
            .any(|f| f["gate"] == "not-judged"
                && f["message"].as_str().unwrap().contains("judged none")),
        "{gate:#}"
    );
}
