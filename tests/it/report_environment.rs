//! explain's JSON gains where its plans were made (issue 14, section 3):
//! `explain::environment::attach` on a real database fills the server's
//! version and planner settings, the size of each table the plans read, the
//! heaviest tenant's share, and every index of those tables with the
//! statements and modes whose plans read it.

use planck::db::ConnInfo;
use planck::wire::explain::{JsonPlan, JsonReport, JsonStatement, JsonSummary};
use serde_json::json;

fn plan(mode: &str, tenant: Option<&str>, plan: serde_json::Value) -> JsonPlan {
    JsonPlan {
        mode: mode.into(),
        kind: "custom".into(),
        tenant: tenant.map(str::to_string),
        tenant_id: tenant.map(|_| "7".to_string()),
        params: vec![],
        plan,
    }
}

#[test]
fn attach_fills_environment_and_indexes() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE items (id int PRIMARY KEY, account_id int, title text);
         CREATE INDEX items_title_idx ON items (title);
         INSERT INTO items SELECT g, g % 10, 't' || g FROM generate_series(1, 1000) g;
         CREATE TABLE other (id int PRIMARY KEY);
         ANALYZE items;",
    );
    let statement = JsonStatement {
        id: "s1".into(),
        query: "SELECT * FROM items WHERE id = $1".into(),
        role: None,
        mode: Some("both".into()),
        status: "explained".into(),
        reason: None,
        planned_query: None,
        repairs: vec![],
        param_types: vec![],
        notes: vec![],
        plans: vec![
            plan(
                "admin",
                None,
                json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items",
                    "Index Name": "items_pkey", "Plan Rows": 1}}]),
            ),
            plan(
                "tenant",
                Some("heaviest"),
                json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "items",
                    "Plan Rows": 100,
                    "Filter": "(items.account_id = (current_setting('app.account_id'::text))::integer)"}}]),
            ),
        ],
    };
    let mut report = JsonReport {
        format_version: 1,
        statements: vec![statement],
        findings: vec![],
        summary: JsonSummary {
            explained: 1,
            skipped: 0,
            not_judged: 0,
            findings: Default::default(),
            ignored: 0,
            new_errors: 0,
        },
        environment: None,
        indexes: vec![],
        below_min_rows: None,
        not_judged_objects: None,
    };
    let conn = ConnInfo::parse(&db.url, false).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(planck::explain::environment::attach(&conn, &mut report))
        .unwrap();
    let env = report.environment.as_ref().unwrap();
    let version = db.query_strings("SELECT current_setting('server_version')");
    assert_eq!(env.server_version, version[0]);
    assert_eq!(
        env.settings.get("random_page_cost").map(String::as_str),
        Some("4")
    );
    assert!(env.settings.contains_key("work_mem"));
    // Only the tables the plans read, with ANALYZE's row count and their size.
    assert_eq!(env.tables.len(), 1, "{:?}", env.tables);
    assert_eq!(env.tables[0].name, "items");
    assert_eq!(env.tables[0].rows, 1000);
    assert!(env.tables[0].bytes > 8192);
    let tenant = env.tenant.as_ref().unwrap();
    // Counted: account 7 holds 100 of the 1000 items.
    assert_eq!((tenant.id.as_str(), tenant.share), ("7", 0.1));
    // Every index of items, unused ones too, with who reads each.
    let names: Vec<(&str, usize)> = report
        .indexes
        .iter()
        .map(|i| (i.name.as_str(), i.used_by.len()))
        .collect();
    assert_eq!(names, vec![("items_pkey", 1), ("items_title_idx", 0)]);
    assert_eq!(report.indexes[0].used_by[0].statement_id, "s1");
    assert_eq!(report.indexes[0].used_by[0].mode, "admin");
    // The same rendered by the report's index table.
    let inputs = planck::report::Inputs::new(report, None, None);
    let html = planck::report::Output::Html.bytes(&inputs).unwrap();
    let html = String::from_utf8(html).unwrap();
    assert!(
        html.contains("<tr class=\"index-unused\"><td><code>items_title_idx</code>"),
        "unused"
    );
}
