//! `planck migrate`: applies the project's migrations (glue: the work is in
//! [`crate::migrate`], the summary in [`crate::migrate::report`]).

use clap::Args;

use crate::db::{self, ConnInfo};
use crate::error::{Error, Result};
use crate::migrate;
use crate::output;
use crate::settings::Settings;

#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    /// Drop and recreate the database first (only on planck's managed cluster, unless --force)
    #[arg(long)]
    pub fresh: bool,
    /// Allow --fresh on a database planck does not manage
    #[arg(long, requires = "fresh")]
    pub force: bool,
}

pub async fn run(args: MigrateArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    crate::bookkeeping::warn_pending_on(&conn, settings.log()).await;
    let dir = settings.migrations_dir();
    let outcome = migrate_database(&conn, &dir, args.fresh, args.force, settings).await?;
    let mut out = Vec::new();
    migrate::report::render(&mut out, &outcome, &conn.display(), settings.format)
        .map_err(|e| Error::Other(e.into()))?;
    output::emit(&out).map_err(|e| Error::Other(e.into()))?;
    Ok(0)
}

/// Applies `dir`'s migrations to `conn`, recreating the database first when `fresh`.
pub async fn migrate_database(
    conn: &ConnInfo,
    dir: &std::path::Path,
    fresh: bool,
    force: bool,
    settings: &Settings,
) -> Result<migrate::Outcome> {
    let migrations = migrate::discover(dir).map_err(|e| match e {
        Error::ReadFile { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::usage_hint(
                format!("no migrations folder at {}", path.display()),
                "put your schema in migrations/*.sql, or set [paths] migrations in planck.toml",
            )
        }
        other => other,
    })?;
    if fresh {
        if !conn.managed && !force {
            return Err(Error::usage_hint(
                format!(
                    "refusing to drop {}: it is not planck's managed database",
                    conn.display()
                ),
                "add --force if you really mean to drop and recreate it",
            ));
        }
        recreate_database(conn, settings).await?;
    }
    let mut client = conn.connect().await?;
    migrate::apply(&mut client, &migrations, settings.log()).await
}

/// Drops and recreates the connection's database.
pub async fn recreate_database(conn: &ConnInfo, settings: &Settings) -> Result<()> {
    let name = conn.dbname();
    settings.info(&format!("recreating database {name}"));
    let admin = conn.with_database("postgres").connect().await?;
    let q = db::quote_ident(&name);
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {q} WITH (FORCE)"))
        .await
        .map_err(|e| Error::db(format!("dropping database {name}"), e))?;
    admin
        .batch_execute(&format!("CREATE DATABASE {q}"))
        .await
        .map_err(|e| Error::db(format!("creating database {name}"), e))?;
    Ok(())
}
