//! Opening a connection: each host in turn, each host's whole attempt (TCP,
//! TLS, startup, authentication, the `target_session_attrs` check) under one
//! timeout, with libpq's fallbacks between plain and TLS.
//!
//! tokio-postgres applies `connect_timeout` to the TCP connect only, so a
//! server that accepts TCP and then says nothing would hang planck forever;
//! and it tries hosts itself with no way to say which one failed how. So
//! planck builds a single-host `Config` per host and runs the attempts here.
//! Errors name every host tried and why it failed (exit 3).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_postgres::config::{Host, SslMode as PgSslMode};
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::lent::{self, Lendable, Lender};
use super::tls::{self, SslMode};
use super::{ConnInfo, SessionAttrs};
use crate::error::{Error, Result};

/// Why one host could not be used.
enum Failure {
    /// The attempt did not finish within the timeout.
    Timeout(Duration),
    Pg(tokio_postgres::Error),
    /// Connected, but the server is not what `target_session_attrs` asks for.
    Attrs(&'static str),
}

struct HostFailure {
    host: String,
    failure: Failure,
    password: PasswordFrom,
}

/// Where the password of an attempt came from, for the hint.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PasswordFrom {
    Nowhere,
    Given,
    PasswordFile,
}

/// The host as shown in messages: `name:port` (or the socket directory).
fn host_label(config: &Config, i: usize) -> String {
    let port = config
        .get_ports()
        .get(i)
        .or(config.get_ports().first())
        .copied()
        .unwrap_or(5432);
    match &config.get_hosts()[i] {
        Host::Tcp(h) if h.contains(':') => format!("[{h}]:{port}"),
        Host::Tcp(h) => format!("{h}:{port}"),
        Host::Unix(p) => format!("{} (socket, port {port})", p.display()),
    }
}

/// A config for host `i` alone, with everything else copied from `base`
/// (so options set by a caller on `ConnInfo::config` are kept).
fn single_host(base: &Config, i: usize) -> Config {
    let mut c = Config::new();
    match &base.get_hosts()[i] {
        Host::Tcp(h) => c.host(h),
        Host::Unix(p) => c.host_path(p),
    };
    if base.get_hostaddrs().len() == base.get_hosts().len() {
        c.hostaddr(base.get_hostaddrs()[i]);
    }
    if let Some(p) = base.get_ports().get(i).or(base.get_ports().first()) {
        c.port(*p);
    }
    if let Some(u) = base.get_user() {
        c.user(u);
    }
    if let Some(p) = base.get_password() {
        c.password(p);
    }
    if let Some(d) = base.get_dbname() {
        c.dbname(d);
    }
    if let Some(o) = base.get_options() {
        c.options(o);
    }
    if let Some(a) = base.get_application_name() {
        c.application_name(a);
    }
    if let Some(t) = base.get_connect_timeout() {
        c.connect_timeout(*t);
    }
    if let Some(t) = base.get_tcp_user_timeout() {
        c.tcp_user_timeout(*t);
    }
    c.keepalives(base.get_keepalives());
    c.keepalives_idle(base.get_keepalives_idle());
    if let Some(i) = base.get_keepalives_interval() {
        c.keepalives_interval(i);
    }
    if let Some(r) = base.get_keepalives_retries() {
        c.keepalives_retries(r);
    }
    c.channel_binding(base.get_channel_binding());
    c.ssl_negotiation(base.get_ssl_negotiation());
    c
}

/// The order to try hosts in.
fn host_order(info: &ConnInfo) -> Vec<usize> {
    let mut order: Vec<usize> = (0..info.config.get_hosts().len()).collect();
    if info.load_balance {
        use rand::seq::SliceRandom;
        order.shuffle(&mut rand::rng());
    }
    order
}

type Stream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;

/// A connected client, its connection task, and, when asked for and the
/// connection is plain TCP, the lender of its socket.
type Connected = (Client, JoinHandle<()>, Option<Lender>);

