//! Issue 10 section 3: plans judged under the settings production plans
//! with, not the managed cluster's defaults. `SET ROLE` does not apply
//! `ALTER ROLE/DATABASE ... SET`, so tenant mode applies them itself;
//! `[explain] settings` and `--settings-from URL` (production's pg_settings)
//! are applied with SET LOCAL in every mode. All are said in the output.
//! And a schema per tenant is detected and said to be unsupported.

use crate::common;

use std::path::Path;

use common::explain_json::{Report, Statement};
use common::{TestDb, stderr, stdout};

/// An RLS table the tenant role reads, with no index on `v` (only the key).
fn schema(db: &TestDb) {
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fnstmt_app') THEN
             CREATE ROLE fnstmt_app NOLOGIN;
           END IF;
         END $$;
         CREATE TABLE items (id bigint PRIMARY KEY, tenant_id bigint NOT NULL, v integer NOT NULL);
         INSERT INTO items SELECT g, g % 50, g % 997 FROM generate_series(1, 30000) g;
         ALTER TABLE items ENABLE ROW LEVEL SECURITY;
         CREATE POLICY by_tenant ON items
           USING (tenant_id = current_setting('app.tenant_id', true)::bigint);
         GRANT SELECT ON items TO fnstmt_app;
         ANALYZE items",
    );
}

fn queries(dir: &Path) -> String {
    let path = dir.join("queries.toml");
    std::fs::write(
        &path,
        "format_version = 2\n\n[[statement]]\nrole = \"fnstmt_app\"\nbypass_rls = false\n\
         query = \"SELECT id FROM items WHERE v = $1\"\n",
    )
    .unwrap();
    path.display().to_string()
}

fn run(db: &TestDb, dir: &Path, extra: &[&str]) -> (i32, Option<Report>, String) {
    let q = queries(dir);
    let mut args = vec![
        "--format",
        "json",
        "explain",
        "--all-modes",
        "--queries",
        &q,
    ];
    args.extend_from_slice(extra);
    let out = db.planck(&args, dir);
    let code = out.status.code().unwrap_or(-1);
    (code, serde_json::from_str(&stdout(&out)).ok(), stderr(&out))
}

fn items(r: &Report) -> &Statement {
    let s = r.statement("FROM items");
    assert_eq!(s.status, "explained", "{s:#?}");
    s
}

/// Whether every plan of `s` in `mode` was made with `enable_seqscan = off`:
/// `items` has no index on `v`, so its Seq Scan is kept, and marked so by
/// the server: costed 1.0e10 more up to PostgreSQL 17, `"Disabled": true`
/// from 18 on (which counts disabled nodes instead of adding to the cost).
fn seqscan_disabled(s: &Statement, mode: &str) -> bool {
    let plans: Vec<&serde_json::Value> = s
        .plans
        .iter()
        .filter(|p| p.mode == mode)
        .map(|p| &p.plan[0]["Plan"])
        .collect();
    assert!(!plans.is_empty(), "no {mode} plan: {s:#?}");
    plans.iter().all(|p| {
        p["Total Cost"].as_f64().unwrap() >= 1.0e10 || p["Disabled"] == serde_json::json!(true)
    })
}

#[test]
fn issue10_set_role_applies_the_roles_and_databases_alter_settings() {
    let db = test_db!();
    schema(&db);
    let dir = common::project_dir();
    // Before: the managed defaults in both modes.
    let (code, r, err) = run(&db, dir.path(), &[]);
    let r = r.unwrap_or_else(|| panic!("exit {code}: {err}"));
    assert!(!seqscan_disabled(items(&r), "tenant") && !seqscan_disabled(items(&r), "admin"));

    db.exec(&format!(
        "ALTER ROLE fnstmt_app IN DATABASE {0} SET enable_seqscan = off;
         ALTER DATABASE {0} SET random_page_cost = 3.5",
        db.name
    ));
    let (code, r, err) = run(&db, dir.path(), &[]);
    let r = r.unwrap_or_else(|| panic!("exit {code}: {err}"));
    let s = items(&r);
    // The role's setting is applied after SET ROLE, in tenant mode only.
    assert!(seqscan_disabled(s, "tenant"), "{s:#?}");
    assert!(!seqscan_disabled(s, "admin"), "{s:#?}");
    let notes = s.notes.join("\n");
    assert!(
        notes.contains(&format!(
            "tenant mode planned with SET LOCAL random_page_cost = 3.5 (ALTER DATABASE {0} SET), \
             enable_seqscan = off (ALTER ROLE fnstmt_app IN DATABASE {0} SET)",
            db.name
        )),
        "{notes}"
    );
    assert!(!notes.contains("admin mode planned"), "{notes}");
    assert!(
        err.contains("planning in tenant mode with SET LOCAL"),
        "{err}"
    );
}

