//! Issue 10's speed target, identities: where every policy compares a
//! tenant column with the setting directly, the rows each identity sees are
//! the proxy's counts, so nothing is counted under row-level security (on
//! the bundled example that counting took the whole --identity-budget).
//! Where a policy adds anything (here `AND NOT hidden`), identities are
//! still measured under RLS.

use crate::common;

use common::{TestDb, stderr};

fn schema(db: &TestDb, extra: &str) {
    db.exec(&format!(
        "DO $$ BEGIN
           -- Both tests run at once and roles are cluster-wide: the loser of the
           -- race sees the winner's role (a unique violation, not duplicate_object).
           CREATE ROLE exact_app NOLOGIN;
           EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         CREATE TABLE notes (id bigint PRIMARY KEY, tenant_id int NOT NULL,
                             hidden bool NOT NULL, body text NOT NULL);
         -- Tenant 3 owns the most notes; most of them are hidden.
         INSERT INTO notes SELECT g, CASE WHEN g <= 900 THEN 3 ELSE 1 + g % 30 END,
                                  g <= 890, 'n' || g FROM generate_series(1, 3000) g;
         ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant ON notes FOR SELECT TO exact_app
           USING (tenant_id = current_setting('app.tenant_id')::int{extra});
         GRANT SELECT ON notes TO exact_app;
         ANALYZE"
    ));
}

fn run(db: &TestDb) -> String {
    let dir = common::project_dir();
    let q = dir.path().join("queries.toml");
    std::fs::write(
        &q,
        "format_version = 2\n\n[[statement]]\nrole = \"exact_app\"\nbypass_rls = false\n\
         query = \"SELECT id FROM notes WHERE body = $1\"\n",
    )
    .unwrap();
    let out = db.planck(
        &[
            "--format",
            "json",
            "explain",
            "--queries",
            q.to_str().unwrap(),
        ],
        dir.path(),
    );
    let err = stderr(&out);
    assert!(out.status.code().unwrap_or(-1) <= 1, "{err}");
    err
}

fn identities_line(err: &str) -> &str {
    err.lines()
        .find(|l| l.contains("identities: measured"))
        .unwrap_or_else(|| panic!("no identities line:\n{err}"))
}

#[test]
fn direct_tenant_policies_take_the_visible_rows_from_the_data() {
    let db = test_db!();
    schema(&db, "");
    let err = run(&db);
    let line = identities_line(&err);
    assert!(line.contains("exactly from the data"), "{line}");
    assert!(line.contains("rows visible in notes"), "{line}");
    // The test's own count: tenant 3 owns (and so sees) the most rows.
    let max = db.query_strings(
        "SELECT tenant_id || ' ' || count(*) FROM notes GROUP BY tenant_id ORDER BY count(*) DESC LIMIT 1",
    );
    let (id, rows) = max[0].split_once(' ').unwrap();
    assert_eq!(id, "3");
    assert!(
        line.contains(&format!("heaviest identity {id} sees {rows} rows")),
        "{line}"
    );
}

#[test]
fn a_policy_with_more_than_the_comparison_is_still_measured_under_rls() {
    let db = test_db!();
    schema(&db, " AND NOT hidden");
    let err = run(&db);
    let line = identities_line(&err);
    assert!(!line.contains("exactly from the data"), "{line}");
    assert!(line.contains("under row-level security"), "{line}");
    // Measured: the rows tenant 3 sees, not the 970 it owns.
    let seen = db.query_strings(
        "SELECT tenant_id || ' ' || count(*) FROM notes WHERE NOT hidden
          GROUP BY tenant_id ORDER BY count(*) DESC LIMIT 1",
    );
    let (id, rows) = seen[0].split_once(' ').unwrap();
    assert_eq!((id, rows), ("3", "80"));
    assert!(
        line.contains(&format!("heaviest identity {id} sees {rows} rows")),
        "{line}"
    );
}
