//! One statement planned in one mode ([`plan_mode`]): the fast path of two
//! pipelined round trips (BEGIN, SET ROLE and the prepare; then every custom
//! plan, the generic plan and the ROLLBACK), the slow path that redoes the
//! failed plans one at a time, and the generic and custom plans themselves.

use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage};

use super::outcome::Explained;
use super::retype::{RETYPED, type_by_context};
use super::shared::{Failure, Pick, Shared, analyzes, begin, explain_prefix, failure, rollback};
use crate::error::{Error, PgError};
use crate::explain::citus;
use crate::explain::plan_tree::{Mode, Plan, PlanKind};
use crate::params::values::{TextParam, fill_defaults};
use crate::session;

/// One pipelined request's outcome.
enum Step {
    Unit(Result<(), tokio_postgres::Error>),
    Row(Result<tokio_postgres::Row, tokio_postgres::Error>),
    Msgs(Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>),
}

type StepFut<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Step> + Send + 'a>>;

/// Round trip 1 of [`plan_mode`]: BEGIN, SET ROLE, the settings and the
/// EXPLAIN prepared, pipelined; a statement whose parameters the server
/// cannot type is typed from its context and prepared again.
async fn prepare_in_mode(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    first_tenant: Option<&str>,
) -> Result<tokio_postgres::Statement, Failure> {
    let explain_text = shared.tag(&format!("{}{}", explain_prefix(false), e.text));
    let ctx = shared.context(mode, first_tenant);
    let (r_begin, r_prep) = tokio::join!(
        session::begin(client, &ctx, shared.opts.timeout_ms),
        // Prepared after SET ROLE (pipelined behind it), so the policies are part of the plan.
        client.prepare(&explain_text),
    );
    r_begin.map_err(|err| failure(err, "starting the planning transaction"))?;
    let mut prepared = r_prep;
    if let Some(db) = prepared.as_ref().err().and_then(|err| err.as_db_error())
        && RETYPED.contains(db.code())
    {
        let original = PgError::from_db(db);
        let _ = client.batch_execute("ROLLBACK").await;
        match type_by_context(client, shared, e, mode, first_tenant).await? {
            Some(stmt) => prepared = Ok(stmt),
            // 42883 with every argument's type known: the function is gone.
            None if db.code() == &SqlState::UNDEFINED_FUNCTION
                && !original.message.contains("unknown") =>
            {
                return Err(Failure::Stale(original));
            }
            None => return Err(Failure::Untyped(original)),
        }
    }
    prepared.map_err(|err| failure(err, "preparing the statement"))
}

