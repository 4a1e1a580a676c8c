//! `planck record` against real databases (issue 4): what is captured, what
//! is dropped as noise, how re-recording merges, and each bad input.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use common::{TestDb, assert_exit, stderr, stdout};
use planck::queries::QueryFile;

/// The summary as a tool reads it: a mirror of the JSON wire format,
/// written here apart from planck's own types, so a change to the format
/// fails these tests instead of changing with them.
#[derive(Debug, serde::Deserialize)]
struct Summary {
    format_version: u32,
    mode: String,
    created_extension: bool,
    exit: Option<ExitMirror>,
    kept: usize,
    added: usize,
    unchanged: usize,
    dropped: std::collections::BTreeMap<String, u64>,
    warnings: Vec<String>,
    vanished: Vec<VanishedMirror>,
    pruned: bool,
    statements: Vec<StatementMirror>,
    relay: Option<RelayMirror>,
}

#[derive(Debug, serde::Deserialize)]
struct RelayMirror {
    matched_by_queryid: usize,
    matched_by_text: usize,
    unmatched: usize,
    relay_only: usize,
}

#[derive(Debug, serde::Deserialize)]
struct ExitMirror {
    code: Option<i32>,
}

#[derive(Debug, serde::Deserialize)]
struct VanishedMirror {
    query: String,
}

#[derive(Debug, serde::Deserialize)]
struct StatementMirror {
    query: String,
}

/// Runs `planck --format json record ARGS` in `dir` and parses the summary
/// (`None` when stdout is not one).
fn record_json(db: &TestDb, dir: &Path, args: &[&str]) -> (Output, Option<Summary>) {
    let mut all = vec!["--format", "json", "record"];
    all.extend_from_slice(args);
    let out = db.planck(&all, dir);
    let v: Option<Summary> = serde_json::from_slice(&out.stdout).ok();
    if let Some(v) = &v {
        assert_eq!(v.format_version, 1);
    }
    (out, v)
}

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\nset -e\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

/// (role, bypass_rls, space-normalized query) of every entry of a file.
fn entries(path: &Path) -> BTreeSet<(String, bool, String)> {
    QueryFile::load(path)
        .unwrap()
        .statements
        .into_iter()
        .map(|s| {
            (
                s.role.unwrap_or_default(),
                s.bypass_rls.unwrap_or(false),
                planck::queries::normalize_space(&s.query),
            )
        })
        .collect()
}

fn set(items: &[(&str, bool, &str)]) -> BTreeSet<(String, bool, String)> {
    items
        .iter()
        .map(|(r, b, q)| (r.to_string(), *b, q.to_string()))
        .collect()
}

/// A role, created once for the whole cluster (roles are global).
fn ensure_role(db: &TestDb, name: &str, attrs: &str) {
    db.exec(&format!(
        "DO $$ BEGIN CREATE ROLE {name} LOGIN PASSWORD '{name}' {attrs}; \
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
    ));
}

fn url_as(db: &TestDb, role: &str) -> String {
    db.url.replacen("planck@", &format!("{role}:{role}@"), 1)
}

/// A schema with an RLS table owned by a non-superuser, and an app role.
fn tenant_schema(db: &TestDb, owner: &str, app: &str) {
    ensure_role(db, owner, "");
    ensure_role(db, app, "");
    db.exec(&format!(
        "GRANT CREATE, USAGE ON SCHEMA public TO {owner};
         SET ROLE {owner};
         CREATE TABLE notes (id int PRIMARY KEY, account_id int NOT NULL, body text NOT NULL);
         ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant ON notes TO {app}
             USING (account_id = current_setting('app.account_id')::int);
         CREATE TABLE counters (k text PRIMARY KEY, n int NOT NULL);
         INSERT INTO notes VALUES (1, 1, 'one'), (2, 2, 'two');
         GRANT SELECT, INSERT, UPDATE, DELETE ON notes, counters TO {app};
         RESET ROLE;"
    ));
}

