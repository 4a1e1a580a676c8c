//! `planck record`: runs a test command and captures, from
//! pg_stat_statements, the statements it sent, into the queries file.
//! Glue only: settings resolved in [`crate::settings::record`], the work in
//! [`crate::record`], its wire form in [`crate::record::report`].

use crate::cli::record::RecordArgs;
use crate::error::{Result, exit};
use crate::output;
use crate::record;
use crate::settings::Settings;
use crate::settings::record::RecordSettings;

pub async fn run(args: RecordArgs, settings: &Settings) -> Result<i32> {
    let resolved = RecordSettings::resolve(&args, settings)?;
    let conn = settings.conn().await?;
    let outcome = record::record(&conn, &resolved, settings.log()).await?;
    for w in &outcome.warnings {
        settings.warn(w);
    }
    let report = record::report::to_wire(&outcome, &settings.project_dir);
    let printed = crate::render::Recorded {
        report: &report,
        list_all: outcome.list_all,
    };
    output::print(&printed, settings.format)?;
    // A failing or killed test run is recorded, and reported with exit 1;
    // so is a run that captured nothing (issue 12, 4), so CI notices.
    Ok(match outcome.exit {
        Some(e) if !e.success() => exit::FINDINGS,
        Some(_) if outcome.statements.is_empty() => exit::FINDINGS,
        _ => exit::OK,
    })
}
