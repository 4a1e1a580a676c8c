//! Citus on the managed cluster: the project's server becomes a coordinator,
//! with worker servers beside it (`planck db start --citus-workers N`, or
//! `[database] citus_workers = N`).
//!
//! Each worker is a managed cluster of its own (the same initdb, settings,
//! locks and `postgres` OS user as the coordinator) in
//! `.planck/citus-workers/<n>/`, so its data, log, port and home follow the
//! rules of [`super`]. What makes the set a Citus cluster:
//! - every server preloads `citus` (first, as Citus requires), written into
//!   its `postgresql.conf` before it starts;
//! - in the database planck is asked for, each server has
//!   `CREATE EXTENSION citus`, the coordinator names itself with
//!   `citus_set_coordinator_host` and registers each worker with
//!   `citus_add_node` (a worker whose port changed since is moved with
//!   `citus_update_node`).
//!
//! The workers that exist are the cluster's memory of being a Citus one:
//! once made, every command that starts the coordinator starts them too, and
//! `planck db stop`/`destroy` stop and delete them with it. A project that
//! never asked for workers has no `citus-workers/` folder, and nothing here
//! runs for it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::output::Log;

use super::{Cluster, SUPERUSER};

/// The folder of `.planck/` holding one folder per worker, named 1, 2, ...
pub(crate) const WORKERS_DIR: &str = "citus-workers";

/// The most workers `--citus-workers` accepts: each is a whole server on
/// this machine.
pub const MAX_WORKERS: u16 = 16;

/// The block planck appends to a Citus server's postgresql.conf. A later
/// `shared_preload_libraries` line wins over the one of
/// [`super::conf::SERVER_SETTINGS`]; Citus must come first in it.
const PRELOAD_MARK: &str = "# Added by planck: Citus (planck db start --citus-workers).";
const PRELOAD: &str = "shared_preload_libraries = 'citus,pg_stat_statements'\n";

impl Cluster {
    /// This cluster as a Citus coordinator that wants `workers` workers
    /// (`None`: as many as it already has, none for a plain project).
    pub fn with_citus_workers(mut self, workers: Option<u16>) -> Cluster {
        self.citus_workers = workers;
        self
    }

    /// The worker `n` (from 1) of this coordinator.
    fn worker(&self, n: u16) -> Cluster {
        Cluster {
            dir: self.dir.join(WORKERS_DIR).join(n.to_string()),
            bindir: self.bindir.clone(),
            run_as: self.run_as.clone(),
            citus_workers: None,
            citus_worker: true,
        }
    }

