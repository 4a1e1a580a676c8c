//! What every planning task of a run shares ([`Shared`]: the catalog, the
//! tenancy, the options, the sampler, the planner settings applied), why a
//! plan failed ([`Failure`]), and the transaction every plan is made in
//! ([`begin`], [`rollback`]). Below the engine and its phases, so each of
//! them can use it.

use std::sync::Arc;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::outcome::Explained;
use crate::catalog::planner::Catalog;
use crate::error::{Error, PgError, Result};
use crate::explain::in_function::Sources;
use crate::explain::options::PlannerOptions;
use crate::explain::plan_tree::Mode;
use crate::params::binding;
use crate::params::values::Sampler;
use crate::queries::Statement;
use crate::session::{self, PlannerSetting, SettingValue, StatsMode};
use crate::tenancy::{Tenancy, TenantContext};

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

/// Why planning a statement failed.
#[derive(Debug)]
pub(super) enum Failure {
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

pub(super) fn failure(e: tokio_postgres::Error, context: &str) -> Failure {
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
pub(super) struct Pick {
    pub(super) label: &'static str,
    pub(super) tenant_id: Option<String>,
}

pub(super) struct Shared {
    pub(super) catalog: Arc<Catalog>,
    pub(super) tenancy: Option<Tenancy>,
    pub(super) opts: EngineOptions,
    pub(super) sampler: Sampler,
    /// The SQL and plpgsql functions, read at the first statement recorded
    /// inside a function (see `in_function`).
    pub(super) functions: tokio::sync::OnceCell<Sources>,
    /// The planner settings, read once at the start of the run.
    pub(super) settings: tokio::sync::OnceCell<Applied>,
}

/// Planner settings applied with `SET LOCAL`, by where they come from; later wins.
#[derive(Debug, Default)]
pub(super) struct Applied {
    /// `--settings-from`: production's pg_settings.
    pub(super) production: Vec<PlannerSetting>,
    /// Tenant mode: the tenant role's and the database's `ALTER ... SET`,
    /// which `SET ROLE` does not apply.
    pub(super) role: Vec<PlannerSetting>,
    /// `[explain] settings` in planck.toml.
    pub(super) config: Vec<PlannerSetting>,
}

impl Shared {
    /// The tenants whose values custom plans use.
    pub(super) fn picks(&self) -> Vec<Pick> {
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

    pub(super) fn judged(&self, stmt: &Statement) -> Vec<Mode> {
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

/// Recorded only inside functions: its names may be the function's own.
pub(super) fn only_in_functions(stmt: &Statement) -> bool {
    !stmt.contexts.is_empty()
        && stmt
            .contexts
            .iter()
            .all(|c| *c == crate::queries::Context::Function)
}

pub(super) async fn rollback(client: &Client) -> Result<()> {
    client
        .batch_execute("ROLLBACK")
        .await
        .map_err(|e| Error::db("rolling back", e))
}

impl Shared {
    /// Who a transaction in `mode` runs as, for tenant `id`, with the
    /// planner settings of the run.
    pub(super) fn context(&self, mode: Mode, id: Option<&str>) -> TenantContext {
        match self.settings.get() {
            Some(applied) => self.context_with(applied, mode, id),
            None => self.context_with(&Applied::default(), mode, id),
        }
    }

    pub(super) fn context_with(
        &self,
        applied: &Applied,
        mode: Mode,
        id: Option<&str>,
    ) -> TenantContext {
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
    pub(super) fn settings_notes(&self) -> Vec<String> {
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
    pub(super) fn tag(&self, sql: &str) -> String {
        session::tag(self.opts.stats, sql)
    }
}

/// The settings a transaction in `mode` applies, in order (later wins):
/// production's, the role's (tenant mode), planck.toml's.
pub(super) fn applied_in(applied: &Applied, mode: Mode) -> impl Iterator<Item = &PlannerSetting> {
    let role: &[PlannerSetting] = if mode == Mode::Tenant {
        &applied.role
    } else {
        &[]
    };
    applied.production.iter().chain(role).chain(&applied.config)
}

/// BEGIN, the timeout, and in tenant mode the role and the tenant.
pub(super) async fn begin(
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
pub(super) fn analyzes(shared: &Shared, e: &Explained) -> bool {
    shared.opts.analyze && binding::not_rolled_back(&e.text).is_none()
}

/// VERBOSE: only then does EXPLAIN name each scan's `Schema`, which keeps two
/// schemas' same-named tables and indexes apart (see `plan_tree::walk`).
pub(super) fn explain_prefix(analyze: bool) -> &'static str {
    if analyze {
        "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) "
    } else {
        "EXPLAIN (VERBOSE, FORMAT JSON) "
    }
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
}
