//! `planck migrate` records which migration line made or dropped each index
//! and constraint (issue 8, section 1: a finding's location can be a
//! migration file and line).

use crate::common;

use std::path::Path;

use common::{TestDb, assert_exit, stderr};
use planck::migrate::{Action, ObjectMap, Origin};

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = common::project_dir();
    std::fs::create_dir(dir.path().join("migrations")).unwrap();
    for (name, sql) in files {
        std::fs::write(dir.path().join("migrations").join(name), sql).unwrap();
    }
    dir
}

/// migrate's JSON summary, mirrored here apart from planck's own wire types.
#[derive(Debug, serde::Deserialize)]
struct Summary {
    format_version: u32,
    applied: Vec<String>,
    objects: Vec<ObjectMirror>,
}

#[derive(Debug, serde::Deserialize)]
struct ObjectMirror {
    migration: String,
    line: usize,
    action: String,
    kind: String,
    schema: String,
    name: String,
    table: Option<String>,
    renamed_from: Option<String>,
}

fn migrate_json(db: &TestDb, dir: &Path) -> Summary {
    let out = db.planck(&["--format", "json", "migrate"], dir);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not the migrate wire format: {e}\n{}", stderr(&out)))
}

const INIT: &str = "-- the first schema\n\
CREATE TABLE items (\n  id bigint PRIMARY KEY,\n  slug text NOT NULL,\n  title text\n);\n\
\n\
CREATE INDEX items_title ON items (title);\n\
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  RETURN NEW;\nEND $$;\n\
CREATE TABLE tags (item_id bigint REFERENCES items, tag text);\n";

const SECOND: &str = "DROP INDEX items_title;\n\
CREATE UNIQUE INDEX items_slug ON items (slug);\n\
ALTER TABLE tags ADD CONSTRAINT tags_tag_check CHECK (tag <> '');\n\
ALTER INDEX items_slug RENAME TO items_slug_key;\n\
ALTER TABLE items ALTER COLUMN id TYPE numeric;\n";

#[test]
fn migrate_records_which_line_made_or_dropped_each_index_and_constraint() {
    let db = test_db!();
    let dir = project(&[("0001_init.sql", INIT), ("0002_more.sql", SECOND)]);
    let v = migrate_json(&db, dir.path());
    assert_eq!(v.format_version, 1);
    assert_eq!(v.applied, ["0001_init.sql", "0002_more.sql"]);
    let got: Vec<(String, usize, String, String)> = v
        .objects
        .iter()
        .map(|o| {
            (
                o.migration.clone(),
                o.line,
                format!("{} {}", o.action, o.kind),
                o.name.clone(),
            )
        })
        .collect();
    let want: Vec<(String, usize, String, String)> = [
        ("0001_init.sql", 2, "created index", "items_pkey"),
        ("0001_init.sql", 2, "created constraint", "items_pkey"),
        ("0001_init.sql", 8, "created index", "items_title"),
        (
            "0001_init.sql",
            13,
            "created constraint",
            "tags_item_id_fkey",
        ),
        ("0002_more.sql", 1, "dropped index", "items_title"),
        ("0002_more.sql", 2, "created index", "items_slug"),
        ("0002_more.sql", 3, "created constraint", "tags_tag_check"),
        ("0002_more.sql", 4, "renamed index", "items_slug_key"),
        // A type change rebuilds the index and constraints on the column,
        // the foreign key that references it included.
        ("0002_more.sql", 5, "recreated index", "items_pkey"),
        ("0002_more.sql", 5, "recreated constraint", "items_pkey"),
        (
            "0002_more.sql",
            5,
            "recreated constraint",
            "tags_item_id_fkey",
        ),
    ]
    .iter()
    .map(|(m, l, a, n)| (m.to_string(), *l, a.to_string(), n.to_string()))
    .collect();
    assert_eq!(got, want);
    assert_eq!(v.objects[7].renamed_from.as_deref(), Some("items_slug"));
    assert!(v.objects.iter().all(|o| o.schema == "public"));
    assert_eq!(v.objects[3].table.as_deref(), Some("tags"));

    // Stored in the database, for later commands.
    let migrations = dir.path().join("migrations");
    let m = migrations.clone();
    let conn = db.conn();
    let map = common::block_on(async move {
        let client = conn.connect().await.unwrap();
        ObjectMap::load(&client, &m).await.unwrap()
    });
    assert_eq!(map.changes().len(), 11);
    assert_eq!(
        map.object_origin(Some("public"), "items_title"),
        Some(Origin {
            path: migrations.join("0002_more.sql"),
            line: 1,
            action: Action::Dropped,
        })
    );
    assert_eq!(
        map.object_origin(None, "tags_tag_check"),
        Some(Origin {
            path: migrations.join("0002_more.sql"),
            line: 3,
            action: Action::Created,
        })
    );
    assert_eq!(map.object_origin(Some("other"), "items_pkey"), None);

    // Nothing applied: nothing new recorded, the map unchanged.
    let again = migrate_json(&db, dir.path());
    assert!(again.applied.is_empty() && again.objects.is_empty());
    assert_eq!(
        db.query_strings("SELECT sum(jsonb_array_length(objects)) FROM planck_migrations"),
        ["11"]
    );
}

