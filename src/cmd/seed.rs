//! `planck seed`: fills the database with a large, skewed, deterministic dataset.
//!
//! Glue only: resolves [`SeedSettings`] (flags, `[seed]` of planck.toml and
//! defaults, merged once in `settings::seed`), connects, runs [`crate::seed::run`]
//! and renders its summary to stdout. A stop signal (SIGINT, SIGTERM, SIGHUP)
//! exits with 128 + its number.
#![allow(clippy::result_large_err)] // see src/seed/mod.rs

use crate::error::Result;
use crate::seed;
use crate::settings::Settings;
use crate::settings::seed::SeedSettings;

/// `planck seed`'s flags (defined with the other commands' in `cli::seed`).
pub use crate::cli::seed::SeedArgs;

/// Runs `planck seed` on the configured database.
pub async fn run(args: SeedArgs, settings: &Settings) -> Result<i32> {
    run_on(args, None, settings).await
}

/// [`run`] against a given database instead of the configured one (`planck
/// demo` seeds its own database): `run_on(SeedArgs::for_spec(path, 0.1), Some(&conn), settings)`.
/// Library callers use [`crate::seed::run`] with [`SeedSettings::resolve`]'s options.
pub async fn run_on(
    args: SeedArgs,
    conn: Option<&crate::db::ConnInfo>,
    settings: &Settings,
) -> Result<i32> {
    // Every flag is checked before anything touches a database.
    let mut s = SeedSettings::resolve(&args, settings)?;
    // `--stats FILE`: the file made a spec, the spec resolved above laid over it.
    if let Some(path) = &args.stats {
        let path = settings.cwd.join(path);
        let made = crate::settings::seed_stats::spec(
            &path,
            s.options.spec.as_ref(),
            args.exact_tenants,
            settings.log(),
        )?;
        s.options.spec = Some(made.0);
        made.1.iter().for_each(|line| settings.log().info(line));
    }
    let conn = match conn {
        Some(c) => c.clone(),
        None => settings.conn().await?,
    };
    match seed::run(&conn, &s.options, settings.log()).await {
        Ok(mut summary) => {
            // `--stats FILE`: the summary names it and what it could not follow.
            summary.set_stats(s.options.spec.as_ref().and_then(|x| x.made_from.as_ref()));
            summary.print(s.format)?;
            // A partial seed (issue 30 point 4): every other table is seeded,
            // the summary says which were not and why.
            Ok(if summary.partial() { 1 } else { 0 })
        }
        Err(e) => Err(e),
    }
}
