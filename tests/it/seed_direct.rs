//! The direct encoders (`planck::seed::direct`) write, for every column,
//! exactly the bytes of the general path (a value, then its encoding): on
//! the bundled example, on a schema made to reach each encoder, and on the
//! vendored real schemas. The pinned dataset (tests/it/seed_determinism.rs)
//! checks the result on the server; this checks every column, row by row.

use crate::common;

use std::collections::BTreeSet;

use common::{TestDb, block_on, repo_root};
use planck::seed::planner;
use planck::seed::reference::ReferenceKeys;
use planck::seed::row::plan::SeedPlan;
use planck::seed::spec::SpecFile;
use planck::seed::{copy, direct};

/// The plan `planck seed` makes for `db` with `spec` (none: `--no-spec`).
fn plan_of(db: &TestDb, spec: Option<&str>, scale: f64) -> SeedPlan {
    let conn = db.conn();
    let cat = block_on(async move {
        let mut client = conn.connect().await.unwrap();
        planck::catalog::schema::load(&mut client, &[])
            .await
            .unwrap()
    });
    let sf = match spec {
        Some(text) => SpecFile::parse(std::path::Path::new("spec.toml"), text).unwrap(),
        None => SpecFile::default(),
    };
    let opts = planner::Options {
        seed: 20260101,
        scale,
        default_rows: Some(500),
        reference_keys: ReferenceKeys::new(),
        refused: Default::default(),
        observed: Default::default(),
    };
    planner::build_skipping(&cat, &sf, &opts, true).unwrap()
}

/// Compares both encoders on every table of `plan`, over its first rows and
/// a run from its middle (chunks that start inside a block and a parent);
/// returns the encoder names seen.
fn both_agree(plan: &SeedPlan) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    for (t, tp) in plan.tables.iter().enumerate() {
        let cols: Vec<usize> = (0..tp.cols.len()).filter(|c| tp.cols[*c].include).collect();
        for &c in &cols {
            seen.insert(direct::encoder_name(plan, t, c));
        }
        let mid = tp.rows / 2;
        for rows in [0..tp.rows.min(2000), mid..(mid + 700).min(tp.rows)] {
            let general = copy::encode_chunk(plan, t, &cols, rows.clone(), 1 << 16);
            let fast = direct::encode_chunk(plan, t, &cols, rows.clone(), 1 << 16);
            if general != fast {
                // Name the first column that differs.
                for &c in &cols {
                    for row in rows.clone() {
                        let g = copy::encode_chunk(plan, t, &[c], row..row + 1, 64);
                        let f = direct::encode_chunk(plan, t, &[c], row..row + 1, 64);
                        assert_eq!(
                            g,
                            f,
                            "{}.{} row {row}: the direct encoder ({}) differs",
                            tp.display,
                            tp.cols[c].name,
                            direct::encoder_name(plan, t, c)
                        );
                    }
                }
                panic!("{} rows {rows:?}: the encoders differ", tp.display);
            }
        }
    }
    seen
}

#[test]
fn the_bundled_example_encodes_the_same_both_ways() {
    let db = test_db!(migrated);
    let spec = std::fs::read_to_string(repo_root().join("seeds/example.toml")).unwrap();
    let seen = both_agree(&plan_of(&db, Some(&spec), 0.02));
    // The example's text choices, paragraphs, JSON and tag arrays take the
    // direct encoders (else this test compares the general path with itself).
    for e in ["choice", "text", "json", "choice array", "plain"] {
        assert!(seen.contains(e), "no {e} column in the example: {seen:?}");
    }
}

/// A column for each direct encoder and for the cases beside them.
const KINDS: &str = r#"
    CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
    CREATE TABLE parents (id serial PRIMARY KEY, name text NOT NULL);
    CREATE TABLE kinds (
        id bigserial PRIMARY KEY,
        parent_id int REFERENCES parents,
        status text NOT NULL,
        maybe text,
        mood mood NOT NULL,
        rank int NOT NULL,
        fixed text NOT NULL,
        short varchar(5) NOT NULL,
        body text NOT NULL,
        code text NOT NULL,
        path text NOT NULL,
        label text NOT NULL,
        email text NOT NULL,
        doc jsonb NOT NULL,
        plain_doc json NOT NULL,
        empty_doc jsonb NOT NULL,
        tags text[] NOT NULL,
        moods mood[] NOT NULL,
        scores int[] NOT NULL,
        sku text NOT NULL CHECK (sku ~ '^[A-Z]{3}-[0-9]{4}$'),
        created_at timestamptz NOT NULL
    );
"#;

const KINDS_SPEC: &str = r#"
[tables.parents]
rows = 300
[tables.kinds]
rows = 3000
[tables.kinds.columns]
parent_id = { null = 0.3 }
status = { values = { open = 5, "quote\"d" = 1, "naïve" = 2 } }
maybe = { values = ["a", "b"], null = 0.4 }
mood = { values = ["sad", "happy"] }
rank = { values = [1, 2, 3] }
fixed = { values = ["always"] }
short = { gen = "title", words = [3, 6] }
body = { gen = "paragraphs", len = [10, 400] }
code = { gen = "hex", len = [40, 40] }
path = { gen = "path" }
label = { format = "item-{row}-{word}" }
email = { gen = "email" }
doc = { json = { source = { values = ["cli", "web"] }, views = { range = [0, 50] }, ip = { gen = "ip" }, on = { values = [true, false] } } }
plain_doc = { json = { kind = { values = ["a\\b", "c"] }, n = { range = [-5, 5] } } }
empty_doc = { json = {} }
tags = { element = { values = ["rust", "sql", "docs"] }, len = [0, 4] }
moods = { element = { values = ["ok", "sad"] }, len = [1, 3] }
scores = { element = { range = [1, 9] }, len = [0, 3] }
created_at = { range = ["2024-01-01", "2026-01-01"], bias = 2.0 }
"#;

#[test]
fn each_direct_encoder_writes_the_general_paths_bytes() {
    let db = test_db!();
    db.exec(KINDS);
    let seen = both_agree(&plan_of(&db, Some(KINDS_SPEC), 1.0));
    for e in [
        "choice",
        "nullable choice",
        "text",
        "json",
        "choice array",
        "plain",
        "general",
    ] {
        assert!(seen.contains(e), "no {e} column: {seen:?}");
    }
}

#[test]
fn the_vendored_schemas_encode_the_same_both_ways() {
    for fixture in ["graphile-starter", "koji"] {
        let db = TestDb::new(&format!("{}_{}", test_name!(), fixture.replace('-', "_")));
        common::load_fixture(&db, &common::fixture(fixture));
        both_agree(&plan_of(&db, None, 1.0));
    }
}
