//! Issue 13: explain findings a team can trust. Each false positive the
//! issue names is reproduced on a minimal schema, with a true positive next
//! to it that must still fire.

use crate::common;

use std::path::Path;

use common::{TestDb, stderr, stdout};
use serde_json::Value;

/// Writes a queries file of `(query, calls)` entries, recorded by a
/// superuser (a job: judged in admin mode).
fn queries(dir: &Path, stmts: &[(&str, u64)]) -> String {
    let mut text = String::from("format_version = 1\n");
    for (q, calls) in stmts {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"postgres\"\nbypass_rls = true\ncalls = {calls}\nquery = '''\n{q}\n'''\n"
        ));
    }
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// `planck --format json explain ARGS` in `dir`: the exit code and the report.
fn explain(db: &TestDb, dir: &Path, args: &[&str]) -> (i32, Value) {
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
    (code, v)
}

/// The findings of `check` on the statement `query` (its text, exactly):
/// (severity, message).
fn on(v: &Value, check: &str, query: &str) -> Vec<(String, String)> {
    let ids: Vec<&Value> = v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["query"].as_str().unwrap().trim() == query)
        .map(|s| &s["id"])
        .collect();
    assert!(!ids.is_empty(), "no statement {query}: {v:#}");
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check && ids.contains(&&f["statement_id"]))
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The findings of `check` on the index `index`: (severity, message).
fn on_index(v: &Value, check: &str, index: &str) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check && f["index"] == index)
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// healthchecks' api_flip, reduced: 50,000 rows, 50 of them unprocessed,
/// with a partial index on those.
const FLIPS: &str = "
    CREATE TABLE flips (id bigserial PRIMARY KEY, owner_id int NOT NULL, email text NOT NULL,
                        kind text NOT NULL, processed timestamptz);
    INSERT INTO flips (owner_id, email, kind, processed)
         SELECT i % 500, 'u' || i || '@example.com', 'k' || (i % 7),
                CASE WHEN i % 1000 = 0 THEN NULL ELSE now() END
           FROM generate_series(1, 50000) i;
    CREATE INDEX flips_unprocessed ON flips (id) WHERE processed IS NULL;
    ANALYZE flips;";

/// Issue 13 §4: a scan under a Limit that stops early, a partial index whose
/// predicate is the statement's WHERE, a statement that asks for the whole
/// table; and next to each, the same shape that really reads everything.
#[test]
fn issue13_checks_read_the_plan_not_the_node_name() {
    let db = test_db!();
    db.exec(FLIPS);
    let dir = common::project_dir();
    let exists = "SELECT 1 AS a FROM flips LIMIT 1";
    let backward = "SELECT id, email FROM flips ORDER BY id DESC LIMIT 20";
    let unprocessed = "SELECT count(*) FROM flips WHERE processed IS NULL";
    let whole = "SELECT count(*) FROM flips";
    // True positives.
    let by_email = "SELECT id FROM flips WHERE email = $1 LIMIT 21";
    let unprocessed_kind = "SELECT count(*) FROM flips WHERE processed IS NULL AND kind = $1";
    let by_kind = "SELECT id FROM flips WHERE kind = $1 AND owner_id > $2";
    let q = queries(
        dir.path(),
        &[
            (exists, 1),
            (backward, 1),
            (unprocessed, 1),
            (whole, 1),
            (by_email, 1),
            (unprocessed_kind, 1),
            (by_kind, 1000),
        ],
    );
    let (code, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    assert_eq!(code, 1, "{v:#}");

    // `.exists()`: the Limit reads one row.
    assert_eq!(on(&v, "seq-scan", exists), vec![], "{v:#}");
    // A backward primary-key scan under LIMIT 20 reads 20 entries.
    assert_eq!(on(&v, "full-index-scan", backward), vec![], "{v:#}");
    assert_eq!(on(&v, "seq-scan", backward), vec![], "{v:#}");
    // The partial index holds exactly the rows wanted.
    assert_eq!(on(&v, "full-index-scan", unprocessed), vec![], "{v:#}");
    assert_eq!(on(&v, "seq-scan", unprocessed), vec![], "{v:#}");
    // No WHERE, no LIMIT: the whole table by design.
    assert_eq!(
        on(&v, "seq-scan", whole),
        vec![(
            "info".to_string(),
            "reads all of flips, 50,000 rows: the statement has no WHERE and no LIMIT".to_string()
        )]
    );

    // The email lookup without an index scans under its LIMIT 21 all the same.
    let f = on(&v, "seq-scan", by_email);
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0].0, "error");
    // The partial index read whole, and its rows filtered: the warning stays.
    let f = on(&v, "full-index-scan", unprocessed_kind);
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0].1.contains("flips_unprocessed"), "{f:?}");

    // Errors ranked by cost x calls: the 1,000-call scan first.
    let errors: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors[0]["query"]
            .as_str()
            .unwrap()
            .contains("owner_id > $2"),
        "{errors:#?}"
    );
}

