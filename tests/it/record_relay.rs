//! `planck record -- CMD` through the capture relay (issue 12): the
//! transactions real clients run (psql's simple protocol, pgbench's TPC-B),
//! written as `[[transaction]]` shapes; what the relay carries (unix
//! sockets, cancel requests) and refuses (a client that requires TLS); and
//! that a literal's raw text reaches no output and no file. Issue 31: the
//! protocol versions beyond 3.0 (3.2, libpq's grease), spoken as raw bytes
//! to a relay started in the test.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{TestDb, assert_exit, block_on, stderr, stdout};
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
    let db = test_db!();
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
    let db = test_db!();
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
    let db = test_db!();
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

// Issue 12, acceptance: Ctrl-C on psql's `SELECT pg_sleep(600)` reaches the
// server through the relay (a CancelRequest of its own) and returns 57014,
// "canceling statement due to user request" (a statement timeout has the
// same code and another message). Ctrl-C comes once the sleep runs on the
// server (seen in pg_stat_activity, not guessed with a fixed wait); the
// statement would otherwise last ten minutes.
#[test]
fn a_cancel_request_reaches_the_server() {
    let db = test_db!();
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "cancel.sh",
        &format!(
            "set +e\n\
             psql -X -v VERBOSITY=verbose -c 'SELECT pg_sleep(600)' 2>err.txt &\n\
             pid=$!\n\
             tries=0\n\
             until [ \"$(psql -XtA -d '{url}' -c \"SELECT count(*) FROM pg_stat_activity WHERE datname = '{name}' AND query = 'SELECT pg_sleep(600)' AND state = 'active'\")\" = 1 ]; do\n\
               tries=$((tries + 1)); [ $tries -lt 3000 ] || {{ echo 'the sleep never ran' >&2; kill $pid; exit 1; }}\n\
               sleep 0.02\n\
             done\n\
             kill -INT $pid\n\
             wait $pid\n\
             exit 0\n",
            url = db.url,
            name = db.name
        ),
    );
    // (Its exit is not asserted: a run of one cancelled statement records
    // nothing, which record reports as such.)
    let out = db.planck(&["record", "--", &script], dir.path());
    let err = std::fs::read_to_string(dir.path().join("err.txt")).unwrap();
    assert!(err.contains("57014"), "{err}\n{}", stderr(&out));
    assert!(
        err.contains("canceling statement due to user request"),
        "{err}\n{}",
        stderr(&out)
    );
}

