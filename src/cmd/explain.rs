//! `planck explain`: resolves its settings, calls [`crate::explain::run`],
//! renders the report and returns the exit code (0 no new errors, 1 error
//! findings the baseline does not hold, or a skipped statement with
//! `--fail-on-skipped`).

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
    let conn = settings.conn().await?;
    render(&conn, &explain, settings).await
}

async fn render(conn: &ConnInfo, explain: &ExplainSettings, settings: &Settings) -> Result<i32> {
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
    crate::output::print(&printed, settings.format)?;
    Ok(report.exit_code(explain.fail_on_skipped))
}