/// The psql session of the acceptance test: app statements as three roles,
/// wrapped in every kind of noise.
fn psql_script(dir: &Path, owner: &str, app: &str) -> String {
    write_script(
        dir,
        "psql-suite.sh",
        &format!(
            "# as the app role, under row-level security
PGUSER={app} PGPASSWORD={app} psql -X -q -v ON_ERROR_STOP=1 \\
  -c \"BEGIN\" \\
  -c \"SET LOCAL app.account_id = '1'\" \\
  -c \"SELECT body FROM notes WHERE id = 1\" \\
  -c \"SELECT set_config('app.account_id', '2', true)\" \\
  -c \"SAVEPOINT s1\" \\
  -c \"INSERT INTO counters VALUES ('a', 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1\" \\
  -c \"RELEASE SAVEPOINT s1\" \\
  -c \"COMMIT\" \\
  -c \"SHOW work_mem\" \\
  -c \"LISTEN jobs\" \\
  -c \"SELECT count(*) FROM pg_class WHERE relname = 'notes'\" >/dev/null
# as the owner: RLS does not apply to it on notes, and counters has none
PGUSER={owner} PGPASSWORD={owner} psql -X -q -v ON_ERROR_STOP=1 \\
  -c \"SELECT count(*) FROM notes\" \\
  -c \"DELETE FROM counters WHERE n > 5\" \\
  -c \"CREATE TABLE scratch (a int)\" \\
  -c \"DROP TABLE scratch\" >/dev/null
# as the URL's user, a superuser
psql -X -q -v ON_ERROR_STOP=1 -c \"SELECT k FROM counters WHERE k = 'zz'\" >/dev/null
"
        ),
    )
}

// Issue 4, acceptance: a psql run, the exact set of statements, roles and
// RLS flags, noise gone; re-recording the same run is byte-identical.
#[test]
fn records_a_psql_run_exactly_and_rerecords_identically() {
    let db = test_db!();
    let (owner, app) = ("rec_owner_psql", "rec_app_psql");
    tenant_schema(&db, owner, app);
    let dir = common::project_dir();
    let script = psql_script(dir.path(), owner, app);

    let (out, v) = record_json(&db, dir.path(), &["--", &script]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    let file = dir.path().join("queries/recorded.toml");
    assert_eq!(
        entries(&file),
        set(&[
            ("planck", true, "SELECT k FROM counters WHERE k = $1"),
            (
                app,
                false,
                "INSERT INTO counters VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = counters.n + $3"
            ),
            (app, false, "SELECT body FROM notes WHERE id = $1"),
            (owner, false, "DELETE FROM counters WHERE n > $1"),
            (owner, true, "SELECT count(*) FROM notes"),
        ])
    );
    assert_eq!(v.mode, "reset");
    assert!(v.created_extension);
    assert_eq!(v.exit.as_ref().unwrap().code, Some(0));
    assert_eq!(v.kept, 5);
    assert_eq!(v.added, 5);
    let dropped = &v.dropped;
    // BEGIN, SAVEPOINT, RELEASE, COMMIT
    assert_eq!(dropped["transaction"], 4, "{v:#?}");
    // SET LOCAL, set_config(), SHOW
    assert_eq!(dropped["setting"], 3, "{v:#?}");
    assert_eq!(dropped["listen-notify"], 1, "{v:#?}");
    assert_eq!(dropped["ddl"], 2, "{v:#?}");
    assert!(dropped["catalog"] >= 1, "{v:#?}");
    assert!(v.warnings.is_empty(), "{v:#?}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(&format!("database = \"{}\"", db.name)),
        "{text}"
    );

    let (out, v) = record_json(&db, dir.path(), &["--", &script]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    assert_eq!(v.unchanged, 5, "{v:#?}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "re-recording the same run changes nothing"
    );
}

