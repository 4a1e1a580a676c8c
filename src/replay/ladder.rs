//! The ladder: each step a closed loop of `concurrency` clients, one
//! connection each, connected before the step starts (connection time is
//! not latency), spread over worker threads that each run a single-threaded
//! runtime and own one histogram per (statement) and (transaction), merged
//! at the step's end. The sampler runs on the caller's runtime meanwhile.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::attribution::History;
use super::exec::{ClientConn, Outcome, Picker, Shared, WorkerStats, run_unit};
use super::lean::Lean;
use super::rng::Rng;
use super::sampler::{self, Registry, Samples};
use crate::db::ConnInfo;
use crate::error::{Error, Result};

/// A ladder as it is typed: `1,4,16`.
pub fn ladder_text(ladder: &[u32]) -> String {
    ladder
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[derive(Debug, Clone)]
pub struct StepOptions {
    /// Clients of the step.
    pub concurrency: u32,
    /// Open loop: units per second over all clients, each unit timed from
    /// its intended start. `None`: closed loop.
    pub rate: Option<f64>,
    /// Connections the clients share (an application pool); `None`: one each.
    pub pool: Option<u32>,
    pub warmup: Duration,
    pub duration: Duration,
    pub sample_ms: u64,
    pub sampler: bool,
    pub workers: usize,
    pub seed: u64,
    /// application_name of planck's backends (unique per run).
    pub app: String,
}

/// What one step measured.
#[derive(Debug)]
pub struct StepResult {
    pub concurrency: u32,
    /// The open loop's offered rate (units per second).
    pub rate: Option<f64>,
    /// Connections of the step's pool, when smaller than the clients.
    pub pool: Option<u32>,
    pub stats: WorkerStats,
    pub samples: Samples,
    /// The measured window, as it really lasted.
    pub elapsed: Duration,
    /// planck's CPU seconds over the step (warm-up included).
    pub cpu_seconds: f64,
    /// Wall seconds of the step (warm-up included).
    pub wall_seconds: f64,
    /// The server's CPU seconds over the step, when it runs on this machine.
    pub server_cpu_seconds: Option<f64>,
    /// Runs merged into this step (`--repeat`).
    pub runs: u32,
    pub workers: usize,
    /// The step was cut short (Ctrl-C, SIGTERM).
    pub interrupted: bool,
}

impl StepResult {
    /// This step with a later run of it (`--repeat`) merged in.
    pub fn append(mut self, o: StepResult) -> StepResult {
        let seconds = self.elapsed.as_secs() as usize;
        self.stats.append_run(&o.stats, seconds);
        self.samples.merge(o.samples);
        self.elapsed += o.elapsed;
        self.cpu_seconds += o.cpu_seconds;
        self.wall_seconds += o.wall_seconds;
        self.server_cpu_seconds = match (self.server_cpu_seconds, o.server_cpu_seconds) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.runs += o.runs;
        self
    }
}

/// planck's own CPU time (user + system), from /proc/self/stat; 0 elsewhere.
pub fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name's closing parenthesis: utime is the
    // 12th, stime the 13th (clock ticks, 100 a second on Linux).
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU time of a process from /proc/<pid>/stat, when it is a PostgreSQL
/// backend of this machine (its command name, which the backend's process
/// title does not change, is `postgres`).
fn backend_cpu_seconds(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    if !head.ends_with("(postgres") {
        return None;
    }
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// The CPU seconds of each of the step's backends that this machine shows
/// (the server is local when they are `postgres` processes here).
pub fn server_cpu_seconds(pids: &[i32]) -> Vec<(i32, f64)> {
    pids.iter()
        .filter_map(|p| backend_cpu_seconds(*p).map(|c| (*p, c)))
        .collect()
}

/// The CPU the step's backends used between two readings. A backend seen at
/// both counts its difference; one that started in between (a reconnection
/// after a lost connection) counts all of its time; one that ended in
/// between drops out instead of making the whole figure unknown. `None`
/// when no backend was seen at the end (the server is not local).
fn server_cpu_used(before: &[(i32, f64)], after: &[(i32, f64)]) -> Option<f64> {
    (!after.is_empty()).then(|| {
        after
            .iter()
            .map(|(p, b)| match before.iter().find(|(q, _)| q == p) {
                Some((_, a)) => (b - a).max(0.0),
                None => *b,
            })
            .sum()
    })
}

fn registered(registry: &Registry) -> Vec<i32> {
    registry
        .lock()
        .expect("registry lock")
        .keys()
        .copied()
        .collect()
}

async fn connect(
    conn: &ConnInfo,
    registry: &Registry,
    timeout_ms: u64,
    commit: bool,
) -> std::result::Result<ClientConn, Error> {
    let (client, lender) = conn.connect_lending().await?;
    let row = client
        .query_one("SELECT pg_backend_pid(), session_user::text", &[])
        .await
        .map_err(|e| Error::db("reading the backend pid", e))?;
    let pid: i32 = row.get(0);
    let login: String = row.get(1);
    let history = Arc::new(Mutex::new(History::default()));
    registry
        .lock()
        .expect("registry lock")
        .insert(pid, history.clone());
    // Best effort: keep planck's statements out of pg_stat_statements.
    let _ = crate::session::untrack(&client).await;
    // Bounds the lone reads that run outside a transaction. Unless the run
    // may commit, they also run read-only: a read that calls a function
    // which writes (`SELECT touch()`) must fail, not commit its write.
    let read_only = if commit {
        ""
    } else {
        "; SET default_transaction_read_only = on"
    };
    client
        .batch_execute(&format!("SET statement_timeout = {timeout_ms}{read_only}"))
        .await
        .map_err(|e| Error::db("setting statement_timeout", e))?;
    Ok(ClientConn {
        client,
        lean: lender.map(Lean::new),
        prepared: Vec::new(),
        history,
        pid,
        login,
        role: None,
        session: Vec::new(),
    })
}

/// Runs one step. `stop` ends it early.
pub async fn run_step(
    conn: &ConnInfo,
    shared: Arc<Shared>,
    opts: &StepOptions,
    stop: Arc<AtomicBool>,
) -> Result<StepResult> {
    let mut conn = conn.clone();
    conn.config.application_name(&opts.app);
    let registry: Registry = Arc::new(Mutex::new(HashMap::new()));
    // Connections of the step: one per client, or the pool's (split over
    // the worker threads, each a pool of its own: a connection belongs to
    // the runtime that opened it). A worker thread needs one at least.
    let connections = opts
        .pool
        .map_or(opts.concurrency, |p| p.min(opts.concurrency))
        .max(1);
    let workers = opts.workers.clamp(1, connections as usize);
    let ready = Arc::new(tokio::sync::Barrier::new(workers + 1));
    let go: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let (go_tx, go_rx) = tokio::sync::watch::channel(None::<Instant>);
    let step_end = Arc::new(AtomicBool::new(false));
    let pace = Pace {
        warmup: opts.warmup,
        duration: opts.duration,
        seed: opts.seed,
        interval: opts
            .rate
            .map(|r| Duration::from_secs_f64(1.0 / r.max(1e-6))),
        total_clients: opts.concurrency,
    };
    let mut handles = Vec::new();
    for w in 0..workers {
        let worker = Worker {
            clients: (0..opts.concurrency)
                .filter(|c| *c as usize % workers == w)
                .collect(),
            own_connections: (0..connections)
                .filter(|c| *c as usize % workers == w)
                .count(),
            pooled: opts.pool.is_some(),
            conn: conn.clone(),
            shared: shared.clone(),
            registry: registry.clone(),
            ready: ready.clone(),
            go_rx: go_rx.clone(),
            stop: stop.clone(),
            step_end: step_end.clone(),
            pace,
        };
        handles.push(std::thread::spawn(move || run_worker(worker)));
    }
    ready.wait().await;
    let server0 = server_cpu_seconds(&registered(&registry));
    let cpu0 = process_cpu_seconds();
    let start = Instant::now();
    *go.lock().expect("go lock") = Some(start);
    let _ = go_tx.send(Some(start));
    // The sampler covers the measured window only. It is told to stop
    // through a channel it waits on, not a flag it reads between polls: a
    // step must not outlast its end (or a signal) by a warm-up or a
    // sampling interval still being slept.
    let (sampler_stop, stopped) = tokio::sync::watch::channel(false);
    let sampler = if opts.sampler {
        Some(start_sampler(&conn, opts, &registry, stopped).await?)
    } else {
        None
    };
    let total = opts.warmup + opts.duration;
    let mut interrupted = false;
    while start.elapsed() < total {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20).min(total.saturating_sub(start.elapsed())))
            .await;
    }
    step_end.store(true, Ordering::Relaxed);
    // The backends of the step's end: a connection lost and opened again
    // in the step has a new one.
    let server1 = server_cpu_seconds(&registered(&registry));
    let _ = sampler_stop.send(true);
    let samples = match sampler {
        Some(h) => h.await.unwrap_or_default(),
        None => Samples::default(),
    };
    let elapsed = start
        .elapsed()
        .saturating_sub(opts.warmup)
        .min(opts.duration);
    let stats = join_workers(handles, interrupted).await?;
    let wall = start.elapsed().as_secs_f64();
    Ok(StepResult {
        concurrency: opts.concurrency,
        rate: opts.rate,
        pool: opts.pool.filter(|p| *p < opts.concurrency),
        stats,
        samples,
        elapsed,
        cpu_seconds: process_cpu_seconds() - cpu0,
        wall_seconds: wall,
        server_cpu_seconds: server_cpu_used(&server0, &server1),
        runs: 1,
        workers,
        interrupted,
    })
}

