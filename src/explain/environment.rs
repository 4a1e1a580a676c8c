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

/// Explain's JSON for `report` as planck writes it: the findings and plans,
/// with the environment and index use read from `conn`, the database the
/// plans were made on.
pub async fn json_with_environment(
    conn: &ConnInfo,
    report: &super::report::ExplainReport,
) -> Result<JsonReport> {
    let mut json = super::json::from_report(report);
    attach_counted(conn, &mut json, report.tenant_rows.as_ref()).await?;
    Ok(json)
}

/// Fills `json.environment` and `json.indexes` from the database the plans were made on.
pub async fn attach(conn: &ConnInfo, json: &mut JsonReport) -> Result<()> {
    attach_counted(conn, json, None).await
}

/// [`attach`], with the heaviest tenant's rows the tenancy already counted
/// (tables it counted are not counted again).
pub async fn attach_counted(
    conn: &ConnInfo,
    json: &mut JsonReport,
    counted: Option<&crate::tenancy::TenantRows>,
) -> Result<()> {
    let client = conn.connect().await?;
    // planck's own reads stay out of pg_stat_statements (or are tagged as
    // planck's), so a later `--from-stats` does not plan them.
    let stats = crate::session::untrack(&client).await?;
    let db = |e| Error::db("reading the environment for explain's JSON", e);
    let version: String = client
        .query_one(
            &crate::session::tag(stats, "SELECT current_setting('server_version')"),
            &[],
        )
        .await
        .map_err(db)?
        .get(0);
    let names: Vec<String> = SETTINGS.iter().map(|s| s.to_string()).collect();
    let settings: BTreeMap<String, String> = client
        .query(
            &crate::session::tag(stats, "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1) ORDER BY name"),
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
            &crate::session::tag(
                stats,
                "SELECT c.relname::text, c.reltuples::bigint, pg_total_relation_size(c.oid)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p', 'm') AND c.relname = ANY($1)
                AND n.nspname NOT IN ('pg_catalog', 'information_schema')
              ORDER BY pg_total_relation_size(c.oid) DESC, 1",
            ),
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
            &crate::session::tag(
                stats,
                "SELECT i.relname::text, t.relname::text
               FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
               JOIN pg_class t ON t.oid = x.indrelid
               JOIN pg_namespace n ON n.oid = t.relnamespace
              WHERE t.relname = ANY($1) AND n.nspname NOT IN ('pg_catalog', 'information_schema')
              ORDER BY 2, 1",
            ),
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
    let tenant = heaviest(&client, stats, json, &tables, counted).await;
    json.environment = Some(JsonEnvironment {
        server_version: version,
        settings,
        tenant,
        tables,
    });
    Ok(())
}

/// The heaviest tenant the plans were made for, and its share of the rows
/// of the tables its plans filter by tenant (the column read from the
/// policy's `current_setting(...)` comparison in the plan), counted.
async fn heaviest(
    client: &tokio_postgres::Client,
    stats: crate::session::StatsMode,
    json: &JsonReport,
    tables: &[JsonTable],
    counted: Option<&crate::tenancy::TenantRows>,
) -> Option<JsonTenant> {
    let mut id = None;
    let mut keyed: BTreeMap<String, String> = BTreeMap::new();
    for p in json.statements.iter().flat_map(|s| &s.plans) {
        if p.tenant.as_deref() == Some("heaviest") {
            id = id.or_else(|| p.tenant_id.clone());
        }
        if p.mode == "tenant" {
            tenant_columns(root(&p.plan), &mut keyed);
        }
    }
    let id = id?;
    let (mut mine, mut all) = (0i64, 0i64);
    for t in tables {
        let Some(column) = keyed.get(&t.name) else {
            continue;
        };
        let known = counted
            .filter(|c| c.id == id)
            .and_then(|c| c.tables.get(&t.name))
            .filter(|(c, _, _)| c == column);
        if let Some((_, n, all_rows)) = known {
            mine += n;
            all += all_rows;
            continue;
        }
        let sql = format!(
            "SELECT count(*) FILTER (WHERE {}::text = $1), count(*) FROM {}",
            ident(column),
            ident(&t.name)
        );
        // A table the owner's search path does not reach is left out.
        if let Ok(row) = client
            .query_one(&crate::session::tag(stats, &sql), &[&id])
            .await
        {
            mine += row.get::<_, i64>(0);
            all += row.get::<_, i64>(1);
        }
    }
    let share = if all > 0 {
        mine as f64 / all as f64
    } else {
        0.0
    };
    Some(JsonTenant {
        id,
        share: (share * 1000.0).round() / 1000.0,
    })
}

fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Per relation, the column a condition compares with `current_setting(...)`:
/// `(items.account_id = (current_setting('app.account_id'::text))::bigint)`.
fn tenant_columns(node: &Value, out: &mut BTreeMap<String, String>) {
    if let Some(rel) = node.get("Relation Name").and_then(Value::as_str) {
        for key in ["Filter", "Index Cond", "Recheck Cond"] {
            if let Some(c) = node
                .get(key)
                .and_then(Value::as_str)
                .and_then(tenant_column)
            {
                out.entry(rel.to_string()).or_insert(c);
            }
        }
    }
    for c in node
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        tenant_columns(c, out);
    }
}

fn tenant_column(cond: &str) -> Option<String> {
    let at = cond
        .find("= (current_setting(")
        .or_else(|| cond.find("= current_setting("))?;
    let left = cond[..at].trim_end();
    let token: String = left
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let column = token.rsplit('.').next()?;
    (!column.is_empty()).then(|| column.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenant_column_is_read_from_the_policy_comparison() {
        let c = "(items.account_id = (current_setting('app.account_id'::text))::bigint)";
        assert_eq!(tenant_column(c).as_deref(), Some("account_id"));
        assert_eq!(
            tenant_column("(owner = current_setting('app.user'::text))").as_deref(),
            Some("owner")
        );
        assert_eq!(tenant_column("(items.id = $1)"), None);
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }
}
