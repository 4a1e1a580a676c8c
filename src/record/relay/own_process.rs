//! The relay as a process of its own, as a pooler runs: `planck record`
//! starts its own binary again with [`ARG`], and that process forwards,
//! alone in a session of its own, while the recording process reads what
//! it sends.
//!
//! Why a process: this is what a relay on the recorded machine competes
//! with. Linux groups tasks by session for its scheduler (autogroup, on by
//! default on desktop and many server kernels) and shares the CPU fairly
//! between the groups, not the tasks. A relay thread inside `planck
//! record` shares the recorded command's session and so its share: with a
//! benchmark's clients busy, each relayed round trip waits behind them. A
//! relay in a session of its own (PgBouncer's, once it daemonizes) gets a
//! share of its own. Measured in docs/performance.md.
//!
//! The two processes talk through the child's standard streams: its stdin
//! is the stop (closed when `planck record` is done with it, or when
//! `planck record` is gone, so the relay never outlives it), its stdout the
//! listeners' address and then the events of [`Analyst::piped`], which
//! [`super::analyst::receive`] reads into the capture. Its stderr is
//! `planck record`'s, for the relay's warnings.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};

use super::analyst::{self, Analyst};
use super::forward::{self, Target, Upstream};
use super::shapes::Capture;
use crate::error::{Error, Result};
use crate::output::Log;

/// The argument that makes the planck binary a relay (never typed by a
/// user: `planck --help` does not list it).
pub const ARG: &str = "__capture-relay";

/// The variable that hands the relay its [`Config`].
const CONFIG_VAR: &str = "PLANCK_CAPTURE_RELAY";

/// Set by the planck binary: only it can be started again as a relay (a
/// test binary or another program using the library relays on a thread).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// What the relay's process is told.
#[derive(Serialize, Deserialize)]
struct Config {
    target: Target,
    quiet: bool,
    verbose: bool,
}

/// For the planck binary, first thing: when this process was started as a
/// relay, runs it and returns its exit code; otherwise lets `planck record`
/// start relays of this binary, and returns `None`.
pub fn run_if_asked() -> Option<i32> {
    if std::env::args_os().nth(1).is_some_and(|a| a == ARG) {
        return Some(serve());
    }
    ENABLED.store(true, Ordering::Relaxed);
    None
}

pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The relay's process: a session of its own, the listeners, their address
/// on stdout, then the relay until stdin ends.
fn serve() -> i32 {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::setsid();
    let Ok(out) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return 1;
    };
    let mut out = std::fs::File::from(out);
    let fail = |out: &mut std::fs::File, message: String| {
        let mut m = vec![b'F'];
        analyst::put_bytes(&mut m, message.as_bytes());
        let _ = out.write_all(&m);
        1
    };
    let config: Config = match std::env::var(CONFIG_VAR)
        .map_err(|e| e.to_string())
        .and_then(|c| serde_json::from_str(&c).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => return fail(&mut out, format!("no settings in {CONFIG_VAR}: {e}")),
    };
    let log = Log {
        quiet: config.quiet,
        verbose: config.verbose,
    };
    let upstream = match Upstream::new(&config.target) {
        Ok(u) => u,
        Err(e) => return fail(&mut out, e.to_string()),
    };
    let listeners = match forward::listen() {
        Ok(l) => l,
        Err(e) => return fail(&mut out, format!("could not listen: {e}")),
    };
    let socket_dir = listeners.socket_dir.clone();
    let mut ready = vec![b'P'];
    ready.extend(listeners.port.to_le_bytes());
    analyst::put_bytes(&mut ready, socket_dir.as_os_str().as_encoded_bytes());
    let started = out.write_all(&ready).map_err(|e| e.to_string());
    let code = match started.and_then(|()| run(listeners, upstream, out, log)) {
        Ok(()) => 0,
        Err(e) => {
            log.warn(&format!("the capture relay stopped: {e}"));
            1
        }
    };
    let _ = std::fs::remove_dir_all(&socket_dir);
    code
}

fn run(
    listeners: forward::Listeners,
    upstream: Upstream,
    out: std::fs::File,
    log: Log,
) -> std::result::Result<(), String> {
    let runtime = forward::runtime().map_err(|e| e.to_string())?;
    let analyst = Analyst::piped(out).map_err(|e| e.to_string())?;
    let (stop, stop_rx) = watch::channel(false);
    std::thread::Builder::new()
        .name("planck-relay-stop".into())
        .spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            let _ = stop.send(true);
        })
        .map_err(|e| e.to_string())?;
    runtime.block_on(forward::relay(listeners, upstream, analyst, stop_rx, log));
    Ok(())
}

