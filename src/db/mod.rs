//! Connections: which database planck talks to, and how it says so safely.
//!
//! A [`Target`] is either a connection string the user configured or planck's
//! managed local cluster. A connection string (a URL or a libpq keyword
//! string) is parsed once, with libpq's rules ([`config`]), into a
//! [`ConnInfo`]: a `tokio_postgres::Config` plus what tokio-postgres does not
//! know (libpq's six TLS modes, the whole-attempt timeout, every
//! `target_session_attrs`, the password file). What is shown to the user is
//! rebuilt from that parsed form with the password as `***` ([`ConnInfo::display`]),
//! never cut out of the text.
//!
//! - [`config`]: the parser of both string forms.
//! - [`libpq`]: `PG*` variables, `.pgpass`, `pg_service.conf`.
//! - [`tls`]: libpq's TLS modes over rustls.
//! - [`connect`]: one host after another, each attempt under a timeout.

pub(crate) mod admin;
pub(crate) mod config;
pub(crate) mod connect;
pub(crate) mod lent;
pub(crate) mod libpq;
pub(crate) mod tls;

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::Config;
use tokio_postgres::config::{ChannelBinding, Host, SslNegotiation};

use crate::error::{Error, Result};

pub use admin::{TableFile, drop_database, table_files};
pub use config::Spec;
pub use connect::pooler_hint;
pub use libpq::{LibpqEnv, Passfile};
pub use tls::{RootCert, SslMode, TlsOptions};

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

/// libpq's `target_session_attrs`: which of several hosts is acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAttrs {
    Any,
    ReadWrite,
    ReadOnly,
    Primary,
    Standby,
    /// A standby if one answers, else any server.
    PreferStandby,
}

impl SessionAttrs {
    fn parse(s: &str) -> Option<SessionAttrs> {
        Some(match s {
            "any" => SessionAttrs::Any,
            "read-write" => SessionAttrs::ReadWrite,
            "read-only" => SessionAttrs::ReadOnly,
            "primary" => SessionAttrs::Primary,
            "standby" => SessionAttrs::Standby,
            "prefer-standby" => SessionAttrs::PreferStandby,
            _ => return None,
        })
    }
}

/// planck's connection timeout when neither `connect_timeout` nor
/// `PGCONNECT_TIMEOUT` is set (libpq waits forever; planck must not hang).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// TCP keepalive and user-timeout defaults: a peer that vanishes (mid-COPY,
/// or while a statement runs) is noticed within 30 s, where the system's
/// defaults take two hours. Each can be overridden with libpq's keyword.
pub const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_secs(10);
pub const DEFAULT_KEEPALIVES_INTERVAL: Duration = Duration::from_secs(5);
pub const DEFAULT_KEEPALIVES_COUNT: u32 = 3;
pub const DEFAULT_TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// A resolved connection: a parsed config and how to show it.
#[derive(Clone)]
pub struct ConnInfo {
    /// Every host, port, the login and the session options. Callers may set
    /// options on it (`application_name`) before [`ConnInfo::connect`].
    pub config: Config,
    /// A full `postgres://` URL (password included) for child processes
    /// (`record` hands it to the test suite). Never print it: use [`ConnInfo::display`].
    pub url: String,
    pub managed: bool,
    /// Where the URL came from (`DATABASE_URL`, ...), named in connection errors.
    pub source: Option<&'static str>,
    pub tls: TlsOptions,
    /// The limit on each host's whole attempt (TCP, TLS, startup,
    /// authentication); `None` waits forever (`connect_timeout=0`).
    pub connect_timeout: Option<Duration>,
    pub session_attrs: SessionAttrs,
    /// `load_balance_hosts=random`: try the hosts in random order.
    pub load_balance: bool,
    /// The password file, consulted for a host when no password is given.
    pub passfile: Option<Arc<Passfile>>,
    spec: Spec,
    /// The TLS connector made for `tls`, shared by clones (see `connect`).
    tls_cache: TlsCache,
}

/// The TLS connector last made, with the options it was made for.
type TlsCache = Arc<Mutex<Option<(TlsOptions, tokio_postgres_rustls::MakeRustlsConnect)>>>;

