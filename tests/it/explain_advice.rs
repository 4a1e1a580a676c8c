//! Issue 10 §4, the fix proven on the data: `planck explain` proposes one
//! index per finding a missing index explains, builds it inside the
//! rolled-back planning transaction (`--force`: the test database is not
//! one planck manages), re-plans, and reports it only when the plan uses
//! it. `--write-advice` writes the verified indexes for `planck migrate`.

use crate::common;

use std::path::Path;

use common::{TestDb, assert_exit, stderr, stdout};
use serde_json::Value;

/// The bundled example at CI scale (about 6,000 devices), as tests/it/explain.rs seeds it.
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

/// The missing index of the bundled example: a job listing a user's devices.
const DEVICES: &str = "SELECT id, name FROM devices WHERE user_id = $1";

/// The planted case where the obvious index is not used: `active` is true
/// on 95% of the rows, so an index on it would read nearly all the table.
/// (A 50/50 column is not enough: on a narrow table the planner takes a
/// bitmap scan of half the rows over the seq scan.)
const HALF: &str = "SELECT id, note FROM flags WHERE active = true";

/// The same lookup by the application, under row-level security: the
/// policy's `account_id` leads the index.
const TENANT_DEVICES: &str = "SELECT id, name, last_seen_at FROM devices WHERE user_id = $1";

fn queries(dir: &Path) -> String {
    let mut text = String::from("format_version = 1\n");
    for (q, role, bypass) in [
        (DEVICES, "postgres", true),
        (HALF, "postgres", true),
        (TENANT_DEVICES, "app_user", false),
    ] {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"{role}\"\nbypass_rls = {bypass}\nquery = '''\n{q}\n'''\n"
        ));
    }
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn explain(db: &TestDb, dir: &Path, format: &str, extra: &[&str]) -> std::process::Output {
    let q = queries(dir);
    let mut args = vec![
        "--format",
        format,
        "explain",
        "--queries",
        &q,
        "--min-rows",
        "1000",
    ];
    args.extend_from_slice(extra);
    db.planck(&args, dir)
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not JSON ({e})\n{}\n{}", stdout(out), stderr(out)))
}

/// The seq-scan finding on `table`, for the statement `query`.
fn seq_scan<'a>(v: &'a Value, query: &str) -> Option<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "seq-scan" && f["query"] == query)
}

