//! Row-level security as applications write it (issue 10 section 3): the
//! identity that sees the most rows, measured under RLS; policy functions
//! called once per row (`rls-per-row-call`); a prepared statement's plan
//! kept across tenants (`tenant-plan-reuse`); estimates a tenant's rows
//! break (`tenant-misestimate`).

use crate::common;

use std::path::Path;

use common::explain_json::Report;
use common::{TestDb, stderr, stdout};

/// Runs `planck --format json explain ARGS`: the exit code, the report, stderr.
fn json_run(db: &TestDb, dir: &Path, args: &[&str]) -> (i32, Report, String) {
    let mut a = vec!["--format", "json", "explain"];
    a.extend_from_slice(args);
    let out = db.planck(&a, dir);
    let code = out.status.code().unwrap_or(-1);
    let r: Report = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "not the report ({e}); exit {code}\nstdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        )
    });
    (code, r, stderr(&out))
}

/// A queries file of statements the application role sent.
fn app_queries(dir: &Path, role: &str, stmts: &[&str]) -> String {
    let mut text = String::from("format_version = 2\n");
    for q in stmts {
        text.push_str(&format!(
            "\n[[statement]]\nrole = \"{role}\"\nbypass_rls = false\nquery = '''\n{q}\n'''\n"
        ));
    }
    let path = dir.join("queries.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Supabase's roles and an `auth` schema; `uid_lang` is auth.uid()'s body
/// (SQL reading the JSON claim set, or plpgsql: not inlined, so counted).
fn supabase(db: &TestDb, uid: &str) {
    db.exec(&format!(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'anon') THEN CREATE ROLE anon NOLOGIN; END IF;
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN CREATE ROLE authenticated NOLOGIN; END IF;
         END $$;
         CREATE SCHEMA auth;
         GRANT USAGE ON SCHEMA auth TO anon, authenticated;
         {uid}"
    ));
}

const UID_SQL: &str = "CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $f$
      select nullif(current_setting('request.jwt.claims', true)::jsonb ->> 'sub', '')::uuid
    $f$;";

const UID_PLPGSQL: &str = "CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE plpgsql STABLE AS $f$
      begin
        return nullif(current_setting('request.jwt.claims', true)::jsonb ->> 'sub', '')::uuid;
      end
    $f$;";

fn user(n: i64) -> String {
    format!("00000000-0000-0000-0000-{n:012}")
}

/// The rows `user` sees in `tables` as `authenticated`, counted by this
/// test's own SQL (not planck's): the claim set as Supabase sets it.
fn visible_rows(db: &TestDb, user: &str, tables: &[&str]) -> i64 {
    let sum = tables
        .iter()
        .map(|t| format!("(SELECT count(*) FROM {t})"))
        .collect::<Vec<_>>()
        .join(" + ");
    let claims = format!("{{\"sub\": \"{user}\", \"role\": \"authenticated\"}}");
    let conn = db.conn();
    common::block_on(async move {
        let c = conn.connect().await.unwrap();
        c.batch_execute("BEGIN; SET LOCAL ROLE authenticated")
            .await
            .unwrap();
        c.execute(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[&claims],
        )
        .await
        .unwrap();
        let n: i64 = c
            .query_one(&format!("SELECT ({sum})::bigint"), &[])
            .await
            .unwrap()
            .get(0);
        c.batch_execute("ROLLBACK").await.unwrap();
        n
    })
}

/// The `identities:` line: (measured, candidates, heaviest, its rows).
fn identities_line(err: &str) -> (usize, usize, String, i64) {
    let line = err
        .lines()
        .find(|l| l.contains("identities: measured"))
        .unwrap_or_else(|| panic!("no identities line:\n{err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
    let measured = words[at("measured") + 1].parse().unwrap();
    let candidates = words[at("measured") + 3].parse().unwrap();
    let i = words.iter().position(|x| *x == "heaviest").unwrap();
    let id = words[i + 2].to_string();
    let rows = words[i + 4].replace(',', "").parse().unwrap();
    (measured, candidates, id, rows)
}

/// Issue 10 section 3, membership visibility: projects are visible through
/// `account_id IN (SELECT account_id FROM memberships WHERE user_id =
/// auth.uid())`. The user with the most membership rows (the old "heaviest
/// tenant": most rows owned) sees little; user 7, a member of one big
/// account only, sees the most. The test counts every identity's visible
/// rows with its own SQL and asserts planck chose the maximum.
#[test]
fn issue10_membership_the_heaviest_identity_is_the_one_that_sees_the_most_rows() {
    let db = test_db!();
    supabase(&db, UID_SQL);
    db.exec(
        "CREATE TABLE accounts (id bigint PRIMARY KEY, name text NOT NULL);
         CREATE TABLE memberships (account_id bigint NOT NULL REFERENCES accounts,
                                   user_id uuid NOT NULL, PRIMARY KEY (account_id, user_id));
         CREATE TABLE projects (id bigint PRIMARY KEY, account_id bigint NOT NULL REFERENCES accounts,
                                title text NOT NULL);
         INSERT INTO accounts SELECT g, 'a' || g FROM generate_series(1, 30) g;
         -- Account 1 is big; its only member is user 7.
         INSERT INTO projects SELECT g, CASE WHEN g <= 3000 THEN 1 ELSE 2 + g % 29 END, 'p' || g
           FROM generate_series(1, 3600) g;
         INSERT INTO memberships VALUES (1, '00000000-0000-0000-0000-000000000007');
         -- Every other user (1..40) is a member of 2 to 5 small accounts.
         INSERT INTO memberships
           SELECT DISTINCT 2 + (u * i) % 29, ('00000000-0000-0000-0000-' || lpad(u::text, 12, '0'))::uuid
             FROM generate_series(1, 40) u, generate_series(1, 5) i
            WHERE u <> 7 AND i <= 2 + u % 4;
         ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
         ALTER TABLE memberships ENABLE ROW LEVEL SECURITY;
         ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
         CREATE POLICY own ON memberships FOR SELECT TO authenticated USING (user_id = auth.uid());
         CREATE POLICY member ON accounts FOR SELECT TO authenticated
           USING (id IN (SELECT account_id FROM memberships WHERE user_id = auth.uid()));
         CREATE POLICY member ON projects FOR SELECT TO authenticated
           USING (account_id IN (SELECT account_id FROM memberships WHERE user_id = auth.uid()));
         GRANT SELECT ON accounts, memberships, projects TO authenticated;
         ANALYZE",
    );
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "authenticated",
        &["SELECT id, title FROM projects WHERE title = $1"],
    );
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);

    // The test's own count for every identity.
    let tables = ["accounts", "memberships", "projects"];
    let users = db.query_strings("SELECT DISTINCT user_id::text FROM memberships ORDER BY 1");
    assert_eq!(users.len(), 40);
    let counts: Vec<(String, i64)> = users
        .iter()
        .map(|u| (u.clone(), visible_rows(&db, u, &tables)))
        .collect();
    let max = counts.iter().map(|c| c.1).max().unwrap();
    let best: Vec<&String> = counts.iter().filter(|c| c.1 == max).map(|c| &c.0).collect();
    assert_eq!(
        best,
        vec![&user(7)],
        "the planted identity sees the most: {counts:?}"
    );
    // The proxy alone (membership rows) would rank user 7 last.
    let most_memberships = db.query_strings(
        "SELECT user_id::text FROM memberships GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1",
    );
    assert_ne!(most_memberships[0], user(7));

    let (measured, candidates, chosen, rows) = identities_line(&err);
    assert_eq!((measured, candidates), (40, 40), "{err}");
    assert_eq!(chosen, user(7), "{err}");
    assert_eq!(rows, max, "{err}");
    assert!(err.contains("median identity"), "{err}");
    // The tenant plans are made as that identity, its claim set as JSON.
    assert!(
        err.contains(&format!("\"sub\":\"{}\"", user(7))),
        "the claim is set for the chosen identity: {err}"
    );
    let s = r.statement("FROM projects");
    assert_eq!(s.mode.as_deref(), Some("tenant"), "{s:#?}");
    assert!(
        s.plans
            .iter()
            .any(|p| p.mode == "tenant" && p.tenant_id.as_deref() == Some(user(7).as_str())),
        "{s:#?}"
    );

    // With no budget nothing is measured: the proxy's choice is back.
    let (_, _, err) = json_run(
        &db,
        dir.path(),
        &["--queries", &q, "--identity-budget", "0"],
    );
    assert!(!err.contains("identities: measured"), "{err}");
    assert!(!err.contains(&format!("\"sub\":\"{}\"", user(7))), "{err}");
}

/// Calls of `function` in pg_stat_user_functions, read by this test's own
/// SQL; waits for planck's sessions to flush their counts as they end.
fn stat_calls(db: &TestDb, function: &str, at_least: i64) -> i64 {
    let sql = format!(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = '{function}'"
    );
    let mut n = 0;
    for _ in 0..50 {
        n = db.query_strings(&sql)[0].parse().unwrap();
        if n >= at_least {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    n
}

/// `N calls for` in a finding's message.
fn reported_calls(message: &str) -> i64 {
    let words: Vec<&str> = message.split_whitespace().collect();
    let i = words
        .windows(3)
        .position(|w| w[1] == "calls" && w[2] == "for")
        .unwrap_or_else(|| panic!("no call count in {message}"));
    words[i].replace(',', "").parse().unwrap()
}

fn notes(db: &TestDb, table: &str, policy: &str) {
    db.exec(&format!(
        "CREATE TABLE {table} (id bigint PRIMARY KEY, user_id uuid NOT NULL, body text NOT NULL);
         INSERT INTO {table} SELECT g,
                ('00000000-0000-0000-0000-' || lpad(CASE WHEN g % 4 = 0 THEN 1 ELSE g % 40 + 2 END::text, 12, '0'))::uuid,
                'b' || g
           FROM generate_series(1, 20000) g;
         ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
         CREATE POLICY own ON {table} FOR SELECT TO authenticated USING ({policy});
         GRANT SELECT ON {table} TO authenticated;
         ANALYZE {table}"
    ));
}

/// Issue 10 section 3, `rls-per-row-call`: `using (user_id = auth.uid())`
/// calls auth.uid() for each of the 20,000 rows the scan filters; the
/// `(select auth.uid())` form is an InitPlan and is not flagged. Under
/// --analyze the calls planck reports are the ones the server counted
/// (pg_stat_user_functions, read by the test).
#[test]
fn issue10_rls_per_row_call_fires_on_a_bare_call_not_on_the_initplan_form() {
    let db = test_db!();
    supabase(&db, UID_PLPGSQL);
    notes(&db, "notes", "user_id = auth.uid()");
    notes(&db, "notes_init", "user_id = (SELECT auth.uid())");
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "authenticated",
        &[
            "SELECT id, body FROM notes",
            "SELECT id, body FROM notes_init",
        ],
    );
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q, "--analyze"]);
    let found = r.findings("rls-per-row-call");
    assert_eq!(found.len(), 1, "only the bare call: {found:#?}\n{err}");
    let f = found[0];
    assert_eq!(f.relation.as_deref(), Some("notes"), "{f:#?}");
    assert_eq!(f.severity, "warning");
    assert!(f.message.contains("auth.uid()"), "{}", f.message);
    assert!(
        f.message.contains("rewrite it as: ALTER POLICY \"own\" ON")
            && f.message.contains("(SELECT auth.uid())"),
        "{}",
        f.message
    );
    let calls = reported_calls(&f.message);
    assert!(
        (20_000..20_010).contains(&calls),
        "one call per row: {}",
        f.message
    );
    assert_eq!(stat_calls(&db, "uid", calls), calls, "{}", f.message);
    assert!(f.message.contains("for 20,000 rows"), "{}", f.message);
}