impl fmt::Debug for ConnInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnInfo")
            .field("url", &self.display())
            .field("managed", &self.managed)
            .field("source", &self.source)
            .field("tls", &self.tls)
            .field("connect_timeout", &self.connect_timeout)
            .field("session_attrs", &self.session_attrs)
            .field("passfile", &self.passfile)
            .finish()
    }
}

fn bad(text: &str, message: impl Into<String>) -> Error {
    Error::BadUrl {
        // Not `redact`: that parses again, and this string did not parse.
        url: config::redact_unparsed(text),
        message: message.into(),
    }
}

impl ConnInfo {
    /// Parses a URL or keyword string as it is: no environment, no files
    /// (the managed cluster's URL, tests). A string without a host means
    /// `localhost`. User connection strings go through [`ConnInfo::resolve`].
    pub fn parse(text: &str, managed: bool) -> Result<ConnInfo> {
        let mut spec = config::parse(text).map_err(|e| bad(text, e.message))?;
        if spec.get("host").is_none() && spec.get("hostaddr").is_none() {
            spec.set_default("host", "localhost");
        }
        ConnInfo::from_spec(spec, managed, &LibpqEnv::empty()).map_err(|m| bad(text, m))
    }

    /// Resolves a user's connection string with libpq's conventions: the
    /// service file (`service=`, `PGSERVICE`), the `PG*` variables for every
    /// keyword the string leaves unset, the default user and host, the
    /// password file, and the default TLS files under `~/.postgresql/`.
    /// An empty string takes everything from the environment (libpq's
    /// `PQconnectdb("")`), with no string built in between.
    ///
    /// Returns the connection and warnings to show (a password file that
    /// group or others may read is ignored, as libpq does).
    pub fn resolve(text: &str, env: &LibpqEnv) -> Result<(ConnInfo, Vec<String>)> {
        let mut spec = config::parse(text).map_err(|e| bad(text, e.message))?;
        libpq::apply_defaults(&mut spec, env).map_err(|e| bad(text, e.message))?;
        let mut warnings = Vec::new();
        let passfile = match libpq::passfile_path(&spec, env) {
            Some(p) if spec.get("password").is_none() => match Passfile::load(&p) {
                Ok(pf) => pf.map(Arc::new),
                Err(w) => {
                    warnings.push(w);
                    None
                }
            },
            _ => None,
        };
        let mut info = ConnInfo::from_spec(spec, false, env).map_err(|m| bad(text, m))?;
        info.passfile = passfile;
        Ok((info, warnings))
    }

    /// Builds the connection from parsed keywords, phase by phase.
    fn from_spec(
        spec: Spec,
        managed: bool,
        env: &LibpqEnv,
    ) -> std::result::Result<ConnInfo, String> {
        let mut config = Config::new();
        hosts_into(&spec, &mut config)?;
        login_into(&spec, &mut config);
        let connect_timeout = tcp_into(&spec, &mut config)?;
        protocol_into(&spec, &mut config)?;
        let session_attrs = match spec.get("target_session_attrs") {
            None => SessionAttrs::Any,
            Some(v) => SessionAttrs::parse(v).ok_or_else(|| {
                format!(
                    "invalid target_session_attrs value: \"{v}\" (expected any, read-write, \
                     read-only, primary, standby or prefer-standby)"
                )
            })?,
        };
        let load_balance =
            one_of(&spec, "load_balance_hosts", &["disable", "random"])? == Some("random");
        let tls = tls_options(&spec, env)?;
        if tls.mode == SslMode::Disable && config.get_channel_binding() == ChannelBinding::Require {
            return Err("channel_binding=require needs TLS, but sslmode is disable".into());
        }
        let mut info = ConnInfo {
            config,
            url: String::new(),
            managed,
            source: None,
            tls,
            connect_timeout,
            session_attrs,
            load_balance,
            passfile: None,
            spec,
            tls_cache: Arc::default(),
        };
        info.url = info.to_url(false);
        Ok(info)
    }

    /// The connection as a URL with its password shown as `***`, whatever
    /// form it was given in.
    pub fn display(&self) -> String {
        self.to_url(true)
    }

