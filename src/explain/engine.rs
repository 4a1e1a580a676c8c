//! The engine: plans every statement in each mode over a connection pool.
//!
//! Nothing is ever executed but EXPLAIN: each statement is planned inside a
//! transaction that is always rolled back, with a statement_timeout, and
//! `--analyze` (EXPLAIN ANALYZE) only ever runs there. Tenant mode does
//! `SET LOCAL ROLE` and `set_config(setting, id, true)` first, then
//! prepares, so row-level security is part of every plan.
//!
//! The files: [`outcome`] (what is learnt about a statement), [`shared`]
//! (what the run's planning tasks share, why a plan fails, the planning
//! transaction), [`pipeline`] (one statement in one mode: the pipelined fast
//! path, the slow path, generic and custom plans) and [`retype`] (parameters
//! typed from their context); this one runs them: the pool, the planner
//! settings read once, each statement from its text to its status.

mod outcome;
mod pipeline;
mod retype;
mod shared;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio_postgres::Client;

use super::citus;
use super::in_function::{self, InFunction, Sources};
use super::plan_tree::{Mode, Plan, PlanKind};
use crate::catalog::planner::Catalog;
use crate::db::ConnInfo;
use crate::error::{Error, PgError, Result};
use crate::output::Log;
use crate::params::binding::{self, Analysis};
use crate::params::values::Sampler;
use crate::queries::Statement;
use crate::session::{self, PlannerSetting};
use crate::tenancy::Tenancy;
pub use outcome::{Explained, Status, used_indexes};
use pipeline::{plan_custom, plan_mode};
pub use shared::EngineOptions;
use shared::{Applied, Failure, Pick, Shared, begin, only_in_functions, rollback};

pub struct Engine {
    pool: Pool,
    shared: Arc<Shared>,
    log: Log,
}

impl Engine {
    pub fn new(
        conn: &ConnInfo,
        catalog: Arc<Catalog>,
        tenancy: Option<Tenancy>,
        opts: EngineOptions,
        log: Log,
    ) -> Result<Engine> {
        let pool = session::pool(conn, opts.jobs, log)?;
        Ok(Engine {
            pool,
            shared: Arc::new(Shared {
                sampler: Sampler::new(catalog.clone(), tenancy.as_ref(), opts.stats),
                catalog,
                tenancy,
                opts,
                functions: tokio::sync::OnceCell::new(),
                settings: tokio::sync::OnceCell::new(),
            }),
            log,
        })
    }

    pub fn modes(&self) -> &[Mode] {
        &self.shared.opts.modes
    }

    pub fn jobs(&self) -> usize {
        self.pool.status().max_size
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        session::get(&self.pool).await
    }

