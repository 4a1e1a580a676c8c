//! `planck demo`: the whole pipeline on the bundled example, against the
//! managed cluster (or the configured database), in a database of its own.

use std::path::PathBuf;

use clap::Args;

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
/// its test suite would (see [`crate::example_app`]).
pub async fn example_app(args: ExampleAppArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    let summary = crate::example_app::play(&conn.url, args.app_url.as_deref())
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

pub async fn run(args: DemoArgs, settings: &Settings) -> Result<i32> {
    let base = settings.conn().await?;
    let conn = base.with_database(&args.database);
    let migrations = bundled_dir().join("migrations");
    if !migrations.is_dir() {
        return Err(Error::usage_hint(
            format!(
                "the bundled example is missing: {} does not exist",
                migrations.display()
            ),
            "run the demo from a checkout of planck's repository",
        ));
    }
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