    fn to_url(&self, mask: bool) -> String {
        use config::percent_encode as enc;
        let mut s = String::from("postgres://");
        let c = &self.config;
        let password = c.get_password().map(|p| {
            if mask {
                "***".to_string()
            } else {
                enc(&String::from_utf8_lossy(p))
            }
        });
        if let Some(u) = c.get_user() {
            s.push_str(&enc(u));
        }
        if let Some(p) = &password {
            s.push(':');
            s.push_str(p);
        }
        if c.get_user().is_some() || password.is_some() {
            s.push('@');
        }
        let hosts = c.get_hosts();
        let ports = c.get_ports();
        let port_of = |i: usize| ports.get(i).or(ports.first()).copied();
        let mut query: Vec<(String, String)> = Vec::new();
        if hosts.iter().any(|h| matches!(h, Host::Unix(_))) {
            let list: Vec<String> = hosts
                .iter()
                .map(|h| match h {
                    Host::Tcp(t) => t.clone(),
                    Host::Unix(p) => p.display().to_string(),
                })
                .collect();
            query.push(("host".into(), list.join(",")));
            if !ports.is_empty() {
                let list: Vec<String> = (0..hosts.len())
                    .map(|i| port_of(i).unwrap_or(5432).to_string())
                    .collect();
                query.push(("port".into(), list.join(",")));
            }
        } else {
            let list: Vec<String> = hosts
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let name = match h {
                        Host::Tcp(t) if t.contains(':') => format!("[{t}]"),
                        Host::Tcp(t) => enc(t),
                        Host::Unix(_) => unreachable!("handled above"),
                    };
                    match port_of(i) {
                        Some(p) => format!("{name}:{p}"),
                        None => name,
                    }
                })
                .collect();
            s.push_str(&list.join(","));
        }
        s.push('/');
        if let Some(d) = c.get_dbname() {
            s.push_str(&enc(d));
        }
        const IN_AUTHORITY: &[&str] = &[
            "host",
            "port",
            "user",
            "password",
            "dbname",
            "service",
            "passfile",
            "application_name",
            "fallback_application_name",
        ];
        for (k, v) in self.spec.iter() {
            if !IN_AUTHORITY.contains(&k) {
                query.push((k.to_string(), v.to_string()));
            }
        }
        if let Some(a) = c.get_application_name() {
            query.push(("application_name".into(), a.to_string()));
        }
        if !query.is_empty() {
            let q: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{k}={}", enc(v)))
                .collect();
            s.push('?');
            s.push_str(&q.join("&"));
        }
        s
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
        let mut info = self.clone();
        info.config.dbname(dbname);
        let _ = info.spec.set("dbname", dbname);
        info.url = info.to_url(false);
        info
    }
}

/// A keyword's comma-separated list (`host=a,b`).
fn list(spec: &Spec, k: &str) -> Vec<String> {
    spec.get(k)
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default()
}

/// A keyword whose value must be one of `allowed`.
fn one_of<'a>(
    spec: &'a Spec,
    k: &str,
    allowed: &[&str],
) -> std::result::Result<Option<&'a str>, String> {
    match spec.get(k) {
        None => Ok(None),
        Some(v) if allowed.contains(&v) => Ok(Some(v)),
        Some(v) => Err(format!(
            "invalid {k} value: \"{v}\" (expected {})",
            allowed.join(", ")
        )),
    }
}

/// An integer keyword.
fn integer(spec: &Spec, k: &str) -> std::result::Result<Option<i64>, String> {
    spec.get(k)
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| format!("invalid integer value \"{v}\" for connection option \"{k}\""))
        })
        .transpose()
}