/// Issue 10 section 3: the call hidden in a SECURITY DEFINER SQL helper the
/// policy calls (`using (user_id = app.me())`, `app.me()` calling
/// auth.uid()): a policy-text lint looking for auth.uid() misses it, the
/// plan shows it.
#[test]
fn issue10_rls_per_row_call_fires_on_a_call_hidden_in_a_security_definer_helper() {
    let db = test_db!();
    supabase(&db, UID_PLPGSQL);
    db.exec(
        "CREATE SCHEMA app;
         CREATE FUNCTION app.me() RETURNS uuid LANGUAGE sql STABLE SECURITY DEFINER
           AS $f$ select auth.uid() $f$;
         GRANT USAGE ON SCHEMA app TO authenticated;",
    );
    notes(&db, "notes", "user_id = app.me()");
    let dir = common::project_dir();
    let q = app_queries(dir.path(), "authenticated", &["SELECT id, body FROM notes"]);
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q, "--analyze"]);
    let found = r.findings("rls-per-row-call");
    assert_eq!(found.len(), 1, "{found:#?}\n{err}");
    let m = &found[0].message;
    assert!(
        m.contains("app.me()") && m.contains("which calls uid"),
        "{m}"
    );
    let calls = reported_calls(m);
    assert!((20_000..20_010).contains(&calls), "{m}");
    assert_eq!(stat_calls(&db, "me", calls), calls, "{m}");
}