// Issue 4, acceptance: a tokio-postgres client with prepared statements (the
// bundled example's test run), and the committed queries/recorded.toml is
// what it records.
#[test]
fn records_the_example_app_and_matches_the_committed_file() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    let app = common::repo_root().join("tools/example-app");
    let (out, v) = record_json(&db, dir.path(), &["--", app.to_str().unwrap()]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    let file = dir.path().join("queries/recorded.toml");
    // The bundled app's API as app_user (RLS applies), its jobs as the
    // owner (here the superuser, so RLS does not).
    assert_eq!(
        entries(&file),
        set(&[
            (
                "app_user",
                false,
                "INSERT INTO dpop_replays (jti) VALUES ($1) ON CONFLICT (jti) DO NOTHING"
            ),
            (
                "app_user",
                false,
                "INSERT INTO events (account_id, actor_id, kind, subject_type, subject_id, payload) VALUES ($1, $2, $5, $6, $3, $4)"
            ),
            (
                "app_user",
                false,
                "INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, now(), $2) ON CONFLICT (key) DO UPDATE SET hits = CASE WHEN rate_limits.window_start < now() - interval $3 THEN $4 ELSE rate_limits.hits + $5 END, window_start = CASE WHEN rate_limits.window_start < now() - interval $6 THEN now() ELSE rate_limits.window_start END RETURNING hits"
            ),
            (
                "app_user",
                false,
                "INSERT INTO revisions (account_id, item_id, number, author_id, message, content_hash, size_bytes) VALUES ($1, $2, (SELECT coalesce(max(number), $7) + $8 FROM revisions WHERE item_id = $2), $3, $4, $5, $6) RETURNING id, number"
            ),
            (
                "app_user",
                false,
                "SELECT id, kind, actor_id, created_at FROM events WHERE subject_type = $2 AND subject_id = $1 ORDER BY created_at DESC"
            ),
            (
                "app_user",
                false,
                "SELECT id, kind, subject_type, subject_id, created_at FROM events WHERE account_id = $1 ORDER BY created_at DESC LIMIT $2"
            ),
            (
                "app_user",
                false,
                "SELECT id, name, last_seen_at FROM devices WHERE user_id = $1 AND revoked_at IS NULL"
            ),
            (
                "app_user",
                false,
                "SELECT id, name, visibility, updated_at FROM pouches WHERE deleted_at IS NULL ORDER BY updated_at DESC LIMIT $1"
            ),
            (
                "app_user",
                false,
                "SELECT id, number, message, created_at FROM revisions WHERE item_id = $1 ORDER BY number DESC LIMIT $2"
            ),
            (
                "app_user",
                false,
                "SELECT id, slug FROM items WHERE tags @> $1 AND deleted_at IS NULL"
            ),
            (
                "app_user",
                false,
                "SELECT id, slug, title, updated_at FROM items WHERE pouch_id = $1 AND status = $2 ORDER BY updated_at DESC LIMIT $3"
            ),
            (
                "app_user",
                false,
                "SELECT id, title, body, status, tags, metadata FROM items WHERE pouch_id = $1 AND slug = $2 AND deleted_at IS NULL"
            ),
            (
                "app_user",
                false,
                "SELECT path, mime_type, size_bytes, sha256 FROM files WHERE revision_id = $1 ORDER BY path"
            ),
            (
                "app_user",
                false,
                "SELECT t.device_id, d.user_id FROM api_tokens t JOIN devices d ON d.id = t.device_id WHERE t.token_hash = $1 AND t.expires_at > now() AND d.revoked_at IS NULL"
            ),
            (
                "app_user",
                false,
                "INSERT INTO items (account_id, pouch_id, slug, title) VALUES ($1, $2, $3, $4) RETURNING id"
            ),
            (
                "app_user",
                false,
                "UPDATE accounts SET item_seq = item_seq + $2 WHERE id = $1 RETURNING item_seq"
            ),
            (
                "app_user",
                false,
                "UPDATE devices SET last_seen_at = now() WHERE id = $1"
            ),
            (
                "app_user",
                false,
                "UPDATE items SET title = $1, body = $2, updated_at = now() WHERE id = $3 RETURNING updated_at"
            ),
            (
                "planck",
                true,
                "DELETE FROM api_tokens WHERE expires_at < now()"
            ),
            (
                "planck",
                true,
                "DELETE FROM dpop_replays WHERE seen_at < now() - interval $1"
            ),
            (
                "planck",
                true,
                "SELECT account_id, count(*) FROM items WHERE deleted_at IS NULL GROUP BY account_id ORDER BY account_id"
            ),
            (
                "planck",
                true,
                "UPDATE items SET status = $2, updated_at = now() WHERE status = $3 AND updated_at < now() - $1::int * interval $4"
            ),
        ])
    );
    let got = QueryFile::load(&file).unwrap();
    for s in &got.statements {
        let role = s.role.as_deref().unwrap();
        assert!(
            ["app_user", "planck"].contains(&role),
            "unexpected role {role}"
        );
        // app_user never bypasses RLS; the owner (here the superuser) does.
        assert_eq!(s.bypass_rls, Some(role == "planck"), "{}", s.query);
        let first = s.query.split_whitespace().next().unwrap();
        assert!(
            ["SELECT", "INSERT", "UPDATE", "DELETE"].contains(&first),
            "noise kept: {}",
            s.query
        );
        assert!(!s.query.contains("set_config"), "{}", s.query);
        assert!(!s.query.contains("pg_"), "{}", s.query);
    }
    // Parameters bound through the extended protocol and inlined literals
    // both come out as $n.
    let queries: Vec<String> = got.statements.iter().map(|s| s.query.clone()).collect();
    assert!(queries.iter().any(|q| q
        == "SELECT id, slug, title, updated_at FROM items WHERE pouch_id = $1 AND status = $2 ORDER BY updated_at DESC LIMIT $3"));
    // Issue 12, 2: every statement the relay saw is matched to its
    // pg_stat_statements entry by the server's own queryid, none by text.
    let relay = v.relay.as_ref().unwrap();
    assert_eq!(
        (relay.matched_by_text, relay.unmatched, relay.relay_only),
        (0, 0, 0),
        "{relay:#?}"
    );
    assert_eq!(relay.matched_by_queryid, got.statements.len(), "{relay:#?}");
    assert_eq!(v.dropped["utility"], 11, "the fixture COPYs: {v:#?}");
    assert!(v.dropped["setting"] >= 2, "{v:#?}");
    assert!(v.dropped["transaction"] >= 2, "{v:#?}");

    let committed = std::fs::read_to_string(common::repo_root().join("queries/recorded.toml"))
        .unwrap()
        .replace(
            "database = \"planck_demo\"",
            &format!("database = \"{}\"", db.name),
        );
    // Issue 12: the recording carries the app's transactions, as shapes
    // (a tenant bound per request keeps only its name, so they merge across
    // tenants); the hot one (POST /pouches/:id/items) is among them,
    // with its three statements in order after the request's preamble.
    let txs = &got.transactions;
    assert!(txs.len() >= 5, "{txs:#?}");
    for t in txs {
        assert!(t.recorded && !t.manual, "{t:?}");
        assert_eq!(t.role.as_deref(), Some("app_user"), "{t:?}");
        assert_eq!(
            t.local_settings,
            vec!["app.account_id".to_string()],
            "{t:?}"
        );
        // A literal SET LOCAL keeps its value; a bound one only its name.
        assert!(
            t.settings.iter().all(|(k, _)| k == "app.account_id"),
            "{t:?}"
        );
    }
    let hot = ["f3b8e62530fe379c", "da40605efdaf5fc2", "571a364d05a06d43"];
    let create = txs
        .iter()
        .find(|t| t.statements.ends_with(&hot.map(String::from)))
        .unwrap_or_else(|| panic!("no POST /pouches/:id/items shape: {txs:#?}"));
    assert!(create.calls.unwrap() >= 2, "{create:?}");
    // The account whose counter row is locked is the event's account ($1).
    assert!(
        create.bind.iter().any(|b| b.statement == hot[2]
            && b.param == 1
            && b.source
                == planck::queries::BindSource::Result {
                    statement: hot[0].into(),
                    column: "$1".into()
                }),
        "{:#?}",
        create.bind
    );
    // The committed file's statements must match the recording's; its
    // recorded transactions carry pauses measured on the machine that
    // recorded them, so only their shapes are compared (above).
    let steady = |text: &str| -> String {
        text.split("\n[[transaction]]")
            .next()
            .unwrap()
            .trim_end()
            .to_string()
    };
    assert_eq!(
        steady(&std::fs::read_to_string(&file).unwrap()),
        steady(&committed),
        "queries/recorded.toml is stale: regenerate it (see docs/record.md)"
    );
}

