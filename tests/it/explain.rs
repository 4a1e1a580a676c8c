//! `planck explain` against a real server (issue 5): planted problems are
//! found with the right check, mode and relation/index; the CI gate and its
//! baseline; RLS in force in tenant mode only; every bad-input case.

use crate::common;

use std::path::Path;

use common::{TestDb, assert_exit, stderr, stdout};
use serde_json::Value;

/// Seeds the bundled example with planck's own seeder at CI scale (0.1):
/// 2,000 accounts, 40,000 items, 140,000 events, about 6,000 devices;
/// account 1 is the heavy tenant. The seeder ends with `VACUUM (ANALYZE)`,
/// so the planner sees the real row counts.
fn seed_bundled_example(db: &TestDb) {
    let root = common::repo_root();
    let spec = root.join("seeds/example.toml");
    let out = db.planck(
        &[
            "seed",
            "--spec",
            spec.to_str().unwrap(),
            "--scale",
            "0.1",
            "--truncate",
            "--quiet",
        ],
        &root,
    );
    assert_exit(&out, 0);
}

/// `[[statement]]` entries: (query, role, bypass_rls).
fn statements_toml(stmts: &[(&str, &str, bool)]) -> String {
    let mut text = String::new();
    for (q, role, bypass) in stmts {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"{role}\"\nbypass_rls = {bypass}\nquery = '''\n{q}\n'''\n"
        ));
    }
    text
}

/// Writes a queries file of these statements alone.
fn queries(dir: &Path, stmts: &[(&str, &str, bool)]) -> String {
    let text = format!("format_version = 1\n{}", statements_toml(stmts));
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Writes a queries file: the bundled example's recorded statements
/// (`queries/recorded.toml`), then `extra` appended.
fn recorded_queries_plus(dir: &Path, extra: &[(&str, &str, bool)]) -> String {
    let mut text =
        std::fs::read_to_string(common::repo_root().join("queries/recorded.toml")).unwrap();
    text.push_str(&statements_toml(extra));
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn json_run(db: &TestDb, dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut a = vec!["--format", "json", "explain"];
    a.extend_from_slice(args);
    let out = db.planck(&a, dir);
    let code = out.status.code().unwrap_or(-1);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}); exit {code}\nstdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        )
    });
    assert_eq!(v["format_version"], 1);
    // Every report also reads through the typed mirror of the wire format.
    let typed: common::explain_json::Report = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("the report does not match its wire format: {e}\n{v:#}"));
    assert_eq!(
        typed.statements.len(),
        v["statements"].as_array().unwrap().len()
    );
    // The environment a report shows: the server it planned on.
    let env = typed
        .environment
        .as_ref()
        .expect("explain's JSON has its environment");
    assert!(!env.server_version.is_empty(), "{v:#}");
    (code, v)
}

fn findings<'a>(v: &'a Value, check: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

fn statement<'a>(v: &'a Value, needle: &str) -> &'a Value {
    v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["query"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no statement with {needle}"))
}

const APP: &str = "app_user";

/// Statements whose plans are all fine on the seeded example.
const FINE: &[(&str, &str, bool)] = &[
    ("SELECT id, name FROM pouches WHERE id = $1", APP, false),
    (
        "SELECT id, email FROM users WHERE account_id = $1 AND email = $2",
        APP,
        false,
    ),
    (
        "SELECT id, kind FROM events WHERE account_id = $1 ORDER BY created_at DESC LIMIT $2",
        APP,
        false,
    ),
    ("SELECT id, title FROM items WHERE id = $1", APP, false),
];

const PLANTED_SEQ_SCAN: (&str, &str, bool) = (
    "SELECT id, name FROM devices WHERE user_id = $1",
    "postgres",
    true,
);

/// devices has about 6,000 rows at CI scale, below the default seq-scan
/// threshold (10,000): tests that need its seq scan to count lower it.
const MIN_ROWS_DEVICES: &str = "1000";

/// A job listing a pouch's open items, recorded with `$2` for `'open'`: the
/// literal-only partial index `items_open_by_pouch (pouch_id, updated_at
/// DESC) WHERE status = 'open'` of migration 0002. Planted as a job (admin
/// mode) because in tenant mode the policy's `account_id = ...` makes
/// `items_account_pouch (account_id, pouch_id)` the planner's choice even
/// with `'open'` inlined (cost 8.3 against 17.2 at CI scale): the recorded
/// API statement of the same shape uses the partial index in no tenant plan.
const PLANTED_LITERAL_ONLY: (&str, &str, bool) = (
    "SELECT id, title FROM items WHERE pouch_id = $1 AND status = $2 ORDER BY updated_at DESC LIMIT $3",
    "postgres",
    true,
);