/// A helpdesk schema: tickets guarded by `tenant_id =
/// current_setting('app.tenant_id')::int`, comments per ticket. `skewed`:
/// tenant 1 owns 60,000 tickets, 200 others 100 each; else all 100 each.
fn helpdesk(db: &TestDb, skewed: bool) {
    let tenant = if skewed {
        "CASE WHEN g <= 60000 THEN 1 ELSE 2 + g % 200 END"
    } else {
        "1 + g % 200"
    };
    let n = if skewed { 80_000 } else { 20_000 };
    db.exec(&format!(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'helpdesk_app') THEN
             CREATE ROLE helpdesk_app NOLOGIN; END IF;
         END $$;
         CREATE TABLE tickets (id bigint PRIMARY KEY, tenant_id int NOT NULL, subject text NOT NULL);
         CREATE TABLE comments (id bigint PRIMARY KEY, ticket_id bigint NOT NULL, body text NOT NULL);
         INSERT INTO tickets SELECT g, {tenant}, 's' || g FROM generate_series(1, {n}) g;
         INSERT INTO comments SELECT g, g, 'c' || g FROM generate_series(1, {n}) g;
         CREATE INDEX ON tickets (tenant_id);
         CREATE INDEX ON comments (ticket_id);
         ALTER TABLE tickets ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant ON tickets TO helpdesk_app
           USING (tenant_id = current_setting('app.tenant_id')::int);
         GRANT SELECT ON tickets, comments TO helpdesk_app;
         ANALYZE"
    ));
}