/// healthchecks' api_check, reduced: 50,000 checks, mostly up, a few down,
/// new or paused, a few active; partial indexes of every predicate form.
const CHECKS: &str = "
    CREATE TABLE checks (id bigserial PRIMARY KEY, owner_id int NOT NULL,
                         status varchar(6) NOT NULL, kind text NOT NULL,
                         active boolean NOT NULL, alert_after timestamptz NOT NULL, note text);
    INSERT INTO checks (owner_id, status, kind, active, alert_after)
         SELECT i % 2000,
                CASE WHEN i % 20 = 0 THEN 'down' WHEN i % 20 = 1 THEN 'new'
                     WHEN i % 20 = 2 THEN 'paused' ELSE 'up' END,
                'k' || (i % 7), i % 50 = 0, now() + i * interval '1 second'
           FROM generate_series(1, 50000) i;
    CREATE INDEX checks_aa_not_down ON checks (alert_after) WHERE NOT (status = 'down');
    CREATE INDEX checks_owner_fresh ON checks (owner_id) WHERE status IN ('new', 'paused');
    CREATE INDEX checks_owner_active ON checks (owner_id) WHERE active;
    CREATE INDEX checks_owner_noted ON checks (owner_id) WHERE note = 'x';
    ANALYZE checks;";

