//! `planck stats capture` and `planck stats compare` (issue 49, points 1,
//! 2 and 4): production's planner statistics into a file, read through
//! catalogs and statistics views only, values shaped by default; and the
//! fidelity report of a database against such a file.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, assert_exit, planck_cmd, stderr, stdout};

/// Runs planck on `url` in `dir`.
fn planck_on(url: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    planck_cmd(dir)
        .args(["--database-url", url])
        .args(args)
        .output()
        .unwrap()
}

pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

pub(crate) fn table<'a>(file: &'a Value, name: &str) -> &'a Value {
    file["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no table {name} in {file:#}"))
}

pub(crate) fn column<'a>(file: &'a Value, table_name: &str, name: &str) -> &'a Value {
    table(file, table_name)["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no column {table_name}.{name}"))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// A small "production": a status enum at 95/4/1 %, a text column whose
/// most common value is the canary, a unique e-mail, a correlated
/// timestamp, 30 % NULLs, extended statistics and a foreign key.
const PRODUCTION: &str = "
    CREATE TYPE order_status AS ENUM ('ok', 'failed', 'pending');
    CREATE TABLE customers (id int PRIMARY KEY, email text UNIQUE, country text);
    INSERT INTO customers
         SELECT g, 'user' || g || '@example.com',
                CASE WHEN g % 3 = 0 THEN 'CANARY_SECRET_42' ELSE 'c' || (g % 7) END
           FROM generate_series(1, 3000) g;
    CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int REFERENCES customers,
                         status order_status, created timestamptz, note text,
                         during tstzrange);
    INSERT INTO orders
         SELECT g, 1 + (g % 40) * (g % 3),
                CASE WHEN g % 100 < 95 THEN 'ok'::order_status
                     WHEN g % 100 < 99 THEN 'failed' ELSE 'pending' END,
                '2024-01-01'::timestamptz + g * interval '1 minute',
                CASE WHEN g % 10 < 3 THEN NULL ELSE 'note ' || (g % 20) END,
                tstzrange('2024-01-01'::timestamptz + g * interval '1 minute', '2025-01-01')
           FROM generate_series(1, 10000) g;
    CREATE STATISTICS orders_customer_status (ndistinct, dependencies, mcv)
        ON customer_id, status FROM orders;
    CREATE STATISTICS orders_note_lower ON (lower(note)) FROM orders;
    CREATE TABLE events (at date, kind int) PARTITION BY RANGE (at);
    CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
    CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
    INSERT INTO events SELECT '2024-01-01'::date + g % 700, g % 5 FROM generate_series(1, 2000) g;
    ANALYZE;";

/// Issue 49, 1: the capture runs as a role with pg_read_all_stats and no
/// SELECT on any table. pg_stats shows such a role nothing (it shows a
/// column only to a role that may SELECT it), so a capture through the
/// views fails, naming the role and what to run; once a superuser has run
/// `planck stats setup-sql --role R`, the same role captures every table's
/// statistics through the security-definer functions, and still may not
/// read a row.
#[test]
fn capture_runs_as_a_role_with_pg_read_all_stats_and_no_select() {
    let db = test_db!();
    db.exec(PRODUCTION);
    let role = format!("{}_r", db.name);
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN PASSWORD 'pw'; \
         GRANT pg_read_all_stats TO {role};"
    ));
    let url = db.url.replacen("planck@", &format!("{role}:pw@"), 1);
    assert_ne!(url, db.url);
    let dir = common::project_dir();

    let out = planck_on(&url, dir.path(), &["stats", "capture"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("role {role} sees the statistics of no column"))
            && err.contains("planck stats setup-sql --role"),
        "{err}"
    );
    assert!(!dir.path().join("stats/production.json").exists());

    let sql = planck_cmd(dir.path())
        .args(["stats", "setup-sql", "--role", &role])
        .output()
        .unwrap();
    assert_exit(&sql, 0);
    db.exec(&stdout(&sql));

    let out = planck_on(&url, dir.path(), &["--format", "json", "stats", "capture"]);
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["source"], "functions", "{summary:#}");
    assert_eq!(summary["not_analyzed"], Value::Array(vec![]));
    let file = read_json(&dir.path().join("stats/production.json"));
    assert_eq!(file["source"], "functions");
    let status = column(&file, "orders", "status");
    assert_eq!(
        status["most_common_vals"],
        serde_json::json!(["ok", "failed", "pending"])
    );
    let freqs = floats(&status["most_common_freqs"]);
    assert!(
        (freqs[0] - 0.95).abs() < 0.01 && (freqs[2] - 0.01).abs() < 0.005,
        "{freqs:?}"
    );
    let ext = &table(&file, "orders")["extended"];
    assert_eq!(ext.as_array().unwrap().len(), 2, "{ext:#}");
    assert_eq!(
        file["foreign_keys"],
        serde_json::json!([{"table": "public.orders", "columns": ["customer_id"],
                            "references": "public.customers", "referenced_columns": ["id"]}])
    );

    // Still no row for this role.
    let denied = common::block_on(async move {
        let c = planck::db::ConnInfo::parse(&url, false)
            .unwrap()
            .connect()
            .await
            .unwrap();
        c.query("SELECT count(*) FROM orders", &[])
            .await
            .unwrap_err()
            .code()
            .cloned()
    });
    assert_eq!(
        denied,
        Some(tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE)
    );
    db.exec(&format!(
        "DROP SCHEMA planck_stats CASCADE; DROP OWNED BY {role}; DROP ROLE {role}"
    ));
}