/// One connection attempt in one TLS mode; `lend`: open the TCP socket
/// here, to lend it (see [`super::lent`]).
async fn attempt(
    config: &Config,
    mode: PgSslMode,
    tls: &MakeRustlsConnect,
    lend: bool,
) -> std::result::Result<Connected, tokio_postgres::Error> {
    let mut config = config.clone();
    config.ssl_mode(mode);
    // A host name rustls refuses goes the usual way too, which says so.
    let host = match &config.get_hosts()[0] {
        Host::Tcp(h) => h.clone(),
        Host::Unix(_) => String::new(),
    };
    let inner = MakeTlsConnect::<Lendable>::make_tls_connect(&mut tls.clone(), &host).ok();
    if lend
        && let Some(inner) = inner
        && let Some(tcp) = open_tcp(&config).await
    {
        let (stream, lender) = lent::share(tcp);
        let used = Arc::new(AtomicBool::new(false));
        let noting = lent::Noting {
            inner,
            used: used.clone(),
        };
        let (client, conn) = config.connect_raw(stream, noting).await?;
        // Startup is over: from here on, requests and replies are counted.
        lender.begin();
        let handle = tokio::spawn(async move {
            let _ = conn.await;
        });
        let lender = (!used.load(Ordering::Acquire)).then_some(lender);
        return Ok((client, handle, lender));
    }
    let (client, conn): (Client, tokio_postgres::Connection<Socket, Stream>) =
        config.connect(tls.clone()).await?;
    let handle = tokio::spawn(async move {
        // Errors here surface on the client's next call.
        let _ = conn.await;
    });
    Ok((client, handle, None))
}

/// The TCP socket of a single-host config, opened as tokio-postgres would
/// (its address, else every address its name resolves to; no Nagle). `None`
/// for a Unix-domain socket or when the connect fails: the caller then
/// connects the usual way, which reports the failure in tokio-postgres' words.
async fn open_tcp(config: &Config) -> Option<TcpStream> {
    let Host::Tcp(host) = &config.get_hosts()[0] else {
        return None;
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let addrs: Vec<SocketAddr> = match config.get_hostaddrs().first() {
        Some(a) => vec![SocketAddr::new(*a, port)],
        None => tokio::net::lookup_host((host.as_str(), port))
            .await
            .ok()?
            .collect(),
    };
    let tcp = TcpStream::connect(&addrs[..]).await.ok()?;
    tcp.set_nodelay(true).ok()?;
    // The keepalives and the user timeout planck's configs carry (see
    // `single_host`), as tokio-postgres sets them on its own sockets.
    let sock = socket2::SockRef::from(&tcp);
    if config.get_keepalives() {
        let mut ka = socket2::TcpKeepalive::new().with_time(config.get_keepalives_idle());
        if let Some(i) = config.get_keepalives_interval() {
            ka = ka.with_interval(i);
        }
        if let Some(r) = config.get_keepalives_retries() {
            ka = ka.with_retries(r);
        }
        sock.set_tcp_keepalive(&ka).ok()?;
    }
    if let Some(t) = config.get_tcp_user_timeout() {
        sock.set_tcp_user_timeout(Some(*t)).ok()?;
    }
    Some(tcp)
}

/// Whether a failed first try in `prefer` or `allow` mode is worth a second
/// one the other way: a failed TLS handshake, or the server's pg_hba.conf
/// refusing this kind of connection (libpq retries in both cases).
fn worth_other_way(e: &tokio_postgres::Error) -> bool {
    if let Some(db) = e.as_db_error() {
        return *db.code() == SqlState::INVALID_AUTHORIZATION_SPECIFICATION;
    }
    tls::explain_tls_failure(e).is_some()
}

/// Of two failed tries (plain and TLS), the one to report: the one that got
/// further. A server's refusal after authentication started beats a TLS
/// failure, which beats pg_hba.conf refusing the kind of connection, which
/// beats a network error.
fn further(a: tokio_postgres::Error, b: tokio_postgres::Error) -> tokio_postgres::Error {
    let rank = |e: &tokio_postgres::Error| match e.as_db_error() {
        Some(db) if *db.code() != SqlState::INVALID_AUTHORIZATION_SPECIFICATION => 3,
        Some(_) => 1,
        None if tls::explain_tls_failure(e).is_some() => 2,
        None => 0,
    };
    if rank(&b) >= rank(&a) { b } else { a }
}

/// Connects to one host with libpq's sslmode semantics.
async fn connect_host(
    config: &Config,
    info: &ConnInfo,
    tls: &MakeRustlsConnect,
    lend: bool,
) -> std::result::Result<Connected, tokio_postgres::Error> {
    // libpq never uses TLS over a Unix-domain socket.
    if matches!(config.get_hosts()[0], Host::Unix(_)) {
        return attempt(config, PgSslMode::Disable, tls, lend).await;
    }
    let (first, then) = match info.tls.mode {
        SslMode::Disable => return attempt(config, PgSslMode::Disable, tls, lend).await,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            return attempt(config, PgSslMode::Require, tls, lend).await;
        }
        SslMode::Allow => (PgSslMode::Disable, PgSslMode::Require),
        // tokio-postgres' prefer already goes on in plain text when the
        // server answers that it has no TLS.
        SslMode::Prefer => (PgSslMode::Prefer, PgSslMode::Disable),
    };
    match attempt(config, first, tls, lend).await {
        Err(e) if worth_other_way(&e) => attempt(config, then, tls, lend)
            .await
            .map_err(|e2| further(e, e2)),
        other => other,
    }
}

