//! The managed local PostgreSQL: planck's embedded default.
//!
//! When no database is configured, planck runs a throwaway cluster of its own
//! under `.planck/` in the project directory, built with the server binaries
//! already on the machine (`initdb`, `pg_ctl`). It is tuned for speed over
//! durability (fsync off) and preloads pg_stat_statements, which `record`
//! needs. The test suite starts its server through this same code, so every
//! test exercises it.
//!
//! Layout of `.planck/`:
//! - `data/`: the data directory (PGDATA);
//! - `run/`: the unix socket directory;
//! - `port`: the last port used, reused when still free;
//! - `server.log`: the server's log;
//! - `lock`, `in-use`: the locks of [`lock`] (who changes the cluster, who uses it);
//! - `home`: present only when the server's files live in /tmp (see [`home`]).
//!
//! initdb refuses to run as root. When planck runs as root (as CI does), the
//! server runs as the unprivileged `postgres` OS user, via `runuser`.
//!
//! No path ever goes through a shell: the data directory reaches `initdb` and
//! `pg_ctl` in `PGDATA`, the log is named relative to the server's home (the
//! working directory of `pg_ctl`), and port, socket directory and listen
//! address are written to `postgresql.planck.conf`, which `postgresql.conf`
//! includes (pg_ctl hands `-o` and `-D`/`-l` to `/bin/sh`, so a project in
//! `my project/` broke them).
//!
//! The API async code calls ([`Cluster::ready`], [`Cluster::blocking`]) runs
//! the blocking work (flock waits, `pg_ctl start -w`) on tokio's blocking
//! pool; the plain methods stay for sync callers such as the test harness.

mod bindir;
pub mod citus;
mod conf;
mod home;
mod init;
pub(crate) mod lock;
mod service;
mod start;
mod stop;

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::output::Log;

use home::Home;
use lock::{Mode, Wait};

pub use bindir::{find_bindir, find_bindir_for, installed_bindirs, server_major, server_version};

/// What a data directory being made is called until it is whole (then it
/// is renamed to `data`), followed by the pid of the planck making it.
const INIT_PREFIX: &str = "data.init-";

/// The superuser initdb creates; local connections as it need no password.
pub const SUPERUSER: &str = "planck";
/// The database planck creates and works in by default.
pub const DEFAULT_DATABASE: &str = "planck";
/// The OS user the server runs as when planck runs as root.
const SERVICE_USER: &str = "postgres";
/// How long `planck db destroy` waits for other planck commands by default.
pub const DESTROY_WAIT: Duration = Duration::from_secs(10);

/// A managed cluster, located but not necessarily initialized or running.
#[derive(Debug, Clone)]
pub struct Cluster {
    dir: PathBuf,
    bindir: PathBuf,
    run_as: Option<String>,
    /// Citus workers asked for (see [`citus`]); `None`: as many as exist.
    citus_workers: Option<u16>,
    /// This server is a Citus worker of the cluster in `dir`'s grandparent.
    citus_worker: bool,
}

/// What `planck db status` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// No `initdb` has run yet.
    Absent,
    Stopped,
    Running {
        port: u16,
        pid: u32,
    },
}

/// The oldest server major planck supports.
pub const MIN_MAJOR: u32 = 14;

/// True when this process runs as root (uid 0).
pub fn running_as_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// A started (or found running) cluster with its database, from [`Cluster::ready_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub port: u16,
    /// The URL of the database asked for.
    pub url: String,
    /// The server was already running before this call.
    pub was_running: bool,
}

/// The "in use" locks this process holds, one per cluster, until it exits.
static IN_USE: Mutex<Option<HashMap<PathBuf, lock::Held>>> = Mutex::new(None);

impl Cluster {
    /// Locates the cluster of a project: `<project_dir>/.planck`.
    pub fn for_project(project_dir: &Path, bindir: PathBuf) -> Cluster {
        Cluster::at(project_dir.join(".planck"), bindir)
    }