/// The step's timing and seed, as each client reads it: the warm-up and
/// measured window, the open loop's interval between arrivals, and the
/// number of clients that share the arrivals.
#[derive(Debug, Clone, Copy)]
struct Pace {
    warmup: Duration,
    duration: Duration,
    seed: u64,
    interval: Option<Duration>,
    total_clients: u32,
}

/// What one worker thread takes with it: its clients and how many
/// connections it opens, and the step's shared state and signals.
struct Worker {
    clients: Vec<u32>,
    own_connections: usize,
    pooled: bool,
    conn: ConnInfo,
    shared: Arc<Shared>,
    registry: Registry,
    ready: Arc<tokio::sync::Barrier>,
    go_rx: tokio::sync::watch::Receiver<Option<Instant>>,
    stop: Arc<AtomicBool>,
    step_end: Arc<AtomicBool>,
    pace: Pace,
}

/// A worker thread's body: a runtime of its own running its clients.
fn run_worker(worker: Worker) -> Result<WorkerStats> {
    // IO and timers, one thread. tokio's IO driver brings its signal
    // and process drivers with it (the features are built for the rest
    // of planck): they check for signals and orphans at each park, for
    // nothing these workers use.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::internal(format!("starting a worker runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, run_clients(worker))
}

/// Opens the worker's connections, waits for the step's start and runs
/// its clients to the step's end: their stats, merged.
async fn run_clients(worker: Worker) -> Result<WorkerStats> {
    let Worker {
        clients,
        own_connections,
        pooled,
        conn,
        shared,
        registry,
        ready,
        mut go_rx,
        stop,
        step_end,
        pace,
    } = worker;
    // The worker's connections, handed out in turn (FIFO: the
    // mutex is fair) and given back after each unit.
    let (give, take) = tokio::sync::mpsc::unbounded_channel::<ClientConn>();
    let take = Rc::new(tokio::sync::Mutex::new(take));
    let mut failure = None;
    for _ in 0..own_connections {
        match connect(&conn, &registry, shared.statement_timeout_ms, shared.commit).await {
            Ok(c) => {
                let _ = give.send(c);
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    ready.wait().await;
    if let Some(e) = failure {
        return Err(e);
    }
    let start = loop {
        if let Some(t) = *go_rx.borrow() {
            break t;
        }
        if go_rx.changed().await.is_err() {
            return Ok(WorkerStats::default());
        }
    };
    let stats = Rc::new(RefCell::new(WorkerStats::default()));
    let picker = Picker::new(&shared.workload.units);
    let mut tasks = Vec::new();
    for c in clients {
        let client = Client {
            c,
            shared: shared.clone(),
            stats: stats.clone(),
            picker: picker.clone(),
            stop: stop.clone(),
            step_end: step_end.clone(),
            conn: conn.clone(),
            registry: registry.clone(),
            give: give.clone(),
            take: take.clone(),
            pooled,
            pace,
            start,
        };
        tasks.push(tokio::task::spawn_local(run_client(client)));
    }
    drop(give);
    for t in tasks {
        let _ = t.await;
    }
    Ok(Rc::try_unwrap(stats)
        .map(RefCell::into_inner)
        .unwrap_or_default())
}

/// What one client task takes with it: its number, the worker's stats,
/// picker and connections (`give` back, `take` one), and the step's state.
struct Client {
    c: u32,
    shared: Arc<Shared>,
    stats: Rc<RefCell<WorkerStats>>,
    picker: Picker,
    stop: Arc<AtomicBool>,
    step_end: Arc<AtomicBool>,
    conn: ConnInfo,
    registry: Registry,
    give: tokio::sync::mpsc::UnboundedSender<ClientConn>,
    take: Rc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<ClientConn>>>,
    pooled: bool,
    pace: Pace,
    start: Instant,
}

/// One client: picks units and runs them, closed or open loop, until the
/// step ends or a signal stops it; reconnects when its connection is lost.
async fn run_client(client: Client) {
    let Client {
        c,
        shared,
        stats,
        picker,
        stop,
        step_end,
        conn,
        registry,
        give,
        take,
        pooled,
        pace,
        start,
    } = client;
    let Pace {
        warmup,
        duration,
        seed,
        interval,
        total_clients,
    } = pace;
    let mut rng = Rng::new(seed ^ (u64::from(c) + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let measure_from = start + warmup;
    let until = measure_from + duration;
    // A unit in flight at the end may still run for a
    // statement timeout; its pauses no longer than that.
    let pauses_until = until + Duration::from_millis(shared.statement_timeout_ms);
    // Open loop: arrival k of the step is due at start + k
    // x interval; client c takes arrivals c, c + N, ...
    let mut arrival = u64::from(c);
    // Without --pool a client keeps the connection it
    // first takes: no hand-over per unit.
    let mut kept: Option<ClientConn> = None;
    loop {
        let due = interval.map(|i| start + i.mul_f64(arrival as f64));
        if let Some(due) = due {
            if due >= until {
                break;
            }
            tokio::time::sleep_until(due.into()).await;
            arrival += u64::from(total_clients);
        }
        let now = Instant::now();
        if now >= until || stop.load(Ordering::Relaxed) || step_end.load(Ordering::Relaxed) {
            break;
        }
        // A unit counts from its intended start: a late
        // one is not hidden (no coordinated omission).
        let intended = due.unwrap_or(now);
        let record = intended >= measure_from;
        let unit = picker.pick(&mut rng);
        let asked = Instant::now();
        let mut cc = match kept.take() {
            Some(cc) => cc,
            None => {
                // Bounded by the step's end: a connection lost
                // for good is not waited for.
                let got =
                    tokio::time::timeout_at(until.into(), async { take.lock().await.recv().await })
                        .await;
                let Ok(Some(cc)) = got else {
                    break;
                };
                cc
            }
        };
        if Instant::now() >= until || stop.load(Ordering::Relaxed) {
            let _ = give.send(cc);
            break;
        }
        if pooled && record {
            stats.borrow_mut().pool_wait.record(asked.elapsed());
        }
        let outcome = run_unit(
            &mut cc,
            &shared,
            unit,
            &mut rng,
            &stats,
            record,
            intended,
            pauses_until,
        )
        .await;
        if record && outcome == Outcome::Ok {
            let mut s = stats.borrow_mut();
            let sec = (intended - measure_from).as_secs() as usize;
            if s.per_second.len() <= sec {
                s.per_second.resize(sec + 1, 0);
            }
            s.per_second[sec] += 1;
        }
        if outcome == Outcome::Lost {
            // The server went away: reconnect, retrying until the step ends.
            registry.lock().expect("registry lock").remove(&cc.pid);
            let Some(n) = reconnect(&conn, &registry, &shared, &stop, until).await else {
                return;
            };
            cc = n;
            stats.borrow_mut().counters.reconnects += 1;
        }
        if pooled {
            let _ = give.send(cc);
        } else {
            kept = Some(cc);
        }
    }
}

/// Opens a connection again after one was lost, retrying every 200 ms
/// until the step ends (`until`) or a signal stops it: `None` then.
async fn reconnect(
    conn: &ConnInfo,
    registry: &Registry,
    shared: &Shared,
    stop: &AtomicBool,
    until: Instant,
) -> Option<ClientConn> {
    loop {
        if Instant::now() >= until || stop.load(Ordering::Relaxed) {
            return None;
        }
        match connect(conn, registry, shared.statement_timeout_ms, shared.commit).await {
            Ok(n) => return Some(n),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Starts the step's sampler on a connection of its own: it sleeps out
/// the warm-up, then samples the step's backends until `stopped`.
async fn start_sampler(
    conn: &ConnInfo,
    opts: &StepOptions,
    registry: &Registry,
    stopped: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<Samples>> {
    let client = conn.connect().await?;
    let _ = crate::session::untrack(&client).await;
    let app = opts.app.clone();
    let registry = registry.clone();
    let interval = Duration::from_millis(opts.sample_ms.max(1));
    let warmup = opts.warmup;
    Ok(tokio::spawn(async move {
        let mut stopped = stopped;
        tokio::select! {
            _ = tokio::time::sleep(warmup) => {}
            _ = stopped.wait_for(|s| *s) => return Samples::default(),
        }
        sampler::run(client, app, interval, registry, stopped).await
    }))
}

/// Joins the worker threads and merges their stats: the first error of
/// one fails the step. Workers finish their unit in flight (bounded by
/// the statement timeout); an interrupted step does not wait for them.
async fn join_workers(
    handles: Vec<std::thread::JoinHandle<Result<WorkerStats>>>,
    interrupted: bool,
) -> Result<WorkerStats> {
    let mut stats = WorkerStats::default();
    let mut first_err = None;
    let joined = tokio::task::spawn_blocking(move || {
        handles.into_iter().map(|h| h.join()).collect::<Vec<_>>()
    });
    let results = if interrupted {
        match tokio::time::timeout(Duration::from_secs(2), joined).await {
            Ok(r) => r.unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    } else {
        joined.await.unwrap_or_default()
    };
    for r in results {
        match r {
            Ok(Ok(s)) => stats.merge(&s),
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(_) => first_err = first_err.or(Some(Error::internal("a replay worker panicked"))),
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend that ended between the readings drops out; no backend
    /// seen twice: unknown.
    #[test]
    fn server_cpu_is_summed_over_the_backends_of_the_step() {
        let before = [(1, 2.0), (2, 5.0), (3, 1.0)];
        // 1 and 3 count their difference, 2 ended, 4 started in the step.
        let after = [(1, 2.5), (3, 1.25), (4, 0.5)];
        assert_eq!(server_cpu_used(&before, &after), Some(1.25));
        assert_eq!(server_cpu_used(&[], &[(4, 0.5)]), Some(0.5));
        assert_eq!(server_cpu_used(&before, &[]), None);
        assert_eq!(server_cpu_used(&[], &[]), None);
        // Neither a pid this machine lacks nor a process that is not a
        // PostgreSQL backend (this test) is read.
        let me = std::process::id() as i32;
        assert!(server_cpu_seconds(&[me, -1]).is_empty());
    }
}