/// Checks `target_session_attrs` on a fresh connection (simple protocol:
/// no prepared statement, so it works through a pooler too).
async fn session_matches(
    client: &Client,
    want: SessionAttrs,
) -> std::result::Result<Option<&'static str>, tokio_postgres::Error> {
    let value = |sql: &'static str| async move {
        let rows = client.simple_query(sql).await?;
        Ok::<_, tokio_postgres::Error>(rows.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|v| v == "on" || v == "t"),
            _ => None,
        }))
    };
    Ok(match want {
        SessionAttrs::Any | SessionAttrs::PreferStandby => None,
        SessionAttrs::ReadWrite => (value("SHOW transaction_read_only").await? == Some(true))
            .then_some("the server is read-only (target_session_attrs=read-write)"),
        SessionAttrs::ReadOnly => (value("SHOW transaction_read_only").await? != Some(true))
            .then_some("the server is not read-only (target_session_attrs=read-only)"),
        SessionAttrs::Primary => (value("SELECT pg_is_in_recovery()").await? == Some(true))
            .then_some("the server is a standby (target_session_attrs=primary)"),
        SessionAttrs::Standby => (value("SELECT pg_is_in_recovery()").await? != Some(true))
            .then_some("the server is not a standby (target_session_attrs=standby)"),
    })
}

/// Tries every host; the first that connects and fits wins.
async fn establish(
    info: &ConnInfo,
    tls: &MakeRustlsConnect,
    lend: bool,
) -> std::result::Result<Connected, Vec<HostFailure>> {
    let passes = match info.session_attrs {
        SessionAttrs::PreferStandby => vec![SessionAttrs::Standby, SessionAttrs::Any],
        other => vec![other],
    };
    let mut failures = Vec::new();
    for want in passes {
        for i in host_order(info) {
            let mut config = single_host(&info.config, i);
            let mut password = if config.get_password().is_some() {
                PasswordFrom::Given
            } else {
                PasswordFrom::Nowhere
            };
            if config.get_password().is_none()
                && let Some(pf) = &info.passfile
            {
                let host = match &config.get_hosts()[0] {
                    Host::Tcp(h) => h.clone(),
                    Host::Unix(p) => p.display().to_string(),
                };
                let port = config.get_ports().first().copied().unwrap_or(5432);
                let user = config.get_user().unwrap_or("");
                let db = config.get_dbname().unwrap_or(user);
                if let Some(pw) = pf.lookup(&host, port, db, user) {
                    config.password(pw);
                    password = PasswordFrom::PasswordFile;
                }
            }
            let whole = async {
                let (client, handle, lender) = connect_host(&config, info, tls, lend)
                    .await
                    .map_err(Failure::Pg)?;
                match session_matches(&client, want).await {
                    Ok(None) => Ok((client, handle, lender)),
                    Ok(Some(why)) => Err(Failure::Attrs(why)),
                    Err(e) => Err(Failure::Pg(e)),
                }
            };
            let result = match info.connect_timeout {
                Some(t) => match tokio::time::timeout(t, whole).await {
                    Ok(r) => r,
                    Err(_) => Err(Failure::Timeout(t)),
                },
                None => whole.await,
            };
            match result {
                Ok(c) => return Ok(c),
                Err(failure) => failures.push(HostFailure {
                    host: host_label(&info.config, i),
                    failure,
                    password,
                }),
            }
        }
    }
    Err(failures)
}

