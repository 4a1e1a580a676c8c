//! The engine: plans every statement in each mode over a connection pool.
//!
//! Nothing is ever executed but EXPLAIN: each statement is planned inside a
//! transaction that is always rolled back, with a statement_timeout, and
//! `--analyze` (EXPLAIN ANALYZE) only ever runs there. Tenant mode does
//! `SET LOCAL ROLE` and `set_config(setting, id, true)` first, then
//! prepares, so row-level security is part of every plan.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use deadpool_postgres::Pool;
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage};

use super::citus;
use super::in_function::{self, InFunction, Sources};
use super::options::PlannerOptions;
use super::plan_tree::{Mode, Plan, PlanKind};
use crate::catalog::planner::Catalog;
use crate::db::ConnInfo;
use crate::error::{Error, PgError, Result};
use crate::output::Log;
use crate::params::binding::{self, Analysis};
use crate::params::typing;
use crate::params::values::{Sampler, TextParam, fill_defaults};
use crate::queries::Statement;
use crate::session::{self, PlannerSetting, SettingValue, StatsMode};
use crate::tenancy::Tenancy;
use crate::tenancy::TenantContext;

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Modes planned for every statement.
    pub modes: Vec<Mode>,
    /// Judge every statement in every planned mode (else by its recorded role).
    pub all_modes: bool,
    pub analyze: bool,
    pub timeout_ms: u64,
    pub jobs: usize,
    /// How planck's statements stay out of pg_stat_statements (see `session`).
    pub stats: StatsMode,
    /// Relations the recorded test run created (the queries file's
    /// `created_relations`): a statement that misses one is skipped, not stale.
    pub created_relations: Vec<String>,
    /// Planner settings applied in every planning transaction.
    pub planner: PlannerOptions,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Explained,
    Skipped(String),
    /// Planned, but on data that cannot show production's plan (see
    /// [`super::data`]): no finding is drawn from it.
    NotJudged(String),
}

/// Everything planck learnt about one statement.
#[derive(Debug, Clone)]
pub struct Explained {
    pub stmt: Statement,
    /// The text actually planned (repaired, perhaps with typed guesses).
    pub text: String,
    pub repairs: Vec<String>,
    pub analysis: Analysis,
    /// Modes whose findings count for this statement.
    pub judged: Vec<Mode>,
    pub status: Status,
    pub param_types: Vec<String>,
    pub plans: Vec<Plan>,
    /// The server's error when the statement names something that is gone.
    pub stale: Option<PgError>,
    /// Plans that could not be made, and why (the others still count).
    pub notes: Vec<String>,
    /// Parameter types guessed in the fixed order, not read from the
    /// context: findings on this statement are warnings naming them.
    pub guesses: Vec<String>,
}

impl Explained {
    pub fn plans_in(&self, mode: Mode) -> impl Iterator<Item = &Plan> {
        self.plans.iter().filter(move |p| p.mode == mode)
    }
}

/// Why planning a statement failed.
#[derive(Debug)]
enum Failure {
    Stale(PgError),
    Untyped(PgError),
    Syntax(PgError),
    Timeout,
    Other(PgError),
    /// The connection broke: the whole run stops.
    Fatal(Error),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Stale(pg)
            | Failure::Untyped(pg)
            | Failure::Syntax(pg)
            | Failure::Other(pg) => {
                write!(f, "{}", pg.to_string().replace('\n', "; "))
            }
            Failure::Timeout => write!(f, "timed out"),
            Failure::Fatal(e) => write!(f, "{e}"),
        }
    }
}

fn failure(e: tokio_postgres::Error, context: &str) -> Failure {
    let Some(db) = e.as_db_error() else {
        return Failure::Fatal(Error::db(context.to_string(), e));
    };
    let pg = PgError::from_db(db);
    let code = db.code();
    if *code == SqlState::UNDEFINED_TABLE
        || *code == SqlState::UNDEFINED_COLUMN
        || *code == SqlState::UNDEFINED_FUNCTION
        || *code == SqlState::INVALID_SCHEMA_NAME
        || *code == SqlState::UNDEFINED_OBJECT
    {
        Failure::Stale(pg)
    } else if *code == SqlState::INDETERMINATE_DATATYPE {
        Failure::Untyped(pg)
    } else if *code == SqlState::SYNTAX_ERROR {
        Failure::Syntax(pg)
    } else if *code == SqlState::QUERY_CANCELED {
        Failure::Timeout
    } else if pg.code.starts_with("08") || pg.code.starts_with("57P") {
        Failure::Fatal(Error::db(context.to_string(), e))
    } else {
        Failure::Other(pg)
    }
}

