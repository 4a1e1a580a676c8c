//! `planck explain` after the foundation v2 step (issue 8): same-named tables
//! in two schemas stay apart, planck never plans its own statements from
//! pg_stat_statements, skipped statements can fail the gate, findings point
//! at their queries-file line and plan node. JSON is read through typed
//! mirror structs that refuse unknown fields, so the wire shape is pinned
//! here independently of the crate's own types.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::explain_json::{Location, Report};
use common::{TestDb, assert_exit, stderr, stdout};

/// Runs `planck --format json explain ARGS`: the exit code, the report, stderr.
fn json_run(db: &TestDb, dir: &Path, args: &[&str]) -> (i32, Report, String) {
    let mut a = vec!["--format", "json", "explain"];
    a.extend_from_slice(args);
    let out = db.planck(&a, dir);
    let code = out.status.code().unwrap_or(-1);
    let r: Report = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "not the report ({e}); exit {code}\nstdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        )
    });
    assert_eq!(r.format_version, 1);
    (code, r, stderr(&out))
}

/// A queries file of these statements (role `planck`, the superuser the
/// test cluster connects as); returns its path and each entry's line.
fn queries(dir: &Path, stmts: &[&str]) -> (String, Vec<usize>) {
    let mut text = String::from("format_version = 1\n");
    let mut lines = Vec::new();
    for q in stmts {
        text.push_str("\n[[statement]]\n");
        lines.push(text.lines().count());
        text.push_str(&format!(
            "role = \"planck\"\nbypass_rls = true\nquery = '''\n{q}\n'''\n"
        ));
    }
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    (path.display().to_string(), lines)
}