/// Connecting is this file's: [`ConnInfo`] (parsed in `db/mod.rs`) says where
/// and how, these methods do it.
impl ConnInfo {
    /// Connects (each host in turn, each attempt under the timeout),
    /// spawning the connection task on the current runtime.
    pub async fn connect(&self) -> Result<Client> {
        let tls = cached_connector(self).await?;
        match establish(self, &tls, false).await {
            Ok((client, _handle, _)) => Ok(client),
            Err(failures) => Err(connect_error(self, failures)),
        }
    }

    /// Connects as [`ConnInfo::connect`] does and, when the connection is
    /// plain TCP (no TLS negotiated, no Unix-domain socket), also returns
    /// the lender of its socket, for a caller that speaks the protocol
    /// itself between the client's requests (see [`lent`]).
    pub async fn connect_lending(&self) -> Result<(Client, Option<Lender>)> {
        let tls = cached_connector(self).await?;
        match establish(self, &tls, true).await {
            Ok((client, _handle, lender)) => Ok((client, lender)),
            Err(failures) => Err(connect_error(self, failures)),
        }
    }

    /// A deadpool manager that connects exactly as [`ConnInfo::connect`]
    /// does (TLS mode, timeouts, hosts, password file), for the pools of
    /// `session` and `explain`.
    pub fn pool_manager(
        &self,
        config: deadpool_postgres::ManagerConfig,
    ) -> Result<deadpool_postgres::Manager> {
        // Called once per pool, outside any hot path: made here, synchronously.
        let tls = self.tls.connector().map_err(|m| connector_error(self, m))?;
        Ok(deadpool_postgres::Manager::from_connect(
            self.config.clone(),
            PlanckConnect {
                info: self.clone(),
                tls,
            },
            config,
        ))
    }
}

fn connector_error(info: &ConnInfo, message: String) -> Error {
    Error::Connect {
        url: shown(info),
        message,
        hint: Some(
            "fix sslrootcert, sslcert, sslkey, sslcrl or sslcrldir (or PGSSLROOTCERT, \
             PGSSLCERT, PGSSLKEY, PGSSLCRL, PGSSLCRLDIR)"
                .into(),
        ),
    }
}

/// The TLS connector, made once per set of options and shared by the
/// clones of a `ConnInfo` (a seed opens many connections). Making it reads
/// certificate files, and for `sslrootcert=system` the whole system store:
/// blocking work, so it runs on tokio's blocking pool.
async fn cached_connector(info: &ConnInfo) -> Result<MakeRustlsConnect> {
    if let Some((opts, made)) = info.tls_cache.lock().expect("never poisoned").as_ref()
        && *opts == info.tls
    {
        return Ok(made.clone());
    }
    let opts = info.tls.clone();
    let made = tokio::task::spawn_blocking(move || opts.connector())
        .await
        .map_err(|e| Error::Other(anyhow::anyhow!("setting up TLS: {e}")))?
        .map_err(|m| connector_error(info, m))?;
    *info.tls_cache.lock().expect("never poisoned") = Some((info.tls.clone(), made.clone()));
    Ok(made)
}

fn shown(info: &ConnInfo) -> String {
    match info.source {
        Some(src) => format!("{} (from {src})", info.display()),
        None => info.display(),
    }
}