/// One set of values to plan with: a label and a tenant.
#[derive(Debug, Clone)]
struct Pick {
    label: &'static str,
    tenant_id: Option<String>,
}

struct Shared {
    catalog: Arc<Catalog>,
    tenancy: Option<Tenancy>,
    opts: EngineOptions,
    sampler: Sampler,
    /// The SQL and plpgsql functions, read at the first statement recorded
    /// inside a function (see `in_function`).
    functions: tokio::sync::OnceCell<Sources>,
    /// The planner settings, read once at the start of the run.
    settings: tokio::sync::OnceCell<Applied>,
}

/// Planner settings applied with `SET LOCAL`, by where they come from; later wins.
#[derive(Debug, Default)]
struct Applied {
    /// `--settings-from`: production's pg_settings.
    production: Vec<PlannerSetting>,
    /// Tenant mode: the tenant role's and the database's `ALTER ... SET`,
    /// which `SET ROLE` does not apply.
    role: Vec<PlannerSetting>,
    /// `[explain] settings` in planck.toml.
    config: Vec<PlannerSetting>,
}

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

impl Shared {
    /// The tenants whose values custom plans use.
    fn picks(&self) -> Vec<Pick> {
        match &self.tenancy {
            Some(t) => {
                let mut v = vec![Pick {
                    label: if t.heaviest.as_deref() == Some(t.id.as_str()) {
                        "heaviest"
                    } else {
                        "chosen"
                    },
                    tenant_id: Some(t.id.clone()),
                }];
                if let Some(m) = &t.median
                    && *m != t.id
                {
                    v.push(Pick {
                        label: "median",
                        tenant_id: Some(m.clone()),
                    });
                }
                v
            }
            None => vec![Pick {
                label: "common",
                tenant_id: None,
            }],
        }
    }

    fn judged(&self, stmt: &Statement) -> Vec<Mode> {
        judged_modes(&self.opts.modes, self.opts.all_modes, stmt.bypass_rls)
    }
}

