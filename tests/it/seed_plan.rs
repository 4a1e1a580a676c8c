//! `planck seed`'s planner on real schemas (issue 9, points 2, 3, 4, 8, 10
//! and 13): every problem at once, unique keys the value space cannot hold,
//! a spec that says nonsense, multi-column keys over foreign keys,
//! partitions and schemas.

use crate::common;

use common::{TestDb, assert_exit, project_dir, stderr, stdout};

/// Runs `planck seed ARGS` with `spec` (when given) as the project's only spec.
fn seed_with(db: &TestDb, spec: Option<&str>, args: &[&str]) -> std::process::Output {
    let dir = project_dir();
    let mut a = vec!["seed"];
    if let Some(text) = spec {
        let path = dir.path().join("spec.toml");
        std::fs::write(&path, text).unwrap();
        a.extend(["--spec", "spec.toml"]);
    } else {
        a.push("--no-spec");
    }
    a.extend_from_slice(args);
    db.planck(&a, dir.path())
}

/// The rendered error (from `error:` on), without the progress lines before
/// it, the spec's temporary directory written `<project>`.
fn error_text(out: &std::process::Output) -> String {
    let err = stderr(out);
    let Some(i) = err.find("error: ") else {
        panic!("no error in stderr:\n{err}")
    };
    err[i..]
        .trim_end()
        .split(' ')
        .map(|w| match w.find("/spec.toml") {
            Some(k) if w.starts_with('/') => format!("<project>{}", &w[k..]),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

/// Three tables planck cannot seed, each for its own reason, a fourth that
/// references one of them, and two it can seed.
const THREE_UNSEEDABLE: &str = "
    CREATE TABLE fine (id serial PRIMARY KEY, label text NOT NULL);
    CREATE TABLE tiny (id smallint PRIMARY KEY);
    CREATE TABLE acl (id serial PRIMARY KEY, privilege aclitem NOT NULL);
    CREATE TABLE flags (id serial PRIMARY KEY, enabled boolean NOT NULL UNIQUE);
    CREATE TABLE grants (id serial PRIMARY KEY, acl_id int NOT NULL REFERENCES acl);
    CREATE TABLE notes (id serial PRIMARY KEY, fine_id int NOT NULL REFERENCES fine,
                        acl_id int REFERENCES acl);
";
const THREE_SPEC: &str = "[tables.tiny]\nrows = 40000\n[tables.flags]\nrows = 10\n";

/// Issue 9 point 2, under `--all-or-nothing` since issue 30 point 4 (the
/// default seeds the others): planning reports every table it cannot
/// seed, in one run, before anything is written (exit 2); the cascade
/// names its cause.
#[test]
fn all_or_nothing_reports_every_unseedable_table_at_once() {
    let db = test_db!();
    db.exec(THREE_UNSEEDABLE);
    let out = seed_with(&db, Some(THREE_SPEC), &["--all-or-nothing"]);
    assert_exit(&out, 2);
    insta::assert_snapshot!(error_text(&out));
    assert_eq!(
        count(&db, "SELECT count(*) FROM fine"),
        0,
        "nothing written"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM notes"),
        0,
        "nothing written"
    );
}

/// Issue 30 point 4: a table planck cannot seed never stops the others.
/// By default every other table is seeded, a nullable foreign key into a
/// table not seeded is left NULL, a NOT NULL one leaves its table out in
/// turn, and the summary names each table not seeded with why, its hints
/// and the spec line that settles it: a partial result, exit 1.
#[test]
fn tables_planck_cannot_seed_leave_the_others_seeded_and_exit_1() {
    let db = test_db!();
    db.exec(THREE_UNSEEDABLE);
    let dir = project_dir();
    std::fs::write(dir.path().join("spec.toml"), THREE_SPEC).unwrap();
    let out = db.planck(
        &[
            "--format",
            "json",
            "seed",
            "--spec",
            "spec.toml",
            "--rows",
            "50",
        ],
        dir.path(),
    );
    assert_exit(&out, 1);
    let v: planck::seed::summary::JsonSummary = serde_json::from_str(&stdout(&out)).unwrap();
    let mut seeded: Vec<&str> = v.tables.iter().map(|t| t.table.as_str()).collect();
    seeded.sort();
    assert_eq!(seeded, vec!["fine", "notes"]);
    assert_eq!(count(&db, "SELECT count(*) FROM fine"), 50);
    assert!(count(&db, "SELECT count(*) FROM notes") > 0);
    assert_eq!(
        count(&db, "SELECT count(*) FROM notes WHERE acl_id IS NOT NULL"),
        0
    );
    let by: std::collections::BTreeMap<&str, &planck::seed::summary::JsonNotSeeded> =
        v.not_seeded.iter().map(|n| (n.table.as_str(), n)).collect();
    assert_eq!(
        by.keys().copied().collect::<Vec<_>>(),
        vec!["acl", "flags", "grants", "tiny"]
    );
    assert!(
        by["acl"].reason.starts_with("acl.privilege: ") && by["acl"].reason.contains("aclitem"),
        "{:?}",
        by["acl"]
    );
    assert!(
        by["tiny"].reason.starts_with("tiny.id: "),
        "{:?}",
        by["tiny"]
    );
    assert!(
        by["flags"].reason.contains("flags_enabled_key"),
        "{:?}",
        by["flags"]
    );
    for t in ["acl", "flags", "tiny"] {
        assert!(!by[t].hints.is_empty(), "{t}: no hint");
        assert_eq!(
            by[t].spec.as_deref(),
            Some(format!("exclude = [\"{t}\"]").as_str())
        );
        assert_eq!(by[t].depends_on, None);
    }
    assert_eq!(by["grants"].depends_on.as_deref(), Some("acl"));
    assert_eq!(by["grants"].spec, None);
    for t in ["tiny", "acl", "flags", "grants"] {
        assert_eq!(
            count(&db, &format!("SELECT count(*) FROM {t}")),
            0,
            "{t} was written"
        );
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_constraint WHERE NOT convalidated"
        ),
        0
    );
    // The spec lines the summary gives settle it: the run is whole again.
    std::fs::write(
        dir.path().join("spec.toml"),
        "exclude = [\"acl\", \"flags\", \"tiny\", \"grants\"]\n",
    )
    .unwrap();
    let out = db.planck(
        &["seed", "--spec", "spec.toml", "--rows", "50", "--truncate"],
        dir.path(),
    );
    assert_exit(&out, 0);
    // The table form says the same to a person.
    std::fs::write(dir.path().join("spec.toml"), THREE_SPEC).unwrap();
    let out = db.planck(
        &["seed", "--spec", "spec.toml", "--rows", "50", "--truncate"],
        dir.path(),
    );
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(
        text.contains("partial seed: 4 table(s) not seeded"),
        "{text}"
    );
    assert!(text.contains("  spec: exclude = [\"acl\"]"), "{text}");
    assert!(
        stderr(&out).contains("partial seed: 4 table(s) not seeded"),
        "{}",
        stderr(&out)
    );
}

/// `--skip-unseedable` (issue 9 point 2) is what planck does by default
/// since issue 30 point 4: still accepted, the same partial seed.
#[test]
fn skip_unseedable_still_runs_as_the_default_does() {
    let db = test_db!();
    db.exec(THREE_UNSEEDABLE);
    let out = seed_with(
        &db,
        Some(THREE_SPEC),
        &["--skip-unseedable", "--rows", "50"],
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    for t in ["tiny", "acl", "flags"] {
        assert!(
            err.contains(&format!("skipped {t} (")),
            "{t} not reported:\n{err}"
        );
    }
    assert!(
        err.contains("; with it: grants"),
        "cascade not reported:\n{err}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM fine"), 50);
}

/// Issue 9 point 3: unique keys the value space cannot hold are found at
/// plan time. A table nothing sizes is lowered to fit, with a notice: a
/// unique char(2) holds 36² - 1 row numbers, a unique boolean two rows, a
/// unique two-value enum two rows, a unique smallint 32,767 values from 1.
#[test]
fn unique_keys_too_small_are_fitted_with_a_notice() {
    let db = test_db!();
    db.exec(
        "CREATE TYPE side AS ENUM ('left', 'right');
         CREATE TABLE codes (id bigserial PRIMARY KEY, code char(2) NOT NULL UNIQUE);
         CREATE TABLE toggles (id bigserial PRIMARY KEY, enabled boolean NOT NULL UNIQUE);
         CREATE TABLE sides (id bigserial PRIMARY KEY, side side NOT NULL UNIQUE);
         CREATE TABLE smalls (id bigserial PRIMARY KEY, n smallint NOT NULL UNIQUE);",
    );
    let out = seed_with(&db, None, &["--rows", "40000"]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    for (table, rows, why) in [
        (
            "codes",
            1295,
            "codes_code_key (code) must be unique, and code allows only 1295 distinct value(s)",
        ),
        (
            "toggles",
            2,
            "toggles_enabled_key (enabled) must be unique, and enabled allows only 2 distinct value(s)",
        ),
        (
            "sides",
            2,
            "sides_side_key (side) must be unique, and side allows only 2 distinct value(s)",
        ),
        (
            "smalls",
            32768,
            "n is smallint and holds 32768 value(s) from where it starts",
        ),
    ] {
        let notice = format!("{table}: 40000 rows lowered to {rows}: {why}");
        assert!(err.contains(&notice), "missing `{notice}` in:\n{err}");
        assert_eq!(
            count(&db, &format!("SELECT count(*) FROM {table}")),
            rows,
            "{table}"
        );
    }
    assert_eq!(count(&db, "SELECT count(DISTINCT code) FROM codes"), 1295);
    assert_eq!(count(&db, "SELECT count(DISTINCT n) FROM smalls"), 32768);
}

/// Issue 9 point 3: a table the spec sizes is not lowered: the error gives
/// the arithmetic, at the spec's position.
#[test]
fn unique_keys_too_small_for_spec_rows_are_errors() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE codes (id bigserial PRIMARY KEY, code varchar(2) NOT NULL UNIQUE);
         CREATE TABLE toggles (id bigserial PRIMARY KEY, enabled boolean NOT NULL UNIQUE);",
    );
    let out = seed_with(
        &db,
        Some("[tables.codes]\nrows = 2000\n[tables.toggles]\nrows = 3\n"),
        &["--all-or-nothing"],
    );
    assert_exit(&out, 2);
    insta::assert_snapshot!(error_text(&out));
}

/// Rows of a table alone (ONLY: not its partitions' or children's).
fn rows_of(db: &TestDb, table: &str) -> i64 {
    count(db, &format!("SELECT count(*) FROM {table}"))
}

/// Issue 9 point 13: range and list partitions with and without a default,
/// hash partitions, two levels of partitioning: every one seeded, every row
/// in a partition (the server routes them; a row outside every bound fails).
#[test]
fn partitioned_tables_of_every_kind_are_seeded() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE events (id bigint, at timestamptz NOT NULL, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
         CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
         CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
         CREATE TABLE readings (id bigint NOT NULL, n int NOT NULL) PARTITION BY RANGE (n);
         CREATE TABLE readings_low PARTITION OF readings FOR VALUES FROM (0) TO (100);
         CREATE TABLE readings_rest PARTITION OF readings DEFAULT;
         CREATE TABLE regions (id bigint NOT NULL, code text NOT NULL) PARTITION BY LIST (code);
         CREATE TABLE regions_eu PARTITION OF regions FOR VALUES IN ('fr', 'de');
         CREATE TABLE regions_us PARTITION OF regions FOR VALUES IN ('us');
         CREATE TABLE tags (id bigint NOT NULL, kind text NOT NULL) PARTITION BY LIST (kind);
         CREATE TABLE tags_a PARTITION OF tags FOR VALUES IN ('a');
         CREATE TABLE tags_other PARTITION OF tags DEFAULT;
         CREATE TABLE hits (id bigint PRIMARY KEY) PARTITION BY HASH (id);
         CREATE TABLE hits_0 PARTITION OF hits FOR VALUES WITH (MODULUS 2, REMAINDER 0);
         CREATE TABLE hits_1 PARTITION OF hits FOR VALUES WITH (MODULUS 2, REMAINDER 1);
         CREATE TABLE orders (id bigint NOT NULL, placed date NOT NULL, shop text NOT NULL)
             PARTITION BY RANGE (placed);
         CREATE TABLE orders_2024 PARTITION OF orders FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')
             PARTITION BY LIST (shop);
         CREATE TABLE orders_2024_web PARTITION OF orders_2024 FOR VALUES IN ('web');
         CREATE TABLE orders_2024_app PARTITION OF orders_2024 FOR VALUES IN ('app');",
    );
    let out = seed_with(&db, None, &["--rows", "200"]);
    assert_exit(&out, 0);
    for t in ["events", "readings", "regions", "tags", "hits", "orders"] {
        assert!(rows_of(&db, t) > 0, "{t} is empty\n{}", stderr(&out));
    }
    // Several partitions get rows.
    for t in [
        "events_2024",
        "events_2025",
        "regions_eu",
        "regions_us",
        "hits_0",
        "hits_1",
    ] {
        assert!(rows_of(&db, t) > 0, "partition {t} is empty");
    }
    assert!(rows_of(&db, "orders_2024_web") + rows_of(&db, "orders_2024_app") > 0);
}

