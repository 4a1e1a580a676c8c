//! `planck seed` on the types real schemas use (issue 9 point 9) and on
//! defaults with side effects (issue 9 point 7): NOT NULL columns of each
//! type family are seeded, the server accepts the values (COPY parses them)
//! and they look sane.

use crate::common;

use common::{TestDb, assert_exit, project_dir};

const ROWS: i64 = 200;

fn seed(db: &TestDb) -> std::process::Output {
    let dir = project_dir();
    db.planck(&["seed", "--rows", &ROWS.to_string()], dir.path())
}

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

/// Asserts the table holds ROWS rows and that no row breaks `bad` (a WHERE clause).
fn assert_rows(db: &TestDb, table: &str, bad: &str) {
    assert_eq!(count(db, &format!("SELECT count(*) FROM {table}")), ROWS);
    let sample = db.query_strings(&format!(
        "SELECT coalesce(string_agg(x::text, E'\\n'), '') FROM (SELECT * FROM {table} WHERE {bad} LIMIT 3) x"
    ));
    assert_eq!(sample, vec![String::new()], "{table}: rows where {bad}");
}

#[test]
fn ranges_and_multiranges_are_non_empty_with_low_below_high() {
    let db = test_db!();
    db.exec(
        "CREATE DOMAIN stay AS daterange;
         CREATE TYPE floatrange AS RANGE (subtype = float8);
         CREATE TYPE timerange AS RANGE (subtype = time);
         CREATE TABLE bookings (
             id int PRIMARY KEY,
             r4 int4range NOT NULL,
             r8 int8range NOT NULL,
             rn numrange NOT NULL,
             rts tsrange NOT NULL,
             rtz tstzrange NOT NULL,
             rd daterange NOT NULL,
             rf floatrange NOT NULL,
             rt timerange NOT NULL,
             st stay NOT NULL,
             m4 int4multirange NOT NULL,
             md datemultirange NOT NULL,
             ra daterange[] NOT NULL
         );",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    let mut bad = Vec::new();
    for c in ["r4", "r8", "rn", "rts", "rtz", "rd", "rf", "rt", "st"] {
        bad.push(format!(
            "isempty({c}) OR lower_inf({c}) OR upper_inf({c}) OR NOT lower({c}) < upper({c})"
        ));
    }
    for c in ["m4", "md"] {
        bad.push(format!("isempty({c}) OR NOT lower({c}) < upper({c})"));
    }
    bad.push("EXISTS (SELECT 1 FROM unnest(ra) r WHERE isempty(r))".into());
    assert_rows(&db, "bookings", &bad.join(" OR "));
    // Values vary from row to row.
    assert!(count(&db, "SELECT count(DISTINCT r4) FROM bookings") > ROWS / 2);
    assert!(count(&db, "SELECT count(DISTINCT rtz) FROM bookings") > ROWS / 2);
}

#[test]
fn money_points_networks_times_and_chars_parse_and_look_sane() {
    let db = test_db!();
    db.exec(
        "CREATE DOMAIN price AS money CHECK (VALUE >= '0'::money);
         CREATE TABLE things (
             id int PRIMARY KEY,
             cost money NOT NULL,
             list price NOT NULL,
             at point NOT NULL,
             net cidr NOT NULL,
             ip inet NOT NULL,
             mac macaddr NOT NULL,
             mac8 macaddr8 NOT NULL,
             opens timetz NOT NULL,
             kind \"char\" NOT NULL,
             letter \"char\" NOT NULL CHECK (letter IN ('a', 'b')),
             doc xml NOT NULL,
             q tsquery NOT NULL,
             costs money[] NOT NULL,
             spots point[] NOT NULL,
             nets cidr[] NOT NULL,
             macs macaddr[] NOT NULL,
             kinds \"char\"[] NOT NULL,
             docs xml[] NOT NULL,
             qs tsquery[] NOT NULL
         );",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "things",
        "cost < '0'::money OR list < '0'::money \
         OR NOT (at[0] BETWEEN -1e6 AND 1e6 AND at[1] BETWEEN -1e6 AND 1e6) \
         OR masklen(net) NOT BETWEEN 16 AND 32 OR family(net) <> 4 \
         OR masklen(ip) <> 32 OR mac = '00:00:00:00:00:00' \
         OR kind NOT BETWEEN 'a' AND 'z' OR letter NOT IN ('a', 'b') \
         OR NOT xml_is_well_formed_document(doc::text) OR numnode(q) <> 1 \
         OR EXISTS (SELECT 1 FROM unnest(spots) p WHERE NOT (p[0] BETWEEN -1e6 AND 1e6)) \
         OR EXISTS (SELECT 1 FROM unnest(docs) d WHERE NOT xml_is_well_formed_document(d::text))",
    );
    assert!(count(&db, "SELECT count(DISTINCT net) FROM things") > ROWS / 2);
    assert!(count(&db, "SELECT count(DISTINCT mac8) FROM things") > ROWS / 2);
    assert!(count(&db, "SELECT count(DISTINCT kind) FROM things") > 5);
}

#[test]
fn bit_strings_have_their_exact_length() {
    let db = test_db!();
    db.exec(
        "CREATE DOMAIN flags AS bit(12);
         CREATE TABLE masks (
             id int PRIMARY KEY,
             b bit(5) NOT NULL,
             one bit NOT NULL,
             f flags NOT NULL,
             v varbit(20) NOT NULL,
             free varbit NOT NULL,
             bs bit(3)[] NOT NULL
         );",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "masks",
        "length(b) <> 5 OR length(one) <> 1 OR length(f) <> 12 \
         OR length(v) NOT BETWEEN 1 AND 20 OR length(free) < 1 \
         OR EXISTS (SELECT 1 FROM unnest(bs) x WHERE length(x) <> 3)",
    );
    assert!(count(&db, "SELECT count(DISTINCT f) FROM masks") > ROWS / 2);
    assert!(count(&db, "SELECT count(DISTINCT length(v)) FROM masks") > 1);
}

#[test]
fn citext_hstore_and_ltree_from_their_extensions() {
    let db = test_db!();
    db.exec(
        "CREATE EXTENSION citext; CREATE EXTENSION hstore; CREATE EXTENSION ltree;
         CREATE TABLE pages (
             id int PRIMARY KEY,
             slug citext NOT NULL,
             attrs hstore NOT NULL,
             path ltree NOT NULL,
             tags citext[] NOT NULL,
             more hstore[] NOT NULL,
             paths ltree[] NOT NULL
         );",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "pages",
        "slug = '' OR array_length(akeys(attrs), 1) < 1 OR nlevel(path) NOT BETWEEN 1 AND 4 \
         OR EXISTS (SELECT 1 FROM unnest(paths) p WHERE nlevel(p) < 1)",
    );
    assert!(count(&db, "SELECT count(DISTINCT path) FROM pages") > ROWS / 4);
    assert!(count(&db, "SELECT count(DISTINCT attrs) FROM pages") > ROWS / 4);
}

/// A function default that writes a marker row into `calls` each time the server runs it.
const CALLS: &str = "
    CREATE TABLE calls (id serial PRIMARY KEY, note text NOT NULL);
    CREATE FUNCTION logged_id() RETURNS int LANGUAGE sql AS
      $$ INSERT INTO calls (note) VALUES ('default ran') RETURNING id $$;
    CREATE FUNCTION session_owner() RETURNS uuid LANGUAGE sql STABLE AS
      $$ SELECT nullif(current_setting('app.owner', true), '')::uuid $$;";

/// Issue 9 point 7 (koji's `get_event()`, graphile-starter's `current_user_id()`):
/// defaults with side effects, or NULL outside a session, are never left to
/// the server on the types planck produces: the column gets generated values,
/// a foreign-key value when it references a table.
#[test]
fn function_defaults_are_replaced_by_generated_values() {
    let db = test_db!();
    db.exec(CALLS);
    db.exec(
        "CREATE TABLE owners (id uuid PRIMARY KEY);
         CREATE TABLE builds (
             id serial PRIMARY KEY,
             create_event int NOT NULL REFERENCES calls (id) DEFAULT logged_id(),
             counter int NOT NULL DEFAULT logged_id(),
             owner_id uuid NOT NULL REFERENCES owners DEFAULT session_owner(),
             owner_copy uuid NOT NULL DEFAULT session_owner(),
             created_at timestamptz NOT NULL DEFAULT now()
         );",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    assert_eq!(
        count(&db, "SELECT count(*) FROM calls WHERE note = 'default ran'"),
        0
    );
    assert!(count(&db, "SELECT count(*) FROM builds") > 0);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM builds b WHERE NOT EXISTS (SELECT 1 FROM calls c WHERE c.id = b.create_event)
                OR NOT EXISTS (SELECT 1 FROM owners o WHERE o.id = b.owner_id)"
        ),
        0
    );
    assert!(count(&db, "SELECT count(DISTINCT owner_copy) FROM builds") > ROWS / 2);
    assert!(count(&db, "SELECT count(DISTINCT counter) FROM builds") > 1);
}