/// Issue 8 section 1: explain keyed tables and indexes by bare name and read
/// only the search path, so `a.events` was reported as `events` (or not at
/// all) and same-named indexes of two schemas overwrote each other.
#[test]
fn issue8_same_named_tables_and_indexes_in_two_schemas_each_finding_names_its_own() {
    let db = test_db!();
    db.exec(
        "CREATE SCHEMA a; CREATE SCHEMA b;
         CREATE TABLE events (id bigint PRIMARY KEY, kind text, note text);
         CREATE TABLE a.events (id bigint PRIMARY KEY, kind text, note text);
         CREATE TABLE b.events (id bigint PRIMARY KEY, kind text, note text);
         INSERT INTO events SELECT g, 'k' || (g % 100), 'n' || g FROM generate_series(1, 20000) g;
         INSERT INTO a.events SELECT g, 'k' || (g % 100), 'n' || g FROM generate_series(1, 20000) g;
         INSERT INTO b.events SELECT g, 'k' || (g % 100), 'n' || g FROM generate_series(1, 200) g;
         CREATE INDEX events_kind ON events (kind);
         CREATE INDEX events_kind ON a.events (kind);
         CREATE INDEX events_kind ON b.events (kind);
         ANALYZE",
    );
    let dir = common::project_dir();
    let (q, lines) = queries(
        dir.path(),
        &[
            "SELECT id FROM a.events WHERE note = $1",
            "SELECT id FROM b.events WHERE note = $1",
            "SELECT id FROM events WHERE note = $1",
            "SELECT id FROM a.events WHERE kind = $1",
        ],
    );
    let (code, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    assert_eq!(code, 1, "{r:#?}\n{err}");

    // Seq scans: the two large tables, each by its own name; b.events is small.
    let seq: BTreeSet<(&str, &str)> = r
        .findings("seq-scan")
        .iter()
        .map(|f| {
            let s = r
                .statements
                .iter()
                .find(|s| Some(&s.id) == f.statement_id.as_ref())
                .unwrap();
            (s.query.as_str(), f.relation.as_deref().unwrap())
        })
        .collect();
    assert_eq!(
        seq,
        BTreeSet::from([
            ("SELECT id FROM a.events WHERE note = $1", "a.events"),
            ("SELECT id FROM events WHERE note = $1", "events"),
        ]),
        "{r:#?}"
    );

    // a.events_kind is used; public's and b's same-named indexes are not.
    let unused: BTreeSet<(&str, &str)> = r
        .findings("unused-index")
        .iter()
        .filter(|f| {
            f.index
                .as_deref()
                .is_some_and(|i| i.ends_with("events_kind"))
        })
        .map(|f| (f.relation.as_deref().unwrap(), f.index.as_deref().unwrap()))
        .collect();
    assert_eq!(
        unused,
        BTreeSet::from([("b.events", "b.events_kind"), ("events", "events_kind")]),
        "{r:#?}"
    );

    // The finding points at its statement's entry (the file given by its
    // absolute path, written relative to the project: no git work tree
    // holds it) and at the scan node.
    let on_a = r
        .findings("seq-scan")
        .into_iter()
        .find(|f| f.relation.as_deref() == Some("a.events"))
        .unwrap();
    assert_eq!(
        on_a.location,
        Some(Location {
            kind: "queries".into(),
            path: "queries.toml".into(),
            line: lines[0],
        })
    );
    let node = on_a.node.as_ref().expect("a plan node");
    let s = r.statement("FROM a.events WHERE note");
    let mut n = &s.plans[node.plan].plan[0]["Plan"];
    for i in &node.path {
        n = &n["Plans"][*i];
    }
    assert_eq!(n["Node Type"], "Seq Scan", "{n:#}");
    assert_eq!(n["Schema"], "a", "{n:#}");
}

/// Issue 8 section 4: `planck explain --from-stats` run twice planned its
/// own PREPAREs, EXPLAINs and value probes from the first run (96 of them on
/// a small fixture), the server's foreign-key checks and
/// pg_stat_statements_reset.
#[test]
fn issue8_from_stats_twice_plans_none_of_planck_own_statements() {
    let db = test_db!();
    db.exec(
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
         CREATE TABLE users (id bigint PRIMARY KEY, name text);
         CREATE TABLE devices (id bigint PRIMARY KEY, user_id bigint REFERENCES users, name text);
         INSERT INTO users SELECT g, 'u' || g FROM generate_series(1, 100) g;
         INSERT INTO devices SELECT g, g % 100 + 1, 'd' FROM generate_series(1, 20000) g;
         ANALYZE",
    );
    db.exec(
        "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database \
         WHERE datname = current_database()), 0)",
    );
    // The application: a query, and an insert whose FK check the server runs
    // (recorded too: the test cluster tracks nested statements).
    db.exec("SELECT id, name FROM devices WHERE user_id = 42");
    db.exec("INSERT INTO devices VALUES (20001, 5, 'x')");
    db.exec("UPDATE devices SET name = 'y' WHERE user_id = 7");

    let dir = common::project_dir();
    let own = |r: &Report| -> Vec<String> {
        r.statements
            .iter()
            .map(|s| s.query.clone())
            .filter(|q| {
                let l = q.to_lowercase();
                l.contains("explain (")
                    || l.contains("planck_generic")
                    || l.contains("set_config")
                    || l.contains("pg_stat_statements")
                    || l.contains("for key share")
                    || l.contains("::text as v from")
                    || l.contains("/* planck */")
            })
            .collect()
    };
    let (_, first, err1) = json_run(&db, dir.path(), &["--from-stats"]);
    assert!(own(&first).is_empty(), "{:#?}", own(&first));
    first.statement("FROM devices WHERE user_id = $1");
    assert!(
        err1.contains("server FK checks"),
        "the FK check is left out with its own reason: {err1}"
    );
    let (_, second, _) = json_run(&db, dir.path(), &["--from-stats"]);
    assert!(own(&second).is_empty(), "{:#?}", own(&second));
    let ids = |r: &Report| {
        r.statements
            .iter()
            .map(|s| s.id.clone())
            .collect::<BTreeSet<_>>()
    };
    assert!(
        ids(&second).is_subset(&ids(&first)),
        "the second run found statements the first run sent: {:#?}",
        ids(&second).difference(&ids(&first)).collect::<Vec<_>>()
    );
}

/// Issue 8 section 5: when every statement timed out, explain exited 0 and
/// the gate passed without judging anything.
#[test]
fn issue8_fail_on_skipped_exits_1_when_every_statement_timed_out() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE t (id bigint PRIMARY KEY);
         CREATE FUNCTION slow_id(bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE
             AS $$ BEGIN PERFORM pg_sleep(3); RETURN $1; END $$",
    );
    let dir = common::project_dir();
    let (q, _) = queries(
        dir.path(),
        &[
            "SELECT id FROM t WHERE id = slow_id($1)",
            "SELECT id FROM t WHERE id = slow_id($1) + 1",
        ],
    );
    let base = ["--queries", q.as_str(), "--statement-timeout-ms", "200"];
    let (code, r, _) = json_run(&db, dir.path(), &base);
    assert_eq!(code, 0, "skipped statements alone do not fail the gate");
    assert_eq!((r.summary.explained, r.summary.skipped), (0, 2), "{r:#?}");
    assert!(
        r.statements
            .iter()
            .all(|s| s.reason.as_deref().is_some_and(|x| x.contains("timed out"))),
        "{r:#?}"
    );
    let mut args = base.to_vec();
    args.push("--fail-on-skipped");
    let (code, _, _) = json_run(&db, dir.path(), &args);
    assert_eq!(code, 1);
    // The table's summary counts them, within 80 columns.
    let mut a = vec!["explain"];
    a.extend_from_slice(&args);
    let out = db.planck(&a, dir.path());
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("0 statements explained, 2 skipped")),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

