//! `planck seed --stats FILE` (issue 49, point 3): a database seeded from
//! another's captured statistics has that database's shape: rows, NULL
//! shares, the top values' frequencies, the tenant skew, and the plans
//! that follow from them. A zero-spec seed of the same schema has not.

use serde_json::Value;

use crate::common::{self, assert_exit, stderr, stdout};
use crate::stats_capture::{column, read_json, table};

/// The schema both databases share: a tenant table, and events with a
/// tenant column, a status, a nullable note and a unique reference.
const SCHEMA: &str = "
    CREATE TABLE tenants (id int PRIMARY KEY, name text NOT NULL);
    CREATE TABLE events (
        id bigint PRIMARY KEY,
        tenant_id int NOT NULL REFERENCES tenants,
        status text NOT NULL,
        note text,
        ref text NOT NULL UNIQUE
    );
    CREATE INDEX events_status ON events (status);
    CREATE INDEX events_tenant ON events (tenant_id);";

/// "Production", by its own SQL: tenant k owns about 1/k of the events
/// (floor(101^u) for u spread over [0, 1): tenant 1 holds 15 %), the status
/// is `active`, `paused`, `deleted` at 90/9/1 %, the note is NULL in 30 %
/// of the rows, `ref` unique.
const PRODUCTION: &str = "
    INSERT INTO tenants SELECT g, 'tenant ' || g FROM generate_series(1, 100) g;
    INSERT INTO events
         SELECT g,
                least(100, floor(exp(((g * 7919) % 10007) / 10007.0 * ln(101)))::int),
                CASE WHEN g % 100 < 90 THEN 'active' WHEN g % 100 < 99 THEN 'paused'
                     ELSE 'deleted' END,
                CASE WHEN (g * 13) % 10 < 3 THEN NULL ELSE 'note ' || (g % 500) END,
                'R' || g
           FROM generate_series(1, 50000) g;
    ANALYZE;";

fn freqs(c: &Value) -> Vec<f64> {
    c["most_common_freqs"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_f64().unwrap()).collect())
        .unwrap_or_default()
}

/// Where a copy's statistics miss production's beyond the tolerances of
/// this test (rows 5 %, NULL share 0.05, each of the top 3 most common
/// values' frequencies 0.05, by rank), one line each; empty when none do.
fn misses(prod: &Value, copy: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for t in ["tenants", "events"] {
        let (e, a) = (
            table(prod, t)["reltuples"].as_f64().unwrap(),
            table(copy, t)["reltuples"].as_f64().unwrap(),
        );
        if (a / e - 1.0).abs() > 0.05 {
            out.push(format!("{t}: {a} rows, {e} expected"));
        }
    }
    for c in ["tenant_id", "status", "note"] {
        let (e, a) = (column(prod, "events", c), column(copy, "events", c));
        let (en, an) = (
            e["null_frac"].as_f64().unwrap(),
            a["null_frac"].as_f64().unwrap(),
        );
        if (an - en).abs() > 0.05 {
            out.push(format!("events.{c}: null_frac {an}, {en} expected"));
        }
        let (ef, af) = (freqs(e), freqs(a));
        for (rank, want) in ef.iter().take(3).enumerate() {
            let got = af.get(rank).copied().unwrap_or(0.0);
            if (got - want).abs() > 0.05 {
                out.push(format!(
                    "events.{c}: most common value {} at {got}, {want} expected",
                    rank + 1
                ));
            }
        }
    }
    out
}

/// The figures compared, for the log of a run (`--nocapture`).
fn figures(label: &str, file: &Value) {
    let rows = |t: &str| table(file, t)["reltuples"].as_f64().unwrap();
    eprintln!(
        "{label}: tenants {} rows, events {} rows",
        rows("tenants"),
        rows("events")
    );
    for c in ["tenant_id", "status", "note"] {
        let col = column(file, "events", c);
        let f: Vec<String> = freqs(col)
            .iter()
            .take(3)
            .map(|x| format!("{x:.3}"))
            .collect();
        eprintln!(
            "  events.{c}: null_frac {:.3}, top frequencies [{}]",
            col["null_frac"].as_f64().unwrap(),
            f.join(", ")
        );
    }
}