// Issue 4: a hand-added statement and an ignore mark survive a re-record;
// vanished statements are reported, and removed with --prune.
#[test]
fn hand_edits_survive_and_prune_removes_vanished() {
    let db = test_db!();
    db.exec("CREATE TABLE t (a int); CREATE TABLE u (b int)");
    let dir = common::project_dir();
    let both = write_script(
        dir.path(),
        "both.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a = 1' -c 'SELECT b FROM u WHERE b = 2' >/dev/null\n",
    );
    let only_t = write_script(
        dir.path(),
        "only-t.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a = 1' >/dev/null\n",
    );
    let (out, _) = record_json(&db, dir.path(), &["--", &both]);
    assert_exit(&out, 0);
    let file = dir.path().join("queries/recorded.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    // A person marks one statement and adds another by hand.
    let edited = text.replacen(
        "query = \"\"\"\nSELECT a FROM t",
        "ignore = \"tiny table, ticket 7\"\nquery = \"\"\"\nSELECT a FROM t",
        1,
    ) + "\n[[statement]]\nmanual = true\nrole = \"app\"\nquery = \"SELECT count(*) FROM t WHERE a > $1\"\n";
    assert_ne!(edited, text);
    std::fs::write(&file, &edited).unwrap();

    let (out, v) = record_json(&db, dir.path(), &["--", &both]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    assert_eq!(v.unchanged, 2, "{v:#?}");
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.contains("ignore = \"tiny table, ticket 7\""),
        "{after}"
    );
    assert!(
        after.contains("SELECT count(*) FROM t WHERE a > $1"),
        "{after}"
    );
    let rerecorded = after.clone();
    let (out, _) = record_json(&db, dir.path(), &["--", &both]);
    assert_exit(&out, 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), rerecorded);

    // u's statement vanishes: reported, kept; then pruned.
    let (out, v) = record_json(&db, dir.path(), &["--", &only_t]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    let vanished = &v.vanished;
    assert_eq!(vanished.len(), 1, "{v:#?}");
    assert_eq!(vanished[0].query, "SELECT b FROM u WHERE b = $1");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("FROM u WHERE")
    );
    let (out, v) = record_json(&db, dir.path(), &["--prune", "--", &only_t]);
    assert_exit(&out, 0);
    assert!(v.unwrap().pruned);
    let pruned = std::fs::read_to_string(&file).unwrap();
    assert!(!pruned.contains("FROM u WHERE"), "{pruned}");
    assert!(
        pruned.contains("ignore = \"tiny table, ticket 7\""),
        "{pruned}"
    );
    assert!(
        pruned.contains("SELECT count(*) FROM t WHERE a > $1"),
        "{pruned}"
    );
}