/// `host`, `hostaddr` and `port`, matched up as libpq does: one port for
/// every host, or one per host; an empty entry is the default.
fn hosts_into(spec: &Spec, config: &mut Config) -> std::result::Result<(), String> {
    let mut hosts = list(spec, "host");
    let hostaddrs: Vec<IpAddr> = list(spec, "hostaddr")
        .iter()
        .map(|a| {
            a.parse()
                .map_err(|_| format!("could not parse network address \"{a}\""))
        })
        .collect::<std::result::Result<_, _>>()?;
    if !hostaddrs.is_empty() {
        if hosts.is_empty() {
            hosts = hostaddrs.iter().map(IpAddr::to_string).collect();
        } else if hosts.len() != hostaddrs.len() {
            return Err(format!(
                "could not match {} host names to {} hostaddr values",
                hosts.len(),
                hostaddrs.len()
            ));
        }
    }
    for h in &hosts {
        let h = if h.is_empty() { "localhost" } else { h };
        if h.starts_with('/') {
            config.host_path(h);
        } else {
            config.host(h);
        }
    }
    for a in &hostaddrs {
        config.hostaddr(*a);
    }
    let ports = list(spec, "port");
    if ports.len() > 1 && ports.len() != hosts.len() {
        return Err(format!(
            "could not match {} port numbers to {} hosts",
            ports.len(),
            hosts.len()
        ));
    }
    for p in &ports {
        let port = if p.is_empty() {
            5432
        } else {
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("invalid port number: \"{p}\""))?
        };
        config.port(port);
    }
    Ok(())
}

/// The login and the session's startup options.
fn login_into(spec: &Spec, config: &mut Config) {
    if let Some(u) = spec.get("user") {
        config.user(u);
    }
    if let Some(p) = spec.get("password") {
        config.password(p);
    }
    if let Some(d) = spec.get("dbname") {
        config.dbname(d);
    }
    if let Some(o) = spec.get("options") {
        config.options(o);
    }
    if let Some(a) = spec
        .get("application_name")
        .or(spec.get("fallback_application_name"))
    {
        config.application_name(a);
    }
}

/// The connect timeout (returned: planck applies it to the whole attempt),
/// keepalives and tcp_user_timeout, with planck's defaults.
fn tcp_into(spec: &Spec, config: &mut Config) -> std::result::Result<Option<Duration>, String> {
    let connect_timeout = match integer(spec, "connect_timeout")? {
        None => Some(DEFAULT_CONNECT_TIMEOUT),
        // libpq: zero or negative waits forever.
        Some(s) if s <= 0 => None,
        Some(s) => Some(Duration::from_secs(s as u64)),
    };
    if let Some(t) = connect_timeout {
        config.connect_timeout(t);
    }
    config.keepalives(integer(spec, "keepalives")? != Some(0));
    let seconds_or = |k: &str, d: Duration| -> std::result::Result<Duration, String> {
        Ok(match integer(spec, k)? {
            Some(s) if s > 0 => Duration::from_secs(s as u64),
            _ => d,
        })
    };
    config.keepalives_idle(seconds_or("keepalives_idle", DEFAULT_KEEPALIVES_IDLE)?);
    config.keepalives_interval(seconds_or(
        "keepalives_interval",
        DEFAULT_KEEPALIVES_INTERVAL,
    )?);
    config.keepalives_retries(match integer(spec, "keepalives_count")? {
        Some(n) if n > 0 => n as u32,
        _ => DEFAULT_KEEPALIVES_COUNT,
    });
    // libpq's tcp_user_timeout is in milliseconds; 0 means the system's default.
    match integer(spec, "tcp_user_timeout")? {
        None => {
            config.tcp_user_timeout(DEFAULT_TCP_USER_TIMEOUT);
        }
        Some(ms) if ms > 0 => {
            config.tcp_user_timeout(Duration::from_millis(ms as u64));
        }
        Some(_) => {}
    }
    Ok(connect_timeout)
}

/// Channel binding, TLS negotiation, and the protocol options planck cannot honour.
fn protocol_into(spec: &Spec, config: &mut Config) -> std::result::Result<(), String> {
    config.channel_binding(
        match one_of(spec, "channel_binding", &["disable", "prefer", "require"])? {
            Some("disable") => ChannelBinding::Disable,
            Some("require") => ChannelBinding::Require,
            _ => ChannelBinding::Prefer,
        },
    );
    if one_of(spec, "sslnegotiation", &["postgres", "direct"])? == Some("direct") {
        config.ssl_negotiation(SslNegotiation::Direct);
    }
    if one_of(spec, "gssencmode", &["disable", "prefer", "require"])? == Some("require") {
        return Err("gssencmode=require: planck has no GSSAPI support".into());
    }
    if let Some(enc) = spec.get("client_encoding")
        && !["utf8", "utf-8", "auto"]
            .iter()
            .any(|e| enc.eq_ignore_ascii_case(e))
    {
        return Err(format!(
            "client_encoding \"{enc}\": planck always talks UTF8"
        ));
    }
    Ok(())
}