/// Issue 13 §5: the literal re-plan for `NOT (col = c)`, `col IN (...)` and a
/// boolean column: an index used once the literal is bound is not unused,
/// and the statement is no seq scan; an index no statement can use still is,
/// and a statement no index serves still scans.
#[test]
fn issue13_literal_replan_for_every_predicate_form() {
    let db = test_db!();
    db.exec(CHECKS);
    let dir = common::project_dir();
    let sendalerts = "SELECT id FROM checks WHERE alert_after < $1 AND NOT (status = $2)";
    let fresh = "SELECT id FROM checks WHERE owner_id = $1 AND status IN ($2, $3)";
    let active = "SELECT id FROM checks WHERE owner_id = $1 AND active = $2";
    let by_kind = "SELECT id FROM checks WHERE kind = $1 AND note IS NULL";
    let q = queries(
        dir.path(),
        &[(sendalerts, 1), (fresh, 1), (active, 1), (by_kind, 1)],
    );
    let (code, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    assert_eq!(code, 1, "{v:#}");
    for (stmt, index, shown) in [
        (sendalerts, "checks_aa_not_down", "NOT (status = 'down')"),
        (fresh, "checks_owner_fresh", "status IN ('new', 'paused')"),
        (active, "checks_owner_active", "active"),
    ] {
        assert_eq!(on(&v, "seq-scan", stmt), vec![], "{stmt}: {v:#}");
        assert_eq!(on_index(&v, "unused-partial-index", index), vec![], "{v:#}");
        let f = on(&v, "partial-index-needs-literal", stmt);
        assert_eq!(f.len(), 1, "{stmt}: {v:#}");
        assert_eq!(f[0].0, "info");
        assert!(
            f[0].1.contains(&format!("inlines {shown};")),
            "{stmt}: {}",
            f[0].1
        );
    }
    // No statement compares note with anything: unused.
    assert_eq!(
        on_index(&v, "unused-partial-index", "checks_owner_noted").len(),
        1,
        "{v:#}"
    );
    assert_eq!(on(&v, "seq-scan", by_kind).len(), 1, "{v:#}");
}

/// Issue 13 §6: statements on migration bookkeeping produce no findings,
/// however big the table; the same statement on an application table does.
#[test]
fn issue13_migration_bookkeeping_never_produces_findings() {
    let db = test_db!();
    let mut sql = String::new();
    for t in [
        "django_migrations",
        "schema_migrations",
        "flyway_schema_history",
        "goose_db_version",
        "app_events",
    ] {
        sql.push_str(&format!(
            "CREATE TABLE {t} (id serial PRIMARY KEY, app text NOT NULL, name text NOT NULL);
             INSERT INTO {t} (app, name) SELECT 'a' || (i % 40), 'n' || i FROM generate_series(1, 20000) i;
             CREATE INDEX {t}_name ON {t} (name);
             ANALYZE {t};"
        ));
    }
    db.exec(&sql);
    let dir = common::project_dir();
    let stmts: Vec<String> = [
        "django_migrations",
        "schema_migrations",
        "public.flyway_schema_history",
        "goose_db_version",
        "app_events",
    ]
    .iter()
    .map(|t| format!("SELECT id, name FROM {t} WHERE app = $1"))
    .collect();
    let entries: Vec<(&str, u64)> = stmts.iter().map(|s| (s.as_str(), 1)).collect();
    let q = queries(dir.path(), &entries);
    let (code, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    assert_eq!(code, 1, "{v:#}");
    let mut touched: Vec<(String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                f["relation"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    touched.sort();
    // app_events alone: its seq scan, its unused index and primary key.
    let want: Vec<(String, String)> = ["seq-scan", "unused-index", "unused-index"]
        .iter()
        .map(|c| (c.to_string(), "app_events".to_string()))
        .collect();
    assert_eq!(touched, want, "{v:#}");
    assert_eq!(on(&v, "seq-scan", &stmts[4]).len(), 1, "{v:#}");
}

/// The plans of kind `kind` of the statement `query`.
fn plans<'a>(v: &'a Value, query: &str, kind: &str) -> Vec<&'a Value> {
    v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["query"].as_str().unwrap().trim() == query)
        .flat_map(|s| s["plans"].as_array().unwrap())
        .filter(|p| p["kind"] == kind)
        .collect()
}

/// Whether a plan's tree names `index` anywhere.
fn uses_index(plan: &Value, index: &str) -> bool {
    plan.to_string()
        .contains(&format!("\"Index Name\":\"{index}\""))
}

/// Issue 13 §2, without recorded shapes: custom plans bind a LIKE pattern as
/// a real value's prefix and `%`, a range bound as a selective quantile, a
/// LIMIT as a usual page (1 for an existence test).
#[test]
fn issue13_custom_plans_bind_values_of_the_statements_shape() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE events (id bigserial PRIMARY KEY, kind text NOT NULL, score int NOT NULL,
                              api_key varchar(32) NOT NULL, created timestamptz NOT NULL);
         INSERT INTO events (kind, score, api_key, created)
              SELECT 'k' || (i % 5), i % 1000, md5(i::text), now() - i * interval '1 minute'
                FROM generate_series(1, 50000) i;
         CREATE INDEX events_created ON events (created);
         CREATE INDEX events_api_key ON events (api_key varchar_pattern_ops);
         ANALYZE events;",
    );
    let dir = common::project_dir();
    let recent = "SELECT id FROM events WHERE created > $1";
    let older = "SELECT id FROM events WHERE created < $1";
    let by_key = "SELECT id FROM events WHERE api_key LIKE $1";
    let exists = "SELECT 1 AS a FROM events WHERE kind = $1 LIMIT $2";
    let page = "SELECT id FROM events WHERE kind = $1 ORDER BY id LIMIT $2";
    // True positive: a selective bound on a column no index serves.
    let by_score = "SELECT id FROM events WHERE score > $1";
    let q = queries(
        dir.path(),
        &[
            (recent, 1),
            (older, 1),
            (by_key, 1),
            (exists, 1),
            (page, 1),
            (by_score, 1),
        ],
    );
    let (_, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    let param = |query: &str, i: usize| -> String {
        let p = plans(&v, query, "custom");
        assert_eq!(p.len(), 1, "{query}: {v:#}");
        p[0]["params"][i].as_str().unwrap().to_string()
    };
    let count = |sql: &str, value: &str| -> u64 {
        db.query_strings(
            &sql.replace("$1", &format!("'{value}'"))
                .replace("SELECT id", "SELECT count(*)"),
        )[0]
        .parse()
        .unwrap()
    };
    // Range bounds select about 1 % of the rows, and the custom plans use the index.
    for query in [recent, older] {
        let bound = param(query, 0);
        let n = count(query, &bound);
        assert!((100..=2_000).contains(&n), "{query} with {bound}: {n} rows");
        assert!(
            uses_index(plans(&v, query, "custom")[0], "events_created"),
            "{v:#}"
        );
        assert_eq!(
            on(&v, "seq-scan", query)
                .iter()
                .filter(|f| f.1.contains("custom plan"))
                .count(),
            0
        );
    }
    // The pattern: a real key's first characters, then %.
    let pattern = param(by_key, 0);
    let prefix = pattern
        .strip_suffix('%')
        .unwrap_or_else(|| panic!("{pattern}"));
    assert_eq!(prefix.len(), 3, "{pattern}");
    assert!(count("SELECT id FROM events WHERE api_key LIKE $1", &pattern) > 0);
    assert!(
        uses_index(plans(&v, by_key, "custom")[0], "events_api_key"),
        "{v:#}"
    );
    // LIMIT: 1 for .exists(), a page of 20 otherwise.
    assert_eq!(param(exists, 1), "1");
    assert_eq!(param(page, 1), "20");
    // The score bound is as selective, and there is no index: it still scans.
    let f = on(&v, "seq-scan", by_score);
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0].1.contains("custom plan"), "{f:?}");
}