/// The recorded API statement of the same shape (queries/recorded.toml).
const RECORDED_OPEN_ITEMS: &str = "faccfd0e1438c252";
const RECORDED_OPEN_ITEMS_QUERY: &str =
    "SELECT id, slug, title, updated_at FROM items WHERE pouch_id = $1 AND status = $2";

#[test]
fn issue5_planted_problems_are_found_with_check_mode_and_target() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    db.exec(
        "CREATE INDEX items_title ON items (title);
         CREATE INDEX events_archived ON events (created_at) WHERE kind = 'item.archived';
         CREATE FUNCTION tenant_of() RETURNS bigint LANGUAGE sql VOLATILE
             AS $$ SELECT current_setting('app.account_id')::bigint $$;
         DROP POLICY tenant_isolation ON api_tokens;
         CREATE POLICY tenant_isolation ON api_tokens FOR ALL TO app_user USING (account_id = tenant_of());
         ANALYZE;",
    );
    let dir = common::project_dir();
    // The bundled example's recorded statements, then the planted ones.
    let q = recorded_queries_plus(dir.path(), &[PLANTED_SEQ_SCAN, PLANTED_LITERAL_ONLY]);
    // The application's source, where the literal is inlined.
    let src = dir.path().join("app");
    std::fs::create_dir_all(src.join("api")).unwrap();
    std::fs::write(
        src.join("api/items.ts"),
        "const open = sql`SELECT id, title FROM items\n  WHERE pouch_id = ${p} AND status = 'open'`;\n",
    )
    .unwrap();
    // --min-rows: the planted seq scan is on devices (MIN_ROWS_DEVICES).
    let (code, v) = json_run(
        &db,
        dir.path(),
        &[
            "--queries",
            &q,
            "--source",
            "app",
            "--min-rows",
            MIN_ROWS_DEVICES,
        ],
    );
    assert_eq!(code, 1, "{v:#}");
    let planted_seq = statement(&v, PLANTED_SEQ_SCAN.0);
    let planted_lit = statement(&v, PLANTED_LITERAL_ONLY.0);

    // Missing index: a seq scan on devices, judged in admin mode (a job). The
    // recorded statements have seq scans of their own (the api_tokens
    // cleanup, the items jobs, devices in tenant mode).
    let seq = findings(&v, "seq-scan");
    let planted: Vec<_> = seq
        .iter()
        .filter(|f| f["statement_id"] == planted_seq["id"])
        .collect();
    assert_eq!(planted.len(), 1, "{seq:#?}");
    assert_eq!(planted[0]["relation"], "devices");
    assert_eq!(planted[0]["mode"], "admin");
    assert_eq!(planted[0]["severity"], "error");
    assert_eq!(planted[0]["query"], PLANTED_SEQ_SCAN.0);

    // Unused index, reported without a mode.
    let unused = findings(&v, "unused-index");
    let title = unused
        .iter()
        .find(|f| f["index"] == "items_title")
        .expect("items_title unused");
    assert_eq!(title["relation"], "items");
    assert_eq!(title["severity"], "warning");
    assert_eq!(title["mode"], Value::Null);

    // Unused partial index.
    let partial = findings(&v, "unused-partial-index");
    let archived = partial
        .iter()
        .find(|f| f["index"] == "events_archived")
        .unwrap_or_else(|| panic!("events_archived unused: {partial:#?}"));
    assert_eq!(archived["relation"], "events");
    assert_eq!(archived["severity"], "warning");
    assert_eq!(archived["mode"], Value::Null);

    // The literal-only partial index: informational, and never "unused".
    let lit: Vec<_> = findings(&v, "partial-index-needs-literal")
        .into_iter()
        .filter(|f| f["index"] == "items_open_by_pouch")
        .collect();
    assert_eq!(lit.len(), 1, "{lit:#?}");
    assert_eq!(lit[0]["statement_id"], planted_lit["id"]);
    assert_eq!(lit[0]["relation"], "items");
    assert_eq!(lit[0]["mode"], "admin");
    assert_eq!(lit[0]["severity"], "info");
    let message = lit[0]["message"].as_str().unwrap();
    assert!(message.contains("pg_stat_statements shows $2"), "{message}");
    assert!(message.contains("inlined in api/items.ts:2"), "{message}");
    assert!(
        !partial
            .iter()
            .chain(unused.iter())
            .any(|f| f["index"] == "items_open_by_pouch"),
        "the literal-only partial index must not be reported unused"
    );
    // The recorded API statement of that shape was re-planned with 'open'
    // in tenant mode, its judged mode, and no tenant plan used the index:
    // hence no tenant-mode finding above.
    let recorded = statement(&v, RECORDED_OPEN_ITEMS_QUERY);
    assert_eq!(recorded["id"], RECORDED_OPEN_ITEMS);
    let tenant_plans: Vec<_> = recorded["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["mode"] == "tenant")
        .collect();
    assert!(
        tenant_plans
            .iter()
            .any(|p| p["kind"] == "literal" && p["params"][1] == "open"),
        "{tenant_plans:#?}"
    );
    assert!(
        tenant_plans
            .iter()
            .all(|p| !p["plan"].to_string().contains("items_open_by_pouch")),
        "{tenant_plans:#?}"
    );

    // VOLATILE policy function.
    let rls = findings(&v, "rls-policy");
    let vol = rls
        .iter()
        .find(|f| f["message"].as_str().unwrap().contains("VOLATILE"))
        .expect("volatile policy finding");
    assert_eq!(vol["relation"], "api_tokens");
    assert_eq!(vol["mode"], "tenant");
    assert_eq!(vol["severity"], "error");
    assert!(vol["message"].as_str().unwrap().contains("tenant_of()"));
}

