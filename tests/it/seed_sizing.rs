//! Zero-spec sizing from the schema's shape (issue 47): a forum whose
//! migrations write a few rows into the parents of its core tables (3
//! categories, 2 ranks, 4 groups) and which carries configuration tables
//! nothing references. `planck seed --rows N` gives the core (users,
//! threads, posts, likes) N-scale rows, keeps the reference rows exactly,
//! spreads the core's picks of them skewed, and keeps the configuration
//! tables small; `--dry-run` says how it read each table.

use crate::common;

use std::collections::HashSet;

use common::{TestDb, assert_exit, block_on, project_dir, stderr, stdout};
use planck::seed::reference::Kept;
use planck::seed::summary::{Summary, render_table};
use planck::seed::{planner, sizing_roles};

/// The forum: reference rows written by the migration, the core hanging off
/// them, configuration tables apart.
const FORUM: &str = "
CREATE TABLE categories (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
CREATE TABLE ranks (id serial PRIMARY KEY, title text NOT NULL);
CREATE TABLE groups (id serial PRIMARY KEY, name text NOT NULL);
INSERT INTO categories (name) VALUES ('general'), ('help'), ('off-topic');
INSERT INTO ranks (title) VALUES ('member'), ('moderator');
INSERT INTO groups (name) VALUES ('guests'), ('members'), ('staff'), ('banned');

CREATE TABLE users (
    id         bigserial PRIMARY KEY,
    rank_id    integer NOT NULL REFERENCES ranks,
    group_id   integer NOT NULL REFERENCES groups,
    username   text NOT NULL UNIQUE,
    email      text,
    joined_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE threads (
    id          bigserial PRIMARY KEY,
    category_id integer NOT NULL REFERENCES categories,
    starter_id  bigint REFERENCES users ON DELETE SET NULL,
    title       text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE posts (
    id          bigserial PRIMARY KEY,
    thread_id   bigint NOT NULL REFERENCES threads ON DELETE CASCADE,
    category_id integer NOT NULL REFERENCES categories,
    poster_id   bigint REFERENCES users ON DELETE SET NULL,
    body        text NOT NULL,
    posted_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE likes (
    id       bigserial PRIMARY KEY,
    post_id  bigint NOT NULL REFERENCES posts ON DELETE CASCADE,
    user_id  bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    UNIQUE (post_id, user_id)
);

CREATE TABLE menu_items (id serial PRIMARY KEY, title text NOT NULL, url text NOT NULL, position integer NOT NULL);
CREATE TABLE icons (id serial PRIMARY KEY, kind text NOT NULL, image text);
CREATE TABLE social_providers (id serial PRIMARY KEY, provider text NOT NULL UNIQUE, enabled boolean NOT NULL DEFAULT true);
";

const CORE: [&str; 4] = ["users", "threads", "posts", "likes"];
const CONFIGURATION: [&str; 3] = ["menu_items", "icons", "social_providers"];
const REFERENCE: [(&str, i64); 3] = [("categories", 3), ("ranks", 2), ("groups", 4)];

/// A project whose one migration builds the forum, migrated into a fresh
/// database.
fn forum(db: &TestDb) -> tempfile::TempDir {
    let dir = project_dir();
    std::fs::create_dir_all(dir.path().join("migrations")).unwrap();
    std::fs::write(dir.path().join("migrations/0001_forum.sql"), FORUM).unwrap();
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 0);
    dir
}

fn count(db: &TestDb, table: &str) -> i64 {
    db.query_strings(&format!("SELECT count(*) FROM {table}"))[0]
        .parse()
        .unwrap()
}

/// Rows of `child` whose `col` finds no row of `parent` (NULLs aside).
fn orphans(db: &TestDb, child: &str, col: &str, parent: &str) -> i64 {
    db.query_strings(&format!(
        "SELECT count(*) FROM {child} c WHERE c.{col} IS NOT NULL
            AND NOT EXISTS (SELECT FROM {parent} p WHERE p.id = c.{col})"
    ))[0]
        .parse()
        .unwrap()
}

#[test]
fn a_forums_core_gets_rows_scale_and_its_configuration_and_reference_tables_stay_small() {
    let db = test_db!();
    let dir = forum(&db);
    let before: Vec<String> = REFERENCE
        .iter()
        .flat_map(|(t, _)| db.query_strings(&format!("SELECT {t}::text FROM {t} ORDER BY id")))
        .collect();
    let n: i64 = 2000;
    let out = db.planck(&["seed", "--rows", &n.to_string()], dir.path());
    assert_exit(&out, 0);
    let err = stderr(&out);

    // The core: users and threads at --rows (their parents are reference
    // data, which sizes nothing), posts grow from threads, likes from posts.
    let rows: Vec<i64> = CORE.iter().map(|t| count(&db, t)).collect();
    let [users, threads, posts, likes] = rows[..] else {
        unreachable!()
    };
    assert_eq!(users, n, "users, not sized from the 4 groups\n{err}");
    assert_eq!(
        threads, n,
        "threads, not sized from the 3 categories\n{err}"
    );
    assert!(posts > threads, "posts {posts}, threads {threads}\n{err}");
    assert!(posts >= 2 * n, "posts {posts}\n{err}");
    assert!(likes >= posts, "likes {likes}, posts {posts}\n{err}");

    // Configuration tables nothing references: a few dozen rows at most.
    for t in CONFIGURATION {
        let c = count(&db, t);
        assert!((1..=50).contains(&c) && c * 10 < n, "{t}: {c} rows\n{err}");
    }

    // Reference tables keep exactly the rows the migration wrote.
    for (t, k) in REFERENCE {
        assert_eq!(count(&db, t), k, "{t}");
    }
    let after: Vec<String> = REFERENCE
        .iter()
        .flat_map(|(t, _)| db.query_strings(&format!("SELECT {t}::text FROM {t} ORDER BY id")))
        .collect();
    assert_eq!(after, before);

    // Every foreign key holds (the load validated them; asserted here too).
    for (child, col, parent) in [
        ("users", "rank_id", "ranks"),
        ("users", "group_id", "groups"),
        ("threads", "category_id", "categories"),
        ("threads", "starter_id", "users"),
        ("posts", "thread_id", "threads"),
        ("posts", "category_id", "categories"),
        ("posts", "poster_id", "users"),
        ("likes", "post_id", "posts"),
        ("likes", "user_id", "users"),
    ] {
        assert_eq!(orphans(&db, child, col, parent), 0, "{child}.{col}");
    }
    assert_eq!(
        db.query_strings(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND NOT convalidated"
        ),
        vec!["0"]
    );

    // The core picks among every kept row, skewed: the busiest category
    // holds more threads than the quietest, every category some.
    let per: Vec<i64> = db
        .query_strings(
            "SELECT count(t.id) FROM categories c LEFT JOIN threads t ON t.category_id = c.id
              GROUP BY c.id ORDER BY 1 DESC",
        )
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(per.len(), 3);
    assert!(per[2] > 0, "a category without threads: {per:?}");
    assert!(
        per[0] >= 2 * per[2],
        "threads per category not skewed: {per:?}"
    );
}

/// The roles `--dry-run` shows, computed as `planck seed --dry-run` plans:
/// the catalog, the rows kept as reference data, the plan, then
/// [`sizing_roles::describe`] into the summary.
fn dry_run_roles(db: &TestDb, rows: u64) -> (Vec<sizing_roles::TableRole>, String) {
    let conn = db.conn();
    block_on(async move {
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
            default_rows: Some(rows),
            reference_keys,
            refused,
            observed: Default::default(),
        };
        let mut plan = planner::build_skipping(&cat, &sf, &opts, false).unwrap();
        kept.wire(&cat, &mut plan);
        let reference: Vec<usize> = kept.reference.iter().map(|r| r.0).collect();
        let roles = sizing_roles::describe(&cat, &plan, &sf, &reference, &kept.grown);
        let kept_names = kept.names(&cat);
        let mut summary = Summary::of(&plan, None, 0.0, true);
        summary.tables.retain(|t| !kept_names.contains(&t.table));
        summary.notes.tables_kept = kept_names;
        summary.set_roles(&roles);
        let mut text = Vec::new();
        render_table(&mut text, &summary).unwrap();
        (roles, String::from_utf8(text).unwrap())
    })
}

#[test]
fn a_dry_run_names_each_tables_role_and_why() {
    let db = test_db!();
    let _dir = forum(&db);
    let (roles, text) = dry_run_roles(&db, 2000);
    let line = |t: &str| {
        roles
            .iter()
            .find(|r| r.table == t)
            .unwrap_or_else(|| panic!("no role for {t}: {roles:?}"))
            .line
            .clone()
    };
    assert_eq!(line("users"), "core: referenced by 3 tables");
    assert_eq!(line("threads"), "core: referenced by 1 table");
    assert_eq!(
        line("posts"),
        "core: child of threads; referenced by 1 table"
    );
    assert_eq!(line("likes"), "core: child of posts, users");
    for t in CONFIGURATION {
        assert_eq!(line(t), "configuration: nothing references it", "{t}");
    }
    assert_eq!(
        line("categories"),
        "reference: 3 rows written before the seed, kept"
    );
    assert_eq!(
        line("groups"),
        "reference: 4 rows written before the seed, kept"
    );
    insta::assert_snapshot!(text);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

/// `planck seed --dry-run` itself shows the roles (the JSON's `role`).
#[test]
fn the_dry_run_command_prints_the_roles() {
    let db = test_db!();
    let dir = forum(&db);
    let out = db.planck(
        &["--format", "json", "seed", "--rows", "2000", "--dry-run"],
        dir.path(),
    );
    assert_exit(&out, 0);
    let v: planck::seed::summary::JsonSummary = serde_json::from_str(&stdout(&out)).unwrap();
    let role = |t: &str| {
        v.tables
            .iter()
            .find(|x| x.table == t)
            .and_then(|x| x.role.clone())
            .unwrap_or_default()
    };
    assert_eq!(role("users"), "core: referenced by 3 tables");
    assert_eq!(role("menu_items"), "configuration: nothing references it");
    let text = db.planck(&["seed", "--rows", "2000", "--dry-run"], dir.path());
    assert_exit(&text, 0);
    // The note wraps at the terminal's width: read it as one line.
    let words = stdout(&text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("categories (3 rows), groups (4 rows), ranks (2 rows)"),
        "{}",
        stdout(&text)
    );
}
