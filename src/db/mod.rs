//! Connections: which database planck talks to, and how it says so safely.
//!
//! A [`Target`] is either a URL the user configured or planck's managed local
//! cluster. Every message that names a database goes through [`redact`], so a
//! password never reaches a terminal, a log or a report.

use std::str::FromStr;

use tokio_postgres::{Client, Config, NoTls};

use crate::error::{Error, Result};

/// Where a URL came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlSource {
    Flag,
    PlanckEnv,
    DatabaseUrlEnv,
    LibpqEnv,
    ConfigFile,
}

impl UrlSource {
    pub fn describe(self) -> &'static str {
        match self {
            UrlSource::Flag => "--database-url",
            UrlSource::PlanckEnv => "PLANCK_DATABASE_URL",
            UrlSource::DatabaseUrlEnv => "DATABASE_URL",
            UrlSource::LibpqEnv => "the PG* environment variables",
            UrlSource::ConfigFile => "planck.toml [database] url",
        }
    }
}

/// The database a command works on.
#[derive(Debug, Clone)]
pub enum Target {
    Url {
        url: String,
        source: UrlSource,
    },
    /// The managed cluster of the project, started on demand.
    Managed,
}

/// A resolved connection: a parsed config and the URL to show for it.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    pub config: Config,
    /// The URL as given, for child processes (`record` hands it to the test suite).
    pub url: String,
    pub managed: bool,
    /// Where the URL came from (`DATABASE_URL`, ...), named in connection errors.
    pub source: Option<&'static str>,
}

impl ConnInfo {
    pub fn parse(url: &str, managed: bool) -> Result<ConnInfo> {
        let config = Config::from_str(url).map_err(|e| Error::BadUrl {
            url: redact(url),
            message: e.to_string(),
        })?;
        if config.get_hosts().is_empty() {
            return Err(Error::BadUrl {
                url: redact(url),
                message: "no host given".into(),
            });
        }
        Ok(ConnInfo {
            config,
            url: url.to_string(),
            managed,
            source: None,
        })
    }

    /// The URL with its password hidden.
    pub fn display(&self) -> String {
        redact(&self.url)
    }

    pub fn dbname(&self) -> String {
        self.config
            .get_dbname()
            .or(self.config.get_user())
            .unwrap_or("postgres")
            .to_string()
    }

    /// The same server and credentials, another database.
    pub fn with_database(&self, dbname: &str) -> ConnInfo {
        let mut config = self.config.clone();
        config.dbname(dbname);
        ConnInfo {
            config,
            url: replace_dbname(&self.url, dbname),
            managed: self.managed,
            source: self.source,
        }
    }

    /// Connects, spawning the connection task on the current runtime.
    pub async fn connect(&self) -> Result<Client> {
        let (client, conn) = self.config.connect(NoTls).await.map_err(|e| {
            let shown = match self.source {
                Some(src) => format!("{} (from {src})", self.display()),
                None => self.display(),
            };
            connect_error(&shown, self.config.get_ssl_mode(), e)
        })?;
        tokio::spawn(async move {
            // Errors here surface on the client's next call.
            let _ = conn.await;
        });
        Ok(client)
    }
}

/// Creates the connection's database when it does not exist (managed cluster only).
pub async fn ensure_database(info: &ConnInfo) -> Result<()> {
    let admin = info.with_database("postgres").connect().await?;
    let name = info.dbname();
    let exists = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .map_err(|e| Error::db("looking up the database", e))?
        .is_some();
    if !exists {
        match admin
            .batch_execute(&format!("CREATE DATABASE {}", quote_ident(&name)))
            .await
        {
            Ok(()) => {}
            // Another planck process created it first.
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_DATABASE) => {}
            Err(e) => return Err(Error::db(format!("creating database {name}"), e)),
        }
    }
    Ok(())
}

/// Maps a failed connection attempt to an error with exit code 3 and a hint.
fn connect_error(
    url: &str,
    ssl: tokio_postgres::config::SslMode,
    e: tokio_postgres::Error,
) -> Error {
    use tokio_postgres::error::SqlState;
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let hint = if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            Some("check the user and password in the URL (or PGUSER/PGPASSWORD)".to_string())
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            Some("create the database first, or fix its name in the URL".to_string())
        } else {
            None
        };
        let mut message = format!("{} (SQLSTATE {})", db.message(), code.code());
        if let Some(d) = db.detail() {
            message.push_str(&format!("; {d}"));
        }
        return Error::Connect {
            url: url.to_string(),
            message,
            hint,
        };
    }
    let mut message = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        message.push_str(&format!(": {s}"));
        src = s.source();
    }
    let hint = if ssl == tokio_postgres::config::SslMode::Require {
        "planck connects without TLS: use sslmode=prefer or sslmode=disable, or reach the \
         server through a local tunnel"
            .to_string()
    } else {
        "is the server running and accepting TCP connections at that host and port? \
         Leave the URL unset to use planck's managed local PostgreSQL"
            .to_string()
    };
    Error::Connect {
        url: url.to_string(),
        message,
        hint: Some(hint),
    }
}