/// Issue 13 §1, without relay evidence: `api_key LIKE $1` on a
/// `varchar_pattern_ops` index scans in the generic plan only (a client-side
/// binding driver never runs it): a warning that says so by default, an
/// error with `[explain] generic = "judge"`, nothing with "ignore". A scan
/// the custom plan shows too stays an error whatever the setting.
#[test]
fn issue13_generic_only_findings_follow_the_generic_setting() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE keys (id bigserial PRIMARY KEY, api_key varchar(32) NOT NULL, note text);
         INSERT INTO keys (api_key, note) SELECT md5(i::text), 'n' || (i % 3)
           FROM generate_series(1, 50000) i;
         CREATE INDEX keys_api_key ON keys (api_key varchar_pattern_ops);
         ANALYZE keys;",
    );
    let dir = common::project_dir();
    let by_key = "SELECT id FROM keys WHERE api_key LIKE $1";
    let by_note = "SELECT id FROM keys WHERE note = $1";
    let q = queries(dir.path(), &[(by_key, 1), (by_note, 1)]);
    let run = |generic: Option<&str>| {
        let toml = generic.map_or(String::new(), |g| format!("[explain]\ngeneric = \"{g}\"\n"));
        std::fs::write(dir.path().join("planck.toml"), toml).unwrap();
        explain(&db, dir.path(), &["--queries", &q, "--no-advice"]).1
    };
    let v = run(None);
    let f = on(&v, "seq-scan", by_key);
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0].0, "warning");
    assert!(
        f[0].1.contains("only the generic plan shows it"),
        "{}",
        f[0].1
    );
    assert_eq!(on(&v, "seq-scan", by_note)[0].0, "error");

    let v = run(Some("judge"));
    assert_eq!(on(&v, "seq-scan", by_key)[0].0, "error", "{v:#}");
    let v = run(Some("ignore"));
    assert_eq!(on(&v, "seq-scan", by_key), vec![], "{v:#}");
    assert_eq!(on(&v, "seq-scan", by_note)[0].0, "error");
}

