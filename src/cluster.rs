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
//! - `lock`: held while a planck process starts, stops or destroys the cluster.
//!
//! initdb refuses to run as root. When planck runs as root (as CI does), the
//! server runs as the unprivileged `postgres` OS user, via `runuser`.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::error::{Error, Result};

/// The superuser initdb creates; local connections as it need no password.
pub const SUPERUSER: &str = "planck";
/// The database planck creates and works in by default.
pub const DEFAULT_DATABASE: &str = "planck";
/// The OS user the server runs as when planck runs as root.
const SERVICE_USER: &str = "postgres";

/// Settings for a throwaway dev/CI server, appended to postgresql.conf.
const SERVER_SETTINGS: &str = "\
# Added by planck: a throwaway dev/CI server, fast rather than durable.
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 10000
track_activity_query_size = 8192
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 256MB
maintenance_work_mem = 256MB
max_wal_size = 4GB
checkpoint_timeout = 30min
autovacuum = on
log_min_messages = warning
";

/// A managed cluster, located but not necessarily initialized or running.
#[derive(Debug, Clone)]
pub struct Cluster {
    dir: PathBuf,
    bindir: PathBuf,
    run_as: Option<String>,
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
    let has_initdb = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(d) = explicit {
        if has_initdb(d) {
            return Ok(d.to_path_buf());
        }
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
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if has_initdb(&d) {
                // Resolve symlinks (Debian links /usr/local/bin/initdb into
                // /usr/lib/postgresql/N/bin) so every binary comes from one version.
                let real = fs::canonicalize(d.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(d);
                return Ok(real);
            }
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_initdb(&d) {
            return Ok(d);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has_initdb(&bin).then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Ok(d);
    }
    Err(Error::cluster(
        "no PostgreSQL server binaries found (looked for initdb and pg_ctl on PATH, in `pg_config --bindir` and in /usr/lib/postgresql/*/bin)",
        Some(format!("{INSTALL_HINT}, or set PLANCK_PG_BINDIR")),
    ))
}

/// True when this process runs as root (uid 0).
pub fn running_as_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

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
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the server's own files live (data, log, socket): `.planck/`, or,
    /// when planck runs as root and the `postgres` OS user cannot reach the
    /// project (a checkout below a folder only root may enter, as `mktemp -d`
    /// makes), a folder in /tmp named in `.planck/home` at initdb.
    fn home(&self) -> PathBuf {
        fs::read_to_string(self.dir.join("home"))
            .ok()
            .map(|t| PathBuf::from(t.trim()))
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| self.dir.clone())
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
            Some((pid, port)) if process_is_postgres(pid) && self.pg_ctl_status()? => {
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

    /// Initializes (once) and starts the cluster; returns its port. Safe to
    /// call from several processes at once: they serialize on `.planck/lock`
    /// and the later ones find the server running.
    ///
    /// `port`: a port the user asked for; otherwise the last one, or any free one.
    pub fn start(&self, port: Option<u16>, log: &mut dyn FnMut(&str)) -> Result<u16> {
        fs::create_dir_all(&self.dir).map_err(|source| Error::WriteFile {
            path: self.dir.clone(),
            source,
        })?;
        let _lock = self.lock()?;
        if let State::Running { port: running, .. } = self.state()? {
            if let Some(asked) = port
                && asked != running
            {
                return Err(Error::usage_hint(
                    format!("the managed cluster is already running on port {running}"),
                    "run `planck db stop` first to move it to another port",
                ));
            }
            return Ok(running);
        }
        if !self.data_dir().join("PG_VERSION").is_file() {
            self.init(log)?;
        }
        self.clear_stale_locks(log)?;
        let port = self.choose_port(port)?;
        let sock = self.socket_dir();
        fs::create_dir_all(&sock).map_err(|source| Error::WriteFile {
            path: sock.clone(),
            source,
        })?;
        self.give_to_service_user(&sock)?;
        log(&format!(
            "starting PostgreSQL on 127.0.0.1:{port} (data in {})",
            self.data_dir().display()
        ));
        let opts = format!("-p {port} -k {}", sock.display());
        let out = self.run_pg(
            "pg_ctl",
            &[
                "start".as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "120".as_ref(),
                "-D".as_ref(),
                self.data_dir().as_os_str(),
                "-l".as_ref(),
                self.log_file().as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
            ],
        )?;
        if !out.status.success() {
            let tail = self.log_tail(15);
            let in_use = tail.contains("Address already in use") || tail.contains("could not bind");
            return Err(Error::cluster(
                format!(
                    "the managed PostgreSQL did not start{}:\n{}{}",
                    if in_use {
                        format!(" (port {port} is in use)")
                    } else {
                        String::new()
                    },
                    String::from_utf8_lossy(&out.stderr).trim(),
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("\nlast lines of {}:\n{tail}", self.log_file().display())
                    }
                ),
                Some(if in_use {
                    "another server holds the port; run `planck db start` without --port to pick a free one".into()
                } else {
                    format!(
                        "read {} for the server's own words",
                        self.log_file().display()
                    )
                }),
            ));
        }
        let _ = fs::write(self.dir.join("port"), port.to_string());
        Ok(port)
    }

    /// Stops the server (fast shutdown) and waits until it is gone.
    pub fn stop(&self) -> Result<bool> {
        if !self.dir.exists() {
            return Ok(false);
        }
        let _lock = self.lock()?;
        if !matches!(self.state()?, State::Running { .. }) {
            return Ok(false);
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
                "-D".as_ref(),
                self.data_dir().as_os_str(),
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

    /// Stops the server and deletes `.planck/` with all its data.
    pub fn destroy(&self) -> Result<bool> {
        if !self.dir.exists() {
            return Ok(false);
        }
        self.stop()?;
        let sock = self.socket_dir();
        if !sock.starts_with(&self.dir) {
            let _ = fs::remove_dir_all(&sock);
        }
        let home = self.home();
        if home != self.dir {
            let _ = fs::remove_dir_all(&home);
        }
        fs::remove_dir_all(&self.dir).map_err(|source| Error::WriteFile {
            path: self.dir.clone(),
            source,
        })?;
        Ok(true)
    }

    fn init(&self, log: &mut dyn FnMut(&str)) -> Result<()> {
        if let Some(user) = &self.run_as {
            self.ensure_service_user(user)?;
            self.place_home(user, log)?;
        }
        let data = self.data_dir();
        // A half-made data directory from an interrupted initdb is useless.
        if data.exists() {
            fs::remove_dir_all(&data).map_err(|source| Error::WriteFile {
                path: data.clone(),
                source,
            })?;
        }
        fs::create_dir_all(&data).map_err(|source| Error::WriteFile {
            path: data.clone(),
            source,
        })?;
        if let Some(user) = &self.run_as {
            log(&format!(
                "running as root: initdb and the server run as the `{user}` OS user"
            ));
            self.give_to_service_user(&self.home())?;
            self.give_to_service_user(&data)?;
        }
        log(&format!("initializing a new cluster in {}", data.display()));
        let out = self.run_pg(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
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
        text.push_str(SERVER_SETTINGS);
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
        Ok(())
    }

    /// A crashed run leaves `postmaster.pid` (and the socket's lock file)
    /// behind. PostgreSQL refuses to start when the pid in it belongs to a live
    /// process, which after a reboot or in a container may be any process.
    /// Remove the files when their pid is not a running postgres.
    fn clear_stale_locks(&self, log: &mut dyn FnMut(&str)) -> Result<()> {
        let pidfile = self.data_dir().join("postmaster.pid");
        if let Some((pid, _)) = self.read_pid_file()
            && !process_is_postgres(pid)
        {
            log(&format!(
                "removing a stale {} left by a crashed server (pid {pid} is not running)",
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
                    if pid.is_none_or(|p| !process_is_postgres(p)) {
                        let _ = fs::remove_file(e.path());
                        let sock = e.path().with_extension("");
                        let _ = fs::remove_file(sock);
                    }
                }
            }
        }
        Ok(())
    }

    fn read_pid_file(&self) -> Option<(u32, u16)> {
        let text = fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        let mut lines = text.lines();
        let pid = lines.next()?.trim().parse().ok()?;
        let port = lines.nth(2)?.trim().parse().ok()?;
        Some((pid, port))
    }

    fn pg_ctl_status(&self) -> Result<bool> {
        let out = self.run_pg(
            "pg_ctl",
            &[
                "status".as_ref(),
                "-D".as_ref(),
                self.data_dir().as_os_str(),
            ],
        )?;
        Ok(out.status.success())
    }

    fn choose_port(&self, asked: Option<u16>) -> Result<u16> {
        if let Some(p) = asked {
            if port_is_free(p) {
                return Ok(p);
            }
            return Err(Error::usage_hint(
                format!("port {p} is in use by another program"),
                "choose another with --port, or leave --port out and planck picks a free one",
            ));
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

    /// Holds `.planck/lock` until dropped.
    fn lock(&self) -> Result<fs::File> {
        let path = self.dir.join("lock");
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| Error::WriteFile {
                path: path.clone(),
                source,
            })?;
        f.lock()
            .map_err(|source| Error::WriteFile { path, source })?;
        Ok(f)
    }

    /// Runs a PostgreSQL binary, as the service user when planck is root.
    fn run_pg(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<Output> {
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
        // The server must not inherit our stdout/stderr: a test harness or a
        // pipe would wait for it to close them.
        cmd.stdin(std::process::Stdio::null());
        // Locale of the child must not leak odd settings into initdb.
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
    /// permission), else in a folder of /tmp, noted in `.planck/home`.
    fn place_home(&self, user: &str, log: &mut dyn FnMut(&str)) -> Result<()> {
        let reachable = Command::new("runuser")
            .args(["-u", user, "--", "test", "-x"])
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        let note = self.dir.join("home");
        if reachable {
            let _ = fs::remove_file(&note);
            return Ok(());
        }
        let home = std::env::temp_dir().join(format!("planck-home-{}", self.tag()));
        log(&format!(
            "the `{user}` OS user cannot reach {}; the server's files go to {}",
            self.dir.display(),
            home.display()
        ));
        fs::create_dir_all(&home).map_err(|source| Error::WriteFile {
            path: home.clone(),
            source,
        })?;
        fs::write(&note, home.display().to_string())
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

    fn log_tail(&self, n: usize) -> String {
        let text = fs::read_to_string(self.log_file()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
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
    fn pid_zero_is_not_postgres() {
        assert!(!process_is_postgres(0));
        assert!(!process_is_postgres(u32::MAX));
    }
}
