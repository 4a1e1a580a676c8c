//! `planck report`'s flags.

use std::path::PathBuf;

use clap::Args;

use crate::output::target::Target;

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  planck explain --format json -o e.json; planck report --explain e.json -o review.html
  planck report --explain e.json --replay r.json --previous old-e.json -o review.html --markdown review.md
  planck report --explain e.json -o junit=junit.xml -o sarif=planck.sarif -o gitlab=gl-code-quality.json

Exit codes: 0 written, 2 unreadable input (another format_version, truncated JSON) or unwritable output.")]
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
    /// A file to write; repeatable. KIND is html (the self-contained review, a bare PATH's),
    /// markdown (its twin, fits a PR comment), junit (a test case per statement and mode),
    /// sarif (2.1.0, code scanning) or gitlab (code-quality JSON)
    #[arg(short, long, value_name = "[KIND=]PATH")]
    pub output: Vec<Target>,
    /// The same as `-o markdown=PATH`
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// The same as `-o junit=PATH`
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// The same as `-o sarif=PATH`
    #[arg(long, value_name = "PATH")]
    pub sarif: Option<PathBuf>,
    /// The same as `-o gitlab=PATH`
    #[arg(long, value_name = "PATH")]
    pub gitlab: Option<PathBuf>,
}