    /// The workers made so far, in order (numbered folders of
    /// `.planck/citus-workers/`).
    pub fn citus_workers(&self) -> Vec<Cluster> {
        let mut found: Vec<u16> = fs::read_dir(self.dir.join(WORKERS_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u16>().ok())
            .filter(|n| *n >= 1)
            .collect();
        found.sort_unstable();
        found.into_iter().map(|n| self.worker(n)).collect()
    }

    /// How many workers this coordinator runs: the number asked for, else
    /// the number it has. Asking for fewer than it has is refused (Citus's
    /// shards live on them).
    pub(crate) fn citus_workers_wanted(&self) -> Result<u16> {
        if self.citus_worker {
            return Ok(0);
        }
        let have = u16::try_from(self.citus_workers().len()).unwrap_or(u16::MAX);
        match self.citus_workers {
            None => Ok(have),
            Some(0) => Err(Error::usage_hint(
                "--citus-workers 0 is not a Citus cluster",
                format!(
                    "give 1 to {MAX_WORKERS} workers, or leave the option out for a plain PostgreSQL"
                ),
            )),
            Some(n) if n > MAX_WORKERS => Err(Error::usage_hint(
                format!(
                    "{n} Citus workers is more than planck starts on one machine ({MAX_WORKERS})"
                ),
                format!("give 1 to {MAX_WORKERS} workers"),
            )),
            Some(n) if n < have => Err(Error::usage_hint(
                format!(
                    "the managed cluster already has {have} Citus workers; planck does not remove workers (their shards live there)"
                ),
                format!(
                    "ask for {have} or more, or run `planck db destroy` (its data is deleted) and start again with --citus-workers {n}"
                ),
            )),
            Some(n) => Ok(n),
        }
    }

    /// True when this server must preload Citus: a worker, or a coordinator
    /// with workers.
    pub(crate) fn wants_citus(&self) -> Result<bool> {
        Ok(self.citus_worker || self.citus_workers_wanted()? > 0)
    }

    /// Before a Citus server starts: its data directory must preload Citus.
    pub(crate) fn prepare_citus(&self) -> Result<()> {
        let conf = self.data_dir().join("postgresql.conf");
        let text = fs::read_to_string(&conf).map_err(|source| Error::ReadFile {
            path: conf.clone(),
            source,
        })?;
        if text.lines().any(|l| l.trim() == PRELOAD_MARK) {
            return Ok(());
        }
        let mut text = text;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(PRELOAD_MARK);
        text.push('\n');
        text.push_str(PRELOAD);
        self.write_as_service(&conf, &text)
    }

    /// After the coordinator runs with `database`: starts the workers (made
    /// on first use), gives each `database` with the extension, and joins
    /// them to the coordinator. Runs under the coordinator's lock.
    pub(crate) async fn ready_citus(
        &self,
        port: u16,
        database: &str,
        log: Log,
        progress: fn(&Log, &str),
    ) -> Result<()> {
        let wanted = self.citus_workers_wanted()?;
        if wanted == 0 {
            return Ok(());
        }
        // The coordinator first: one that runs since before Citus was asked
        // for is said before any worker is made.
        let client = connect(self, port, database).await?;
        create_extension(&client, self).await?;
        let mut ports = Vec::new();
        for n in 1..=wanted {
            let worker = self.worker(n);
            let (wport, lines) = worker
                .blocking(move |w| {
                    let mut lines = Vec::new();
                    let p = w.start(None, &mut |m: &str| lines.push(m.to_string()))?;
                    Ok((p, lines))
                })
                .await?;
            for l in lines {
                progress(&log, &format!("citus worker {n}: {l}"));
            }
            worker.create_database(wport, database).await?;
            let on_worker = connect(self, wport, database).await?;
            create_extension(&on_worker, &worker).await?;
            ports.push(wport);
        }
        let sql = |what: &str, e| Error::db(format!("joining the Citus workers: {what}"), e);
        // Workers registered before on a port they no longer have (a port
        // taken meanwhile made them move) are moved first, one for one in
        // the order they were added: every later call syncs Citus's
        // metadata to each registered worker, and would try the old port.
        let rows = client
            .query(
                "SELECT nodeid, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid",
                &[],
            )
            .await
            .map_err(|e| sql("reading pg_dist_node", e))?;
        let registered: Vec<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let current: Vec<i32> = ports.iter().map(|p| i32::from(*p)).collect();
        let mut stale = registered
            .iter()
            .filter(|(_, p)| !current.contains(p))
            .map(|(id, _)| *id);
        let mut new = Vec::new();
        let mut moved = false;
        for wport in current
            .iter()
            .filter(|w| !registered.iter().any(|(_, p)| p == *w))
        {
            match stale.next() {
                Some(id) => {
                    client
                        .execute(
                            "SELECT citus_update_node($1, '127.0.0.1', $2)",
                            &[&id, wport],
                        )
                        .await
                        .map_err(|e| sql("citus_update_node", e))?;
                    moved = true;
                }
                None => new.push(*wport),
            }
        }
        // A move leaves the workers' metadata out of sync until Citus's
        // daemon gets to them, and later calls refuse such a node (55000):
        // synced now.
        if moved {
            client
                .execute("SELECT start_metadata_sync_to_all_nodes()", &[])
                .await
                .map_err(|e| sql("start_metadata_sync_to_all_nodes", e))?;
        }
        // Named again only when it moved: each call syncs every worker.
        let coordinator: Option<i32> = client
            .query_opt("SELECT nodeport FROM pg_dist_node WHERE groupid = 0", &[])
            .await
            .map_err(|e| sql("reading pg_dist_node", e))?
            .map(|r| r.get(0));
        if coordinator != Some(i32::from(port)) {
            client
                .execute(
                    "SELECT citus_set_coordinator_host('127.0.0.1', $1)",
                    &[&i32::from(port)],
                )
                .await
                .map_err(|e| sql("citus_set_coordinator_host", e))?;
        }
        for wport in &new {
            client
                .execute("SELECT citus_add_node('127.0.0.1', $1)", &[wport])
                .await
                .map_err(|e| sql("citus_add_node", e))?;
        }
        Ok(())
    }
}

/// A superuser connection to a server of the set (no TLS: loopback, and
/// Citus's self-signed certificate would not verify anyway).
async fn connect(c: &Cluster, port: u16, database: &str) -> Result<tokio_postgres::Client> {
    let mut cfg = tokio_postgres::Config::new();
    cfg.host("127.0.0.1")
        .port(port)
        .user(SUPERUSER)
        .dbname(database)
        .application_name("planck")
        .connect_timeout(Duration::from_secs(10));
    let (client, conn) = cfg
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| Error::Connect {
            url: c.url(port, database),
            message: e.to_string(),
            hint: Some(format!("the server's log is {}", c.log_file().display())),
        })?;
    tokio::spawn(conn);
    Ok(client)
}

