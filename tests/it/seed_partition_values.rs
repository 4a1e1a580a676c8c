//! A list partition's values typed as its key column (issue 46): a
//! partitioned table's rows spread over every partition, so a unique index
//! declared on each partition only, over columns that omit the partition
//! key, holds. Schemas written here; zero-spec seeds in one run, the server
//! the judge.

use crate::common;

use common::{assert_exit, project_dir, stderr};

use crate::seed_constraints::count;

/// `ballot` is partitioned by a boolean, each partition with its own
/// `UNIQUE (poll, voter)`: planck holds it as `(flagged, poll, voter)`,
/// enumerating the flag with the poll, so a poll's two rows go one to each
/// partition. `visit` is partitioned by a date list. Before: the list's
/// values were texts, which the encoder wrote as `false` for a boolean
/// (every ballot in `ballot_clean`, a poll's two rows beside one voter:
/// `could not create unique index "ballot_clean_key"`, 23505, or
/// `ballot_flagged` empty) and as 2000-01-01 for a date (`no partition of
/// relation "visit" found for row`).
#[test]
fn a_list_partitions_values_route_rows_to_every_partition() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE voter (id serial PRIMARY KEY,
                             code smallint NOT NULL UNIQUE CHECK (code BETWEEN 1 AND 3));
         CREATE TABLE poll (id serial PRIMARY KEY, title text NOT NULL);
         CREATE TABLE ballot (
             flagged boolean NOT NULL,
             voter int NOT NULL REFERENCES voter,
             poll int NOT NULL REFERENCES poll,
             note text
         ) PARTITION BY LIST (flagged);
         CREATE TABLE ballot_clean PARTITION OF ballot FOR VALUES IN (false);
         CREATE TABLE ballot_flagged PARTITION OF ballot FOR VALUES IN (true);
         CREATE UNIQUE INDEX ballot_clean_key ON ballot_clean (poll, voter);
         CREATE UNIQUE INDEX ballot_flagged_key ON ballot_flagged (poll, voter);
         CREATE TABLE site (id serial PRIMARY KEY, host text NOT NULL);
         CREATE TABLE visit (
             day date NOT NULL,
             site int NOT NULL REFERENCES site,
             hits int NOT NULL DEFAULT 0
         ) PARTITION BY LIST (day);
         CREATE TABLE visit_first PARTITION OF visit FOR VALUES IN ('2024-03-01');
         CREATE TABLE visit_second PARTITION OF visit FOR VALUES IN ('2024-03-02', '2024-03-03');",
    );
    let indexes =
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                    WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1";
    let before = db.query_strings(indexes);
    let dir = project_dir();
    let out = db.planck(&["seed", "--no-spec", "--rows", "40"], dir.path());
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert_eq!(db.query_strings(indexes), before, "{err}");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_constraint
              WHERE connamespace = 'public'::regnamespace AND NOT convalidated"
        ),
        0,
        "{err}"
    );
    for part in [
        "ballot_clean",
        "ballot_flagged",
        "visit_first",
        "visit_second",
    ] {
        assert!(
            count(&db, &format!("SELECT count(*) FROM {part}")) > 0,
            "{part} holds no row\n{err}"
        );
    }
    for part in ["ballot_clean", "ballot_flagged"] {
        assert_eq!(
            count(
                &db,
                &format!(
                    "SELECT count(*) FROM (SELECT 1 FROM {part} GROUP BY poll, voter
                      HAVING count(*) > 1) d"
                )
            ),
            0,
            "{part} repeats (poll, voter)\n{err}"
        );
    }
}