/// Issue 8 section 4: where a role may not `SET pg_stat_statements.track`,
/// planck falls back to tagging its statements `/* planck */`, says so once
/// (not once per pooled connection), and still leaves them out next time.
#[test]
fn issue8_a_role_that_may_not_untrack_is_warned_once_and_tagged_statements_are_left_out() {
    let db = test_db!();
    let role = format!("{}_r", db.name);
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role};
         CREATE ROLE {role} LOGIN PASSWORD 'pw';
         CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
         CREATE TABLE t (id bigint PRIMARY KEY, v text);
         INSERT INTO t SELECT g, 'v' || (g % 10) FROM generate_series(1, 1000) g;
         GRANT SELECT ON t TO {role};
         ANALYZE"
    ));
    let url = db.url.replacen("planck@", &format!("{role}:pw@"), 1);
    assert_ne!(url, db.url);
    let dir = common::project_dir();
    let run = || {
        let out = common::planck_cmd(dir.path())
            .args(["--database-url", &url, "--format", "json", "explain"])
            .args(["--from-stats", "--as-admin", "--jobs", "3"])
            .output()
            .unwrap();
        let r: Report = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{e}\n{}\n{}", stdout(&out), stderr(&out)));
        (r, stderr(&out))
    };
    // The application, as the role: one statement planck has to plan.
    {
        let url = url.clone();
        common::block_on(async move {
            let c = planck::db::ConnInfo::parse(&url, false)
                .unwrap()
                .connect()
                .await
                .unwrap();
            c.query("SELECT id FROM t WHERE v = $1", &[&"v3"])
                .await
                .unwrap();
        });
    }
    let (first, err) = run();
    assert_eq!(
        err.matches("may not SET pg_stat_statements.track").count(),
        1,
        "{err}"
    );
    first.statement("SELECT id FROM t WHERE v = $1");
    let tagged = db.query_strings(&format!(
        "SELECT count(*) FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
          WHERE r.rolname = '{role}' AND s.query LIKE 'EXPLAIN /* planck */%'"
    ));
    assert_ne!(
        tagged,
        vec!["0".to_string()],
        "planck's EXPLAINs carry the tag"
    );
    let (second, _) = run();
    let leaked: Vec<&str> = second
        .statements
        .iter()
        .map(|s| s.query.as_str())
        .filter(|q| q.contains("/* planck */") || q.contains("EXPLAIN ("))
        .collect();
    assert!(leaked.is_empty(), "{leaked:#?}");
    second.statement("SELECT id FROM t WHERE v = $1");
    db.exec(&format!("DROP OWNED BY {role}"));
    db.exec(&format!("DROP ROLE {role}"));
}

