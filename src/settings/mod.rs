//! Settings: the validated result of flags, environment and `planck.toml`.
//!
//! Data flows one way: clap's raw flags ([`crate::cli::Global`]) and the
//! environment are merged with the config file here, once, into [`Settings`].
//! Commands read only `Settings`; none reads an env var or a file on its own.
//!
//! Override order, strongest first, for the database: `--database-url`,
//! `PLANCK_DATABASE_URL`, `DATABASE_URL`, libpq's `PGHOST`/`PGPORT`/`PGUSER`/
//! `PGDATABASE`/`PGPASSWORD`, `planck.toml`'s `[database] url`, and last the
//! managed local cluster under `.planck/`. For everything else: flag, then
//! `planck.toml`, then the built-in default.

use std::path::{Path, PathBuf};

use crate::cli::Global;
use crate::cluster::{self, Cluster};
use crate::config::{self, ConfigFile};
use crate::db::{self, ConnInfo, Target, UrlSource};
use crate::error::{Error, Result};
use crate::output::{Format, Log};

pub mod seed;

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
        } else if let Some(url) = db::url_from_libpq_env(&env_nonempty) {
            Target::Url {
                url,
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
        if let Target::Url { url, .. } = &target {
            // Fail early, before any work, on a URL that does not parse.
            ConnInfo::parse(url, false)?;
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
        let bindir = cluster::find_bindir(self.pg_bindir.as_deref())?;
        Ok(Cluster::for_project(&self.project_dir, bindir))
    }

    /// The connection to work on; starts the managed cluster when it is the target.
    pub async fn conn(&self) -> Result<ConnInfo> {
        match &self.target {
            Target::Url { url, source } => {
                self.debug(&format!(
                    "database: {} (from {})",
                    db::redact(url),
                    source.describe()
                ));
                let mut info = ConnInfo::parse(url, false)?;
                info.source = Some(source.describe());
                Ok(info)
            }
            Target::Managed => {
                let cluster = self.cluster()?;
                let port = cluster.start(None, &mut |m| self.debug(m))?;
                let info = ConnInfo::parse(&cluster.url(port, cluster::DEFAULT_DATABASE), true)?;
                db::ensure_database(&info).await?;
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
