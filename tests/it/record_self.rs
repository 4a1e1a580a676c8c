//! planck never records itself (issue 8, section 4): `planck record` right
//! after a `planck seed` or a `planck explain`, or around a script that runs
//! them, keeps none of planck's own statements, nor the server's foreign-key
//! checks its work caused: every planck session runs
//! `pg_stat_statements.track = 'none'` (`session::quiet_stats`).

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{TestDb, assert_exit, stderr};
use planck::queries::QueryFile;

/// The parts of record's JSON summary these tests read, mirrored here apart
/// from planck's own wire types.
#[derive(Debug, serde::Deserialize)]
struct Summary {
    mode: String,
    kept: usize,
    dropped: std::collections::BTreeMap<String, u64>,
}

fn record_now(db: &TestDb, dir: &Path, args: &[&str]) -> Summary {
    let mut all = vec!["--format", "json", "record"];
    all.extend_from_slice(args);
    let out = db.planck(&all, dir);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not the record wire format: {e}\n{}", stderr(&out)))
}

fn queries(path: &Path) -> BTreeSet<String> {
    if !path.exists() {
        return BTreeSet::new();
    }
    QueryFile::load(path)
        .unwrap()
        .statements
        .into_iter()
        .map(|s| planck::queries::normalize_space(&s.query))
        .collect()
}

/// Resets this database's counters only: a whole-server reset would race
/// with the other tests' recordings.
fn reset_stats(db: &TestDb) {
    db.exec(
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; \
         SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)",
    );
}

fn seed(db: &TestDb, dir: &Path) {
    let out = db.planck(&["seed", "--rows", "40"], dir);
    assert_exit(&out, 0);
}

/// The defect: right after a seed, `planck record` with no command kept
/// planck's own statements (`SELECT EXISTS ...`, `setval`, the
/// `planck_seed_saved` writes) and the server's foreign-key validations.
#[test]
fn record_after_seed_keeps_none_of_its_statements() {
    let db = test_db!(migrated);
    reset_stats(&db);
    let dir = common::project_dir();
    seed(&db, dir.path());
    let file = dir.path().join("now.toml");
    let v = record_now(&db, dir.path(), &["-o", "now.toml"]);
    assert_eq!(queries(&file), BTreeSet::new(), "{v:#?}");
    assert_eq!(v.kept, 0, "{v:#?}");
}

/// The defect: after an explain, its PREPAREs, EXPLAINs and value probes
/// were recorded as if the application had sent them.
#[test]
fn record_after_explain_keeps_none_of_its_statements() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    seed(&db, dir.path());
    reset_stats(&db);
    let committed = common::repo_root().join("queries/recorded.toml");
    let out = db.planck(
        &["explain", "--queries", committed.to_str().unwrap()],
        dir.path(),
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "explain failed: {}",
        stderr(&out)
    );
    let file = dir.path().join("now.toml");
    let v = record_now(&db, dir.path(), &["-o", "now.toml"]);
    assert_eq!(queries(&file), BTreeSet::new(), "{v:#?}");
}

/// The defect: `record -- ./script-that-runs-planck-seed` recorded only
/// planck's internals. Now: only what the script itself sent.
#[test]
fn record_around_a_script_that_seeds_keeps_only_the_scripts_statements() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    let script = dir.path().join("suite.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nset -e\n\"$PLANCK_BIN\" seed --rows 40 >/dev/null\n\
         psql -X -q -c 'SELECT count(*) FROM items WHERE deleted_at IS NULL' >/dev/null\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let v = record_now(&db, dir.path(), &["--", "./suite.sh"]);
    assert_eq!(
        queries(&dir.path().join("queries/recorded.toml")),
        BTreeSet::from(["SELECT count(*) FROM items WHERE deleted_at IS NULL".to_string()]),
        "{v:#?}"
    );
}

/// The server validates every foreign key a seed re-adds (`SELECT fk."..."
/// FROM ONLY ... LEFT OUTER JOIN ONLY ...`) inside the seed's session, so
/// untracking that session keeps even those out: nothing of the seed's is
/// left for the noise filter to drop (whose forms `stats::noise`'s unit tests
/// pin, for sessions that cannot untrack).
#[test]
fn record_after_seed_sees_not_even_the_servers_validations() {
    let db = test_db!(migrated);
    reset_stats(&db);
    let dir = common::project_dir();
    seed(&db, dir.path());
    let v = record_now(&db, dir.path(), &["-o", "now.toml"]);
    assert_eq!(v.dropped["fk-validation"], 0, "{:?}", v.dropped);
    assert_eq!(v.dropped["planck-bookkeeping"], 0, "{:?}", v.dropped);
    for q in queries(&dir.path().join("now.toml")) {
        assert!(!q.contains("LEFT OUTER JOIN ONLY"), "{q}");
        assert!(!q.contains("seed_saved"), "{q}");
    }
}

/// The server's row checks for a foreign key (`SELECT 1 FROM ONLY ... x
/// ... FOR KEY SHARE OF x`, run inside every INSERT into the child) and
/// its cascades are dropped as fk-check; the application's INSERT and
/// DELETE stay.
#[test]
fn the_servers_foreign_key_checks_are_dropped() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parent (id int PRIMARY KEY);
         CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent ON DELETE CASCADE);
         INSERT INTO parent VALUES (1), (2);",
    );
    let dir = common::project_dir();
    let script = dir.path().join("s.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nset -e\npsql -X -q -c 'INSERT INTO child VALUES (10, 1)' \
         -c 'DELETE FROM parent WHERE id = 1' >/dev/null\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let v = record_now(&db, dir.path(), &["--", "./s.sh"]);
    assert_eq!(
        queries(&dir.path().join("queries/recorded.toml")),
        BTreeSet::from([
            "DELETE FROM parent WHERE id = $1".to_string(),
            "INSERT INTO child VALUES ($1, $2)".to_string(),
        ]),
        "{v:#?}"
    );
    assert_eq!(
        v.dropped["fk-check"], 2,
        "row check and cascade: {:?}",
        v.dropped
    );
}

