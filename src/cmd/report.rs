//! `planck report`: reads explain's JSON (and optionally replay's and a
//! previous explain run's), writes the review page and any of the machine
//! outputs asked for. Needs no database.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result, exit};
use crate::report::{self, Inputs, Output};
use crate::settings::Settings;
use crate::wire::diff;

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  planck explain --format json -o e.json; planck report --explain e.json -o review.html
  planck report --explain e.json --replay r.json --previous old-e.json -o review.html --markdown review.md
  planck report --explain e.json --junit junit.xml --sarif planck.sarif --gitlab gl-code-quality.json

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
    /// The self-contained HTML review
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Its Markdown twin (fits a PR comment)
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// JUnit XML: a test case per statement and mode
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// SARIF 2.1.0 for code scanning
    #[arg(long, value_name = "PATH")]
    pub sarif: Option<PathBuf>,
    /// GitLab's code-quality JSON
    #[arg(long, value_name = "PATH")]
    pub gitlab: Option<PathBuf>,
}

pub async fn run(args: ReportArgs, settings: &Settings) -> Result<i32> {
    let outputs = [
        (&args.output, Output::Html),
        (&args.markdown, Output::Markdown),
        (&args.junit, Output::Junit),
        (&args.sarif, Output::Sarif),
        (&args.gitlab, Output::Gitlab),
    ];
    if outputs.iter().all(|(p, _)| p.is_none()) {
        return Err(Error::Usage {
            message: "planck report has nothing to write".into(),
            hint: Some(
                "name an output: -o review.html, --markdown, --junit, --sarif or --gitlab".into(),
            ),
        });
    }
    let explain = report::read_explain(&args.explain)?;
    let replay = args
        .replay
        .as_deref()
        .map(report::read_replay)
        .transpose()?;
    if replay.is_none() {
        settings.info("no --replay given: the report has no replay section");
    }
    let previous = args
        .previous
        .as_deref()
        .map(report::read_explain)
        .transpose()?;
    let inputs = Inputs {
        diff: previous
            .as_ref()
            .map(|p| diff::diff(p, &explain, diff::DEFAULT_COST_NOISE)),
        base_label: args.previous.as_ref().map(|p| p.display().to_string()),
        explain,
        replay,
        source_root: Some(crate::findings::source::root_of(&settings.project_dir)),
        gate: None,
        lost_indexes: Vec::new(),
    };
    for (path, output) in outputs {
        if let Some(path) = path {
            report::write(path, output, &inputs)?;
            settings.info(&format!("wrote {}", path.display()));
        }
    }
    Ok(exit::OK)
}