#[test]
fn issue10_explain_settings_in_planck_toml_are_applied_while_planning() {
    let db = test_db!();
    schema(&db);
    let dir = common::project_dir();
    std::fs::write(
        dir.path().join("planck.toml"),
        "[explain]\nsettings = { enable_seqscan = false, random_page_cost = 1.1, work_mem = \"16MB\" }\n",
    )
    .unwrap();
    let (code, r, err) = run(&db, dir.path(), &[]);
    let r = r.unwrap_or_else(|| panic!("exit {code}: {err}"));
    let s = items(&r);
    assert!(
        seqscan_disabled(s, "tenant") && seqscan_disabled(s, "admin"),
        "{s:#?}"
    );
    let notes = s.notes.join("\n");
    for mode in ["tenant", "admin"] {
        assert!(
            notes.contains(&format!(
                "{mode} mode planned with SET LOCAL enable_seqscan = off ([explain] settings), \
                 random_page_cost = 1.1 ([explain] settings), work_mem = 16MB ([explain] settings)"
            )),
            "{notes}"
        );
    }
    assert!(
        err.contains("planning with SET LOCAL enable_seqscan = off"),
        "{err}"
    );

    // A name the server does not know is a configuration error, not a run of failures.
    std::fs::write(
        dir.path().join("planck.toml"),
        "[explain]\nsettings = { random_page_kost = 1.1 }\n",
    )
    .unwrap();
    let (code, _, err) = run(&db, dir.path(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("random_page_kost"), "{err}");
}

#[test]
fn issue10_settings_from_reads_productions_pg_settings() {
    let db = test_db!("from");
    schema(&db);
    let prod = test_db!("prod");
    prod.exec(&format!(
        "ALTER DATABASE {} SET enable_seqscan = off",
        prod.name
    ));
    let dir = common::project_dir();
    let (code, r, err) = run(&db, dir.path(), &["--settings-from", &prod.url]);
    let r = r.unwrap_or_else(|| panic!("exit {code}: {err}"));
    let s = items(&r);
    assert!(
        seqscan_disabled(s, "tenant") && seqscan_disabled(s, "admin"),
        "{s:#?}"
    );
    let notes = s.notes.join("\n");
    assert!(
        notes.contains(
            "admin mode planned with SET LOCAL enable_seqscan = off (production's pg_settings)"
        ),
        "{notes}"
    );
    // Only what differs from the local server is applied.
    assert!(!notes.contains("random_page_cost"), "{notes}");
    // Read-only: production is left as it was.
    assert_eq!(
        prod.query_strings(&format!(
            "SELECT count(*)::text FROM pg_db_role_setting d JOIN pg_database b ON b.oid = d.setdatabase
              WHERE b.datname = '{}'",
            prod.name
        )),
        vec!["1".to_string()]
    );
}

#[test]
fn issue10_schema_per_tenant_is_detected_and_said_unsupported() {
    let db = test_db!();
    let dir = common::project_dir();
    let path = dir.path().join("queries.toml");
    std::fs::write(
        &path,
        "format_version = 2\n\n[[statement]]\nquery = \"SELECT * FROM acme.orders WHERE id = $1\"\n",
    )
    .unwrap();
    let q = path.display().to_string();
    let make = |schema: &str| {
        db.exec(&format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.orders (id bigint PRIMARY KEY, total numeric);
             CREATE TABLE {schema}.customers (id bigint PRIMARY KEY, name text)"
        ))
    };
    make("acme");
    make("globex");
    // The tables are empty: what is judged is the schema layout, not plans.
    let args = [
        "--format",
        "json",
        "explain",
        "--queries",
        &q,
        "--allow-unseeded",
    ];
    let out = db.planck(&args, dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("schema per tenant"),
        "{}",
        stderr(&out)
    );

    make("initech");
    let out = db.planck(&args, dir.path());
    let err = stderr(&out);
    // Said clearly, and the run still plans.
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("schemas acme, globex, initech hold the same tables")
            && err.contains("schema per tenant")
            && err.contains("not support"),
        "{err}"
    );
    let r: Report = serde_json::from_str(&stdout(&out)).unwrap();
    let s = r.statement("acme.orders");
    assert_eq!(s.status, "not_judged", "{s:#?}");
    assert!(s.planned() && !s.plans.is_empty(), "{s:#?}");
}

