//! Issue 13 cause 3: `planck seed` follows the queries file's `[observed]`.
//! A column no spec and no CHECK constrains takes the literals the recorded
//! application compared it with, in their recorded proportion; a nullable
//! column it tested with `IS NULL` gets a rare NULL share (1 %) instead of
//! the default 10 %. A spec still wins, and a CHECK's own values win over
//! the recording. Against a real server, through the real binary.

use crate::common;

use common::{TestDb, assert_exit, project_dir, stdout};

const SCHEMA: &str = "CREATE TABLE api_check (
    id bigserial PRIMARY KEY,
    status text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('http', 'tcp')),
    deleted_at timestamptz,
    note text,
    parent_id bigint REFERENCES api_check (id)
)";

/// `up` observed 3 times as often as `down`; `kind` observed with a value its
/// CHECK refuses; `deleted_at` tested with IS NULL.
const QUERIES: &str = r#"format_version = 2

[observed]
"public.api_check.status" = { values = { up = 300, down = 100 } }
"public.api_check.kind" = { values = { udp = 50 } }
"public.api_check.deleted_at" = { null_tests = 7 }
"public.api_check.parent_id" = { null_tests = 3 }
"#;

/// Seeds `api_check` (`rows` rows) from a project whose queries file is
/// `queries` (none: no file) and spec `spec`; the JSON summary.
fn seed(
    db: &TestDb,
    queries: Option<&str>,
    spec: &str,
    rows: u64,
) -> planck::seed::summary::JsonSummary {
    let dir = project_dir();
    if let Some(q) = queries {
        std::fs::create_dir_all(dir.path().join("queries")).unwrap();
        std::fs::write(dir.path().join("queries/recorded.toml"), q).unwrap();
    }
    let spec_path = dir.path().join("spec.toml");
    std::fs::write(
        &spec_path,
        format!("[tables.api_check]\nrows = {rows}\n{spec}"),
    )
    .unwrap();
    let out = db.planck(
        &[
            "--format",
            "json",
            "seed",
            "--truncate",
            "--spec",
            spec_path.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn count(db: &TestDb, sql: &str) -> u64 {
    db.query_strings(sql)[0].parse().unwrap()
}

#[test]
fn free_columns_follow_the_recording_and_a_spec_or_check_wins() {
    let db = test_db!();
    db.exec(SCHEMA);
    const ROWS: u64 = 20_000;

    // Without a queries file: free text, the default 10 % of NULLs.
    let v = seed(&db, None, "", ROWS);
    assert!(
        v.followed_recording.is_empty(),
        "{:?}",
        v.followed_recording
    );
    let free = count(
        &db,
        "SELECT count(*) FROM api_check WHERE status NOT IN ('up', 'down')",
    );
    assert!(free > ROWS / 2, "{free} rows of free text");
    let nulls = count(
        &db,
        "SELECT count(*) FROM api_check WHERE deleted_at IS NULL",
    );
    assert!((1_500..2_500).contains(&nulls), "{nulls} NULLs");
    let nulls = count(
        &db,
        "SELECT count(*) FROM api_check WHERE parent_id IS NULL",
    );
    assert!((1_500..2_500).contains(&nulls), "{nulls} NULL parents");

    // With it: only 'up' and 'down', about 3 to 1; deleted_at about 1 % NULL;
    // kind keeps its CHECK's values ('udp' violates it); note is unobserved.
    let v = seed(&db, Some(QUERIES), "", ROWS);
    assert_eq!(
        v.followed_recording,
        vec![
            "public.api_check.status: values".to_string(),
            "public.api_check.deleted_at: NULL share 1 %".to_string(),
            "public.api_check.parent_id: NULL share 1 %".to_string(),
        ]
    );
    let other = count(
        &db,
        "SELECT count(*) FROM api_check WHERE status NOT IN ('up', 'down')",
    );
    assert_eq!(other, 0);
    let up = count(&db, "SELECT count(*) FROM api_check WHERE status = 'up'");
    assert!((14_000..16_000).contains(&up), "{up} of {ROWS} are 'up'");
    let nulls = count(
        &db,
        "SELECT count(*) FROM api_check WHERE deleted_at IS NULL",
    );
    assert!((100..400).contains(&nulls), "{nulls} NULLs");
    let nulls = count(
        &db,
        "SELECT count(*) FROM api_check WHERE parent_id IS NULL",
    );
    assert!((100..400).contains(&nulls), "{nulls} NULL parents");
    let kinds = db.query_strings("SELECT DISTINCT kind FROM api_check ORDER BY 1");
    assert_eq!(kinds, vec!["http", "tcp"]);
    let note_nulls = count(&db, "SELECT count(*) FROM api_check WHERE note IS NULL");
    assert!((1_500..2_500).contains(&note_nulls), "{note_nulls} NULLs");

    // A spec on the column wins over the recording.
    let v = seed(
        &db,
        Some(QUERIES),
        "[tables.api_check.columns]\nstatus = { values = [\"paused\"] }\n",
        ROWS,
    );
    assert_eq!(
        v.followed_recording,
        vec![
            "public.api_check.deleted_at: NULL share 1 %".to_string(),
            "public.api_check.parent_id: NULL share 1 %".to_string(),
        ]
    );
    let statuses = db.query_strings("SELECT DISTINCT status FROM api_check");
    assert_eq!(statuses, vec!["paused"]);
}
