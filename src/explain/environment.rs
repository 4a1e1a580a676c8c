//! Where the plans were made, for explain's JSON (read by `planck report`):
//! the server's version and the settings that shape plans, the size of each
//! table the statements read, the heaviest tenant the plans were made for
//! and its share of the rows, and every index of those tables with the
//! statements and modes whose plans read it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::wire::explain::{
    JsonEnvironment, JsonIndex, JsonIndexUse, JsonReport, JsonTable, JsonTenant,
};

/// The planner's settings a reader needs to judge a plan.
const SETTINGS: &[&str] = &[
    "random_page_cost",
    "seq_page_cost",
    "effective_cache_size",
    "work_mem",
    "shared_buffers",
    "default_statistics_target",
    "plan_cache_mode",
    "jit",
    "max_parallel_workers_per_gather",
    "enable_seqscan",
    "enable_indexscan",
    "enable_bitmapscan",
    "enable_hashjoin",
    "enable_nestloop",
    "enable_mergejoin",
];

/// Fills `json.environment` and `json.indexes` from the database the plans were made on.
pub async fn attach(conn: &ConnInfo, json: &mut JsonReport) -> Result<()> {
    let client = conn.connect().await?;
    let db = |e| Error::db("reading the environment for explain's JSON", e);
    let version: String = client
        .query_one("SELECT current_setting('server_version')", &[])
        .await
        .map_err(db)?
        .get(0);
    let names: Vec<String> = SETTINGS.iter().map(|s| s.to_string()).collect();
    let settings: BTreeMap<String, String> = client
        .query(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1) ORDER BY name",
            &[&names],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();

    let mut read = BTreeSet::new();
    let mut uses: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for s in &json.statements {
        for p in &s.plans {
            let mut seen = Vec::new();
            walk(root(&p.plan), &mut read, &mut seen);
            for i in seen {
                uses.entry(i)
                    .or_default()
                    .insert((s.id.clone(), p.mode.clone()));
            }
        }
    }
    let read: Vec<String> = read.into_iter().collect();
    // Relation names as plans give them (unqualified), in the search path or anywhere.
    let tables = client
        .query(
            "SELECT c.relname::text, c.reltuples::bigint, pg_total_relation_size(c.oid)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p', 'm') AND c.relname = ANY($1)
                AND n.nspname NOT IN ('pg_catalog', 'information_schema')
              ORDER BY pg_total_relation_size(c.oid) DESC, 1",
            &[&read],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|r| JsonTable {
            name: r.get(0),
            rows: r.get::<_, i64>(1).max(0),
            bytes: r.get(2),
        })
        .collect::<Vec<_>>();
    let indexes = client
        .query(
            "SELECT i.relname::text, t.relname::text
               FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
               JOIN pg_class t ON t.oid = x.indrelid
               JOIN pg_namespace n ON n.oid = t.relnamespace
              WHERE t.relname = ANY($1) AND n.nspname NOT IN ('pg_catalog', 'information_schema')
              ORDER BY 2, 1",
            &[&read],
        )
        .await
        .map_err(db)?;
    json.indexes = indexes
        .iter()
        .map(|r| {
            let name: String = r.get(0);
            JsonIndex {
                used_by: uses
                    .get(&name)
                    .into_iter()
                    .flatten()
                    .map(|(s, m)| JsonIndexUse {
                        statement_id: s.clone(),
                        mode: m.clone(),
                    })
                    .collect(),
                table: r.get(1),
                name,
            }
        })
        .collect();
    json.environment = Some(JsonEnvironment {
        server_version: version,
        settings,
        tenant: heaviest(json, &tables),
        tables,
    });
    Ok(())
}

/// The heaviest tenant the plans were made for, and its share: the rows its
/// plans estimated to read from each table over the table's rows, at most.
fn heaviest(json: &JsonReport, tables: &[JsonTable]) -> Option<JsonTenant> {
    let plans = json
        .statements
        .iter()
        .flat_map(|s| &s.plans)
        .filter(|p| p.tenant.as_deref() == Some("heaviest"));
    let mut id = None;
    let mut share: f64 = 0.0;
    for p in plans {
        id = id.or_else(|| p.tenant_id.clone());
        let mut scans = Vec::new();
        scan_rows(root(&p.plan), &mut scans);
        for (rel, rows) in scans {
            if let Some(t) = tables.iter().find(|t| t.name == rel && t.rows > 0) {
                share = share.max((rows / t.rows as f64).min(1.0));
            }
        }
    }
    id.map(|id| JsonTenant {
        id,
        share: (share * 1000.0).round() / 1000.0,
    })
}

fn root(plan: &Value) -> &Value {
    plan.get(0)
        .and_then(|r| r.get("Plan"))
        .or_else(|| plan.get("Plan"))
        .unwrap_or(plan)
}

fn walk(node: &Value, relations: &mut BTreeSet<String>, indexes: &mut Vec<String>) {
    if let Some(r) = node.get("Relation Name").and_then(Value::as_str) {
        relations.insert(r.to_string());
    }
    if let Some(i) = node.get("Index Name").and_then(Value::as_str) {
        indexes.push(i.to_string());
    }
    for c in node
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        walk(c, relations, indexes);
    }
}

/// (relation, estimated rows) of each scan node.
fn scan_rows(node: &Value, out: &mut Vec<(String, f64)>) {
    if let (Some(r), Some(n)) = (
        node.get("Relation Name").and_then(Value::as_str),
        node.get("Plan Rows").and_then(Value::as_f64),
    ) {
        out.push((r.to_string(), n));
    }
    for c in node
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        scan_rows(c, out);
    }
}