/// Modes a statement is judged in (as perf-sql-plans.txt says: API queries
/// by the tenant run, jobs by the plain run).
pub fn judged_modes(planned: &[Mode], all_modes: bool, bypass_rls: Option<bool>) -> Vec<Mode> {
    if all_modes || planned.len() < 2 {
        return planned.to_vec();
    }
    // Both planned: jobs (bypassing RLS) by the admin run, the API by the tenant run.
    if bypass_rls == Some(true) {
        vec![Mode::Admin]
    } else {
        vec![Mode::Tenant]
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

/// Recorded only inside functions: its names may be the function's own.
fn only_in_functions(stmt: &Statement) -> bool {
    !stmt.contexts.is_empty()
        && stmt
            .contexts
            .iter()
            .all(|c| *c == crate::queries::Context::Function)
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

async fn rollback(client: &Client) -> Result<()> {
    client
        .batch_execute("ROLLBACK")
        .await
        .map_err(|e| Error::db("rolling back", e))
}

impl Shared {
    /// Who a transaction in `mode` runs as, for tenant `id`, with the
    /// planner settings of the run.
    fn context(&self, mode: Mode, id: Option<&str>) -> TenantContext {
        match self.settings.get() {
            Some(applied) => self.context_with(applied, mode, id),
            None => self.context_with(&Applied::default(), mode, id),
        }
    }

    fn context_with(&self, applied: &Applied, mode: Mode, id: Option<&str>) -> TenantContext {
        let mut ctx = match &self.tenancy {
            Some(t) => t.context(mode, id),
            None => TenantContext::admin(),
        };
        let planner: Vec<(String, SettingValue)> = applied_in(applied, mode)
            .map(|s| (s.name.clone(), SettingValue::Text(s.value.clone())))
            .collect();
        ctx.settings.splice(0..0, planner);
        ctx
    }

    /// `tenant mode planned with SET LOCAL work_mem = 64MB (ALTER ROLE app SET)`, per mode.
    fn settings_notes(&self) -> Vec<String> {
        let Some(applied) = self.settings.get() else {
            return Vec::new();
        };
        self.opts
            .modes
            .iter()
            .filter_map(|m| {
                let list: Vec<String> = applied_in(applied, *m)
                    .map(PlannerSetting::describe)
                    .collect();
                (!list.is_empty()).then(|| {
                    format!(
                        "{} mode planned with SET LOCAL {}",
                        m.as_str(),
                        list.join(", ")
                    )
                })
            })
            .collect()
    }

    /// `sql` as planck sends it (tagged where pg_stat_statements tracks planck).
    fn tag(&self, sql: &str) -> String {
        session::tag(self.opts.stats, sql)
    }
}

/// The settings a transaction in `mode` applies, in order (later wins):
/// production's, the role's (tenant mode), planck.toml's.
fn applied_in(applied: &Applied, mode: Mode) -> impl Iterator<Item = &PlannerSetting> {
    let role: &[PlannerSetting] = if mode == Mode::Tenant {
        &applied.role
    } else {
        &[]
    };
    applied.production.iter().chain(role).chain(&applied.config)
}

/// BEGIN, the timeout, and in tenant mode the role and the tenant.
async fn begin(
    client: &Client,
    shared: &Shared,
    mode: Mode,
    tenant: Option<&str>,
) -> Result<(), Failure> {
    session::begin(
        client,
        &shared.context(mode, tenant),
        shared.opts.timeout_ms,
    )
    .await
    .map_err(|e| failure(e, "starting the planning transaction"))
}

/// Whether `e` is planned with ANALYZE: not when it calls a function whose
/// effects a ROLLBACK does not undo.
fn analyzes(shared: &Shared, e: &Explained) -> bool {
    shared.opts.analyze && binding::not_rolled_back(&e.text).is_none()
}

/// VERBOSE: only then does EXPLAIN name each scan's `Schema`, which keeps two
/// schemas' same-named tables and indexes apart (see `plan_tree::walk`).
fn explain_prefix(analyze: bool) -> &'static str {
    if analyze {
        "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) "
    } else {
        "EXPLAIN (VERBOSE, FORMAT JSON) "
    }
}

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
async fn plan_mode(
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

/// What the server answers when a parameter has no type it can settle on:
/// the statement is typed from its context and tried again.
const RETYPED: [SqlState; 4] = [
    SqlState::INDETERMINATE_DATATYPE,
    SqlState::DATATYPE_MISMATCH,
    SqlState::AMBIGUOUS_FUNCTION,
    SqlState::UNDEFINED_FUNCTION,
];

/// Types the loose parameters of `e` from the expression around them
/// (see `params::typing`) and prepares again, attempt by attempt, each in a
/// fresh transaction; keeps the first that plans: its text becomes the
/// statement's, its casts its repairs (fixed-order guesses in `guesses`).
/// The caller has rolled back; on success the transaction is open.
async fn type_by_context(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    tenant: Option<&str>,
) -> Result<Option<tokio_postgres::Statement>, Failure> {
    let u = typing::untyped(&e.text);
    if u.loose.is_empty() {
        // No context at all (`$1 IS NULL`): text, as the server reads an
        // unknown literal, then the fixed order.
        let all = typing::uncast(&e.text);
        let text = typing::Attempt {
            casts: all.iter().map(|n| (*n, "text".to_string())).collect(),
            guessed: all.clone(),
        };
        let attempts: Vec<typing::Attempt> = std::iter::once(text)
            .chain(typing::attempts(&all, &BTreeMap::new()))
            .collect();
        return try_attempts(client, shared, e, mode, tenant, attempts).await;
    }
    let mut hinted: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (n, hints) in &u.hints {
        for h in hints {
            if let Some(ty) = hint_type(client, shared, e, &u, h).await?
                && !hinted.get(n).is_some_and(|v| v.contains(&ty))
            {
                hinted.entry(*n).or_default().push(ty);
            }
        }
    }
    let attempts = typing::attempts(&u.loose, &hinted);
    try_attempts(client, shared, e, mode, tenant, attempts).await
}

/// Prepares with each attempt's casts in a fresh transaction; keeps the first that plans.
async fn try_attempts(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    tenant: Option<&str>,
    attempts: Vec<typing::Attempt>,
) -> Result<Option<tokio_postgres::Statement>, Failure> {
    for attempt in attempts {
        if attempt.casts.is_empty() {
            continue;
        }
        let text = typing::apply(&e.text, &attempt.casts);
        begin(client, shared, mode, tenant).await?;
        match client
            .prepare(&shared.tag(&format!("{}{}", explain_prefix(false), text)))
            .await
        {
            Ok(stmt) => {
                let notes = attempt.describe();
                e.guesses
                    .extend(notes.iter().filter(|n| n.contains("guessed as")).cloned());
                e.repairs.extend(notes);
                e.text = text;
                return Ok(Some(stmt));
            }
            Err(err)
                if err
                    .as_db_error()
                    .is_some_and(|d| !d.code().code().starts_with("08")) =>
            {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            Err(err) => return Err(failure(err, "preparing the statement")),
        }
    }
    Ok(None)
}

/// The type a hint stands for: a column's (from the server), a literal's,
/// the only signature's argument type.
async fn hint_type(
    client: &Client,
    shared: &Shared,
    e: &Explained,
    u: &typing::Untyped,
    h: &typing::Hint,
) -> Result<Option<String>, Failure> {
    use typing::Hint;
    let column_type = |table: &Option<String>, column: &String| {
        let t = match table {
            Some(q) => {
                let t = u.aliases.get(q).cloned().unwrap_or_else(|| q.clone());
                shared.catalog.resolve(&t).map(str::to_string)
            }
            None => shared
                .catalog
                .table_with_column(&e.analysis.tables, column)
                .or_else(|| {
                    shared
                        .catalog
                        .table_with_column(&u.aliases.values().cloned().collect::<Vec<_>>(), column)
                }),
        };
        t.map(|t| (crate::catalog::sql_name(&t), column.clone()))
    };
    let rows = match h {
        Hint::Clock => return Ok(Some("interval".to_string())),
        Hint::Sibling(ty) | Hint::Aggregate(ty) => return Ok(Some(ty.clone())),
        Hint::Column { table, column } | Hint::SiblingColumn { table, column } => {
            let Some((t, c)) = column_type(table, column) else {
                return Ok(None);
            };
            client
                .query(
                    &shared.tag(
                        "SELECT format_type(atttypid, NULL) FROM pg_attribute
                          WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped",
                    ),
                    &[&t, &c],
                )
                .await
        }
        // The argument type, when every function of that name and arity agrees
        // (the numbers are spliced: they are counts, not text).
        Hint::Argument { name, nargs, pos } => {
            client
                .query(
                    &shared.tag(&format!(
                        "SELECT min(t) FROM (SELECT DISTINCT format_type(proargtypes[{pos}], NULL) AS t
                                             FROM pg_proc WHERE proname = $1 AND pronargs = {nargs}) s
                          HAVING count(*) = 1"
                    )),
                    &[name],
                )
                .await
        }
    }
    .map_err(|err| failure(err, "reading a parameter's context type"))?;
    Ok(rows
        .first()
        .and_then(|r| r.get::<_, Option<String>>(0))
        // Polymorphic signatures say nothing.
        .filter(|t| !t.starts_with("any")))
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
async fn plan_custom(
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

/// Indexes used by plans of each kind.
pub fn used_indexes(results: &[Explained]) -> BTreeMap<String, BTreeSet<&'static str>> {
    let mut used: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    for e in results {
        for p in &e.plans {
            for i in p.indexes() {
                used.entry(i).or_default().insert(p.kind.as_str());
            }
        }
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_judged_by_the_role_that_recorded_them() {
        let both = [Mode::Tenant, Mode::Admin];
        assert_eq!(judged_modes(&both, false, Some(true)), vec![Mode::Admin]);
        assert_eq!(judged_modes(&both, false, Some(false)), vec![Mode::Tenant]);
        assert_eq!(judged_modes(&both, false, None), vec![Mode::Tenant]);
        assert_eq!(judged_modes(&both, true, Some(true)), both.to_vec());
        assert_eq!(
            judged_modes(&[Mode::Admin], false, Some(false)),
            vec![Mode::Admin]
        );
    }

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
