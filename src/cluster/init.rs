//! Making the managed cluster: `initdb`, then planck's own settings file,
//! which `postgresql.conf` includes.

use std::fs;

use crate::error::{Error, Result};

use super::{Cluster, INIT_PREFIX, SUPERUSER, conf};

impl Cluster {
    pub(super) fn init(&self, log: &mut dyn FnMut(&str)) -> Result<()> {
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
    pub(super) fn include_listen_file(&self) -> Result<()> {
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
}
