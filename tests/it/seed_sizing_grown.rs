//! Zero-spec sizing of the tables a production site has large and whose
//! migrations leave small (issue 47): a CMS whose migrations write the root
//! and home pages into its page table (a serial key, a wide row, one-to-one
//! page-type children, a reference to itself), beside a session table and a
//! search index nothing references. `planck seed --rows N` grows the page
//! table to N-scale rows with keys past the two it keeps (the sequence moved
//! past them), gives its page types rows among the new pages, sizes the
//! session table and the search index as the core, and keeps the narrow
//! lookup tables (locales, content types) and the configuration small.

use crate::common;

use std::collections::HashSet;

use common::{TestDb, assert_exit, block_on, project_dir, stderr};
use planck::seed::reference::Kept;
use planck::seed::{planner, sizing_roles};

const CMS: &str = "
CREATE TABLE locales (id serial PRIMARY KEY, code text NOT NULL UNIQUE);
INSERT INTO locales (code) VALUES ('en');
CREATE TABLE content_types (id serial PRIMARY KEY, app_label text NOT NULL, model text NOT NULL,
                            UNIQUE (app_label, model));
INSERT INTO content_types (app_label, model) VALUES ('blog', 'blogpage'), ('events', 'eventpage');

CREATE TABLE pages (
    id                 serial PRIMARY KEY,
    path               text NOT NULL UNIQUE,
    depth              integer NOT NULL,
    numchild           integer NOT NULL DEFAULT 0,
    title              text NOT NULL,
    slug               text NOT NULL,
    live               boolean NOT NULL DEFAULT true,
    locale_id          integer NOT NULL REFERENCES locales,
    alias_of_id        integer REFERENCES pages,
    first_published_at timestamptz
);
INSERT INTO pages (path, depth, title, slug, locale_id)
     VALUES ('0001', 1, 'Root', 'root', 1), ('00010001', 2, 'Home', 'home', 1);
CREATE TABLE blog_pages (page_ptr_id integer PRIMARY KEY REFERENCES pages, intro text);
CREATE TABLE event_pages (page_ptr_id integer PRIMARY KEY REFERENCES pages,
                          starts_at timestamptz NOT NULL);
CREATE TABLE sites (id serial PRIMARY KEY, hostname text NOT NULL,
                    root_page_id integer NOT NULL REFERENCES pages);
INSERT INTO sites (hostname, root_page_id) VALUES ('localhost', 2);

CREATE TABLE sessions (session_key varchar(40) PRIMARY KEY, session_data text NOT NULL,
                       expire_date timestamptz NOT NULL);
CREATE TABLE search_index (
    id              serial PRIMARY KEY,
    content_type_id integer NOT NULL REFERENCES content_types,
    object_id       varchar(255) NOT NULL,
    title           text NOT NULL,
    body            text,
    UNIQUE (content_type_id, object_id)
);
CREATE TABLE menu_items (id serial PRIMARY KEY, title text NOT NULL, url text NOT NULL,
                         position integer NOT NULL);
";

fn cms(db: &TestDb) -> tempfile::TempDir {
    let dir = project_dir();
    std::fs::create_dir_all(dir.path().join("migrations")).unwrap();
    std::fs::write(dir.path().join("migrations/0001_cms.sql"), CMS).unwrap();
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 0);
    dir
}

fn one(db: &TestDb, sql: &str) -> String {
    db.query_strings(sql).remove(0)
}

fn count(db: &TestDb, table: &str) -> i64 {
    one(db, &format!("SELECT count(*) FROM {table}"))
        .parse()
        .unwrap()
}

#[test]
fn a_core_table_the_migrations_wrote_two_rows_into_is_grown_past_them() {
    let db = test_db!();
    let dir = cms(&db);
    let kept_pages = db.query_strings("SELECT pages::text FROM pages ORDER BY id");
    let n: i64 = 2000;
    let out = db.planck(&["seed", "--rows", &n.to_string()], dir.path());
    assert_exit(&out, 0);
    let err = stderr(&out);

    // The page table: its two rows exactly as they were, N new rows past
    // them, and its sequence past every key.
    let pages = count(&db, "pages");
    assert_eq!(pages, n + 2, "pages grown to --rows past the 2 kept\n{err}");
    assert_eq!(
        db.query_strings("SELECT pages::text FROM pages WHERE id <= 2 ORDER BY id"),
        kept_pages,
        "the kept rows are kept as they are"
    );
    assert_eq!(
        one(&db, "SELECT min(id) FROM pages WHERE id > 2"),
        "3",
        "new keys start past the kept ones"
    );
    let max: i64 = one(&db, "SELECT max(id) FROM pages").parse().unwrap();
    let next: i64 = one(&db, "SELECT nextval('pages_id_seq')").parse().unwrap();
    assert!(next > max, "sequence at {next}, keys up to {max}");

    // The page types: N-scale rows, each on a page of the table.
    for t in ["blog_pages", "event_pages"] {
        let rows = count(&db, t);
        assert!(rows >= n / 2, "{t}: {rows} rows\n{err}");
        let orphans = one(
            &db,
            &format!(
                "SELECT count(*) FROM {t} c WHERE NOT EXISTS (SELECT FROM pages p WHERE p.id = c.page_ptr_id)"
            ),
        );
        assert_eq!(orphans, "0", "{t}");
    }
    // Nothing references them, and they are large all the same.
    assert_eq!(count(&db, "sessions"), n, "sessions\n{err}");
    assert_eq!(count(&db, "search_index"), n, "search index\n{err}");
    // Lookup tables and configuration stay as they are, small.
    assert_eq!(count(&db, "locales"), 1);
    assert_eq!(count(&db, "content_types"), 2);
    assert_eq!(count(&db, "sites"), 1);
    assert!(count(&db, "menu_items") <= 50, "{err}");
    // The application inserts a page after the seed.
    db.exec(
        "INSERT INTO pages (path, depth, title, slug, locale_id) VALUES ('0002', 1, 'x', 'x', 1)",
    );
}

