//! SIGINT, SIGTERM and SIGHUP during long work (a seed, later a replay):
//! noted, never fatal on the spot. A base layer, so every command that must
//! leave a database consistent catches them the same way.
//!
//! `timeout`, `docker stop` and CI cancellation send SIGTERM (and SIGKILL
//! about 10 s later); a closed terminal sends SIGHUP. Killed at once, planck
//! would leave every foreign key dropped. So from [`Signals::install`] on, the
//! three signals are caught: the load abandons its running COPYs (their
//! transactions roll back), re-adds every saved foreign key `NOT VALID` in one
//! transaction (instant, so a SIGKILL that follows finds them in place), then
//! validates them one by one, and exits with 128 + the signal's number.
//!
//! Once caught, a signal stays caught for the life of the process (tokio's
//! handlers are never uninstalled): a second Ctrl-C while the foreign keys
//! are validated does not cut the validation short. Once every [`Signals`]
//! handle is dropped (the seed is over), SIGTERM and SIGHUP end the process
//! with their usual code again, as their default action would.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::error::{Error, Result};

/// A signal planck treats as "stop cleanly".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
    Hangup,
}

impl Stop {
    /// The exit code shells report for a process ended by this signal (128 + number).
    pub fn exit_code(self) -> i32 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
            Stop::Hangup => 129,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
        }
    }

    fn from_code(c: i32) -> Option<Stop> {
        match c {
            2 => Some(Stop::Interrupt),
            15 => Some(Stop::Terminate),
            1 => Some(Stop::Hangup),
            _ => None,
        }
    }

    /// The signal's number (2, 15, 1): what `Error::Interrupted` carries.
    pub fn code(self) -> i32 {
        match self {
            Stop::Interrupt => 2,
            Stop::Terminate => 15,
            Stop::Hangup => 1,
        }
    }
}

/// The first stop signal this process received (0: none), for the exit code.
static FIRST: AtomicI32 = AtomicI32::new(0);

/// The first stop signal this process received, if any: the command glue
/// turns an `Error::Interrupted` into [`Stop::exit_code`] with it.
pub fn received() -> Option<Stop> {
    Stop::from_code(FIRST.load(Ordering::SeqCst))
}

/// How many [`Signals`] handles are alive in the process (a listener of an
/// earlier seed in the same process must not take a later seed's signal for
/// an orphan).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A handle on the caught signals; cheap to clone.
pub struct Signals {
    rx: watch::Receiver<Option<Stop>>,
}

impl Clone for Signals {
    fn clone(&self) -> Signals {
        LIVE.fetch_add(1, Ordering::SeqCst);
        Signals {
            rx: self.rx.clone(),
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Signals {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on (needs a tokio runtime).
    pub fn install() -> Result<Signals> {
        let listen = |k: SignalKind| {
            signal(k).map_err(|e| Error::Other(anyhow::anyhow!("catching signals: {e}")))
        };
        let (mut int, mut term, mut hup) = (
            listen(SignalKind::interrupt())?,
            listen(SignalKind::terminate())?,
            listen(SignalKind::hangup())?,
        );
        let (tx, rx) = watch::channel(received());
        tokio::spawn(async move {
            loop {
                let s = tokio::select! {
                    _ = int.recv() => Stop::Interrupt,
                    _ = term.recv() => Stop::Terminate,
                    _ = hup.recv() => Stop::Hangup,
                };
                if LIVE.load(Ordering::SeqCst) == 0 && s != Stop::Interrupt {
                    // The seed is over (every handle dropped, e.g. `planck
                    // demo` went on to explain): do what the signal's default
                    // action would have done, since tokio never gives it back.
                    // SIGINT is left to whoever listens for Ctrl-C next
                    // (record does), as before.
                    std::process::exit(s.exit_code());
                }
                let _ = FIRST.compare_exchange(0, s.code(), Ordering::SeqCst, Ordering::SeqCst);
                let _ = tx.send(received());
            }
        });
        LIVE.fetch_add(1, Ordering::SeqCst);
        Ok(Signals { rx })
    }

    /// The signal received so far, if any.
    pub fn received(&self) -> Option<Stop> {
        *self.rx.borrow()
    }

    /// Resolves once a stop signal has arrived.
    pub async fn wait(&self) -> Stop {
        let mut rx = self.rx.clone();
        let got = rx.wait_for(Option::is_some).await.map(|s| *s);
        match got {
            Ok(s) => s.unwrap_or(Stop::Interrupt),
            // The listener task is gone (the runtime shuts down): never resolve.
            Err(_) => std::future::pending().await,
        }
    }

    /// An `Error::Interrupted` naming the signal when one arrived.
    pub fn check(&self, state: &str) -> Result<()> {
        match self.received() {
            Some(s) => Err(interrupted(s, state)),
            None => Ok(()),
        }
    }
}

/// The error a stop signal ends a seed with. SIGINT keeps the wording
/// `interrupted: <state>`; the others name themselves first.
pub fn interrupted(s: Stop, state: &str) -> Error {
    Error::Interrupted {
        message: match s {
            Stop::Interrupt => state.to_string(),
            other => format!("{}; {state}", other.name()),
        },
        signal: s.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal_number() {
        assert_eq!(Stop::Interrupt.exit_code(), 130);
        assert_eq!(Stop::Terminate.exit_code(), 143);
        assert_eq!(Stop::Hangup.exit_code(), 129);
        for s in [Stop::Interrupt, Stop::Terminate, Stop::Hangup] {
            assert_eq!(Stop::from_code(s.code()), Some(s));
        }
        assert_eq!(Stop::from_code(0), None);
    }
}