// Issue 4: --keep-all keeps the noise; without a command, what is there now.
#[test]
fn keep_all_and_capture_without_a_command() {
    let db = test_db!();
    db.exec("CREATE TABLE t (a int)");
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "s.sh",
        "psql -X -q -c 'BEGIN' -c 'SELECT a FROM t' -c 'COMMIT' >/dev/null\n",
    );
    let (out, v) = record_json(&db, dir.path(), &["--keep-all", "--", &script]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    let queries: Vec<&str> = v.statements.iter().map(|s| s.query.as_str()).collect();
    assert!(
        queries.contains(&"BEGIN") && queries.contains(&"COMMIT"),
        "{queries:?}"
    );
    assert!(queries.contains(&"SELECT a FROM t"), "{queries:?}");

    // No command: the counters as they are (the run above, plus planck's own).
    let (out, v) = record_json(&db, dir.path(), &["-o", "now.toml"]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    assert_eq!(v.mode, "current");
    assert!(v.exit.is_none());
    assert_eq!(
        entries(&dir.path().join("now.toml")),
        set(&[("planck", true, "SELECT a FROM t")])
    );
}

// Issue 4: a role that may not reset pg_stat_statements records through a
// snapshot subtracted after the run; statements from before are left out.
#[test]
fn records_by_snapshot_when_the_role_may_not_reset() {
    let db = test_db!();
    let role = "rec_reader_snap";
    ensure_role(&db, role, "");
    db.exec(&format!(
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
         GRANT pg_read_all_stats TO {role};
         CREATE TABLE t (a int); GRANT SELECT ON t TO {role};
         SELECT a FROM t WHERE a = 99;"
    ));
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "s.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a > 1' >/dev/null\n",
    );
    let out = common::planck_cmd(dir.path())
        .args([
            "--database-url",
            &url_as(&db, role),
            "--format",
            "json",
            "record",
            "--",
            &script,
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let v: Summary = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.mode, "snapshot", "{v:#?}");
    assert_eq!(
        entries(&dir.path().join("queries/recorded.toml")),
        set(&[(role, false, "SELECT a FROM t WHERE a > $1")])
    );
}

// Issue 4: warnings for track = top and for a run that sent nothing.
#[test]
fn warns_about_track_top_and_empty_runs() {
    let db = test_db!();
    db.exec(&format!(
        "ALTER DATABASE {} SET pg_stat_statements.track = top",
        db.name
    ));
    let dir = common::project_dir();
    let out = db.planck(&["record", "--", "true"], dir.path());
    // Issue 12, 4: a run that captured nothing exits 1, so CI notices.
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("pg_stat_statements.track is `top`"), "{err}");
    assert!(
        err.contains(&format!(
            "the run produced no statements at all in database {}",
            db.name
        )),
        "{err}"
    );
    assert!(err.contains("DATABASE_URL"), "{err}");
}

