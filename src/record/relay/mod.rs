//! The capture relay: while `planck record -- CMD` runs, the command's
//! connections go through planck, which forwards every byte unchanged and
//! reads the protocol alongside to learn which statements run together.
//!
//! The relay listens on a loopback TCP port and on a unix socket (in a
//! directory of its own, named for the same port), and the child's
//! `DATABASE_URL`, `PLANCK_DATABASE_URL` and `PG*` point there with
//! `sslmode=disable`. Per connection it reads the startup packet (SSL and
//! GSSAPI encryption requests are answered "no"; a direct TLS handshake is
//! refused with a note naming `sslnegotiation`; a CancelRequest, whatever
//! its key's length, is passed to the server on a connection of its own;
//! any protocol 3.x is relayed, the server negotiating the minor with the
//! client through the relay, and anything else is answered with SQLSTATE
//! 08P01 by the relay itself and named in the run's warnings), opens the
//! server connection as planck itself would (its sslmode, SNI and
//! certificate checks for the original host name), sends the client's
//! startup packet, and then copies both ways, handing each chunk once
//! forwarded to [`analyst`], on a thread of its own, where [`protocol`] frames what
//! passes, [`session`] turns it into statements and transactions,
//! [`shapes`] keeps them as counted shapes.
//! Authentication (passwords, SASL) passes through and is never kept.

pub(crate) mod analyst;
pub(crate) mod evidence;
pub(crate) mod protocol;
pub(crate) mod session;
pub(crate) mod shapes;
pub(crate) mod text;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_postgres::config::Host;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::db::{ConnInfo, SslMode};
use crate::error::{Error, Result};
use crate::output::Log;
use protocol::{Side, Startup};
pub use shapes::Capture;

/// How long connections get to end on their own once the command exited.
const GRACE: Duration = Duration::from_millis(500);

/// The read buffer of each direction.
const BUFFER: usize = 64 * 1024;

/// A stream to the server: TCP, unix socket or TLS over TCP.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How to reach the server, from planck's own connection settings.
struct Upstream {
    host: Host,
    port: u16,
    mode: SslMode,
    tls: Option<MakeRustlsConnect>,
    timeout: Option<Duration>,
}

impl Upstream {
    fn new(conn: &ConnInfo) -> Result<Upstream> {
        let c = &conn.config;
        let host = c
            .get_hosts()
            .first()
            .cloned()
            .unwrap_or(Host::Tcp("localhost".into()));
        let port = c.get_ports().first().copied().unwrap_or(5432);
        let tls = match (&host, conn.tls.mode) {
            (Host::Unix(_), _) | (_, SslMode::Disable | SslMode::Allow) => None,
            _ => Some(conn.tls.connector().map_err(|message| Error::Connect {
                url: conn.display(),
                message,
                hint: None,
            })?),
        };
        Ok(Upstream {
            host,
            port,
            mode: conn.tls.mode,
            tls,
            timeout: conn.connect_timeout,
        })
    }

    /// A plain connection (cancel requests; the start of the others).
    async fn plain(&self) -> std::io::Result<Box<dyn Io>> {
        Ok(match &self.host {
            Host::Tcp(h) => {
                let s = TcpStream::connect((h.as_str(), self.port)).await?;
                s.set_nodelay(true)?;
                Box::new(s)
            }
            Host::Unix(dir) => {
                Box::new(UnixStream::connect(dir.join(format!(".s.PGSQL.{}", self.port))).await?)
            }
        })
    }

    /// A connection with planck's TLS settings, before the startup packet.
    async fn connect(&self) -> std::result::Result<Box<dyn Io>, String> {
        let attempt = async {
            let (Host::Tcp(name), Some(tls)) = (&self.host, &self.tls) else {
                return self.plain().await.map_err(|e| e.to_string());
            };
            let mut tcp = TcpStream::connect((name.as_str(), self.port))
                .await
                .map_err(|e| e.to_string())?;
            tcp.set_nodelay(true).map_err(|e| e.to_string())?;
            let mut request = 8u32.to_be_bytes().to_vec();
            request.extend(protocol::SSL_REQUEST.to_be_bytes());
            tcp.write_all(&request).await.map_err(|e| e.to_string())?;
            let mut answer = [0u8; 1];
            tcp.read_exact(&mut answer)
                .await
                .map_err(|e| e.to_string())?;
            match answer[0] {
                b'S' => {
                    let mut make = tls.clone();
                    let connect = MakeTlsConnect::<TcpStream>::make_tls_connect(&mut make, name)
                        .map_err(|e| format!("setting up TLS: {e}"))?;
                    let stream = connect
                        .connect(tcp)
                        .await
                        .map_err(|e| format!("TLS with the server failed: {e}"))?;
                    Ok(Box::new(stream) as Box<dyn Io>)
                }
                b'N' if !self.mode.requires_tls() => Ok(Box::new(tcp) as Box<dyn Io>),
                b'N' => Err(format!(
                    "the server does not support TLS, but planck's sslmode is {}",
                    self.mode.as_str()
                )),
                other => Err(format!(
                    "the server answered the TLS request with {:?}",
                    other as char
                )),
            }
        };
        match self.timeout {
            Some(t) => tokio::time::timeout(t, attempt)
                .await
                .unwrap_or_else(|_| Err(format!("timed out after {} s", t.as_secs()))),
            None => attempt.await,
        }
    }
}

