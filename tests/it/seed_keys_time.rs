//! Unique keys over a foreign key and a date (issue 46): `UNIQUE (store_id,
//! day)` under its parent, `UNIQUE (region_id, day)` beside a deeper
//! parent, a primary key over a store and a day a CHECK keeps in one
//! month. A date holds a day: rows closer than a day apart repeat once
//! stored, so "unique instants" over the default range (about 2,100 days)
//! made duplicates past 2,100 rows, found only when the index was rebuilt
//! (23505, the table emptied). Each key is now enumerated with its date's
//! days: per parent, jointly with a parent that is not the layout's, the
//! range widened where no CHECK bounds it.

use crate::common;

use common::{TestDb, assert_exit, project_dir, stderr};

const SHOPS: &str = "
CREATE TABLE regions (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE stores (id serial PRIMARY KEY, region_id integer NOT NULL REFERENCES regions,
                     name text NOT NULL);
CREATE TABLE store_days (
    id       serial PRIMARY KEY,
    store_id integer NOT NULL REFERENCES stores,
    day      date NOT NULL,
    takings  integer NOT NULL DEFAULT 0,
    UNIQUE (store_id, day)
);
CREATE TABLE region_reports (
    id        serial PRIMARY KEY,
    store_id  integer NOT NULL REFERENCES stores,
    region_id integer NOT NULL REFERENCES regions,
    day       date NOT NULL,
    body      text,
    CONSTRAINT one_report_a_day UNIQUE (region_id, day)
);
CREATE TABLE january_counts (
    store_id integer NOT NULL REFERENCES stores,
    day      date NOT NULL CHECK (day >= '2024-01-01' AND day <= '2024-01-31'),
    visitors integer NOT NULL,
    PRIMARY KEY (store_id, day)
);
";

fn one(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql).remove(0).parse().unwrap()
}

#[test]
fn keys_over_a_foreign_key_and_a_date_hold_past_the_default_range_of_days() {
    let db = test_db!();
    let dir = project_dir();
    std::fs::create_dir_all(dir.path().join("migrations")).unwrap();
    std::fs::write(dir.path().join("migrations/0001_shops.sql"), SHOPS).unwrap();
    assert_exit(&db.planck(&["migrate"], dir.path()), 0);
    // 3,000 regions, 6,000 stores: each table below has more rows than
    // the default range has days.
    let out = db.planck(&["seed", "--no-spec", "--rows", "3000"], dir.path());
    let err = stderr(&out);
    assert_exit(&out, 0);
    assert!(!err.contains("23505"), "{err}");

    let stores = one(&db, "SELECT count(*) FROM stores");
    assert!(stores > 2200, "{stores} stores\n{err}");
    // Under its parent: as many rows as sized (none lowered), every
    // (store, day) once.
    let days = one(&db, "SELECT count(*) FROM store_days");
    assert!(
        days >= 2 * stores,
        "{days} store days for {stores} stores\n{err}"
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM (SELECT DISTINCT store_id, day FROM store_days) d"
        ),
        days
    );
    // Beside a deeper parent (stores): the region's keys times the days.
    let reports = one(&db, "SELECT count(*) FROM region_reports");
    assert!(reports > 2200, "{reports} region reports\n{err}");
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM (SELECT DISTINCT region_id, day FROM region_reports) d"
        ),
        reports
    );
    // The dates stay dates a calendar has (the range widened, not wrapped).
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM store_days WHERE day < '1990-01-01' OR day > '2200-01-01'"
        ),
        0
    );
    // A CHECK bounds both ends: at most 31 days a store, all in January.
    let january = one(&db, "SELECT count(*) FROM january_counts");
    assert!(january > 0, "{err}");
    let most = one(
        &db,
        "SELECT max(n) FROM (SELECT count(*) AS n FROM january_counts GROUP BY store_id) c",
    );
    assert!(most <= 31, "{most} days of January for one store");
}