#[test]
fn a_dry_run_says_which_table_is_grown_and_why() {
    let db = test_db!();
    let _dir = cms(&db);
    let conn = db.conn();
    let roles = block_on(async move {
        let mut client = conn.connect().await.unwrap();
        let cat = planck::catalog::schema::load(&mut client, &[])
            .await
            .unwrap();
        let mut sf = planck::seed::spec::SpecFile::default();
        let kept = Kept::decide(
            &client,
            &cat,
            &mut sf,
            1.0,
            false,
            &HashSet::new(),
            false,
            true,
        )
        .await
        .unwrap();
        let (reference_keys, refused) = kept.keys(&cat);
        let opts = planner::Options {
            seed: planner::DEFAULT_SEED,
            scale: 1.0,
            default_rows: Some(2000),
            reference_keys,
            refused,
            observed: Default::default(),
        };
        let mut plan = planner::build_skipping(&cat, &sf, &opts, false).unwrap();
        kept.wire(&cat, &mut plan);
        let reference: Vec<usize> = kept.reference.iter().map(|r| r.0).collect();
        sizing_roles::describe(&cat, &plan, &sf, &reference, &kept.grown)
    });
    let line = |t: &str| {
        roles
            .iter()
            .find(|r| r.table == t)
            .unwrap_or_else(|| panic!("no role for {t}: {roles:?}"))
            .line
            .clone()
    };
    assert_eq!(
        line("pages"),
        "grown: 2 rows written before the seed kept, new keys from 3 (10 columns, \
         2 one-to-one children, references itself, referenced by 3 tables); \
         referenced by 2 tables"
    );
    assert_eq!(
        line("sessions"),
        "core: nothing references it, but a key, a payload (session_data) and a \
         timestamp (expire_date): rows that grow with use"
    );
    assert_eq!(
        line("search_index"),
        "core: nothing references it, but a generic relation (content_type_id, \
         object_id): a row per object of the core"
    );
    assert_eq!(
        line("locales"),
        "reference: 1 row written before the seed, kept"
    );
    assert_eq!(
        line("content_types"),
        "reference: 2 rows written before the seed, kept"
    );
    assert_eq!(line("menu_items"), "configuration: nothing references it");
}

/// `planck seed --truncate` after a seed that grew the page table: the
/// migrations' rows stay (the site still references its home page), and
/// no line tells the user to pass the `--truncate` they passed.
#[test]
fn truncate_after_a_grown_seed_keeps_the_migration_rows_and_says_why() {
    let db = test_db!();
    let dir = cms(&db);
    let kept_pages = db.query_strings("SELECT pages::text FROM pages WHERE id <= 2 ORDER BY id");
    assert_exit(&db.planck(&["seed", "--rows", "300"], dir.path()), 0);
    let out = db.planck(&["seed", "--rows", "300", "--truncate"], dir.path());
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(!err.contains("pass --truncate"), "{err}");
    assert!(
        err.contains(
            "despite --truncate, because rows this seed leaves alone reference them: pages"
        ),
        "{err}"
    );
    assert_eq!(
        db.query_strings("SELECT pages::text FROM pages WHERE id <= 2 ORDER BY id"),
        kept_pages,
        "the migrations' pages"
    );
    assert_eq!(count(&db, "sites"), 1);
}

/// Each table's rows and a digest of them, in text forms no session
/// setting changes.
fn digest(db: &TestDb) -> Vec<String> {
    [
        "locales",
        "content_types",
        "pages",
        "blog_pages",
        "event_pages",
        "sites",
        "sessions",
        "search_index",
        "menu_items",
    ]
    .iter()
    .map(|t| {
        let h = db.query_strings(&format!(
            "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET extra_float_digits = 1;
             SELECT count(*) || ' ' || coalesce(md5(string_agg(x::text, E'\\n' ORDER BY x::text)), '')
               FROM {t} x"
        ));
        format!("{t}: {}", h[0])
    })
    .collect()
}

