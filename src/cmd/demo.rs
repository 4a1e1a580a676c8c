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
    let client = conn.connect().await?;
    let rows = client
        .query(
            "SELECT c.relname, c.relrowsecurity
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'planck_migrations'
              ORDER BY 1",
            &[],
        )
        .await
        .map_err(|e| Error::db("listing the demo's tables", e))?;
    let mut table = crate::output::table(&["table", "row-level security"]);
    for r in &rows {
        let rls: bool = r.get(1);
        table.add_row(vec![
            r.get::<_, String>(0),
            if rls { "on" } else { "off" }.to_string(),
        ]);
    }
    crate::output::emit(format!("{table}\n").as_bytes()).map_err(|e| Error::Other(e.into()))?;
    settings.info(&format!("next: `psql {}` to look around", conn.display()));
    Ok(0)
}
