//! Settings: the validated result of flags, environment and `planck.toml`.
//!
//! Data flows one way: clap's raw flags ([`crate::cli::Global`]) and the
//! environment are merged with the config file here, once, into [`Settings`].
//! Commands read only `Settings`; none reads an env var or a file on its own.
//!
//! Override order, strongest first, for the database: `--database-url`,
//! `PLANCK_DATABASE_URL`, `DATABASE_URL`, libpq's `PGHOST`/`PGPORT`/`PGUSER`/
//! `PGDATABASE`/`PGPASSWORD`, `planck.toml`'s `[database] url`, and last the
//! managed local cluster under `.planck/`. Whichever string wins is then
//! completed with libpq's conventions ([`db::ConnInfo::resolve`]): the service
//! file, the other `PG*` variables (`PGSSLMODE`, `PGCONNECT_TIMEOUT`, ...) for
//! keywords it leaves unset, and `.pgpass`. For everything else: flag, then
//! `planck.toml`, then the built-in default.

pub(crate) mod check;
pub(crate) mod explain;
pub(crate) mod record;
pub(crate) mod replay;

use std::path::{Path, PathBuf};

use crate::cli::Global;
use crate::cluster::{self, Cluster};
use crate::config::{self, ConfigFile};
use crate::db::{self, ConnInfo, Target, UrlSource};
use crate::error::{Error, Result};
use crate::output::{Format, Log};

pub(crate) mod seed;
pub(crate) mod seed_stats;
pub(crate) mod template;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The folder of `planck.toml`, else the current directory.
    pub project_dir: PathBuf,
    pub config_path: Option<PathBuf>,
    pub config: ConfigFile,
    pub target: Target,
    pub format: Format,
    pub quiet: bool,
    pub verbose: bool,
    /// PLANCK_PG_BINDIR: where the PostgreSQL server binaries are.
    pub pg_bindir: Option<PathBuf>,
    /// libpq's environment variables, taken once.
    pub libpq: db::LibpqEnv,
    /// The directory planck was started in (`record` resolves the command it
    /// runs from here).
    pub cwd: PathBuf,
    /// `PATH` as planck was started with it, for the command `record` runs.
    pub path_var: Option<std::ffi::OsString>,
}

impl Settings {
    /// Merges flags, environment (through `env`) and the config file.
    pub fn resolve(
        global: &Global,
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Result<Settings> {
        let config_path = match &global.config {
            Some(p) => {
                let p = cwd.join(p);
                if !p.is_file() {
                    return Err(Error::usage_hint(
                        format!("config file {} does not exist", p.display()),
                        "leave --config out to look for planck.toml from the current directory up",
                    ));
                }
                Some(p)
            }
            None => config::find(cwd),
        };
        let config = match &config_path {
            Some(p) => config::load(p)?,
            None => ConfigFile::default(),
        };
        let project_dir = config_path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| cwd.to_path_buf());
        let env_nonempty = |k: &str| env(k).filter(|v| !v.is_empty());
        let libpq = db::LibpqEnv::capture(&env_nonempty);
        let target = if let Some(url) = &global.database_url {
            Target::Url {
                url: url.clone(),
                source: UrlSource::Flag,
            }
        } else if let Some(url) = env_nonempty("PLANCK_DATABASE_URL") {
            Target::Url {
                url,
                source: UrlSource::PlanckEnv,
            }
        } else if let Some(url) = env_nonempty("DATABASE_URL") {
            Target::Url {
                url,
                source: UrlSource::DatabaseUrlEnv,
            }
        } else if libpq.names_a_server() {
            // An empty string: every keyword comes from the PG* variables
            // themselves, with no string built from them in between.
            Target::Url {
                url: String::new(),
                source: UrlSource::LibpqEnv,
            }
        } else if let Some(url) = &config.database.url {
            Target::Url {
                url: url.clone(),
                source: UrlSource::ConfigFile,
            }
        } else {
            Target::Managed
        };
        if let Target::Url { url, source } = &target {
            // Fail early, before any work, on a URL that does not parse
            // (or a PGSSLMODE, a service that is wrong), saying where it came from.
            ConnInfo::resolve(url, &libpq).map_err(|e| match e {
                Error::BadUrl { url, message } => Error::BadUrl {
                    url,
                    message: format!("{message} (from {})", source.describe()),
                },
                e => e,
            })?;
        }
        Ok(Settings {
            project_dir,
            config_path,
            config,
            target,
            format: global.format,
            quiet: global.quiet,
            verbose: global.verbose,
            pg_bindir: env_nonempty("PLANCK_PG_BINDIR").map(PathBuf::from),
            libpq,
            cwd: cwd.to_path_buf(),
            path_var: env("PATH").map(std::ffi::OsString::from),
        })
    }

