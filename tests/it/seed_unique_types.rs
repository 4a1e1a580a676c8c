//! A unique key over a column of every type family planck writes (issue
//! 46): the key alone (`UNIQUE (v)`) and beside a foreign key
//! (`UNIQUE (parent_id, v)`, real schemas' `(ip, user_id)`), seeded
//! zero-spec in one run. Before, a type whose generator had no unique form
//! (a time of day, an interval, an address, a network, jsonb, a text search
//! vector, a range, an array) was skipped with "cannot make ... unique".

use crate::common;
use crate::seed_constraints::{assert_seeded, count, seed_and_judge};

/// Every type family with a btree equality (so a unique index), as a
/// schema declares it. Types of a few values (boolean, an enum) are
/// lowered to what they hold, which the test allows.
const TYPES: &[&str] = &[
    "smallint",
    "integer",
    "bigint",
    "numeric",
    "numeric(6,2)",
    "real",
    "double precision",
    "money",
    "text",
    "varchar(12)",
    "char(8)",
    "citext",
    "bytea",
    "uuid",
    "date",
    "timestamp",
    "timestamp(0)",
    "timestamptz",
    "time",
    "time(0)",
    "timetz",
    "interval",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "bit(16)",
    "varbit(20)",
    "jsonb",
    "tsvector",
    "int4range",
    "int8range",
    "numrange",
    "daterange",
    "tstzrange",
    "int4multirange",
    "integer[]",
    "bigint[]",
    "text[]",
    "uuid[]",
    "date[]",
    "boolean",
    "mood",
];

/// Multiranges arrived in PostgreSQL 14, the oldest major planck supports.
#[test]
fn a_unique_column_of_every_type_is_seeded_alone_and_beside_a_foreign_key() {
    let db = test_db!();
    let mut ddl = String::from(
        "CREATE EXTENSION citext;
         CREATE TYPE mood AS ENUM ('calm', 'glad', 'sad', 'cross');
         CREATE TABLE parents (id serial PRIMARY KEY, name text NOT NULL);\n",
    );
    for (i, t) in TYPES.iter().enumerate() {
        ddl.push_str(&format!(
            "CREATE TABLE alone_{i} (id serial PRIMARY KEY, v {t} NOT NULL UNIQUE);
             CREATE TABLE pair_{i} (id serial PRIMARY KEY,
                 parent_id int NOT NULL REFERENCES parents, v {t}, UNIQUE (parent_id, v));
             CREATE TABLE child_{i} (id serial PRIMARY KEY, pair_id int NOT NULL REFERENCES pair_{i});\n"
        ));
    }
    db.exec(&ddl);
    let (out, problems) = seed_and_judge(&db, "400");
    assert_seeded(&out, &problems);
    let err = common::stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    for (i, t) in TYPES.iter().enumerate() {
        if matches!(*t, "boolean" | "mood") {
            continue;
        }
        assert!(
            [
                format!("alone_{i}: "),
                format!("alone_{i} ("),
                format!("pair_{i}: "),
                format!("pair_{i} (")
            ]
            .iter()
            .all(|m| warnings.iter().all(|w| !w.contains(m.as_str()))),
            "{t}: lowered or skipped:\n{err}"
        );
        let distinct = count(
            &db,
            &format!("SELECT count(DISTINCT v) FROM pair_{i} WHERE v IS NOT NULL"),
        );
        assert!(
            distinct > 1,
            "{t}: pair_{i} holds {distinct} distinct values"
        );
    }
}