#[test]
fn issue5_ci_gate_fine_set_exits_0_seq_scan_1_baseline_0() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    let dir = common::project_dir();
    // The planted seq scan is on devices: every run but the planck.toml
    // threshold ones passes --min-rows for it to count (MIN_ROWS_DEVICES).
    let run = |q: &str, extra: &[&str]| {
        let mut args = vec!["--queries", q, "--min-rows", MIN_ROWS_DEVICES];
        args.extend_from_slice(extra);
        json_run(&db, dir.path(), &args)
    };
    let q = queries(dir.path(), FINE);
    let (code, v) = run(&q, &[]);
    let errors: Vec<_> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(code, 0);
    assert_eq!(v["summary"]["explained"], FINE.len());

    let mut stmts = FINE.to_vec();
    stmts.push(PLANTED_SEQ_SCAN);
    let q = queries(dir.path(), &stmts);
    let (code, v) = run(&q, &[]);
    assert_eq!(code, 1);
    let seq = findings(&v, "seq-scan");
    assert_eq!(seq.len(), 1, "{seq:#?}");
    assert_eq!(seq[0]["relation"], "devices");
    // --output: the same result written whole to the file (its folder made
    // when only it is missing), nothing on stdout, and exit 1 all the same.
    let out = db.planck(
        &[
            "explain",
            "--queries",
            &q,
            "--min-rows",
            MIN_ROWS_DEVICES,
            "--format",
            "json",
            "--output",
            "out/e.json",
        ],
        dir.path(),
    );
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), "");
    let text = std::fs::read_to_string(dir.path().join("out/e.json")).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["summary"], v["summary"]);
    assert_eq!(findings(&file, "seq-scan").len(), 1);
    // Several --output KIND=PATH in one run (issue 50, 1): the JSON, the
    // CI files `planck report` writes from it (the same bytes), and a bare
    // path in the default format; nothing on stdout.
    let out = db.planck(
        &[
            "explain",
            "--queries",
            &q,
            "--min-rows",
            MIN_ROWS_DEVICES,
            "-o",
            "json=ci/e.json",
            "-o",
            "sarif=ci/planck.sarif",
            "--output",
            "junit=ci/junit.xml",
            "-o",
            "ci/explain.txt",
        ],
        dir.path(),
    );
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), "");
    let read = |n: &str| std::fs::read_to_string(dir.path().join("ci").join(n)).unwrap();
    let file: Value = serde_json::from_str(&read("e.json")).unwrap();
    assert_eq!(file["summary"], v["summary"]);
    assert!(
        read("explain.txt").contains("seq-scan"),
        "{}",
        read("explain.txt")
    );
    assert!(
        read("junit.xml").contains("<failure"),
        "{}",
        read("junit.xml")
    );
    let sarif: Value = serde_json::from_str(&read("planck.sarif")).unwrap();
    assert!(
        sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["ruleId"] == "seq-scan"),
        "{sarif:#}"
    );
    let from_report = db.planck(
        &[
            "report",
            "--explain",
            "ci/e.json",
            "-o",
            "sarif=ci/report.sarif",
        ],
        dir.path(),
    );
    assert_exit(&from_report, 0);
    assert_eq!(read("report.sarif"), read("planck.sarif"));
    // A kind explain does not write is refused before any work.
    let out = db.planck(
        &["explain", "--queries", &q, "-o", "sarfi=ci/x.sarif"],
        dir.path(),
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("`sarfi` is not a kind"),
        "{}",
        stderr(&out)
    );

    let (code, _) = run(&q, &["--write-baseline"]);
    assert_eq!(code, 0);
    let base = dir.path().join("queries/baseline.toml");
    let text = std::fs::read_to_string(&base).unwrap();
    assert!(text.contains("check = \"seq-scan\""), "{text}");
    assert!(text.contains("relation = \"devices\""), "{text}");
    let (code, v) = run(&q, &[]);
    assert_eq!(code, 0);
    assert_eq!(findings(&v, "seq-scan")[0]["baseline"], true);
    // Writing it again gives the same bytes.
    run(&q, &["--write-baseline"]);
    assert_eq!(std::fs::read_to_string(&base).unwrap(), text);

    // A threshold in planck.toml: devices (about 6,000 rows) is above 1,000
    // but below the default 10,000, so the seq scan shows only if the file
    // is read.
    std::fs::write(
        dir.path().join("planck.toml"),
        "[explain]\nmin_rows = 1000\n",
    )
    .unwrap();
    let (code, v) = json_run(
        &db,
        dir.path(),
        &["--queries", &q, "--baseline", "none.toml"],
    );
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(findings(&v, "seq-scan").len(), 1);
    // The flag wins over the file: devices is below 100,000.
    let (code, v) = json_run(
        &db,
        dir.path(),
        &[
            "--queries",
            &q,
            "--baseline",
            "none.toml",
            "--min-rows",
            "100000",
        ],
    );
    assert_eq!(code, 0);
    assert!(findings(&v, "seq-scan").is_empty());

    // An ignore with a reason in planck.toml also clears it.
    std::fs::remove_file(&base).unwrap();
    std::fs::write(
        dir.path().join("planck.toml"),
        "[[explain.ignore]]\ncheck = \"seq-scan\"\ntable = \"devices\"\nreason = \"devices stays small\"\n",
    )
    .unwrap();
    let (code, v) = run(&q, &[]);
    assert_eq!(code, 0);
    assert!(findings(&v, "seq-scan").is_empty());
    assert_eq!(v["summary"]["ignored"], 1);

    // A misspelt table in an ignore matches nothing: said, with its line
    // and the table meant, and the finding still fails the run.
    std::fs::write(
        dir.path().join("planck.toml"),
        "[[explain.ignore]]\ncheck = \"seq-scan\"\ntable = \"devcies\"\nreason = \"small\"\n",
    )
    .unwrap();
    let out = db.planck(
        &["explain", "--queries", &q, "--min-rows", MIN_ROWS_DEVICES],
        dir.path(),
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("planck.toml:1: [[explain.ignore]] names table `devcies`")
            && err.contains("did you mean `devices`?"),
        "{err}"
    );
}

