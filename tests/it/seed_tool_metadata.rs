//! A migration tool's key-value table that records no migration (Rails'
//! `ar_internal_metadata`, issue 46): `seed` fills it as an ordinary table,
//! kept whole when it holds rows, a few rows when empty, never under the
//! keys the tool writes itself; the migration history beside it is never
//! touched.

use crate::common;

use common::{TestDb, assert_exit, project_dir, stderr};

/// A Rails application's tables as `structure.sql` loaded with psql leaves
/// them: the migration history holds its versions, the metadata table is
/// empty (`rails db:schema:load` would have written it).
const RAILS: &str = r#"
CREATE TABLE schema_migrations (version character varying NOT NULL PRIMARY KEY);
INSERT INTO schema_migrations VALUES ('20260101000001'), ('20260101000002');
CREATE TABLE ar_internal_metadata (
    key character varying NOT NULL PRIMARY KEY,
    value character varying,
    created_at timestamp(6) without time zone NOT NULL,
    updated_at timestamp(6) without time zone NOT NULL
);
CREATE TABLE accounts (id bigserial PRIMARY KEY, name character varying NOT NULL);
CREATE TABLE invoices (id bigserial PRIMARY KEY, account_id bigint NOT NULL REFERENCES accounts,
                       total_cents bigint NOT NULL);
"#;

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

fn seed(db: &TestDb) -> String {
    let dir = project_dir();
    let out = db.planck(&["seed", "--no-spec", "--rows", "200"], dir.path());
    assert_exit(&out, 0);
    stderr(&out)
}

/// An empty `ar_internal_metadata` gets a few rows (fails before: it was
/// left empty as migration bookkeeping), none under `environment` or
/// `schema_sha1`: Rails writes those afterwards without a conflict. The
/// migration history keeps exactly its rows.
#[test]
fn an_empty_rails_metadata_table_gets_a_few_rows_never_under_rails_keys() {
    let db = test_db!();
    db.exec(RAILS);
    let err = seed(&db);
    let n = count(&db, "SELECT count(*) FROM ar_internal_metadata");
    assert!((1..=50).contains(&n), "{n} rows\n{err}");
    assert_eq!(
        db.query_strings("SELECT version FROM schema_migrations ORDER BY 1"),
        ["20260101000001", "20260101000002"]
    );
    assert!(count(&db, "SELECT count(*) FROM invoices") > 0, "{err}");
    // What `rails db:environment:set` and `db:schema:load` write.
    db.exec(
        "INSERT INTO ar_internal_metadata VALUES
           ('environment', 'development', now(), now()),
           ('schema_sha1', 'f0e1d2c3', now(), now())",
    );
}

/// The rows Rails wrote stay exactly as they were, and the seed adds none.
#[test]
fn a_rails_metadata_table_holding_rows_is_kept_whole() {
    let db = test_db!();
    db.exec(RAILS);
    db.exec(
        "INSERT INTO ar_internal_metadata VALUES
           ('environment', 'production', '2026-01-01', '2026-01-01')",
    );
    let err = seed(&db);
    assert_eq!(
        db.query_strings("SELECT format('%s=%s', key, value) FROM ar_internal_metadata"),
        ["environment=production"],
        "{err}"
    );
    assert!(count(&db, "SELECT count(*) FROM invoices") > 0, "{err}");
}

/// A database holding only a Rails application's bookkeeping (no
/// migration run yet) is still unmigrated: the hint, exit 2.
#[test]
fn a_database_of_only_rails_bookkeeping_is_unmigrated() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE schema_migrations (version character varying NOT NULL PRIMARY KEY);
         CREATE TABLE ar_internal_metadata (key character varying NOT NULL PRIMARY KEY,
             value character varying, created_at timestamp(6) NOT NULL,
             updated_at timestamp(6) NOT NULL);",
    );
    let dir = project_dir();
    let out = db.planck(&["seed", "--no-spec", "--rows", "10"], dir.path());
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("migrate first"), "{}", stderr(&out));
    assert_eq!(count(&db, "SELECT count(*) FROM ar_internal_metadata"), 0);
}