/// The generic plan and the custom plans of one statement in one mode.
///
/// The fast path takes two round trips: BEGIN/SET ROLE/set_config/prepare
/// pipelined, then the generic plan, every custom plan and the ROLLBACK
/// pipelined. When anything in it fails, the failed plans are redone one by
/// one (the slow path), so an error is attributed to its plan.
pub(super) async fn plan_mode(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    picks: &[(Pick, Vec<Option<String>>)],
) -> Result<(), Failure> {
    let tenancy = shared.tenancy.as_ref().filter(|_| mode == Mode::Tenant);
    let first_tenant = picks.first().and_then(|p| p.0.tenant_id.clone());
    let prepared = prepare_in_mode(client, shared, e, mode, first_tenant.as_deref()).await?;
    let analyze_stmt = if analyzes(shared, e) {
        Some(
            client
                .prepare(&shared.tag(&format!("{}{}", explain_prefix(true), e.text)))
                .await
                .map_err(|err| failure(err, "preparing the statement"))?,
        )
    } else {
        None
    };
    let custom_stmt = analyze_stmt.as_ref().unwrap_or(&prepared);
    let types: Vec<Type> = prepared.params().to_vec();
    e.param_types = types.iter().map(|t| t.name().to_string()).collect();

    // Values with type defaults filled in, as text parameters.
    let filled: Vec<Vec<Option<String>>> = picks
        .iter()
        .map(|(_, values)| fill_defaults(values.clone(), &types))
        .collect();
    let params: Vec<Vec<TextParam>> = filled
        .iter()
        .map(|v| v.iter().cloned().map(TextParam).collect())
        .collect();
    let refs: Vec<Vec<&(dyn ToSql + Sync)>> = params
        .iter()
        .map(|v| v.iter().map(|p| p as &(dyn ToSql + Sync)).collect())
        .collect();

    // Round trip 2: everything else, pipelined. The generic plan comes
    // last, as the first tenant again: on 15 and older its SQL leaves
    // plan_cache_mode and partition pruning changed (see `generic_sql`),
    // and only the ROLLBACK follows it.
    let generic_sql = generic_sql(shared, &e.text, types.len());
    let last_tenant = picks
        .iter()
        .rev()
        .find_map(|(p, _)| p.tenant_id.as_ref())
        .or(first_tenant.as_ref());
    let restore = match (tenancy, &first_tenant) {
        (Some(t), Some(id)) if !types.is_empty() && last_tenant != Some(id) => {
            Some(t.context(mode, Some(id)))
        }
        _ => None,
    };
    let mut futs: Vec<StepFut> = Vec::new();
    for ((pick, _), r) in picks.iter().zip(&refs) {
        if let (Some(t), Some(id)) = (tenancy, &pick.tenant_id) {
            let ctx = t.context(mode, Some(id));
            futs.push(Box::pin(async move {
                Step::Unit(session::apply_settings(client, &ctx).await)
            }));
        }
        futs.push(Box::pin(async move {
            Step::Row(client.query_one(custom_stmt, r).await)
        }));
    }
    if let Some(ctx) = &restore {
        futs.push(Box::pin(async move {
            Step::Unit(session::apply_settings(client, ctx).await)
        }));
    }
    if !types.is_empty() {
        futs.push(Box::pin(async {
            Step::Msgs(client.simple_query(&generic_sql).await)
        }));
    }
    futs.push(Box::pin(async {
        Step::Unit(client.batch_execute("ROLLBACK").await)
    }));
    let steps = futures_util::future::join_all(futs).await;

    let mut steps = steps.into_iter();
    let (mut customs, failed_generic, failed_picks) = read_pipelined(
        &mut steps,
        e,
        mode,
        picks,
        &filled,
        tenancy.is_some(),
        restore.is_some(),
        &first_tenant,
        types.len(),
    );
    e.plans.append(&mut customs);
    let rolled_back = matches!(steps.next(), Some(Step::Unit(Ok(()))));
    if !rolled_back {
        rollback(client).await.map_err(Failure::Fatal)?;
    }
    if !failed_generic && failed_picks.is_empty() {
        return Ok(());
    }

    // The slow path: one plan at a time, to know which failed and why.
    replan_failed(
        client,
        shared,
        e,
        mode,
        picks,
        &first_tenant,
        types.len(),
        failed_generic,
        failed_picks,
    )
    .await
}

/// Reads the pipeline's answers in the order they were sent: the custom
/// plans (each after its tenant's settings), the restore, then the generic
/// plan, pushed to `e` first. Returns the customs, whether the generic
/// plan failed, and the picks whose plan failed.
#[allow(clippy::too_many_arguments)]
fn read_pipelined(
    steps: &mut std::vec::IntoIter<Step>,
    e: &mut Explained,
    mode: Mode,
    picks: &[(Pick, Vec<Option<String>>)],
    filled: &[Vec<Option<String>>],
    tenanted: bool,
    restoring: bool,
    first_tenant: &Option<String>,
    n_types: usize,
) -> (Vec<Plan>, bool, Vec<usize>) {
    let mut customs = Vec::new();
    let mut failed_picks = Vec::new();
    for (i, (pick, _)) in picks.iter().enumerate() {
        let mut ok = true;
        if tenanted && pick.tenant_id.is_some() {
            ok &= matches!(steps.next(), Some(Step::Unit(Ok(()))));
        }
        match steps.next() {
            Some(Step::Row(Ok(row))) if ok => match row.try_get::<_, Value>(0) {
                Ok(json) => customs.push(Plan {
                    mode,
                    kind: PlanKind::Custom,
                    tenant: Some(pick.label.to_string()),
                    tenant_id: pick.tenant_id.clone(),
                    params: filled[i].clone(),
                    json,
                    flat: Default::default(),
                }),
                Err(_) => failed_picks.push(i),
            },
            _ => failed_picks.push(i),
        }
    }
    let restored = !restoring || matches!(steps.next(), Some(Step::Unit(Ok(()))));
    let mut failed_generic = false;
    if n_types > 0 {
        let ok = match steps.next() {
            Some(Step::Msgs(Ok(msgs))) if restored => generic_json(msgs).ok(),
            _ => None,
        };
        // The generic plan first in the report, as before the customs.
        match ok {
            Some(json) => e
                .plans
                .push(generic_record(mode, first_tenant, n_types, json)),
            None => failed_generic = true,
        }
    }
    (customs, failed_generic, failed_picks)
}

