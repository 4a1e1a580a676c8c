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
//! This is the process's one way of hearing them: seed, record and replay
//! each hold a [`Signals`] handle while their work must not be cut short
//! (replay ends after its finished steps, record waits for its command).
//! Once caught, a signal stays caught for the life of the process (tokio's
//! handlers are never uninstalled): a second Ctrl-C while the foreign keys
//! are validated does not cut the validation short. A signal that arrives
//! while no handle is alive (the seed is over and `planck demo` went on to
//! explain) is [`unheard`]: `main` then ends the process with 128 + its
//! number, as the signal's default action would have.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

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
    /// Catches SIGINT, SIGTERM and SIGHUP from now on (needs a tokio
    /// runtime). The listener is the process's one: installed by the first
    /// call, shared by every handle after it.
    pub fn install() -> Result<Signals> {
        let hub = hub()?;
        LIVE.fetch_add(1, Ordering::SeqCst);
        Ok(Signals {
            rx: hub.subscribe(),
        })
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

    /// Resolves at the next stop signal after this call (each one, where
    /// [`Signals::wait`] resolves for good at the first).
    pub async fn next(&mut self) -> Stop {
        self.rx.borrow_and_update();
        match self.rx.changed().await {
            Ok(()) => (*self.rx.borrow_and_update()).unwrap_or(Stop::Interrupt),
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

/// Where the listener sends each signal: to the handles while one is alive.
static STOPS: LazyLock<watch::Sender<Option<Stop>>> = LazyLock::new(|| watch::channel(None).0);

/// Where it sends a signal no handle is alive to hear (see [`unheard`]).
static UNHEARD: LazyLock<watch::Sender<Option<Stop>>> = LazyLock::new(|| watch::channel(None).0);

/// Whether the process's listener is running.
static LISTENING: Mutex<bool> = Mutex::new(false);

/// Marks the listener stopped when its task is dropped.
struct Listening;

impl Drop for Listening {
    fn drop(&mut self) {
        *LISTENING.lock().unwrap_or_else(|e| e.into_inner()) = false;
    }
}

/// The process's one listener, started on first use.
fn hub() -> Result<&'static watch::Sender<Option<Stop>>> {
    let mut listening = LISTENING.lock().unwrap_or_else(|e| e.into_inner());
    if *listening {
        return Ok(&STOPS);
    }
    let listen = |k: SignalKind| {
        signal(k).map_err(|e| Error::Other(anyhow::anyhow!("catching signals: {e}")))
    };
    let (mut int, mut term, mut hup) = (
        listen(SignalKind::interrupt())?,
        listen(SignalKind::terminate())?,
        listen(SignalKind::hangup())?,
    );
    // A runtime that shuts down drops this task (polled or not) and the
    // mark with it: the next install, on another runtime (a test's), starts
    // a listener again.
    let running = Listening;
    tokio::spawn(async move {
        let _running = running;
        loop {
            let s = tokio::select! {
                _ = int.recv() => Stop::Interrupt,
                _ = term.recv() => Stop::Terminate,
                _ = hup.recv() => Stop::Hangup,
            };
            let _ = FIRST.compare_exchange(0, s.code(), Ordering::SeqCst, Ordering::SeqCst);
            if LIVE.load(Ordering::SeqCst) == 0 {
                UNHEARD.send_replace(Some(s));
            } else {
                STOPS.send_replace(Some(s));
            }
        }
    });
    *listening = true;
    Ok(&STOPS)
}

/// Resolves when a stop signal arrives while no [`Signals`] handle is
/// alive (the seed is over and `planck demo` went on to explain, say): the
/// signal is caught for good once the listener runs (tokio never gives its
/// default action back), so `main` ends the process with its exit code, as
/// that default action would have. Pending for ever before the listener runs.
pub async fn unheard() -> Stop {
    let mut rx = UNHEARD.subscribe();
    loop {
        if let Some(s) = *rx.borrow_and_update() {
            return s;
        }
        if rx.changed().await.is_err() {
            return std::future::pending().await;
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

/// A point of a seed where a test stops it (see [`test_stop`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point<'a> {
    /// The foreign keys are saved and dropped; no table has started.
    Start,
    /// `rows` rows of the table (as the plan names it) went into its COPY.
    Rows(&'a str, u64),
    /// The table's COPY is done; its indexes are about to be re-created.
    Indexing(&'a str),
    /// The table's load committed.
    Loaded(&'a str),
    /// Every table is loaded; the foreign keys are about to be restored.
    Restore,
    /// The foreign keys are back `NOT VALID`, about to be validated.
    Validate,
}

/// `PLANCK_TEST_STOP=SIGNAL@POINT`, read once: a hidden hook that makes a
/// seed send itself a real signal (INT, TERM, HUP or KILL) at an exact
/// point (`start`, `rows:TABLE:N`, `indexing:TABLE`, `loaded:TABLE`,
/// `restore`, `validate`), so tests stop a real run where they mean to
/// instead of racing it with sleeps. An environment variable and not a
/// flag, against the rule that settings are resolved once: it is no
/// setting, and must reach the `planck` process a test spawns unchanged.
static TEST_STOP: LazyLock<Option<(String, String)>> = LazyLock::new(|| {
    let v = std::env::var("PLANCK_TEST_STOP").ok()?;
    let (sig, point) = v.split_once('@')?;
    Some((sig.to_string(), point.to_string()))
});

/// Whether the hook fired already (it fires once).
static TEST_FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `point` is the one `PLANCK_TEST_STOP` names.
fn test_point_matches(want: &str, point: Point<'_>) -> bool {
    let parts: Vec<&str> = want.split(':').collect();
    match (point, parts.as_slice()) {
        (Point::Start, ["start"]) | (Point::Restore, ["restore"]) => true,
        (Point::Validate, ["validate"]) => true,
        (Point::Rows(t, n), ["rows", table, rows]) => {
            *table == t && rows.parse::<u64>().is_ok_and(|r| n >= r)
        }
        (Point::Indexing(t), ["indexing", table]) | (Point::Loaded(t), ["loaded", table]) => {
            *table == t
        }
        _ => false,
    }
}

/// The test hook (see [`TEST_STOP`]): at the point it names, sends the
/// signal to this process and returns once the listener has heard it
/// (KILL ends the process there). True when it fired. Without the
/// variable, false at once.
#[doc(hidden)]
pub async fn test_stop(point: Point<'_>) -> bool {
    let Some((sig, want)) = TEST_STOP.as_ref() else {
        return false;
    };
    if !test_point_matches(want, point) || TEST_FIRED.swap(true, Ordering::SeqCst) {
        return false;
    }
    use rustix::process::{Signal, getpid, kill_process};
    let signal = match sig.as_str() {
        "KILL" => Signal::KILL,
        "TERM" => Signal::TERM,
        "HUP" => Signal::HUP,
        _ => Signal::INT,
    };
    let _ = kill_process(getpid(), signal);
    while received().is_none() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, not two: the handles are process-wide, and a handle alive
    /// in a test running beside it would hear the other's signal. The
    /// signals are real, sent to this test process with `kill`.
    #[test]
    fn a_handle_hears_each_signal_and_main_hears_the_ones_nobody_holds() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let send = |sig: &str| {
            let pid = std::process::id().to_string();
            let ok = std::process::Command::new("kill")
                .args([sig, pid.as_str()])
                .status()
                .unwrap()
                .success();
            assert!(ok, "kill {sig} {pid}");
        };
        let within = std::time::Duration::from_secs(30);
        rt.block_on(async {
            let mut handle = Signals::install().unwrap();
            for (sig, want) in [("-HUP", Stop::Hangup), ("-HUP", Stop::Hangup)] {
                let next = handle.next();
                send(sig);
                let got = tokio::time::timeout(within, next).await;
                assert_eq!(got.ok(), Some(want));
            }
            assert_eq!(handle.received(), Some(Stop::Hangup));
            drop(handle);
            send("-TERM");
            let got = tokio::time::timeout(within, unheard()).await;
            assert_eq!(got.ok(), Some(Stop::Terminate));
        });
    }

    #[test]
    fn the_test_hook_names_its_points() {
        assert!(test_point_matches("start", Point::Start));
        assert!(test_point_matches(
            "rows:tasks:500",
            Point::Rows("tasks", 512)
        ));
        assert!(!test_point_matches(
            "rows:tasks:500",
            Point::Rows("tasks", 499)
        ));
        assert!(!test_point_matches(
            "rows:tasks:500",
            Point::Rows("users", 900)
        ));
        assert!(test_point_matches("loaded:users", Point::Loaded("users")));
        assert!(!test_point_matches(
            "loaded:users",
            Point::Indexing("users")
        ));
        assert!(test_point_matches(
            "indexing:users",
            Point::Indexing("users")
        ));
        assert!(test_point_matches("validate", Point::Validate));
        assert!(!test_point_matches("restore", Point::Start));
    }

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
