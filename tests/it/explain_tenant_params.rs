//! Each tenant's plan binds that tenant's id (issue 48 §4): a parameter
//! compared with a table's tenant column gets the id of the tenant the
//! plan is labelled with, on a table with a policy and on one without
//! (`users.org_id`, which only a foreign key ties to the tenant), in every
//! mode. The median plan was made with the heaviest tenant's id, since a
//! table without a policy was sampled for its most common value.

use crate::common;

use std::path::Path;

use common::explain_json::{Report, Statement};
use common::{TestDb, stderr, stdout};

/// Orgs 1..=9, org 1 the heaviest in both tables, each org's share
/// distinct, so the heaviest and the median are one tenant each. `tasks`
/// has a policy on `app.org_id`; `users` has none, only its foreign key.
fn orgs_schema(db: &TestDb) {
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'orgs_app') THEN
             CREATE ROLE orgs_app NOLOGIN; END IF;
         END $$;
         CREATE TABLE orgs (id bigint PRIMARY KEY, name text NOT NULL);
         CREATE TABLE users (id bigint PRIMARY KEY,
           org_id bigint NOT NULL REFERENCES orgs, email text NOT NULL);
         CREATE TABLE tasks (id bigint PRIMARY KEY,
           org_id bigint NOT NULL REFERENCES orgs, title text NOT NULL);
         INSERT INTO orgs SELECT g, 'org ' || g FROM generate_series(1, 9) g;
         INSERT INTO users SELECT row_number() OVER (), o, 'u' || o || '.' || n || '@x'
           FROM generate_series(1, 9) o, generate_series(1, (10 - o) * (10 - o) * 20) n;
         INSERT INTO tasks SELECT row_number() OVER (), o, 't' || n
           FROM generate_series(1, 9) o, generate_series(1, (10 - o) * (10 - o) * 50) n;
         CREATE INDEX ON users (org_id);
         CREATE INDEX ON tasks (org_id);
         ALTER TABLE tasks ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant ON tasks TO orgs_app
           USING (org_id = current_setting('app.org_id')::bigint);
         GRANT SELECT ON orgs, users, tasks TO orgs_app;
         ANALYZE",
    );
}

/// The heaviest and the median org, computed here from the data as
/// docs/explain.md defines them (not read from planck): the rows each org
/// sees under its policy (here exactly its `tasks`), most first; the
/// median is that of the others, ranked fewest first.
fn heaviest_and_median(db: &TestDb) -> (String, String) {
    let ranked = db.query_strings(
        "SELECT org_id::text FROM tasks GROUP BY org_id ORDER BY count(*) DESC, org_id",
    );
    assert_eq!(ranked.len(), 9, "{ranked:?}");
    let others: Vec<&String> = ranked[1..].iter().rev().collect();
    (ranked[0].clone(), others[(others.len() - 1) / 2].clone())
}

fn explain(db: &TestDb, dir: &Path, stmts: &[&str]) -> Report {
    let mut text = String::from("format_version = 2\n");
    for q in stmts {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"orgs_app\"\nbypass_rls = false\nquery = '''\n{q}\n'''\n"
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

/// Every custom plan of `s` labelled `label` binds `id` as its tenant and
/// as `$1`; there is one in each mode planned.
fn assert_binds(s: &Statement, label: &str, id: &str) {
    let plans: Vec<_> = s
        .plans
        .iter()
        .filter(|p| p.kind == "custom" && p.tenant.as_deref() == Some(label))
        .collect();
    let modes: std::collections::BTreeSet<&str> = plans.iter().map(|p| p.mode.as_str()).collect();
    assert_eq!(
        modes,
        ["admin", "tenant"].into(),
        "a {label} plan in each mode: {:#?}",
        s.plans
    );
    for p in plans {
        assert_eq!(
            p.tenant_id.as_deref(),
            Some(id),
            "{label} ({}): {p:#?}",
            p.mode
        );
        assert_eq!(
            p.params.first().cloned().flatten().as_deref(),
            Some(id),
            "the {label} plan ({} mode) of {} binds the {label} tenant's id",
            p.mode,
            s.query
        );
    }
}

#[test]
fn each_tenants_plan_binds_its_own_id_on_tables_with_and_without_a_policy() {
    let db = test_db!();
    orgs_schema(&db);
    let (heaviest, median) = heaviest_and_median(&db);
    assert_ne!(heaviest, median);
    let dir = common::project_dir();
    let no_policy = "SELECT u.id, u.email FROM users u WHERE u.org_id = $1";
    let policy = "SELECT t.id, t.title FROM tasks t WHERE t.org_id = $1";
    let r = explain(&db, dir.path(), &[no_policy, policy]);
    for q in [no_policy, policy] {
        let s = r.statement(q);
        assert!(s.planned(), "{s:#?}");
        assert_binds(s, "heaviest", &heaviest);
        assert_binds(s, "median", &median);
    }
}
