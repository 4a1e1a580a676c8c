//! `planck record -- CMD` through the capture relay (issue 12): the
//! transactions real clients run (psql's simple protocol, pgbench's TPC-B),
//! written as `[[transaction]]` shapes; what the relay carries (unix
//! sockets, cancel requests) and refuses (a client that requires TLS); and
//! that a literal's raw text reaches no output and no file.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{TestDb, assert_exit, stderr, stdout};
use planck::queries::{BindSource, Context, QueryFile, Transaction, TxOutcome};

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\nset -e\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

/// The recorded file's statement ids by space-normalized text.
fn ids(file: &QueryFile) -> BTreeMap<String, String> {
    file.statements
        .iter()
        .map(|s| (planck::queries::normalize_space(&s.query), s.id.clone()))
        .collect()
}

/// pgbench's tables at scale 1 in `db`.
fn pgbench_init(db: &TestDb) {
    let init = std::process::Command::new("pgbench")
        .args(["-i", "-s", "1", "-q", &db.url])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
}

/// A transaction's bindings as (statement, $n, source statement, source $n).
fn binds(t: &Transaction) -> Vec<(String, u32, String, String)> {
    let mut v: Vec<_> = t
        .bind
        .iter()
        .map(|b| match &b.source {
            BindSource::Result { statement, column } => (
                b.statement.clone(),
                b.param,
                statement.clone(),
                column.clone(),
            ),
            other => panic!("unexpected binding {other:?}"),
        })
        .collect();
    v.sort();
    v
}

