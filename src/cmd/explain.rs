//! `planck explain`: resolves its settings, calls [`crate::explain::run`],
//! renders the report (to stdout, or whole to each file of `--output`) and
//! returns the exit code (0 no new errors, 1 error findings the baseline does
//! not hold, or a skipped statement with `--fail-on-skipped`; the same with
//! `--output`, the files written; 2 when one cannot be).

use std::path::PathBuf;

use crate::cli::explain::ExplainArgs;
use crate::db::ConnInfo;
use crate::error::Result;
use crate::explain::render::Printed;
use crate::output::Format;
use crate::output::target::{self, Kind};
use crate::report::Output;
use crate::settings::Settings;
use crate::settings::explain::{ExplainSettings, StatementSource};

/// What `--output` may name besides the formats explain's result is
/// written in ([`Printed`]'s): the review's and CI's files.
const FILES: [Kind; 4] = [Kind::Html, Kind::Junit, Kind::Sarif, Kind::Gitlab];

pub async fn run(args: ExplainArgs, settings: &Settings) -> Result<i32> {
    let explain = ExplainSettings::resolve(&args, settings)?;
    // Inputs first: a missing or broken queries file must not start (or
    // create) the managed cluster.
    if let StatementSource::Queries(path) = &explain.statements {
        crate::queries::QueryFile::load_required(path)?;
    }
    // An --output that cannot be written fails before the work, not after.
    let writes: Vec<Kind> = <Printed as crate::output::Render>::FORMATS
        .iter()
        .map(|&f| Kind::from(f))
        .chain(FILES)
        .collect();
    let outputs = target::resolve(
        "explain",
        &args.output.output,
        Some(settings.format.into()),
        &writes,
    )?;
    let conn = settings.conn().await?;
    render(&conn, &explain, settings, &outputs).await
}

async fn render(
    conn: &ConnInfo,
    explain: &ExplainSettings,
    settings: &Settings,
    outputs: &[(Kind, PathBuf)],
) -> Result<i32> {
    // Plans on a database whose foreign keys an interrupted seed left
    // dropped would not be the application's: say so first.
    crate::bookkeeping::warn_pending_on(conn, settings.log()).await;
    let report = crate::workflow::explain::run_located(
        conn,
        explain,
        settings.log(),
        &settings.migrations_dir(),
        &settings.project_dir,
    )
    .await?;
    // The JSON carries what a report needs beyond the findings: the server,
    // its planner settings, table sizes and index use. Read only for it (the
    // JSON, or a review or CI file, is written).
    let needs_json = if outputs.is_empty() {
        settings.format == Format::Json
    } else {
        outputs
            .iter()
            .any(|(k, _)| k.format().is_none_or(|f| f == Format::Json))
    };
    let json = if needs_json {
        Some(crate::explain::environment::json_with_environment(conn, &report).await?)
    } else {
        None
    };
    let printed = Printed {
        report: &report,
        json,
    };
    if outputs.is_empty() {
        crate::output::print(&printed, settings.format)?;
    }
    for (kind, path) in outputs {
        match (kind.format(), Output::of(*kind), &printed.json) {
            (Some(format), _, _) => crate::output::deliver(&printed, format, Some(path))?,
            (None, Some(output), Some(json)) => {
                let inputs = crate::report::Inputs::new(
                    json.clone(),
                    None,
                    Some(crate::findings::source::root_of(&settings.project_dir)),
                );
                crate::output::write_file(path, &output.bytes(&inputs)?)?;
            }
            _ => {
                return Err(crate::error::Error::internal(format!(
                    "explain has no renderer for --output {}",
                    kind.name()
                )));
            }
        }
    }
    Ok(report.exit_code(explain.fail_on_skipped))
}
