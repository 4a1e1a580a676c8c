//! `planck report`: reads explain's JSON (and optionally replay's and a
//! previous explain run's), writes the review page and any of the machine
//! outputs asked for. Needs no database.

use crate::cli::report::ReportArgs;
use crate::error::{Error, Result, exit};
use crate::output::target::{self, Kind};
use crate::report::{self, Inputs, Output};
use crate::settings::Settings;
use crate::wire::diff;

/// What `-o` may name here.
const WRITES: [Kind; 5] = [
    Kind::Html,
    Kind::MARKDOWN,
    Kind::Junit,
    Kind::Sarif,
    Kind::Gitlab,
];

pub async fn run(args: ReportArgs, settings: &Settings) -> Result<i32> {
    // The shorthand flags are `-o KIND=PATH`s, resolved with the others.
    let targets = args.output.targets(args.files.flags());
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