// Issue 12, acceptance: a client that requires TLS is told no by the relay
// and planck's warning names sslmode (and the way out, --no-relay).
#[test]
fn a_client_requiring_tls_gets_an_error_naming_sslmode() {
    let db = test_db!();
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
    let db = test_db!();
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
// same way in tests/it/record.rs.
#[test]
fn every_relayed_statement_is_matched_by_its_queryid() {
    let db = test_db!("main");
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
    let gs = test_db!("gs");
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
    let db = test_db!();
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

/// A PostgreSQL client as raw bytes over TCP, for the protocol versions the
/// machine's own clients do not speak (psql/libpq 15 and tokio-postgres send
/// 3.0 only): issue 31's 3.2 and libpq 19's grease, 3.9999.
mod raw {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    pub const CANCEL_REQUEST: u32 = 80_877_102;

    /// A startup packet: length, `code`, then the body.
    pub fn packet(code: u32, body: &[u8]) -> Vec<u8> {
        let mut p = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        p.extend(code.to_be_bytes());
        p.extend(body);
        p
    }

    /// A StartupMessage of version `major.minor` with `params`.
    pub fn startup(major: u16, minor: u16, params: &[(&str, &str)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (k, v) in params {
            for s in [k, v] {
                body.extend(s.as_bytes());
                body.push(0);
            }
        }
        body.push(0);
        packet((u32::from(major) << 16) | u32::from(minor), &body)
    }

    pub fn connect(port: u16) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // A relay that hangs fails the test instead of blocking it.
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    }

    /// The next message (tag, body), or `None` when the peer closed.
    pub fn read(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 5];
        match s.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => panic!("reading a message: {e}"),
        }
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        s.read_exact(&mut body).unwrap();
        Some((head[0], body))
    }

    /// An ErrorResponse's fields by their code.
    pub fn error_field(body: &[u8], field: u8) -> Option<String> {
        let mut rest = body;
        while let Some((&f, tail)) = rest.split_first() {
            if f == 0 {
                break;
            }
            let end = tail.iter().position(|&b| b == 0)?;
            if f == field {
                return Some(String::from_utf8_lossy(&tail[..end]).into_owned());
            }
            rest = &tail[end + 1..];
        }
        None
    }

    fn cstrs(mut b: &[u8]) -> Vec<String> {
        let mut v = Vec::new();
        while let Some(end) = b.iter().position(|&x| x == 0) {
            v.push(String::from_utf8_lossy(&b[..end]).into_owned());
            b = &b[end + 1..];
        }
        v
    }

    fn i32_at(b: &[u8], at: usize) -> i32 {
        i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// A session past its startup, as the server answered it.
    pub struct Session {
        pub stream: TcpStream,
        /// NegotiateProtocolVersion: the newest version the server speaks
        /// as (major, minor), and the `_pq_.` options it did not recognize.
        /// The docs call the field the newest minor; servers send the
        /// whole version (3.0 is 196608 from PostgreSQL 15), as libpq reads it.
        pub negotiated: Option<((i32, i32), Vec<String>)>,
        pub pid: i32,
        pub key: Vec<u8>,
    }

    impl Session {
        /// Sends `startup` and reads up to ReadyForQuery (the test
        /// cluster trusts its superuser over TCP: no password exchange).
        pub fn open(port: u16, startup: &[u8]) -> Session {
            let mut stream = connect(port);
            stream.write_all(startup).unwrap();
            let (mut negotiated, mut pid, mut key) = (None, 0, Vec::new());
            loop {
                let (tag, body) = read(&mut stream).expect("the relay closed during startup");
                match tag {
                    b'v' => {
                        let n = i32_at(&body, 4) as usize;
                        let options = cstrs(&body[8..]);
                        assert_eq!(options.len(), n, "NegotiateProtocolVersion's count");
                        let v = i32_at(&body, 0);
                        negotiated = Some(((v >> 16, v & 0xffff), options));
                    }
                    b'R' => assert_eq!(i32_at(&body, 0), 0, "an authentication request"),
                    b'K' => {
                        pid = i32_at(&body, 0);
                        key = body[4..].to_vec();
                    }
                    b'E' => panic!("startup refused: {:?}", error_field(&body, b'M')),
                    b'Z' => break,
                    _ => {}
                }
            }
            Session {
                stream,
                negotiated,
                pid,
                key,
            }
        }

        /// Sends a simple Query; every message up to ReadyForQuery.
        pub fn query(&mut self, sql: &str) -> Vec<(u8, Vec<u8>)> {
            self.stream.write_all(&query(sql)).unwrap();
            let mut got = Vec::new();
            loop {
                let m = read(&mut self.stream).expect("the relay closed during a query");
                let last = m.0 == b'Z';
                got.push(m);
                if last {
                    return got;
                }
            }
        }

        pub fn terminate(mut self) {
            self.stream.write_all(&[b'X', 0, 0, 0, 4]).unwrap();
            // The relay forwards it and the server closes: read to the end.
            while read(&mut self.stream).is_some() {}
        }
    }

    /// A simple Query message.
    pub fn query(sql: &str) -> Vec<u8> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        let mut m = vec![b'Q'];
        m.extend(((body.len() + 4) as u32).to_be_bytes());
        m.extend(body);
        m
    }

    /// A CommandComplete's tag among `messages`.
    pub fn completed(messages: &[(u8, Vec<u8>)]) -> Vec<String> {
        messages
            .iter()
            .filter(|(t, _)| *t == b'C')
            .map(|(_, b)| cstrs(b).remove(0))
            .collect()
    }
}