const JOIN: &str = "SELECT t.id, c.body FROM tickets t JOIN comments c ON c.ticket_id = t.id";

/// Issue 10 section 3, `tenant-plan-reuse`: a parameterless join prepared
/// as the median tenant keeps its generic plan (estimated for ~100 rows)
/// when the heaviest tenant (60,000) runs it; a fresh plan differs. The
/// finding names both plans, and its help does not propose plan_cache_mode,
/// which cannot apply to a statement without parameters.
#[test]
fn issue10_tenant_plan_reuse_fires_on_a_planted_skew_and_names_both_plans() {
    let db = test_db!();
    helpdesk(&db, true);
    let dir = common::project_dir();
    let q = app_queries(dir.path(), "helpdesk_app", &[JOIN]);
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    let found = r.findings("tenant-plan-reuse");
    assert_eq!(found.len(), 1, "{found:#?}\n{err}");
    let f = found[0];
    assert_eq!(f.severity, "warning");
    let (kept, fresh) = f.message.split_once("planned fresh for").unwrap();
    assert!(kept.contains("heaviest tenant 1"), "{}", f.message);
    assert!(
        kept.contains("Nested Loop"),
        "the median's plan is kept: {}",
        f.message
    );
    assert!(
        fresh.contains("Hash Join"),
        "the heaviest's own plan: {}",
        f.message
    );
    let rows = |plan: &str| -> u64 {
        let at = plan.find("on tickets (").expect("the tickets scan") + "on tickets (".len();
        plan[at..]
            .split(' ')
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap()
    };
    assert!(
        rows(kept) < 1_000,
        "the kept plan's estimate: {}",
        f.message
    );
    assert!(
        rows(fresh) > 10_000,
        "the fresh plan's estimate: {}",
        f.message
    );
    assert!(!f.help.contains("force_custom_plan"), "{}", f.help);
    assert!(!f.help.contains("plan_cache_mode"), "{}", f.help);
    assert!(f.help.contains("DEALLOCATE"), "{}", f.help);
}

