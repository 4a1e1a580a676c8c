//! Issue 46: the values CHECKs ask for, read by `seed::check_expr` and made
//! by the generators: length bounds on any text generator (words, fake
//! emails, slugs, paragraphs, unique or not, under varchar limits), a CASE
//! read as the branches it stands for, and `jsonb_typeof`. Each schema here
//! failed before: at COPY (SQLSTATE 23514, the text too short) or with "no
//! candidate row satisfies" (the CASE and `jsonb_typeof` left to the server,
//! whose candidates never held).

use crate::common;

use common::{TestDb, assert_exit, project_dir, stderr};

/// Zero-spec seed of `rows` rows per table, which must exit 0.
fn seed_ok(db: &TestDb, rows: u64) {
    let dir = project_dir();
    let out = db.planck(
        &[
            "seed",
            "--no-spec",
            "--rows",
            &rows.to_string(),
            "--verbose",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(!err.contains("not seeded"), "{err}");
}

fn one(db: &TestDb, sql: &str) -> String {
    db.query_strings(sql).remove(0)
}

/// Length bounds in each spelling the server prints, on columns whose
/// names pick different generators: a long `body` (paragraphs), a varchar
/// title inside a band, a unique email (its local part grows), a slug under
/// a trimmed length, a literal on the left, an exact length, bytes.
#[test]
fn text_generators_reach_the_lengths_checks_ask_for() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE article (
             id serial PRIMARY KEY,
             body text NOT NULL CHECK (length(body) >= 6000),
             title varchar(40) NOT NULL CHECK (char_length(title) BETWEEN 30 AND 40),
             email text NOT NULL UNIQUE CHECK (octet_length(email) >= 28),
             slug text NOT NULL CHECK (length(trim(slug)) > 24),
             code text CHECK (10 < length(code)),
             pin text NOT NULL CHECK (character_length(pin) = 12),
             label varchar(8) NOT NULL CHECK (length(label) > 5)
         );",
    );
    seed_ok(&db, 300);
    let got = one(
        &db,
        "SELECT concat_ws(' ', min(length(body)), min(length(title)), max(length(title)),
                min(octet_length(email)), min(length(btrim(slug))), min(length(code)),
                min(length(pin)), max(length(pin)), min(length(label)), count(code))
           FROM article",
    );
    let n: Vec<i64> = got.split(' ').map(|x| x.parse().unwrap()).collect();
    assert!(n[0] >= 6000, "body {got}");
    assert!(n[1] >= 30 && n[2] <= 40, "title {got}");
    assert!(n[3] >= 28, "email {got}");
    assert!(n[4] > 24, "slug {got}");
    assert!(n[5] > 10 && n[9] > 0, "code {got}");
    assert_eq!((n[6], n[7]), (12, 12), "pin {got}");
    assert!(n[8] > 5, "label {got}");
    // The email grows in its local part, and stays unique.
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FILTER (WHERE email ~ '^[^@ ]+@[^@ ]+$') || ' ' || count(DISTINCT email) FROM article"
        ),
        "300 300"
    );
}

/// `1 = CASE WHEN kind = ... AND value IS NOT NULL THEN 1 ... ELSE 0 END`,
/// a simple CASE on a kind, a CASE on a flag: every row takes one of the
/// branches, and the rows take several.
#[test]
fn a_case_is_read_as_the_branches_it_stands_for() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE setting (
             id serial PRIMARY KEY,
             kind text NOT NULL,
             flag_value boolean,
             amount_value numeric(10, 2),
             label_value text,
             CONSTRAINT one_value CHECK (1 = CASE
                 WHEN kind = 'flag' AND flag_value IS NOT NULL THEN 1
                 WHEN kind = 'amount' AND amount_value IS NOT NULL THEN 1
                 WHEN kind = 'label' AND label_value IS NOT NULL THEN 1
                 ELSE 0 END)
         );
         CREATE TABLE delivery (
             id serial PRIMARY KEY,
             mode text NOT NULL CHECK (mode IN ('direct', 'broadcast')),
             target integer,
             paid boolean NOT NULL,
             fee numeric(8, 2),
             CHECK (CASE mode WHEN 'direct' THEN target IS NOT NULL ELSE target IS NULL END),
             CHECK (CASE WHEN paid THEN fee > 0 ELSE fee IS NULL END)
         );",
    );
    seed_ok(&db, 200);
    assert_eq!(
        one(&db, "SELECT count(DISTINCT kind) FROM setting"),
        "3",
        "every branch is taken by some rows"
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM delivery WHERE (mode = 'direct') = (target IS NOT NULL)
                AND (paid AND fee > 0 OR NOT paid AND fee IS NULL)"
        ),
        "200"
    );
    assert_eq!(one(&db, "SELECT count(DISTINCT paid) FROM delivery"), "2");
}

