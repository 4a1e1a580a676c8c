//! A fixed report input for the renderers' tests: three statements (one with
//! an error finding read from a plan node, with advice; one skipped; one
//! clean), an unused index found from a migration, a baseline warning, a
//! four-step replay ladder with a USL fit, hotspots and wait events.
//! Shared with tests/it/report_files.rs (which includes this file by path), so it
//! names everything through `crate::wire`.

use std::collections::BTreeMap;

use serde_json::json;

use crate::wire::explain::*;
use crate::wire::replay::*;

fn loc(kind: &str, path: &str, line: usize) -> Option<JsonLocation> {
    Some(JsonLocation {
        kind: kind.into(),
        path: path.into(),
        line,
    })
}

fn seq_scan_plan(cost: f64) -> serde_json::Value {
    json!([{"Plan": {"Node Type": "Limit", "Total Cost": cost + 1.0, "Plan Rows": 50,
        "Plans": [{"Node Type": "Sort", "Total Cost": cost + 0.5, "Plan Rows": 4000,
                   "Sort Key": ["items.created_at DESC"],
            "Plans": [{"Node Type": "Seq Scan", "Relation Name": "items", "Alias": "items",
                       "Total Cost": cost, "Plan Rows": 4000,
                       "Filter": "(items.account_id = $1)"}]}]}}])
}

fn index_scan_plan() -> serde_json::Value {
    json!([{"Plan": {"Node Type": "Limit", "Total Cost": 9.5, "Plan Rows": 50,
        "Plans": [{"Node Type": "Index Scan", "Relation Name": "items", "Alias": "items",
                   "Index Name": "items_account_created_idx", "Total Cost": 9.0,
                   "Plan Rows": 50, "Index Cond": "(items.account_id = $1)"}]}}])
}

fn plan(mode: &str, kind: &str, tenant: Option<&str>, plan: serde_json::Value) -> JsonPlan {
    JsonPlan {
        mode: mode.into(),
        kind: kind.into(),
        tenant: tenant.map(str::to_string),
        tenant_id: tenant.map(|_| "42".to_string()),
        params: if tenant.is_some() {
            vec![Some("42".into())]
        } else {
            vec![]
        },
        plan,
    }
}

fn statement(id: &str, query: &str, plans: Vec<JsonPlan>) -> JsonStatement {
    JsonStatement {
        id: id.into(),
        query: query.into(),
        role: Some("app_user".into()),
        mode: Some("both".into()),
        status: "explained".into(),
        reason: None,
        planned_query: None,
        repairs: vec![],
        param_types: vec!["bigint".into()],
        notes: vec![],
        plans,
    }
}

/// The seq-scan finding of statement a1b2c3d4's plan `plan_index` in `mode`.
fn seq_finding(mode: &str, plan_index: usize, query: &str) -> JsonFinding {
    JsonFinding {
        check: "seq-scan".into(),
        severity: "error".into(),
        mode: Some(mode.into()),
        statement_id: Some("a1b2c3d4".into()),
        query: Some(query.to_string()),
        relation: Some("items".into()),
        index: None,
        message: "Seq Scan on items reads an estimated 4000 rows".into(),
        help: "add an index".into(),
        baseline: false,
        location: loc("queries", "queries/queries.toml", 4),
        node: Some(JsonNode {
            plan: plan_index,
            path: vec![0, 0],
        }),
        advice: Some(JsonAdvice {
            sql: "CREATE INDEX ON items (account_id, created_at)".into(),
            table: "items".into(),
            columns: vec!["account_id".into(), "created_at".into()],
            predicate: None,
            cost_before: 85_001.0,
            cost_after: 9.5,
            node_before: "Seq Scan".into(),
            node_after: "Index Scan".into(),
            verified: true,
            index: "hypothetical".into(),
        }),
    }
}

/// The environment of the fixture's run: PostgreSQL 15, two tables, a heavy tenant.
fn environment() -> JsonEnvironment {
    let mut settings = BTreeMap::new();
    settings.insert("random_page_cost".into(), "4".into());
    settings.insert("work_mem".into(), "4MB".into());
    JsonEnvironment {
        server_version: "15.8".into(),
        settings,
        tables: vec![
            JsonTable {
                name: "items".into(),
                rows: 4_000_000,
                bytes: 512 * 1024 * 1024,
            },
            JsonTable {
                name: "accounts".into(),
                rows: 1000,
                bytes: 96 * 1024,
            },
        ],
        tenant: Some(JsonTenant {
            id: "42".into(),
            share: 0.31,
        }),
    }
}