/// Writes a queries file of `(query, extra keys)` entries (a superuser's,
/// judged in admin mode): the extra keys are the recorded evidence.
fn queries_with(dir: &Path, stmts: &[(&str, &str)]) -> String {
    let mut text = String::from("format_version = 1\n");
    for (q, extra) in stmts {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"postgres\"\nbypass_rls = true\ncalls = 1\n{extra}\nquery = '''\n{q}\n'''\n"
        ));
    }
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Issue 13 §1 with relay evidence: the same generic-only scan is an error
/// that names the evidence when the application prepared the statement,
/// is dropped when it sent literals (it never gets the generic plan), and
/// follows `[explain] generic` (a warning by default) without evidence.
#[test]
fn issue13_generic_only_follow_the_sent_evidence() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE keys (id bigserial PRIMARY KEY, api_key varchar(32) NOT NULL);
         INSERT INTO keys (api_key) SELECT md5(i::text) FROM generate_series(1, 50000) i;
         CREATE INDEX keys_api_key ON keys (api_key varchar_pattern_ops);
         ANALYZE keys;",
    );
    let dir = common::project_dir();
    let by_key = "SELECT id FROM keys WHERE api_key LIKE $1";
    let run = |sent: &str| {
        let q = queries_with(dir.path(), &[(by_key, sent)]);
        let (_, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
        on(&v, "seq-scan", by_key)
    };
    let prepared = run("sent = \"prepared\"");
    assert_eq!(prepared.len(), 1, "{prepared:?}");
    assert_eq!(prepared[0].0, "error");
    assert!(
        prepared[0].1.contains("sent = \"prepared\""),
        "{}",
        prepared[0].1
    );
    assert_eq!(run("sent = \"unprepared\""), vec![]);
    let absent = run("");
    assert_eq!(absent.len(), 1, "{absent:?}");
    assert_eq!(absent[0].0, "warning");
    assert!(
        absent[0]
            .1
            .contains("it counts where the application prepares"),
        "{}",
        absent[0].1
    );
}

/// Issue 13 §2 with recorded shapes: a LIKE parameter recorded as "prefix"
/// binds a real value's prefix and `%` (the pattern index plans it), as
/// "infix" `%piece%` of a real value (no prefix: the index cannot serve
/// it), as "suffix" `%end`, as "exact" a real value; a LIMIT recorded as
/// "limit 1" binds 1 where the default is a page of 20.
#[test]
fn issue13_custom_plans_bind_the_recorded_shapes() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE events (id bigserial PRIMARY KEY, kind text NOT NULL,
                              api_key varchar(32) NOT NULL);
         INSERT INTO events (kind, api_key)
              SELECT 'k' || (i % 5), md5(i::text) FROM generate_series(1, 50000) i;
         CREATE INDEX events_api_key ON events (api_key varchar_pattern_ops);
         ANALYZE events;",
    );
    let dir = common::project_dir();
    let by_key = "SELECT id FROM events WHERE api_key LIKE $1";
    let page = "SELECT id FROM events WHERE kind = $1 ORDER BY id LIMIT $2";
    let run = |key_shape: &str, page_shape: &str| {
        let q = queries_with(
            dir.path(),
            &[
                (by_key, &format!("shapes = {{ 1 = \"{key_shape}\" }}")),
                (page, page_shape),
            ],
        );
        explain(&db, dir.path(), &["--queries", &q, "--no-advice"]).1
    };
    let param = |v: &Value, query: &str, i: usize| -> String {
        let p = plans(v, query, "custom");
        assert_eq!(p.len(), 1, "{query}: {v:#}");
        p[0]["params"][i].as_str().unwrap().to_string()
    };
    let matches = |pattern: &str| -> u64 {
        db.query_strings(&format!(
            "SELECT count(*) FROM events WHERE api_key LIKE '{pattern}'"
        ))[0]
            .parse()
            .unwrap()
    };
    let v = run("prefix", "shapes = { 2 = \"limit 1\" }");
    let prefix = param(&v, by_key, 0);
    assert!(
        prefix.ends_with('%') && !prefix.starts_with('%') && prefix.len() == 4,
        "{prefix}"
    );
    assert!(matches(&prefix) > 0, "{prefix}");
    assert!(
        uses_index(plans(&v, by_key, "custom")[0], "events_api_key"),
        "{v:#}"
    );
    assert_eq!(param(&v, page, 1), "1");

    let v = run("infix", "");
    let infix = param(&v, by_key, 0);
    assert!(
        infix.starts_with('%') && infix.ends_with('%') && infix.len() == 5,
        "{infix}"
    );
    assert!(matches(&infix) > 0, "{infix}");
    assert!(
        !uses_index(plans(&v, by_key, "custom")[0], "events_api_key"),
        "{v:#}"
    );
    assert_eq!(param(&v, page, 1), "20");

    let v = run("suffix", "");
    let suffix = param(&v, by_key, 0);
    assert!(
        suffix.starts_with('%') && !suffix.ends_with('%') && suffix.len() == 4,
        "{suffix}"
    );
    assert!(matches(&suffix) > 0, "{suffix}");

    let v = run("exact", "");
    let exact = param(&v, by_key, 0);
    assert!(!exact.contains('%') && exact.len() == 32, "{exact}");
    assert_eq!(matches(&exact), 1, "{exact}");
}

