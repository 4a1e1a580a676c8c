//! [`ExplainSettings`]: everything `planck explain` runs with, flags, file and
//! defaults already merged (by `settings::explain`, once), so the library
//! never sees raw flags or the whole `Settings`.

use std::path::PathBuf;

use super::rules::knob::CheckKnobs;
use crate::findings::CheckId;
use crate::findings::ignore::IgnoreRule;
use crate::tenancy::TenantOptions;

/// Defaults of the thresholds (planck.toml `[explain]` and flags override).
pub const DEFAULT_MIN_ROWS: u64 = 10_000;
/// Fewer rows than this in a table planck did not seed: a statement reading
/// it is not judged (`[explain] min_table_rows`, `--min-table-rows`).
pub const DEFAULT_MIN_TABLE_ROWS: u64 = 100;
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_JOBS: usize = 4;
/// Seconds the advice phase may take per run (`--advice-budget`).
pub const DEFAULT_ADVICE_BUDGET_S: f64 = 30.0;

/// The advice phase (see `explain::advice`): on unless `--no-advice`.
#[derive(Debug, Clone)]
pub struct AdviceSettings {
    pub enabled: bool,
    pub budget_s: f64,
    /// `--force`: build candidate indexes for real on a database planck
    /// does not manage (the build blocks writers to the table until the rollback).
    pub force: bool,
    /// `--write-advice FILE.sql`.
    pub write: Option<PathBuf>,
}

impl Default for AdviceSettings {
    fn default() -> AdviceSettings {
        AdviceSettings {
            enabled: true,
            budget_s: DEFAULT_ADVICE_BUDGET_S,
            force: false,
            write: None,
        }
    }
}

/// Where the statements come from.
#[derive(Debug, Clone, PartialEq)]
pub enum StatementSource {
    /// A queries file (absolute, or relative to the current directory).
    Queries(PathBuf),
    /// This database's pg_stat_statements.
    Stats,
}

#[derive(Debug, Clone)]
pub struct ExplainSettings {
    pub statements: StatementSource,
    /// `--as-tenant`: tenant mode only (an error without policies).
    pub tenant_only: bool,
    /// `--as-admin`: admin mode only.
    pub admin_only: bool,
    pub all_modes: bool,
    pub tenant: TenantOptions,
    pub min_rows: u64,
    /// A table (not seeded by planck) with fewer rows than this cannot show
    /// a production plan: statements reading it are not judged.
    pub min_table_rows: u64,
    /// `--allow-unseeded`: when no statement can be judged for its data,
    /// report them all as not judged instead of refusing (exit 2).
    pub allow_unseeded: bool,
    /// The checks' own knobs, `[explain.checks.<id>]` (see `rules::knob`).
    pub knobs: CheckKnobs,
    pub timeout_ms: u64,
    pub analyze: bool,
    /// The application's source, searched for partial-index literals (an existing directory).
    pub app_source: Option<PathBuf>,
    pub baseline: PathBuf,
    pub write_baseline: bool,
    pub jobs: usize,
    pub disabled: Vec<CheckId>,
    pub ignores: Vec<IgnoreRule>,
    /// Exit 1 when any statement was skipped.
    pub fail_on_skipped: bool,
    pub advice: AdviceSettings,
    /// Time allowed for measuring which identity sees the most rows
    /// (`--identity-budget`; zero: not measured).
    pub identity_budget: std::time::Duration,
    /// Production's planner settings, applied while planning.
    pub planner: PlannerOptions,
    /// `[explain] generic`: how findings only the generic plan shows count.
    pub generic: GenericPlans,
    /// What findings' file paths are written relative to (the git work tree
    /// of the project, see [`crate::findings::source`]); None: as given.
    pub source_root: Option<PathBuf>,
}

/// The planner settings every planning transaction applies with `SET LOCAL`:
/// `[explain] settings` in planck.toml, and `--settings-from URL`
/// (production's pg_settings, read-only). The tenant role's and the
/// database's `ALTER ROLE/DATABASE ... SET` entries are read by the engine.
#[derive(Debug, Clone, Default)]
pub struct PlannerOptions {
    /// `(name, value)`, in planck.toml's order.
    pub settings: Vec<(String, String)>,
    pub settings_from: Option<crate::db::ConnInfo>,
}

impl ExplainSettings {
    /// Defaults for a queries file: what `planck explain` does bare.
    pub fn new(queries: impl Into<PathBuf>, baseline: impl Into<PathBuf>) -> ExplainSettings {
        ExplainSettings {
            statements: StatementSource::Queries(queries.into()),
            tenant_only: false,
            admin_only: false,
            all_modes: false,
            tenant: TenantOptions::default(),
            min_rows: DEFAULT_MIN_ROWS,
            min_table_rows: DEFAULT_MIN_TABLE_ROWS,
            allow_unseeded: false,
            knobs: CheckKnobs::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            analyze: false,
            app_source: None,
            baseline: baseline.into(),
            write_baseline: false,
            jobs: DEFAULT_JOBS,
            disabled: Vec::new(),
            ignores: Vec::new(),
            fail_on_skipped: false,
            advice: AdviceSettings::default(),
            identity_budget: crate::tenancy::DEFAULT_IDENTITY_BUDGET,
            planner: PlannerOptions::default(),
            generic: GenericPlans::default(),
            source_root: None,
        }
    }

    /// Tenant mode wanted (when the database has policies, or `--as-tenant`).
    pub fn want_tenant(&self) -> bool {
        self.tenant_only || !self.admin_only
    }

    pub fn want_admin(&self) -> bool {
        self.admin_only || !self.tenant_only
    }
}

/// How a finding only the generic plan shows counts (`[explain] generic`,
/// issue 13 §1). A driver that binds values client-side (psycopg, most
/// Python, Ruby and PHP stacks, anything on the simple protocol) never runs
/// a generic plan; only a statement the application prepares does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenericPlans {
    /// As any other finding.
    Judge,
    /// Errors become warnings, and say so: the default without evidence of
    /// how the application sends the statement.
    #[default]
    Warn,
    /// Dropped.
    Ignore,
}

impl GenericPlans {
    pub fn parse(s: &str) -> Option<GenericPlans> {
        match s {
            "judge" => Some(GenericPlans::Judge),
            "warn" => Some(GenericPlans::Warn),
            "ignore" => Some(GenericPlans::Ignore),
            _ => None,
        }
    }
}