/// The error for a connection no host accepted: every host's reason, and
/// the hint for the last one.
fn connect_error(info: &ConnInfo, failures: Vec<HostFailure>) -> Error {
    // Every address timed out: one message with the time waited in all,
    // which is the timeout times the addresses (issue 31: "timed out after
    // 10 s" was printed after 20 s spent on two addresses).
    if failures.len() > 1
        && let Some(Failure::Timeout(each)) = failures.first().map(|f| &f.failure)
        && failures
            .iter()
            .all(|f| matches!(f.failure, Failure::Timeout(t) if t == *each))
    {
        let hosts: Vec<&str> = failures.iter().map(|f| f.host.as_str()).collect();
        // Each attempt ended when its timer fired.
        let waited = *each * failures.len() as u32;
        let (_, hint) = describe(info, &failures[0]);
        return Error::Connect {
            url: shown(info),
            message: timeout_message(*each, waited, &hosts),
            hint,
        };
    }
    let several = failures.len() > 1;
    let mut parts = Vec::new();
    let mut hint = None;
    for f in &failures {
        let (message, h) = describe(info, f);
        parts.push(if several || matches!(f.failure, Failure::Timeout(_)) {
            format!("{}: {message}", f.host)
        } else {
            message
        });
        hint = h;
    }
    Error::Connect {
        url: shown(info),
        message: parts.join("; "),
        hint,
    }
}

/// Seconds as a person reads them: `20 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let tenths = (d.as_secs_f64() * 10.0).round() / 10.0;
    format!("{tenths} s")
}

/// The message when every address tried timed out: the time waited in all,
/// then the timeout of each attempt and the addresses.
fn timeout_message(each: Duration, waited: Duration, hosts: &[&str]) -> String {
    format!(
        "timed out after {} ({} for each of {} addresses: {}; TCP, TLS, startup and \
         authentication must finish within connect_timeout)",
        seconds(waited),
        seconds(each),
        hosts.len(),
        hosts.join(", ")
    )
}

fn describe(info: &ConnInfo, f: &HostFailure) -> (String, Option<String>) {
    match &f.failure {
        Failure::Timeout(t) => (
            format!(
                "timed out after {} (TCP, TLS, startup and authentication must finish \
                 within connect_timeout)",
                seconds(*t)
            ),
            Some(
                "is a PostgreSQL server listening there? A slow or distant server may need a \
                 longer connect_timeout (in the URL) or PGCONNECT_TIMEOUT"
                    .into(),
            ),
        ),
        Failure::Attrs(why) => (
            why.to_string(),
            Some("list the primary among the hosts, or change target_session_attrs".into()),
        ),
        Failure::Pg(e) => describe_pg(info, e, f.password),
    }
}

fn describe_pg(
    info: &ConnInfo,
    e: &tokio_postgres::Error,
    password: PasswordFrom,
) -> (String, Option<String>) {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let hint = if *code == SqlState::INVALID_PASSWORD {
            Some(if password == PasswordFrom::PasswordFile {
                "the password came from the password file (PGPASSFILE or ~/.pgpass): fix its line"
                    .to_string()
            } else {
                "check the user and password in the URL (or PGUSER/PGPASSWORD, ~/.pgpass)"
                    .to_string()
            })
        } else if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            Some(if info.tls.mode == SslMode::Disable {
                "the server's pg_hba.conf refused this login; if it accepts only TLS \
                 (hostssl), use sslmode=require or stronger"
                    .to_string()
            } else {
                "the server's pg_hba.conf refused this user, database or address".to_string()
            })
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            Some("create the database first, or fix its name in the URL".to_string())
        } else {
            pooler_hint(e).map(str::to_string)
        };
        let mut message = format!("{} (SQLSTATE {})", db.message(), code.code());
        if let Some(d) = db.detail() {
            message.push_str(&format!("; {d}"));
        }
        return (message, hint);
    }
    if let Some((message, hint)) = tls::explain_tls_failure(e) {
        return (message, Some(hint.to_string()));
    }
    let mut message = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        message.push_str(&format!(": {s}"));
        src = s.source();
    }
    let network = chain_has::<std::io::Error>(e);
    let hint = if !network && password == PasswordFrom::Nowhere && !info.tls.mode.requires_tls() {
        // tokio-postgres' "password missing": the server asked for one.
        "the server asks for a password: put it in the URL, in PGPASSWORD, or in a \
         password file (~/.pgpass, or the file PGPASSFILE names, mode 0600)"
            .to_string()
    } else if info.tls.mode.requires_tls() && !network {
        format!(
            "sslmode={} needs a server with ssl=on; for a server without TLS (a local one), \
             use sslmode=prefer or disable",
            info.tls.mode.as_str()
        )
    } else {
        "is the server running and accepting TCP connections at that host and port? \
         Leave the URL unset to use planck's managed local PostgreSQL"
            .to_string()
    };
    (message, Some(hint))
}