/// The slow path of [`plan_mode`]: the plans that failed in the pipeline
/// redone one at a time, to know which failed and why.
#[allow(clippy::too_many_arguments)]
async fn replan_failed(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    picks: &[(Pick, Vec<Option<String>>)],
    first_tenant: &Option<String>,
    n_types: usize,
    failed_generic: bool,
    failed_picks: Vec<usize>,
) -> Result<(), Failure> {
    let _ = client.batch_execute("DEALLOCATE planck_generic").await;
    if failed_generic {
        begin(client, shared, mode, first_tenant.as_deref()).await?;
        let r = generic_plan(client, shared, &e.text, n_types).await;
        let _ = client.batch_execute("ROLLBACK").await;
        let _ = client.batch_execute("DEALLOCATE planck_generic").await;
        match r {
            // Citus runs custom plans only for such a statement (see `citus`).
            Err(Failure::Other(pg)) if citus::refuses_generic(&pg, e.plans_in(mode)) => {
                e.notes.push(citus::no_generic_note(mode));
            }
            r => e
                .plans
                .push(generic_record(mode, first_tenant, n_types, r?)),
        }
    }
    for i in failed_picks {
        let (pick, values) = &picks[i];
        begin(client, shared, mode, pick.tenant_id.as_deref()).await?;
        let mut r = plan_custom(
            client,
            shared,
            e,
            mode,
            pick,
            values.clone(),
            PlanKind::Custom,
        )
        .await;
        if let Err(Failure::Other(_)) = &r {
            // Sampled values the statement rejects (a data error): plan with type defaults.
            let _ = client.batch_execute("ROLLBACK").await;
            begin(client, shared, mode, pick.tenant_id.as_deref()).await?;
            r = plan_custom(client, shared, e, mode, pick, Vec::new(), PlanKind::Custom).await;
            if r.is_ok() {
                e.notes.push(format!(
                    "{} mode, {} tenant: the sampled values were rejected; planned with type defaults",
                    mode.as_str(),
                    pick.label
                ));
            }
        }
        let _ = client.batch_execute("ROLLBACK").await;
        match r {
            Ok(p) => e.plans.push(p),
            // A statement that cannot be planned in time is skipped as a whole.
            Err(f @ (Failure::Fatal(_) | Failure::Timeout)) => return Err(f),
            Err(f) => e.notes.push(format!(
                "{} mode, {} tenant: custom plan failed: {f}",
                mode.as_str(),
                pick.label
            )),
        }
    }
    Ok(())
}

fn generic_record(mode: Mode, tenant: &Option<String>, n: usize, json: Value) -> Plan {
    Plan {
        mode,
        kind: PlanKind::Generic,
        tenant: None,
        tenant_id: if mode == Mode::Tenant {
            tenant.clone()
        } else {
            None
        },
        params: vec![None; n],
        json,
        flat: Default::default(),
    }
}

/// The SQL that gives the generic plan: GENERIC_PLAN on 16+, else PREPARE,
/// force the generic plan, EXPLAIN EXECUTE with NULLs.
///
/// A generic plan of a partitioned table names every partition under
/// GENERIC_PLAN (no values: nothing to prune with). EXECUTE prunes as the
/// executor starts, with the NULLs (`at >= NULL` matches no partition): the
/// plan named none, and no finding on a partitioned table could come from
/// it on 14 and 15. Pruning is off for that EXPLAIN, so both paths give the
/// same plan; the custom plans show what the values prune.
///
/// On 15 and older the SQL leaves `plan_cache_mode` and
/// `enable_partition_pruning` set for the rest of the transaction: the
/// callers send it last, before the ROLLBACK (putting them back took two
/// `DO` blocks, 0.2 s of server time over the bench's 2,082 generic plans).
fn generic_sql(shared: &Shared, text: &str, nparams: usize) -> String {
    if shared.catalog.server_version_num >= 160000 {
        shared.tag(&format!(
            "EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON) {text}"
        ))
    } else {
        let nulls = vec!["NULL"; nparams].join(", ");
        [
            // The `;` on a line of its own: the text may end in a `--` comment.
            format!("PREPARE planck_generic AS {text}\n"),
            "SET LOCAL plan_cache_mode = force_generic_plan".to_string(),
            "SET LOCAL enable_partition_pruning = off".to_string(),
            format!("EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE planck_generic({nulls})"),
            "DEALLOCATE planck_generic".to_string(),
        ]
        .map(|s| shared.tag(&s))
        .join(";\n")
    }
}