/// A relay started in this process around `db`, as `planck record` starts
/// one around its command; `f` gets its port. Returns what it captured.
fn through_relay<T>(db: &TestDb, f: impl FnOnce(u16) -> T) -> (T, planck::record::relay::Capture) {
    let conn = db.conn();
    let relay = block_on(async move {
        planck::record::relay::Relay::start(&conn, planck::output::Log::silent())
            .await
            .unwrap()
    });
    let out = f(relay.port);
    (out, block_on(relay.finish()).unwrap())
}

/// The server's major version (15, 18, ...).
fn server_major(db: &TestDb) -> u32 {
    db.query_strings("SHOW server_version_num")[0]
        .parse::<u32>()
        .unwrap()
        / 10_000
}

/// The newest 3.x minor the test's server speaks: PostgreSQL 18 added 3.2
/// (there is no 3.1); older servers answer any higher minor with
/// NegotiateProtocolVersion naming 0 and go on as 3.0.
fn newest_minor(major: u32) -> i32 {
    if major >= 18 { 2 } else { 0 }
}

// Issue 31: sessions that start with protocol 3.2 and with libpq 19's
// grease (3.9999, with a `_pq_.` option) are relayed as sent, the server's
// NegotiateProtocolVersion reaches the client untouched, and their
// statements are recorded under the session's database and user exactly
// as a 3.0 session's are. Before, the relay read any version but 3.0 as
// another protocol: the statements were recorded under no database and no
// role. What the server answers depends on its version, and each is
// asserted: PostgreSQL 18 speaks 3.2 (no negotiation, a 32-byte cancel
// key) and negotiates the grease down to 3.2; older servers negotiate both
// down to 3.0 (4-byte key).
#[test]
fn protocol_3_2_and_grease_sessions_are_recorded_as_3_0_ones() {
    let db = test_db!();
    let major = server_major(&db);
    let newest = newest_minor(major);
    let option = "_pq_.planck_probe";
    // (minor, a `_pq_.` option sent, the query's alias)
    let cases = [
        (0, None, "via_3_0"),
        (2, None, "via_3_2"),
        (9999, Some(option), "via_grease"),
    ];
    let (answers, capture) = through_relay(&db, |port| {
        let mut answers = Vec::new();
        for (minor, extra, alias) in cases {
            let mut params = vec![("user", "planck"), ("database", db.name.as_str())];
            params.extend(extra.map(|o| (o, "on")));
            let mut s = raw::Session::open(port, &raw::startup(3, minor, &params));
            let got = s.query(&format!("SELECT 1 AS {alias}"));
            assert_eq!(raw::completed(&got), ["SELECT 1"], "3.{minor}");
            answers.push((minor, s.negotiated.clone(), s.key.len()));
            s.terminate();
        }
        answers
    });
    let key = |minor: i32| if minor >= 2 { 32 } else { 4 };
    let expected = vec![
        (0, None, 4),
        (
            2,
            (newest < 2).then(|| ((3, newest), Vec::new())),
            key(newest.min(2)),
        ),
        (
            9999,
            Some(((3, newest), vec![option.to_string()])),
            key(newest),
        ),
    ];
    assert_eq!(answers, expected, "PostgreSQL {major}");
    for (_, _, alias) in cases {
        let t = capture
            .texts
            .iter()
            .find(|t| t.text.contains(alias))
            .unwrap_or_else(|| panic!("{alias} not recorded: {:#?}", capture.texts));
        assert_eq!(
            (t.database.as_str(), t.role.as_str(), t.calls),
            (db.name.as_str(), "planck", 1),
            "{alias}"
        );
    }
    assert_eq!((capture.connections, capture.incomplete), (3, 0));
    assert_eq!(
        capture.databases.get(&db.name),
        Some(&3),
        "{:?}",
        capture.databases
    );
}

