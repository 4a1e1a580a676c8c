//! `planck record`: runs a test command and captures, from
//! pg_stat_statements, the statements it sent, into the queries file.
//! Glue only: settings resolved in [`crate::settings::record`], the work in
//! [`crate::record`], the summary in [`crate::record::report`].

use crate::db::ConnInfo;
use crate::error::{Error, Result, exit};
use crate::output;
use crate::record::{self, Outcome};
use crate::settings::Settings;
use crate::settings::record::RecordSettings;

pub use crate::settings::record::RecordArgs;

/// The bundled example's test run: plays its API and jobs (see the script).
pub fn example_app_command() -> Vec<String> {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "planck".to_string());
    vec![exe, "example-app".to_string()]
}

pub async fn run(args: RecordArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    run_on(&conn, args, settings).await
}

/// `planck record` against a given connection: records, prints the
/// summary, returns the exit code.
pub async fn run_on(conn: &ConnInfo, args: RecordArgs, settings: &Settings) -> Result<i32> {
    let outcome = record_on(conn, args, settings).await?;
    for w in &outcome.warnings {
        settings.warn(w);
    }
    let mut out = Vec::new();
    record::report::render(&mut out, &outcome, settings.format, &settings.project_dir)
        .map_err(|e| Error::Other(e.into()))?;
    output::emit(&out).map_err(|e| Error::Other(e.into()))?;
    // A failing or killed test run is recorded, and reported with exit 1.
    Ok(match outcome.exit {
        Some(e) if !e.success() => exit::FINDINGS,
        _ => exit::OK,
    })
}

/// Records without printing anything but progress, for callers that render
/// the outcome themselves (`planck demo`).
pub async fn record_on(conn: &ConnInfo, args: RecordArgs, settings: &Settings) -> Result<Outcome> {
    let resolved = RecordSettings::resolve(&args, settings)?;
    record::record(conn, &resolved, settings.log()).await
}
