//! The relay's listeners, its connection to the server, and each client
//! connection's start: from its startup packet to its hand-over to the
//! [`pump`](super::pump), or (to a TLS server) to its end, every chunk
//! handed to the [`analyst`](super::analyst) once forwarded.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_postgres::config::Host;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::analyst::{Analyst, Feed};
use super::protocol::{self, Side, Startup};
use super::pump::{Direction, Hand, Pump, Sock};
use super::shapes::{REFUSED_DIRECT_TLS, REFUSED_TLS, REFUSED_UPSTREAM};
use crate::db::{ConnInfo, SslMode, TlsOptions};
use crate::error::{Error, Result};
use crate::output::Log;

/// How long connections get to end on their own once the command exited.
const GRACE: Duration = Duration::from_millis(500);

/// A stream to the server that tokio forwards: over TLS, or any when the
/// relay has no pump.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A plain socket, to a client or to the server, while tokio has it.
enum Plain {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Plain {
    /// The socket out of tokio's reactor, for the [`pump`].
    fn into_sock(self) -> std::io::Result<Sock> {
        match self {
            Plain::Tcp(s) => Sock::of_tcp(s),
            Plain::Unix(s) => Sock::of_unix(s),
        }
    }
}

impl AsyncRead for Plain {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Plain::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Plain::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Plain {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Plain::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Plain::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Plain::Tcp(s) => Pin::new(s).poll_flush(cx),
            Plain::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Plain::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Plain::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// The connection to the server: plain, or TLS (which stays on tokio).
enum Server {
    Plain(Plain),
    Tls(Box<dyn Io>),
}

impl Server {
    fn io(&mut self) -> &mut (dyn Io + '_) {
        match self {
            Server::Plain(s) => s,
            Server::Tls(s) => &mut **s,
        }
    }
}

/// Where the relay connects, from planck's own connection settings: what
/// a relay started as a process of its own is given (see
/// [`super::own_process`]), so it holds no password and no `Config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Target {
    /// A host name or address, or the directory of a unix socket.
    host: String,
    unix: bool,
    port: u16,
    tls: TlsOptions,
    timeout_ms: Option<u64>,
    /// The server as planck names it in errors (no password).
    display: String,
}

impl Target {
    pub(crate) fn of(conn: &ConnInfo) -> Target {
        let c = &conn.config;
        let (host, unix) = match c.get_hosts().first() {
            Some(Host::Unix(dir)) => (dir.display().to_string(), true),
            Some(Host::Tcp(h)) => (h.clone(), false),
            None => ("localhost".to_string(), false),
        };
        Target {
            host,
            unix,
            port: c.get_ports().first().copied().unwrap_or(5432),
            tls: conn.tls.clone(),
            timeout_ms: conn.connect_timeout.map(|t| t.as_millis() as u64),
            display: conn.display(),
        }
    }
}

/// How to reach the server.
pub(crate) struct Upstream {
    host: Host,
    port: u16,
    mode: SslMode,
    tls: Option<MakeRustlsConnect>,
    timeout: Option<Duration>,
}

impl Upstream {
    pub(crate) fn new(t: &Target) -> Result<Upstream> {
        let host = if t.unix {
            Host::Unix(PathBuf::from(&t.host))
        } else {
            Host::Tcp(t.host.clone())
        };
        let tls = match (&host, t.tls.mode) {
            (Host::Unix(_), _) | (_, SslMode::Disable | SslMode::Allow) => None,
            _ => Some(t.tls.connector().map_err(|message| Error::Connect {
                url: t.display.clone(),
                message,
                hint: None,
            })?),
        };
        Ok(Upstream {
            host,
            port: t.port,
            mode: t.tls.mode,
            tls,
            timeout: t.timeout_ms.map(Duration::from_millis),
        })
    }

    /// A plain connection (cancel requests; the start of the others).
    async fn plain(&self) -> std::io::Result<Plain> {
        Ok(match &self.host {
            Host::Tcp(h) => {
                let s = TcpStream::connect((h.as_str(), self.port)).await?;
                s.set_nodelay(true)?;
                Plain::Tcp(s)
            }
            Host::Unix(dir) => {
                Plain::Unix(UnixStream::connect(dir.join(format!(".s.PGSQL.{}", self.port))).await?)
            }
        })
    }