pub fn explain() -> JsonReport {
    let s1 = statement(
        "a1b2c3d4",
        "SELECT * FROM items WHERE account_id = $1 ORDER BY created_at DESC LIMIT 50",
        vec![
            plan("admin", "generic", None, seq_scan_plan(85_000.0)),
            plan(
                "tenant",
                "custom",
                Some("heaviest"),
                seq_scan_plan(84_000.0),
            ),
        ],
    );
    let mut s2 = statement("e5f6a7b8", "SELECT nosuch FROM items", vec![]);
    s2.status = "skipped".into();
    s2.reason = Some("column \"nosuch\" does not exist".into());
    s2.mode = None;
    let s3 = statement(
        "c9d0e1f2",
        "SELECT id FROM accounts WHERE id = $1",
        vec![plan(
            "admin",
            "generic",
            None,
            json!([{"Plan": {"Node Type": "Index Only Scan", "Relation Name": "accounts",
                "Alias": "accounts", "Index Name": "accounts_pkey", "Total Cost": 4.3,
                "Plan Rows": 1, "Index Cond": "(accounts.id = $1)"}}]),
        )],
    );
    let findings = vec![
        seq_finding("admin", 0, &s1.query),
        seq_finding("tenant", 1, &s1.query),
        JsonFinding {
            check: "unused-index".into(),
            severity: "warning".into(),
            mode: None,
            statement_id: None,
            query: None,
            relation: Some("items".into()),
            index: Some("items_title_idx".into()),
            message: "no recorded statement reads items_title_idx".into(),
            help: "drop it".into(),
            baseline: false,
            location: loc("migration", "migrations/0002_items.sql", 7),
            node: None,
            advice: None,
        },
        JsonFinding {
            check: "filter-removes-most-rows".into(),
            severity: "info".into(),
            mode: Some("admin".into()),
            statement_id: Some("c9d0e1f2".into()),
            query: Some(s3.query.clone()),
            relation: Some("accounts".into()),
            index: None,
            message: "the filter removes 99% of the rows read".into(),
            help: "index the filtered columns".into(),
            baseline: true,
            location: loc("queries", "queries/queries.toml", 12),
            node: Some(JsonNode {
                plan: 0,
                path: vec![],
            }),
            advice: None,
        },
    ];
    JsonReport {
        format_version: 1,
        summary: JsonSummary {
            explained: 2,
            skipped: 1,
            not_judged: 0,
            findings: [
                ("filter-removes-most-rows".to_string(), 1),
                ("seq-scan".to_string(), 2),
                ("unused-index".to_string(), 1),
            ]
            .into_iter()
            .collect(),
            ignored: 0,
            new_errors: 2,
        },
        statements: vec![s1, s2, s3],
        findings,
        environment: Some(environment()),
        below_min_rows: None,
        not_judged_objects: None,
        indexes: vec![
            JsonIndex {
                name: "accounts_pkey".into(),
                table: "accounts".into(),
                used_by: vec![JsonIndexUse {
                    statement_id: "c9d0e1f2".into(),
                    mode: "admin".into(),
                }],
            },
            JsonIndex {
                name: "items_title_idx".into(),
                table: "items".into(),
                used_by: vec![],
            },
        ],
    }
}

/// The run before: the index was there, so the statement read it.
pub fn previous() -> JsonReport {
    let mut r = explain();
    r.findings.retain(|f| f.check != "seq-scan");
    r.findings.push(JsonFinding {
        check: "duplicate-index".into(),
        severity: "warning".into(),
        mode: None,
        statement_id: None,
        query: None,
        relation: Some("items".into()),
        index: Some("items_account_idx".into()),
        message: "items_account_idx duplicates items_account_created_idx".into(),
        help: "drop it".into(),
        baseline: false,
        location: loc("migration", "migrations/0001_init.sql", 20),
        node: None,
        advice: None,
    });
    for p in &mut r.statements[0].plans {
        p.plan = index_scan_plan();
    }
    r
}