/// Every file under `dir`, read as text where it is text.
fn all_files(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all_files(&p, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((
                p.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
}

const SECRET: &str = "tok-4f9c2e7a-planck-secret";

// Issue 12, 3 and acceptance: a psql script (simple protocol, explicit
// BEGIN/COMMIT) is written as its exact shapes: the committed one twice,
// with the reused value as a binding, the rolled-back one apart, the
// autocommit statement as a lone statement; a planted secret literal
// appears in no output and no file, even with --verbose.
#[test]
fn a_psql_script_is_recorded_as_its_transactions() {
    let db = TestDb::new("relay_psql");
    db.exec(
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, token text);
         INSERT INTO acct VALUES (1, 0, NULL), (2, 0, NULL);",
    );
    let dir = common::project_dir();
    std::fs::write(
        dir.path().join("suite.sql"),
        format!(
            "BEGIN;
UPDATE acct SET bal = bal + 5 WHERE id = 1;
SELECT bal FROM acct WHERE id = 1;
COMMIT;
BEGIN;
UPDATE acct SET bal = bal + 7 WHERE id = 2;
SELECT bal FROM acct WHERE id = 2;
COMMIT;
BEGIN;
UPDATE acct SET token = '{SECRET}' WHERE id = 2;
ROLLBACK;
SELECT count(*) FROM acct;
"
        ),
    )
    .unwrap();
    let script = write_script(
        dir.path(),
        "suite.sh",
        "psql -X -q -v ON_ERROR_STOP=1 -f suite.sql >/dev/null\n",
    );
    let out = db.planck(
        &["--verbose", "--format", "json", "record", "--", &script],
        dir.path(),
    );
    assert_exit(&out, 0);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let id = ids(&f);
    let upd = &id["UPDATE acct SET bal = bal + $1 WHERE id = $2"];
    let sel = &id["SELECT bal FROM acct WHERE id = $1"];
    let tok = &id["UPDATE acct SET token = $1 WHERE id = $2"];
    assert!(id.contains_key("SELECT count(*) FROM acct"));
    let mut txs: Vec<_> = f.transactions.iter().collect();
    txs.sort_by_key(|t| t.outcome == TxOutcome::Rollback);
    let shapes: Vec<_> = txs
        .iter()
        .map(|t| {
            (
                t.statements.clone(),
                t.repeat,
                t.calls,
                t.role.clone(),
                t.outcome,
                t.recorded,
                t.isolation,
            )
        })
        .collect();
    assert_eq!(
        shapes,
        vec![
            (
                vec![upd.clone(), sel.clone()],
                1,
                Some(2),
                Some("planck".to_string()),
                TxOutcome::Commit,
                true,
                None
            ),
            (
                vec![tok.clone()],
                1,
                Some(1),
                Some("planck".to_string()),
                TxOutcome::Rollback,
                true,
                None
            ),
        ]
    );
    // The id the SELECT reads is the one the UPDATE wrote: $2 of it.
    assert_eq!(
        binds(txs[0]),
        vec![(sel.clone(), 1, upd.clone(), "$2".to_string())]
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let relay = &v["relay"];
    assert_eq!(relay["transactions"], 3, "{relay}");
    assert_eq!(relay["shapes_written"], 2, "{relay}");
    assert_eq!(relay["autocommit_statements"], 1, "{relay}");
    assert_eq!(relay["connections"], 1, "{relay}");
    assert_eq!(relay["incomplete_connections"], 0, "{relay}");

    // The secret: nowhere planck wrote.
    let mut files = Vec::new();
    all_files(dir.path(), &mut files);
    files.retain(|(p, _)| !p.ends_with("suite.sql"));
    files.push(("stdout".into(), stdout(&out)));
    files.push(("stderr".into(), stderr(&out)));
    for (p, text) in &files {
        assert!(!text.contains(SECRET), "the raw literal is in {p}");
    }
    assert!(files.iter().any(|(p, _)| p.ends_with("recorded.toml")));

    // Re-recording replaces the recorded shapes, keeps a hand-written one.
    let path = dir.path().join("queries/recorded.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[[transaction]]\nid = \"by_hand\"\nstatements = [\"{sel}\"]\n"
    ));
    std::fs::write(&path, text).unwrap();
    let out = db.planck(&["record", "--", &script], dir.path());
    assert_exit(&out, 0);
    let f = QueryFile::load(&path).unwrap();
    let mut got: Vec<(String, bool)> = f
        .transactions
        .iter()
        .map(|t| (t.id.clone(), t.recorded))
        .collect();
    got.sort();
    let mut want: Vec<(String, bool)> = txs.iter().map(|t| (t.id.clone(), true)).collect();
    want.push(("by_hand".into(), false));
    want.sort();
    assert_eq!(got, want);
}

// Issue 12, acceptance: pgbench's TPC-B (`pgbench -c 4 -T 3`, simple
// protocol) is one shape of five statements between BEGIN and END, its
// four \set variables (aid, bid, tid, delta) bound across them.
#[test]
fn pgbench_tpcb_is_one_shape_of_five_with_its_variables() {
    let db = TestDb::new("relay_pgbench");
    pgbench_init(&db);
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "bench.sh",
        "pgbench -n -c 4 -T 3 >/dev/null 2>&1\n",
    );
    let out = db.planck(&["record", "--", &script], dir.path());
    assert_exit(&out, 0);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let id = ids(&f);
    let upd_acc = &id["UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"];
    let sel_acc = &id["SELECT abalance FROM pgbench_accounts WHERE aid = $1"];
    let upd_tel = &id["UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"];
    let upd_br = &id["UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2"];
    let ins = &id["INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"];
    assert_eq!(f.transactions.len(), 1, "{:#?}", f.transactions);
    let t = &f.transactions[0];
    assert_eq!(
        t.statements,
        vec![
            upd_acc.clone(),
            sel_acc.clone(),
            upd_tel.clone(),
            upd_br.clone(),
            ins.clone()
        ]
    );
    assert_eq!((t.repeat, t.outcome), (1, TxOutcome::Commit));
    let calls = t.calls.unwrap();
    assert!(calls > 20, "{calls}");
    // pg_stat_statements counted the same transactions (give or take the
    // ones cut by the end of the run).
    let upd_calls = f
        .statements
        .iter()
        .find(|s| &s.id == upd_acc)
        .unwrap()
        .calls
        .unwrap();
    assert!(
        upd_calls >= calls && upd_calls <= calls + 4,
        "{upd_calls} vs {calls}"
    );
    let s = |x: &String| x.clone();
    let mut want = vec![
        // aid
        (s(sel_acc), 1, s(upd_acc), "$2".to_string()),
        (s(ins), 3, s(upd_acc), "$2".to_string()),
        // delta
        (s(upd_tel), 1, s(upd_acc), "$1".to_string()),
        (s(upd_br), 1, s(upd_acc), "$1".to_string()),
        (s(ins), 4, s(upd_acc), "$1".to_string()),
        // tid
        (s(ins), 1, s(upd_tel), "$2".to_string()),
        // bid
        (s(ins), 2, s(upd_br), "$2".to_string()),
    ];
    want.sort();
    assert_eq!(binds(t), want);
}

// Issue 12, acceptance: a client on a unix socket (the relay offers one
// when planck itself reaches the server through a socket).
#[test]
fn a_unix_socket_client_is_relayed() {
    let db = TestDb::new("relay_unix");
    db.exec("CREATE TABLE t (id int PRIMARY KEY)");
    let c = common::cluster();
    let socket_dir = c.cluster.dir().join("run");
    assert!(socket_dir.join(format!(".s.PGSQL.{}", c.port)).exists());
    let url = format!(
        "postgres://planck@/{}?host={}&port={}",
        db.name,
        socket_dir.display(),
        c.port
    );
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "unix.sh",
        "case \"$PGHOST\" in /*) ;; *) echo \"PGHOST is not a socket directory: $PGHOST\" >&2; exit 9;; esac\n\
         psql -X -q -c 'BEGIN' -c 'INSERT INTO t VALUES (1)' -c 'COMMIT' >/dev/null\n",
    );
    let out = common::planck_cmd(dir.path())
        .args(["--database-url", &url, "record", "--", &script])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let id = ids(&f);
    assert_eq!(f.transactions.len(), 1);
    assert_eq!(
        f.transactions[0].statements,
        vec![id["INSERT INTO t VALUES ($1)"].clone()]
    );
}

