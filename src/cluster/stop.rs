//! Stopping the managed cluster, and destroying it once no planck process
//! uses it any more.

use std::fs;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::output::Log;

use super::home::Home;
use super::lock::{Mode, Wait};
use super::{Cluster, State, home, lock};

impl Cluster {
    /// Stops the server (fast shutdown) and waits until it is gone.
    pub fn stop(&self) -> Result<bool> {
        if !self.dir.exists() {
            return Ok(false);
        }
        let _lock = self.state_lock(Log::silent())?;
        self.stop_locked()
    }

    pub(super) fn stop_locked(&self) -> Result<bool> {
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
}