/// Whether an error of type `T` is in `e`'s source chain.
fn chain_has<T: std::error::Error + 'static>(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<T>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// A hint for the errors a transaction-mode pooler (PgBouncer, Supavisor,
/// the pooled connection strings Supabase and Neon hand out) causes: it
/// gives each transaction any server connection, so a statement prepared in
/// one transaction is missing (26000, invalid_sql_statement_name) or already
/// there (42P05, duplicate_prepared_statement) in the next.
///
/// Branches on SQLSTATE. The one exception is PgBouncer's own check (1.21+
/// with `max_prepared_statements`): it drops the client with SQLSTATE 08P01
/// (protocol_violation, shared with every other protocol error) and only a
/// text to tell it apart ("prepared statement did not exist", "prepared
/// statement name is already in use", in its `src/prepare.c`), so for 08P01
/// alone the message is read.
pub fn pooler_hint(e: &tokio_postgres::Error) -> Option<&'static str> {
    let db = e.as_db_error()?;
    crate::error::pooler_hint_for(db.code(), db.message())
}

// ---- pools ------------------------------------------------------------------

/// deadpool's hook: connections made as `ConnInfo::connect` makes them.
struct PlanckConnect {
    info: ConnInfo,
    tls: MakeRustlsConnect,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl deadpool_postgres::Connect for PlanckConnect {
    fn connect(
        &self,
        _pg_config: &Config,
    ) -> BoxFuture<'_, std::result::Result<(Client, JoinHandle<()>), tokio_postgres::Error>> {
        Box::pin(async move {
            establish(&self.info, &self.tls, false)
                .await
                .map(|(client, handle, _)| (client, handle))
                .map_err(|failures| {
                    // deadpool wants a tokio_postgres::Error: the last server or
                    // network error when there is one; a timeout or a session
                    // attribute mismatch has none, and gets tokio-postgres' own
                    // timeout error (what its connect_timeout returns). Pools are
                    // built after a first `ConnInfo::connect`, which reports those
                    // with every detail.
                    failures
                        .into_iter()
                        .rev()
                        .find_map(|f| match f.failure {
                            Failure::Pg(e) => Some(e),
                            _ => None,
                        })
                        .unwrap_or_else(tokio_postgres::Error::__private_api_timeout)
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31: after two addresses had each waited 10 s, the message said
    /// "timed out after 10 s".
    #[test]
    fn a_timeout_on_every_address_states_the_whole_wait() {
        let m = timeout_message(
            Duration::from_secs(10),
            Duration::from_secs(20),
            &["127.0.0.1:5432", "[::1]:5432"],
        );
        assert!(
            m.starts_with(
                "timed out after 20 s (10 s for each of 2 addresses: 127.0.0.1:5432, [::1]:5432;"
            ),
            "{m}"
        );
        assert_eq!(seconds(Duration::from_millis(1_540)), "1.5 s");
        assert_eq!(seconds(Duration::from_secs(3)), "3 s");
    }

    #[test]
    fn single_host_configs_keep_everything_but_the_other_hosts() {
        let mut info = ConnInfo::parse(
            "postgres://u:pw@a:1,b:2/db?options=-c%20x%3D1&keepalives_idle=9&channel_binding=require&sslmode=require",
            false,
        )
        .unwrap();
        info.config.application_name("set by caller");
        let c = single_host(&info.config, 1);
        assert_eq!(c.get_hosts(), &[Host::Tcp("b".into())]);
        assert_eq!(c.get_ports(), &[2]);
        assert_eq!(c.get_user(), Some("u"));
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        assert_eq!(c.get_dbname(), Some("db"));
        assert_eq!(c.get_options(), Some("-c x=1"));
        assert_eq!(c.get_application_name(), Some("set by caller"));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(9));
        assert_eq!(
            c.get_channel_binding(),
            tokio_postgres::config::ChannelBinding::Require
        );
        assert_eq!(host_label(&info.config, 0), "a:1");
        let one_port = ConnInfo::parse("host=a,b port=7", false).unwrap();
        assert_eq!(single_host(&one_port.config, 1).get_ports(), &[7]);
    }
}