/// Issue 13 §4, near-total filter: healthchecks' `WHERE NOT (name = $1)`
/// keeps nearly every row of api_check, so the plan reads the whole table by
/// design (info); the selective lookup on the same column next to it is a
/// real seq scan (no index on name), and the near-total filter under a
/// Limit that stops early is no finding at all.
#[test]
fn issue13_a_filter_keeping_nearly_every_row_is_not_an_error() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE named (id bigserial PRIMARY KEY, name text NOT NULL, kind text NOT NULL);
         INSERT INTO named (name, kind)
              SELECT 'check ' || i, 'k' || (i % 5) FROM generate_series(1, 20000) i;
         ANALYZE named;",
    );
    let dir = common::project_dir();
    let all_but_one = "SELECT id, name FROM named WHERE NOT (name = $1)";
    let by_name = "SELECT id FROM named WHERE name = $1";
    let first_others = "SELECT id FROM named WHERE name <> $1 LIMIT $2";
    let q = queries(
        dir.path(),
        &[(all_but_one, 1), (by_name, 1), (first_others, 1)],
    );
    let (code, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    assert_eq!(code, 1, "{v:#}");
    let near = on(&v, "seq-scan", all_but_one);
    assert!(!near.is_empty(), "{v:#}");
    for (severity, message) in &near {
        assert_eq!(severity, "info", "{v:#}");
        assert!(
            message.starts_with(
                "reads all of named, 20,000 rows: its filter keeps an estimated 99 % of them"
            ),
            "{message}"
        );
    }
    let f = on(&v, "seq-scan", by_name);
    assert!(!f.is_empty(), "{v:#}");
    assert!(f.iter().all(|(s, _)| s == "error"), "{f:?}");
    assert_eq!(on(&v, "seq-scan", first_others), vec![], "{v:#}");
}

/// Issue 47, bakerydemo: Wagtail's search backend averages its titles'
/// lengths, `SELECT AVG(LENGTH(title)) ... WHERE LENGTH(title) > $1`, a
/// filter that keeps every titled entry. The planner has no statistics on
/// `LENGTH(title)` and estimates the default third of the rows, which read
/// as a selective filter: an error asking for an index that could read no
/// fewer rows. A guess is no measure: a warning that says so. The same
/// comparison on a plain column, whose statistics show it keeps 2 %, is
/// still the error it is.
#[test]
fn issue47_a_filter_the_planner_only_guesses_at_is_no_error() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE entries (id bigserial PRIMARY KEY, title text NOT NULL, n int NOT NULL);
         INSERT INTO entries (title, n)
              SELECT 'Page ' || i, i % 100 FROM generate_series(1, 30000) i;
         ANALYZE entries;",
    );
    let dir = common::project_dir();
    let average = "SELECT AVG(LENGTH(title)) FROM entries WHERE LENGTH(title) > $1";
    let few = "SELECT id FROM entries WHERE n > $1";
    let q = queries(dir.path(), &[(average, 1), (few, 1)]);
    let (code, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    assert_eq!(code, 1, "{v:#}");
    let f = on(&v, "seq-scan", average);
    assert!(!f.is_empty(), "{v:#}");
    for (severity, message) in &f {
        assert_eq!(severity, "warning", "{v:#}");
        assert!(
            message.contains("the planner has no statistics for its filter"),
            "{message}"
        );
    }
    let f = on(&v, "seq-scan", few);
    assert!(!f.is_empty(), "{v:#}");
    assert!(f.iter().all(|(s, _)| s == "error"), "{f:?}");
}