/// Uniform tenants: the kept plan is the one a fresh plan would be.
#[test]
fn issue10_tenant_plan_reuse_is_quiet_on_uniform_tenants() {
    let db = test_db!();
    helpdesk(&db, false);
    let dir = common::project_dir();
    let q = app_queries(dir.path(), "helpdesk_app", &[JOIN]);
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    assert!(err.contains("identities: measured"), "{err}");
    assert!(
        r.findings("tenant-plan-reuse").is_empty(),
        "{:#?}",
        r.findings
    );
    assert_eq!(r.statement("FROM tickets").status, "explained");
}

/// Issue 10 section 3, `tenant-misestimate` (--analyze): tenant 1 owns 6% of
/// the tickets and every `rare` one; the planner multiplies the two
/// selectivities and estimates ~30 rows where the tenant has 500, under a Sort.
#[test]
fn issue10_tenant_misestimate_names_the_table_under_a_sort() {
    let db = test_db!();
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'helpdesk_app') THEN
             CREATE ROLE helpdesk_app NOLOGIN; END IF;
         END $$;
         CREATE TABLE tickets (id bigint PRIMARY KEY, tenant_id int NOT NULL, status text NOT NULL,
                               created timestamptz NOT NULL);
         INSERT INTO tickets SELECT g, CASE WHEN g <= 6000 THEN 1 ELSE 2 + g % 19 END,
                CASE WHEN g <= 500 THEN 'rare' ELSE 'common' END,
                timestamptz '2024-01-01' + g * interval '1 minute'
           FROM generate_series(1, 100000) g;
         ALTER TABLE tickets ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant ON tickets TO helpdesk_app
           USING (tenant_id = current_setting('app.tenant_id')::int);
         GRANT SELECT ON tickets TO helpdesk_app;
         ANALYZE",
    );
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "helpdesk_app",
        &["SELECT id FROM tickets WHERE status = 'rare' ORDER BY created"],
    );
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    assert!(
        r.findings("tenant-misestimate").is_empty(),
        "needs --analyze"
    );
    let (_, r, _) = json_run(&db, dir.path(), &["--queries", &q, "--analyze"]);
    let found = r.findings("tenant-misestimate");
    assert_eq!(found.len(), 1, "{:#?}\n{err}", r.findings);
    let f = found[0];
    assert_eq!(f.relation.as_deref(), Some("tickets"));
    assert!(f.message.contains("read 500"), "{}", f.message);
    assert!(f.message.contains("feeding a Sort"), "{}", f.message);
    assert!(
        f.message.contains("tenant column tenant_id"),
        "{}",
        f.message
    );
    assert!(f.message.contains("SET STATISTICS"), "{}", f.message);
}