// The relay's pump (src/record/relay/pump.rs) forwards what a socket
// cannot take at once, both ways: an answer of 16 MiB the client reads only
// after a pause (the relay waits for room on the client's socket), and
// 3,000 queries written before their answers are read (the server's socket
// fills, then the client's). Every byte arrives, in order. A connection
// the command never closes is closed when the relay finishes, counted as
// left open.
#[test]
fn the_pump_waits_for_room_both_ways_and_closes_what_is_left_open() {
    use std::io::Write;
    let db = test_db!();
    let params = [("user", "planck"), ("database", db.name.as_str())];
    const BIG: usize = 16 << 20;
    const PIPELINED: usize = 3_000;
    let ((answer, rows, left), capture) = through_relay(&db, |port| {
        let mut s = raw::Session::open(port, &raw::startup(3, 0, &params));
        s.stream
            .write_all(&raw::query(&format!("SELECT repeat('x', {BIG})")))
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let mut answer = Vec::new();
        while let Some((tag, body)) = raw::read(&mut s.stream) {
            if tag == b'D' {
                // Column count (2 bytes), the value's length (4), the value.
                answer = body[6..].to_vec();
            }
            if tag == b'Z' {
                break;
            }
        }

        let mut writer = s.stream.try_clone().unwrap();
        let sending = std::thread::spawn(move || {
            let mut all = Vec::new();
            for i in 0..PIPELINED {
                all.extend(raw::query(&format!("SELECT {i}, repeat('y', 2000)")));
            }
            writer.write_all(&all).unwrap();
        });
        let mut rows = Vec::new();
        let mut ready = 0;
        while ready < PIPELINED {
            let (tag, body) = raw::read(&mut s.stream).expect("the relay closed");
            match tag {
                b'D' => {
                    let len = u32::from_be_bytes(body[2..6].try_into().unwrap()) as usize;
                    rows.push(String::from_utf8(body[6..6 + len].to_vec()).unwrap());
                }
                b'Z' => ready += 1,
                _ => {}
            }
        }
        sending.join().unwrap();
        s.terminate();

        // Left open: returned, so it is still open when the relay finishes.
        let mut left = raw::Session::open(port, &raw::startup(3, 0, &params));
        assert_eq!(raw::completed(&left.query("SELECT 1")), ["SELECT 1"]);
        (answer, rows, left)
    });
    assert_eq!(answer.len(), BIG);
    assert!(answer.iter().all(|&b| b == b'x'));
    let expected: Vec<String> = (0..PIPELINED).map(|i| i.to_string()).collect();
    assert_eq!(rows, expected);
    assert_eq!(
        (capture.connections, capture.left_open),
        (2, 1),
        "{capture:#?}"
    );
    drop(left);
}

