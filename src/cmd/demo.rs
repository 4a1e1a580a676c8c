//! `planck demo`: the whole pipeline on the bundled example, against the
//! managed cluster (or the configured database), in a database of its own.

use std::path::PathBuf;

use clap::Args;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::settings::Settings;

/// The bundled example ships with the source: migrations/, seeds/, queries/.
pub fn bundled_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Arguments of the hidden `planck example-app`.
#[derive(Debug, Clone, Default, Args)]
pub struct ExampleAppArgs {
    /// URL the API part connects with [default: the database URL with user and password app_user]
    #[arg(long, env = "APP_DATABASE_URL", value_name = "URL")]
    pub app_url: Option<String>,
}

/// Plays the bundled example's API and jobs against the target database, as
/// its test suite would (see [`crate::demo::app`]).
pub async fn example_app(args: ExampleAppArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    let summary = crate::demo::app::play(&conn.url, args.app_url.as_deref())
        .await
        .map_err(|e| {
            Error::Other(anyhow::anyhow!(
                "the example app failed against {}: {e}",
                conn.display()
            ))
        })?;
    settings.info(&summary);
    Ok(0)
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Database the demo (re)creates and works in
    #[arg(long, default_value = "planck_demo")]
    pub database: String,
    /// Size of the dataset, as a fraction of the bundled spec (1 = the 1.5 GB of the field report)
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub scale: f64,
    /// Drop and recreate --database even on a server planck does not manage
    #[arg(long)]
    pub force: bool,
}

/// The example app as the demo runs it: quiet when the demo is.
fn example_app_command(settings: &Settings) -> Vec<String> {
    let mut command = super::record::example_app_command();
    if settings.quiet {
        command.push("--quiet".to_string());
    }
    command
}

/// Where the demo keeps its files: `.planck/demo/` of the project.
fn demo_dir(settings: &Settings) -> PathBuf {
    settings.project_dir.join(".planck").join("demo")
}

/// Every flag is checked before anything is dropped or written.
fn validate(args: &DemoArgs) -> Result<()> {
    if !args.scale.is_finite() || args.scale <= 0.0 {
        return Err(Error::usage_hint(
            format!(
                "invalid --scale {}: it must be a number above 0",
                args.scale
            ),
            "--scale 0.1 loads about 150 MB in a few seconds; 1 is the field report's 1.5 GB",
        ));
    }
    if args.database.is_empty() {
        return Err(Error::usage("--database must name a database"));
    }
    Ok(())
}

/// On a server planck does not manage, the demo drops --database only when it
/// does not exist yet or with --force, and only once the server is known to
/// have what the demo needs (pg_stat_statements preloaded).
async fn guard_database(base: &ConnInfo, args: &DemoArgs) -> Result<()> {
    if base.managed {
        return Ok(());
    }
    let client = base.connect().await?;
    let libs: String = client
        .query_one("SELECT current_setting('shared_preload_libraries')", &[])
        .await
        .map_err(|e| Error::db("reading shared_preload_libraries", e))?
        .get(0);
    if !crate::stats::capture::preloads_pgss(&libs) {
        return Err(Error::NotPreloaded { current: libs });
    }
    let exists = client
        .query_opt(
            "SELECT 1 FROM pg_database WHERE datname = $1",
            &[&args.database],
        )
        .await
        .map_err(|e| Error::db("looking up the demo database", e))?
        .is_some();
    if exists && !args.force {
        return Err(Error::usage_hint(
            format!(
                "refusing to drop database {} of {}: it exists and is not on planck's managed cluster",
                args.database,
                base.display()
            ),
            "pick another name with --database, or add --force if it really is a throwaway",
        ));
    }
    Ok(())
}

pub async fn run(args: DemoArgs, settings: &Settings) -> Result<i32> {
    validate(&args)?;
    let base = settings.conn().await?;
    guard_database(&base, &args).await?;
    let conn = base.with_database(&args.database);
    let example = crate::demo::extract(&demo_dir(settings).join("example"))?;
    let migrations = crate::demo::migrations_dir(&example);
    if !conn.managed {
        settings.info(&format!(
            "the demo works in database {} of {}",
            args.database,
            base.display()
        ));
    }
    // The demo database is the demo's own: always rebuilt from scratch.
    let outcome =
        super::migrate::migrate_database(&conn, &migrations, true, true, settings).await?;
    settings.info(&format!(
        "migrated the bundled example: {} migrations into {}",
        outcome.applied.len(),
        conn.display()
    ));
    // Step 2: record what the example app's test run sends, into a queries
    // file of the demo's own (the committed queries/recorded.toml stays as is).
    let queries = demo_dir(settings).join("recorded.toml");
    let _ = std::fs::remove_file(&queries);
    let recorded = super::record::record_on(
        &conn,
        super::record::RecordArgs::around(example_app_command(settings)).output(&queries),
        settings,
    )
    .await?;
    if let Some(status) = recorded.exit
        && !status.success()
    {
        return Err(Error::Other(anyhow::anyhow!(
            "the example app {}; see its output above",
            status.describe()
        )));
    }
    settings.info(&format!(
        "recorded {} statements of the example app into {}",
        recorded.statements.len(),
        queries.display()
    ));
    // Step 3: seed the bundled spec (the example app's fixtures make way).
    let code = super::seed::run_on(
        super::seed::SeedArgs::bundled(args.scale),
        Some(&conn),
        settings,
    )
    .await?;
    if code != 0 {
        return Ok(code);
    }
    // Step 4: plan every recorded statement as tenant and as admin.
    let mut explain_args = super::explain::ExplainArgs::with_queries(&queries);
    explain_args.baseline = Some(demo_dir(settings).join("baseline.toml"));
    let code = super::explain::run_on(&conn, explain_args, settings).await?;
    settings.info(&format!(
        "{} (the bundled example has these on purpose: in your project, exit code 1 fails CI)",
        if code == crate::error::exit::FINDINGS {
            "explain found problems"
        } else {
            "explain found nothing to fail on"
        }
    ));
    settings.info(&format!("next: `psql {}` to look around", conn.display()));
    Ok(0)
}