/// Issue 10 section 3, splinter's performance lints judged on the plans:
/// two permissive SELECT policies for `authenticated` on a table a tenant
/// plan reads (each evaluated per row, ORed), and two identical indexes.
#[test]
fn issue10_multiple_permissive_policies_and_duplicate_indexes_are_flagged() {
    let db = test_db!();
    supabase(&db, UID_SQL);
    notes(&db, "notes", "user_id = auth.uid()");
    db.exec(
        "CREATE POLICY shared ON notes FOR ALL TO authenticated USING (body LIKE 'shared%');
         CREATE POLICY mine_restrictive ON notes AS RESTRICTIVE FOR SELECT TO authenticated USING (true);
         CREATE INDEX notes_body ON notes (body);
         CREATE INDEX notes_body_again ON notes (body);
         CREATE INDEX notes_body_partial ON notes (body) WHERE body <> '';",
    );
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "authenticated",
        &["SELECT id FROM notes WHERE body = $1"],
    );
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    let perm = r.findings("multiple-permissive-policies");
    assert_eq!(perm.len(), 1, "{perm:#?}\n{err}");
    assert!(
        perm[0]
            .message
            .contains("for SELECT on notes (own, shared)"),
        "the restrictive one is not counted: {}",
        perm[0].message
    );
    let dup = r.findings("duplicate-index");
    assert_eq!(
        dup.len(),
        1,
        "the partial index is not a duplicate: {dup:#?}"
    );
    assert!(
        dup[0].message.contains("notes_body, notes_body_again"),
        "{}",
        dup[0].message
    );
}

/// Issue 10 acceptance on the PostGraphile application (vendored
/// graphile-starter, its test run recorded as the app sends it): the
/// identity planck plans as is one that sees the most rows, counted for
/// every user with a session by this test's own SQL (the visitor role, the
/// session id set as PostGraphile sets it), over the RLS tables planck
/// counted, which are every RLS table the visitor may read.
#[test]
fn issue10_graphile_starter_the_chosen_identity_sees_the_most_rows() {
    let db = test_db!();
    let dir = common::project_dir();
    common::record_graphile_starter(&db, dir.path());
    let (_, _, err) = json_run(&db, dir.path(), &["--queries", "gs.toml"]);
    let (measured, candidates, chosen, rows) = identities_line(&err);
    assert!(measured >= 2 && measured == candidates, "{err}");
    let line = err.lines().find(|l| l.contains("identities:")).unwrap();
    eprintln!("{line}");
    let listed: std::collections::BTreeSet<String> = line
        .split("(rows visible in ")
        .nth(1)
        .unwrap()
        .split("):")
        .next()
        .unwrap()
        .split(", ")
        .map(str::to_string)
        .collect();
    let readable: std::collections::BTreeSet<String> = db
        .query_strings(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relrowsecurity AND c.relkind = 'r'
                AND has_table_privilege('graphile_starter_visitor', c.oid, 'SELECT')",
        )
        .into_iter()
        .collect();
    assert_eq!(listed, readable, "{line}");

    let users = db.query_strings(
        "SELECT user_id::text || ' ' || min(uuid::text) FROM app_private.sessions GROUP BY user_id",
    );
    assert_eq!(users.len(), candidates, "{users:?}");
    let sum = readable
        .iter()
        .map(|t| format!("(SELECT count(*) FROM {t})"))
        .collect::<Vec<_>>()
        .join(" + ");
    let mut counts = Vec::new();
    for u in &users {
        let (user, session) = u.split_once(' ').unwrap();
        let conn = db.conn();
        let (session, sum) = (session.to_string(), sum.clone());
        let n: i64 = common::block_on(async move {
            let c = conn.connect().await.unwrap();
            c.batch_execute("BEGIN; SET LOCAL ROLE graphile_starter_visitor")
                .await
                .unwrap();
            c.execute(
                "SELECT set_config('jwt.claims.session_id', $1, true)",
                &[&session],
            )
            .await
            .unwrap();
            let n = c
                .query_one(&format!("SELECT ({sum})::bigint"), &[])
                .await
                .unwrap()
                .get(0);
            c.batch_execute("ROLLBACK").await.unwrap();
            n
        });
        counts.push((user.to_string(), n));
    }
    let max = counts.iter().map(|c| c.1).max().unwrap();
    let of_chosen = counts.iter().find(|c| c.0 == chosen).map(|c| c.1);
    assert_eq!(of_chosen, Some(max), "{counts:?}\n{line}");
    assert_eq!(rows, max, "{line}");
    // The median is another identity, so a median plan is made too.
    assert!(
        !line.contains(&format!("median identity {chosen}")),
        "{line}"
    );
}