#[test]
fn issue5_rls_in_force_in_tenant_mode_only() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[("SELECT id, title FROM items WHERE id = $1", APP, false)],
    );
    let policy = "current_setting('app.account_id'";

    let (code, v) = json_run(&db, dir.path(), &["--queries", &q, "--as-tenant"]);
    assert_eq!(code, 0, "{v:#}");
    let s = &v["statements"][0];
    assert_eq!(s["mode"], "tenant");
    let plans = s["plans"].as_array().unwrap();
    assert!(plans.iter().any(|p| p["kind"] == "generic"));
    assert!(
        plans
            .iter()
            .any(|p| p["kind"] == "custom" && p["tenant"] == "heaviest")
    );
    for p in plans {
        assert_eq!(p["mode"], "tenant");
        assert!(
            p["plan"].to_string().contains(policy),
            "no policy filter: {p:#}"
        );
    }
    // The heaviest tenant is account 1.
    assert!(plans.iter().any(|p| p["tenant_id"] == "1"), "{plans:#?}");

    // --tenant-id plans as another tenant.
    let (_, v) = json_run(
        &db,
        dir.path(),
        &["--queries", &q, "--as-tenant", "--tenant-id", "7"],
    );
    let plans = v["statements"][0]["plans"].as_array().unwrap();
    let custom = plans.iter().find(|p| p["kind"] == "custom").unwrap();
    assert_eq!(custom["tenant_id"], "7");
    assert_eq!(custom["tenant"], "chosen");

    let (code, v) = json_run(&db, dir.path(), &["--queries", &q, "--all-modes"]);
    assert_eq!(code, 0);
    assert_eq!(v["statements"][0]["mode"], "both");

    let (code, v) = json_run(&db, dir.path(), &["--queries", &q, "--as-admin"]);
    assert_eq!(code, 0);
    let plans = v["statements"][0]["plans"].as_array().unwrap();
    assert!(!plans.is_empty());
    for p in plans {
        assert_eq!(p["mode"], "admin");
        assert!(
            !p["plan"].to_string().contains(policy),
            "policy in admin plan: {p:#}"
        );
    }
}

