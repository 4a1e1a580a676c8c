//! Starting the managed cluster: under `.planck/lock`, init it once, pick a
//! port, `pg_ctl start`, create the database asked for; a failed start is
//! explained from this start's part of the server log.

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::output::Log;

use super::bindir::{INSTALL_HINT, parse_major, server_major};
use super::home::Home;
use super::lock::{Mode, Wait};
use super::{Cluster, MIN_MAJOR, Ready, SUPERUSER, State, citus, conf, home, lock};

impl Cluster {
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
    pub(super) fn state_lock(&self, log: Log) -> Result<lock::Held> {
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
    pub(super) fn start_locked(
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
    pub(super) fn check_data_version(&self) -> Result<()> {
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
    pub(super) async fn create_database(&self, port: u16, database: &str) -> Result<()> {
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

    /// A crashed run leaves `postmaster.pid` (and the socket's lock file)
    /// behind. PostgreSQL refuses to start when the pid in it belongs to a live
    /// process, which after a reboot or in a container may be any process,
    /// and in a copy of a project (`cp -a`) is the original's live server.
    /// Remove the files when their pid is not this cluster's running postmaster.
    pub(super) fn clear_stale_locks(&self, log: &mut dyn FnMut(&str)) -> Result<()> {
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
    pub(super) fn is_our_postmaster(&self, pid: u32) -> bool {
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

    pub(super) fn read_pid_file(&self) -> Option<(u32, u16)> {
        let text = fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        let mut lines = text.lines();
        let pid = lines.next()?.trim().parse().ok()?;
        let port = lines.nth(2)?.trim().parse().ok()?;
        Some((pid, port))
    }

    pub(super) fn pg_ctl_status(&self) -> Result<bool> {
        let out = self.run_pg("pg_ctl", &["status".as_ref()])?;
        Ok(out.status.success())
    }

    /// An asked port is tried as it is: the server's own bind reports why it
    /// cannot have it (in use, privileged), from this start's log lines.
    pub(super) fn choose_port(&self, asked: Option<u16>) -> Result<u16> {
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
    pub(super) fn pid_zero_is_not_postgres() {
        assert!(!process_is_postgres(0));
        assert!(!process_is_postgres(u32::MAX));
    }

    #[test]
    pub(super) fn a_failed_start_is_explained_by_this_starts_bind_error_only() {
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
    pub(super) fn only_the_log_written_after_the_offset_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("server.log");
        fs::write(&f, "old line\nnew line\n").unwrap();
        assert_eq!(read_from(&f, 9), "new line\n");
        // A log that shrank (rotated by hand) is read whole.
        assert_eq!(read_from(&f, 1000), "old line\nnew line\n");
        assert_eq!(read_from(&dir.path().join("none"), 0), "");
    }
}
