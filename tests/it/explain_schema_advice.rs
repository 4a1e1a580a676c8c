//! Advice written from the user's own schema (issue 48 §5): on a schema
//! whose names are not the bundled example's (no `accounts`, `items`,
//! `account_id`, `app.account_id`), every help text names the schema's
//! own tables, columns and settings; an `ILIKE` scan gets a trigram index
//! (pg_trgm, in the test server's contrib), built and re-planned; and no
//! advice drops an index a constraint needs.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::explain_json::Report;
use common::{TestDb, stderr, stdout};

/// A veterinary app: `clinics` is the tenant, `patients` and `visits` carry
/// `clinic_id` under a policy on `vet.clinic`. `visits` has no index on the
/// policy column (an `rls-policy` finding); `patients` is searched by name
/// with ILIKE (a seq scan); `patients_email_key` and the primary keys are
/// constraint indexes no statement reads.
fn clinics_schema(db: &TestDb) {
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'vet_app') THEN
             CREATE ROLE vet_app NOLOGIN; END IF;
         END $$;
         CREATE TABLE clinics (id int PRIMARY KEY, city text NOT NULL);
         CREATE TABLE patients (id bigint PRIMARY KEY, clinic_id int NOT NULL REFERENCES clinics,
           name text NOT NULL, email text NOT NULL UNIQUE);
         CREATE TABLE visits (id bigint PRIMARY KEY, clinic_id int NOT NULL REFERENCES clinics,
           patient_id bigint NOT NULL, visited_on date NOT NULL);
         INSERT INTO clinics SELECT g, 'city ' || g FROM generate_series(1, 20) g;
         INSERT INTO patients SELECT g, 1 + g % 20, md5(g::text), g || '@pets.example'
           FROM generate_series(1, 30000) g;
         INSERT INTO visits SELECT g, 1 + g % 20, g, date '2024-01-01' + g % 700
           FROM generate_series(1, 30000) g;
         CREATE INDEX ON patients (clinic_id);
         ALTER TABLE patients ENABLE ROW LEVEL SECURITY;
         ALTER TABLE visits ENABLE ROW LEVEL SECURITY;
         CREATE POLICY by_clinic ON patients TO vet_app
           USING (clinic_id = current_setting('vet.clinic')::int);
         CREATE POLICY by_clinic ON visits TO vet_app
           USING (clinic_id = current_setting('vet.clinic')::int);
         GRANT SELECT ON clinics, patients, visits TO vet_app;
         ANALYZE",
    );
}

fn explain(db: &TestDb, dir: &Path, stmts: &[&str]) -> Report {
    let mut text = String::from("format_version = 2\n");
    for q in stmts {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"vet_app\"\nbypass_rls = false\nquery = '''\n{q}\n'''\n"
        ));
    }
    let q = dir.join("queries.toml");
    std::fs::write(&q, text).unwrap();
    let out = db.planck(
        &[
            "--format",
            "json",
            "explain",
            "--all-modes",
            "--force",
            "--queries",
            &q.display().to_string(),
        ],
        dir,
    );
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "not the report ({e}); exit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            stdout(&out),
            stderr(&out)
        )
    })
}

/// The bundled example's names, which no help on this schema may show.
const EXAMPLE_NAMES: [&str; 4] = ["accounts", "items", "account_id", "app.account_id"];

/// The identifiers of a text (words of letters, digits, `_` and `.`).
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn advice_names_the_schemas_own_tables_columns_and_settings() {
    let db = test_db!();
    clinics_schema(&db);
    let dir = common::project_dir();
    let search = "SELECT id, name FROM patients WHERE name ILIKE $1";
    let r = explain(
        &db,
        dir.path(),
        &[
            search,
            "SELECT id FROM visits WHERE visited_on = $1",
            "SELECT city FROM clinics WHERE city = $1",
        ],
    );

    // No help reads as the bundled example's SQL.
    for f in &r.findings {
        let w = words(&f.help);
        for name in EXAMPLE_NAMES {
            assert!(
                !w.contains(name),
                "{} help names the example's {name}: {}",
                f.check,
                f.help
            );
        }
    }

    // rls-policy: the help writes this schema's comparison.
    let rls = r.findings("rls-policy");
    assert!(!rls.is_empty(), "{:#?}", r.findings);
    for f in &rls {
        assert!(
            f.help.contains("clinic_id") && f.help.contains("vet.clinic"),
            "rls-policy help without the policy's column and setting: {}",
            f.help
        );
    }
    assert!(
        rls.iter()
            .any(|f| f.help.contains("current_setting('vet.clinic')::integer")),
        "the policy's comparison with its cast: {rls:#?}"
    );

    // The ILIKE scan: a trigram index, built and re-planned.
    let id = &r.statement(search).id;
    let scans: Vec<_> = r
        .findings("seq-scan")
        .into_iter()
        .filter(|f| f.statement_id.as_ref() == Some(id))
        .collect();
    assert!(!scans.is_empty(), "{:#?}", r.findings);
    let verified: Vec<_> = scans
        .iter()
        .filter_map(|f| f.advice.as_ref())
        .filter(|a| a.verified)
        .collect();
    assert!(!verified.is_empty(), "no verified advice: {scans:#?}");
    for a in verified {
        assert!(
            a.sql.contains("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                && a.sql.contains("USING gin (name gin_trgm_ops)"),
            "{a:#?}"
        );
        assert_eq!(a.table, "patients");
        assert_eq!(a.columns, ["name"]);
    }
    for f in &scans {
        assert!(f.help.contains("trigram"), "{}", f.help);
    }

    // No advice drops an index a constraint needs (the constraints read
    // from the catalog here); the primary keys are reported, as info.
    let constraint_indexes: BTreeSet<String> = db
        .query_strings(
            "SELECT conindid::regclass::text FROM pg_constraint
              WHERE contype IN ('p', 'u', 'x') AND conrelid::regclass::text
                    IN ('clinics', 'patients', 'visits')",
        )
        .into_iter()
        .collect();
    assert!(constraint_indexes.contains("patients_email_key"));
    let unused = r.findings("unused-index");
    let on_constraints: Vec<_> = unused
        .iter()
        .filter(|f| {
            f.index
                .as_ref()
                .is_some_and(|i| constraint_indexes.contains(i))
        })
        .collect();
    assert!(
        on_constraints
            .iter()
            .any(|f| f.index.as_deref() == Some("patients_email_key")),
        "{unused:#?}"
    );
    for f in on_constraints {
        assert_eq!(f.severity, "info", "{f:#?}");
        let help = f.help.to_lowercase();
        assert!(
            !help.contains("drop it") && !help.contains("drop index"),
            "advice to drop {:?}, which a constraint needs: {}",
            f.index,
            f.help
        );
    }
}
