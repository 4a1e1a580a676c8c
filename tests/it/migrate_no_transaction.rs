//! `-- planck:no-transaction` (issue 10 §4): a migration file with that first
//! line runs its statements one at a time outside a transaction, so
//! `CREATE INDEX CONCURRENTLY` works; it is still recorded in
//! planck_migrations, and a failure names its statement's line.

use crate::common;

use common::{assert_exit, stderr};

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = common::project_dir();
    std::fs::create_dir(dir.path().join("migrations")).unwrap();
    for (name, sql) in files {
        std::fs::write(dir.path().join("migrations").join(name), sql).unwrap();
    }
    dir
}

const TABLE: &str = "CREATE TABLE t (id int PRIMARY KEY, a int, b int);\n";

const CONCURRENT: &str = "CREATE INDEX CONCURRENTLY IF NOT EXISTS t_a_idx ON t (a);\n\
                          CREATE INDEX CONCURRENTLY IF NOT EXISTS t_b_idx ON t (b);\n";

#[test]
fn the_header_runs_concurrently_statements_outside_a_transaction_and_records_the_file() {
    let db = test_db!();
    let file = format!("{}\n{CONCURRENT}", planck::migrate::NO_TRANSACTION);
    let dir = project(&[("0001_t.sql", TABLE), ("0002_idx.sql", &file)]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings(
            "SELECT c.relname || ' ' || i.indisvalid FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 't\\__\\_idx' ORDER BY 1"
        ),
        ["t_a_idx true", "t_b_idx true"]
    );
    // Recorded like any file, with the line that made each index.
    assert_eq!(
        db.query_strings(
            "SELECT o->>'migration' || ':' || (o->>'line') || ' ' || (o->>'name') \
             FROM planck_migrations, jsonb_array_elements(objects) o \
             WHERE name = '0002_idx.sql' ORDER BY 1"
        ),
        ["0002_idx.sql:2 t_a_idx", "0002_idx.sql:3 t_b_idx"]
    );
    // Applied once: a second run has nothing to do.
    let out = db.planck(&["--format", "json", "migrate"], dir.path());
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["applied"], serde_json::json!([]), "{v:#}");
}

/// The control: the same statements without the header run in a
/// transaction, where the server refuses CONCURRENTLY.
#[test]
fn without_the_header_concurrently_is_refused_inside_the_transaction() {
    let db = test_db!("control");
    let dir = project(&[("0001_t.sql", TABLE), ("0002_idx.sql", CONCURRENT)]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("cannot run inside a transaction block"),
        "{err}"
    );
    assert!(
        err.contains("hint: start the file with the line `-- planck:no-transaction`"),
        "the error says how to run it: {err}"
    );
    // The header only counts on the first line.
    let late = format!(
        "-- indexes\n{}\n{CONCURRENT}",
        planck::migrate::NO_TRANSACTION
    );
    let db = test_db!("late_header");
    let dir = project(&[("0001_t.sql", TABLE), ("0002_idx.sql", &late)]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
}

#[test]
fn a_failing_statement_is_named_and_the_earlier_ones_stay_applied_unrecorded() {
    let db = test_db!();
    let file = format!(
        "{}\nCREATE INDEX CONCURRENTLY t_a_idx ON t (a);\n\nCREATE INDEX CONCURRENTLY t_c_idx ON t (c);\n",
        planck::migrate::NO_TRANSACTION
    );
    let dir = project(&[("0001_t.sql", TABLE), ("0002_idx.sql", &file)]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    let path = dir.path().join("migrations/0002_idx.sql");
    assert!(err.contains(&format!("{}:4", path.display())), "{err}");
    assert!(err.contains("column \"c\" does not exist"), "{err}");
    assert!(err.contains("outside a transaction"), "{err}");
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_indexes WHERE indexname = 't_a_idx'"),
        ["1"],
        "the statement before the failing one stays"
    );
    assert_eq!(
        db.query_strings("SELECT name FROM planck_migrations ORDER BY 1"),
        ["0001_t.sql"]
    );
}

/// Found by the advice test: the test cluster's role is `planck`, so once a
/// seed has made planck's bookkeeping schema `planck`, `"$user"` put it first
/// on the search path and the next migrate created a second
/// planck_migrations there and applied every file again, into that schema.
#[test]
fn migrate_keeps_out_of_planck_s_bookkeeping_schema_named_like_the_role() {
    let db = test_db!();
    assert_eq!(db.query_strings("SELECT current_user"), ["planck"]);
    let dir = project(&[("0001_t.sql", TABLE)]);
    assert_exit(&db.planck(&["migrate"], dir.path()), 0);
    db.exec("CREATE SCHEMA planck");
    std::fs::write(
        dir.path().join("migrations/0002_u.sql"),
        "CREATE TABLE u (id int);\n",
    )
    .unwrap();
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables \
             WHERE table_schema IN ('public', 'planck') ORDER BY 1"
        ),
        ["public.planck_migrations", "public.t", "public.u"]
    );
}
