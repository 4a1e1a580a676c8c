//! Issue 10 section 2: statements that ran inside functions
//! (pg_stat_statements `toplevel = false`) name the function's parameters,
//! its variables and `NEW`/`OLD`. They were skipped ("planck cannot bind
//! yet"); now the enclosing function is found in `pg_proc.prosrc` and the
//! names become typed parameters, so the statement plans.

use crate::common;

use std::path::Path;

use common::explain_json::{Report, Statement};
use common::{TestDb, stderr, stdout};

/// `planck record` around a psql run of `script`, then `planck --format json explain`.
fn record_and_explain(db: &TestDb, dir: &Path, script: &str) -> (Report, String) {
    let path = dir.join("run.sql");
    std::fs::write(&path, script).unwrap();
    let path = path.display().to_string();
    let rec = db.planck(
        &[
            "record",
            "-o",
            "q.toml",
            "--",
            "psql",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            &db.url,
            "-f",
            &path,
        ],
        dir,
    );
    assert!(rec.status.success(), "record: {}", stderr(&rec));
    // The fixtures' tables hold a handful of rows: what is judged here is
    // that statements plan, not their plans.
    let out = db.planck(
        &[
            "--format",
            "json",
            "explain",
            "--queries",
            "q.toml",
            "--allow-unseeded",
        ],
        dir,
    );
    let r: Report = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "not the report ({e})\nstdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        )
    });
    (r, stderr(&out))
}

fn plans_text(s: &Statement) -> String {
    s.plans
        .iter()
        .map(|p| p.plan.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The explained statement whose recorded text holds `needle`, bound inside `function`.
fn bound<'a>(r: &'a Report, needle: &str, function: &str) -> &'a Statement {
    let s = r.statement(needle);
    assert_eq!(s.status, "explained", "{s:#?}");
    assert!(
        s.repairs
            .iter()
            .any(|x| x.starts_with(&format!("ran inside {function}"))),
        "{s:#?}"
    );
    s
}

#[test]
fn issue10_statements_inside_sql_plpgsql_and_trigger_functions_are_bound_and_planned() {
    let db = test_db!();
    let dir = common::project_dir();
    db.exec(
        "CREATE TABLE accounts (id bigint PRIMARY KEY, slug text NOT NULL UNIQUE,
                                owner_id bigint NOT NULL);
         CREATE INDEX accounts_owner ON accounts (owner_id);
         CREATE TABLE audit (id bigserial PRIMARY KEY, account_id bigint NOT NULL, note text);
         CREATE INDEX audit_account ON audit (account_id);
         INSERT INTO accounts SELECT g, 'a' || g, g % 2000 FROM generate_series(1, 50000) g;
         INSERT INTO audit (account_id, note) SELECT g, 'x' FROM generate_series(1, 50000) g;
         ANALYZE accounts; ANALYZE audit;
         -- SQL: a parameter qualified with the function's name, one by position.
         CREATE FUNCTION owner_count(owner bigint, min_id bigint) RETURNS bigint
           LANGUAGE sql VOLATILE AS $$
           SELECT count(*) FROM accounts WHERE owner_id = owner_count.owner AND id > $2 $$;
         -- plpgsql: a bare parameter, a record's field, a DECLAREd variable.
         CREATE FUNCTION touch(p_slug text) RETURNS bigint LANGUAGE plpgsql AS $$
         DECLARE
           v_acc accounts;
           v_limit integer := 5;
         BEGIN
           SELECT * INTO v_acc FROM accounts WHERE slug = p_slug;
           INSERT INTO audit (account_id, note)
             SELECT id, slug FROM accounts WHERE owner_id = v_acc.owner_id LIMIT v_limit;
           RETURN v_acc.id;
         END $$;
         -- A trigger: NEW.col is the trigger table's column.
         CREATE FUNCTION audit_account() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           PERFORM 1 FROM audit WHERE account_id = NEW.owner_id AND note IS NOT NULL;
           RETURN NEW;
         END $$;
         CREATE TRIGGER accounts_audit AFTER INSERT ON accounts
           FOR EACH ROW EXECUTE FUNCTION audit_account();
         -- A loop's record: its fields cannot be known, so it is skipped, naming the function.
         CREATE FUNCTION loop_audit() RETURNS void LANGUAGE plpgsql AS $$
         DECLARE r record;
         BEGIN
           FOR r IN SELECT * FROM accounts WHERE id < 3 LOOP
             UPDATE audit SET note = 'seen' WHERE account_id = r.id;
           END LOOP;
         END $$;",
    );
    let (r, err) = record_and_explain(
        &db,
        dir.path(),
        "SELECT owner_count(7, 100);\n\
         SELECT touch('a42');\n\
         INSERT INTO accounts VALUES (900001, 'new', 7);\n\
         SELECT loop_audit();\n",
    );

    let sql = bound(&r, "owner_count.owner", "owner_count(bigint,bigint)");
    let planned = sql.planned_query.as_deref().unwrap_or_default();
    assert!(!planned.contains("owner_count.owner"), "{planned}");
    assert!(planned.contains("::bigint"), "{planned}");
    assert!(plans_text(sql).contains("accounts_owner"), "{sql:#?}");

    let param = bound(&r, "slug = p_slug", "touch(text)");
    assert!(
        plans_text(param).contains("accounts_slug_key"),
        "{param:#?}"
    );
    let fields = bound(&r, "v_acc.owner_id", "touch(text)");
    let repairs = fields.repairs.join("\n");
    assert!(repairs.contains("v_acc.owner_id as bigint"), "{repairs}");
    assert!(repairs.contains("v_limit as integer"), "{repairs}");
    assert!(plans_text(fields).contains("accounts_owner"), "{fields:#?}");

    let trigger = bound(&r, "NEW.owner_id", "audit_account()");
    assert!(
        trigger
            .repairs
            .join("\n")
            .contains("new.owner_id as bigint"),
        "{trigger:#?}"
    );
    assert!(
        plans_text(trigger).contains("audit_account"),
        "{trigger:#?}"
    );

    // Binding cannot work on a loop's record: skipped naming the function, never stale.
    let looped = r.statement("= r.id");
    assert_eq!(looped.status, "skipped", "{looped:#?}");
    let why = looped.reason.as_deref().unwrap_or_default();
    assert!(
        why.contains("loop_audit()") && why.contains("record"),
        "{why}"
    );
    assert!(r.findings("stale-statement").is_empty(), "{r:#?}\n{err}");
}