/// Issue 9 point 13: tables in non-public schemas only (graphile-starter's
/// `app_public`, `app_private`), same-named tables in two schemas with a
/// foreign key across, and old-style inheritance: all seeded.
#[test]
fn schemas_and_inheritance_are_seeded() {
    let db = test_db!();
    db.exec(
        "CREATE SCHEMA app_public; CREATE SCHEMA app_private;
         CREATE TABLE app_public.users (id serial PRIMARY KEY, name text NOT NULL);
         CREATE TABLE app_private.users (id serial PRIMARY KEY,
             user_id int NOT NULL UNIQUE REFERENCES app_public.users, secret text NOT NULL);
         CREATE TABLE app_public.posts (id serial PRIMARY KEY,
             author int NOT NULL REFERENCES app_public.users, body text NOT NULL);
         CREATE TABLE app_public.measures (id serial PRIMARY KEY, at date NOT NULL);
         CREATE TABLE app_public.measures_2024 (CHECK (at >= '2024-01-01' AND at < '2025-01-01'))
             INHERITS (app_public.measures);",
    );
    let out = seed_with(&db, None, &["--rows", "50"]);
    assert_exit(&out, 0);
    for t in [
        "app_public.users",
        "app_private.users",
        "app_public.posts",
        "ONLY app_public.measures",
        "app_public.measures_2024",
    ] {
        assert!(rows_of(&db, t) > 0, "{t} is empty\n{}", stderr(&out));
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM app_private.users p LEFT JOIN app_public.users u ON u.id = p.user_id WHERE u.id IS NULL"
        ),
        0
    );
}