/// A type planck cannot produce (pg_snapshot stands for any such type) is
/// left to its DEFAULT only when that default is free of side effects; a
/// function default is an error naming the column and the default, before
/// anything runs it.
#[test]
fn side_effect_default_of_an_unproducible_type() {
    let db = test_db!();
    db.exec(CALLS);
    db.exec(
        "CREATE FUNCTION logged_snapshot() RETURNS pg_snapshot LANGUAGE sql AS
           $$ INSERT INTO calls (note) VALUES ('default ran'); SELECT pg_current_snapshot() $$;
         CREATE TABLE fixed (id int PRIMARY KEY, snap pg_snapshot NOT NULL DEFAULT '10:20:10,14,15');
         CREATE TABLE snaps (id int PRIMARY KEY, snap pg_snapshot NOT NULL DEFAULT logged_snapshot());",
    );
    // snaps is not seeded, the rest is (issue 30 point 4): exit 1.
    let out = seed(&db);
    assert_exit(&out, 1);
    let err = format!("{}{}", common::stderr(&out), common::stdout(&out));
    assert!(
        err.contains("snaps.snap") && err.contains("logged_snapshot()"),
        "the error names the column and its default: {err}"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM calls WHERE note = 'default ran'"),
        0
    );
    // Without the table that needs it, the constant default is left to the server.
    let dir = project_dir();
    std::fs::create_dir_all(dir.path().join("seeds")).unwrap();
    std::fs::write(dir.path().join("seeds/s.toml"), "exclude = [\"snaps\"]\n").unwrap();
    let out = db.planck(&["seed", "--rows", "20"], dir.path());
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings("SELECT DISTINCT snap::text FROM fixed"),
        vec!["10:20:10,14,15"]
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM calls WHERE note = 'default ran'"),
        0
    );
}

