//! Foreign-key picks decided with the CHECKs over their columns (issue 46,
//! point 1), on schemas written here: a key into rows the migrations wrote
//! that a CHECK bounds (`kind_id IN (1, 3)`, a branch switching on the
//! kind), and two keys into one parent a CHECK orders (`from_version <
//! to_version`) with no unique key over the pair. The server is the judge:
//! every table holds rows and every CHECK and foreign key holds when the
//! server adds it again over them.

use crate::seed_constraints::{assert_seeded, count, seed_and_judge};

/// A foreign key into a kinds table the migrations filled, whose CHECK
/// admits only some kinds: the pick draws among the parent rows whose keys
/// the CHECK admits (the parent's keys are known: its rows are kept).
/// `tickets` takes kinds 1 and 3 only; `drafts` any kind but the chore
/// (nullable); `notes` switches on the kind (kind 2's notes must be bare,
/// the branch read as `kind_id <> 2`); `slots` holds `(kind_id, slot)`
/// unique: two kinds times five slots, ten rows at most. Before: `new row for
/// relation "tickets" violates check constraint` at COPY (SQLSTATE 23514):
/// the pick took every kind.
#[test]
fn a_check_bounding_a_key_into_kept_rows_narrows_its_picks() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE ticket_kinds (id integer PRIMARY KEY, label text NOT NULL UNIQUE);
         INSERT INTO ticket_kinds VALUES (1, 'bug'), (2, 'feature'), (3, 'question'), (4, 'chore');
         CREATE TABLE tickets (id serial PRIMARY KEY, title text NOT NULL,
                               kind_id int NOT NULL REFERENCES ticket_kinds,
                               CONSTRAINT tickets_are_bugs_or_questions CHECK (kind_id IN (1, 3)));
         CREATE TABLE drafts (id serial PRIMARY KEY, kind_id int REFERENCES ticket_kinds,
                              CONSTRAINT no_chore_drafts CHECK (kind_id <> 4));
         CREATE TABLE notes (id serial PRIMARY KEY, title text NOT NULL, sort_title text NOT NULL,
                             kind_id int NOT NULL REFERENCES ticket_kinds,
                             pinned boolean NOT NULL DEFAULT false, locale text,
                             CONSTRAINT feature_notes_are_bare CHECK (kind_id <> 2 OR
                               (kind_id = 2 AND sort_title = title AND pinned IS FALSE AND locale IS NULL)));
         CREATE TABLE slots (kind_id int NOT NULL REFERENCES ticket_kinds,
                             slot smallint NOT NULL CHECK (slot BETWEEN 1 AND 5),
                             CONSTRAINT slot_kinds CHECK (kind_id IN (2, 4)),
                             PRIMARY KEY (kind_id, slot));",
    );
    let (out, problems) = seed_and_judge(&db, "40");
    assert_seeded(&out, &problems);
    assert_eq!(count(&db, "SELECT count(*) FROM ticket_kinds"), 4);
    assert_eq!(
        count(&db, "SELECT count(DISTINCT kind_id) FROM tickets"),
        2,
        "both admitted kinds are picked"
    );
    assert!(count(&db, "SELECT count(*) FROM slots") <= 10);
}

/// Two foreign keys into one parent that a CHECK orders, with no unique
/// key over the pair: each is drawn as before and the lower parent key
/// goes to the lower column (uuids by their order, identities by theirs);
/// for `<` the higher pick avoids the lower one's row. Five rows per
/// parent, so equal and reversed picks are common. Before: `new row for
/// relation "upgrades" violates check constraint "forward_only"` at COPY.
#[test]
fn two_foreign_keys_a_check_orders_are_drawn_in_order() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE versions (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL);
         CREATE TABLE upgrades (id serial PRIMARY KEY,
                                from_version uuid NOT NULL REFERENCES versions,
                                to_version uuid NOT NULL REFERENCES versions,
                                CONSTRAINT forward_only CHECK (from_version < to_version));
         CREATE TABLE stages (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);
         CREATE TABLE spans (id serial PRIMARY KEY,
                             first_stage bigint NOT NULL REFERENCES stages,
                             last_stage bigint NOT NULL REFERENCES stages,
                             CONSTRAINT in_order CHECK (first_stage <= last_stage));",
    );
    let (out, problems) = seed_and_judge(&db, "5");
    assert_seeded(&out, &problems);
    assert!(count(&db, "SELECT count(*) FROM upgrades") >= 5);
}