// Issue 4, bad input: a failing test run still records, with a warning, and
// its status is in the summary; a command killed by a signal too.
#[test]
fn failing_and_killed_commands_still_record() {
    let db = test_db!();
    db.exec("CREATE TABLE t (a int)");
    let dir = common::project_dir();
    let failing = write_script(
        dir.path(),
        "failing.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a = 1' >/dev/null\nexit 3\n",
    );
    let (out, v) = record_json(&db, dir.path(), &["--", &failing]);
    assert_exit(&out, 1);
    let v = v.unwrap();
    assert_eq!(v.exit.as_ref().unwrap().code, Some(3));
    assert!(
        stderr(&out).contains("warning: the command exited with status 3"),
        "{}",
        stderr(&out)
    );
    assert_eq!(v.kept, 1);

    let killed = write_script(
        dir.path(),
        "killed.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a = 2 OR a = 3' >/dev/null\nkill -9 $$\n",
    );
    let out = db.planck(&["record", "-o", "killed.toml", "--", &killed], dir.path());
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("the command was killed by signal 9 (SIGKILL)"),
        "{err}"
    );
    assert!(stdout(&out).contains("was killed by signal 9 (SIGKILL)"));
    assert_eq!(
        entries(&dir.path().join("killed.toml")),
        set(&[("planck", true, "SELECT a FROM t WHERE a = $1 OR a = $2")])
    );
}

// Issue 4, bad input: a command that does not exist is refused before
// anything is reset or written.
#[test]
fn command_not_found() {
    let db = test_db!();
    let dir = common::project_dir();
    let out = db.planck(&["record", "--", "no-such-suite-xyz", "--all"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.starts_with("error: cannot run no-such-suite-xyz: command not found in PATH"),
        "{err}"
    );
    assert!(err.contains("hint: check the spelling"), "{err}");
    let out = db.planck(&["record", "--", "./missing.sh"], dir.path());
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("cannot run ./missing.sh: command not found (no such file)"));
    assert!(!dir.path().join("queries/recorded.toml").exists());
}

// Issue 4, bad input: an output path that cannot be written is refused
// before the command runs.
#[test]
fn output_not_writable() {
    let db = test_db!();
    let dir = common::project_dir();
    std::fs::write(dir.path().join("afile"), "").unwrap();
    let marker = dir.path().join("ran");
    let out = db.planck(
        &[
            "record",
            "-o",
            "afile/recorded.toml",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("error: cannot write "), "{err}");
    assert!(err.contains("afile"), "{err}");
    assert!(!marker.exists(), "the command must not run");
}

// Issue 4, bad input: a hand-edited file with a syntax error, and two
// entries with the same identity, are reported at file:line.
#[test]
fn broken_queries_files_name_file_and_line() {
    let db = test_db!();
    let dir = common::project_dir();
    let q = dir.path().join("queries");
    std::fs::create_dir_all(&q).unwrap();
    let file = q.join("recorded.toml");
    std::fs::write(
        &file,
        "format_version = 1\n\n[[statement]]\nrole = \"app\"\nquery = \"SELECT 1\n",
    )
    .unwrap();
    let out = db.planck(&["record", "--", "true"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("error: {}:5:", file.display())),
        "{err}"
    );

    std::fs::write(
        &file,
        "format_version = 1\n\n[[statement]]\nrole = \"app\"\nquery = \"SELECT a FROM t\"\n\n\
         [[statement]]\nrole = \"app\"\nquery = \"\"\"\nSELECT a\n  FROM t\n\"\"\"\n",
    )
    .unwrap();
    let out = db.planck(&["record", "--", "true"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:7: statement", file.display())),
        "{err}"
    );
    assert!(err.contains("appears twice (first at line 3)"), "{err}");
}

// Issue 4, bad input: the extension is missing and this role may not create it.
#[test]
fn extension_missing_and_not_creatable() {
    let db = test_db!();
    let role = "rec_plain_noext";
    ensure_role(&db, role, "");
    let dir = common::project_dir();
    let out = common::planck_cmd(dir.path())
        .args(["--database-url", &url_as(&db, role), "record", "--", "true"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error: the pg_stat_statements extension does not exist in database {}, and role rec_plain_noext may not create it",
            db.name
        )),
        "{err}"
    );
    assert!(err.contains("SQLSTATE 42501"), "{err}");
    assert!(
        err.contains(&format!(
            "hint: ask a superuser to run `CREATE EXTENSION pg_stat_statements;` in database {}",
            db.name
        )),
        "{err}"
    );
}

/// A second server of our own, stopped when dropped.
struct OwnCluster(planck::cluster::Cluster);

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = self.0.stop();
    }
}