/// Runs `planck seed` with `spec` as the project's only spec file.
fn seed_with(db: &TestDb, spec: &str) -> std::process::Output {
    let dir = project_dir();
    std::fs::create_dir_all(dir.path().join("seeds")).unwrap();
    std::fs::write(dir.path().join("seeds/s.toml"), spec).unwrap();
    db.planck(&["seed", "--rows", &ROWS.to_string()], dir.path())
}

/// The spec's `range` bounds a range column's bounds, `values` written as
/// the type's text are taken as written, and `unique = true` gives distinct
/// networks, MAC addresses and bit strings.
#[test]
fn spec_values_ranges_and_unique_keys_on_exotic_types() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE slots (
             id int PRIMARY KEY,
             seats int4range NOT NULL,
             during tstzrange NOT NULL,
             fixed numrange NOT NULL,
             spot point NOT NULL,
             mac macaddr NOT NULL,
             flags bit(4) NOT NULL,
             net cidr NOT NULL UNIQUE,
             mac8 macaddr8 NOT NULL UNIQUE,
             serial bit(64) NOT NULL UNIQUE
         );",
    );
    let out = seed_with(
        &db,
        r#"[tables.slots.columns]
seats = { range = [10, 20] }
during = { range = ["2024-01-01", "2024-02-01"] }
fixed = { values = ["[1.5,2.25]", "(,0)"] }
spot = { values = ["(1.5, -2)"] }
mac = { values = ["08:00:2b:01:02:03"] }
flags = { values = ["1010"] }
net = { unique = true }
mac8 = { unique = true }
serial = { unique = true }
"#,
    );
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "slots",
        "NOT seats <@ int4range(10, 21) OR isempty(seats) \
         OR NOT during <@ tstzrange('2024-01-01', '2024-02-01 00:00:01') OR isempty(during) \
         OR fixed::text NOT IN ('[1.5,2.25]', '(,0)') \
         OR spot[0] <> 1.5 OR spot[1] <> -2 \
         OR mac <> '08:00:2b:01:02:03' OR flags <> B'1010'",
    );
    for c in ["net", "mac8", "serial"] {
        assert_eq!(
            count(&db, &format!("SELECT count(DISTINCT {c}) FROM slots")),
            ROWS,
            "{c} is not unique"
        );
    }
    assert_eq!(count(&db, "SELECT count(DISTINCT fixed) FROM slots"), 2);
}

