//! `planck explain`'s flags, as clap parses them; resolved with
//! `planck.toml` into `ExplainSettings` by [`crate::settings::explain`].

use std::path::PathBuf;

use clap::Args;

use crate::findings::CheckId;

/// `planck explain --help`'s epilogue: the checks (every declared one, so a
/// new check shows without editing this), examples and exit codes.
fn explain_after_help() -> String {
    let checks: Vec<&str> = CheckId::ALL.iter().map(|c| c.as_str()).collect();
    format!(
        "Checks (each explained in docs/checks.md): {}.\n\n\
Examples:\n  \
planck explain                           # every recorded statement, as tenant and as admin\n  \
planck explain --analyze                 # EXPLAIN ANALYZE the custom plans, always rolled back\n  \
planck explain --write-baseline          # accept today's findings: later runs fail on new ones\n  \
planck explain --format json -o e.json   # the JSON `planck report` reads, written whole\n\n\
Exit codes: 0 no new errors, 1 error findings not in the baseline (or, with \
--fail-on-skipped, a skipped or not judged statement), 2 usage or configuration error, or \
no statement can be judged (the tables they read are empty or nearly: run `planck seed`), \
3 database unreachable.",
        checks.join(", ")
    )
}

#[derive(Debug, Clone, Default, Args)]
#[command(
    after_help = explain_after_help(),
    mut_args(super::output::help(
        "Write a result file instead of stdout, whole or not at all; repeatable. KIND is table, \
json, markdown (those are --format's) or html, junit, sarif, gitlab (the review and CI \
files `planck report` writes); a bare PATH is the result in --format"
    )),
)]
pub struct ExplainArgs {
    /// Queries file [default: queries/recorded.toml of the project]
    #[arg(long, value_name = "PATH", conflicts_with = "from_stats")]
    pub queries: Option<PathBuf>,

    /// Read the statements from pg_stat_statements instead of a queries file
    #[arg(long)]
    pub from_stats: bool,

    /// Plan as the application role under row-level security only
    #[arg(long)]
    pub as_tenant: bool,

    /// Plan as the owner/admin role (no row-level security) only
    #[arg(long)]
    pub as_admin: bool,

    /// Judge every statement in every mode (default: by the role that recorded it)
    #[arg(long)]
    pub all_modes: bool,

    /// The application role [default: the role that recorded the statements]
    #[arg(long, value_name = "ROLE")]
    pub tenant_role: Option<String>,

    /// The setting the policies read [default: from current_setting() in pg_policies]
    #[arg(long, value_name = "NAME")]
    pub tenant_setting: Option<String>,

    /// The tenant to plan as [default: the heaviest]
    #[arg(long, value_name = "ID")]
    pub tenant_id: Option<String>,

    /// Tables with fewer rows are not flagged for scans [default: 10000]
    #[arg(long, value_name = "N")]
    pub min_rows: Option<u64>,

    /// A statement reading a table with fewer rows (one planck did not seed)
    /// is not judged: such data cannot show production's plan [default: 100]
    #[arg(long, value_name = "N")]
    pub min_table_rows: Option<u64>,

    /// When no statement can be judged (every table they read is empty or
    /// nearly), report them as not judged and exit 0 instead of exit 2
    #[arg(long)]
    pub allow_unseeded: bool,

    /// EXPLAIN ANALYZE the custom plans (inside a transaction always rolled back)
    #[arg(long)]
    pub analyze: bool,

    /// Planning timeout per statement [default: 5000]
    #[arg(long, value_name = "MS")]
    pub statement_timeout_ms: Option<u64>,

    /// Application source to search for the literals partial indexes need
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,

    /// Baseline file [default: queries/baseline.toml of the project]
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,

    /// Write the current error and warning findings to the baseline, then exit 0
    #[arg(long)]
    pub write_baseline: bool,

    /// Connections planning in parallel [default: 4]
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Exit 1 when any statement was skipped (timed out, stale, refused)
    #[arg(long)]
    pub fail_on_skipped: bool,

    /// Write one CREATE INDEX CONCURRENTLY per verified index to FILE (for `planck migrate`)
    #[arg(long, value_name = "FILE", conflicts_with = "no_advice")]
    pub write_advice: Option<PathBuf>,

    /// Seconds the index advice may take in all [default: 30]
    #[arg(long, value_name = "SECONDS")]
    pub advice_budget: Option<f64>,

    /// Propose no indexes (skips the advice phase)
    #[arg(long)]
    pub no_advice: bool,

    /// Build candidate indexes for real on a database planck does not manage
    /// (inside the rolled-back transaction; it blocks writers to the table meanwhile)
    #[arg(long)]
    pub force: bool,

    /// Seconds for measuring which identity sees the most rows under RLS [default: 10]
    #[arg(long, value_name = "SECS")]
    pub identity_budget: Option<f64>,
    /// Plan under production's planner settings: read its pg_settings (read-only)
    #[arg(long, value_name = "URL")]
    pub settings_from: Option<String>,

    #[command(flatten)]
    pub output: super::output::OutputArgs,
}

impl ExplainArgs {
    /// Both modes, the project's queries file: what `planck explain` does bare.
    pub fn new() -> ExplainArgs {
        ExplainArgs::default()
    }

    /// The same, on another queries file (for `planck demo`).
    pub fn with_queries(path: impl Into<PathBuf>) -> ExplainArgs {
        ExplainArgs {
            queries: Some(path.into()),
            ..Default::default()
        }
    }
}
