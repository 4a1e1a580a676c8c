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
//! startup packet ([`forward`]), and then copies both ways ([`pump`]),
//! handing each chunk once forwarded to [`analyst`], on a thread of its
//! own, where [`protocol`] frames what passes, [`session`] turns it into
//! statements and transactions, [`shapes`] keeps them as counted shapes.
//! Authentication (passwords, SASL) passes through and is never kept.

pub(crate) mod analyst;
pub(crate) mod evidence;
pub(crate) mod forward;
pub mod own_process;
pub(crate) mod protocol;
pub(crate) mod pump;
pub(crate) mod session;
pub(crate) mod shapes;
pub(crate) mod text;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio_postgres::config::Host;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;
use forward::{Target, Upstream};
pub use shapes::Capture;

/// A running relay. It accepts and starts connections on a thread of its
/// own, in a single-threaded tokio runtime, and forwards every started
/// connection on one other thread, the [`pump`] (an epoll of its own; a
/// connection to a TLS server stays on tokio's thread): on a machine with
/// few cores, every hop a relayed round trip makes between threads (a
/// wake-up, a futex) is time the server and the client do not get, and
/// one thread serving every connection reads all the chunks one wake-up
/// brings. That thread only forwards; the reading (framing, lexing, the
/// capture) runs on a third thread at the least priority, in batches
/// ([`analyst`]).
///
/// Started by the planck binary, the relay is a process of its own, in a
/// session of its own ([`own_process`]), and the reading happens in the
/// recording process; elsewhere (the tests, a library caller) both threads
/// run in this process.
pub struct Relay {
    pub port: u16,
    /// The directory of the unix socket `.s.PGSQL.<port>`.
    pub socket_dir: PathBuf,
    running: Running,
}

enum Running {
    Thread {
        stop: watch::Sender<bool>,
        done: tokio::sync::oneshot::Receiver<Capture>,
    },
    Process(own_process::Child),
}

impl Relay {
    /// Listens on 127.0.0.1 and a unix socket, relaying to `conn`'s server.
    pub async fn start(conn: &ConnInfo, log: Log) -> Result<Relay> {
        let target = Target::of(conn);
        if own_process::enabled() {
            match own_process::spawn(target.clone(), log).await {
                Ok(child) => {
                    return Ok(Relay {
                        port: child.port,
                        socket_dir: child.socket_dir.clone(),
                        running: Running::Process(child),
                    });
                }
                // Its own binary could not be started again (replaced
                // since, say): the relay runs here, slower on a busy
                // machine, but the recording is the same.
                Err(e) => log.debug(&format!("{e}; the relay runs in this process")),
            }
        }
        let upstream = Upstream::new(&target)?;
        let io = |e: std::io::Error| Error::Internal {
            message: format!("the capture relay could not listen: {e}"),
        };
        let listeners = forward::listen().map_err(io)?;
        let (port, socket_dir) = (listeners.port, listeners.socket_dir.clone());
        let runtime = forward::runtime().map_err(io)?;
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let capture = Arc::new(Mutex::new(Capture::default()));
        let analyst = analyst::Analyst::start(capture.clone()).map_err(io)?;
        std::thread::Builder::new()
            .name("planck-relay".into())
            .spawn(move || {
                runtime.block_on(forward::relay(listeners, upstream, analyst, stop_rx, log));
                let mut guard = capture.lock().unwrap_or_else(|e| e.into_inner());
                let _ = done_tx.send(std::mem::take(&mut *guard));
            })
            .map_err(io)?;
        Ok(Relay {
            port,
            socket_dir,
            running: Running::Thread { stop, done },
        })
    }

    /// Stops listening, closes the connections the command left open, and
    /// returns what was captured: an error when the relay's process ended
    /// before it was told to (what it forwarded was cut).
    pub async fn finish(self) -> Result<Capture> {
        let capture = match self.running {
            Running::Thread { stop, done } => {
                let _ = stop.send(true);
                Ok(done.await.unwrap_or_default())
            }
            Running::Process(child) => child.finish().await,
        };
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

pub use shapes::{REFUSED_DIRECT_TLS, REFUSED_TLS, REFUSED_UPSTREAM};