    /// A connection with planck's TLS settings, before the startup packet.
    async fn connect(&self) -> std::result::Result<Server, String> {
        let attempt = async {
            let (Host::Tcp(name), Some(tls)) = (&self.host, &self.tls) else {
                return self
                    .plain()
                    .await
                    .map(Server::Plain)
                    .map_err(|e| e.to_string());
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
                    Ok(Server::Tls(Box::new(stream)))
                }
                b'N' if !self.mode.requires_tls() => Ok(Server::Plain(Plain::Tcp(tcp))),
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

/// Binds the relay's listeners: a loopback TCP port and, in a directory of
/// its own named for it, the unix socket `.s.PGSQL.<port>`.
pub(crate) fn listen() -> std::io::Result<Listeners> {
    let tcp = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    tcp.set_nonblocking(true)?;
    let port = tcp.local_addr()?.port();
    let socket_dir =
        std::env::temp_dir().join(format!("planck-relay-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&socket_dir)?;
    let unix = std::os::unix::net::UnixListener::bind(socket_path(&socket_dir, port))?;
    unix.set_nonblocking(true)?;
    Ok(Listeners {
        tcp,
        unix,
        port,
        socket_dir,
    })
}

fn socket_path(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!(".s.PGSQL.{port}"))
}

/// The relay's listeners, bound and not yet serving.
pub(crate) struct Listeners {
    tcp: std::net::TcpListener,
    unix: std::os::unix::net::UnixListener,
    pub(crate) port: u16,
    pub(crate) socket_dir: PathBuf,
}

/// The runtime [`relay`] runs on, in a process of its own or on a thread:
/// one thread, sockets and timers. tokio's IO driver comes with its signal
/// and process drivers whenever those features are built, as they are for
/// the rest of planck (so `enable_io().enable_time()` is `enable_all()`
/// here); their share of the relay's CPU is about a tenth of a percent
/// (`perf`, 16 clients).
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
}

/// The relay's thread: accepts connections and starts each in a task of
/// its own, which hands it to the [`pump`] once started (or forwards it
/// itself, to a TLS server), until told to stop; then gives the
/// connections the command closed as it exited a moment to end, closes
/// what is left, and waits for the analyst to take what they sent.
pub(crate) async fn relay(
    listeners: Listeners,
    upstream: Upstream,
    analyst: Analyst,
    mut stop: watch::Receiver<bool>,
    log: Log,
) {
    let upstream = Arc::new(upstream);
    let mut next_id = 0u64;
    let (close, close_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    // Without a pump (no epoll to be had), tokio forwards every connection.
    let pump = match Pump::start(analyst.feed()) {
        Ok(p) => Some(p),
        Err(e) => {
            log.debug(&format!("the capture relay forwards on tokio alone: {e}"));
            None
        }
    };
    let hand = pump.as_ref().map(Pump::hand);
    let Listeners { tcp, unix, .. } = listeners;
    if let (Ok(tcp), Ok(unix)) = (TcpListener::from_std(tcp), UnixListener::from_std(unix)) {
        loop {
            let stream = tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                r = tcp.accept() => match r {
                    Ok((s, _)) => {
                        let _ = s.set_nodelay(true);
                        Plain::Tcp(s)
                    }
                    Err(_) => continue,
                },
                r = unix.accept() => match r {
                    Ok((s, _)) => Plain::Unix(s),
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
                analyst.feed(),
                hand.clone(),
                close_rx.clone(),
                log,
            ));
        }
    }
    if let Some(p) = &pump {
        p.stop(GRACE);
    }
    let _ = tokio::time::timeout(GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    let _ = close.send(true);
    while connections.join_next().await.is_some() {}
    drop(connections);
    // No connection can be handed over now; the pump's grace ran meanwhile.
    if let Some(p) = pump {
        p.finish();
    }
    analyst.finish();
}

/// Refuses a connection whose startup the relay cannot frame: the client
/// hears why, the capture notes it, and the connection is closed gently.
async fn refuse_bad_startup(client: &mut Plain, feed: &Feed, log: Log, bad: protocol::BadStartup) {
    // What the relay cannot frame it cannot read: the client hears
    // why (as the server would answer a bad packet), and so does
    // the user, at the end of the run.
    log.debug(&format!("the capture relay refused a connection: {bad}"));
    feed.startup_refused(&bad.to_string());
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
    client: &mut Plain,
    upstream: &Upstream,
    feed: &Feed,
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
                feed.refused(REFUSED_DIRECT_TLS);
                log.debug(
                    "a client began a TLS handshake directly (sslnegotiation=direct): refused",
                );
                return None;
            }
            Err(bad) => Some(bad),
        };
        if let Some(bad) = bad {
            refuse_bad_startup(client, feed, log, bad).await;
            return None;
        }
        let mut chunk = [0u8; 1024];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                // A client that wanted TLS and left when told "no".
                if asked_tls && buf.is_empty() {
                    feed.refused(REFUSED_TLS);
                }
                return None;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// One client connection, from its first byte to its end.
async fn serve(
    mut client: Plain,
    id: u64,
    upstream: Arc<Upstream>,
    feed: Feed,
    pump: Option<Hand>,
    mut stop: watch::Receiver<bool>,
    log: Log,
) {
    let Some(Opening {
        packet,
        user,
        database,
        buf,
    }) = read_startup(&mut client, &upstream, &feed, log).await
    else {
        return;
    };

    // 2. The server.
    let mut server = match upstream.connect().await {
        Ok(s) => s,
        Err(message) => {
            feed.refused(REFUSED_UPSTREAM);
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
    let opening = server.io();
    if opening.write_all(&packet).await.is_err() || opening.write_all(&buf).await.is_err() {
        return;
    }
    feed.open(id, &user, &database);
    if !buf.is_empty() {
        feed.chunk(id, Side::Client, &buf);
    }
    // 3. Both ways: by the pump, which tells the analyst when it closes.
    let mut server: Box<dyn Io> = match (server, pump) {
        (Server::Plain(server), Some(pump)) => {
            let handed = match (client.into_sock(), server.into_sock()) {
                (Ok(client), Ok(server)) => pump.link(id, client, server),
                _ => false,
            };
            // Out of tokio and not into the pump: the sockets are gone.
            if !handed {
                feed.close(id, false);
            }
            return;
        }
        (Server::Plain(server), None) => Box::new(server),
        (Server::Tls(server), _) => server,
    };
    // Or here, both ways in this one task (no hop to another task per
    // chunk): each chunk is forwarded, then handed to the analyst before
    // this task awaits anything else, so the analyst sees a request before
    // its answer whatever the order the sockets are polled in.
    let mut up = Direction::new(Side::Client);
    let mut down = Direction::new(Side::Server);
    let both = std::future::poll_fn(|cx| {
        let up = up.poll(cx, &mut client, &mut *server, &feed, id);
        let down = down.poll(cx, &mut *server, &mut client, &feed, id);
        if up.is_ready() && down.is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    });
    let left_open = tokio::select! {
        biased;
        _ = both => false,
        _ = stop.wait_for(|s| *s) => true,
    };
    feed.close(id, left_open);
}
