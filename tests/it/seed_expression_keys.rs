//! Unique keys on expressions and CHECKs made of conditions compared as
//! booleans (issue 46, points 1 and 3), on schemas written here. The
//! server is the judge ([`seed_and_judge`]): every table holds rows, every
//! unique index is still there and valid, and every CHECK and foreign key
//! holds when the server adds it again over the rows.

use crate::seed_constraints::{assert_seeded, count, seed_and_judge};

/// Unique indexes on a member of a jsonb document: `((profile ->>
/// 'login'))` with a CHECK that the member is there, `((settings ->
/// 'slot'))` (a jsonb value), and a member beside a foreign key. The
/// member is drawn unique when the rows are generated. Before: `cannot
/// make <index> unique` (the document column had no unique generator),
/// and with a generator unique per document the member could repeat.
#[test]
fn unique_json_members_hold() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE shops (id serial PRIMARY KEY, name text NOT NULL);
         CREATE TABLE clerks (id serial PRIMARY KEY,
                              profile jsonb NOT NULL,
                              CONSTRAINT clerks_have_a_login CHECK ((profile ->> 'login') IS NOT NULL));
         CREATE UNIQUE INDEX clerks_login ON clerks ((profile ->> 'login'));
         CREATE TABLE tills (id serial PRIMARY KEY, settings json NOT NULL);
         CREATE UNIQUE INDEX tills_slot ON tills (((settings::jsonb) -> 'slot'));
         CREATE TABLE shelves (id serial PRIMARY KEY,
                               shop_id int NOT NULL REFERENCES shops,
                               label jsonb NOT NULL,
                               CONSTRAINT shelves_are_coded CHECK (label ? 'code'));
         CREATE UNIQUE INDEX shelf_code_per_shop ON shelves (shop_id, (label ->> 'code'));",
    );
    let (out, problems) = seed_and_judge(&db, "300");
    assert_seeded(&out, &problems);
    // The members are there, not NULLs the index lets repeat.
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT profile ->> 'login') FROM clerks"
        ),
        count(&db, "SELECT count(*) FROM clerks")
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM shelves WHERE label ->> 'code' IS NULL"
        ),
        0
    );
}

/// CHECKs that compare conditions as booleans, each true on a narrow set
/// of rows only (so 32 random draws a row rarely meet them): `=` and `<>`
/// between conditions, `IS FALSE`, a boolean column beside a condition, a
/// count compared as a condition (`num_nonnulls(a, b) = 2` wanted false),
/// and `NOT CASE ...`. Before: `no candidate row satisfies` (the solver
/// read none of them: `IS FALSE` did not parse, a negated count and a CASE
/// under NOT were left to the server, which drew at random).
#[test]
fn conditions_compared_as_booleans_are_solved() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE gauges (id serial PRIMARY KEY, level integer NOT NULL, armed boolean,
                              CONSTRAINT gauge_level
                                CHECK (((level = 417) OR (level = 3)) AND ((level = 417) = (armed IS FALSE))));
         CREATE TABLE meters (id serial PRIMARY KEY, on_duty boolean NOT NULL, reading integer NOT NULL,
                              CONSTRAINT meter_reading
                                CHECK ((on_duty = (reading > 950)) AND (reading = 990 OR reading = 12)));
         CREATE TABLE valves (id serial PRIMARY KEY, a integer, b integer NOT NULL,
                              CONSTRAINT valve_count
                                CHECK (((num_nonnulls(a, b) = 2) <> (b = 903)) AND (b = 903 OR a = 66)));
         CREATE TABLE taps (id serial PRIMARY KEY, a integer, b integer NOT NULL,
                            CONSTRAINT tap_case
                              CHECK (NOT CASE WHEN a IS NULL THEN b <> 903 ELSE a <> 66 END));",
    );
    let (out, problems) = seed_and_judge(&db, "200");
    assert_seeded(&out, &problems);
    // Both branches of each CHECK occur.
    assert!(count(&db, "SELECT count(DISTINCT level) FROM gauges") == 2);
    assert!(count(&db, "SELECT count(DISTINCT a IS NULL) FROM taps") == 2);
}

/// A CHECK calling a function that reads the parent (`member_is_kind(
/// member_id, 'staff')`) on a foreign key inside `UNIQUE (member_id,
/// badge)`, where the unique text `badge` holds the key alone: the foreign
/// key is redrawn until the server accepts the row, the key still unique.
/// Before: `no candidate row satisfies` (a key column was never redrawn).
#[test]
fn a_function_check_on_a_key_another_column_holds_unique() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE members (id serial PRIMARY KEY,
                               kind text NOT NULL CHECK (kind IN ('staff', 'guest', 'bot')));
         CREATE FUNCTION member_is_kind(k int, want text) RETURNS boolean LANGUAGE sql STABLE
           AS $$ SELECT kind = want FROM members WHERE id = k $$;
         CREATE TABLE passes (id serial PRIMARY KEY,
                              member_id int NOT NULL REFERENCES members,
                              badge text NOT NULL,
                              UNIQUE (member_id, badge));
         ALTER TABLE passes ADD CONSTRAINT passes_for_staff CHECK (member_is_kind(member_id, 'staff'));",
    );
    let (out, problems) = seed_and_judge(&db, "200");
    assert_seeded(&out, &problems);
}
