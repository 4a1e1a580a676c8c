//! `planck db`: the managed local PostgreSQL under `.planck/`.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::cli::db::DbCommand;
use crate::cluster::{self, Cluster, State};
use crate::error::Result;
use crate::output::{self, Log, Render};
use crate::settings::Settings;

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
            output::print(&Url(&ready.url), settings.format)?;
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
                workers.push((word, port, w.data_dir()));
            }
            let status = Status {
                cluster: &cluster,
                word,
                port,
                url,
                version,
                workers,
            };
            output::print(&status, settings.format)?;
        }
        DbCommand::Url { database } => {
            let ready = cluster.ready_with(None, &database, log, Log::info).await?;
            output::print(&Url(&ready.url), settings.format)?;
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

/// What `planck db status` prints: the server's state and where it lives,
/// and each Citus worker's.
struct Status<'a> {
    cluster: &'a Cluster,
    word: &'static str,
    port: Option<u16>,
    url: Option<String>,
    version: String,
    workers: Vec<(&'static str, Option<u16>, PathBuf)>,
}

impl Render for Status<'_> {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        let cluster = self.cluster;
        writeln!(w, "{}: {}", self.word, cluster.data_dir().display())?;
        if let Some(u) = &self.url {
            writeln!(w, "url: {u}")?;
        }
        writeln!(
            w,
            "postgres: {} ({})",
            self.version,
            cluster.bindir().display()
        )?;
        for (i, (state, port, data)) in self.workers.iter().enumerate() {
            write!(w, "citus worker {}: {state}", i + 1)?;
            if let Some(p) = port {
                write!(w, " on port {p}")?;
            }
            writeln!(w, " ({})", data.display())?;
        }
        Ok(())
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        let cluster = self.cluster;
        let mut v = serde_json::json!({
            "format_version": 1,
            "state": self.word,
            "port": self.port,
            "url": self.url,
            "data_dir": cluster.data_dir(),
            "run_as": cluster.run_as(),
            "server_version": self.version,
            "bindir": cluster.bindir(),
        });
        if !self.workers.is_empty() {
            v["citus_workers"] = self
                .workers
                .iter()
                .map(|(state, port, data)| {
                    serde_json::json!({ "state": state, "port": port, "data_dir": data })
                })
                .collect();
        }
        writeln!(w, "{v:#}")
    }

    /// The same lines as [`Status::table`].
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        self.table(w)
    }
}

/// A URL on stdout: the bare line, or `{"url": ...}` with --format json.
struct Url<'a>(&'a str);

impl Render for Url<'_> {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(w, "{}", self.0)
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        let v = serde_json::json!({ "format_version": 1, "url": self.0 });
        writeln!(w, "{v}")
    }

    /// The bare line, as [`Url::table`].
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        self.table(w)
    }
}