/// How a statement reaches its rows: `Seq Scan`, or `index NAME` for any
/// path through an index (an Index Scan, an Index Only Scan or a Bitmap
/// Heap Scan over it). Between an Index Scan and a Bitmap Heap Scan for a
/// few hundred rows the planner decides on the column's correlation (the
/// physical order, which a spec cannot follow) read from ANALYZE's random
/// sample: a near tie that goes either way from one ANALYZE to the next,
/// so the comparison is of the access path the frequencies decide.
fn access(db: &common::TestDb, query: &str) -> String {
    let plan = db.query_strings(&format!("EXPLAIN (COSTS OFF) {query}"));
    for line in &plan {
        let line = line.trim_start_matches([' ', '-', '>']);
        for marker in [
            "Index Scan using ",
            "Index Only Scan using ",
            "Bitmap Index Scan on ",
        ] {
            if let Some(rest) = line.split(marker).nth(1) {
                let name = rest.split_whitespace().next().unwrap_or_default();
                return format!("index {name}");
            }
        }
    }
    let first = plan.first().cloned().unwrap_or_default();
    first.split(" on ").next().unwrap().trim().to_string()
}

/// Issue 49, 3 (acceptance): production captured (values kept), then
/// `seed --stats` into a database of the same schema: rows, NULL shares and
/// the top values' frequencies within this test's tolerances, and the plans
/// of a rare and a common status the same access path as production's
/// (the status index, a Seq Scan). A zero-spec seed of the same schema
/// misses them (it gives nullable columns 10 % NULLs and `status` words of
/// its own), so every comparison can fail.
#[test]
fn a_seed_from_captured_statistics_has_productions_shape_and_plans() {
    let prod = test_db!("prod");
    prod.exec(SCHEMA);
    prod.exec(PRODUCTION);
    let dir = common::project_dir();
    let out = prod.planck(
        &["stats", "capture", "--values", "keep", "-o", "prod.json"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let expected = read_json(&dir.path().join("prod.json"));
    // What production is, as captured: the test's premise.
    let status = freqs(column(&expected, "events", "status"));
    assert!(
        (status[0] - 0.9).abs() < 0.01 && status.len() == 3,
        "{status:?}"
    );
    let tenant = freqs(column(&expected, "events", "tenant_id"));
    assert!((tenant[0] - 0.15).abs() < 0.02, "{tenant:?}");

    let copy = test_db!("copy");
    copy.exec(SCHEMA);
    let out = copy.planck(&["seed", "--no-spec", "--stats", "prod.json"], dir.path());
    assert_exit(&out, 0);
    // The lines saying what the spec did not follow name each kind once, with its count.
    let err = stderr(&out);
    assert!(err.contains("seeding from "), "{err}");
    let out = copy.planck(
        &["stats", "capture", "--values", "keep", "-o", "copy.json"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let seeded = read_json(&dir.path().join("copy.json"));
    figures("production", &expected);
    figures("seed --stats", &seeded);
    let missed = misses(&expected, &seeded);
    assert!(missed.is_empty(), "{missed:#?}\n{err}");

    // The fidelity report agrees on the rows (its own tolerance: 2 %).
    let out = copy.planck(
        &["--format", "json", "stats", "compare", "prod.json"],
        dir.path(),
    );
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["same_schema"], true, "{report:#}");
    for t in report["tables"].as_array().unwrap() {
        for d in t["deviations"].as_array().unwrap() {
            if d["statistic"] == "rows" || d["statistic"] == "null_frac" {
                assert!(d["within"] == true, "{d:#}");
            }
        }
    }

    // The plans that follow from the statuses' frequencies.
    let rare = "SELECT id FROM events WHERE status = 'deleted'";
    let common_status = "SELECT id FROM events WHERE status = 'active'";
    assert_eq!(access(&prod, rare), "index events_status");
    assert_eq!(access(&copy, rare), "index events_status");
    assert_eq!(access(&prod, common_status), "Seq Scan");
    assert_eq!(access(&copy, common_status), "Seq Scan");

    // A zero-spec seed of the same schema: other distributions, other plans.
    let zero = test_db!("zero");
    zero.exec(SCHEMA);
    let out = zero.planck(&["seed", "--no-spec", "--rows", "50000"], dir.path());
    assert_exit(&out, 0);
    let out = zero.planck(
        &["stats", "capture", "--values", "keep", "-o", "zero.json"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let zeroed = read_json(&dir.path().join("zero.json"));
    figures("zero-spec", &zeroed);
    let missed = misses(&expected, &zeroed);
    assert!(
        missed
            .iter()
            .any(|m| m.starts_with("events.note: null_frac"))
            && missed.iter().any(|m| m.starts_with("events.status")),
        "{missed:#?}"
    );
    assert_ne!(access(&zero, common_status), "Seq Scan");
}

/// A user's spec laid over the file wins where it says something (a
/// column, a table's rows), and `--scale` multiplies the file's rows.
#[test]
fn a_spec_overrides_the_file_and_scale_multiplies_its_rows() {
    let prod = test_db!("prod");
    prod.exec(SCHEMA);
    prod.exec(PRODUCTION);
    let dir = common::project_dir();
    let out = prod.planck(
        &["stats", "capture", "--values", "keep", "-o", "prod.json"],
        dir.path(),
    );
    assert_exit(&out, 0);
    std::fs::write(
        dir.path().join("over.toml"),
        "[tables.events.columns]\nstatus = { values = [\"x\", \"y\"] }\n",
    )
    .unwrap();
    let copy = test_db!("copy");
    copy.exec(SCHEMA);
    let out = copy.planck(
        &[
            "seed",
            "--spec",
            "over.toml",
            "--stats",
            "prod.json",
            "--scale",
            "0.2",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    assert_eq!(
        copy.query_strings("SELECT count(*) FROM events"),
        vec!["10000"]
    );
    assert_eq!(
        copy.query_strings("SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM events"),
        vec!["x,y"]
    );
    // The file still says the note's NULL share: 30 % of 10,000.
    let nulls: f64 = copy.query_strings("SELECT count(*) FROM events WHERE note IS NULL")[0]
        .parse()
        .unwrap();
    assert!((nulls / 10000.0 - 0.3).abs() < 0.02, "{nulls}");
}

/// `--exact-tenants`: production's heaviest tenant is id 37, not the first
/// row; with the flag the copy's heaviest is 37 too, at its share (the
/// captured ids are tenant numbers, the seed numbering its tenants from 1
/// as an integer key does); without it the heaviest is the seed's tenant 1.
#[test]
fn exact_tenants_keeps_the_captured_tenant_ids_and_their_shares() {
    let prod = test_db!("prod");
    prod.exec(SCHEMA);
    prod.exec(&PRODUCTION.replace(
        "least(100, floor(exp(((g * 7919) % 10007) / 10007.0 * ln(101)))::int)",
        "(least(100, floor(exp(((g * 7919) % 10007) / 10007.0 * ln(101)))::int) + 35) % 100 + 1",
    ));
    let dir = common::project_dir();
    let out = prod.planck(
        &["stats", "capture", "--values", "keep", "-o", "prod.json"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let expected = read_json(&dir.path().join("prod.json"));
    let tenant = column(&expected, "events", "tenant_id");
    assert_eq!(tenant["most_common_vals"][0], "37", "{tenant:#}");
    let share = freqs(tenant)[0];

    let heaviest = |db: &common::TestDb| -> (String, f64) {
        let r = db.query_strings(
            "SELECT tenant_id || ' ' || count(*) FROM events GROUP BY tenant_id \
             ORDER BY count(*) DESC LIMIT 1",
        );
        let (id, n) = r[0].split_once(' ').unwrap();
        (id.to_string(), n.parse::<f64>().unwrap() / 50000.0)
    };
    let exact = test_db!("exact");
    exact.exec(SCHEMA);
    let out = exact.planck(
        &[
            "seed",
            "--no-spec",
            "--stats",
            "prod.json",
            "--exact-tenants",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    let (id, got) = heaviest(&exact);
    assert_eq!(id, "37");
    assert!((got - share).abs() < 0.01, "{got} {share}");

    let ranked = test_db!("ranked");
    ranked.exec(SCHEMA);
    let out = ranked.planck(&["seed", "--no-spec", "--stats", "prod.json"], dir.path());
    assert_exit(&out, 0);
    let (id, got) = heaviest(&ranked);
    assert_eq!(id, "1");
    assert!((got - share).abs() < 0.01, "{got} {share}");
}

/// A small "production" whose statistics ANALYZE reads from every row (5,000
/// rows: its sample is the table), so each statistic is the same every run:
/// an account column, a kind at 90/10 %, a number among three values, and a
/// timestamp in insertion order, two rows a minute (a histogram, a
/// correlation of 1: physical order, which a spec cannot follow).
const SMALL: &str = "
    CREATE TABLE accounts (id int PRIMARY KEY, name text NOT NULL);
    CREATE TABLE events (
        id bigint PRIMARY KEY,
        account_id int NOT NULL REFERENCES accounts,
        kind text NOT NULL,
        n int NOT NULL,
        at timestamptz NOT NULL
    );";

const SMALL_ROWS: &str = "
    INSERT INTO accounts SELECT g, 'account ' || g FROM generate_series(1, 20) g;
    INSERT INTO events
         SELECT g, 1 + g % 20, CASE WHEN g % 10 = 0 THEN 'b' ELSE 'a' END, g % 3,
                '2024-01-01 00:00:00+00'::timestamptz + (g / 2) * interval '1 minute'
           FROM generate_series(1, 5000) g;
    ANALYZE;";

/// SMALL captured (`--values keep`) into `dir`/prod.json.
fn small_capture(dir: &std::path::Path) {
    let prod = common::TestDb::new(&format!("{}_prod", common::current_test()));
    prod.exec(SMALL);
    prod.exec(SMALL_ROWS);
    let out = prod.planck(
        &["stats", "capture", "--values", "keep", "-o", "prod.json"],
        dir,
    );
    assert_exit(&out, 0);
    // A server before 17 lacks pg_stats' range columns (CI runs this test
    // on 14 to 18): the capture says what it did not read.
    let major: i32 = prod.query_strings("SHOW server_version_num")[0]
        .parse::<i32>()
        .unwrap()
        / 10_000;
    let err = stderr(&out);
    assert_eq!(
        err.contains("has no pg_stats.range_length_histogram"),
        major < 17,
        "PostgreSQL {major}: {err}"
    );
}

/// What the spec cannot follow is in the summary, not only on stderr: the
/// JSON's `stats` names the file and each kind with its columns, the table
/// form a line per kind (what CI logs keep).
#[test]
fn what_a_stats_seed_cannot_follow_is_in_its_summary() {
    let dir = common::project_dir();
    small_capture(dir.path());
    let copy = test_db!("copy");
    copy.exec(SMALL);
    let out = copy.planck(
        &[
            "--format",
            "json",
            "seed",
            "--no-spec",
            "--stats",
            "prod.json",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let stats = &summary["stats"];
    assert!(
        stats["file"].as_str().unwrap().ends_with("/prod.json"),
        "{summary:#}"
    );
    let kinds = stats["not_followed"].as_array().unwrap();
    let order = kinds
        .iter()
        .find(|k| k["kind"].as_str().unwrap().starts_with("physical order"))
        .unwrap_or_else(|| panic!("no physical order: {stats:#}"));
    assert_eq!(order["count"], 1, "{order:#}");
    assert_eq!(order["names"], serde_json::json!(["public.events.at"]));
    // The same run in the table form: a line per kind, after the tables.
    let again = test_db!("again");
    again.exec(SMALL);
    let out = again.planck(&["seed", "--no-spec", "--stats", "prod.json"], dir.path());
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("shaped by the statistics of"), "{text}");
    assert!(
        text.contains("not followed: physical order (|correlation| > 0.9;"),
        "{text}"
    );
}

/// A stats file that names a column the database lacks (exit 2, as a bad
/// spec), or a value its column's type cannot take (that table not seeded,
/// exit 1): the error names the file and the table and column, not a line
/// of the spec planck made.
#[test]
fn a_bad_stats_file_is_named_with_its_table_and_column() {
    let dir = common::project_dir();
    small_capture(dir.path());
    let path = dir.path().join("prod.json");
    let good = read_json(&path);
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    };
    let events = |v: &mut Value| -> usize {
        v["tables"]
            .as_array()
            .unwrap()
            .iter()
            .position(|t| t["name"] == "events")
            .unwrap()
    };
    let col = |v: &mut Value, name: &str| -> usize {
        let t = events(v);
        v["tables"][t]["columns"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c["name"] == name)
            .unwrap()
    };
    let copy = test_db!("copy");
    copy.exec(SMALL);
    let seed = || copy.planck(&["seed", "--no-spec", "--stats", "prod.json"], dir.path());

    // A column the schema lacks.
    edit(&|v| {
        let (t, c) = (events(v), col(v, "kind"));
        v["tables"][t]["columns"][c]["name"] = "kindx".into();
    });
    let out = seed();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("prod.json"), "{err}");
    assert!(err.contains("table events, column kindx"), "{err}");
    assert!(
        !err.contains("(as a spec):"),
        "a line of the made spec: {err}"
    );

    // A value an integer column cannot take.
    edit(&|v| {
        let (t, c) = (events(v), col(v, "n"));
        v["tables"][t]["columns"][c]["most_common_vals"][1] = "two".into();
    });
    // The table cannot be seeded: the others are, and the run exits 1 (a
    // partial seed, docs/seed.md), its summary saying why.
    let out = seed();
    assert_exit(&out, 1);
    let err = stdout(&out) + &stderr(&out);
    assert!(
        err.contains("value `two` of events.n is not a value of its type (table events, column n of the statistics file)"),
        "{err}"
    );
    assert!(err.contains("prod.json"), "{err}");
    assert!(
        !err.contains("(as a spec):"),
        "a line of the made spec: {err}"
    );
    assert_eq!(copy.query_strings("SELECT count(*) FROM events"), vec!["0"]);
}
