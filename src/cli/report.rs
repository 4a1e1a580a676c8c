//! `planck report`'s flags.

use std::path::PathBuf;

use clap::Args;

use super::output::{OutputArgs, ReviewFileArgs};

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Examples:
  planck explain --format json -o e.json; planck report --explain e.json -o review.html
  planck report --explain e.json --replay r.json --previous old-e.json -o review.html --markdown review.md
  planck report --explain e.json -o junit=junit.xml -o sarif=planck.sarif -o gitlab=gl-code-quality.json

Exit codes: 0 written, 2 unreadable input (another format_version, truncated JSON) or unwritable output.",
    mut_args(super::output::help(
        "A file to write; repeatable. KIND is html (the self-contained review, a bare PATH's), \
markdown (its twin, fits a PR comment), junit (a test case per statement and mode), \
sarif (2.1.0, code scanning) or gitlab (code-quality JSON)"
    ))
)]
pub struct ReportArgs {
    /// explain's JSON (`planck explain --format json`)
    #[arg(long, value_name = "PATH")]
    pub explain: PathBuf,
    /// replay's JSON (`planck replay --format json`); without it the report says it has no replay
    #[arg(long, value_name = "PATH")]
    pub replay: Option<PathBuf>,
    /// A previous explain JSON: the report gains "what changed" since it
    #[arg(long, value_name = "PATH")]
    pub previous: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub files: ReviewFileArgs,
}