/// Hides the password of a `postgres://` URL or a `key=value` string.
pub fn redact(url: &str) -> String {
    if let Some(rest) = url
        .strip_prefix("postgres://")
        .map(|r| ("postgres://", r))
        .or_else(|| {
            url.strip_prefix("postgresql://")
                .map(|r| ("postgresql://", r))
        })
    {
        let (scheme, rest) = rest;
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let authority = match authority.rfind('@') {
            Some(at) => {
                let (userinfo, hosts) = authority.split_at(at);
                match userinfo.find(':') {
                    Some(c) => format!("{}:***{hosts}", &userinfo[..c]),
                    None => authority.to_string(),
                }
            }
            None => authority.to_string(),
        };
        // A password may also travel as a query parameter.
        let tail = redact_query_password(tail);
        return format!("{scheme}{authority}{tail}");
    }
    // key=value form.
    url.split_whitespace()
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_query_password(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let query = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some(("password", _)) => "password=***".to_string(),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{path}?{query}")
}

fn replace_dbname(url: &str, dbname: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let (before_query, query) = match rest.split_once('?') {
                Some((a, q)) => (a, format!("?{q}")),
                None => (rest, String::new()),
            };
            let authority = before_query.split('/').next().unwrap_or("");
            return format!("{scheme}{authority}/{dbname}{query}");
        }
    }
    // key=value form: drop any dbname and append ours.
    let mut parts: Vec<String> = url
        .split_whitespace()
        .filter(|kv| !kv.starts_with("dbname="))
        .map(str::to_string)
        .collect();
    parts.push(format!("dbname={dbname}"));
    parts.join(" ")
}

/// Builds a URL from libpq's environment variables, if any is set.
pub fn url_from_libpq_env(get: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let host = get("PGHOST");
    let port = get("PGPORT");
    let user = get("PGUSER");
    let db = get("PGDATABASE");
    let password = get("PGPASSWORD");
    if host.is_none() && port.is_none() && user.is_none() && db.is_none() && password.is_none() {
        return None;
    }
    let mut parts = vec![format!(
        "host={}",
        host.unwrap_or_else(|| "localhost".into())
    )];
    if let Some(p) = port {
        parts.push(format!("port={p}"));
    }
    if let Some(u) = user {
        parts.push(format!("user={u}"));
    }
    if let Some(d) = db {
        parts.push(format!("dbname={d}"));
    }
    if let Some(pw) = password {
        parts.push(format!("password={pw}"));
    }
    Some(parts.join(" "))
}

/// Quotes an SQL identifier (`"` doubled).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes an SQL string literal, for the rare statements (DDL) that take no parameters.
pub fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords_everywhere() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/x"),
            "postgres://app:***@db:5432/x"
        );
        assert_eq!(redact("postgres://app@db/x"), "postgres://app@db/x");
        assert_eq!(
            redact("postgresql://u:p@h/d?sslmode=disable&password=zz"),
            "postgresql://u:***@h/d?sslmode=disable&password=***"
        );
        assert_eq!(
            redact("host=h user=u password=pw dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
    }

    #[test]
    fn replaces_the_database_of_a_url() {
        assert_eq!(
            replace_dbname("postgres://u:p@h:1/a?x=1", "b"),
            "postgres://u:p@h:1/b?x=1"
        );
        assert_eq!(replace_dbname("postgres://h", "b"), "postgres://h/b");
        assert_eq!(
            replace_dbname("host=h dbname=a user=u", "b"),
            "host=h user=u dbname=b"
        );
    }

    #[test]
    fn libpq_env_builds_a_keyvalue_string() {
        let env = |k: &str| match k {
            "PGHOST" => Some("db".to_string()),
            "PGUSER" => Some("me".to_string()),
            _ => None,
        };
        assert_eq!(url_from_libpq_env(&env).as_deref(), Some("host=db user=me"));
        assert_eq!(url_from_libpq_env(&|_| None), None);
    }

    #[test]
    fn malformed_urls_are_rejected() {
        assert!(matches!(
            ConnInfo::parse("postgres://h:notaport/x", false),
            Err(Error::BadUrl { .. })
        ));
    }
}