/// The TLS keywords, with libpq's defaults under `~/.postgresql/`.
fn tls_options(spec: &Spec, env: &LibpqEnv) -> std::result::Result<TlsOptions, String> {
    let root_cert = match spec.get("sslrootcert") {
        Some("system") => Some(RootCert::System),
        Some(p) => Some(RootCert::File(PathBuf::from(p))),
        None => env.postgresql_dir_file("root.crt").map(RootCert::File),
    };
    let mode = match spec.get("sslmode") {
        Some(m) => SslMode::parse(m).ok_or_else(|| {
            format!(
                "invalid sslmode value: \"{m}\" (expected disable, allow, prefer, require, \
                 verify-ca or verify-full)"
            )
        })?,
        // libpq 16: the system's roots are only safe with host name checks.
        None if root_cert == Some(RootCert::System) => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    if root_cert == Some(RootCert::System)
        && mode != SslMode::VerifyFull
        && mode != SslMode::Disable
    {
        return Err(format!(
            "weak sslmode \"{}\" may not be used with sslrootcert=system (use \"verify-full\")",
            mode.as_str()
        ));
    }
    let version = |k: &str| -> std::result::Result<Option<&str>, String> {
        match spec.get(k) {
            None | Some("") => Ok(None),
            Some(v @ ("TLSv1.2" | "TLSv1.3")) => Ok(Some(v)),
            Some(v @ ("TLSv1" | "TLSv1.1")) => Err(format!(
                "{k}={v}: planck's TLS supports TLSv1.2 and TLSv1.3 only"
            )),
            Some(v) => Err(format!("invalid {k} value: \"{v}\"")),
        }
    };
    Ok(TlsOptions {
        mode,
        root_cert,
        cert: spec
            .get("sslcert")
            .map(PathBuf::from)
            .or_else(|| env.postgresql_dir_file("postgresql.crt")),
        key: spec
            .get("sslkey")
            .map(PathBuf::from)
            .or_else(|| env.postgresql_dir_file("postgresql.key")),
        crl: spec
            .get("sslcrl")
            .filter(|f| !f.is_empty())
            .map(PathBuf::from),
        crl_dir: spec
            .get("sslcrldir")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from),
        default_crl: env.postgresql_dir_file("root.crl"),
        sni: spec.get("sslsni") != Some("0"),
        min_tls13: version("ssl_min_protocol_version")? == Some("TLSv1.3"),
        max_tls12: version("ssl_max_protocol_version")? == Some("TLSv1.2"),
    })
}

/// The oldest server planck works with: PostgreSQL 14 (`server_version_num`
/// 140000). An older one is refused where planck first reads the version
/// (explain's catalog, record's probe), naming it.
pub fn require_supported(server_version_num: i32) -> Result<()> {
    if server_version_num >= crate::cluster::MIN_MAJOR as i32 * 10000 {
        return Ok(());
    }
    Err(Error::usage_hint(
        format!(
            "the server is PostgreSQL {}.{}; planck needs PostgreSQL 14 or later",
            server_version_num / 10000,
            server_version_num % 10000
        ),
        "point planck at a PostgreSQL 14+ server, or leave the URL out to use planck's managed cluster",
    ))
}