fn generic_json(msgs: Vec<SimpleQueryMessage>) -> Result<Value, Failure> {
    for m in msgs {
        if let SimpleQueryMessage::Row(r) = m
            && let Some(t) = r.get(0)
        {
            return serde_json::from_str(t).map_err(|err| {
                Failure::Fatal(Error::Other(anyhow::anyhow!(
                    "EXPLAIN returned no JSON: {err}"
                )))
            });
        }
    }
    Err(Failure::Fatal(Error::Other(anyhow::anyhow!(
        "EXPLAIN returned no row"
    ))))
}

/// The plan a prepared statement gets when it stops looking at values.
async fn generic_plan(
    client: &Client,
    shared: &Shared,
    text: &str,
    nparams: usize,
) -> Result<Value, Failure> {
    let msgs = client
        .simple_query(&generic_sql(shared, text, nparams))
        .await
        .map_err(|e| failure(e, "planning the generic plan"))?;
    generic_json(msgs)
}

/// A custom plan: the statement's EXPLAIN with values bound (the server
/// plans with them as constants).
pub(super) async fn plan_custom(
    client: &Client,
    shared: &Shared,
    e: &Explained,
    mode: Mode,
    pick: &Pick,
    values: Vec<Option<String>>,
    kind: PlanKind,
) -> Result<Plan, Failure> {
    // The caller has begun the transaction with the pick's tenant.
    let stmt = client
        .prepare(&shared.tag(&format!(
            "{}{}",
            explain_prefix(analyzes(shared, e)),
            e.text
        )))
        .await
        .map_err(|err| failure(err, "preparing the statement"))?;
    let types = stmt.params().to_vec();
    let values = fill_defaults(values, &types);
    let params: Vec<TextParam> = values.iter().cloned().map(TextParam).collect();
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    let row = client
        .query_one(&stmt, &refs)
        .await
        .map_err(|err| failure(err, "planning a custom plan"))?;
    let json: Value = row
        .try_get(0)
        .map_err(|err| Failure::Fatal(Error::db("reading EXPLAIN's JSON", err)))?;
    Ok(Plan {
        mode,
        kind,
        tenant: Some(pick.label.to_string()),
        tenant_id: pick.tenant_id.clone(),
        params: values,
        json,
        flat: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::catalog::planner::Catalog;
    use crate::explain::engine::EngineOptions;
    use crate::explain::options::PlannerOptions;
    use crate::params::values::Sampler;
    use crate::session::StatsMode;

    #[test]
    fn generic_sql_branches_on_the_server_version() {
        let shared = |v| Shared {
            sampler: Sampler::new(Arc::new(Catalog::default()), None, StatsMode::Untracked),
            catalog: Arc::new(Catalog {
                server_version_num: v,
                ..Default::default()
            }),
            tenancy: None,
            functions: tokio::sync::OnceCell::new(),
            settings: tokio::sync::OnceCell::new(),
            opts: EngineOptions {
                modes: vec![Mode::Admin],
                all_modes: false,
                analyze: false,
                timeout_ms: 100,
                jobs: 1,
                stats: StatsMode::Untracked,
                created_relations: Vec::new(),
                planner: PlannerOptions::default(),
            },
        };
        assert_eq!(
            generic_sql(&shared(160004), "SELECT $1", 1),
            "EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON) SELECT $1"
        );
        let old = generic_sql(&shared(150018), "SELECT $1 -- c", 2);
        assert!(
            old.starts_with("PREPARE planck_generic AS SELECT $1 -- c\n;"),
            "{old}"
        );
        assert!(old.contains("force_generic_plan"));
        assert!(old.contains("enable_partition_pruning = off"), "{old}");
        assert!(old.contains("EXECUTE planck_generic(NULL, NULL)"), "{old}");
        // Issue 35: nothing put back (two DO blocks a plan): it is sent last.
        assert!(old.ends_with("DEALLOCATE planck_generic"), "{old}");
        assert!(!old.contains("DO $$"), "{old}");
    }
}