// Issue 12, acceptance: Ctrl-C on psql's `SELECT pg_sleep(30)` reaches the
// server through the relay (a CancelRequest of its own) and returns 57014
// within a second.
#[test]
fn a_cancel_request_reaches_the_server() {
    let db = TestDb::new("relay_cancel");
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "cancel.sh",
        "set +e\n\
         psql -X -v VERBOSITY=verbose -c 'SELECT pg_sleep(30)' 2>err.txt &\n\
         pid=$!\n\
         sleep 1\n\
         date +%s.%N > sent.txt\n\
         kill -INT $pid\n\
         wait $pid\n\
         date +%s.%N > done.txt\n\
         exit 0\n",
    );
    let started = Instant::now();
    let out = db.planck(&["record", "--", &script], dir.path());
    assert!(started.elapsed() < Duration::from_secs(20));
    let err = std::fs::read_to_string(dir.path().join("err.txt")).unwrap();
    assert!(err.contains("57014"), "{err}\n{}", stderr(&out));
    let t = |f: &str| -> f64 {
        std::fs::read_to_string(dir.path().join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let took = t("done.txt") - t("sent.txt");
    assert!(took < 1.0, "the cancel took {took} s");
}

// Issue 12, acceptance: a client that requires TLS is told no by the relay
// and planck's warning names sslmode (and the way out, --no-relay).
#[test]
fn a_client_requiring_tls_gets_an_error_naming_sslmode() {
    let db = TestDb::new("relay_require_tls");
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "tls.sh",
        "psql -X \"host=$PGHOST port=$PGPORT dbname=$PGDATABASE sslmode=require\" -c 'SELECT 1'\n",
    );
    let out = db.planck(&["record", "--", &script], dir.path());
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("asked the capture relay for TLS"), "{err}");
    assert!(err.contains("sslmode=require"), "{err}");
    assert!(err.contains("--no-relay"), "{err}");
    // Without the relay the same client reaches the server directly (the
    // test server has no TLS, so it fails there, for its own reason).
    let out = db.planck(&["record", "--no-relay", "--", &script], dir.path());
    assert!(!stderr(&out).contains("capture relay"), "{}", stderr(&out));
}

