//! Running the server's programs, as the unprivileged `postgres` OS user
//! when planck runs as root (`runuser`): that user, its home for the
//! cluster, and the files handed to it.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::error::{Error, Result};

use super::{Cluster, home};

impl Cluster {
    /// Runs a PostgreSQL binary, as the service user when planck is root,
    /// with `PGDATA` set and the server's home as working directory (no path
    /// is passed as an argument a shell could split).
    pub(super) fn run_pg(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<Output> {
        self.run_pg_at(&self.data_dir(), program, args)
    }

    /// [`Cluster::run_pg`] on the data directory `data`.
    pub(super) fn run_pg_at(
        &self,
        data: &Path,
        program: &str,
        args: &[&std::ffi::OsStr],
    ) -> Result<Output> {
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

    pub(super) fn ensure_service_user(&self, user: &str) -> Result<()> {
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
    pub(super) fn place_home(&self, user: &str, log: &mut dyn FnMut(&str)) -> Result<()> {
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

    pub(super) fn service_ids(&self) -> Result<Option<(u32, u32)>> {
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

    pub(super) fn give_to_service_user(&self, path: &Path) -> Result<()> {
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

    pub(super) fn write_as_service(&self, path: &Path, text: &str) -> Result<()> {
        fs::write(path, text).map_err(|source| Error::WriteFile {
            path: path.to_path_buf(),
            source,
        })?;
        self.give_to_service_user(path)
    }
}