/// The same skew through a statement with a parameter: its generic plan is
/// built at the sixth execution and kept; the help is then
/// `plan_cache_mode = force_custom_plan` on the login role.
#[test]
fn issue10_tenant_plan_reuse_with_parameters_proposes_force_custom_plan() {
    let db = test_db!();
    helpdesk(&db, true);
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "helpdesk_app",
        &[&format!("{JOIN} WHERE t.subject <> $1")],
    );
    let (_, r, err) = json_run(&db, dir.path(), &["--queries", &q]);
    let found = r.findings("tenant-plan-reuse");
    assert_eq!(found.len(), 1, "{found:#?}\n{err}");
    assert!(
        found[0].message.contains("Nested Loop"),
        "{}",
        found[0].message
    );
    assert!(
        found[0]
            .help
            .contains("plan_cache_mode = force_custom_plan"),
        "{}",
        found[0].help
    );
    assert!(found[0].help.contains("login role"), "{}", found[0].help);
}

/// The cheap proxy that orders the identities before (and, with no budget,
/// instead of) measuring: rows carrying each identity, through foreign keys
/// too. `profiles.id = auth.uid()` gives one row per user; the posts
/// referencing profiles make user 9 the one with most rows.
#[test]
fn issue10_the_identity_proxy_counts_foreign_key_fan_out() {
    let db = test_db!();
    supabase(&db, UID_SQL);
    db.exec(
        "CREATE TABLE profiles (id uuid PRIMARY KEY, name text NOT NULL);
         INSERT INTO profiles SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'n' || g
           FROM generate_series(1, 30) g;
         CREATE TABLE posts (id bigint PRIMARY KEY, author_id uuid NOT NULL REFERENCES profiles,
                             body text NOT NULL);
         INSERT INTO posts SELECT g, ('00000000-0000-0000-0000-' ||
                lpad(CASE WHEN g <= 500 THEN 9 ELSE 1 + g % 30 END::text, 12, '0'))::uuid, 'b' || g
           FROM generate_series(1, 2000) g;
         ALTER TABLE profiles ENABLE ROW LEVEL SECURITY;
         CREATE POLICY own ON profiles FOR SELECT TO authenticated USING (id = auth.uid());
         GRANT SELECT ON profiles, posts TO authenticated;
         ANALYZE",
    );
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "authenticated",
        &["SELECT name FROM profiles WHERE name = $1"],
    );
    let (_, _, err) = json_run(
        &db,
        dir.path(),
        // 30 profiles: judged all the same (the point is the identity).
        &[
            "--queries",
            &q,
            "--identity-budget",
            "0",
            "--min-table-rows",
            "10",
        ],
    );
    assert!(
        err.contains(&format!("\"sub\":\"{}\"", user(9))),
        "the proxy ranks user 9 first: {err}"
    );
}