// Issue 13, 6: a migration's transaction (a schema change, a backfill, the
// tool's bookkeeping write) is no workload: the backfill, run only there,
// is left out of the file and listed in the summary; the application's
// UPDATE of the same shape on another table is kept, and so is a SELECT
// the migration happened to run too. The migration's transaction is not
// written as a shape.
#[test]
fn issue13_statements_run_only_by_migrations_are_left_out() {
    let db = TestDb::new("relay_migration_only");
    db.exec(
        "CREATE TABLE schema_migrations (version text PRIMARY KEY);
         CREATE TABLE checks (id int PRIMARY KEY, kind text);
         CREATE TABLE pings (id int PRIMARY KEY, kind text);
         INSERT INTO checks VALUES (1, NULL), (2, 'a');
         INSERT INTO pings VALUES (1, NULL), (2, 'b');",
    );
    let dir = common::project_dir();
    std::fs::write(
        dir.path().join("suite.sql"),
        "BEGIN;
ALTER TABLE checks ADD COLUMN IF NOT EXISTS tz text;
UPDATE checks SET tz = 'UTC' WHERE tz IS NULL;
SELECT id FROM checks WHERE id = 1;
INSERT INTO schema_migrations (version) VALUES ('0002') ON CONFLICT DO NOTHING;
COMMIT;
SELECT id FROM checks WHERE id = 2;
BEGIN;
UPDATE pings SET kind = 'ign' WHERE kind IS NULL;
COMMIT;
",
    )
    .unwrap();
    let script = write_script(
        dir.path(),
        "suite.sh",
        "psql -X -q -v ON_ERROR_STOP=1 -f suite.sql >/dev/null\n",
    );
    let out = db.planck(&["--format", "json", "record", "--", &script], dir.path());
    assert_exit(&out, 0);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let id = ids(&f);
    assert!(
        !id.contains_key("UPDATE checks SET tz = $1 WHERE tz IS NULL"),
        "{id:#?}"
    );
    let work = &id["UPDATE pings SET kind = $1 WHERE kind IS NULL"];
    assert!(
        id.contains_key("SELECT id FROM checks WHERE id = $1"),
        "{id:#?}"
    );
    // Only the application's transaction is written.
    let shapes: Vec<&Vec<String>> = f.transactions.iter().map(|t| &t.statements).collect();
    assert_eq!(shapes, vec![&vec![work.clone()]], "{:#?}", f.transactions);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["migration_only"],
        serde_json::json!(["UPDATE checks SET tz = $1 WHERE tz IS NULL"]),
        "{v:#}"
    );
    assert_eq!(v["dropped"]["migration"], 1, "{v:#}");
    assert_eq!(v["relay"]["migration_transactions"], 1, "{v:#}");
    // The table summary says so.
    let out = db.planck(&["record", "--", &script], dir.path());
    assert_exit(&out, 0);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains("1 statement(s) run only by migrations left out"),
        "{text}"
    );
}

/// `planck --format json record -- psql ... -f FILE` in `dir`, psql reaching
/// the server through the relay's PG* variables; it must exit 0.
fn record_psql_file(db: &TestDb, dir: &Path, file: &str) -> std::process::Output {
    let out = db.planck(
        &[
            "--format",
            "json",
            "record",
            "--",
            "psql",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            file,
        ],
        dir,
    );
    assert_exit(&out, 0);
    out
}

/// The relay's matching counts from a `--format json` summary:
/// (by queryid, by text, unmatched, relay only).
fn matching(out: &std::process::Output) -> (u64, u64, u64, u64) {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not a summary ({e}): {}\n{}", stdout(out), stderr(out)));
    let r = &v["relay"];
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("no {k} in {r}"));
    (
        n("matched_by_queryid"),
        n("matched_by_text"),
        n("unmatched"),
        n("relay_only"),
    )
}