#[test]
fn issue5_bad_statements_are_skipped_or_flagged_never_fatal() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    db.exec(
        "CREATE FUNCTION slow_id(bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE
             AS $$ BEGIN PERFORM pg_sleep(3); RETURN $1; END $$;
         REVOKE ALL ON dpop_replays FROM app_user;",
    );
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[
            ("SELECT id FROM gone_table WHERE id = $1", APP, false),
            ("SELECT no_such_column FROM items WHERE id = $1", APP, false),
            ("SELEC id FRM items", APP, false),
            ("SET search_path TO $1", APP, false),
            ("VACUUM items", APP, false),
            ("SELECT count(*) FROM items WHERE $1 IS NULL", APP, false),
            ("SELECT array_length($1, $2)", APP, false),
            (
                "SELECT id FROM events WHERE created_at > now() - interval $1 LIMIT $2",
                APP,
                false,
            ),
            (
                "SELECT id FROM items WHERE id IN ($1 /*, ... */)",
                APP,
                false,
            ),
            ("SELECT id FROM accounts WHERE id = slow_id($1)", APP, false),
            (
                "SELECT id FROM items WHERE id = $1 -- trailing comment",
                APP,
                false,
            ),
            (
                "SELECT seen_at FROM dpop_replays WHERE jti = $1",
                APP,
                false,
            ),
        ],
    );
    let (code, v) = json_run(
        &db,
        dir.path(),
        &["--queries", &q, "--statement-timeout-ms", "300"],
    );
    // Stale statements are error findings.
    assert_eq!(code, 1, "{v:#}");
    let stale = findings(&v, "stale-statement");
    assert_eq!(stale.len(), 2, "{stale:#?}");
    assert!(stale.iter().any(|f| f["relation"] == "gone_table"));
    assert!(stale.iter().all(|f| f["mode"] == "tenant"));

    let skipped = |needle: &str| {
        let s = statement(&v, needle);
        assert_eq!(s["status"], "skipped", "{s:#}");
        s["reason"].as_str().unwrap().to_string()
    };
    assert!(skipped("gone_table").starts_with("stale"));
    assert!(skipped("SELEC id").starts_with("does not parse"));
    assert!(skipped("SET search_path").contains("utility statement (SET)"));
    assert!(skipped("VACUUM").contains("utility statement (VACUUM)"));
    assert!(skipped("array_length").contains("parameter types cannot be inferred"));
    assert!(skipped("slow_id").contains("timed out"));
    // The application role may not read it: skipped in its judged (tenant) mode,
    // though the admin plans exist.
    let refused = skipped("dpop_replays");
    assert!(
        refused.contains("(tenant mode)") && refused.contains("42501"),
        "{refused}"
    );
    let s = statement(&v, "dpop_replays");
    assert!(
        s["plans"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["mode"] == "admin")
    );

    let explained = |needle: &str| {
        let s = statement(&v, needle);
        assert_eq!(s["status"], "explained", "{s:#}");
        assert!(!s["plans"].as_array().unwrap().is_empty());
        s.clone()
    };
    let untyped = explained("$1 IS NULL");
    assert_eq!(
        untyped["planned_query"],
        "SELECT count(*) FROM items WHERE $1::text IS NULL"
    );
    let interval = explained("interval $1");
    assert!(
        interval["planned_query"]
            .as_str()
            .unwrap()
            .contains("$1::interval")
    );
    let limit_plan = interval["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "custom")
        .unwrap();
    assert_eq!(
        limit_plan["params"][1], "20",
        "LIMIT gets a page size (issue 13: a usual page, not 50)"
    );
    explained("IN ($1 /*, ... */)");
    let commented = explained("trailing comment");
    assert!(
        commented["plans"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "generic")
    );
}