/// Issue 8's shared contract: `session::begin` applies a `TenantContext`
/// (a role by `SET LOCAL ROLE` or as a `role` setting, several settings, a
/// JSON claim set) with a statement_timeout, all undone by ROLLBACK.
#[test]
fn issue8_session_begin_applies_role_settings_and_json_claims_for_one_transaction() {
    use planck::session::{self, SettingValue, TenantContext};
    let db = test_db!();
    let role = format!("{}_r", db.name);
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role}; GRANT {role} TO CURRENT_USER"
    ));
    let conn = db.conn();
    let r = role.clone();
    let got = common::block_on(async move {
        let c = conn.connect().await.unwrap();
        let show = "SELECT current_user::text, current_setting('statement_timeout'),
                           current_setting('app.account_id', true),
                           nullif(current_setting('request.jwt.claims', true), '')::json->>'sub'";
        let mut out = Vec::new();
        for ctx in [
            TenantContext {
                role: Some(r.clone()),
                settings: vec![
                    ("app.account_id".into(), SettingValue::Text("42".into())),
                    (
                        "request.jwt.claims".into(),
                        SettingValue::Json(serde_json::json!({"sub": "u-7", "role": "x"})),
                    ),
                ],
            },
            TenantContext {
                role: None,
                settings: vec![("role".into(), SettingValue::Text(r.clone()))],
            },
        ] {
            session::begin(&c, &ctx, 1234).await.unwrap();
            let row = c.query_one(show, &[]).await.unwrap();
            out.push((
                row.get::<_, String>(0),
                row.get::<_, String>(1),
                row.get::<_, Option<String>>(2),
                row.get::<_, Option<String>>(3),
            ));
            c.batch_execute("ROLLBACK").await.unwrap();
        }
        let after = c.query_one(show, &[]).await.unwrap();
        out.push((
            after.get(0),
            after.get(1),
            after.get::<_, Option<String>>(2).filter(|s| !s.is_empty()),
            after.get(3),
        ));
        out
    });
    assert_eq!(
        got[0],
        (
            role.clone(),
            "1234ms".into(),
            Some("42".into()),
            Some("u-7".into())
        )
    );
    assert_eq!(got[1].0, role, "a role given as a setting");
    assert_eq!(got[2].0, "planck", "ROLLBACK undid it all");
    assert_eq!(got[2].2, None);
    db.exec(&format!("DROP ROLE {role}"));
}

/// `missing-fk-index` (issue 34's check added as one file) against a real
/// server: its probe reads the foreign keys, a recorded DELETE of the
/// referenced table makes the finding an error naming the statement, and an
/// index leading with the key's column clears it.
#[test]
fn unindexed_foreign_key_found_until_an_index_leads_with_it() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE accounts (id bigint PRIMARY KEY, name text);
         CREATE TABLE items (id bigint PRIMARY KEY,
                             account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                             title text);
         INSERT INTO accounts SELECT g, 'a' || g FROM generate_series(1, 200) g;
         INSERT INTO items SELECT g, 1 + g % 200, 't' || g FROM generate_series(1, 20000) g;
         ANALYZE",
    );
    let dir = common::project_dir();
    let (q, _) = queries(
        dir.path(),
        &[
            "DELETE FROM accounts WHERE id = $1",
            "SELECT title FROM items WHERE id = $1",
        ],
    );
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    let found = r.findings("missing-fk-index");
    assert_eq!(found.len(), 1, "{r:#?}\n{err}");
    let f = found[0];
    let delete = r.statement("DELETE FROM accounts");
    assert_eq!(
        (f.severity.as_str(), f.relation.as_deref()),
        ("error", Some("items"))
    );
    assert!(
        f.message.contains("items_account_id_fkey") && f.message.contains(&delete.id),
        "{}",
        f.message
    );
    assert!(f.help.contains("CREATE INDEX"), "{}", f.help);

    db.exec("CREATE INDEX items_by_account ON items (account_id); ANALYZE");
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    assert!(
        r.statement("DELETE FROM accounts").planned(),
        "{r:#?}\n{err}"
    );
    assert!(r.findings("missing-fk-index").is_empty(), "{r:#?}");
}
