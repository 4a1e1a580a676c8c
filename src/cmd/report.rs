//! `planck report`: reads explain's JSON (and optionally replay's and a
//! previous explain run's), writes the review page and any of the machine
//! outputs asked for. Needs no database.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result, exit};
use crate::output::target::{self, Kind, Target};
use crate::report::{self, Inputs, Output};
use crate::settings::Settings;
use crate::wire::diff;

/// What `-o` may name here.
const WRITES: [Kind; 5] = [
    Kind::Html,
    Kind::Markdown,
    Kind::Junit,
    Kind::Sarif,
    Kind::Gitlab,
];

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

pub async fn run(args: ReportArgs, settings: &Settings) -> Result<i32> {
    // The shorthand flags are `-o KIND=PATH`s, resolved with the others.
    let mut targets = args.output.clone();
    for (path, kind) in [
        (&args.markdown, Kind::Markdown),
        (&args.junit, Kind::Junit),
        (&args.sarif, Kind::Sarif),
        (&args.gitlab, Kind::Gitlab),
    ] {
        if let Some(path) = path {
            targets.push(Target {
                kind: Some(kind),
                path: path.clone(),
            });
        }
    }
    if targets.is_empty() {
        return Err(Error::Usage {
            message: "planck report has nothing to write".into(),
            hint: Some(
                "name an output: -o review.html, -o markdown=review.md, junit=, sarif= or gitlab="
                    .into(),
            ),
        });
    }
    let outputs = target::resolve("report", &targets, Some(Kind::Html), &WRITES)?;
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
    for (kind, path) in &outputs {
        let output = Output::of(*kind)
            .ok_or_else(|| Error::internal(format!("report has no --output {}", kind.name())))?;
        report::write(path, output, &inputs)?;
        settings.info(&format!("wrote {}", path.display()));
    }
    Ok(exit::OK)
}
