//! `planck seed`'s planner on real schemas (issue 9, points 2, 3, 4, 8, 10
//! and 13): every problem at once, unique keys the value space cannot hold,
//! a spec that says nonsense, multi-column keys over foreign keys,
//! partitions and schemas.

mod common;

use common::{TestDb, assert_exit, project_dir, stderr, stdout};

/// Runs `planck seed ARGS` with `spec` (when given) as the project's only spec.
fn seed_with(db: &TestDb, spec: Option<&str>, args: &[&str]) -> std::process::Output {
    let dir = project_dir();
    let mut a = vec!["seed"];
    if let Some(text) = spec {
        let path = dir.path().join("spec.toml");
        std::fs::write(&path, text).unwrap();
        a.extend(["--spec", "spec.toml"]);
    } else {
        a.push("--no-spec");
    }
    a.extend_from_slice(args);
    db.planck(&a, dir.path())
}

/// The rendered error (from `error:` on), without the progress lines before
/// it, the spec's temporary directory written `<project>`.
fn error_text(out: &std::process::Output) -> String {
    let err = stderr(out);
    let Some(i) = err.find("error: ") else {
        panic!("no error in stderr:\n{err}")
    };
    err[i..]
        .trim_end()
        .split(' ')
        .map(|w| match w.find("/spec.toml") {
            Some(k) if w.starts_with('/') => format!("<project>{}", &w[k..]),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

/// Three tables planck cannot seed, each for its own reason, a fourth that
/// references one of them, and two it can seed.
const THREE_UNSEEDABLE: &str = "
    CREATE TABLE fine (id serial PRIMARY KEY, label text NOT NULL);
    CREATE TABLE tiny (id smallint PRIMARY KEY);
    CREATE TABLE acl (id serial PRIMARY KEY, privilege aclitem NOT NULL);
    CREATE TABLE flags (id serial PRIMARY KEY, enabled boolean NOT NULL UNIQUE);
    CREATE TABLE grants (id serial PRIMARY KEY, acl_id int NOT NULL REFERENCES acl);
    CREATE TABLE notes (id serial PRIMARY KEY, fine_id int NOT NULL REFERENCES fine,
                        acl_id int REFERENCES acl);
";
const THREE_SPEC: &str = "[tables.tiny]\nrows = 40000\n[tables.flags]\nrows = 10\n";

/// Issue 9 point 2: planning reports every table it cannot seed, in one
/// run, before anything is written (exit 2); the cascade names its cause.
#[test]
fn every_unseedable_table_is_reported_in_one_run() {
    let db = test_db!();
    db.exec(THREE_UNSEEDABLE);
    let out = seed_with(&db, Some(THREE_SPEC), &[]);
    assert_exit(&out, 2);
    insta::assert_snapshot!(error_text(&out));
    assert_eq!(
        count(&db, "SELECT count(*) FROM fine"),
        0,
        "nothing written"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM notes"),
        0,
        "nothing written"
    );
}

/// Issue 9 point 2: `--skip-unseedable` seeds the others and says what it
/// skipped, with the tables that depend on it; a nullable foreign key into
/// a skipped table is left NULL.
#[test]
fn skip_unseedable_seeds_the_rest_and_names_what_it_skipped() {
    let db = test_db!();
    db.exec(THREE_UNSEEDABLE);
    let out = seed_with(
        &db,
        Some(THREE_SPEC),
        &["--skip-unseedable", "--rows", "50"],
    );
    assert_exit(&out, 0);
    let err = stderr(&out);
    for t in ["tiny", "acl", "flags"] {
        assert!(
            err.contains(&format!("skipped {t} (")),
            "{t} not reported:\n{err}"
        );
    }
    assert!(
        err.contains("; with it: grants"),
        "cascade not reported:\n{err}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM fine"), 50);
    assert!(
        count(&db, "SELECT count(*) FROM notes") > 0,
        "{}",
        stdout(&out)
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM notes WHERE acl_id IS NOT NULL"),
        0
    );
    for t in ["tiny", "acl", "flags", "grants"] {
        assert_eq!(
            count(&db, &format!("SELECT count(*) FROM {t}")),
            0,
            "{t} was written"
        );
    }
}
