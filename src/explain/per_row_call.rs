//! The measurement of `rls-per-row-call` (the check's
//! [`crate::explain::rules::Check::measure`] runs [`measure`]): the user
//! functions a policy can reach, with what their bodies call, and under
//! `--analyze` the calls counted exactly. The check hands in its own
//! readers of a body's calls and of a plan's per-row calls, so this module
//! does not import the check that imports it.
//!
//! Counting: in a transaction always rolled back, `SET LOCAL track_functions
//! = 'all'` (before the role switch: it is a superuser's setting), the role
//! and the heaviest tenant, `EXPLAIN ANALYZE` of the statement with the
//! heaviest tenant's values, then `pg_stat_xact_user_functions`, which holds
//! the current transaction's calls. Inlined SQL functions are not counted by
//! the server (their body runs instead); those findings carry no count.

use serde_json::Value;
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use super::engine::Explained;
use super::plan_tree::{Mode, PlanKind};
use super::probes::{Evidence, Measure};
use crate::error::{Error, Result};
use crate::params::values::TextParam;
use crate::session::{self, StatsMode, tag};
use crate::tenancy::Tenancy;

/// What the measurement found: the evidence of `rls-per-row-call`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerRowCalls {
    pub functions: Vec<UserFn>,
    /// With `--analyze`: the calls counted.
    pub calls: Vec<Counted>,
}

/// A SQL or plpgsql function outside the system schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct UserFn {
    /// The bare name (`uid`): plans and policy texts qualify it or not.
    pub name: String,
    pub nargs: i16,
    /// Bare names of the other user functions its body calls.
    pub calls: Vec<String>,
    /// Its body calls `current_setting()`.
    pub reads_setting: bool,
}

/// Calls of one function counted while one statement ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    pub statement: String,
    pub function: String,
    pub calls: i64,
    /// The rows the filtering node examined (kept and removed, all loops).
    pub rows: f64,
    pub ms: f64,
}

/// The functions a body calls, as the check reads them: (qualified, bare, ..).
pub type BodyCalls = fn(&str) -> Vec<(String, String, bool, bool)>;

/// The measurement, in tenant mode: the user functions (their calls read
/// with `body_calls`), and under `--analyze` the calls of the functions
/// `per_row` finds in a statement's plans (bare name, table), counted.
pub async fn measure(
    on: &Measure<'_>,
    tenancy: &Tenancy,
    body_calls: BodyCalls,
    per_row: impl Fn(&Explained, &[UserFn]) -> Vec<(String, String)>,
) -> Result<Option<Evidence>> {
    let functions = functions(on.client, on.stats, body_calls).await?;
    let calls = if on.analyze {
        count(on, tenancy, &functions, per_row).await?
    } else {
        Vec::new()
    };
    Ok(Some(Evidence::new(PerRowCalls { functions, calls })))
}

/// The user functions, with the calls their bodies make.
async fn functions(client: &Client, stats: StatsMode, calls: BodyCalls) -> Result<Vec<UserFn>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT p.proname::text, p.pronargs, p.prosrc
                   FROM pg_proc p
                   JOIN pg_namespace n ON n.oid = p.pronamespace
                   JOIN pg_language l ON l.oid = p.prolang
                  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
                    AND n.nspname NOT LIKE 'pg\\_%'
                    AND l.lanname IN ('sql', 'plpgsql') AND p.prokind = 'f'
                  ORDER BY 1, 2",
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the user functions policies call", e))?;
    let raw: Vec<(String, i16, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let names: Vec<&str> = raw.iter().map(|r| r.0.as_str()).collect();
    Ok(raw
        .iter()
        .map(|(name, nargs, body)| {
            let mut called: Vec<String> = calls(body)
                .into_iter()
                .map(|c| c.1)
                .filter(|c| c != name && names.contains(&c.as_str()))
                .collect();
            called.dedup();
            UserFn {
                name: name.clone(),
                nargs: *nargs,
                calls: called,
                reads_setting: body.contains("current_setting"),
            }
        })
        .collect())
}