/// Issue 9 point 8: an exclusion constraint beyond `=` and one range `&&`
/// is a plan-time error naming the constraint; nothing is written.
#[test]
fn unsupported_exclusion_constraints_are_named_at_plan_time() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE names (id serial PRIMARY KEY, name text NOT NULL,
             CONSTRAINT names_lower_excl EXCLUDE USING btree (lower(name) WITH =));
         CREATE TABLE plain (id serial PRIMARY KEY);",
    );
    let out = seed_with(&db, None, &["--rows", "20", "--all-or-nothing"]);
    assert_exit(&out, 2);
    insta::assert_snapshot!(error_text(&out));
    assert_eq!(rows_of(&db, "plain"), 0, "nothing written");
    // By default (issue 30 point 4) the other table is seeded, exit 1.
    let out = seed_with(&db, None, &["--rows", "20"]);
    assert_exit(&out, 1);
    assert_eq!(rows_of(&db, "plain"), 20);
    assert_eq!(rows_of(&db, "names"), 0);
}

/// Issue 9 point 4: `CHECK (tag1 < tag2)` over two foreign keys into one
/// table, with `PRIMARY KEY (tag1, tag2)`: ordered pairs, no duplicates.
#[test]
fn ordered_pairs_of_foreign_keys_hold_their_check_and_key() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE tags (id serial PRIMARY KEY, name text NOT NULL);
         CREATE TABLE related_tags (
             tag1 int NOT NULL REFERENCES tags, tag2 int NOT NULL REFERENCES tags,
             PRIMARY KEY (tag1, tag2), CHECK (tag1 < tag2));",
    );
    let out = seed_with(&db, None, &["--rows", "30"]);
    assert_exit(&out, 0);
    let n = rows_of(&db, "related_tags");
    assert!(n >= 30, "{n} rows\n{}", stderr(&out));
    assert_eq!(
        count(&db, "SELECT count(*) FROM related_tags WHERE tag1 >= tag2"),
        0
    );
}