// Issue 12, 2 and its test: every statement the relay saw is matched to
// its pg_stat_statements entry by the server's own queryid, never by a
// guess at the text: texts whose normalized form does not parse (`interval
// $1`, `extract($1 from ...)`), IN lists of two lengths (two entries), one
// table named with and without its schema (one entry), pgbench's TPC-B in
// each of its three protocols, and a real application's own test run
// (graphile-starter's, vendored). The bundled example's run is checked the
// same way in tests/record.rs.
#[test]
fn every_relayed_statement_is_matched_by_its_queryid() {
    let db = TestDb::new("relay_queryid");
    db.exec(
        "CREATE TABLE ev (id int PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), kind text);
         INSERT INTO ev (id, kind) SELECT g, 'k' || g FROM generate_series(1, 30) g;",
    );
    let dir = common::project_dir();
    std::fs::write(
        dir.path().join("suite.sql"),
        "SELECT count(*) FROM ev WHERE at > now() - interval '1 day';
SELECT extract(epoch from at) FROM ev WHERE id = 1;
SELECT id FROM ev WHERE id IN (1, 2, 3);
SELECT id FROM ev WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20);
SELECT kind FROM public.ev WHERE id = 4;
SELECT kind FROM ev WHERE id = 5;
BEGIN;
UPDATE ev SET kind = 'x' WHERE id = -1;
INSERT INTO ev (id, kind) VALUES (100, NULL) ON CONFLICT (id) DO NOTHING;
COMMIT;
SELECT date '2026-01-01' + 3, '7'::int * 2, true AND NOT false;
WITH r AS (SELECT id FROM ev WHERE kind IS NULL) SELECT count(*) FROM r;
",
    )
    .unwrap();
    let out = record_psql_file(&db, dir.path(), "suite.sql");
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    // Ten texts; `ev` and `public.ev` are one entry, so nine statements;
    // from 18 on the two IN lists are one entry too (`IN ($1 /*, ... */)`).
    let squashed = common::server_major() >= 18;
    assert_eq!(
        f.statements.len(),
        if squashed { 8 } else { 9 },
        "{:#?}",
        f.statements
    );
    assert_eq!(
        f.statements
            .iter()
            .filter(|s| s.query.contains("IN ($1 /*, ... */)"))
            .count(),
        usize::from(squashed),
        "{:#?}",
        f.statements
    );
    assert_eq!(matching(&out), (10, 0, 0, 0));

    // pgbench: simple protocol (literals), extended ($n, unnamed) and
    // prepared (named statements).
    pgbench_init(&db);
    for mode in ["simple", "extended", "prepared"] {
        let dir = common::project_dir();
        let script = write_script(
            dir.path(),
            "bench.sh",
            &format!("pgbench -n -c 2 -T 1 -M {mode} >/dev/null 2>&1\n"),
        );
        let out = db.planck(&["--format", "json", "record", "--", &script], dir.path());
        assert_exit(&out, 0);
        let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
        // TPC-B's five and pgbench's own count of the branches.
        assert_eq!(f.statements.len(), 6, "{mode}: {:#?}", f.statements);
        assert_eq!(matching(&out), (6, 0, 0, 0), "{mode}");
    }

    // graphile-starter's test run, through the relay (psql reads the
    // relay's PG* variables).
    let gs = TestDb::new("relay_queryid_gs");
    let fx = common::fixture("graphile-starter");
    common::load_fixture(&gs, &fx);
    let dir = common::project_dir();
    let testrun = fx.join("testrun.sql").display().to_string();
    let out = record_psql_file(&gs, dir.path(), &testrun);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let (by_queryid, by_text, unmatched, relay_only) = matching(&out);
    assert_eq!((by_text, unmatched, relay_only), (0, 0, 0));
    // The statements psql sent (its functions' and triggers' own are in
    // pg_stat_statements only): each one at least one relayed text. A
    // statement seen both inside functions and at the top is left out:
    // pg_stat_statements counts a function's statement run while the
    // server plans a query (a policy's SQL function) as top-level.
    let sent = f
        .statements
        .iter()
        .filter(|s| s.contexts.is_empty() || s.contexts == [Context::Top])
        .count();
    assert!(
        by_queryid as usize >= sent && sent >= 20,
        "{by_queryid} texts for {sent} statements sent"
    );
}

// Issue 12, 2, on the Join Order Benchmark's 113 queries as psql sends them
// through the relay (with their literals, `IN` lists of many lengths,
// `BETWEEN` on years): every text matched by queryid. Not vendored (no
// licence): skips outside CI when ../shared/fixtures/job is not there.
#[test]
fn job_queries_through_the_relay_are_matched_by_their_queryid() {
    let Some(job) = common::shared_fixture("job") else {
        return;
    };
    let db = TestDb::new("relay_queryid_job");
    common::load_fixture(&db, &job);
    let dir = common::project_dir();
    std::fs::write(dir.path().join("job.sql"), common::job_script(&job)).unwrap();
    let out = record_psql_file(&db, dir.path(), "job.sql");
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    // pg_stat_statements keeps 98 entries of the 113 (variants that differ
    // only in literals share one; from 18 on, also those that differ only
    // in an IN list's length: 94); the relay's texts map onto them all.
    let entries = job_entries();
    assert_eq!(f.statements.len(), entries);
    let (by_queryid, by_text, unmatched, relay_only) = matching(&out);
    assert_eq!((by_text, unmatched, relay_only), (0, 0, 0));
    assert!(by_queryid as usize >= entries, "{by_queryid}");
}

/// How many pg_stat_statements entries the Join Order Benchmark's 113
/// queries make on the test server (see the test above).
fn job_entries() -> usize {
    if common::server_major() >= 18 { 94 } else { 98 }
}
