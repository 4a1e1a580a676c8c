//! Issue 10 acceptance on a real PostGraphile application (graphile/starter,
//! vendored in tests/fixtures/graphile-starter): its test run is recorded as
//! the app sends it (`set_config('role', visitor, true)` and
//! `jwt.claims.session_id`), then explained. Its policies call
//! `app_public.current_user_id()`, a SECURITY DEFINER SQL function that
//! resolves the session id through `app_private.sessions`: before issue 10
//! they were not seen, and everything was planned as admin only.

use crate::common;

use common::explain_json::Report;
use common::{stderr, stdout};

#[test]
fn issue10_graphile_starter_is_planned_as_a_tenant_through_its_session_function() {
    let db = test_db!();
    let dir = common::project_dir();
    common::record_graphile_starter(&db, dir.path());
    let out = db.planck(
        &["--format", "json", "explain", "--queries", "gs.toml"],
        dir.path(),
    );
    let err = stderr(&out);
    let r: Report = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not the report ({e}):\n{}\n{err}", stdout(&out)));
    assert!(
        err.contains("tenant mode: role graphile_starter_visitor, jwt.claims.session_id ="),
        "{err}"
    );
    assert!(err.contains("app_private.sessions"), "{err}");
    // The session id set resolves to the user planck names as the tenant.
    let line = err
        .lines()
        .find(|l| l.contains("tenant mode:"))
        .unwrap()
        .to_string();
    let (session, user) = {
        let rest = line.split(" = ").nth(1).unwrap();
        let session = rest.split(' ').next().unwrap().to_string();
        let user = rest
            .split("(for tenant ")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap()
            .to_string();
        (session, user)
    };
    let owner = db.query_strings(&format!(
        "SELECT user_id::text FROM app_private.sessions WHERE uuid = '{session}'"
    ));
    assert_eq!(owner, vec![user.clone()], "{line}");

    // No valid statement is stale.
    assert!(
        r.findings("stale-statement").is_empty(),
        "{:#?}",
        r.findings("stale-statement")
    );
    // The visitor's statements are judged as the tenant, with the policy in the plan.
    let tenant: Vec<_> = r
        .statements
        .iter()
        .filter(|s| s.mode.as_deref() == Some("tenant"))
        .collect();
    assert!(tenant.len() >= 5, "{r:#?}");
    let with_policy = tenant
        .iter()
        .filter(|s| {
            s.plans
                .iter()
                .any(|p| p.mode == "tenant" && p.plan.to_string().contains("current_user_id()"))
        })
        .count();
    assert!(with_policy >= 1, "{r:#?}");
}
