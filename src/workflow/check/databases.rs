//! The databases a check run creates on the server (the configured one or
//! the managed cluster's): created fresh or as a `TEMPLATE` copy, and
//! dropped at the end unless `--keep`. It refuses to touch the configured
//! database itself, and waits out the sessions a template still has.

use std::time::Instant;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;

use super::plan::step;

pub struct Databases {
    /// The configured database (or the managed cluster's): CREATE and DROP
    /// DATABASE are sent through it; nothing else touches it.
    server: ConnInfo,
    /// The databases this run created, dropped at the end unless --keep.
    created: Vec<String>,
    log: Log,
}

impl Databases {
    pub fn new(server: ConnInfo, log: Log) -> Databases {
        Databases {
            server,
            created: Vec::new(),
            log,
        }
    }

    /// The server's connection, to `name`.
    pub fn on(&self, name: &str) -> ConnInfo {
        self.server.with_database(name)
    }

    /// (Re)creates `name`, empty.
    pub async fn fresh(&mut self, name: &str) -> Result<ConnInfo> {
        let t = Instant::now();
        self.create(name, None).await?;
        step(self.log, t, &format!("database: created {name}"));
        Ok(self.server.with_database(name))
    }

    /// `name` as a TEMPLATE copy of `from`: the same rows and statistics.
    pub async fn copy(&mut self, from: &ConnInfo, name: &str) -> Result<ConnInfo> {
        let t = Instant::now();
        let from_name = from.dbname();
        self.create(name, Some(&from_name)).await?;
        step(
            self.log,
            t,
            &format!("database: created {name} as a copy of {from_name}"),
        );
        Ok(self.server.with_database(name))
    }

    async fn create(&mut self, name: &str, template: Option<&str>) -> Result<()> {
        if name == self.server.dbname() {
            return Err(Error::usage(format!(
                "check would drop the configured database {name}: pick another --name"
            )));
        }
        let admin = self.server.connect().await?;
        let q = crate::db::quote_ident(name);
        crate::db::drop_database(&admin, name)
            .await
            .map_err(|e| Error::db(format!("dropping database {name}"), e))?;
        let sql = match template {
            Some(t) => format!("CREATE DATABASE {q} TEMPLATE {}", crate::db::quote_ident(t)),
            None => format!("CREATE DATABASE {q}"),
        };
        // A template must have no other session: the pools of the steps
        // before close their connections asynchronously.
        let mut tries = 0;
        loop {
            match admin.batch_execute(&sql).await {
                Ok(()) => break,
                Err(e)
                    if tries < 50
                        && e.code() == Some(&tokio_postgres::error::SqlState::OBJECT_IN_USE) =>
                {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => {
                    return Err(Error::db(
                        format!("creating database {name} (check needs CREATEDB)"),
                        e,
                    ));
                }
            }
        }
        self.created.push(name.to_string());
        Ok(())
    }

    /// Drops what this run created, unless `keep`; returns their names.
    pub async fn cleanup(&mut self, keep: bool) -> Vec<String> {
        if self.created.is_empty() {
            return Vec::new();
        }
        let mut names = std::mem::take(&mut self.created);
        names.dedup();
        if keep {
            self.log
                .info(&format!("kept database(s) {} (--keep)", names.join(", ")));
            return names;
        }
        let t = Instant::now();
        let Ok(admin) = self.server.connect().await else {
            self.log.warn(&format!(
                "could not drop {}: the server is not reachable",
                names.join(", ")
            ));
            return Vec::new();
        };
        for n in &names {
            if let Err(e) = crate::db::drop_database(&admin, n).await {
                self.log.warn(&format!("could not drop {n}: {e}"));
            }
        }
        step(
            self.log,
            t,
            &format!("cleanup: dropped {}", names.join(", ")),
        );
        names
    }
}
