//! Issue 9 acceptance: every real schema under tests/fixtures (and the Join
//! Order Benchmark's, read from ../shared/fixtures) seeds with
//! `planck seed --no-spec --truncate` in one run, exit 0: no table skipped,
//! each table holding exactly the rows planck's JSON reports for it (on top
//! of the rows the fixture's own schema inserted, which planck keeps as
//! reference data), and every constraint, index and trigger the schema had
//! still there, with its exact definition, validated and enabled.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{TestDb, stderr, stdout};

/// Every user table (partitioned parents, not their partitions), as
/// `regclass` text (which is how planck names it: `schema.table` outside
/// `public`), with its row count: `name=count`, one query.
const COUNTS: &str = r#"
select c.oid::regclass::text || '=' ||
       (xpath('/row/n/text()', query_to_xml(format('select count(*) as n from %s', c.oid::regclass), false, true, '')))[1]::text
  from pg_class c join pg_namespace ns on ns.oid = c.relnamespace
 where c.relkind in ('r','p') and not c.relispartition
   and ns.nspname not in ('pg_catalog','information_schema','planck') and ns.nspname not like 'pg\_%'
 order by 1"#;

/// What the schema is made of, one line per object, to compare before and after.
const OBJECTS: &str = "
select format('constraint %s %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(c.oid), convalidated)
  from pg_constraint c join pg_namespace n on n.oid = c.connamespace
 where n.nspname not in ('pg_catalog','information_schema','planck') and n.nspname not like 'pg\\_%'
union all
select format('index %s', pg_get_indexdef(i.indexrelid))
  from pg_index i join pg_class t on t.oid = i.indrelid join pg_namespace n on n.oid = t.relnamespace
 where n.nspname not in ('pg_catalog','information_schema','planck') and n.nspname not like 'pg\\_%'
union all
select format('trigger %s %s %s', tgrelid::regclass, tgname, tgenabled)
  from pg_trigger where not tgisinternal
order by 1";

fn counts(db: &TestDb) -> BTreeMap<String, u64> {
    db.query_strings(COUNTS)
        .into_iter()
        .map(|line| {
            let (t, n) = line.rsplit_once('=').unwrap();
            (t.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// Seeds the loaded schema and checks the acceptance points; returns the
/// number of tables seeded.
fn seed_and_check(db: &TestDb) -> usize {
    let before = counts(db);
    assert!(!before.is_empty(), "the fixture loaded no tables");
    let objects_before = db.query_strings(OBJECTS);
    let dir = common::project_dir();
    let out = db.planck(
        &[
            "--format",
            "json",
            "seed",
            "--no-spec",
            "--truncate",
            "--rows",
            "300",
        ],
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "planck seed failed:\n{}",
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)));
    let reported: BTreeMap<String, u64> = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["table"].as_str().unwrap().to_string(),
                t["rows"].as_u64().unwrap(),
            )
        })
        .collect();
    let after = counts(db);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let mut seeded = 0;
    for (table, &n) in &after {
        let had = before[table];
        let wrote = reported.get(table).copied().unwrap_or(0);
        assert_eq!(
            n,
            had + wrote,
            "{table}: {n} rows, but it had {had} and planck reports {wrote}"
        );
        if had == 0 {
            assert!(wrote > 0, "{table} was skipped (no rows)");
            seeded += 1;
        }
    }
    let objects_after = db.query_strings(OBJECTS);
    let lost: Vec<_> = objects_before
        .iter()
        .filter(|o| !objects_after.contains(o))
        .collect();
    let gained: Vec<_> = objects_after
        .iter()
        .filter(|o| !objects_before.contains(o))
        .collect();
    assert!(
        lost.is_empty() && gained.is_empty(),
        "the schema changed:\n lost {lost:#?}\n gained {gained:#?}"
    );
    let invalid = db.query_strings(
        "select conrelid::regclass || ' ' || conname from pg_constraint where not convalidated",
    );
    assert!(invalid.is_empty(), "not validated: {invalid:?}");
    seeded
}

#[test]
fn issue9_pagila_seeds_in_one_run() {
    let db = test_db!();
    // The dump gives its objects to role `postgres`, which the test cluster
    // (superuser `planck`) lacks: create it rather than edit the dump.
    db.exec("DO $$ BEGIN CREATE ROLE postgres; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
    let sql = common::fixture("pagila/schema.sql");
    let out = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", &db.url, "-f"])
        .arg(&sql)
        .env("PGOPTIONS", "-c client_min_messages=warning")
        .output()
        .unwrap();
    assert!(out.status.success(), "pagila: {}", stderr(&out));
    assert!(seed_and_check(&db) >= 15);
}

#[test]

fn issue9_graphile_starter_seeds_in_one_run() {
    let db = test_db!();
    common::load_fixture(&db, &common::fixture("graphile-starter"));
    assert!(seed_and_check(&db) >= 10);
}

#[test]
fn issue9_koji_seeds_in_one_run() {
    let db = test_db!();
    common::load_fixture(&db, &common::fixture("koji"));
    assert!(seed_and_check(&db) >= 60);
}

#[test]
fn issue9_job_seeds_in_one_run() {
    let Some(job) = common::shared_fixture("job") else {
        return;
    };
    let db = test_db!();
    common::load_fixture(&db, &job);
    assert_eq!(seed_and_check(&db), 21);
}