#[test]
fn issue10_advice_is_verified_on_the_data_written_applied_and_the_finding_goes() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    db.exec(
        "CREATE TABLE public.flags (id bigint PRIMARY KEY, active boolean NOT NULL, note text);
         INSERT INTO public.flags SELECT i, i % 20 <> 0, 'n' || i FROM generate_series(1, 20000) i;
         ANALYZE public.flags;",
    );
    // A project with the example's migrations, where the advice file goes.
    let dir = common::project_dir();
    let migrations = dir.path().join("migrations");
    std::fs::create_dir(&migrations).unwrap();
    for f in std::fs::read_dir(common::repo_root().join("migrations")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, migrations.join(f.file_name().unwrap())).unwrap();
    }
    let advice_file = migrations.join("0099_advice.sql");

    let out = explain(
        &db,
        dir.path(),
        "json",
        &["--force", "--write-advice", advice_file.to_str().unwrap()],
    );
    assert_exit(&out, 1);
    let v = json(&out);

    // devices(user_id): proposed, built, re-planned, used.
    let dev = seq_scan(&v, DEVICES).unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(dev["relation"], "devices");
    let a = &dev["advice"];
    assert_eq!(a["sql"], "CREATE INDEX ON devices (user_id)", "{dev:#}");
    assert_eq!(a["verified"], true);
    assert_eq!(a["index"], "real");
    assert_eq!(a["node_before"], "Seq Scan");
    assert!(
        a["node_after"].as_str().unwrap().contains("Index Scan"),
        "{a:#}"
    );
    let (before, after) = (
        a["cost_before"].as_f64().unwrap(),
        a["cost_after"].as_f64().unwrap(),
    );
    assert!(after < before, "{a:#}");
    // The cost before is the finding's own plan's.
    let stmt = v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["query"] == DEVICES)
        .unwrap();
    let plan = &stmt["plans"][dev["node"]["plan"].as_u64().unwrap() as usize];
    assert_eq!(plan["plan"][0]["Plan"]["Total Cost"].as_f64(), Some(before));

    // flags(active): the seq scan is reported, the index would not be used:
    // no advice.
    let half = seq_scan(&v, HALF).unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(half["relation"], "flags");
    assert!(half.get("advice").is_none(), "{half:#}");

    // Under RLS: the tenant column first, verified in the tenant plan; the
    // rls-policy finding about that column is served by the same index.
    let tenant = seq_scan(&v, TENANT_DEVICES).unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(tenant["mode"], "tenant");
    assert_eq!(
        tenant["advice"]["sql"], "CREATE INDEX ON devices (account_id, user_id)",
        "{tenant:#}"
    );
    assert_eq!(tenant["advice"]["verified"], true);
    let policy = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["check"] == "rls-policy"
                && f["relation"] == "devices"
                && f["message"].as_str().unwrap().contains("account_id")
        })
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(
        policy["advice"]["sql"], tenant["advice"]["sql"],
        "{policy:#}"
    );

    // Nothing stays behind: the trial index was rolled back.
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_indexes WHERE indexname = 'planck_advice_trial'"),
        ["0"]
    );

    // The file: the header, one CONCURRENTLY statement, naming its finding.
    let text = std::fs::read_to_string(&advice_file).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(planck::migrate::NO_TRANSACTION));
    assert_eq!(
        planck::migrate::NO_TRANSACTION,
        planck::explain::advice::NO_TRANSACTION
    );
    let creates: Vec<&str> = text.lines().filter(|l| l.starts_with("CREATE")).collect();
    assert_eq!(
        creates,
        [
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS devices_account_id_user_id_idx \
             ON devices (account_id, user_id);",
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS devices_user_id_idx ON devices (user_id);"
        ],
        "{text}"
    );
    let tenant_id = v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["query"] == TENANT_DEVICES)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains(&format!(
            "-- serves seq-scan statement {tenant_id} (tenant mode"
        )) && text.contains("-- serves rls-policy (tenant mode"),
        "one index, both findings named: {text}"
    );
    assert!(
        text.contains(&format!(
            "-- serves seq-scan statement {} (admin mode",
            stmt["id"].as_str().unwrap()
        )),
        "{text}"
    );

    // The rendered line (the unit test snapshots its exact form).
    let md = explain(&db, dir.path(), "markdown", &["--force"]);
    assert_exit(&md, 1);
    let md = stdout(&md);
    assert!(
        md.contains("with `CREATE INDEX ON devices (user_id)`: Seq Scan "),
        "{md}"
    );
    assert!(md.contains("(cost), verified"), "{md}");

    // planck migrate applies it (outside a transaction: CONCURRENTLY).
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings(
            "SELECT i.indisvalid::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE c.relname = 'devices_user_id_idx'"
        ),
        ["true"]
    );
    assert_eq!(
        db.query_strings("SELECT count(*) FROM planck_migrations WHERE name = '0099_advice.sql'"),
        ["1"]
    );

    // And the finding is gone; the flags one stays, still without advice.
    let out = explain(&db, dir.path(), "json", &["--force"]);
    let v = json(&out);
    assert!(seq_scan(&v, DEVICES).is_none(), "{v:#}");
    assert!(seq_scan(&v, TENANT_DEVICES).is_none(), "{v:#}");
    assert!(seq_scan(&v, HALF).is_some_and(|f| f.get("advice").is_none()));
}

