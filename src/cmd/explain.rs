//! `planck explain`: resolves its settings, calls [`crate::explain::run`],
//! renders the report (to stdout, or whole to the file of `--output`) and
//! returns the exit code (0 no new errors, 1 error findings the baseline does
//! not hold, or a skipped statement with `--fail-on-skipped`; the same with
//! `--output`, the file written; 2 when it cannot be).

use std::path::Path;

use crate::db::ConnInfo;
use crate::error::Result;
use crate::explain::render::Printed;
use crate::output::Format;
use crate::settings::Settings;
pub use crate::settings::explain::ExplainArgs;
use crate::settings::explain::{ExplainSettings, StatementSource};

pub async fn run(args: ExplainArgs, settings: &Settings) -> Result<i32> {
    let explain = ExplainSettings::resolve(&args, settings)?;
    // Inputs first: a missing or broken queries file must not start (or
    // create) the managed cluster.
    if let StatementSource::Queries(path) = &explain.statements {
        crate::queries::QueryFile::load_required(path)?;
    }
    // An --output that cannot be written fails before the work, not after.
    if let Some(path) = &args.output {
        crate::output::check_writable(path)?;
    }
    let conn = settings.conn().await?;
    render(&conn, &explain, settings, args.output.as_deref()).await
}

async fn render(
    conn: &ConnInfo,
    explain: &ExplainSettings,
    settings: &Settings,
    output: Option<&Path>,
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
    // its planner settings, table sizes and index use. Read only for it.
    let json = if settings.format == Format::Json {
        Some(crate::explain::environment::json_with_environment(conn, &report).await?)
    } else {
        None
    };
    let printed = Printed {
        report: &report,
        json,
    };
    crate::output::deliver(&printed, settings.format, output)?;
    Ok(report.exit_code(explain.fail_on_skipped))
}