#[test]
fn a_failed_file_records_nothing_and_points_at_its_statement() {
    let db = test_db!();
    let dir = project(&[
        ("0001_ok.sql", "CREATE TABLE a (id int PRIMARY KEY);\n"),
        (
            "0002_bad.sql",
            "CREATE INDEX a_id ON a (id);\n\n-- then\nCREATE INDEX a_x ON a (nope);\nCREATE INDEX a_y ON a (idd));\n",
        ),
    ]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    let bad = dir.path().join("migrations/0002_bad.sql");
    // The server gives no position for this error: the statement's line.
    assert!(
        err.contains(&format!("migration {}:4 failed", bad.display())),
        "{err}"
    );
    assert_eq!(
        db.query_strings(
            "SELECT o->>'migration' || ':' || (o->>'line') || ' ' || (o->>'name') \
             FROM planck_migrations, jsonb_array_elements(objects) o ORDER BY 1"
        ),
        ["0001_ok.sql:1 a_pkey", "0001_ok.sql:1 a_pkey"]
    );
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_indexes WHERE indexname = 'a_id'"),
        ["0"],
        "the failed file rolled back whole"
    );
}

/// Statements run one by one, so the server's error position counts from
/// the statement: it is mapped back to the file's line and column.
#[test]
fn an_error_in_a_later_statement_is_reported_at_its_file_line_and_column() {
    let db = test_db!();
    let dir = project(&[(
        "0001.sql",
        "CREATE TABLE a (id int);\n-- café\nCREATE TABLE b (\n  id int,\n  x intt\n);\n",
    )]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    let file = dir.path().join("migrations/0001.sql");
    assert!(err.contains(&format!("{}:5:5", file.display())), "{err}");
    assert!(err.contains("type \"intt\" does not exist"), "{err}");
}

/// Issue 48, 6: when a file fails, stderr names the files this run applied
/// and committed before it (they stay: the database says so too), and the
/// pending files after it that did not run; files applied by an earlier run
/// are not counted as this run's.
#[test]
fn a_failed_run_says_which_files_it_committed_before_the_failure() {
    let db = test_db!();
    let dir = project(&[("0001_first.sql", "CREATE TABLE a (id int);\n")]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 0);
    for (name, sql) in [
        ("0002_second.sql", "CREATE TABLE b (id int);\n"),
        ("0003_third.sql", "CREATE TABLE c (id int);\n"),
        ("0004_bad.sql", "CREATE TABLE d (id nope);\n"),
        ("0005_later.sql", "CREATE TABLE e (id int);\n"),
    ] {
        std::fs::write(dir.path().join("migrations").join(name), sql).unwrap();
    }
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    let summary = err
        .lines()
        .find(|l| l.starts_with("0004_bad.sql failed"))
        .unwrap_or_else(|| panic!("no summary line:\n{err}"));
    assert_eq!(
        summary,
        "0004_bad.sql failed; applied and committed before it (2 files): \
         0002_second.sql, 0003_third.sql; 1 file after it did not run"
    );
    assert_eq!(
        db.query_strings("SELECT name FROM planck_migrations ORDER BY name"),
        ["0001_first.sql", "0002_second.sql", "0003_third.sql"]
    );
}