/// `CREATE EXTENSION citus` unless it is there; a server that runs since
/// before Citus was asked for has not loaded it, which is said as such.
async fn create_extension(client: &tokio_postgres::Client, c: &Cluster) -> Result<()> {
    let preload: String = client
        .query_one("SELECT current_setting('shared_preload_libraries')", &[])
        .await
        .map_err(|e| Error::db("reading shared_preload_libraries", e))?
        .get(0);
    if !preload.split(',').any(|l| l.trim() == "citus") {
        return Err(Error::cluster(
            format!(
                "the managed PostgreSQL in {} runs without Citus (it was started before Citus was asked for)",
                c.data_dir().display()
            ),
            Some(
                "run `planck db stop`, then `planck db start --citus-workers N`: it restarts with Citus loaded"
                    .to_string(),
            ),
        ));
    }
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS citus")
        .await
        .map_err(|e| Error::db("CREATE EXTENSION citus", e))
}

/// Where the server binaries of `bindir` load extensions from: their
/// `pg_config --pkglibdir` when they have a pg_config, else the `lib/`
/// beside `bin/` (Debian's /usr/lib/postgresql/N/lib) and its `postgresql/`.
fn pkglibdirs(bindir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(o) = Command::new(bindir.join("pg_config"))
        .arg("--pkglibdir")
        .output()
        && o.status.success()
    {
        out.push(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    }
    if let Some(root) = bindir.parent() {
        out.push(root.join("lib"));
        out.push(root.join("lib/postgresql"));
    }
    out
}

/// True when Citus is installed for the server binaries in `bindir`.
pub fn installed(bindir: &Path) -> bool {
    pkglibdirs(bindir)
        .iter()
        .any(|d| d.join("citus.so").is_file())
}

/// Citus must be installed for these binaries: else an error that says
/// where planck looked and how to install it.
pub(crate) fn check_installed(bindir: &Path) -> Result<()> {
    if installed(bindir) {
        return Ok(());
    }
    let major = super::server_major(bindir)?;
    let looked: Vec<String> = pkglibdirs(bindir)
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    Err(Error::cluster(
        format!(
            "Citus is not installed for PostgreSQL {major} in {} (no citus.so in {})",
            bindir.display(),
            looked.join(", ")
        ),
        Some(format!(
            "install Citus 13 for PostgreSQL {major}: Citus's own packages \
             (https://docs.citusdata.com/en/stable/installation/single_node_debian.html), \
             or from source (github.com/citusdata/citus: ./configure && make && make install, with \
             postgresql-server-dev-{major}); or leave --citus-workers out for a plain PostgreSQL"
        )),
    ))
}