/// Issue 49, 2: a canary planted as the most frequent value of a text
/// column is nowhere in the default file (`--values shape`), where its
/// token has its length and character classes; it is there with `--values
/// keep`; `--values none` keeps the frequencies and no value. Numbers,
/// timestamps and enum labels are kept in `shape`. Each file says its mode.
#[test]
fn values_are_shaped_by_default_kept_or_dropped_on_request() {
    let db = test_db!();
    db.exec(PRODUCTION);
    let dir = common::project_dir();
    let canary = "CANARY_SECRET_42";

    let out = db.planck(&["stats", "capture"], dir.path());
    assert_exit(&out, 0);
    let path = dir.path().join("stats/production.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(canary),
        "the canary leaked into the shaped file"
    );
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["values"], "shape");
    let country = column(&file, "customers", "country");
    assert_eq!(country["values_kept"], false);
    let token = country["most_common_vals"][0].as_str().unwrap();
    assert_eq!(token, "AAAAAA_AAAAAA_00", "{country:#}");
    let emails: Vec<&str> = column(&file, "customers", "email")["histogram_bounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(emails.windows(2).all(|w| w[0] < w[1]), "{emails:?}");
    assert!(
        emails
            .iter()
            .all(|e| !e.contains("user") && !e.contains("example")),
        "{emails:?}"
    );
    assert!(
        emails
            .iter()
            .all(|e| e.contains('@') && e.ends_with(|c: char| c.is_ascii_lowercase()))
    );
    assert_eq!(
        column(&file, "orders", "status")["most_common_vals"],
        serde_json::json!(["ok", "failed", "pending"])
    );
    let created = &column(&file, "orders", "created")["histogram_bounds"][0];
    assert!(
        created.as_str().unwrap().starts_with("2024-01-01 00:01:00"),
        "{created}"
    );
    let corr = column(&file, "orders", "created")["correlation"]
        .as_f64()
        .unwrap();
    assert!(corr > 0.99, "{corr}");
    let note = column(&file, "orders", "note");
    assert!(
        (note["null_frac"].as_f64().unwrap() - 0.3).abs() < 0.02,
        "{note:#}"
    );

    // PostgreSQL 17 added the range columns to pg_stats; older majors lack them.
    let during = column(&file, "orders", "during");
    assert_eq!(
        during.get("range_bounds_histogram").is_some(),
        common::server_major() >= 17,
        "{during:#}"
    );
    // Expression statistics (pg_stats_ext_exprs, 14+).
    let exprs = &table(&file, "orders")["extended"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "orders_note_lower")
        .unwrap()["expression_stats"];
    assert_eq!(exprs[0]["name"], "lower(note)", "{exprs:#}");
    // A partitioned table's statistics are pg_stats' inherited rows; its
    // partitions' their own.
    assert_eq!(table(&file, "events")["kind"], "partitioned");
    assert_eq!(column(&file, "events", "kind")["inherited"], true);
    assert_eq!(table(&file, "events_2025")["kind"], "partition");
    assert!(
        column(&file, "events_2025", "kind")
            .get("inherited")
            .is_none()
    );
    assert_eq!(
        floats(&column(&file, "events", "kind")["most_common_freqs"]).len(),
        5
    );

    let out = db.planck(
        &["stats", "capture", "--values", "keep", "-o", "keep.json"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let kept = std::fs::read_to_string(dir.path().join("keep.json")).unwrap();
    assert!(kept.contains(canary));
    let kept: Value = serde_json::from_str(&kept).unwrap();
    assert_eq!(kept["values"], "keep");
    assert_eq!(
        column(&kept, "customers", "country")["most_common_vals"][0],
        canary
    );

    let out = db.planck(
        &["stats", "capture", "--values", "none", "-o", "-"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let none: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(none["values"], "none");
    let status = column(&none, "orders", "status");
    assert!(status["most_common_vals"].is_null() && status["most_common_freqs"].is_array());
    let id = column(&none, "orders", "id");
    assert!(id["histogram_bounds"].is_null() && id["histogram_len"].as_u64().unwrap() > 10);
    assert!(!stdout(&out).contains("2024-01-01"));
}

/// Bad input, each with its documented exit code and a message naming what
/// is wrong: a file that cannot be written (checked before the database is
/// asked: an unreachable URL still gives 2), a database that does not
/// exist (3), one with no table (2), one whose tables were never analyzed (2).
#[test]
fn bad_input_gives_clear_errors_and_exit_codes() {
    let db = test_db!();
    let dir = common::project_dir();
    let unwritable = "no/such/folder/stats.json";
    let out = planck_on(
        "postgres://nobody@127.0.0.1:1/none",
        dir.path(),
        &["stats", "capture", "-o", unwritable],
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!(
            "cannot write {}",
            dir.path().join(unwritable).display()
        )),
        "{}",
        stderr(&out)
    );

    let missing = db.url.replace(&db.name, &format!("{}_missing", db.name));
    let out = planck_on(&missing, dir.path(), &["stats", "capture"]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains(&format!("{}_missing", db.name)),
        "{}",
        stderr(&out)
    );

    let out = db.planck(&["stats", "capture"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!("database {} has no table", db.name)),
        "{}",
        stderr(&out)
    );

    db.exec("CREATE TABLE never_analyzed (id int, v text)");
    let out = db.planck(&["stats", "capture"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("none was analyzed"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("stats/production.json").exists());

    let out = db.planck(&["stats", "compare", "missing.json"], dir.path());
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("missing.json"), "{}", stderr(&out));
    std::fs::write(
        dir.path().join("broken.json"),
        "{\n  \"format_version\": 1,\n  oops\n}",
    )
    .unwrap();
    let out = db.planck(&["stats", "compare", "broken.json"], dir.path());
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("broken.json:3:"), "{}", stderr(&out));
}

/// Issue 49, 4: the fidelity report. A database compared with its own
/// capture is within every tolerance (exit 0); after a third of a column's
/// values are set to NULL and the table analyzed again, the report names
/// that column's null fraction beyond its tolerance (exit 1), and the rows
/// against the file at `--scale 0.5` beyond theirs.
#[test]
fn compare_names_the_statistics_that_moved() {
    let db = test_db!();
    db.exec(PRODUCTION);
    let dir = common::project_dir();
    assert_exit(
        &db.planck(&["stats", "capture", "--values", "keep"], dir.path()),
        0,
    );
    let compare = |extra: &[&str]| {
        let mut args = vec![
            "--format",
            "json",
            "stats",
            "compare",
            "stats/production.json",
        ];
        args.extend(extra);
        let out = db.planck(&args, dir.path());
        let report: Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
        (out.status.code(), report)
    };
    let (code, report) = compare(&[]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["beyond_tolerance"], 0);
    assert_eq!(report["same_schema"], true);

    db.exec("UPDATE customers SET country = NULL WHERE id % 3 = 1; ANALYZE customers");
    let (code, report) = compare(&[]);
    assert_eq!(code, Some(1), "{report:#}");
    let customers = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "public.customers")
        .unwrap();
    let worst: Vec<(&str, &str, bool)> = customers["deviations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["column"].as_str().unwrap_or("-"),
                d["statistic"].as_str().unwrap(),
                d["within"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        worst.contains(&("country", "null_frac", false)),
        "{worst:?}"
    );

    let (code, report) = compare(&["--scale", "0.5"]);
    assert_eq!(code, Some(1));
    let rows = &report["tables"][0]["deviations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["statistic"] == "rows")
        .cloned()
        .unwrap();
    assert_eq!(rows["within"], false, "{rows:#}");
}