/// planck's own reads of the application's tables (parameter samples, the
/// tenant count) start at the table's first page, in the backend alone. A
/// seq scan of a table above a quarter of shared_buffers otherwise starts
/// where the last scan of it left off (`synchronize_seqscans`): a sample's
/// first 5,000 rows changed with whatever had scanned the table before, and
/// a scan that could stop after its first pages read the whole table. The
/// session's own settings are left as they were.
#[test]
fn own_scans_start_at_the_first_page_whatever_scanned_before() {
    let db = test_db!();
    // About 95 MB: above a quarter of the test cluster's shared_buffers.
    db.exec(
        "CREATE TABLE big (n int, pad text);
         INSERT INTO big SELECT g, repeat('x', 150) FROM generate_series(1, 500000) g;
         ANALYZE big",
    );
    let conn = db.conn();
    common::block_on(async move {
        let client = conn.connect().await.unwrap();
        // A scan left midway reports where it is as it goes.
        client
            .batch_execute(
                "BEGIN; DECLARE c NO SCROLL CURSOR FOR SELECT n FROM big; \
                 MOVE 300000 IN c; COMMIT",
            )
            .await
            .unwrap();
        let plain: i32 = client
            .query_one("SELECT n FROM big LIMIT 1", &[])
            .await
            .unwrap()
            .get(0);
        assert!(
            plain > 1,
            "premise: a plain scan starts where the cursor left off, got row {plain}"
        );
        let rows =
            planck::session::query_from_first_page(&client, "SELECT n FROM big LIMIT 1", &[])
                .await
                .unwrap();
        assert_eq!(rows[0].get::<_, i32>(0), 1);
        let after = client
            .query_one(
                "SELECT current_setting('synchronize_seqscans'), \
                        current_setting('max_parallel_workers_per_gather')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(after.get::<_, String>(0), "on");
        assert_ne!(after.get::<_, String>(1), "0");
        // A failing read ends its transaction too: the next statement runs.
        assert!(
            planck::session::query_from_first_page(&client, "SELECT n FROM missing", &[])
                .await
                .is_err()
        );
        let one: i32 = client.query_one("SELECT 1", &[]).await.unwrap().get(0);
        assert_eq!(one, 1);
    });
}

/// A check's own knob (`[explain.checks.rls-policy] cost_ratio`, declared in
/// the check's file) reaches the check through planck.toml, and the name it
/// had before (`[explain] rls_cost_ratio`) still does: the tenant plan of
/// `items` (a Seq Scan with the policy's filter on top of the admin plan's)
/// costs more than the admin plan, but nowhere near the default 10x.
#[test]
fn a_checks_knob_in_planck_toml_reaches_the_check_and_the_old_key_still_does() {
    let db = test_db!();
    // `schema`'s table under a role of this test's own (roles are the
    // cluster's: two tests creating one at once would race).
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'knob_app') THEN
             CREATE ROLE knob_app NOLOGIN;
           END IF;
         END $$;
         CREATE TABLE items (id bigint PRIMARY KEY, tenant_id bigint NOT NULL, v integer NOT NULL);
         INSERT INTO items SELECT g, g % 50, g % 997 FROM generate_series(1, 30000) g;
         ALTER TABLE items ENABLE ROW LEVEL SECURITY;
         CREATE POLICY by_tenant ON items
           USING (tenant_id = current_setting('app.tenant_id', true)::bigint);
         GRANT SELECT ON items TO knob_app;
         ANALYZE items",
    );
    let dir = common::project_dir();
    let queries = dir.path().join("queries.toml");
    std::fs::write(
        &queries,
        "format_version = 2\n\n[[statement]]\nrole = \"knob_app\"\nbypass_rls = false\n\
         query = \"SELECT id FROM items WHERE v = $1\"\n",
    )
    .unwrap();
    let q = queries.display().to_string();
    let costly = |toml: &str| {
        std::fs::write(dir.path().join("planck.toml"), toml).unwrap();
        let args = [
            "--format",
            "json",
            "explain",
            "--all-modes",
            "--queries",
            &q,
        ];
        let out = db.planck(&args, dir.path());
        let r: Report =
            serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        r.findings
            .iter()
            .filter(|f| f.check == "rls-policy" && f.message.contains("x the admin plan"))
            .count()
    };
    assert_eq!(costly(""), 0, "the default ratio, 10");
    assert_eq!(costly("[explain.checks.rls-policy]\ncost_ratio = 1\n"), 1);
    assert_eq!(costly("[explain]\nrls_cost_ratio = 1.0\n"), 1);
    // Both set: the check's own table wins.
    assert_eq!(
        costly("[explain]\nrls_cost_ratio = 1.0\n\n[explain.checks.rls-policy]\ncost_ratio = 50\n"),
        0
    );
}

/// A knob the check does not have is refused at its planck.toml line before
/// any database is touched (there is none here), naming the check's knobs.
#[test]
fn a_knob_the_check_does_not_have_is_an_error_at_its_line() {
    let dir = common::project_dir();
    std::fs::write(
        dir.path().join("planck.toml"),
        "[explain]\nmin_rows = 5\n\n[explain.checks.rls-policy]\ncost_ration = 3\n",
    )
    .unwrap();
    let out = common::planck_cmd(dir.path())
        .args(["explain", "--queries", "none.toml"])
        .output()
        .unwrap();
    common::assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("planck.toml:5"), "{err}");
    assert!(
        err.contains("cost_ration") && err.contains("cost_ratio = 10.0"),
        "{err}"
    );
}
