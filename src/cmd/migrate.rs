//! `planck migrate`: applies the project's migrations (glue: the work is in
//! [`crate::migrate`], its wire form in [`crate::migrate::report`]).

use crate::cli::migrate::MigrateArgs;
use crate::error::Result;
use crate::migrate;
use crate::output;
use crate::settings::Settings;

pub async fn run(args: MigrateArgs, settings: &Settings) -> Result<i32> {
    // Inputs first: a missing or unreadable folder must not start (or
    // create) the managed cluster.
    let dir = settings.migrations_dir();
    migrate::discover_project(&dir)?;
    let conn = settings.conn().await?;
    crate::bookkeeping::warn_pending_on(&conn, settings.log()).await;
    let outcome = migrate::run(&conn, &dir, args.fresh, args.force, settings.log()).await?;
    let report = migrate::report::to_wire(&outcome, &conn.display());
    output::print(&report, settings.format)?;
    Ok(0)
}