/// `jsonb_typeof(col) = 'array'` and an IN list of kinds.
#[test]
fn json_values_have_the_kinds_a_check_names() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE doc (
             id serial PRIMARY KEY,
             tags jsonb NOT NULL CHECK (jsonb_typeof(tags) = 'array'),
             extra json CHECK (json_typeof(extra) IN ('string', 'number'))
         );",
    );
    seed_ok(&db, 100);
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FILTER (WHERE jsonb_typeof(tags) = 'array') || ' '
                 || count(extra) FILTER (WHERE json_typeof(extra) NOT IN ('string', 'number'))
                 || ' ' || (count(extra) > 0) FROM doc"
        ),
        "100 0 true"
    );
}

/// `num_nonnulls(...) = 1` over nullable foreign keys (a report naming
/// exactly one of a post, a comment or a user), and a count over plain
/// columns: the member the row sets takes a parent even where the key is
/// nullable (before: the set member was often NULL too, 23514 at COPY).
#[test]
fn exactly_one_of_several_nullable_foreign_keys_is_set() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
         CREATE TABLE post (id serial PRIMARY KEY, title text NOT NULL);
         CREATE TABLE report (
             id serial PRIMARY KEY,
             author_id integer REFERENCES author,
             post_id integer REFERENCES post,
             reason text NOT NULL,
             low integer,
             high integer,
             CONSTRAINT one_target CHECK (num_nonnulls(author_id, post_id) = 1),
             CONSTRAINT one_level CHECK (num_nulls(low, high) = 1)
         );",
    );
    seed_ok(&db, 200);
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FILTER (WHERE num_nonnulls(author_id, post_id) = 1 AND num_nulls(low, high) = 1)
                 || ' ' || count(author_id) || ' ' || count(post_id) FROM report"
        )
        .split(' ')
        .map(|x| x.parse::<i64>().unwrap() > 0)
        .collect::<Vec<_>>(),
        vec![true, true, true]
    );
    assert_eq!(
        one(
            &db,
            "SELECT count(*) FROM report WHERE num_nonnulls(author_id, post_id) <> 1"
        ),
        "0"
    );
}

/// A `character(n)` value is padded with blanks to n, and `~` on it reads
/// the padding: a pattern ending in `$` holds only for values of all n
/// characters. musicbrainz's `iswc character(15) CHECK (iswc ~
/// '^T-?\d{3}.?\d{3}.?\d{3}[-.]?\d$')` reaches 15 only when its four
/// optional parts are all drawn (one draw in 16); 14-character draws failed
/// at COPY (23514) before.
#[test]
fn a_fixed_length_character_column_gets_regex_values_of_its_full_length() {
    let db = test_db!();
    db.exec(
        r"CREATE TABLE work_code (
             id serial PRIMARY KEY,
             iswc character(15) CHECK (iswc ~ E'^T-?\\d{3}.?\\d{3}.?\\d{3}[-.]?\\d$'),
             country character(2) NOT NULL CHECK (country ~ '^[A-Z]{1,2}$')
         );",
    );
    seed_ok(&db, 2000);
    let got = one(
        &db,
        "SELECT concat_ws(' ', count(*), min(octet_length(iswc::text)), min(length(country::text)))
           FROM work_code",
    );
    assert_eq!(got, "2000 15 2", "rows, shortest iswc, shortest country");
}