/// A relay process started by `planck record`.
pub(crate) struct Child {
    pub(crate) port: u16,
    pub(crate) socket_dir: PathBuf,
    process: std::process::Child,
    /// Closed to stop the relay.
    stdin: Option<ChildStdin>,
    done: oneshot::Receiver<std::io::Result<Capture>>,
}

fn failed(message: String) -> Error {
    Error::Internal {
        message: format!("the capture relay could not start: {message}"),
    }
}

/// Starts the relay's process and waits until it listens.
pub(crate) async fn spawn(target: Target, log: Log) -> Result<Child> {
    let exe = std::env::current_exe().map_err(|e| failed(format!("planck's own path: {e}")))?;
    let config = serde_json::to_string(&Config {
        target,
        quiet: log.quiet,
        verbose: log.verbose,
    })
    .map_err(|e| failed(e.to_string()))?;
    let mut process = std::process::Command::new(&exe)
        .arg(ARG)
        .env(CONFIG_VAR, config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| failed(format!("{}: {e}", exe.display())))?;
    let stdin = process.stdin.take();
    let Some(mut stdout) = process.stdout.take() else {
        return Err(failed("no pipe from the relay".into()));
    };
    let (ready_tx, ready) = oneshot::channel();
    let (done_tx, done) = oneshot::channel();
    std::thread::Builder::new()
        .name("planck-relay-read".into())
        .spawn(move || {
            let opened = opening(&mut stdout);
            let listening = opened.is_ok();
            let _ = ready_tx.send(opened);
            if listening {
                analyst::yield_to_the_workload();
                let _ = done_tx.send(analyst::receive(stdout, Instant::now()));
            }
        })
        .map_err(|e| failed(e.to_string()))?;
    match ready.await {
        Ok(Ok((port, socket_dir))) => Ok(Child {
            port,
            socket_dir,
            process,
            stdin,
            done,
        }),
        Ok(Err(message)) => {
            let _ = process.wait();
            Err(failed(message))
        }
        Err(_) => Err(failed("its reading thread ended".into())),
    }
}

/// The first message of the relay: its port and socket directory, or why
/// it could not listen.
fn opening(input: &mut impl Read) -> std::result::Result<(u16, PathBuf), String> {
    let cut = |e: std::io::Error| format!("its process ended before it listened ({e})");
    let mut tag = [0u8; 1];
    input.read_exact(&mut tag).map_err(cut)?;
    let mut port = [0u8; 2];
    if tag[0] == b'P' {
        input.read_exact(&mut port).map_err(cut)?;
    }
    let mut text = Vec::new();
    analyst::read_bytes(input, &mut text).map_err(cut)?;
    match tag[0] {
        b'P' => {
            use std::os::unix::ffi::OsStringExt;
            let dir = std::ffi::OsString::from_vec(text);
            Ok((u16::from_le_bytes(port), PathBuf::from(dir)))
        }
        b'F' => Err(String::from_utf8_lossy(&text).into_owned()),
        other => Err(format!("its process said {other} first")),
    }
}

impl Child {
    /// Stops the relay (its stdin closes), reads the rest of what it sent,
    /// and waits for its process to end.
    pub(crate) async fn finish(mut self) -> Result<Capture> {
        drop(self.stdin.take());
        let captured = self.done.await;
        let mut process = self.process;
        let status = tokio::task::spawn_blocking(move || process.wait()).await;
        let cut = |why: String| Error::Internal {
            message: format!(
                "the capture relay's process ended before the run did ({why}): what it \
                 forwarded is lost; record again, or with --no-relay to go without it"
            ),
        };
        match (captured, status) {
            (Ok(Ok(capture)), Ok(Ok(s))) if s.success() => Ok(capture),
            (Ok(Err(e)), _) => Err(cut(e.to_string())),
            (_, Ok(Ok(s))) => Err(cut(s.to_string())),
            (_, Ok(Err(e))) => Err(cut(e.to_string())),
            (Err(_), _) | (_, Err(_)) => Err(cut("its reading thread ended".into())),
        }
    }
}