// Issue 4, bad input: a server without pg_stat_statements in
// shared_preload_libraries. A real one: planck's own cluster code, with the
// library taken out of the preload list and the server restarted.
#[test]
fn not_in_shared_preload_libraries() {
    let dir = common::project_dir();
    let bindir = planck::cluster::find_bindir(
        std::env::var_os("PLANCK_PG_BINDIR")
            .map(std::path::PathBuf::from)
            .as_deref(),
    )
    .unwrap();
    let cluster = OwnCluster(planck::cluster::Cluster::at(
        dir.path().join(".planck"),
        bindir,
    ));
    let port = cluster.0.start(None, &mut |_| {}).unwrap();
    let _ = port;
    // Later lines win: this takes the library out of the preload list.
    let conf = cluster.0.data_dir().join("postgresql.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.contains("shared_preload_libraries = 'pg_stat_statements'"));
    text.push_str("\nshared_preload_libraries = ''\n");
    std::fs::write(&conf, text).unwrap();
    cluster.0.stop().unwrap();
    let port = cluster.0.start(None, &mut |_| {}).unwrap();
    let url = cluster.0.url(port, "postgres");
    let out = common::planck_cmd(dir.path())
        .args(["--database-url", &url, "record", "--", "true"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "error: pg_stat_statements is not loaded: the server's shared_preload_libraries is empty"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "hint: set shared_preload_libraries = 'pg_stat_statements' in postgresql.conf"
        ),
        "{err}"
    );
    assert!(err.contains("then restart the server"), "{err}");
    assert!(err.contains("planck's managed cluster has it"), "{err}");
}

// Issue 4: statements of other roles that this role may not see are
// reported, with the grant that shows them.
#[test]
fn warns_about_statements_hidden_from_the_role() {
    let db = test_db!();
    let role = "rec_blind_hidden";
    ensure_role(&db, role, "");
    db.exec(&format!(
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
         CREATE TABLE t (a int); GRANT SELECT ON t TO {role};"
    ));
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "s.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a > 1' >/dev/null\n\
         PGUSER=planck PGPASSWORD= psql -X -q -c 'SELECT count(*) FROM t' >/dev/null\n",
    );
    let out = common::planck_cmd(dir.path())
        .args([
            "--database-url",
            &url_as(&db, role),
            "record",
            "--",
            &script,
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("statement(s) of other roles are hidden from role rec_blind_hidden: grant it pg_read_all_stats"),
        "{err}"
    );
    // The capture relay saw the hidden one too (issue 12, 4): recorded
    // from it, without timings.
    assert_eq!(
        entries(&dir.path().join("queries/recorded.toml")),
        set(&[
            (role, false, "SELECT a FROM t WHERE a > $1"),
            ("planck", true, "SELECT count(*) FROM t"),
        ])
    );
}

// Issue 4: entries evicted during the run (pg_stat_statements.max reached)
// are reported, from pg_stat_statements_info.dealloc.
#[test]
fn warns_about_evictions() {
    let dir = common::project_dir();
    let bindir = planck::cluster::find_bindir(
        std::env::var_os("PLANCK_PG_BINDIR")
            .map(std::path::PathBuf::from)
            .as_deref(),
    )
    .unwrap();
    let cluster = OwnCluster(planck::cluster::Cluster::at(
        dir.path().join(".planck"),
        bindir,
    ));
    cluster.0.start(None, &mut |_| {}).unwrap();
    cluster.0.stop().unwrap();
    let conf = cluster.0.data_dir().join("postgresql.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str("\npg_stat_statements.max = 100\n");
    std::fs::write(&conf, text).unwrap();
    let port = cluster.0.start(None, &mut |_| {}).unwrap();
    // 150 distinct statements: SELECT 1, SELECT 1, 1, ...
    let sql: String = (1..=150)
        .map(|n| format!("SELECT {};\n", vec!["1"; n].join(", ")))
        .collect();
    std::fs::write(dir.path().join("many.sql"), sql).unwrap();
    let script = write_script(dir.path(), "s.sh", "psql -X -q -f many.sql >/dev/null\n");
    let out = common::planck_cmd(dir.path())
        .args([
            "--database-url",
            &cluster.0.url(port, "postgres"),
            "record",
            "--",
            &script,
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("pg_stat_statements evicted entries"), "{err}");
    assert!(
        err.contains("raise pg_stat_statements.max (now 100)"),
        "{err}"
    );
}

// Issue 8, the defects: a re-recording rebuilt the queries file from its
// statements, dropping every comment, and would have dropped entries it does
// not own ([[transaction]], x- keys). Both survive, byte for byte.
#[test]
fn rerecording_keeps_comments_and_entries_it_does_not_own() {
    let db = test_db!();
    db.exec("CREATE TABLE t (a int); CREATE TABLE u (b int)");
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "s.sh",
        "psql -X -q -c 'SELECT a FROM t WHERE a = 1' -c 'SELECT b FROM u' >/dev/null\n",
    );
    let (out, _) = record_json(&db, dir.path(), &["--", &script]);
    assert_exit(&out, 0);
    let file = dir.path().join("queries/recorded.toml");
    let recorded = QueryFile::load(&file).unwrap();
    let id_t = &recorded
        .statements
        .iter()
        .find(|s| s.query.contains("FROM t"))
        .unwrap()
        .id;
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = format!(
        "# Owned by the payments team.\n{}",
        text.replacen(
            "\n[[statement]]\n",
            "\n# hot path, see ticket 12\n[[statement]]\nx-owner = \"bob\"\n",
            1,
        )
    ) + &format!(
        "\n# checkout, written by hand\n[[transaction]]\nid = \"checkout\"\nstatements = [\"{id_t}\"]\n\
         think_ms = 5\nisolation = \"serializable\"\nx-ticket = 12\n\n[x-notes]\nwhy = \"later\"\n"
    );
    std::fs::write(&file, &edited).unwrap();
    let f = QueryFile::load(&file).unwrap();
    assert_eq!(f.transactions.len(), 1);

    let (out, v) = record_json(&db, dir.path(), &["--", &script]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    assert_eq!(v.unchanged, 2, "{v:#?}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "the re-recording changed what it does not own"
    );
    // Pruning a statement a transaction names keeps it (the file stays valid).
    let only_u = write_script(
        dir.path(),
        "u.sh",
        "psql -X -q -c 'SELECT b FROM u' >/dev/null\n",
    );
    let (out, v) = record_json(&db, dir.path(), &["--prune", "--", &only_u]);
    assert_exit(&out, 0);
    let v = v.unwrap();
    assert_eq!(v.vanished.len(), 1, "{v:#?}");
    let after = QueryFile::load(&file).unwrap();
    assert_eq!(after.statements.len(), 2);
    assert_eq!(after.transactions[0].statements, std::slice::from_ref(id_t));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# Owned by the payments team.\n"),
        "{text}"
    );
    assert!(
        text.contains("# checkout, written by hand\n[[transaction]]"),
        "{text}"
    );
}

// Issue 8: a queries file of a newer format is a clear error naming the
// file, before anything runs.
#[test]
fn a_newer_queries_file_format_is_refused() {
    let db = test_db!();
    let dir = common::project_dir();
    let q = dir.path().join("queries");
    std::fs::create_dir_all(&q).unwrap();
    let file = q.join("recorded.toml");
    std::fs::write(&file, "format_version = 3\n").unwrap();
    let out = db.planck(&["record", "--", "true"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error: {}:1: format_version 3 is newer than this planck reads (1 and 2)",
            file.display()
        )),
        "{err}"
    );
    assert!(err.contains("hint: upgrade planck"), "{err}");
}

// Issue 8, format 2: a statement run inside a function is recorded with
// `contexts = ["function"]`; one the client sent has no contexts key.
#[test]
fn statements_run_inside_functions_carry_their_context() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE t (a int);
         CREATE FUNCTION bump(x int) RETURNS void LANGUAGE plpgsql AS $$
         BEGIN
           UPDATE t SET a = a + 1 WHERE a = x;
         END $$;",
    );
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "s.sh",
        "psql -X -q -c 'SELECT bump(1)' -c 'UPDATE t SET a = a + 1 WHERE a = 7' >/dev/null\n\
         psql -X -q -c 'SELECT bump(2)' >/dev/null\n",
    );
    let (out, _) = record_json(&db, dir.path(), &["--", &script]);
    assert_exit(&out, 0);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let contexts: BTreeSet<(String, Vec<&str>)> = f
        .statements
        .iter()
        .map(|s| {
            (
                planck::queries::normalize_space(&s.query),
                s.contexts.iter().map(|c| c.name()).collect(),
            )
        })
        .collect();
    assert_eq!(
        contexts,
        BTreeSet::from([
            ("SELECT bump($1)".to_string(), vec![]),
            ("UPDATE t SET a = a + $1 WHERE a = $2".to_string(), vec![]),
            // The function's statement: its own text (x is its parameter).
            (
                "UPDATE t SET a = a + $2 WHERE a = x".to_string(),
                vec!["function"]
            ),
        ])
    );
}