#[test]
fn issue5_tenant_role_missing_or_bypassing_rls_is_an_error_with_a_hint() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[("SELECT id FROM items WHERE id = $1", APP, false)],
    );
    let out = db.planck(
        &[
            "explain",
            "--queries",
            &q,
            "--as-tenant",
            "--tenant-role",
            "no_such_role",
        ],
        dir.path(),
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("tenant role no_such_role does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("hint: the policies name: app_user"),
        "{}",
        stderr(&out)
    );

    // The same from planck.toml's [tenant] section.
    std::fs::write(
        dir.path().join("planck.toml"),
        "[tenant]\nrole = \"no_such_role\"\n",
    )
    .unwrap();
    let out = db.planck(&["explain", "--queries", &q, "--as-tenant"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("tenant role no_such_role does not exist"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(dir.path().join("planck.toml")).unwrap();

    db.exec(
        "DO $$ BEGIN CREATE ROLE planck_test_bypass BYPASSRLS;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;",
    );
    let out = db.planck(
        &[
            "explain",
            "--queries",
            &q,
            "--as-tenant",
            "--tenant-role",
            "planck_test_bypass",
        ],
        dir.path(),
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("bypasses row-level security (BYPASSRLS)"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
}

#[test]
fn issue5_as_tenant_without_policies_is_a_clear_error() {
    let db = test_db!();
    // 200 rows: enough for the statement to be judged (`min_table_rows`).
    db.exec(
        "CREATE TABLE t (id bigint PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 200);",
    );
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[("SELECT id FROM t WHERE id = $1", "postgres", true)],
    );
    let out = db.planck(&["explain", "--queries", &q, "--as-tenant"], dir.path());
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("no RLS policies"), "{}", stderr(&out));
    // Without --as-tenant it plans as admin.
    let (code, v) = json_run(&db, dir.path(), &["--queries", &q]);
    assert_eq!(code, 0);
    assert_eq!(v["statements"][0]["mode"], "admin");
}

#[test]
fn issue5_empty_queries_file_explains_nothing_and_passes() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    let q = queries(dir.path(), &[]);
    let (code, v) = json_run(&db, dir.path(), &["--queries", &q, "--as-admin"]);
    assert_eq!(code, 0);
    assert_eq!(v["statements"].as_array().unwrap().len(), 0);
    assert_eq!(v["findings"].as_array().unwrap().len(), 0);
    // Both modes on an empty database: still nothing to do, and no error.
    let out = db.planck(&["explain", "--queries", &q], dir.path());
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("no statements"), "{}", stderr(&out));
    // A missing file is a usage error.
    let out = db.planck(&["explain", "--queries", "nope.toml"], dir.path());
    assert_exit(&out, 2);
}

/// An --output that cannot be written fails before the statements are
/// planned (before the managed cluster starts), naming the path, with exit
/// code 2; a directory by that name too.
#[test]
fn an_unwritable_output_is_refused_before_the_work() {
    let dir = common::project_dir();
    let q = queries(dir.path(), &[("SELECT 1", "postgres", true)]);
    for path in ["no/such/folder/e.json", "."] {
        let out = common::planck_in(
            dir.path(),
            &["explain", "--queries", &q, "--format", "json", "-o", path],
        );
        assert_exit(&out, 2);
        assert_eq!(stdout(&out), "");
        let err = stderr(&out);
        assert!(err.contains(&format!("cannot write {path}: ")), "{err}");
        assert!(
            !dir.path().join(".planck").exists(),
            "a cluster was started"
        );
    }
}

#[test]
fn issue5_ignored_statement_is_skipped_with_its_reason() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    let dir = common::project_dir();
    let q = queries(dir.path(), &[PLANTED_SEQ_SCAN]);
    // --min-rows: the seq scan on devices (about 6,000 rows) must count.
    let args = ["--queries", &q, "--min-rows", MIN_ROWS_DEVICES];
    let (code, _) = json_run(&db, dir.path(), &args);
    assert_eq!(code, 1);
    let text = std::fs::read_to_string(&q).unwrap().replace(
        "bypass_rls = true\n",
        "bypass_rls = true\nignore = \"device lists are tiny\"\n",
    );
    std::fs::write(&q, text).unwrap();
    let (code, v) = json_run(&db, dir.path(), &args);
    assert_eq!(code, 0);
    assert_eq!(v["statements"][0]["status"], "skipped");
    assert_eq!(
        v["statements"][0]["reason"],
        "ignored: device lists are tiny"
    );
}

#[test]
fn issue5_from_stats_reads_pg_stat_statements_or_says_it_cannot() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    let out = db.planck(&["explain", "--from-stats", "--as-admin"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("pg_stat_statements is not available"), "{err}");
    assert!(err.contains("hint:"), "{err}");

    // The test cluster preloads pg_stat_statements (for `planck record`).
    seed_bundled_example(&db);
    db.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    db.exec("SELECT id, name FROM devices WHERE user_id = 42");
    // --min-rows: the seq scan on devices (about 6,000 rows) must count.
    let (code, v) = json_run(
        &db,
        dir.path(),
        &["--from-stats", "--min-rows", MIN_ROWS_DEVICES],
    );
    assert_eq!(code, 1, "{v:#}");
    let s = statement(&v, "FROM devices WHERE user_id = $1");
    assert_eq!(s["status"], "explained");
    assert_eq!(
        s["mode"], "admin",
        "recorded by a superuser: judged as admin"
    );
    let seq = findings(&v, "seq-scan");
    assert!(
        seq.iter()
            .any(|f| f["statement_id"] == s["id"] && f["relation"] == "devices")
    );
    // Utility statements recorded alongside are skipped, not errors.
    assert!(v["statements"].as_array().unwrap().iter().any(|s| {
        s["status"] == "skipped"
            && s["reason"]
                .as_str()
                .unwrap()
                .starts_with("utility statement")
    }));
}