/// A connection string as it may be shown: parsed and rebuilt with the
/// password as `***`; a string that does not parse is shown up to where it
/// stops parsing, with every password hidden.
pub fn redact(text: &str) -> String {
    match ConnInfo::parse(text, false) {
        Ok(info) => info.display(),
        Err(_) => config::redact_unparsed(text),
    }
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
    /// Issue 31: a server older than 14 is refused with its version named.
    #[test]
    fn servers_before_14_are_refused_naming_the_version() {
        assert!(require_supported(140000).is_ok());
        assert!(require_supported(180004).is_ok());
        let e = require_supported(130012).unwrap_err().to_string();
        assert!(e.contains("PostgreSQL 13.12"), "{e}");
        assert!(e.contains("14 or later"), "{e}");
    }

    use super::*;

    fn env(vars: &[(&str, &str)]) -> LibpqEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LibpqEnv::capture(&move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn redacts_passwords_everywhere() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/x"),
            "postgres://app:***@db:5432/x"
        );
        assert_eq!(redact("postgres://app@db/x"), "postgres://app@db/x");
        assert_eq!(
            redact("postgresql://u:p@h/d?sslmode=disable&password=zz"),
            "postgres://u:***@h/d?sslmode=disable"
        );
        assert_eq!(
            redact("host=h user=u password=pw dbname=d"),
            "postgres://u:***@h/d"
        );
    }

    /// Issue 8, 3.1: `password='my Secret PW'` was shown as `*** Secret PW'`.
    #[test]
    fn quoted_keyword_password_is_hidden_whole() {
        let shown = redact("host=h user=u password='my Secret PW' dbname=d");
        assert_eq!(shown, "postgres://u:***@h/d");
        let info = ConnInfo::parse("host=h user=u password='my Secret PW'", false).unwrap();
        assert_eq!(info.config.get_password(), Some(&b"my Secret PW"[..]));
        assert!(!info.display().contains("Secret"));
        assert!(!format!("{info:?}").contains("Secret"));
    }

    /// Issue 8, 3.1: `password =hunter2` (spaces around `=`) was shown in full.
    #[test]
    fn spaced_keyword_password_is_hidden() {
        let shown = redact("host=h user=u password =hunter2");
        assert_eq!(shown, "postgres://u:***@h/");
        assert!(!redact("host=h password = hunter2").contains("hunter2"));
    }

    #[test]
    fn display_is_a_url_for_every_form() {
        for text in [
            "postgres://u:pw@h:1/d",
            "host=h port=1 user=u password=pw dbname=d",
            "host = h port = 1 user = u password = 'pw' dbname = d",
            "postgresql://u@h:1/d?password=pw",
        ] {
            assert_eq!(redact(text), "postgres://u:***@h:1/d", "{text}");
        }
        assert_eq!(
            redact("host=/var/run/postgresql port=5433 user=u dbname=d"),
            "postgres://u@/d?host=%2Fvar%2Frun%2Fpostgresql&port=5433"
        );
        assert_eq!(
            redact("postgres://u:pw@a:1,b:2/d?target_session_attrs=read-write&sslmode=require"),
            "postgres://u:***@a:1,b:2/d?sslmode=require&target_session_attrs=read-write"
        );
        assert_eq!(redact("postgres://[::1]:5/d"), "postgres://[::1]:5/d");
    }

    #[test]
    fn the_url_for_children_reads_back_to_the_same_connection() {
        let info = ConnInfo::parse(
            "host=h port=7 user='u x' password='it''s' dbname=d sslmode=verify-full application_name=app",
            false,
        );
        assert!(info.is_err(), "'' is not an escape in libpq");
        let info = ConnInfo::parse(
            r"host=h port=7 user='u x' password='it\'s %' dbname=d sslmode=verify-full application_name=app",
            false,
        )
        .unwrap();
        let again = ConnInfo::parse(&info.url, false).unwrap();
        assert_eq!(again.config.get_password(), Some(&b"it's %"[..]));
        assert_eq!(again.config.get_user(), Some("u x"));
        assert_eq!(again.tls.mode, SslMode::VerifyFull);
        assert_eq!(again.config.get_application_name(), Some("app"));
        assert_eq!(again.url, info.url);
    }

    #[test]
    fn replaces_the_database() {
        let info = ConnInfo::parse("postgres://u:p@h:1/a?connect_timeout=3", false).unwrap();
        let other = info.with_database("b c");
        assert_eq!(other.url, "postgres://u:p@h:1/b%20c?connect_timeout=3");
        assert_eq!(other.dbname(), "b c");
        let kv = ConnInfo::parse("host=h dbname=a user=u", false).unwrap();
        assert_eq!(kv.with_database("b").display(), "postgres://u@h/b");
    }

    /// Issue 8, 3.1: a PGPASSWORD with a space or a quote was rejected.
    #[test]
    fn libpq_env_passwords_with_spaces_and_quotes() {
        let get = |k: &str| match k {
            "PGHOST" => Some("db".to_string()),
            "PGUSER" => Some("me".to_string()),
            "PGPASSWORD" => Some("it's a \\ secret".to_string()),
            _ => None,
        };
        // No string in between: resolve("") reads the variables directly.
        let (info, _) = ConnInfo::resolve("", &LibpqEnv::capture(&get)).unwrap();
        assert_eq!(info.config.get_password(), Some(&b"it's a \\ secret"[..]));
        assert_eq!(info.display(), "postgres://me:***@db/");
    }

    #[test]
    fn malformed_strings_are_rejected() {
        for text in [
            "postgres://h:notaport/x",
            "host=h port=0",
            "host=a,b port=1,2,3",
            "host=h sslmode=verify_full",
            "host=h connect_timeout=soon",
            "host=h target_session_attrs=whatever",
            "host=h hostaddr=not-an-ip",
            "host=h sslrootcert=system sslmode=require",
            "host=h sslmode=disable channel_binding=require",
            "host=h gssencmode=require",
        ] {
            assert!(
                matches!(ConnInfo::parse(text, false), Err(Error::BadUrl { .. })),
                "{text}"
            );
        }
        let e = ConnInfo::parse("postgres://u:pw@host:notaport/db", false).unwrap_err();
        assert!(!e.to_string().contains("pw@"), "{e}");
    }

    #[test]
    fn timeouts_and_keepalives() {
        let info = ConnInfo::parse("host=h", false).unwrap();
        assert_eq!(info.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
        assert!(info.config.get_keepalives());
        assert_eq!(info.config.get_keepalives_idle(), DEFAULT_KEEPALIVES_IDLE);
        assert_eq!(
            info.config.get_tcp_user_timeout(),
            Some(&DEFAULT_TCP_USER_TIMEOUT)
        );
        let info = ConnInfo::parse(
            "host=h connect_timeout=3 keepalives_idle=7 keepalives_count=2 tcp_user_timeout=1500",
            false,
        )
        .unwrap();
        assert_eq!(info.connect_timeout, Some(Duration::from_secs(3)));
        assert_eq!(info.config.get_keepalives_idle(), Duration::from_secs(7));
        assert_eq!(info.config.get_keepalives_retries(), Some(2));
        assert_eq!(
            info.config.get_tcp_user_timeout(),
            Some(&Duration::from_millis(1500))
        );
        let info = ConnInfo::parse("host=h connect_timeout=0", false).unwrap();
        assert_eq!(info.connect_timeout, None, "0 waits forever, as in libpq");
        let (info, _) = ConnInfo::resolve("host=h", &env(&[("PGCONNECT_TIMEOUT", "4")])).unwrap();
        assert_eq!(info.connect_timeout, Some(Duration::from_secs(4)));
        let (info, _) = ConnInfo::resolve(
            "host=h connect_timeout=2",
            &env(&[("PGCONNECT_TIMEOUT", "4")]),
        )
        .unwrap();
        assert_eq!(info.connect_timeout, Some(Duration::from_secs(2)));
    }

    #[test]
    fn tls_keywords_and_their_variables() {
        let info = ConnInfo::parse("host=h", false).unwrap();
        assert_eq!(info.tls.mode, SslMode::Prefer);
        assert_eq!(info.tls.root_cert, None);
        let e = env(&[
            ("HOME", "/home/me"),
            ("PGSSLMODE", "verify-ca"),
            ("PGCHANNELBINDING", "require"),
        ]);
        let (info, _) = ConnInfo::resolve("host=h", &e).unwrap();
        assert_eq!(info.tls.mode, SslMode::VerifyCa);
        assert_eq!(
            info.tls.root_cert,
            Some(RootCert::File("/home/me/.postgresql/root.crt".into()))
        );
        assert_eq!(
            info.tls.cert,
            Some("/home/me/.postgresql/postgresql.crt".into())
        );
        assert_eq!(info.config.get_channel_binding(), ChannelBinding::Require);
        let (info, _) =
            ConnInfo::resolve("host=h sslmode=require sslrootcert=/ca.pem", &e).unwrap();
        assert_eq!(
            info.tls.mode,
            SslMode::Require,
            "the string beats PGSSLMODE"
        );
        assert_eq!(info.tls.root_cert, Some(RootCert::File("/ca.pem".into())));
        let e = env(&[
            ("PGSSLROOTCERT", "system"),
            ("PGSSLCERT", "/c.crt"),
            ("PGSSLKEY", "/c.key"),
        ]);
        let (info, _) = ConnInfo::resolve("host=h", &e).unwrap();
        assert_eq!(info.tls.mode, SslMode::VerifyFull);
        assert_eq!(info.tls.root_cert, Some(RootCert::System));
        assert_eq!(info.tls.key, Some("/c.key".into()));
        let info = ConnInfo::parse("postgres://h/d?sslmode=verify-full", false).unwrap();
        assert_eq!(info.tls.mode, SslMode::VerifyFull);
    }

    #[test]
    fn multiple_hosts_and_session_attrs() {
        let info = ConnInfo::parse(
            "postgres://u@h1:1,h2:2/db?target_session_attrs=read-write&load_balance_hosts=random",
            false,
        )
        .unwrap();
        assert_eq!(info.config.get_hosts().len(), 2);
        assert_eq!(info.config.get_ports(), &[1, 2]);
        assert_eq!(info.session_attrs, SessionAttrs::ReadWrite);
        assert!(info.load_balance);
        let info =
            ConnInfo::parse("host=a,b port=5 target_session_attrs=prefer-standby", false).unwrap();
        assert_eq!(info.config.get_ports(), &[5]);
        assert_eq!(info.session_attrs, SessionAttrs::PreferStandby);
        let info = ConnInfo::parse("hostaddr=127.0.0.1,::1", false).unwrap();
        assert_eq!(info.config.get_hostaddrs().len(), 2);
    }

    #[test]
    fn appname_and_options_from_the_environment() {
        let e = env(&[
            ("PGAPPNAME", "ci job"),
            ("PGOPTIONS", "-c search_path=app"),
            ("PGHOST", "envhost"),
            ("PGUSER", "envuser"),
        ]);
        let (info, _) = ConnInfo::resolve("postgres:///app", &e).unwrap();
        assert_eq!(info.config.get_application_name(), Some("ci job"));
        assert_eq!(info.config.get_options(), Some("-c search_path=app"));
        assert_eq!(
            info.display(),
            "postgres://envuser@envhost/app?options=-c%20search_path%3Dapp&application_name=ci%20job"
        );
        let (info, _) = ConnInfo::resolve("postgres://h/app?application_name=mine", &e).unwrap();
        assert_eq!(info.config.get_application_name(), Some("mine"));
    }

    #[test]
    fn resolve_reads_the_password_file_only_without_a_password() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pf = dir.path().join("pass");
        std::fs::write(&pf, "h:5432:*:u:frompass\n").unwrap();
        std::fs::set_permissions(&pf, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = env(&[("PGPASSFILE", pf.to_str().unwrap())]);
        let (info, w) = ConnInfo::resolve("host=h user=u", &e).unwrap();
        assert!(w.is_empty());
        let file = info.passfile.as_ref().expect("password file loaded");
        assert_eq!(file.lookup("h", 5432, "u", "u"), Some("frompass"));
        assert!(!info.display().contains("frompass"));
        let (info, _) = ConnInfo::resolve("host=h user=u password=x", &e).unwrap();
        assert!(info.passfile.is_none());
        std::fs::set_permissions(&pf, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (info, w) = ConnInfo::resolve("host=h user=u", &e).unwrap();
        assert!(info.passfile.is_none());
        assert!(w[0].contains("group or world access"), "{w:?}");
    }

    #[test]
    fn quote_helpers() {
        assert_eq!(quote_ident(r#"a"b"#), r#""a""b""#);
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}