/// A new-user pass: a hand-added statement with a `role` and no
/// `bypass_rls` (what a person writes) was not counted as the
/// application's role, so with policies `TO public` explain stopped with
/// "cannot tell which role the application runs as". The role is taken
/// (after checking that the policies apply to it) and the statement is
/// planned as the tenant.
#[test]
fn a_hand_added_statement_s_role_is_the_tenant_role_without_bypass_rls() {
    let db = test_db!();
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shop_app') THEN
             CREATE ROLE shop_app NOLOGIN; END IF;
         END $$;
         CREATE TABLE orders (id bigint PRIMARY KEY, shop_id int NOT NULL, total int NOT NULL);
         INSERT INTO orders SELECT g, 1 + g % 50, g FROM generate_series(1, 5000) g;
         CREATE INDEX ON orders (shop_id);
         ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
         CREATE POLICY shop ON orders USING (shop_id = current_setting('app.shop_id')::int);
         GRANT SELECT ON orders TO shop_app;
         ANALYZE",
    );
    let dir = common::project_dir();
    let q = dir.path().join("queries.toml");
    std::fs::write(
        &q,
        "format_version = 2\n\n[[statement]]\nrole = \"shop_app\"\nquery = '''\nSELECT id, total FROM orders WHERE total > $1\n'''\n",
    )
    .unwrap();
    let (code, r, err) = json_run(
        &db,
        dir.path(),
        &["--as-tenant", "--queries", q.to_str().unwrap()],
    );
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    assert!(!err.contains("cannot tell which role"), "{err}");
    let s = r.statement("FROM orders");
    assert_eq!(s.status, "explained", "{err}");
    let tenant = s
        .plans
        .iter()
        .find(|p| p.mode == "tenant")
        .unwrap_or_else(|| panic!("no tenant plan: {s:#?}\n{err}"));
    assert!(tenant.tenant_id.is_some(), "{tenant:#?}");
    // Planned under the policy: the tenant's setting is in the plan.
    assert!(
        tenant
            .plan
            .to_string()
            .contains("current_setting('app.shop_id'"),
        "{tenant:#?}"
    );
    assert!(err.contains("tenant mode: role shop_app"), "{err}");
}

// Issue 31: from PostgreSQL 16 on, SET ROLE needs the membership's SET
// option, not just membership. A role made by a non-superuser admin
// (CREATEROLE, as on hosted services) gives its maker ADMIN alone: the
// tenancy pre-check refuses it up front, naming the grant that is missing,
// instead of every statement failing at planning with the server's
// "permission denied to set role". Before 16 there is no SET option.
#[test]
fn a_membership_without_the_set_option_is_refused_naming_the_grant() {
    let major = common::server_major();
    if major < 16 {
        crate::skip!(
            NotApplicable,
            "membership options (WITH SET) are PostgreSQL 16+ (this server is {major})"
        );
    }
    let db = test_db!();
    db.exec(
        "DO $$ BEGIN
           -- roles are the cluster's: two tests creating the same one wait in turn
           PERFORM pg_advisory_xact_lock(74747);
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'noset_admin') THEN
             CREATE ROLE noset_admin LOGIN BYPASSRLS PASSWORD 'noset_admin'; END IF;
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'noset_app') THEN
             CREATE ROLE noset_app NOLOGIN; END IF;
         END $$;
         ALTER ROLE noset_admin BYPASSRLS;
         REVOKE noset_app FROM noset_admin;
         GRANT noset_app TO noset_admin WITH ADMIN TRUE, INHERIT FALSE, SET FALSE;
         CREATE TABLE orders (id bigint PRIMARY KEY, shop_id int NOT NULL, total int NOT NULL);
         INSERT INTO orders SELECT g, 1 + g % 50, g FROM generate_series(1, 5000) g;
         ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
         CREATE POLICY shop ON orders USING (shop_id = current_setting('app.shop_id', true)::int);
         GRANT SELECT ON orders TO noset_app, noset_admin;
         ANALYZE",
    );
    let dir = common::project_dir();
    let q = app_queries(
        dir.path(),
        "noset_app",
        &["SELECT id, total FROM orders WHERE total > $1"],
    );
    // `planck explain --as-tenant` connected as the admin.
    let as_admin = || {
        common::planck_cmd(dir.path())
            .args([
                "--database-url",
                &db.url.replacen("planck@", "noset_admin:noset_admin@", 1),
                "explain",
                "--as-tenant",
                "--tenant-id",
                "1",
                "--queries",
                &q,
            ])
            .output()
            .unwrap()
    };
    let out = as_admin();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot SET ROLE noset_app: its membership lacks the SET option"),
        "{err}"
    );
    assert!(
        err.contains(r#"GRANT "noset_app" TO "noset_admin" WITH SET TRUE"#),
        "{err}"
    );
    // With the option granted, the same run plans as the tenant.
    db.exec("GRANT noset_app TO noset_admin WITH SET TRUE");
    let out = as_admin();
    let err = stderr(&out);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(err.contains("tenant mode: role noset_app"), "{err}");
}