    /// Plans every statement, in parallel; results keep the input order.
    /// `done` is called once per statement planned (a progress bar).
    pub async fn run(
        &self,
        statements: Vec<Statement>,
        done: &(dyn Fn() + Sync),
    ) -> Result<Vec<Explained>> {
        if !statements.is_empty() && self.shared.settings.get().is_none() {
            let applied = self.read_settings().await?;
            let _ = self.shared.settings.set(applied);
        }
        self.prefetch_samples(&statements).await?;
        let mut set = tokio::task::JoinSet::new();
        let n = statements.len();
        for (i, stmt) in statements.into_iter().enumerate() {
            let pool = self.pool.clone();
            let shared = self.shared.clone();
            set.spawn(async move {
                let r = explain_one(&pool, &shared, stmt).await;
                (i, r)
            });
        }
        let mut out: Vec<Option<Explained>> = vec![None; n];
        while let Some(joined) = set.join_next().await {
            let (i, r) =
                joined.map_err(|e| Error::Other(anyhow::anyhow!("a planning task failed: {e}")))?;
            out[i] = Some(r?);
            done();
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// The parameter samples the statements will ask for, read ahead: one
    /// scan per (table, tenant) for all the columns sampled there (see
    /// [`Sampler::prefetch`]), on the pool's connections at once. A
    /// statement recorded inside a function is left out (its names are
    /// bound while it is planned); what is not read here is read when asked.
    async fn prefetch_samples(&self, statements: &[Statement]) -> Result<()> {
        let mut tables: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for stmt in statements {
            if stmt.ignore.is_some() || only_in_functions(stmt) {
                continue;
            }
            let text = stmt.query.trim().trim_end_matches(';').trim_end();
            if binding::classify(text).is_err() {
                continue;
            }
            let analysis = binding::analyze(&binding::repair(text).0);
            for (table, column) in self.shared.sampler.wanted(&analysis) {
                tables.entry(table).or_default().insert(column);
            }
        }
        let picks = self.shared.picks();
        let mut reads = Vec::new();
        for (table, columns) in &tables {
            let columns: Vec<String> = columns.iter().cloned().collect();
            for pick in &picks {
                reads.push((table.clone(), columns.clone(), pick.tenant_id.clone()));
            }
        }
        let shared = &self.shared;
        let results = futures_util::future::join_all(reads.iter().map(
            |(table, columns, tenant)| async move {
                let client = self.client().await?;
                shared
                    .sampler
                    .prefetch(&client, table, columns, tenant.as_deref())
                    .await
            },
        ))
        .await;
        results.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(())
    }

    /// Re-plans `e` in `mode` with each `$param` bound to its literal (the
    /// partial index check); returns the plan, or None when it could not be made.
    pub async fn plan_with_literals(
        &self,
        e: &Explained,
        mode: Mode,
        binds: &[(u32, String)],
    ) -> Result<Option<Plan>> {
        let client = self.client().await?;
        let pick = self.shared.picks().into_iter().next().unwrap_or(Pick {
            label: "heaviest",
            tenant_id: None,
        });
        let mut values = self
            .shared
            .sampler
            .values_shaped(
                &client,
                &e.text,
                &e.analysis,
                pick.tenant_id.as_deref(),
                &e.stmt.shapes,
            )
            .await?;
        if let Err(f) = begin(&client, &self.shared, mode, pick.tenant_id.as_deref()).await {
            rollback(&client).await?;
            return match f {
                Failure::Fatal(err) => Err(err),
                _ => Ok(None),
            };
        }
        for (param, literal) in binds {
            let idx = (*param as usize).saturating_sub(1);
            if values.len() < idx + 1 {
                values.resize(idx + 1, None);
            }
            values[idx] = Some(literal.clone());
        }
        let r = plan_custom(
            &client,
            &self.shared,
            e,
            mode,
            &pick,
            values,
            PlanKind::Literal,
        )
        .await;
        rollback(&client).await?;
        match r {
            Ok(p) => Ok(Some(p)),
            Err(Failure::Fatal(err)) => Err(err),
            Err(_) => Ok(None),
        }
    }
}

impl Engine {
    /// The planner settings of the run (see [`Applied`]), checked by
    /// applying them once in a rolled-back transaction, and said on stderr;
    /// and a warning when the schemas look like one per tenant.
    async fn read_settings(&self) -> Result<Applied> {
        let client = self.client().await?;
        let stats = self.shared.opts.stats;
        let planner = &self.shared.opts.planner;
        let mut applied = Applied::default();
        if let Some(prod) = &planner.settings_from {
            applied.production = session::production_settings(prod, &client, stats).await?;
        }
        if !planner.settings.is_empty() {
            let names: Vec<String> = planner.settings.iter().map(|(n, _)| n.clone()).collect();
            let unknown = session::unknown_settings(&client, stats, &names).await?;
            if !unknown.is_empty() {
                return Err(Error::usage_hint(
                    format!(
                        "[explain] settings names what the server does not know: {}",
                        unknown.join(", ")
                    ),
                    "use the names pg_settings lists (SHOW ALL)",
                ));
            }
            applied.config = planner
                .settings
                .iter()
                .map(|(name, value)| PlannerSetting {
                    name: name.clone(),
                    value: value.clone(),
                    source: "[explain] settings".to_string(),
                })
                .collect();
        }
        let named = |n: &str| {
            applied
                .production
                .iter()
                .chain(&applied.config)
                .any(|s| s.name == n)
        };
        if !named(citus::REPARTITION_SETTING)
            && crate::catalog::citus::has_distributed_tables(&client, stats).await?
        {
            applied.config.push(citus::repartition_setting());
        }
        if let Some(t) = &self.shared.tenancy {
            applied.role = session::role_settings(&client, stats, &t.role).await?;
        }
        let said = |list: Vec<&PlannerSetting>| -> Option<String> {
            let list: Vec<String> = list.into_iter().map(PlannerSetting::describe).collect();
            (!list.is_empty()).then(|| list.join(", "))
        };
        if let Some(list) = said(applied.production.iter().chain(&applied.config).collect()) {
            self.log.info(&format!("planning with SET LOCAL {list}"));
        }
        if let Some(list) = said(applied.role.iter().collect()) {
            self.log
                .info(&format!("planning in tenant mode with SET LOCAL {list}"));
        }
        // Every value checked once: a bad one would fail every statement.
        for mode in self.shared.opts.modes.clone() {
            let ctx = self.shared.context_with(&applied, mode, None);
            let r = session::begin(&client, &ctx, self.shared.opts.timeout_ms).await;
            rollback(&client).await?;
            if let Err(e) = r {
                return Err(match e.as_db_error() {
                    Some(db) => Error::usage_hint(
                        format!("a planner setting was refused: {}", db.message()),
                        "check [explain] settings in planck.toml (and the --settings-from server)",
                    ),
                    None => Error::db("applying the planner settings", e),
                });
            }
        }
        for group in crate::catalog::tenant_schemas::groups(&client, stats).await? {
            self.log.warn(&format!(
                "schemas {} hold the same tables: this looks like a schema per tenant (chosen \
                 with search_path), which planck does not support yet; statements are planned \
                 against the search_path's schemas only",
                group.join(", ")
            ));
        }
        Ok(applied)
    }
}

async fn explain_one(pool: &Pool, shared: &Shared, stmt: Statement) -> Result<Explained> {
    let mut e = Explained {
        text: stmt
            .query
            .trim()
            .trim_end_matches(';')
            .trim_end()
            .to_string(),
        stmt,
        repairs: Vec::new(),
        analysis: Analysis::default(),
        judged: Vec::new(),
        status: Status::Explained,
        param_types: Vec::new(),
        plans: Vec::new(),
        stale: None,
        notes: Vec::new(),
        guesses: Vec::new(),
    };
    if let Some(reason) = &e.stmt.ignore {
        e.status = Status::Skipped(format!("ignored: {reason}"));
        return Ok(e);
    }
    if let Err(reason) = binding::classify(&e.text) {
        e.status = Status::Skipped(reason);
        return Ok(e);
    }
    let in_functions = only_in_functions(&e.stmt);
    if in_functions && in_function::is_expression(&e.text) {
        e.status = Status::Skipped(
            "plpgsql's own evaluation of an expression inside a function (a SELECT without \
             FROM): noise, what the functions it calls do is recorded on its own"
                .to_string(),
        );
        return Ok(e);
    }
    let (text, repairs) = binding::repair(&e.text);
    e.text = text;
    e.repairs = repairs;
    e.judged = shared.judged(&e.stmt);
    let client = session::get(pool).await?;
    let mut function = None;
    if in_functions {
        match bind_in_function(&client, shared, &mut e).await {
            Ok(Some(f)) => function = Some(f),
            Ok(None) => {}
            Err(reason) => {
                e.status = Status::Skipped(reason);
                return Ok(e);
            }
        }
    }
    e.analysis = binding::analyze(&e.text);
    if let Err(err) = plan_statement(&client, shared, &mut e, function.as_deref()).await {
        // One statement's failure never ends the run: a server error, a
        // backend terminated under --analyze, a broken connection (the pool
        // drops it and opens another).
        let _ = client.batch_execute("ROLLBACK").await;
        e.status = Status::Skipped(format!("planning failed: {err}"));
    }
    Ok(e)
}

/// Binds the names of the function `e` ran in (see `in_function`): the
/// function's signature when it did, Err with the reason to skip it.
async fn bind_in_function(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
) -> std::result::Result<Option<String>, String> {
    let sources = shared
        .functions
        .get_or_try_init(|| async {
            crate::catalog::functions::load(client, shared.opts.stats)
                .await
                .map(Sources::new)
        })
        .await
        .map_err(|err| format!("planning failed: {err}"))?;
    match in_function::bind(client, shared.opts.stats, sources, &e.text).await {
        Ok(InFunction::Plain) => Ok(None),
        Ok(InFunction::Bound {
            text,
            function,
            security_definer,
            names,
        }) => {
            e.text = text;
            e.repairs
                .push(format!("ran inside {function}: bound {}", names.join(", ")));
            // A SECURITY DEFINER function's statements run as its owner.
            if security_definer && shared.opts.modes.contains(&Mode::Admin) {
                e.judged = vec![Mode::Admin];
            }
            Ok(Some(function))
        }
        Ok(InFunction::Unbound(reason)) => Err(reason),
        Err(err) => Err(format!("planning failed: {err}")),
    }
}

/// Samples the values and plans `e` in every mode; sets its status.
/// `function`: the function it ran in, when its names were bound.
async fn plan_statement(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    function: Option<&str>,
) -> Result<()> {
    // Values are sampled first, as the connecting role, outside any transaction.
    let mut picks = Vec::new();
    for pick in shared.picks() {
        let values = shared
            .sampler
            .values_shaped(
                client,
                &e.text,
                &e.analysis,
                pick.tenant_id.as_deref(),
                &e.stmt.shapes,
            )
            .await?;
        picks.push((pick, values));
    }
    if shared.opts.analyze
        && let Some(f) = binding::not_rolled_back(&e.text)
    {
        e.notes.push(format!(
            "planned without ANALYZE: it calls {f}(), whose effects a ROLLBACK does not undo"
        ));
    }
    let mut failures = Vec::new();
    for mode in shared.opts.modes.clone() {
        match plan_mode(client, shared, e, mode, &picks).await {
            // Every path of plan_mode that succeeds has sent its ROLLBACK:
            // another would be one more round trip per statement and mode.
            Ok(()) => continue,
            Err(Failure::Fatal(err)) => return Err(err),
            Err(Failure::Timeout) => {
                // No point waiting for the timeout again in the other mode.
                failures.push((mode, Failure::Timeout));
                rollback(client).await?;
                break;
            }
            Err(f) => failures.push((mode, f)),
        }
        rollback(client).await?;
    }
    let timed_out = failures
        .iter()
        .position(|(_, f)| matches!(f, Failure::Timeout));
    // No plan in a mode the statement is judged in: it is skipped, with the
    // reason from that mode (the other mode's plans stay in the report).
    let judged_plan = e.plans.iter().any(|p| e.judged.contains(&p.mode));
    let judged_failure = failures
        .iter()
        .position(|(m, _)| e.judged.contains(m))
        .or((!failures.is_empty()).then_some(0));
    if let Some(i) = timed_out.or(judged_failure.filter(|_| !judged_plan)) {
        let (mode, f) = failures.remove(i);
        e.status = Status::Skipped(match f {
            // Never stale: the function ran it, so its names existed there.
            Failure::Stale(pg) if only_in_functions(&e.stmt) => match function {
                Some(f) => format!(
                    "ran only inside {f}; with its names bound, the server still cannot \
                     resolve: {}",
                    pg.message
                ),
                None => format!(
                    "ran only inside a function (pg_stat_statements toplevel = false), and \
                     names what planck could not bind: {}",
                    pg.message
                ),
            },
            Failure::Stale(pg) => {
                match created_by_the_run(&shared.opts.created_relations, e, &pg) {
                    Some(name) => format!(
                        "{name} was created by the recorded test run (a temporary table or a view \
                     it dropped), so it is not here to plan against: {}",
                        pg.message
                    ),
                    None => {
                        let r = format!("stale: {}", pg.message);
                        e.stale = Some(pg);
                        r
                    }
                }
            }
            Failure::Untyped(pg) => format!(
                "parameter types cannot be inferred from the context nor with the typed \
                 guesses (numeric, bigint, timestamptz, interval, text): {}",
                pg.message
            ),
            Failure::Syntax(pg) => match &e.analysis.parse_error {
                Some(pe) => format!("does not parse: {} ({pe})", pg.message),
                None => format!("does not parse: {}", pg.message),
            },
            Failure::Timeout => format!(
                "planning timed out after {} ms ({} mode)",
                shared.opts.timeout_ms,
                mode.as_str()
            ),
            Failure::Other(pg) => format!("the server refused it ({} mode): {pg}", mode.as_str()),
            Failure::Fatal(err) => err.to_string(),
        });
    } else {
        if let Some(pe) = &e.analysis.parse_error {
            e.notes.push(format!(
                "sqlparser could not read the text, so parameters got values of their type only: {pe}"
            ));
        }
        for (mode, f) in failures {
            e.notes.push(format!("{} mode: {f}", mode.as_str()));
        }
        e.notes.extend(shared.settings_notes());
    }
    Ok(())
}

/// The relation the test run created that a 42P01/42703 is about: named in
/// the message, or (a missing column) a table the statement reads.
fn created_by_the_run(created: &[String], e: &Explained, pg: &PgError) -> Option<String> {
    if created.is_empty() || !matches!(pg.code.as_str(), "42P01" | "42703") {
        return None;
    }
    let bare = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
    let is_created = |n: &str| created.iter().any(|c| c == n || bare(c) == bare(n));
    let quoted = pg.message.split('"').nth(1).unwrap_or_default();
    if pg.code == "42P01" {
        return is_created(quoted).then(|| quoted.to_string());
    }
    e.analysis.tables.iter().find(|t| is_created(t)).cloned()
}
