//! `planck db`: the managed local PostgreSQL under `.planck/`.

use crate::cli::db::DbCommand;
use crate::cluster::{self, State};
use crate::error::Result;
use crate::output::{self, Log};
use crate::settings::Settings;
use crate::wire::db::{DbStatus, DbUrl, DbWorker, FORMAT_VERSION};

pub async fn run(command: DbCommand, settings: &Settings) -> Result<i32> {
    let cluster = settings.cluster()?;
    if let crate::db::Target::Url { source, .. } = &settings.target {
        settings.warn(&format!(
            "`planck db` manages the local server under .planck/; the database of {} is not used here",
            source.describe()
        ));
    }
    let log = settings.log();
    match command {
        DbCommand::Start {
            port,
            citus_workers,
        } => {
            // The flag wins over `[database] citus_workers` (see Settings::cluster).
            let cluster = match citus_workers {
                Some(n) => cluster.with_citus_workers(Some(n)),
                None => cluster,
            };
            if let Some(user) = cluster.run_as() {
                settings.debug(&format!(
                    "running as root: the server runs as the `{user}` OS user"
                ));
            }
            let ready = cluster
                .ready_with(port, cluster::DEFAULT_DATABASE, log, Log::info)
                .await?;
            if ready.was_running {
                settings.info(&format!(
                    "the managed PostgreSQL is already running on port {}",
                    ready.port
                ));
            }
            output::print(&url(&ready.url), settings.format)?;
        }
        DbCommand::Stop => {
            if cluster.blocking(|c| c.stop()).await? {
                settings.info("stopped the managed PostgreSQL");
            } else {
                settings.info("the managed PostgreSQL was not running");
            }
        }
        DbCommand::Status => {
            let state = cluster.blocking(|c| c.state()).await?;
            let (word, port) = match state {
                State::Absent => ("absent", None),
                State::Stopped => ("stopped", None),
                State::Running { port, .. } => ("running", Some(port)),
            };
            let url = port.map(|p| cluster.url(p, cluster::DEFAULT_DATABASE));
            let version = cluster::server_version(cluster.bindir())?;
            // A Citus coordinator's workers, each a server of its own.
            let mut workers = Vec::new();
            for w in cluster.citus_workers() {
                let state = w.blocking(|w| w.state()).await?;
                let (word, port) = match state {
                    State::Absent => ("absent", None),
                    State::Stopped => ("stopped", None),
                    State::Running { port, .. } => ("running", Some(port)),
                };
                workers.push(DbWorker {
                    state: word.to_string(),
                    port,
                    data_dir: w.data_dir(),
                });
            }
            let status = DbStatus {
                format_version: FORMAT_VERSION,
                state: word.to_string(),
                port,
                url,
                data_dir: cluster.data_dir(),
                run_as: cluster.run_as().map(str::to_string),
                server_version: version,
                bindir: cluster.bindir().to_path_buf(),
                citus_workers: workers,
            };
            output::print(&status, settings.format)?;
        }
        DbCommand::Url { database } => {
            let ready = cluster.ready_with(None, &database, log, Log::info).await?;
            output::print(&url(&ready.url), settings.format)?;
        }
        DbCommand::Destroy { wait } => {
            let dir = cluster.dir().to_path_buf();
            let wait = std::time::Duration::from_secs(wait);
            if cluster.blocking(move |c| c.destroy(wait, log)).await? {
                settings.info(&format!("deleted {}", dir.display()));
            } else {
                settings.info(&format!("nothing to delete at {}", dir.display()));
            }
        }
    }
    Ok(0)
}

/// A URL on stdout: the bare line, or `{"format_version":1,"url":...}`.
fn url(url: &str) -> DbUrl {
    DbUrl {
        format_version: FORMAT_VERSION,
        url: url.to_string(),
    }
}