/// Without --force on a database planck does not manage, and without
/// hypopg, there is no advice, and a note says why.
#[test]
fn issue10_no_advice_on_an_unmanaged_database_without_hypopg_says_why() {
    let db = test_db!(migrated);
    seed_bundled_example(&db);
    db.exec("CREATE TABLE public.flags (id bigint PRIMARY KEY, active boolean, note text)");
    let has_hypopg = db
        .query_strings("SELECT count(*) FROM pg_available_extensions WHERE name = 'hypopg'")
        == ["1"];
    let dir = common::project_dir();
    let out = explain(&db, dir.path(), "json", &[]);
    assert_exit(&out, 1);
    let v = json(&out);
    let dev = seq_scan(&v, DEVICES).unwrap();
    if has_hypopg {
        assert_eq!(dev["advice"]["index"], "hypothetical", "{dev:#}");
        assert_eq!(dev["advice"]["verified"], true);
    } else {
        assert!(dev.get("advice").is_none(), "{dev:#}");
        assert!(
            stderr(&out).contains("no hypopg extension"),
            "{}",
            stderr(&out)
        );
    }
    // --no-advice: not even tried.
    let out = explain(&db, dir.path(), "json", &["--force", "--no-advice"]);
    let v = json(&out);
    assert!(seq_scan(&v, DEVICES).unwrap().get("advice").is_none());
    assert!(!stderr(&out).contains("advice:"), "{}", stderr(&out));
}

/// `planck --format json explain --force` of one statement, recorded as the
/// admin (bypassing RLS): the report (exit 0 or 1).
fn explain_one(db: &TestDb, query: &str) -> Value {
    let dir = common::project_dir();
    let q = dir.path().join("q.toml");
    std::fs::write(
        &q,
        format!(
            "format_version = 2\n\n[[statement]]\nrole = \"planck\"\nbypass_rls = true\ncalls = 100\n\
             query = \"{query}\"\n"
        ),
    )
    .unwrap();
    let out = db.planck(
        &[
            "--format",
            "json",
            "explain",
            "--force",
            "--queries",
            q.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Issue 31: PostgreSQL 18 answers a condition on an index's second column
/// with a skip scan when the leading column has few values: one descent per
/// value, a sliver of the index. `full-index-scan` must not fire on it (nor
/// `seq-scan`: the server does not scan the table). Before 18 the same query
/// reads the table or the whole index, so the test is for 18 only.
#[test]
fn a_skip_scan_on_18_is_not_a_full_index_scan() {
    let major = common::server_major();
    if major < 18 {
        crate::skip!(
            NotApplicable,
            "btree skip scan is PostgreSQL 18+ (this server is {major})"
        );
    }
    let db = test_db!();
    db.exec(
        "CREATE TABLE items (account_id int NOT NULL, pouch_id int NOT NULL, title text NOT NULL);
         CREATE INDEX items_account_pouch ON items (account_id, pouch_id);
         INSERT INTO items SELECT g % 8, g / 8, 'item ' || g FROM generate_series(1, 200000) g;
         ANALYZE items;",
    );
    let v = explain_one(&db, "SELECT title FROM items WHERE pouch_id = $1");
    // The plan is the index's: the skip scan, judged by its own cost.
    assert!(
        v.to_string().contains("items_account_pouch"),
        "the plan does not use the index: {v:#}"
    );
    let findings = v["findings"].as_array().unwrap();
    for f in findings {
        assert!(
            f["check"] != "full-index-scan" && f["check"] != "seq-scan",
            "{f:#}"
        );
    }
}

/// Issue 31: PostgreSQL 18's virtual generated columns (its default kind)
/// cannot be indexed, and the planner reads them as their expression (the
/// plan's filter says `lower(people.email)`): the finding stands, and no
/// advice ever names the virtual column. Before 18 there are none: skipped.
#[test]
fn no_advice_indexes_a_virtual_generated_column() {
    let major = common::server_major();
    if major < 18 {
        crate::skip!(
            NotApplicable,
            "virtual generated columns are PostgreSQL 18+ (this server is {major})"
        );
    }
    let db = test_db!();
    db.exec(
        "CREATE TABLE people (id bigint PRIMARY KEY, email text NOT NULL,
                              email_lower text GENERATED ALWAYS AS (lower(email)) VIRTUAL);
         INSERT INTO people SELECT g, 'User' || g || '@x.com' FROM generate_series(1, 60000) g;
         ANALYZE people;",
    );
    let v = explain_one(&db, "SELECT id FROM people WHERE email_lower = $1");
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["check"] == "seq-scan"), "{v:#}");
    for f in findings {
        assert!(
            !f["advice"].to_string().contains("email_lower"),
            "advice on the virtual column: {f:#}"
        );
    }
}