/// The PostGraphile application's test run: 40 of its 48 skipped statements
/// ran inside functions. Bound, they plan: what stays skipped inside
/// functions is plpgsql's own FROM-less evaluations (noise).
#[test]
fn issue10_graphile_starter_statements_inside_functions_are_planned() {
    let db = test_db!();
    let fx = common::fixture("graphile-starter");
    common::load_fixture(&db, &fx);
    let dir = common::project_dir();
    let script = std::fs::read_to_string(fx.join("testrun.sql")).unwrap();
    let (r, err) = record_and_explain(&db, dir.path(), &script);
    let explained = r.statements.iter().filter(|s| s.planned()).count();
    let bound = r
        .statements
        .iter()
        .filter(|s| s.planned() && s.repairs.iter().any(|x| x.starts_with("ran inside ")))
        .count();
    eprintln!("graphile-starter: {explained} explained, {bound} bound inside functions");
    // Before: 31 of 79 explained, none inside a function.
    assert!(explained >= 66, "{explained} explained\n{r:#?}\n{err}");
    assert!(bound >= 35, "{bound} bound");
    // Refused for a constant's type (generate_series(unknown, unknown))
    // before its names were looked up: its bare variable is bound anyway.
    let series = r.statement("from generate_series(");
    assert!(series.planned(), "{series:#?}");
    assert!(
        series
            .repairs
            .iter()
            .any(|x| x.contains("bound v_username as citext")),
        "{series:#?}"
    );
    let inside_skipped: Vec<_> = r
        .statements
        .iter()
        .filter(|s| s.status == "skipped")
        .filter(|s| !s.reason.as_deref().unwrap_or_default().contains("noise"))
        .filter(|s| s.plans.is_empty() && s.query.contains("v_"))
        .collect();
    assert!(inside_skipped.is_empty(), "{inside_skipped:#?}");
    let unbound: Vec<_> = r
        .statements
        .iter()
        .filter(|s| {
            s.reason.as_deref().is_some_and(|x| {
                x.contains("names what planck could not bind")
                    || x.contains("cannot bind its names")
            })
        })
        .collect();
    assert!(unbound.is_empty(), "{unbound:#?}");
    assert!(r.findings("stale-statement").is_empty(), "{r:#?}");
}