#[test]
fn issue5_writes_are_never_executed_even_with_analyze() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[
            (
                "INSERT INTO rate_limits (key, hits) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET hits = rate_limits.hits + $3",
                APP,
                false,
            ),
            ("DELETE FROM items WHERE pouch_id = $1", APP, false),
            (
                "UPDATE events SET kind = $1 WHERE account_id = $2",
                "postgres",
                true,
            ),
            PLANTED_SEQ_SCAN,
        ],
    );
    let count = || {
        db.query_strings(
            "SELECT (SELECT sum(hits) FROM rate_limits) || '/' || (SELECT count(*) FROM items) \
             || '/' || (SELECT count(*) FROM events WHERE kind = 'item.updated')",
        )
    };
    let before = count();
    for extra in [None, Some("--analyze")] {
        // --min-rows: the filter on devices (about 6,000 rows) removes fewer
        // rows than the default threshold.
        let mut args = vec![
            "--queries",
            q.as_str(),
            "--all-modes",
            "--min-rows",
            MIN_ROWS_DEVICES,
        ];
        args.extend(extra);
        let (_, v) = json_run(&db, dir.path(), &args);
        let plans: Vec<&Value> = v["statements"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["plans"].as_array().unwrap())
            .collect();
        assert!(plans.len() >= 16, "{v:#}");
        let analyzed = plans
            .iter()
            .any(|p| p["plan"][0].get("Execution Time").is_some());
        assert_eq!(analyzed, extra.is_some());
        // Measured rows: only EXPLAIN ANALYZE shows the filter discarding devices.
        let wasteful = findings(&v, "filter-removes-most-rows");
        let modes: Vec<&Value> = wasteful.iter().map(|f| &f["mode"]).collect();
        if extra.is_some() {
            assert_eq!(
                modes,
                ["tenant", "admin"],
                "--all-modes judges both: {wasteful:#?}"
            );
        } else {
            assert!(wasteful.is_empty(), "{wasteful:#?}");
        }
        assert!(wasteful.iter().all(|f| f["relation"] == "devices"));
        assert_eq!(count(), before, "a write was executed ({extra:?})");
    }
}

/// New-user review: `--tenant-id abc` (not the key's type) exited 0 with
/// every statement skipped ("invalid input syntax"), and `--tenant-id
/// 999999` (a tenant owning no rows) exited 0 planning an empty tenant;
/// `--tenant-setting app.nope` blamed empty tables on seeded data. All
/// three are usage errors (exit 2) before planning, with a hint.
#[test]
fn review_bad_tenant_id_or_setting_is_a_usage_error() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[("SELECT id, title FROM items WHERE id = $1", APP, false)],
    );
    let run = |extra: &[&str]| {
        let mut a = vec!["explain", "--queries", &q, "--as-tenant"];
        a.extend_from_slice(extra);
        let out = db.planck(&a, dir.path());
        (out.status.code(), stderr(&out), stdout(&out))
    };

    let (code, err, out) = run(&["--tenant-id", "abc"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "planned anyway: {out}");
    for word in [
        "tenant id abc",
        "--tenant-id",
        "app.account_id",
        "bigint",
        "items",
    ] {
        assert!(err.contains(word), "no {word:?} in: {err}");
    }
    assert!(
        err.contains("hint: the heaviest tenant is 1; leave --tenant-id out"),
        "{err}"
    );

    let (code, err, out) = run(&["--tenant-id", "999999"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "planned anyway: {out}");
    for word in [
        "tenant id 999999",
        "owns no rows",
        "app.account_id",
        "items",
    ] {
        assert!(err.contains(word), "no {word:?} in: {err}");
    }
    assert!(err.contains("hint: the heaviest tenant is 1"), "{err}");

    // The same from planck.toml's [tenant] section.
    std::fs::write(dir.path().join("planck.toml"), "[tenant]\nid = \"abc\"\n").unwrap();
    let (code, err, _) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("tenant id abc ([tenant] id in planck.toml)"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("planck.toml"),
        "[tenant]\nid = \"999999\"\n",
    )
    .unwrap();
    let (code, err, _) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("owns no rows"), "{err}");
    std::fs::remove_file(dir.path().join("planck.toml")).unwrap();

    // A setting no policy reads: named, with the ones they do read.
    let (code, err, _) = run(&["--tenant-setting", "app.nope"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no row-level security policy reads app.nope"),
        "{err}"
    );
    assert!(
        err.contains("hint: the policies read app.account_id"),
        "{err}"
    );
    assert!(!err.contains("empty"), "{err}");

    // A valid tenant owning rows still plans, as chosen.
    let (code, v) = json_run(
        &db,
        dir.path(),
        &["--queries", &q, "--as-tenant", "--tenant-id", "7"],
    );
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["summary"]["skipped"], 0, "{v:#}");
}

