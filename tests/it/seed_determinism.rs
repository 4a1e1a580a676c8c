//! Issue 8 section 6: the dataset is pinned. The bundled example's spec at a
//! tiny scale must give, table by table, exactly the contents whose md5 is
//! committed here: a new `fake` word list, a changed constant or another
//! platform's `pow` would otherwise silently change every dataset.
//!
//! When a change to the data is intended, run this test, check the new
//! values are what the change meant, and replace them here in the same commit.

use crate::common;

use common::{assert_exit, project_dir, repo_root};

/// (table, "rows md5"): the md5 of its rows as text, sorted, one a line.
const PINNED: &[(&str, &str)] = &[
    ("accounts", "40 179a4ed2b4191b2647bf5210f56c95c8"),
    ("api_tokens", "163 698715974df9862bd59e0505dac96426"),
    ("devices", "101 9375e7cb3235bdf725c589499ea212c9"),
    ("dpop_replays", "40 53609e5216b992dc212efa69d157f659"),
    ("events", "2800 300eef5eb1a79ee572ac1de0fd4b4b27"),
    ("files", "2356 db4c27f7917e3935f116eadde0940e5f"),
    ("items", "800 0e3fdf3520798c12c22e85c0248b00e7"),
    ("pouches", "80 821e0226629541d330fdd925a6ef81d4"),
    ("rate_limits", "20 32025f69619d8bb23c42c7f5b2ad8a1f"),
    ("revisions", "1585 e826ce798427405622dd0ea032b48171"),
    ("users", "125 e3bf30a45d95d68605a927a25cf38743"),
];

#[test]
fn the_example_dataset_is_byte_for_byte_the_committed_one() {
    let db = test_db!(migrated);
    let dir = project_dir();
    let spec = repo_root().join("seeds/example.toml");
    let out = db.planck(
        &[
            "seed",
            "--spec",
            spec.to_str().unwrap(),
            "--scale",
            "0.002",
            "--threads",
            "2",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    let tables = db.query_strings(
        "SELECT c.relname::text FROM pg_class c
          WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
            AND NOT c.relispartition AND c.relname <> 'planck_migrations' ORDER BY 1",
    );
    let got: Vec<(String, String)> = tables
        .iter()
        .map(|t| {
            let h = db.query_strings(&format!(
                // Text forms that depend on no server or session setting.
                "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres';
                 SET extra_float_digits = 1;
                 SELECT count(*) || ' ' || coalesce(md5(string_agg(x::text, E'\\n' ORDER BY x::text)), '') FROM {t} x"
            ));
            (t.clone(), h[0].clone())
        })
        .collect();
    let want: Vec<(String, String)> = PINNED
        .iter()
        .map(|(t, h)| (t.to_string(), h.to_string()))
        .collect();
    assert_eq!(
        got,
        want,
        "the example dataset changed; if intended, pin:\n{}",
        got.iter()
            .map(|(t, h)| format!("    (\"{t}\", \"{h}\"),"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
