//! `planck seed` against a real server: issue 3's acceptance points.

mod common;

use common::{TestDb, assert_exit, project_dir, repo_root, stderr, stdout};

/// md5 of every table's sorted contents, for determinism checks.
fn fingerprint(db: &TestDb) -> Vec<String> {
    let tables = db.query_strings(
        "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
            AND n.nspname NOT IN ('pg_catalog', 'information_schema')
            AND c.relname NOT IN ('planck_migrations', 'planck_seed_saved')
          ORDER BY 1",
    );
    tables
        .iter()
        .map(|t| {
            let h = db.query_strings(&format!(
                "SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '') FROM {t} x"
            ));
            format!("{t}={}", h[0])
        })
        .collect()
}

/// Every index of the database with its validity.
fn indexes(db: &TestDb) -> Vec<String> {
    db.query_strings(
        "SELECT c.relname || ':' || i.indisvalid || ':' || pg_get_indexdef(i.indexrelid)
           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relname NOT LIKE 'planck_seed_saved%' ORDER BY 1",
    )
}

fn constraints(db: &TestDb) -> Vec<String> {
    db.query_strings(
        "SELECT conrelid::regclass || ':' || conname || ':' || convalidated || ':' || pg_get_constraintdef(oid)
           FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> 'planck_seed_saved' ORDER BY 1",
    )
}

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

fn seed(db: &TestDb, args: &[&str]) -> std::process::Output {
    let dir = project_dir();
    let mut a = vec!["seed"];
    a.extend_from_slice(args);
    db.planck(&a, dir.path())
}

#[test]
fn zero_spec_fills_the_bundled_schema_with_every_constraint_held() {
    let db = TestDb::migrated("seed_zero_bundled");
    let before_idx = indexes(&db);
    let before_con = constraints(&db);
    let out = seed(&db, &["--rows", "200"]);
    assert_exit(&out, 0);
    for t in [
        "accounts",
        "users",
        "pouches",
        "items",
        "revisions",
        "files",
        "events",
        "devices",
        "api_tokens",
        "rate_limits",
        "dpop_replays",
    ] {
        assert!(
            count(&db, &format!("SELECT count(*) FROM {t}")) > 0,
            "{t} is empty\n{}",
            stderr(&out)
        );
    }
    // Indexes and constraints restored exactly, all valid.
    assert_eq!(indexes(&db), before_idx);
    assert_eq!(constraints(&db), before_con);
    assert_eq!(count(&db, "SELECT count(*) FROM planck_seed_saved"), 0);
    // Sequences advanced past the loaded ids.
    db.exec("INSERT INTO accounts (name, slug) VALUES ('x', 'fresh-slug-x')");
    assert!(stdout(&out).contains("accounts"), "{}", stdout(&out));
}