/// Counts the calls of each per-row policy call found (not inlined: the
/// server counts no inlined call), for the heaviest tenant; a statement
/// that cannot be counted is passed over, with a note in the log (the
/// finding stays, without a count).
async fn count(
    on: &Measure<'_>,
    tenancy: &Tenancy,
    functions: &[UserFn],
    per_row: impl Fn(&Explained, &[UserFn]) -> Vec<(String, String)>,
) -> Result<Vec<Counted>> {
    let (client, timeout_ms, stats, log) = (on.client, on.timeout_ms, on.stats, on.log);
    let mut out = Vec::new();
    for e in on.results {
        let found = per_row(e, functions);
        let Some(plan) = e.plans.iter().find(|p| {
            p.mode == Mode::Tenant
                && p.kind == PlanKind::Custom
                && p.tenant_id.as_deref() == tenancy.heaviest.as_deref()
        }) else {
            continue;
        };
        if found.is_empty() || crate::params::binding::not_rolled_back(&e.text).is_some() {
            continue;
        }
        let ctx = tenancy.context(Mode::Tenant, plan.tenant_id.as_deref());
        let begin = session::begin_sql(&ctx, timeout_ms).replacen(
            "BEGIN;",
            "BEGIN; SET LOCAL track_functions = 'all';",
            1,
        );
        let r = async {
            client.batch_execute(&begin).await?;
            session::apply_settings(client, &ctx).await?;
            let stmt = client
                .prepare(&tag(
                    stats,
                    &format!("EXPLAIN (ANALYZE, FORMAT JSON) {}", e.text),
                ))
                .await?;
            let values = crate::params::values::fill_defaults(plan.params.clone(), stmt.params());
            let params: Vec<TextParam> = values.into_iter().map(TextParam).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            let json: Value = client.query_one(&stmt, &refs).await?.get(0);
            let mut counted = Vec::new();
            for (bare, table) in &found {
                let row = client
                    .query_one(
                        &tag(
                            stats,
                            "SELECT coalesce(sum(calls), 0)::bigint,
                                    coalesce(sum(total_time), 0)::float8
                               FROM pg_stat_xact_user_functions WHERE funcname = $1",
                        ),
                        &[bare],
                    )
                    .await?;
                counted.push(Counted {
                    statement: e.stmt.id.clone(),
                    function: bare.clone(),
                    calls: row.get(0),
                    rows: examined(&json, table, bare),
                    ms: row.get(1),
                });
            }
            Ok::<_, tokio_postgres::Error>(counted)
        }
        .await;
        let _ = client.batch_execute("ROLLBACK").await;
        match r {
            Ok(c) => out.extend(c),
            Err(err) if err.as_db_error().is_some() => log.debug(&format!(
                "statement {}: policy calls not counted: {err}",
                e.stmt.id
            )),
            Err(err) => return Err(Error::db("counting policy function calls", err)),
        }
    }
    Ok(out)
}

/// Rows the node scanning `table` with `function` in its filter examined:
/// (kept + removed by the filter) x loops.
fn examined(json: &Value, table: &str, function: &str) -> f64 {
    fn walk(v: &Value, table: &str, function: &str) -> Option<f64> {
        let rel = v.get("Relation Name").and_then(Value::as_str);
        let bare = table.rsplit('.').next().unwrap_or(table);
        let filter = ["Filter", "Join Filter"]
            .iter()
            .filter_map(|k| v.get(*k).and_then(Value::as_str))
            .any(|f| f.contains(&format!("{function}(")));
        if rel == Some(bare) && filter {
            let n = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            return Some((n("Actual Rows") + n("Rows Removed by Filter")) * n("Actual Loops"));
        }
        v.get("Plans")
            .and_then(Value::as_array)?
            .iter()
            .find_map(|c| walk(c, table, function))
    }
    json.get(0)
        .and_then(|r| r.get("Plan"))
        .and_then(|p| walk(p, table, function))
        .unwrap_or(0.0)
}