    pub fn at(dir: PathBuf, bindir: PathBuf) -> Cluster {
        let run_as = running_as_root().then(|| SERVICE_USER.to_string());
        Cluster {
            dir,
            bindir,
            run_as,
            citus_workers: None,
            citus_worker: false,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder of the server binaries this cluster runs.
    pub fn bindir(&self) -> &Path {
        &self.bindir
    }

    /// Where the server's own files live (data, log, socket): `.planck/`, or,
    /// when planck runs as root and the `postgres` OS user cannot reach the
    /// project (a checkout below a folder only root may enter, as `mktemp -d`
    /// makes), a folder planck made in /tmp, named in `.planck/home` and
    /// proven ours by its marker (see [`home`]). A note planck cannot prove
    /// is never followed: the cluster is then taken to live in `.planck/`
    /// (absent there, so the next start makes a home of its own).
    fn home(&self) -> PathBuf {
        match home::resolve(&self.dir) {
            Home::Temp(p) => p,
            Home::Inside | Home::Foreign { .. } => self.dir.clone(),
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.home().join("data")
    }

    pub fn log_file(&self) -> PathBuf {
        self.home().join("server.log")
    }

    /// The OS user the server runs as, when it is not planck's own user.
    pub fn run_as(&self) -> Option<&str> {
        self.run_as.as_deref()
    }

    /// The unix socket directory. Socket paths are limited to about 100
    /// bytes, so a deep project directory falls back to a folder in /tmp named
    /// after a hash of the cluster's path.
    pub fn socket_dir(&self) -> PathBuf {
        let inside = self.home().join("run");
        if inside.as_os_str().len() + ".s.PGSQL.65535.lock".len() + 1 < 100 {
            inside
        } else {
            PathBuf::from(format!("/tmp/planck-{}", self.tag()))
        }
    }

    /// A short name for this cluster: 12 hex digits of a hash of its path.
    fn tag(&self) -> String {
        use sha2::Digest;
        let h = sha2::Sha256::digest(self.dir.as_os_str().as_encoded_bytes());
        h.iter().take(6).map(|b| format!("{b:02x}")).collect()
    }

    pub fn state(&self) -> Result<State> {
        if !self.data_dir().join("PG_VERSION").is_file() {
            return Ok(State::Absent);
        }
        match self.read_pid_file() {
            Some((pid, port)) if self.is_our_postmaster(pid) && self.pg_ctl_status()? => {
                Ok(State::Running { port, pid })
            }
            _ => Ok(State::Stopped),
        }
    }

    /// Connection URL for a database of this cluster (TCP on loopback, so any
    /// client can use it).
    pub fn url(&self, port: u16, database: &str) -> String {
        // A database name may hold any character; the URL's path must not.
        let path: String = database
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        format!("postgres://{SUPERUSER}@127.0.0.1:{port}/{path}")
    }

    /// Runs blocking cluster work (`stop`, `destroy`, `state`, ...) on
    /// tokio's blocking pool, so async callers never block a worker thread.
    pub async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Cluster) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let c = self.clone();
        tokio::task::spawn_blocking(move || f(&c))
            .await
            .map_err(|e| Error::Other(anyhow::anyhow!("the managed cluster's task failed: {e}")))?
    }

    /// Takes the shared "in use" lock, which `planck db destroy` waits for,
    /// and returns it; the cluster cannot be destroyed while it is held.
    /// (`ready` holds one for the rest of the process.)
    pub fn hold(&self, log: Log) -> Result<lock::Held> {
        home::make_dir(&self.dir)?;
        let path = self.dir.join("in-use");
        let held = lock::take(&path, Mode::Shared, Wait::Forever, &mut |h| {
            log.info(&format!(
                "waiting: {} is destroying the managed cluster",
                lock::describe(h)
            ))
        })?;
        held.ok_or_else(|| Error::cluster("cannot lock the managed cluster", None))
    }

    /// Lets go of the "in use" lock [`Cluster::ready`] took for this process
    /// (for a process that goes on to destroy the cluster itself).
    pub fn release(&self) {
        let key = home::project_id(&self.dir);
        let mut held = IN_USE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(map) = held.as_mut() {
            map.remove(&key);
        }
    }

    fn hold_in_use(&self, log: Log) -> Result<()> {
        let key = home::project_id(&self.dir);
        let mut held = IN_USE.lock().unwrap_or_else(|p| p.into_inner());
        let map = held.get_or_insert_with(HashMap::new);
        if let std::collections::hash_map::Entry::Vacant(slot) = map.entry(key) {
            slot.insert(self.hold(log)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_project_paths_put_the_socket_in_tmp() {
        let short = Cluster::at("/p/.planck".into(), "/bin".into());
        assert_eq!(short.socket_dir(), PathBuf::from("/p/.planck/run"));
        let deep = "/x".repeat(60);
        let long = Cluster::at(PathBuf::from(deep).join(".planck"), "/bin".into());
        assert!(
            long.socket_dir()
                .to_string_lossy()
                .starts_with("/tmp/planck-")
        );
    }

    #[test]
    fn database_names_are_escaped_in_urls() {
        let c = Cluster::at("/p/.planck".into(), "/bin".into());
        assert_eq!(c.url(5, "planck"), "postgres://planck@127.0.0.1:5/planck");
        assert_eq!(
            c.url(5, "bad name/x"),
            "postgres://planck@127.0.0.1:5/bad%20name%2Fx"
        );
        let parsed = crate::db::ConnInfo::parse(&c.url(5, "bad name"), true).unwrap();
        assert_eq!(parsed.dbname(), "bad name");
    }
}