/// Composite types: a column takes the spec's `values` written as the
/// type's text, each attribute read for its own type.
#[test]
fn composite_values_from_the_spec_reach_every_attribute() {
    let db = test_db!();
    db.exec(
        "CREATE TYPE address AS (street text, no int, zip numeric(5, 0), since date, ok boolean, id uuid);
         CREATE TABLE people (
             id int PRIMARY KEY,
             home address NOT NULL,
             work address,
             past address[] NOT NULL
         );",
    );
    let out = seed_with(
        &db,
        r#"[tables.people.columns]
home = { values = ['("Main St, 1",12,10115,2024-03-01,t,0f7a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b)', '(,,,,,)'] }
past = { values = ['(Old Rd,7,,,f,)'] }
"#,
    );
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "people",
        "home::text NOT IN \
         ('(\"Main St, 1\",12,10115,2024-03-01,t,0f7a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b)', '(,,,,,)') \
         OR past::text <> '{\"(\\\"Old Rd\\\",7,,,f,)\"}'",
    );
    assert_eq!(count(&db, "SELECT count(DISTINCT home) FROM people"), 2);
}

#[test]
fn geometric_types_and_lsns_are_valid_shapes() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE shapes (
             id int PRIMARY KEY,
             b box NOT NULL,
             s lseg NOT NULL,
             l line NOT NULL,
             c circle NOT NULL,
             p path NOT NULL,
             lsn pg_lsn NOT NULL,
             bs box[] NOT NULL
         );",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "shapes",
        "area(b) < 0 OR NOT (length(s) BETWEEN 0 AND 3000) OR radius(c) < 0 \
         OR npoints(p) NOT BETWEEN 3 AND 6 \
         OR lsn > '100/0'::pg_lsn OR NOT (center(c) <@ box '((-1000,-1000),(1000,1000))') \
         OR EXISTS (SELECT 1 FROM unnest(bs) x WHERE NOT (x <@ box '((-1000,-1000),(1000,1000))'))",
    );
    assert!(count(&db, "SELECT count(DISTINCT lsn) FROM shapes") > ROWS / 2);
    assert!(count(&db, "SELECT count(DISTINCT area(b)) FROM shapes") > ROWS / 2);
}

#[test]
fn composite_columns_get_values_inside_each_attribute_type() {
    let db = test_db!();
    db.exec(
        "CREATE TYPE mood AS ENUM ('calm', 'busy');
         CREATE TYPE geo AS (lat float8, at point);
         CREATE TYPE place AS (code varchar(3), no int, share numeric(4, 1), since date,
                               m mood, inner_geo geo, ok boolean, id uuid);
         CREATE TABLE visits (id int PRIMARY KEY, at place NOT NULL, seen place[] NOT NULL);",
    );
    let out = seed(&db);
    assert_exit(&out, 0);
    assert_rows(
        &db,
        "visits",
        "length((at).code) NOT BETWEEN 1 AND 3 OR (at).no NOT BETWEEN 0 AND 999 \
         OR (at).share NOT BETWEEN 0 AND 999.9 OR (at).since NOT BETWEEN '2021-01-01' AND '2026-11-01' \
         OR (at).m IS NULL OR (at).inner_geo IS NULL OR ((at).inner_geo).lat IS NULL OR (at).ok IS NULL \
         OR (at).id IS NULL",
    );
    assert!(count(&db, "SELECT count(DISTINCT at::text) FROM visits") > 10);
    assert!(count(&db, "SELECT count(DISTINCT (at).m) FROM visits") == 2);
}