/// Issue 9 point 4: the same over keys that do not grow with the parent's
/// rows: uuids, and integers without a sequence (a permutation). Before,
/// only sequence keys were paired, and a row in two had `tag1 > tag2`;
/// now each pair of parent rows is put in order by key value.
#[test]
fn ordered_pairs_over_uuid_and_permuted_keys_hold() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE tags (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL);
         CREATE TABLE related_tags (
             tag1 uuid NOT NULL REFERENCES tags, tag2 uuid NOT NULL REFERENCES tags,
             PRIMARY KEY (tag1, tag2), CHECK (tag1 < tag2));
         CREATE TABLE labels (id int PRIMARY KEY, name text NOT NULL);
         CREATE TABLE related_labels (
             a int NOT NULL REFERENCES labels, b int NOT NULL REFERENCES labels,
             UNIQUE (a, b), CHECK (a <= b));",
    );
    let out = seed_with(&db, None, &["--rows", "30"]);
    assert_exit(&out, 0);
    for (t, bad) in [
        ("related_tags", "tag1 >= tag2"),
        ("related_labels", "a > b"),
    ] {
        let n = rows_of(&db, t);
        assert!(n >= 30, "{t}: {n} rows\n{}", stderr(&out));
        assert_eq!(
            count(&db, &format!("SELECT count(*) FROM {t} WHERE {bad}")),
            0,
            "{t}"
        );
    }
}