// Issue 31: a CancelRequest carrying the key BackendKeyData gave a 3.2
// session (32 bytes from PostgreSQL 18; 4 from older servers, which go on
// as 3.0) reaches the server through the relay and cancels the session's
// `SELECT pg_sleep(30)` (57014) within seconds.
#[test]
fn a_cancel_request_with_a_long_key_cancels_through_the_relay() {
    use std::io::Write;
    let db = test_db!();
    let major = server_major(&db);
    let params = [("user", "planck"), ("database", db.name.as_str())];
    let ((key_len, code, message), capture) = through_relay(&db, |port| {
        let mut s = raw::Session::open(port, &raw::startup(3, 2, &params));
        let q = b"SELECT pg_sleep(30)\0";
        let mut m = vec![b'Q'];
        m.extend(((q.len() + 4) as u32).to_be_bytes());
        m.extend(q);
        s.stream.write_all(&m).unwrap();
        // Cancel only once the sleep runs (a cancel before it cancels nothing).
        let running = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = {} AND state = 'active'",
            s.pid
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while db.query_strings(&running) != ["1"] {
            assert!(Instant::now() < deadline, "the sleep never ran");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut body = s.pid.to_be_bytes().to_vec();
        body.extend(&s.key);
        raw::connect(port)
            .write_all(&raw::packet(raw::CANCEL_REQUEST, &body))
            .unwrap();
        let (mut code, mut message) = (None, None);
        loop {
            let (tag, body) = raw::read(&mut s.stream).expect("the relay closed the session");
            if tag == b'E' {
                code = raw::error_field(&body, b'C');
                message = raw::error_field(&body, b'M');
            }
            if tag == b'Z' {
                break;
            }
        }
        let key_len = s.key.len();
        s.terminate();
        (key_len, code, message)
    });
    assert_eq!(
        key_len,
        if newest_minor(major) >= 2 { 32 } else { 4 },
        "PostgreSQL {major}"
    );
    // Cancelled, not timed out (same code, another message): the statement
    // would otherwise sleep its thirty seconds.
    assert_eq!(code.as_deref(), Some("57014"));
    assert_eq!(
        message.as_deref(),
        Some("canceling statement due to user request")
    );
    assert_eq!(capture.incomplete, 0);
}

// Issue 31: a startup packet the relay cannot read (protocol 2.0, a length
// no packet has, parameters without their terminator) is answered by the
// relay itself with an ErrorResponse of SQLSTATE 08P01 naming what was
// wrong, and the connection is closed: no panic, no hang. Before, the
// relay passed 2.0 to the server (which answered 0A000) and closed a bad
// length without a word.
#[test]
fn a_startup_the_relay_cannot_read_gets_08p01() {
    use std::io::Write;
    let db = test_db!();
    let cases: [(Vec<u8>, &str); 3] = [
        (raw::startup(2, 0, &[("user", "planck")]), "protocol 2.0"),
        (vec![0, 0, 0, 4, 0, 3, 0, 0], "startup packet of 4 bytes"),
        (
            raw::packet(3 << 16, b"user\0planck"),
            "without their terminator",
        ),
    ];
    let (_, capture) = through_relay(&db, |port| {
        for (packet, says) in &cases {
            let mut s = raw::connect(port);
            s.write_all(packet).unwrap();
            let (tag, body) = raw::read(&mut s).expect("closed without an answer");
            assert_eq!(tag, b'E', "{says}");
            assert_eq!(raw::error_field(&body, b'C').as_deref(), Some("08P01"));
            let message = raw::error_field(&body, b'M').unwrap();
            assert!(message.contains(says), "{message}");
            assert_eq!(raw::read(&mut s), None, "{says}: the relay closes");
        }
    });
    assert_eq!(capture.startups_refused, 3);
    assert_eq!(
        capture.startup_reasons.len(),
        3,
        "{:?}",
        capture.startup_reasons
    );
    assert_eq!(capture.connections, 0);
}

// Issue 31: `planck record` says so when the relay refused a client's
// startup: the line names what the client sent and the way out.
#[test]
fn record_warns_about_a_client_on_another_protocol() {
    let db = test_db!();
    let dir = common::project_dir();
    // bash's /dev/tcp: a client that sends a protocol 2.0 startup packet.
    std::fs::write(
        dir.path().join("v2.bash"),
        "exec 3<>/dev/tcp/127.0.0.1/$PGPORT\n\
         printf '\\000\\000\\000\\015\\000\\002\\000\\000user\\000' >&3\n\
         cat <&3 >answer.bin\n",
    )
    .unwrap();
    let script = write_script(dir.path(), "v2.sh", "bash ./v2.bash\n");
    let out = db.planck(&["record", "--", &script], dir.path());
    let answer = std::fs::read(dir.path().join("answer.bin")).unwrap();
    assert_eq!(answer.first(), Some(&b'E'), "{answer:?}");
    assert!(
        String::from_utf8_lossy(&answer).contains("08P01"),
        "{answer:?}"
    );
    let err = stderr(&out);
    assert!(
        err.contains(
            "1 connection(s) were refused by the capture relay: the client sent protocol 2.0"
        ),
        "{err}"
    );
    assert!(err.contains("--no-relay"), "{err}");
    // Nothing was captured: a run like that fails, so CI notices.
    assert_exit(&out, 1);
}

/// A shell fragment that finds the relay `planck record` started (its
/// process has the relay's argument and the command's parent, planck, as
/// its own parent) and sets `relay` to its pid and `relay_sid` to its
/// session; `own_sid` is the command's session.
const FIND_RELAY: &str = r#"own_sid=$(cut -d' ' -f6 /proc/$$/stat)
relay=
for p in /proc/[0-9]*; do
  if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q -- '__capture-relay'; then
    set -- $(cat "$p/stat")
    if [ "$4" = "$PPID" ]; then relay=$1; relay_sid=$6; fi
  fi
done
[ -n "$relay" ]
"#;

/// `planck record` of a script made of `body` in a new project, against
/// `db` given a table `t (a int)`.
fn record_script(db: &TestDb, body: &str) -> (std::process::Output, tempfile::TempDir) {
    db.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; CREATE TABLE t (a int)");
    let dir = common::project_dir();
    let script = write_script(dir.path(), "s.sh", body);
    (db.planck(&["record", "--", &script], dir.path()), dir)
}

// Issue 32: the relay runs as a process of its own, in a session of its
// own (the scheduler then shares the CPU with it apart from the recorded
// command, as with a pooler), and leaves nothing behind.
#[test]
fn the_relay_is_a_process_in_a_session_of_its_own_and_leaves_nothing() {
    let db = test_db!();
    let (out, dir) = record_script(
        &db,
        &format!(
            "{FIND_RELAY}echo \"$relay $relay_sid $own_sid $PGPORT\" > relay.txt\n\
         psql -X -q -c 'SELECT a FROM t WHERE a > 1' >/dev/null\n"
        ),
    );
    assert_exit(&out, 0);
    let seen = std::fs::read_to_string(dir.path().join("relay.txt")).unwrap();
    let [pid, relay_sid, own_sid, port] = seen.split_whitespace().collect::<Vec<_>>()[..] else {
        panic!("{seen}");
    };
    assert_ne!(relay_sid, own_sid, "{seen}");
    assert_eq!(pid, relay_sid, "the relay leads its session: {seen}");
    // What it forwarded reached the recording.
    let file = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    assert!(
        ids(&file).contains_key("SELECT a FROM t WHERE a > $1"),
        "{:?}",
        ids(&file)
    );
    // Gone once record is: its process (reaped, not a zombie) and its
    // socket's directory.
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{seen}");
    let socket_dir = std::env::temp_dir().join(format!("planck-relay-{pid}-{port}"));
    assert!(!socket_dir.exists(), "{}", socket_dir.display());
}

// Issue 32: a relay that dies during the run (killed here) fails the
// recording with an error that says so, and writes nothing.
#[test]
fn a_relay_killed_during_the_run_fails_the_recording_clearly() {
    let db = test_db!();
    let (out, dir) = record_script(
        &db,
        &format!(
            "psql -X -q -c 'SELECT a FROM t WHERE a > 1' >/dev/null\n\
         {FIND_RELAY}kill -9 \"$relay\"\n\
         psql -X -q -c 'SELECT 1' >/dev/null 2>&1 || true\n"
        ),
    );
    assert_exit(&out, 4);
    let err = stderr(&out);
    assert!(
        err.contains("the capture relay's process ended before the run did (signal: 9"),
        "{err}"
    );
    assert!(err.contains("record again, or with --no-relay"), "{err}");
    assert!(!dir.path().join("queries/recorded.toml").exists());
}