/// Issue 31: what PostgreSQL 18 adds to a schema, seeded zero-spec: virtual
/// generated columns (18's default kind; never written), NOT NULL kept in
/// pg_constraint, `NOT ENFORCED` CHECK and foreign keys (never validated),
/// a temporal primary key `WITHOUT OVERLAPS` (per key, ranges that do not
/// overlap, as for an exclusion constraint) and `uuidv7()` defaults. Every
/// table full, every enforced constraint valid, a re-seed with --truncate
/// too. Before 18 none of this parses: skipped, saying so.
#[test]
fn postgresql_18_schema_features_are_seeded() {
    let major = common::server_major();
    if major < 18 {
        crate::skip!(
            NotApplicable,
            "virtual generated columns, NOT ENFORCED and WITHOUT OVERLAPS are PostgreSQL 18+ (this server is {major})"
        );
    }
    let db = test_db!();
    db.exec(
        "CREATE EXTENSION IF NOT EXISTS btree_gist;
         CREATE TABLE shops (
             id uuid PRIMARY KEY DEFAULT uuidv7(),
             name text NOT NULL,
             name_lower text GENERATED ALWAYS AS (lower(name)),
             rating int CHECK (rating BETWEEN 1 AND 5) NOT ENFORCED
         );
         CREATE TABLE prices (
             shop_id uuid NOT NULL REFERENCES shops,
             sku int NOT NULL,
             valid daterange NOT NULL,
             cents int NOT NULL CHECK (cents > 0),
             euros numeric GENERATED ALWAYS AS (cents / 100.0) VIRTUAL,
             PRIMARY KEY (sku, valid WITHOUT OVERLAPS)
         );
         CREATE TABLE audits (
             id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
             shop_id uuid NOT NULL,
             note text NOT NULL,
             FOREIGN KEY (shop_id) REFERENCES shops NOT ENFORCED
         );",
    );
    for args in [
        &["seed", "--rows", "300"][..],
        &["seed", "--rows", "300", "--truncate"],
    ] {
        let dir = project_dir();
        let out = db.planck(args, dir.path());
        assert_exit(&out, 0);
        // 300 shops; their children a few each (zero-spec fan-out).
        assert_eq!(count(&db, "SELECT count(*) FROM shops"), 300);
        for t in ["prices", "audits"] {
            assert!(
                count(&db, &format!("SELECT count(*) FROM {t}")) >= 300,
                "{t}"
            );
        }
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM pg_constraint WHERE NOT convalidated AND conenforced"
            ),
            0
        );
        // The virtual columns compute from what was written.
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM shops WHERE name_lower IS DISTINCT FROM lower(name)"
            ),
            0
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM prices WHERE euros IS DISTINCT FROM cents / 100.0"
            ),
            0
        );
        // No two ranges of one sku overlap (the server enforces it; a broken
        // seed would have failed above, this names the shape).
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM prices a JOIN prices b
                   ON a.sku = b.sku AND a.ctid <> b.ctid AND a.valid && b.valid"
            ),
            0
        );
        // NOT ENFORCED stays what it was: not enforced, not validated.
        assert_eq!(
            db.query_strings(
                "SELECT conname || ':' || conenforced || ':' || convalidated FROM pg_constraint
                  WHERE NOT conenforced ORDER BY 1"
            ),
            [
                "audits_shop_id_fkey:false:false",
                "shops_rating_check:false:false"
            ]
        );
    }
}