/// Issue 9 point 4: composite unique keys mixing foreign-key and other
/// columns, under a tenant planck detects.
#[test]
fn composite_unique_keys_mixing_foreign_keys_and_columns_hold() {
    let db = test_db!();
    db.exec(
        "CREATE EXTENSION IF NOT EXISTS pgcrypto;
         CREATE TYPE kind AS ENUM ('a', 'b', 'c');
         CREATE TABLE accounts (id uuid PRIMARY KEY DEFAULT gen_random_uuid());
         CREATE TABLE users (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
             account_id uuid NOT NULL REFERENCES accounts);
         CREATE TABLE projects (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
             account_id uuid NOT NULL REFERENCES accounts);
         CREATE TABLE memberships (id bigserial PRIMARY KEY,
             account_id uuid NOT NULL REFERENCES accounts,
             user_id uuid NOT NULL REFERENCES users, project_id uuid REFERENCES projects,
             kind kind NOT NULL, slug text NOT NULL,
             UNIQUE (user_id, kind), UNIQUE (account_id, slug));
         CREATE UNIQUE INDEX memberships_pair ON memberships (user_id, project_id)
             WHERE project_id IS NOT NULL;",
    );
    let out = seed_with(&db, None, &["--rows", "300"]);
    assert_exit(&out, 0);
    assert!(rows_of(&db, "memberships") > 0, "{}", stderr(&out));
    assert!(
        count(
            &db,
            "SELECT count(*) FROM memberships WHERE project_id IS NOT NULL"
        ) > 0,
        "the partial index covers no row"
    );
}