/// A seed that grows the page table, stopped before any table loaded or
/// once the pages committed, and run again: the next run grows the pages
/// from the same key as the stopped one (not planned as an empty table,
/// whose TRUNCATE would take the migrations' root and home pages, nor as
/// reference data), and ends with the dataset of a seed never stopped.
#[test]
fn a_stopped_seed_that_grew_a_table_is_finished_with_the_migrations_rows_kept() {
    let seed = |db: &TestDb, dir: &std::path::Path, stop: Option<&str>| {
        let mut cmd = common::planck_cmd(dir);
        cmd.arg("--database-url")
            .arg(&db.url)
            .args(["seed", "--rows", "300", "--threads", "1"]);
        if let Some(s) = stop {
            cmd.env("PLANCK_TEST_STOP", s);
        }
        cmd.output().unwrap()
    };
    let reference = TestDb::new(&format!("{}_reference", common::current_test()));
    let dir = cms(&reference);
    assert_exit(&seed(&reference, dir.path(), None), 0);
    let want = digest(&reference);
    for (part, stop) in [("start", "INT@start"), ("pages", "INT@loaded:pages")] {
        let db = TestDb::new(&format!("{}_{part}", common::current_test()));
        let dir = cms(&db);
        let kept_pages = db.query_strings("SELECT pages::text FROM pages ORDER BY id");
        assert_exit(&seed(&db, dir.path(), Some(stop)), 130);
        let again = seed(&db, dir.path(), None);
        assert_exit(&again, 0);
        let err = stderr(&again);
        assert!(
            err.contains("finishing the seed stopped before its end"),
            "{stop}: {err}"
        );
        assert_eq!(
            db.query_strings("SELECT pages::text FROM pages WHERE id <= 2 ORDER BY id"),
            kept_pages,
            "{stop}: the migrations' pages"
        );
        assert_eq!(
            digest(&db),
            want,
            "{stop}: not the uninterrupted dataset\n{err}"
        );
    }
}

/// `planck seed --truncate` after a completed seed that grew the page
/// table, when no row the seed leaves alone references a page (no site
/// row): the earlier seed's pages are replaced and the migrations' root
/// and home pages stay (`planck.seeded` keeps the key they end at), so the
/// tables end as a first seed with these parameters leaves them. Before,
/// the page table was truncated whole, the migrations' pages with it.
#[test]
fn truncate_after_a_grown_seed_replaces_only_the_seeds_rows() {
    let seed = |db: &TestDb, dir: &std::path::Path, args: &[&str]| {
        let mut all = vec!["seed", "--threads", "1"];
        all.extend_from_slice(args);
        let out = db.planck(&all, dir);
        assert_exit(&out, 0);
        stderr(&out)
    };
    let reference = TestDb::new(&format!("{}_reference", common::current_test()));
    let dir = cms(&reference);
    reference.exec("DELETE FROM sites");
    seed(&reference, dir.path(), &["--rows", "300"]);
    let want = digest(&reference);

    let db = test_db!();
    let dir = cms(&db);
    db.exec("DELETE FROM sites");
    let kept_pages = db.query_strings("SELECT pages::text FROM pages ORDER BY id");
    seed(&db, dir.path(), &["--rows", "500"]);
    assert_eq!(count(&db, "pages"), 502);
    let err = seed(&db, dir.path(), &["--rows", "300", "--truncate"]);
    assert_eq!(
        db.query_strings("SELECT pages::text FROM pages WHERE id <= 2 ORDER BY id"),
        kept_pages,
        "the migrations' pages\n{err}"
    );
    assert!(
        err.contains("pages: its 2 rows kept, new rows from key 3"),
        "{err}"
    );
    assert_eq!(digest(&db), want, "not the dataset of a first seed\n{err}");
    // And once more: the key the migrations' rows end at is still recorded.
    seed(&db, dir.path(), &["--rows", "300", "--truncate"]);
    assert_eq!(digest(&db), want);
}

/// `planck seed --truncate` after a completed seed (the page table grown
/// again, no site row holding a page): a configuration table (menu items,
/// nothing references them) holding the earlier seed's 10 rows is sized
/// as configuration again, 10 rows, not as the core (300): rows a planck
/// seed wrote (`planck.seeded` records them) are no migrations' rows.
/// Before, any table holding rows the run did not keep was read as a
/// grown part of the core.
#[test]
fn truncate_after_a_seed_sizes_a_configuration_table_as_configuration() {
    let db = test_db!();
    let dir = cms(&db);
    db.exec("DELETE FROM sites");
    let seed = |args: &[&str]| {
        let mut all = vec!["seed", "--rows", "300"];
        all.extend_from_slice(args);
        let out = db.planck(&all, dir.path());
        assert_exit(&out, 0);
        stderr(&out)
    };
    seed(&[]);
    let first = count(&db, "menu_items");
    assert!(first <= 50, "menu items after the first seed: {first}");
    let sessions = count(&db, "sessions");
    let err = seed(&["--truncate"]);
    assert_eq!(
        count(&db, "menu_items"),
        first,
        "menu items after --truncate\n{err}"
    );
    // The core is sized as before.
    assert_eq!(count(&db, "sessions"), sessions, "{err}");
}