/// record's own probes run with `pg_stat_statements.track = 'none'`: a
/// capture of what the server holds right after a recording finds none of
/// them but that SET (they used to be tracked, tagged, and only dropped by
/// the filter: one entry per probe).
#[test]
fn records_own_probes_are_not_tracked() {
    let db = test_db!();
    db.exec("CREATE TABLE t (a int)");
    reset_stats(&db);
    let dir = common::project_dir();
    let script = dir.path().join("s.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\npsql -X -q -c 'SELECT a FROM t' >/dev/null\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let first = record_now(&db, dir.path(), &["--", "./s.sh"]);
    assert_eq!(first.kept, 1, "{first:#?}");
    let now = record_now(&db, dir.path(), &["-o", "now.toml"]);
    assert_eq!(now.mode, "current");
    // The SET itself is counted (tracking is decided as a statement
    // starts): one tagged entry, dropped; nothing after it.
    assert_eq!(now.dropped["planck"], 1, "{:?}", now.dropped);
    assert_eq!(
        db.query_strings(
            "SELECT query FROM pg_stat_statements WHERE query LIKE '%/* planck */%' \
             AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ),
        // 18 normalizes a SET's value; earlier majors keep the literal.
        [if common::server_major() >= 18 {
            "SET /* planck */ pg_stat_statements.track = $1"
        } else {
            "SET /* planck */ pg_stat_statements.track = 'none'"
        }]
    );
}

/// The defect: a suite that runs `planck migrate` under `planck record`
/// recorded migrate's `SELECT pg_advisory_lock($1)` and unlock as the
/// application's. Now migrate's session is not tracked at all (nor its
/// DDL and catalog reads): only the suite's own statement is there.
#[test]
fn record_around_a_script_that_migrates_sees_none_of_it() {
    let db = test_db!();
    let dir = common::project_dir();
    std::fs::create_dir(dir.path().join("migrations")).unwrap();
    std::fs::write(
        dir.path().join("migrations/0001.sql"),
        "CREATE TABLE t (id int PRIMARY KEY, a text);\nCREATE INDEX t_a ON t (a);\n",
    )
    .unwrap();
    let script = dir.path().join("suite.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nset -e\n\"$PLANCK_BIN\" migrate >/dev/null\n\
         psql -X -q -c 'SELECT a FROM t WHERE id = 1' >/dev/null\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let v = record_now(&db, dir.path(), &["--", "./suite.sh"]);
    assert_eq!(
        queries(&dir.path().join("queries/recorded.toml")),
        BTreeSet::from(["SELECT a FROM t WHERE id = $1".to_string()]),
        "{v:#?}"
    );
    assert_eq!(v.dropped["ddl"], 0, "{:?}", v.dropped);
    assert_eq!(v.dropped["catalog"], 0, "{:?}", v.dropped);
    assert_eq!(v.dropped["planck-bookkeeping"], 0, "{:?}", v.dropped);
}

/// `stats::current_statements`, what `explain --from-stats` reads: the
/// application's statements only, with the same noise rules as record
/// (the server's foreign-key checks, transaction control, settings,
/// planck's own reads all dropped).
#[test]
fn current_statements_are_the_applications_only() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parent (id int PRIMARY KEY);
         CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent);
         INSERT INTO parent VALUES (1);",
    );
    reset_stats(&db);
    db.exec(
        "BEGIN; SET LOCAL work_mem = '8MB'; INSERT INTO child VALUES (1, 1); COMMIT;
         SELECT id FROM child WHERE parent_id = 1;",
    );
    let conn = db.conn();
    let first = common::block_on(async move {
        let client = conn.connect().await.unwrap();
        planck::stats::current_statements(&client).await.unwrap()
    });
    let got: BTreeSet<String> = first.statements.iter().map(|s| s.query.clone()).collect();
    assert_eq!(
        got,
        BTreeSet::from([
            "INSERT INTO child VALUES ($1, $2)".to_string(),
            "SELECT id FROM child WHERE parent_id = $1".to_string(),
        ])
    );
    let s = &first.statements[0];
    assert_eq!(
        (s.role.as_deref(), s.bypass_rls, s.calls),
        (Some("planck"), Some(true), Some(1))
    );
    let dropped = |r: planck::stats::Reason| first.dropped.get(&r).copied().unwrap_or(0);
    use planck::stats::Reason;
    assert_eq!(dropped(Reason::ForeignKeyCheck), 1, "{:?}", first.dropped);
    assert_eq!(dropped(Reason::Transaction), 2, "{:?}", first.dropped);
    assert_eq!(dropped(Reason::Setting), 1, "{:?}", first.dropped);
    assert_eq!(dropped(Reason::StatsReset), 1, "{:?}", first.dropped);
    // A second read sees none of the first one's statements.
    let conn = db.conn();
    let second = common::block_on(async move {
        let client = conn.connect().await.unwrap();
        planck::stats::current_statements(&client).await.unwrap()
    });
    assert_eq!(second.statements, first.statements);
}
