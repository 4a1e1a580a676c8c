//! `planck check`: the pre-merge gate on the bundled example, on databases
//! of its own beside the test's database (`--name` keeps parallel tests
//! apart), with and without `--base`.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{TestDb, assert_exit, git, stderr};
use serde_json::Value;

/// A project folder holding the bundled example (migrations, seed spec,
/// recorded statements and the committed baseline).
fn example_project() -> tempfile::TempDir {
    let dir = common::project_dir();
    for sub in ["migrations", "seeds", "queries"] {
        let from = common::repo_root().join(sub);
        let to = dir.path().join(sub);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    dir
}

fn check(db: &TestDb, dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["check", "--name", &db.name];
    args.extend_from_slice(extra);
    db.planck(&args, dir)
}

fn databases_named(db: &TestDb) -> Vec<String> {
    db.query_strings(&format!(
        "SELECT datname FROM pg_database WHERE datname LIKE '{}\\_%' ORDER BY 1",
        db.name
    ))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Acceptance: exit 0 with the committed queries/baseline.toml (it holds the
/// example's known errors), 1 naming them without it; every step one line
/// with its duration; no planck.toml: the defaults printed; the check
/// database dropped afterwards, the configured one untouched.
#[test]
fn check_passes_with_the_committed_baseline_and_fails_naming_the_errors_without_it() {
    let db = test_db!();
    let dir = example_project();
    let out = check(&db, dir.path(), &["--json", "check.json"]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("no planck.toml: check runs on the defaults"),
        "{err}"
    );
    assert!(err.contains("[check] scale = 0.05 (default)"), "{err}");
    let timed = regex::Regex::new(r"\(\d+\.\d s\)$").unwrap();
    for step in [
        "database: created",
        "migrate: 5 file(s)",
        "seed: ",
        "explain (head): ",
        "cleanup: dropped",
    ] {
        let line = err
            .lines()
            .find(|l| l.starts_with(step))
            .unwrap_or_else(|| panic!("no {step:?} line:\n{err}"));
        assert!(timed.is_match(line), "{line}");
    }
    let v = read_json(&dir.path().join("check.json"));
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["gate"]["passed"], true);
    assert!(v["base"].is_null() && v["diff"].is_null());
    let baselined = v["head"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .inspect(|f| assert_eq!(f["baseline"], true, "{f}"))
        .count();
    assert!(baselined >= 1, "the example has known errors");
    // A finding about an index points at the migration statement that
    // created it (planck migrate's object map), relative to the project: a
    // CREATE INDEX naming it, or the CREATE TABLE of a key or UNIQUE the
    // server named after the table.
    let on_indexes: Vec<&Value> = v["head"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["index"].is_string() && f["statement_id"].is_null())
        .collect();
    assert!(!on_indexes.is_empty(), "the example has an unused index");
    for f in on_indexes {
        let at = &f["location"];
        assert_eq!(at["kind"], "migration", "{f}");
        let file = at["path"].as_str().unwrap();
        assert!(file.starts_with("migrations/"), "{f}");
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        let from = at["line"].as_u64().unwrap() as usize - 1;
        let statement: String = text
            .lines()
            .skip(from)
            .collect::<Vec<_>>()
            .join("\n")
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let name = f["index"].as_str().unwrap().rsplit('.').next().unwrap();
        let table = f["relation"].as_str().unwrap().rsplit('.').next().unwrap();
        let created = statement.starts_with("CREATE")
            && (statement.contains(name)
                || (statement.starts_with("CREATE TABLE")
                    && statement.contains(table)
                    && name.starts_with(table)));
        assert!(
            created,
            "{file}:{} is {statement:?}, not the CREATE of {name}",
            at["line"]
        );
    }
    assert!(
        databases_named(&db).is_empty(),
        "{:?}",
        databases_named(&db)
    );
    // The configured database was not migrated.
    assert!(
        db.query_strings("SELECT to_regclass('items')::text")
            .iter()
            .all(|s| s == "NULL")
    );

    // Without the baseline, and with the project's own migration command
    // (planck itself here: it migrates what DATABASE_URL and PG* name).
    std::fs::remove_file(dir.path().join("queries/baseline.toml")).unwrap();
    let command = format!(
        r#""$PLANCK_BIN" migrate && test "$PGDATABASE" = {}_head"#,
        db.name
    );
    std::fs::write(
        dir.path().join("planck.toml"),
        format!("[check]\nmigrate = '{command}'\n"),
    )
    .unwrap();
    let out = check(&db, dir.path(), &["--keep", "--json", "check.json"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("check failed"), "{err}");
    assert!(!err.contains("no planck.toml"), "{err}");
    assert!(
        err.contains(&format!("migrate: `{command}` on {}_head (", db.name)),
        "{err}"
    );
    let v = read_json(&dir.path().join("check.json"));
    let failures = v["gate"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), baselined, "{failures:#?}");
    for f in failures {
        assert_eq!(f["gate"], "errors");
        let q = f["query"].as_str().unwrap();
        assert!(err.contains(&q[..30]), "{q} not named in:\n{err}");
    }
    // --keep leaves the head database for a look.
    assert_eq!(databases_named(&db), vec![format!("{}_head", db.name)]);
}

/// --base outside a git repository, and with a ref that does not exist:
/// usage errors naming the fix, before any database is created.
#[test]
fn check_base_needs_a_git_repository_and_an_existing_ref() {
    let db = test_db!();
    let dir = example_project();
    let out = check(&db, dir.path(), &["--base", "main"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("needs a git repository"),
        "{}",
        stderr(&out)
    );
    git(dir.path(), &["init", "--quiet", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "--quiet", "-m", "example"]);
    let out = check(&db, dir.path(), &["--base", "origin/nope"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("--base origin/nope: no such commit"), "{err}");
    assert!(err.contains("fetch-depth: 0"), "{err}");
    assert!(databases_named(&db).is_empty());
}

/// Acceptance with --base: a branch whose migration drops the index the
/// activity feed reads, then adds a column with a volatile default and builds
/// an index without CONCURRENTLY. The diff shows the plan change and its
/// cost ratio, the gate names the statement, the index and the DROP INDEX's
/// file and line; the measurement names AccessExclusiveLock + rewrite for
/// the ADD COLUMN and ShareLock for the CREATE INDEX. The user's checkout is
/// left as it was, and the temporary worktree is gone.
#[test]
fn check_base_shows_a_dropped_index_and_measures_a_blocking_migration() {
    let db = test_db!();
    let dir = example_project();
    let p = dir.path();
    git(p, &["init", "--quiet", "-b", "main"]);
    git(p, &["add", "."]);
    git(p, &["commit", "--quiet", "-m", "example"]);
    git(p, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(
        p.join("migrations/0006_drop_feed_index.sql"),
        "-- The feed reads events by account.\n\nDROP INDEX events_account_created;\n",
    )
    .unwrap();
    std::fs::write(
        p.join("migrations/0007_events_seen.sql"),
        "ALTER TABLE events ADD COLUMN seen_at timestamptz DEFAULT clock_timestamp();\n\
         CREATE INDEX events_kind ON events (kind);\n",
    )
    .unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "--quiet", "-m", "drop the feed index"]);

    // Without --base: the feed's seq scan is a new error, and every output
    // names the statement, the index it lost and the DROP INDEX's file and
    // line (matched by the columns the plan filters on), SARIF at the DROP
    // with the CREATE related.
    let out = check(
        &db,
        p,
        &[
            "--json",
            "nobase.json",
            "--markdown",
            "nobase.md",
            "--junit",
            "nobase.xml",
            "--sarif",
            "nobase.sarif",
        ],
    );
    assert_exit(&out, 1);
    let v = read_json(&p.join("nobase.json"));
    assert!(v["base"].is_null());
    let failures = v["gate"]["failures"].as_array().unwrap();
    let lost = failures
        .iter()
        .find(|f| f["gate"] == "errors" && f["index"] == "events_account_created")
        .unwrap_or_else(|| panic!("no new error names the dropped index: {failures:#?}"));
    assert_eq!(lost["file"], "migrations/0006_drop_feed_index.sql");
    assert_eq!(lost["line"], 3);
    let lost_statement = lost["statement_id"].as_str().unwrap().to_string();
    assert_names_the_drop(p, "nobase", &lost_statement, "seq-scan");
    // Every statement that lost it (the feed reads events by account in more than one).
    let lost_without_base: Vec<String> = v["lost_indexes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["dropped"]["index"] == "events_account_created")
        .map(|l| l["statement_id"].as_str().unwrap().to_string())
        .collect();
    assert!(lost_without_base.contains(&lost_statement));
    // The checkout is left as the --base run below finds it.
    for ext in ["json", "md", "xml", "sarif"] {
        std::fs::remove_file(p.join(format!("nobase.{ext}"))).unwrap();
    }

    let out = check(
        &db,
        p,
        &[
            "--base",
            "main",
            "--fail-on",
            "errors,regressions,blocking-migration",
            "--json",
            "check.json",
            "--markdown",
            "check.md",
            "--junit",
            "check.xml",
            "--sarif",
            "check.sarif",
        ],
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("as a copy of"), "{err}");
    // Only the table head's files touched is analyzed again.
    assert!(
        err.contains("analyze: 1 table(s) head's migrations touched (events)"),
        "{err}"
    );
    let v = read_json(&p.join("check.json"));
    assert!(v["base"].is_object());
    assert_eq!(v["base_ref"], "main");

    // The diff: Index Scan -> Seq Scan on events, with its cost ratio.
    let changes = v["diff"]["plan_changes"].as_array().unwrap();
    let feed = changes
        .iter()
        .find(|c| {
            c["indexes_no_longer_used"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i == "events_account_created")
        })
        .unwrap_or_else(|| panic!("no plan lost events_account_created: {changes:#?}"));
    let what = feed["changes"][0].as_str().unwrap();
    assert!(what.starts_with("events: "), "{what}");
    assert!(
        what.contains("Index Scan") && what.contains("events_account_created -> Seq Scan"),
        "{what}"
    );
    assert!(feed["cost_ratio"].as_f64().unwrap() > 1.2, "{feed}");
    assert!(
        err.contains("events_account_created -> Seq Scan, cost x"),
        "{err}"
    );

    // The gate names the statement, the index and the migration's file and line.
    let failures = v["gate"]["failures"].as_array().unwrap();
    let regression = failures
        .iter()
        .find(|f| f["gate"] == "regressions" && f["index"] == "events_account_created")
        .unwrap_or_else(|| panic!("{failures:#?}"));
    assert_eq!(regression["statement_id"], feed["statement_id"]);
    let feed_statement = feed["statement_id"].as_str().unwrap();
    assert!(
        lost_without_base.iter().any(|s| s == feed_statement),
        "{feed_statement} lost the index with --base but not without: {lost_without_base:?}"
    );
    assert_names_the_drop(p, "check", feed_statement, "seq-scan");
    assert_eq!(regression["file"], "migrations/0006_drop_feed_index.sql");
    assert_eq!(regression["line"], 3);

    // The reports a reviewer reads name the same: the statement, the index
    // and the line that dropped it.
    let statement = feed["statement_id"].as_str().unwrap();
    let dropped_at = "migrations/0006_drop_feed_index.sql:3";
    for file in ["check.md", "check.xml"] {
        let text = std::fs::read_to_string(p.join(file)).unwrap();
        for needle in [statement, "events_account_created", dropped_at] {
            assert!(
                text.contains(needle),
                "{file} does not name {needle}:\n{text}"
            );
        }
    }
    let sarif = read_json(&p.join("check.sarif"));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let at_drop = results
        .iter()
        .find(|r| {
            r["ruleId"] == "plan-regression"
                && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    == "migrations/0006_drop_feed_index.sql"
        })
        .unwrap_or_else(|| panic!("no plan-regression result at the DROP INDEX: {results:#?}"));
    assert_eq!(
        at_drop["locations"][0]["physicalLocation"]["region"]["startLine"],
        3
    );
    let message = at_drop["message"]["text"].as_str().unwrap();
    assert!(
        message.contains(statement) && message.contains("events_account_created"),
        "{message}"
    );
    // The migration line that had created the index, as a related location.
    let created = &at_drop["relatedLocations"][0]["physicalLocation"];
    let file = created["artifactLocation"]["uri"].as_str().unwrap();
    let line = created["region"]["startLine"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(p.join(file)).unwrap();
    let at = text.lines().nth(line - 1).unwrap_or("");
    assert!(
        at.contains("CREATE INDEX") && at.contains("events_account_created"),
        "{file}:{line} is {at:?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f["gate"] == "errors" && f["statement_id"] == feed["statement_id"]),
        "the seq scan on events is a new error: {failures:#?}"
    );

    // The measurement, statement by statement, on a copy of the seeded base.
    let m = v["migration"].as_array().unwrap();
    assert_eq!(m.len(), 3, "{m:#?}");
    let add = &m[1];
    assert_eq!(add["file"], "migrations/0007_events_seen.sql");
    assert_eq!(add["line"], 1);
    assert_eq!(add["locks"][0]["relation"], "events");
    assert_eq!(add["locks"][0]["mode"], "AccessExclusiveLock");
    assert!(add["locks"][0]["held_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(add["rewritten"], serde_json::json!(["events"]));
    let index = &m[2];
    assert_eq!(index["line"], 2);
    assert_eq!(index["locks"][0]["relation"], "events");
    assert_eq!(index["locks"][0]["mode"], "ShareLock");
    assert_eq!(index["rewritten"], serde_json::json!([]));
    assert!(add["blocking"] == true && index["blocking"] == true);
    let blocking: Vec<_> = failures
        .iter()
        .filter(|f| {
            f["gate"] == "blocking-migration" && f["file"] == "migrations/0007_events_seen.sql"
        })
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(blocking, vec![1, 2], "{failures:#?}");

    // Nothing left behind: no databases, no worktree, the checkout as it was.
    assert!(
        databases_named(&db).is_empty(),
        "{:?}",
        databases_named(&db)
    );
    let worktrees = Command::new("git")
        .current_dir(p)
        .args(["worktree", "list"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&worktrees.stdout).lines().count(),
        1
    );
    let status = Command::new("git")
        .current_dir(p)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout).trim(),
        "?? check.json\n?? check.md\n?? check.sarif\n?? check.xml"
    );
}

/// A base whose migrations fail is reported (the file and line), and the
/// head side still runs and gates, without a diff.
#[test]
fn check_base_whose_migrations_fail_still_checks_the_head() {
    let db = test_db!();
    let dir = example_project();
    let p = dir.path();
    git(p, &["init", "--quiet", "-b", "main"]);
    std::fs::write(
        p.join("migrations/0006_notes.sql"),
        "CREATE TABLE notes (\n  id intt\n);\n",
    )
    .unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "--quiet", "-m", "a broken migration"]);
    git(p, &["checkout", "--quiet", "-b", "fix"]);
    std::fs::write(
        p.join("migrations/0006_notes.sql"),
        "CREATE TABLE notes (\n  id int\n);\n",
    )
    .unwrap();
    git(p, &["commit", "--quiet", "-am", "fixed"]);
    let out = check(&db, p, &["--base", "main", "--json", "check.json"]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("the head side still runs"), "{err}");
    let v = read_json(&p.join("check.json"));
    let base_error = v["base_error"].as_str().unwrap();
    assert!(base_error.contains("0006_notes.sql:2"), "{base_error}");
    assert!(v["base"].is_null() && v["diff"].is_null());
    assert!(v["head"]["summary"]["explained"].as_u64().unwrap() > 0);
    assert!(
        databases_named(&db).is_empty(),
        "{:?}",
        databases_named(&db)
    );
}

/// issue 14, `--replay`: a short replay on both sides with `--base` (ladder
/// 1,2 at 1 s), its p95 per step compared in the diff, the head's report in
/// the JSON and the Markdown, and an SLO no replay can meet failing the gate
/// by the `slo` gate alone. Without `--base`, an SLO it meets passes.
#[test]
fn check_replay_reports_both_sides_and_gates_on_the_slo() {
    let db = test_db!();
    let dir = example_project();
    let p = dir.path();
    git(p, &["init", "--quiet", "-b", "main"]);
    git(p, &["add", "."]);
    git(p, &["commit", "--quiet", "-m", "example"]);
    git(p, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(p.join("NOTES.md"), "no migration in this change\n").unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "--quiet", "-m", "notes"]);
    let replay = [
        "--replay",
        "--ladder",
        "1,2",
        "--replay-duration",
        "1s",
        "--json",
        "check.json",
        "--markdown",
        "check.md",
        "--junit",
        "check.xml",
    ];
    let mut args = vec!["--base", "main", "--slo", "p95=1us@2"];
    args.extend_from_slice(&replay);
    let out = check(&db, p, &args);
    assert_exit(&out, 1);
    let err = stderr(&out);
    for side in [
        "replay (base): ladder 1,2 at 1s each",
        "replay (head): ladder 1,2 at 1s each",
    ] {
        assert!(err.contains(side), "no {side:?} in:\n{err}");
    }
    let v = read_json(&p.join("check.json"));
    for side in ["replay", "base_replay"] {
        let steps: Vec<u64> = v[side]["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("no {side}: {v}"))
            .iter()
            .map(|s| s["concurrency"].as_u64().unwrap())
            .collect();
        assert_eq!(steps, vec![1, 2], "{side}");
        assert!(v[side]["steps"][0]["units"].as_u64().unwrap() > 0, "{side}");
    }
    let deltas = v["diff"]["replay_steps"].as_array().unwrap();
    assert_eq!(deltas.len(), 2, "{deltas:#?}");
    assert_eq!(deltas[1]["concurrency"], 2);
    assert_eq!(deltas[1]["head_p95_ms"], v["replay"]["steps"][1]["p95_ms"]);
    assert_eq!(
        deltas[1]["base_p95_ms"],
        v["base_replay"]["steps"][1]["p95_ms"]
    );
    // The SLO, a default gate once set, is the only reason the gate failed.
    assert_eq!(v["gate"]["fail_on"], serde_json::json!(["errors", "slo"]));
    let failures = v["gate"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert_eq!(failures[0]["gate"], "slo");
    let message = failures[0]["message"].as_str().unwrap();
    assert!(message.contains("p95 at 2 clients"), "{message}");
    assert!(err.contains("slo: SLO missed: p95 at 2 clients"), "{err}");
    let md = std::fs::read_to_string(p.join("check.md")).unwrap();
    assert!(md.starts_with("**Gate: failed**, 1 reason"), "{md}");
    assert!(md.contains("- slo: SLO missed"), "{md}");
    assert!(md.contains("Replay, per ladder step"), "{md}");
    assert!(md.contains("### Replay: "), "{md}");
    let xml = std::fs::read_to_string(p.join("check.xml")).unwrap();
    assert!(xml.contains("name=\"replay at 2 clients\""), "{xml}");
    assert!(xml.contains("type=\"slo\""), "{xml}");
    assert!(
        databases_named(&db).is_empty(),
        "{:?}",
        databases_named(&db)
    );

    // No --base, an objective the replay meets: the gate passes, one side.
    let mut args = vec!["--slo", "p95=60s@1"];
    args.extend_from_slice(&replay);
    let out = check(&db, p, &args);
    assert_exit(&out, 0);
    let v = read_json(&p.join("check.json"));
    assert_eq!(v["replay"]["steps"].as_array().unwrap().len(), 2);
    assert!(v["base_replay"].is_null() && v["diff"].is_null());
    assert_eq!(v["gate"]["passed"], true);
    let md = std::fs::read_to_string(p.join("check.md")).unwrap();
    // At check's scale some of the example's statements read only tables
    // below min_rows: the verdict names them ("passed for N of M").
    let passed = if v["gate"]["not_judged"].is_null() {
        "**Gate: passed** (fail_on = [errors, slo])".to_string()
    } else {
        format!(
            "**Gate: passed for {} of {} statements**",
            v["gate"]["statements"].as_u64().unwrap()
                - v["gate"]["not_judged"].as_array().unwrap().len() as u64,
            v["gate"]["statements"]
        )
    };
    assert!(md.starts_with(&passed), "{md}");
    assert!(md.contains("(fail_on = [errors, slo])"), "{md}");
}

/// issue 14: Ctrl-C during `planck check --base` (here while the base is
/// seeded) drops the check databases and removes the base worktree before
/// planck exits 130, saying so.
#[test]
fn check_interrupted_leaves_no_database_and_no_worktree() {
    use std::io::{BufRead, BufReader};
    let db = test_db!();
    let dir = example_project();
    let p = dir.path();
    git(p, &["init", "--quiet", "-b", "main"]);
    git(p, &["add", "."]);
    git(p, &["commit", "--quiet", "-m", "example"]);
    let mut child = common::planck_cmd(p)
        .arg("--database-url")
        .arg(&db.url)
        .args([
            "check", "--name", &db.name, "--base", "main", "--scale", "0.2",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    // The base is migrated: its worktree and database exist, the seed runs.
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with("migrate: ") {
            break;
        }
    }
    assert!(seen.contains("migrate: "), "{seen}");
    let worktrees = |p: &Path| {
        let out = Command::new("git")
            .current_dir(p)
            .args(["worktree", "list", "--porcelain"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .map(|l| l["worktree ".len()..].to_string())
            .collect::<Vec<_>>()
    };
    let during = worktrees(p);
    assert_eq!(
        during.len(),
        2,
        "the base worktree exists mid-run: {during:?}"
    );
    assert!(
        !databases_named(&db).is_empty(),
        "the base database exists mid-run"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    for line in lines {
        seen.push_str(&line.unwrap());
        seen.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(
        seen.contains("interrupted: check stopped; dropped "),
        "{seen}"
    );
    assert!(seen.contains("removed the base worktree"), "{seen}");
    assert!(
        databases_named(&db).is_empty(),
        "{:?}",
        databases_named(&db)
    );
    assert_eq!(worktrees(p).len(), 1, "{:?}", worktrees(p));
    assert!(!Path::new(&during[1]).exists(), "{} is left", during[1]);
}

/// issue 14, bad input: `--base` in a shallow clone that lacks the ref is a
/// usage error that says it is shallow and names `fetch-depth: 0`.
#[test]
fn check_base_in_a_shallow_clone_names_fetch_depth() {
    let db = test_db!();
    let origin = example_project();
    let o = origin.path();
    git(o, &["init", "--quiet", "-b", "main"]);
    git(o, &["add", "."]);
    git(o, &["commit", "--quiet", "-m", "example"]);
    git(o, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(o.join("NOTES.md"), "x\n").unwrap();
    git(o, &["add", "."]);
    git(o, &["commit", "--quiet", "-m", "notes"]);
    let clone = common::project_dir();
    let url = format!("file://{}", o.display());
    let c = clone.path().join("shallow");
    git(
        clone.path(),
        &[
            "clone", "--quiet", "--depth", "1", "--branch", "feature", &url, "shallow",
        ],
    );
    let out = check(&db, &c, &["--base", "origin/main"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("(a shallow clone)"), "{err}");
    assert!(err.contains("fetch-depth: 0"), "{err}");
    assert!(databases_named(&db).is_empty());
}

/// `{stem}.md` and `{stem}.xml` name the statement, the index the events
/// feed lost and the DROP INDEX's file and line; `{stem}.sarif` has a
/// `check` result for the statement located at the DROP, with the CREATE
/// INDEX line as a related location.
fn assert_names_the_drop(p: &Path, stem: &str, statement: &str, check: &str) {
    let dropped_at = "migrations/0006_drop_feed_index.sql:3";
    for ext in ["md", "xml"] {
        let text = std::fs::read_to_string(p.join(format!("{stem}.{ext}"))).unwrap();
        for needle in [statement, "events_account_created", dropped_at] {
            assert!(
                text.contains(needle),
                "{stem}.{ext} does not name {needle}:\n{text}"
            );
        }
    }
    let sarif = read_json(&p.join(format!("{stem}.sarif")));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let at_drop = results
        .iter()
        .find(|r| {
            r["ruleId"] == check
                && r["message"]["text"].as_str().unwrap().contains(statement)
                && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    == "migrations/0006_drop_feed_index.sql"
        })
        .unwrap_or_else(|| panic!("no {check} result at the DROP INDEX: {results:#?}"));
    assert_eq!(
        at_drop["locations"][0]["physicalLocation"]["region"]["startLine"],
        3
    );
    assert!(
        at_drop["message"]["text"]
            .as_str()
            .unwrap()
            .contains("events_account_created"),
        "{at_drop}"
    );
    let created = &at_drop["relatedLocations"][0]["physicalLocation"];
    let file = created["artifactLocation"]["uri"].as_str().unwrap();
    let line = created["region"]["startLine"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(p.join(file)).unwrap();
    let at = text.lines().nth(line - 1).unwrap_or("");
    assert!(
        at.contains("CREATE INDEX") && at.contains("events_account_created"),
        "{file}:{line} is {at:?}"
    );
    assert_paths_are_the_repository_s(p, stem, &sarif);
}

/// The outputs are read on another machine (code scanning, a PR comment):
/// every file they point at is relative to the checkout's root, no output
/// holds the absolute path of the checkout that ran the check, and SARIF
/// names that root once, as `%SRCROOT%`, with every location relative to it.
fn assert_paths_are_the_repository_s(p: &Path, stem: &str, sarif: &Value) {
    let root = p.canonicalize().unwrap();
    let abs = root.to_str().unwrap();
    for ext in ["md", "xml"] {
        let text = std::fs::read_to_string(p.join(format!("{stem}.{ext}"))).unwrap();
        assert!(!text.contains(abs), "{stem}.{ext} holds {abs}:\n{text}");
    }
    let run = &sarif["runs"][0];
    assert_eq!(
        run["originalUriBaseIds"]["%SRCROOT%"]["uri"],
        format!("file://{abs}/")
    );
    let mut results = run["results"].as_array().unwrap().clone();
    for r in &mut results {
        for key in ["locations", "relatedLocations"] {
            for l in r[key].as_array().cloned().unwrap_or_default() {
                let a = &l["physicalLocation"]["artifactLocation"];
                let uri = a["uri"].as_str().unwrap();
                assert_eq!(a["uriBaseId"], "%SRCROOT%", "{l}");
                assert!(p.join(uri).is_file(), "{uri} is no file of the checkout");
            }
        }
    }
    let statement_at: Vec<&str> = results
        .iter()
        .flat_map(|r| r["relatedLocations"].as_array().into_iter().flatten())
        .filter(|l| l["message"]["text"] == "the statement that lost it")
        .filter_map(|l| l["physicalLocation"]["artifactLocation"]["uri"].as_str())
        .collect();
    assert!(!statement_at.is_empty(), "{results:#?}");
    assert!(
        statement_at.iter().all(|u| *u == "queries/recorded.toml"),
        "{statement_at:?}"
    );
    let text = serde_json::to_string(&results).unwrap();
    assert!(!text.contains(abs), "a SARIF result holds {abs}");
}

/// Issue 34: check resolves every section of planck.toml its steps read
/// before it does anything: a bad `[seed]` value fails at once (exit 2,
/// planck.toml and the key named), with no database created and no step run.
#[test]
fn a_bad_seed_value_fails_check_before_any_database() {
    let db = test_db!();
    let dir = example_project();
    std::fs::write(
        dir.path().join("planck.toml"),
        "[check]\nscale = 0.05\n\n[seed]\nthreads = 0\n",
    )
    .unwrap();
    let out = check(&db, dir.path(), &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("planck.toml: invalid `[seed] threads = 0`"),
        "{err}"
    );
    assert!(!err.contains("database: created"), "{err}");
    assert!(!err.contains("migrate: "), "{err}");
    assert_eq!(databases_named(&db), Vec::<String>::new());
}
