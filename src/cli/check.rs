//! `planck check`'s flags, as clap parses them; resolved with `[check]` of
//! `planck.toml` into `CheckSettings` by [`crate::settings::check`].

use std::path::PathBuf;

use clap::Args;

use super::output::{OutputArgs, ReviewFileArgs};

/// The prefix of the databases check creates (`planck_check_head`, `planck_check_base`).
pub const DEFAULT_PREFIX: &str = "planck_check";

#[derive(Debug, Clone, Default, Args)]
#[command(
    after_help = "Examples:
  planck check                               # migrate, seed, explain the checkout; gate on new errors
  planck check --base origin/main            # what this branch's migrations change, against the merge base
  planck check --base main --json check.json --keep
  planck check --replay --slo p95=50ms@4     # also a short replay; the gate fails when p95 at 4 clients is above 50 ms

Exit codes: 0 the gate passed, 1 it failed (new errors, regressions or a blocking migration, \
as [check] fail_on says), 2 usage or configuration error (not a git repository, unknown ref), \
3 database unreachable or refused (check needs CREATEDB).",
    mut_args(super::output::help(
        "A file to write; repeatable. KIND is json (the check result), markdown (the PR \
comment), junit, sarif (2.1.0, code scanning), gitlab (code quality) or html (the review)"
    )),
    mut_args(super::output::value_name("KIND=PATH"))
)]
pub struct CheckArgs {
    /// Compare against `git merge-base HEAD REF`: what this change does
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Keep the check databases afterwards (for a look with psql)
    #[arg(long)]
    pub keep: bool,
    /// Seed scale of the check databases [default: [check] scale, else 0.05 with a seed spec, 1 without]
    #[arg(long, allow_negative_numbers = true, value_name = "FACTOR")]
    pub scale: Option<f64>,
    /// Rows of a table nothing else sizes in the check databases [default: [check] rows, else [seed] rows, else 25000]
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
    /// Prefix of the databases check creates (`<prefix>_head`, `<prefix>_base`)
    #[arg(long, value_name = "NAME", default_value = DEFAULT_PREFIX)]
    pub name: String,
    /// What fails the gate, comma-separated [default: [check] fail_on, else errors]
    #[arg(long, value_name = "GATES", value_delimiter = ',')]
    pub fail_on: Vec<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// The same as `-o json=PATH`
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub files: ReviewFileArgs,
    /// The same as `-o html=PATH`
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Also replay the recorded workload briefly on the head database (and the base's) [default: [check] replay, else off]
    #[arg(long)]
    pub replay: bool,
    /// The replay's ladder, client counts comma-separated [default: [check] ladder, else 1,4,16]
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    pub ladder: Vec<u32>,
    /// Length of each replay step [default: [check] replay_duration, else 5s]
    #[arg(long, value_name = "TIME")]
    pub replay_duration: Option<String>,
    /// Latency objective of the replay, e.g. p95=300ms@4: the `slo` gate (implies --replay)
    #[arg(long, value_name = "SLO")]
    pub slo: Option<String>,
}
