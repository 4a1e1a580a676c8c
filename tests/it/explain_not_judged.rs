//! No verdict from data that cannot show it, for the checks about indexes
//! and tables (issue 47, 3): on a schema whose seed made a few tables tiny
//! (reference data planck seeded small, and one table it never touched
//! filled by hand) and one table large, no `unused-*` or
//! `missing-fk-index` finding names a tiny table; their indexes are listed
//! as not judged, with their rows, in the JSON (`not_judged_objects`), the
//! text report and stderr; and the large table's unused indexes are still
//! reported.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{TestDb, assert_exit, stderr, stdout};
use serde_json::Value;

/// `categories` (3 rows) and `menu_items` (6 rows), seeded small by
/// planck's own seed, as the migrations' reference rows of a real
/// application are; `icons` (4 rows) filled by hand, which planck never
/// seeded; `posts` (20,000 rows) references `categories`. Each table has
/// a plain index and some a partial one that no statement reads;
/// `menu_items` and `posts` have a foreign key no index leads with.
fn forum_schema(db: &TestDb, dir: &Path) {
    db.exec(
        "CREATE TABLE categories (id int PRIMARY KEY, name text NOT NULL);
         CREATE INDEX categories_name_idx ON categories (name);
         CREATE TABLE menu_items (id int PRIMARY KEY, label text NOT NULL,
           visible boolean NOT NULL, category_id int NOT NULL REFERENCES categories);
         CREATE INDEX menu_items_label_idx ON menu_items (label);
         CREATE INDEX menu_items_visible_idx ON menu_items (id) WHERE visible;
         CREATE TABLE icons (id int PRIMARY KEY, name text NOT NULL);
         CREATE INDEX icons_name_idx ON icons (name);
         CREATE TABLE posts (id bigint PRIMARY KEY, title text NOT NULL, draft boolean NOT NULL,
           created_at timestamptz NOT NULL, category_id int NOT NULL REFERENCES categories);
         CREATE INDEX posts_title_idx ON posts (title);
         CREATE INDEX posts_drafts_idx ON posts (created_at) WHERE draft;",
    );
    let spec = dir.join("forum.toml");
    std::fs::write(
        &spec,
        "exclude = [\"icons\"]\n\
         [tables.categories]\nrows = 3\n\
         [tables.menu_items]\nrows = 6\n\
         [tables.posts]\nrows = 20000\n",
    )
    .unwrap();
    let out = db.planck(&["seed", "--spec", spec.to_str().unwrap(), "--quiet"], dir);
    assert_exit(&out, 0);
    db.exec(
        "INSERT INTO icons SELECT g, 'icon ' || g FROM generate_series(1, 4) g;
         ANALYZE",
    );
}

/// One statement per table, each by its primary key or a column no index
/// leads with: none reads the plain or partial indexes above.
const STATEMENTS: [&str; 4] = [
    "SELECT id, name FROM categories WHERE id = $1",
    "SELECT id, label FROM menu_items WHERE category_id = $1",
    "SELECT id, name FROM icons WHERE id = $1",
    "SELECT id, title FROM posts WHERE id = $1",
];

fn queries(dir: &Path) -> String {
    let mut text = String::from("format_version = 1\n");
    for q in STATEMENTS {
        text.push_str(&format!("\n[[statement]]\nquery = '''\n{q}\n'''\n"));
    }
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const TINY: [&str; 3] = ["categories", "menu_items", "icons"];

#[test]
fn no_index_or_foreign_key_verdict_on_tables_too_small_to_show_one() {
    let db = test_db!();
    let dir = common::project_dir();
    forum_schema(&db, dir.path());
    let q = queries(dir.path());
    let args = ["explain", "--queries", &q, "--as-admin", "--no-advice"];
    let mut json_args = vec!["--format", "json"];
    json_args.extend_from_slice(&args);
    let out = db.planck(&json_args, dir.path());
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", stdout(&out), stderr(&out)));
    // The new field reads through the typed mirror of the wire format.
    let typed: common::explain_json::Report = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("the report does not match its wire format: {e}\n{v:#}"));
    assert!(typed.not_judged_objects.is_some(), "{v:#}");

    // The seeded tiny tables' statements are judged (planck seeded them
    // small), the hand-filled one's is not: both ways, no verdict on them.
    let status = |table: &str| {
        v["statements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["query"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("FROM {table} "))
            })
            .map(|s| s["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(status("menu_items"), "explained", "{v:#}");
    assert_eq!(status("icons"), "not_judged", "{v:#}");

    let findings = v["findings"].as_array().unwrap();
    let on = |f: &Value| f["relation"].as_str().unwrap_or("").to_string();
    for f in findings {
        let check = f["check"].as_str().unwrap();
        if check.starts_with("unused-") || check == "missing-fk-index" {
            assert!(!TINY.contains(&on(f).as_str()), "{f:#}");
        }
    }
    // The large table's unused indexes and its foreign key are reported.
    let reported: BTreeSet<(String, String)> = findings
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                f["index"].as_str().unwrap_or(&on(f)).to_string(),
            )
        })
        .collect();
    for (check, what) in [
        ("unused-index", "posts_title_idx"),
        ("unused-partial-index", "posts_drafts_idx"),
        ("missing-fk-index", "posts"),
    ] {
        assert!(
            reported.contains(&(check.to_string(), what.to_string())),
            "{check} {what} not in {reported:?}"
        );
    }

    // The tiny tables' indexes and foreign key are listed as not judged,
    // with their rows and why.
    let nj = &v["not_judged_objects"];
    assert_eq!(nj["min_table_rows"], 100, "{v:#}");
    let listed: BTreeSet<(String, String, String, u64)> = nj["objects"]
        .as_array()
        .unwrap_or_else(|| panic!("no not_judged_objects: {v:#}"))
        .iter()
        .map(|o| {
            (
                o["check"].as_str().unwrap().to_string(),
                o["table"].as_str().unwrap().to_string(),
                o["index"].as_str().unwrap_or("").to_string(),
                o["rows"].as_u64().unwrap(),
            )
        })
        .collect();
    let entry = |c: &str, t: &str, i: &str, n: u64| (c.into(), t.into(), i.into(), n);
    for want in [
        entry("unused-index", "categories", "categories_name_idx", 3),
        entry("unused-index", "menu_items", "menu_items_label_idx", 6),
        entry(
            "unused-partial-index",
            "menu_items",
            "menu_items_visible_idx",
            6,
        ),
        entry("unused-index", "icons", "icons_name_idx", 4),
        entry("missing-fk-index", "menu_items", "", 6),
    ] {
        assert!(listed.contains(&want), "{want:?} not in {listed:?}");
    }
    assert!(
        listed.iter().all(|(_, t, _, _)| TINY.contains(&t.as_str())),
        "{listed:?}"
    );
    let reason = nj["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["index"] == "menu_items_label_idx")
        .unwrap()["reason"]
        .clone();
    assert_eq!(
        reason, "menu_items holds 6 rows, below min_table_rows (100)",
        "{v:#}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("not judged, the data too small to show a verdict on them")
            && err.contains("menu_items 6 rows: missing-fk-index, menu_items_label_idx"),
        "{err}"
    );

    // The text report says it beside the counts.
    let out = db.planck(&args, dir.path());
    assert_exit(&out, 0);
    let text = stdout(&out).replace('\n', " ");
    assert!(
        text.contains("not judged, the data too small to show a verdict on them")
            && text.contains("(min_table_rows is 100)")
            && text.contains("categories 3 rows: categories_name_idx"),
        "{text}"
    );
}