fn step(i: usize, n: u32, x: f64, p95: f64, shape: Scaling) -> StepJson {
    StepJson {
        step_index: i,
        concurrency: n,
        throughput_per_s: x,
        statements_per_s: x * 3.0,
        p50_ms: p95 / 3.0,
        p95_ms: p95,
        p99_ms: p95 * 1.5,
        p999_ms: p95 * 2.0,
        max_ms: p95 * 3.0,
        errors: BTreeMap::new(),
        first_errors: BTreeMap::new(),
        pool_wait_p95_ms: None,
        histogram: String::new(),
        shape,
        units: (x * 10.0) as u64,
        counters: Default::default(),
        rate_per_s: None,
        pool: None,
        runs: 1,
        lock_samples: 0,
        lock_samples_attributed_share: None,
        lock_samples_outside: 0,
    }
}

pub fn replay() -> ReplayReport {
    ReplayReport {
        format_version: 1,
        server_version: "15.8".into(),
        percentile_method: "hdrhistogram".into(),
        steps: vec![
            step(0, 1, 410.0, 3.1, Scaling::Growing),
            step(1, 2, 790.0, 3.4, Scaling::Growing),
            step(2, 4, 1350.0, 4.2, Scaling::Growing),
            step(3, 8, 1420.0, 9.8, Scaling::Plateau),
        ],
        statements: vec![],
        transactions: vec![],
        hotspots: vec![HotspotJson {
            step_index: 3,
            lock_type: "transactionid".into(),
            relation: Some("accounts".into()),
            row: "ctid (0,7), id = 42".into(),
            waiting_statement: Some(
                "UPDATE accounts SET balance = balance - $1 WHERE id = $2".into(),
            ),
            waiting_statement_id: Some("f1f2f3f4".into()),
            blocking_statement: Some(
                "UPDATE accounts SET balance = balance - $1 WHERE id = $2".into(),
            ),
            blocking_statement_id: Some("f1f2f3f4".into()),
            blocker_state: "idle in transaction".into(),
            transaction: Some("transfer".into()),
            samples: 120,
            wait_seconds: 1.2,
            wait_share: 0.4,
            outside_workload: None,
        }],
        wait_events: vec![
            WaitEventJson {
                step_index: 3,
                wait_event_type: "Lock".into(),
                wait_event: "transactionid".into(),
                samples: 120,
                share: 0.4,
            },
            WaitEventJson {
                step_index: 3,
                wait_event_type: "IO".into(),
                wait_event: "DataFileRead".into(),
                samples: 30,
                share: 0.1,
            },
        ],
        integrity: IntegrityJson::default(),
        client_cpu: vec![],
        verdict: VerdictJson {
            peak_concurrency: Some(8),
            shape: Scaling::Plateau,
            usl: Some(Usl {
                lambda: 420.0,
                sigma: 0.05,
                kappa: 0.01,
                n_star: Some(9.7),
                r2: 0.98,
            }),
            text: "throughput levels off at 8 clients (1420 units/s); p95 rises 3.2x".into(),
        },
        interrupted: false,
    }
}

/// The migration that dropped the index the fixture's plans lost, and the
/// one that had created it (as `planck check --base` fills them in).
pub const DROP_FILE: &str = "migrations/0006_drop_items_index.sql";
pub const DROP_LINE: usize = 3;
pub const CREATE_FILE: &str = "migrations/0002_items.sql";
pub const CREATE_LINE: usize = 14;

/// `output` of `i` as text, the bytes its renderer writes.
pub fn text(output: crate::report::Output, i: &crate::report::Inputs) -> String {
    let mut out = Vec::new();
    output.render(&mut out, i).expect("a report renders");
    String::from_utf8(out).expect("a report is UTF-8")
}

pub fn inputs() -> crate::report::Inputs {
    let head = explain();
    let mut diff =
        crate::wire::diff::diff(&previous(), &head, crate::wire::diff::DEFAULT_COST_NOISE);
    for c in &mut diff.plan_changes {
        c.dropped = c
            .indexes_no_longer_used
            .iter()
            .map(|i| crate::wire::diff::DroppedIndex {
                index: i.clone(),
                path: DROP_FILE.into(),
                line: DROP_LINE,
                created: Some(crate::wire::diff::SourceLine {
                    path: CREATE_FILE.into(),
                    line: CREATE_LINE,
                }),
            })
            .collect();
    }
    crate::report::Inputs {
        diff: Some(diff),
        explain: head,
        replay: Some(replay()),
        base_label: Some("previous run".into()),
        source_root: Some("/home/ci/project".into()),
        gate: None,
        lost_indexes: Vec::new(),
    }
}