    /// A path of the project (relative paths are taken from the project directory).
    pub fn project_path(&self, p: &Path) -> PathBuf {
        self.project_dir.join(p)
    }

    pub fn migrations_dir(&self) -> PathBuf {
        self.project_path(&self.config.paths.migrations)
    }

    pub fn seeds_dir(&self) -> PathBuf {
        self.project_path(&self.config.paths.seeds)
    }

    pub fn queries_dir(&self) -> PathBuf {
        self.project_path(&self.config.paths.queries)
    }

    /// The project's managed cluster (whether or not it is the target).
    pub fn cluster(&self) -> Result<Cluster> {
        let major = match &self.config.database.postgres {
            Some(m) => Some(m.major().map_err(|why| {
                Error::usage_hint(
                    why,
                    format!(
                        "in {}",
                        self.config_path
                            .as_deref()
                            .unwrap_or(Path::new("planck.toml"))
                            .display()
                    ),
                )
            })?),
            None => None,
        };
        let workers = self.config.database.citus_workers;
        if let Some(n) = workers
            && !(1..=cluster::citus::MAX_WORKERS).contains(&n)
        {
            return Err(Error::usage_hint(
                format!(
                    "[database] citus_workers = {n}: give 1 to {} workers",
                    cluster::citus::MAX_WORKERS
                ),
                format!(
                    "in {}; or remove the key for a plain PostgreSQL",
                    self.config_path
                        .as_deref()
                        .unwrap_or(Path::new("planck.toml"))
                        .display()
                ),
            ));
        }
        let bindir = cluster::find_bindir_for(self.pg_bindir.as_deref(), major)?;
        Ok(Cluster::for_project(&self.project_dir, bindir).with_citus_workers(workers))
    }

    /// The connection to work on; starts the managed cluster when it is the target.
    pub async fn conn(&self) -> Result<ConnInfo> {
        match &self.target {
            Target::Url { url, source } => {
                let (mut info, warnings) = ConnInfo::resolve(url, &self.libpq)?;
                for w in &warnings {
                    self.warn(w);
                }
                info.source = Some(source.describe());
                self.debug(&format!(
                    "database: {} (from {})",
                    info.display(),
                    source.describe()
                ));
                Ok(info)
            }
            Target::Managed => {
                // Started and its database created under the cluster lock, so
                // first uses at once do not race (see `Cluster::ready`).
                let cluster = self.cluster()?;
                let url = cluster.ready(cluster::DEFAULT_DATABASE, self.log()).await?;
                let info = ConnInfo::parse(&url, true)?;
                self.debug(&format!("database: {} (managed cluster)", info.display()));
                Ok(info)
            }
        }
    }

    /// The log handle library code gets instead of `&Settings`.
    pub fn log(&self) -> Log {
        Log {
            quiet: self.quiet,
            verbose: self.verbose,
        }
    }

    /// A progress or status line on stderr, unless --quiet.
    pub fn info(&self, msg: &str) {
        self.log().info(msg)
    }

    /// A line on stderr with --verbose only.
    pub fn debug(&self, msg: &str) {
        self.log().debug(msg)
    }

    /// A warning on stderr (shown even with --quiet).
    pub fn warn(&self, msg: &str) {
        self.log().warn(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn global(args: &[&str]) -> Global {
        let mut v = vec!["planck"];
        v.extend_from_slice(args);
        v.push("demo");
        crate::cli::Cli::parse_from(v).global
    }

    #[test]
    fn flag_beats_env_beats_libpq() {
        let dir = std::env::temp_dir();
        let env = |k: &str| match k {
            "DATABASE_URL" => Some("postgres://env@h/d".to_string()),
            "PGHOST" => Some("libpq".to_string()),
            _ => None,
        };
        let s = Settings::resolve(
            &global(&["--database-url", "postgres://flag@h/d"]),
            &env,
            &dir,
        )
        .unwrap();
        assert!(matches!(
            s.target,
            Target::Url {
                source: UrlSource::Flag,
                ..
            }
        ));
        let s = Settings::resolve(&global(&[]), &env, &dir).unwrap();
        assert!(matches!(
            s.target,
            Target::Url {
                source: UrlSource::DatabaseUrlEnv,
                ..
            }
        ));
        let only_libpq = |k: &str| (k == "PGHOST").then(|| "libpq".to_string());
        let s = Settings::resolve(&global(&[]), &only_libpq, &dir).unwrap();
        assert!(matches!(
            s.target,
            Target::Url {
                source: UrlSource::LibpqEnv,
                ..
            }
        ));
    }
}