/// New-user review: `--source /nonexistent` was accepted silently, and
/// progress said "planning 1 statements".
#[test]
fn review_missing_source_is_an_error_and_counts_are_singular() {
    let db = test_db!(migrated);
    // Enough rows in the table read for the statement to be judged.
    db.exec(
        "INSERT INTO accounts (id, name, slug) VALUES (1, 'a', 'a');
         INSERT INTO pouches (id, account_id, name) VALUES (1, 1, 'p');
         INSERT INTO items (account_id, pouch_id, slug, title)
              SELECT 1, 1, 's' || g, 'item ' || g FROM generate_series(1, 200) g;",
    );
    let dir = common::project_dir();
    let q = queries(
        dir.path(),
        &[(
            "SELECT id, title FROM items WHERE id = $1",
            "postgres",
            true,
        )],
    );
    let out = db.planck(
        &[
            "explain",
            "--queries",
            &q,
            "--as-admin",
            "--source",
            "/nonexistent",
        ],
        dir.path(),
    );
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("/nonexistent"), "{}", stderr(&out));
    assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));

    // An existing directory is accepted.
    let out = db.planck(
        &["explain", "--queries", &q, "--as-admin", "--source", "."],
        dir.path(),
    );
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("planning 1 statement ("), "{err}");
    assert!(err.contains("planned 1 statement in"), "{err}");
    assert!(!err.contains("1 statements"), "{err}");
    let text = stdout(&out);
    // Unused indexes are info findings: the count, not its value, is the point.
    assert!(
        text.contains("1 statement explained, 0 skipped, "),
        "{text}"
    );
    assert!(text.contains("findings (0 new errors)"), "{text}");
}

/// Issue 35, 1: plans made on tables that hold nothing say nothing about
/// production. The example migrated but not seeded is refused (exit 2,
/// naming `planck seed`); with `--allow-unseeded` every statement planned
/// is `not_judged`, naming its empty tables, and nothing is found. Seeded,
/// then one table emptied: the statements reading it are not judged, the
/// others are, and no index of that table is called unused.
#[test]
fn issue35_unseeded_data_is_refused_or_not_judged_never_judged() {
    let db = test_db!(migrated);
    let dir = common::project_dir();
    let q = recorded_queries_plus(dir.path(), &[]);
    // Both modes: the tenant cannot be chosen from empty tables.
    let out = db.planck(&["explain", "--queries", &q], dir.path());
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("planck seed"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    // Admin mode plans, and then judges nothing.
    let out = db.planck(&["explain", "--queries", &q, "--as-admin"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("no statement can be judged on this data")
            && err.contains("all 22 planned")
            && err.contains("accounts: 0 rows")
            && err.contains("planck seed"),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));

    let (code, v) = json_run(&db, dir.path(), &["--queries", &q, "--allow-unseeded"]);
    assert_eq!(code, 0, "{v:#}");
    let statements = v["statements"].as_array().unwrap();
    let not_judged: Vec<&Value> = statements
        .iter()
        .filter(|s| s["status"] == "not_judged")
        .collect();
    assert!(!not_judged.is_empty(), "{v:#}");
    assert!(
        statements.iter().all(|s| s["status"] != "explained"),
        "{v:#}"
    );
    for s in &not_judged {
        let why = s["reason"].as_str().unwrap();
        assert!(
            why.starts_with("not judged: ") && why.contains(" holds 0 rows"),
            "{s:#}"
        );
        assert!(!s["plans"].as_array().unwrap().is_empty(), "{s:#}");
    }
    assert_eq!(v["findings"].as_array().unwrap().len(), 0, "{v:#}");
    assert_eq!(v["summary"]["not_judged"], not_judged.len());
    assert_eq!(v["summary"]["explained"], 0);

    seed_bundled_example(&db);
    db.exec("DELETE FROM dpop_replays; ANALYZE dpop_replays;");
    let (_, v) = json_run(&db, dir.path(), &["--queries", &q]);
    let statements = v["statements"].as_array().unwrap();
    let reads_dpop = |s: &&Value| s["query"].as_str().unwrap().contains("dpop_replays");
    let unjudged: Vec<&Value> = statements.iter().filter(reads_dpop).collect();
    assert!(!unjudged.is_empty(), "{v:#}");
    for s in &unjudged {
        assert_eq!(s["status"], "not_judged", "{s:#}");
        assert_eq!(
            s["reason"], "not judged: dpop_replays holds 0 rows",
            "{s:#}"
        );
    }
    assert!(
        statements
            .iter()
            .filter(|s| !reads_dpop(s))
            .any(|s| s["status"] == "explained"),
        "{v:#}"
    );
    assert_eq!(v["summary"]["not_judged"], unjudged.len());
    for f in v["findings"].as_array().unwrap() {
        assert_ne!(f["relation"], "dpop_replays", "{f:#}");
    }
}
