//! `planck seed`'s load on real schemas (issue 9 points 5, 6, 11 and 12):
//! an unmigrated database, user triggers, objects that depend on a primary
//! key, rows the migrations wrote. Each against a real server, through the
//! real binary.

mod common;

use common::{TestDb, assert_exit, project_dir, stderr, stdout};

fn seed(db: &TestDb, args: &[&str]) -> std::process::Output {
    let dir = project_dir();
    let mut all = vec!["seed"];
    all.extend_from_slice(args);
    db.planck(&all, dir.path())
}

fn one(db: &TestDb, sql: &str) -> String {
    db.query_strings(sql).remove(0)
}

/// Issue 9 point 12: no tables is an error with a hint, exit 2, not "seeded 0 rows".
#[test]
fn an_unmigrated_database_is_an_error_with_a_hint() {
    let db = test_db!();
    let out = seed(&db, &["--no-spec"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("has no tables to seed"), "{err}");
    assert!(err.contains("planck migrate first?"), "{err}");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    // A migration tool's bookkeeping alone is still unmigrated.
    db.exec("CREATE TABLE django_migrations (id serial PRIMARY KEY, app text NOT NULL)");
    let out = seed(&db, &["--no-spec"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("planck migrate first?"), "{}", stderr(&out));
}