/// A running relay. It runs on a thread of its own, in a single-threaded
/// runtime: on a machine with few cores, every hop a relayed round trip
/// makes between worker threads (a wake-up, a futex) is time the server
/// and the client do not get, and one thread serving every connection
/// reads all the chunks one wake-up brings. That thread only forwards; the
/// reading (framing, lexing, the capture) runs on a second thread at the
/// least priority, in batches ([`analyst`]).
pub struct Relay {
    pub port: u16,
    /// The directory of the unix socket `.s.PGSQL.<port>`.
    pub socket_dir: PathBuf,
    stop: watch::Sender<bool>,
    done: tokio::sync::oneshot::Receiver<Capture>,
}

impl Relay {
    /// Listens on 127.0.0.1 and a unix socket, relaying to `conn`'s server.
    pub async fn start(conn: &ConnInfo, log: Log) -> Result<Relay> {
        let upstream = Arc::new(Upstream::new(conn)?);
        let io = |e: std::io::Error| Error::Internal {
            message: format!("the capture relay could not listen: {e}"),
        };
        let tcp = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(io)?;
        tcp.set_nonblocking(true).map_err(io)?;
        let port = tcp.local_addr().map_err(io)?.port();
        let socket_dir =
            std::env::temp_dir().join(format!("planck-relay-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&socket_dir).map_err(io)?;
        let unix =
            std::os::unix::net::UnixListener::bind(socket_dir.join(format!(".s.PGSQL.{port}")))
                .map_err(io)?;
        unix.set_nonblocking(true).map_err(io)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io)?;
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let capture = Arc::new(Mutex::new(Capture::default()));
        let analyst = analyst::Analyst::start(capture.clone()).map_err(io)?;
        std::thread::Builder::new()
            .name("planck-relay".into())
            .spawn(move || {
                let capture =
                    runtime.block_on(relay(tcp, unix, upstream, capture, analyst, stop_rx, log));
                let _ = done_tx.send(capture);
            })
            .map_err(io)?;
        Ok(Relay {
            port,
            socket_dir,
            stop,
            done,
        })
    }

    /// Stops listening, closes the connections the command left open, and
    /// returns what was captured.
    pub async fn finish(self) -> Capture {
        let _ = self.stop.send(true);
        let capture = self.done.await.unwrap_or_default();
        let _ = std::fs::remove_dir_all(&self.socket_dir);
        capture
    }

    /// The environment that points the command at the relay, for a target
    /// reached as `conn` (a unix socket when planck's own host is one).
    pub fn env(&self, conn: &ConnInfo) -> Vec<(String, String)> {
        let unix = matches!(conn.config.get_hosts().first(), Some(Host::Unix(_)));
        let host = if unix {
            self.socket_dir.display().to_string()
        } else {
            "127.0.0.1".to_string()
        };
        let c = &conn.config;
        let enc = crate::db::config::percent_encode;
        let mut auth = String::new();
        if let Some(u) = c.get_user() {
            auth.push_str(&enc(u));
            if let Some(pw) = c.get_password() {
                auth.push(':');
                auth.push_str(&enc(&String::from_utf8_lossy(pw)));
            }
            auth.push('@');
        }
        let db = enc(&conn.dbname());
        let url = if unix {
            format!(
                "postgres://{auth}/{db}?host={}&port={}&sslmode=disable",
                enc(&host),
                self.port
            )
        } else {
            format!("postgres://{auth}{host}:{}/{db}?sslmode=disable", self.port)
        };
        let mut env = vec![
            ("DATABASE_URL".to_string(), url.clone()),
            ("PLANCK_DATABASE_URL".to_string(), url),
            ("PGHOST".to_string(), host),
            ("PGPORT".to_string(), self.port.to_string()),
            ("PGDATABASE".to_string(), conn.dbname()),
            ("PGSSLMODE".to_string(), "disable".to_string()),
        ];
        if let Some(u) = c.get_user() {
            env.push(("PGUSER".into(), u.to_string()));
        }
        if let Some(pw) = c.get_password() {
            env.push((
                "PGPASSWORD".into(),
                String::from_utf8_lossy(pw).into_owned(),
            ));
        }
        env
    }
}

/// Variables the child must not inherit when it goes through the relay.
/// `PGGSSENCMODE` is removed rather than set to `disable`: the relay
/// answers a GSSAPI encryption request "no" anyway, and tokio-postgres
/// refuses a URL with `gssencmode` (planck's own commands, the bundled
/// example, pass the URL they resolve to it).
pub const ENV_REMOVED: &[&str] = &[
    "PGCHANNELBINDING",
    "PGSSLNEGOTIATION",
    "PGREQUIRESSL",
    "PGGSSENCMODE",
];

/// What a client asked for that the relay refuses, for the warnings.
pub const REFUSED_DIRECT_TLS: &str = "sslnegotiation=direct";
pub const REFUSED_TLS: &str = "sslmode";
pub const REFUSED_UPSTREAM: &str = "server";

/// The relay's thread: accepts connections and serves each in a task of
/// its own until told to stop; then gives the connections the command
/// closed as it exited a moment to end, closes what is left, waits for the
/// analyst to read what they sent, and returns what was captured.
async fn relay(
    tcp: std::net::TcpListener,
    unix: std::os::unix::net::UnixListener,
    upstream: Arc<Upstream>,
    capture: Arc<Mutex<Capture>>,
    analyst: analyst::Analyst,
    mut stop: watch::Receiver<bool>,
    log: Log,
) -> Capture {
    let mut next_id = 0u64;
    let (close, close_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    if let (Ok(tcp), Ok(unix)) = (TcpListener::from_std(tcp), UnixListener::from_std(unix)) {
        loop {
            let stream: Box<dyn Io> = tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                r = tcp.accept() => match r {
                    Ok((s, _)) => {
                        let _ = s.set_nodelay(true);
                        Box::new(s)
                    }
                    Err(_) => continue,
                },
                r = unix.accept() => match r {
                    Ok((s, _)) => Box::new(s),
                    Err(_) => continue,
                },
                // Reap connections as they end, so the set stays small.
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            };
            next_id += 1;
            connections.spawn(serve(
                stream,
                next_id,
                upstream.clone(),
                capture.clone(),
                analyst.feed(),
                close_rx.clone(),
                log,
            ));
        }
    }
    let _ = tokio::time::timeout(GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    let _ = close.send(true);
    while connections.join_next().await.is_some() {}
    drop(connections);
    analyst.finish();
    let mut guard = capture.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *guard)
}

/// Counts a connection the relay refused, by why.
fn refuse(capture: &Mutex<Capture>, what: &'static str) {
    let mut c = capture.lock().unwrap_or_else(|e| e.into_inner());
    *c.refused.entry(what).or_default() += 1;
}

/// Refuses a connection whose startup the relay cannot frame: the client
/// hears why, the capture notes it, and the connection is closed gently.
async fn refuse_bad_startup(
    client: &mut Box<dyn Io>,
    capture: &Mutex<Capture>,
    log: Log,
    bad: protocol::BadStartup,
) {
    // What the relay cannot frame it cannot read: the client hears
    // why (as the server would answer a bad packet), and so does
    // the user, at the end of the run.
    log.debug(&format!("the capture relay refused a connection: {bad}"));
    capture
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .refuse_startup(&bad.to_string());
    let _ = client
        .write_all(&protocol::error_response(
            "08P01",
            &format!("planck's capture relay cannot read this connection: {bad}"),
        ))
        .await;
    let _ = client.shutdown().await;
    // Read what the client still sends, for a moment: closing with
    // unread bytes resets the connection, and a reset can discard
    // the answer before the client reads it.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let mut sink = [0u8; 1024];
        while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// What a client's startup left: the packet to forward, its user and
/// database, and the bytes it sent after it.
struct Opening {
    packet: Vec<u8>,
    user: String,
    database: String,
    buf: BytesMut,
}

/// Reads a client's startup packet, answering its TLS and GSS requests
/// with "N" and passing a cancel request on: `None` when the connection
/// ends there (a cancel, a refusal, a client that left).
async fn read_startup(
    client: &mut Box<dyn Io>,
    upstream: &Upstream,
    capture: &Mutex<Capture>,
    log: Log,
) -> Option<Opening> {
    // 1. The startup packet, after any encryption requests.
    let mut buf = BytesMut::with_capacity(1024);
    let mut asked_tls = false;
    loop {
        let bad = match protocol::take_startup(&mut buf) {
            Ok(Some(p)) => match protocol::startup(&p) {
                Ok(Startup::Ssl) => {
                    asked_tls = true;
                    if client.write_all(b"N").await.is_err() {
                        return None;
                    }
                    None
                }
                Ok(Startup::GssEnc) => {
                    if client.write_all(b"N").await.is_err() {
                        return None;
                    }
                    None
                }
                // The key is the server's own (BackendKeyData passed through
                // unchanged), whatever its length: the packet goes as sent.
                Ok(Startup::Cancel { .. }) => {
                    if let Ok(mut s) = upstream.plain().await {
                        let _ = s.write_all(&p).await;
                        let _ = s.flush().await;
                        // The server closes it; wait so the cancel is read.
                        let mut sink = [0u8; 16];
                        let _ =
                            tokio::time::timeout(Duration::from_secs(5), s.read(&mut sink)).await;
                    }
                    return None;
                }
                // Any 3.x: forwarded as sent, so the server negotiates the
                // minor and the `_pq_.` options with the client itself.
                Ok(Startup::Params { params, .. }) => {
                    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                    let user = get("user").unwrap_or_default();
                    let database = get("database").unwrap_or_else(|| user.clone());
                    return Some(Opening {
                        packet: p,
                        user,
                        database,
                        buf,
                    });
                }
                Err(bad) => Some(bad),
            },
            Ok(None) => None,
            Err(_) if buf.first() == Some(&0x16) => {
                refuse(capture, REFUSED_DIRECT_TLS);
                log.debug(
                    "a client began a TLS handshake directly (sslnegotiation=direct): refused",
                );
                return None;
            }
            Err(bad) => Some(bad),
        };
        if let Some(bad) = bad {
            refuse_bad_startup(client, capture, log, bad).await;
            return None;
        }
        let mut chunk = [0u8; 1024];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                // A client that wanted TLS and left when told "no".
                if asked_tls && buf.is_empty() {
                    refuse(capture, REFUSED_TLS);
                }
                return None;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// One client connection, from its first byte to its end.
async fn serve(
    mut client: Box<dyn Io>,
    id: u64,
    upstream: Arc<Upstream>,
    capture: Arc<Mutex<Capture>>,
    feed: analyst::Feed,
    mut stop: watch::Receiver<bool>,
    log: Log,
) {
    let Some(Opening {
        packet,
        user,
        database,
        buf,
    }) = read_startup(&mut client, &upstream, &capture, log).await
    else {
        return;
    };

    // 2. The server.
    let mut server = match upstream.connect().await {
        Ok(s) => s,
        Err(message) => {
            refuse(&capture, REFUSED_UPSTREAM);
            log.warn(&format!(
                "the capture relay could not reach the server: {message}"
            ));
            let _ = client
                .write_all(&protocol::error_response(
                    "08006",
                    &format!("planck's capture relay could not reach the server: {message}"),
                ))
                .await;
            return;
        }
    };
    if server.write_all(&packet).await.is_err() || server.write_all(&buf).await.is_err() {
        return;
    }
    // 3. Both ways, in this one task (no hop to another task per chunk):
    // each chunk is forwarded, then handed to the analyst before this task
    // awaits anything else, so the analyst sees a request before its
    // answer whatever the order the sockets are polled in.
    feed.open(id, &user, &database);
    if !buf.is_empty() {
        feed.chunk(id, Side::Client, &buf);
    }
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let (mut server_r, mut server_w) = tokio::io::split(server);
    let up = async {
        let mut b = vec![0u8; BUFFER];
        loop {
            let n = match client_r.read(&mut b).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let sent = forward(&mut server_w, &b[..n], || {
                feed.chunk(id, Side::Client, &b[..n])
            })
            .await;
            if !sent {
                break;
            }
        }
        let _ = server_w.shutdown().await;
    };
    let down = async {
        let mut b = vec![0u8; BUFFER];
        loop {
            let n = match server_r.read(&mut b).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let sent = forward(&mut client_w, &b[..n], || {
                feed.chunk(id, Side::Server, &b[..n])
            })
            .await;
            if !sent {
                break;
            }
        }
        let _ = client_w.shutdown().await;
    };
    let left_open = tokio::select! {
        _ = async { tokio::join!(up, down) } => false,
        _ = stop.wait_for(|s| *s) => true,
    };
    feed.close(id, left_open);
}

/// Writes `data` to `to`, calling `seen` once it is written or, when the
/// socket cannot take it all at once, before waiting for room: either way
/// before this task yields, so the other direction's next chunk is never
/// handed over first. False when the peer is gone.
async fn forward(to: &mut (impl AsyncWrite + Unpin), data: &[u8], seen: impl FnOnce()) -> bool {
    let mut written = 0;
    let mut seen = Some(seen);
    while written < data.len() {
        let step = std::future::poll_fn(|cx| {
            match std::pin::Pin::new(&mut *to).poll_write(cx, &data[written..]) {
                std::task::Poll::Pending => {
                    if let Some(f) = seen.take() {
                        f();
                    }
                    std::task::Poll::Pending
                }
                ready => ready,
            }
        })
        .await;
        match step {
            Ok(0) | Err(_) => return false,
            Ok(n) => written += n,
        }
    }
    if let Some(f) = seen.take() {
        f();
    }
    true
}