/// Issue 31: a statement on a partitioned table gets the same generic plan
/// on every major. PostgreSQL 16+'s `EXPLAIN (GENERIC_PLAN)` names every
/// partition; the path before 16 (`EXPLAIN EXECUTE` with NULLs under
/// force_generic_plan) let the executor prune with those NULLs, which
/// match no partition: the plan named none, and a scan of every partition
/// went unreported on 14 and 15.
#[test]
fn partitioned_generic_plans_name_every_partition() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE hits (id bigint NOT NULL, at date NOT NULL, kind text NOT NULL)
             PARTITION BY RANGE (at);
         CREATE TABLE hits_2025 PARTITION OF hits FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
         CREATE TABLE hits_2026 PARTITION OF hits FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
         INSERT INTO hits SELECT g, date '2025-01-01' + (g % 700), 'k' || (g % 50)
           FROM generate_series(1, 60000) g;
         ANALYZE hits;",
    );
    let dir = common::project_dir();
    let by_kind = "SELECT id FROM hits WHERE at >= $1 AND kind = $2";
    let q = queries(dir.path(), &[(by_kind, 100)]);
    let (code, v) = explain(&db, dir.path(), &["--queries", &q, "--no-advice"]);
    assert!(code == 0 || code == 1, "{v:#}");
    let s = v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["query"].as_str().unwrap().trim() == by_kind)
        .unwrap();
    let generic: Vec<String> = s["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "generic")
        .map(|p| p["plan"].to_string())
        .collect();
    assert!(!generic.is_empty(), "no generic plan: {s:#}");
    for plan in &generic {
        for partition in ["hits_2025", "hits_2026"] {
            assert!(plan.contains(partition), "{partition} not in {plan}");
        }
    }
    // No index on kind: each partition is read whole, and said so.
    let scans = on(&v, "seq-scan", by_kind);
    assert!(!scans.is_empty(), "{v:#}");
}

/// Issue 35: the samples read ahead, one scan per (table, tenant) for all
/// the columns statements bind, are the values each column's own read
/// gives; a column with NULLs among the scan's 5,000 rows (`c`: 10 values
/// there, 1,000 more after them) is left to its own read, whose 5,000
/// non-NULL rows make `b` its most common value, not `a`.
#[test]
fn samples_read_ahead_are_each_columns_own_read() {
    use planck::catalog::planner::Catalog;
    use planck::params::{binding, values::Sampler};
    use planck::session::StatsMode;
    use std::sync::Arc;

    let db = test_db!();
    db.exec(
        "CREATE TABLE t (id bigint PRIMARY KEY, kind text NOT NULL, c text);
         INSERT INTO t SELECT g, CASE WHEN g % 7 = 0 THEN 'x' ELSE 'k' || (g % 3) END,
                CASE WHEN g <= 10 THEN 'a' WHEN g > 5000 THEN 'b' END
           FROM generate_series(1, 6000) g;
         ANALYZE t;",
    );
    let conn = db.conn();
    let update = db.conn();
    let (want, got, columns) = common::block_on(async move {
        let client = conn.connect().await.unwrap();
        let catalog = Arc::new(Catalog::load(&client, StatsMode::Untracked).await.unwrap());
        let text = "SELECT id FROM t WHERE kind = $1 AND c = $2 AND id = $3";
        let analysis = binding::analyze(text);
        let own = Sampler::new(catalog.clone(), None, StatsMode::Untracked);
        let want = own.values(&client, text, &analysis, None).await.unwrap();
        let ahead = Sampler::new(catalog, None, StatsMode::Untracked);
        let columns: Vec<String> = ahead
            .wanted(&analysis)
            .into_iter()
            .map(|(t, c)| format!("{t}.{c}"))
            .collect();
        let bare: Vec<String> = ahead
            .wanted(&analysis)
            .into_iter()
            .map(|(_, c)| c)
            .collect();
        ahead.prefetch(&client, "t", &bare, None).await.unwrap();
        // What was read ahead no longer reads the table: a changed `kind`
        // is not seen, where an own read would see it.
        let other = update.connect().await.unwrap();
        other
            .batch_execute("UPDATE t SET kind = 'z'")
            .await
            .unwrap();
        let got = ahead.values(&client, text, &analysis, None).await.unwrap();
        (want, got, columns)
    });
    assert_eq!(columns, ["t.kind", "t.c", "t.id"]);
    assert_eq!(want[1].as_deref(), Some("b"));
    assert_eq!(got, want);
}
