//! The sampler: on its own connection, `pg_stat_activity` every
//! `--sample-ms` for planck's backends (tagged by `application_name`), and
//! only when one of them waits on a Lock, `pg_locks` and
//! `pg_blocking_pids()` (both take the lock manager's partition locks: the
//! manual warns against calling them often). Waits are resolved to their root
//! holder and the statement that took the lock ([`super::attribution`]);
//! every wait event of planck's backends counts in the step's profile. On
//! a Citus coordinator with distributed tables the locks are every node's,
//! read at each poll ([`super::citus`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::Client;

use super::attribution::{
    self, Attribution, BlockerState, History, LockRow, LockSnapshot, Seen, Wait,
};
use super::citus::{self, Coordinator};
use crate::db::quote_ident;

/// Each backend's history, by pid: what the clients record and the sampler reads.
pub type Registry = Arc<Mutex<HashMap<i32, Arc<Mutex<History>>>>>;

/// A hotspot's identity within a step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HotspotKey {
    pub lock_type: String,
    pub relation: Option<String>,
    /// `ctid (page,tuple)` of the row, when the tuple lock showed it.
    pub row: Option<(i32, i16)>,
    /// On a Citus coordinator, the shard of the distributed table
    /// (`relation`) the lock was on, and its worker
    /// (`shard campaigns_102010 on worker 127.0.0.1:9701`).
    pub shard: Option<String>,
    /// Statement indexes.
    pub waiting: Option<usize>,
    pub blocking: Option<usize>,
    /// The blocker's unit (see [`attribution::UnitRun::unit`]).
    pub blocker_unit: Option<usize>,
    /// The holder, when it is not one of planck's connections (autovacuum,
    /// another application) or was gone: what the server said of it. Such
    /// a wait is not the workload's own (issue 32).
    pub outside: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct HotspotCount {
    pub samples: u64,
    pub states: HashMap<BlockerState, u64>,
    /// Values the blocking statement had bound, the first time seen.
    pub blocker_params: Vec<Option<String>>,
    /// The row's primary key values (`id = 1`), read at its ctid.
    pub row_key: Option<String>,
}

/// What the sampler gathered over a step.
#[derive(Debug, Default)]
pub struct Samples {
    pub polls: u64,
    /// Sum over polls of planck backends seen.
    pub backend_samples: u64,
    pub hotspots: HashMap<HotspotKey, HotspotCount>,
    pub wait_events: HashMap<(String, String), u64>,
    pub lock_polls: u64,
    pub errors: u64,
    /// Lock-wait samples, those naming both statements, and those whose
    /// holder is not planck's (`outside`).
    pub lock_samples: u64,
    pub attributed_samples: u64,
    pub outside_samples: u64,
}

impl Samples {
    /// Adds a later run of the same step (`--repeat`).
    pub fn merge(&mut self, o: Samples) {
        self.polls += o.polls;
        self.backend_samples += o.backend_samples;
        self.lock_polls += o.lock_polls;
        self.errors += o.errors;
        self.lock_samples += o.lock_samples;
        self.attributed_samples += o.attributed_samples;
        self.outside_samples += o.outside_samples;
        for (k, v) in o.wait_events {
            *self.wait_events.entry(k).or_default() += v;
        }
        for (k, v) in o.hotspots {
            let c = self.hotspots.entry(k).or_default();
            c.samples += v.samples;
            for (s, n) in v.states {
                *c.states.entry(s).or_default() += n;
            }
            if c.blocker_params.is_empty() {
                c.blocker_params = v.blocker_params;
            }
            if c.row_key.is_none() {
                c.row_key = v.row_key;
            }
        }
    }
}

const ACTIVITY: &str = "SELECT pid, state, wait_event_type, wait_event FROM pg_stat_activity \
                        WHERE application_name = $1";
const LOCKS: &str = "SELECT l.pid, l.locktype, l.relation::regclass::text, l.page, l.tuple, \
                     coalesce(l.transactionid::text, l.virtualxid, \
                              l.classid::text || ':' || l.objid::text || ':' || l.objsubid::text), \
                     l.granted \
                     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                     WHERE a.application_name = $1";
const HOLDER: &str = "SELECT coalesce(nullif(backend_type, ''), 'backend') \
                      || coalesce(' ' || quote_literal(nullif(application_name, '')), '') \
                      || coalesce(', ' || state, '') \
                      FROM pg_stat_activity WHERE pid = $1";
const BLOCKING: &str = "SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity \
                        WHERE application_name = $1 AND wait_event_type = 'Lock'";

/// Where the sampler reads the locks.
enum Source {
    /// The server's own `pg_locks` and `pg_blocking_pids()`.
    Local {
        locks: tokio_postgres::Statement,
        blocking: tokio_postgres::Statement,
    },
    /// A Citus coordinator with distributed tables: every node's locks.
    Citus(Coordinator),
}

/// What the sampler looked up once and keeps: each row's key by
/// (relation, ctid) (`id = 1`), each relation's key columns, and what each
/// holder outside planck's connections is.
#[derive(Default)]
struct Lookups {
    keys: HashMap<(String, (i32, i16)), Option<String>>,
    key_columns: HashMap<String, Vec<String>>,
    holders: HashMap<i32, String>,
}

/// One poll's snapshot as attribution reads it: the clock before the
/// locks were read, what each connection ran since, and each backend's
/// state and wait type.
struct Poll<'a> {
    snap: &'a LockSnapshot,
    from: u64,
    seen: &'a Seen,
    states: &'a HashMap<i32, (String, Option<String>)>,
}

/// Polls until `stop` is set.
pub async fn run(
    client: Client,
    app: String,
    interval: Duration,
    registry: Registry,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Samples {
    let mut out = Samples::default();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let (Ok(activity), Ok(holder)) = (client.prepare(ACTIVITY).await, client.prepare(HOLDER).await)
    else {
        out.errors += 1;
        return out;
    };
    let mut source = match Coordinator::detect(&client).await {
        Some(c) => Source::Citus(c),
        None => match (client.prepare(LOCKS).await, client.prepare(BLOCKING).await) {
            (Ok(locks), Ok(blocking)) => Source::Local { locks, blocking },
            _ => {
                out.errors += 1;
                return out;
            }
        },
    };
    let mut lookups = Lookups::default();
    while !*stop.borrow() {
        // Stopping ends the wait for the next tick, however long the
        // interval (`--sample-ms` is the user's).
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let Ok(rows) = client.query(&activity, &[&app]).await else {
            out.errors += 1;
            continue;
        };
        out.polls += 1;
        let (mut states, any_lock) = activity_states(&rows, &mut out);
        // The clock just before the locks are read, and after them what
        // each connection ran since: the server's snapshot was taken in
        // between, so the units it shows holding or awaiting a lock are
        // among those read, even the ones that have ended since (issue 32).
        let from = attribution::clock();
        let snapshot = match &source {
            Source::Local { locks, blocking } if any_lock => {
                out.lock_polls += 1;
                local_snapshot(&client, locks, blocking, &app, &registry, from).await
            }
            Source::Local { .. } => continue,
            // A coordinator's backend waiting on a worker's lock shows a
            // Client wait, not a Lock: the cluster's locks are read at
            // every poll.
            Source::Citus(c) => {
                let pids: Vec<i32> = states.keys().copied().collect();
                let mut seen = None;
                let between = || seen = Some(seen_since(&registry, from));
                match c.snapshot(&client, &pids, between).await {
                    Ok(Some(snap)) => {
                        out.lock_polls += 1;
                        seen.map(|seen| (snap, seen)).ok_or(())
                    }
                    Ok(None) => continue,
                    Err(_) => Err(()),
                }
            }
        };
        let Ok((snap, seen)) = snapshot else {
            out.errors += 1;
            continue;
        };
        // A coordinator's backend waiting on a worker's lock shows a
        // Client wait: it waits on a Lock, as a blocker's state says.
        if let Source::Citus(_) = source {
            for l in snap.locks.iter().filter(|l| !l.granted) {
                if let Some(s) = states.get_mut(&l.pid) {
                    s.1 = Some("Lock".into());
                }
            }
        }
        let poll = Poll {
            snap: &snap,
            from,
            seen: &seen,
            states: &states,
        };
        for wait in snap.waits() {
            let (key, count) =
                resolve(&client, &mut source, &holder, &mut lookups, &poll, wait).await;
            out.lock_samples += 1;
            if key.outside.is_some() {
                out.outside_samples += 1;
            } else if key.waiting.is_some() && key.blocking.is_some() {
                out.attributed_samples += 1;
            }
            let c = out.hotspots.entry(key).or_default();
            c.samples += 1;
            for (s, n) in count.states {
                *c.states.entry(s).or_default() += n;
            }
            if c.blocker_params.is_empty() {
                c.blocker_params = count.blocker_params;
            }
            if c.row_key.is_none() {
                c.row_key = count.row_key;
            }
        }
    }
    out
}

/// Each of planck's backends' state and wait type, its wait event
/// counted; and whether one of them waits on a Lock.
fn activity_states(
    rows: &[tokio_postgres::Row],
    out: &mut Samples,
) -> (HashMap<i32, (String, Option<String>)>, bool) {
    let mut states = HashMap::new();
    let mut any_lock = false;
    for r in rows {
        let pid: i32 = r.get(0);
        let state: Option<String> = r.get(1);
        let wtype: Option<String> = r.get(2);
        let wevent: Option<String> = r.get(3);
        out.backend_samples += 1;
        if let (Some(t), Some(e)) = (&wtype, &wevent) {
            *out.wait_events.entry((t.clone(), e.clone())).or_default() += 1;
            any_lock |= t == "Lock";
        }
        states.insert(pid, (state.unwrap_or_default(), wtype));
    }
    (states, any_lock)
}

/// What each of planck's connections ran since the clock read `from`.
fn seen_since(registry: &Registry, from: u64) -> Seen {
    let reg = registry.lock().expect("registry lock").clone();
    reg.iter()
        .map(|(pid, h)| (*pid, h.lock().expect("history lock").since(from)))
        .collect()
}

/// The server's own locks of planck's backends and who blocks them, with
/// what each connection ran since `from` (read between the two queries).
async fn local_snapshot(
    client: &Client,
    locks: &tokio_postgres::Statement,
    blocking: &tokio_postgres::Statement,
    app: &String,
    registry: &Registry,
    from: u64,
) -> Result<(LockSnapshot, Seen), ()> {
    let lrows = client.query(locks, &[app]).await.map_err(drop)?;
    let seen = seen_since(registry, from);
    let brows = client.query(blocking, &[app]).await.map_err(drop)?;
    Ok((lock_snapshot(&lrows, &brows), seen))
}

/// One wait of the snapshot, attributed: its hotspot, and its one sample.
/// On a coordinator a shard's lock names the distributed table, and the
/// hotspot the shard and its worker.
async fn resolve(
    client: &Client,
    source: &mut Source,
    holder: &tokio_postgres::Statement,
    lookups: &mut Lookups,
    poll: &Poll<'_>,
    mut wait: Wait,
) -> (HotspotKey, HotspotCount) {
    let shard = match (&mut *source, wait.relation.as_deref()) {
        (Source::Citus(c), Some(rel)) => {
            let node = citus::node_of(poll.snap, &wait);
            c.shard(client, rel, node).await
        }
        _ => None,
    };
    let row_key = match (&wait.relation, wait.row) {
        // A row on a shard is known by the shard's placement: a reference
        // table's has one on every node.
        (Some(rel), Some(ctid)) => {
            let place = shard
                .as_ref()
                .map_or_else(|| rel.clone(), citus::Shard::describe);
            let k = (place, ctid);
            if !lookups.keys.contains_key(&k) {
                let v = match &shard {
                    Some(s) => {
                        let cols = key_columns(client, &s.table, &mut lookups.key_columns).await;
                        citus::row_key(client, s, &cols, ctid).await
                    }
                    None => row_key(client, rel, ctid, &mut lookups.key_columns).await,
                };
                lookups.keys.insert(k.clone(), v);
            }
            lookups.keys[&k].clone()
        }
        _ => None,
    };
    if let Some(s) = &shard {
        wait.relation = Some(s.table.clone());
    }
    let Attribution {
        waiting,
        blocking,
        blocker_unit,
        blocker_params,
        state,
        outside,
    } = attribution::attribute(&wait, poll.from, poll.seen, poll.states, row_key.as_deref());
    let outside = match (wait.root, outside) {
        (_, false) => None,
        (Some(root), true) => {
            Some(outside_holder(client, holder, &mut lookups.holders, root).await)
        }
        (None, true) => Some("a holder the server no longer showed".into()),
    };
    let key = HotspotKey {
        lock_type: wait.lock_type,
        relation: wait.relation,
        row: wait.row,
        shard: shard.as_ref().map(citus::Shard::describe),
        waiting,
        blocking,
        blocker_unit,
        outside,
    };
    let count = HotspotCount {
        samples: 1,
        states: HashMap::from([(state, 1)]),
        blocker_params,
        row_key,
    };
    (key, count)
}

/// The server's locks and who blocks whom, as one snapshot.
fn lock_snapshot(lrows: &[tokio_postgres::Row], brows: &[tokio_postgres::Row]) -> LockSnapshot {
    LockSnapshot {
        locks: lrows.iter().map(LockRow::from_row).collect(),
        blocking: brows
            .iter()
            .map(|r| (r.get(0), r.get::<_, Vec<i32>>(1)))
            .collect(),
    }
}

/// What the lock holder `root` outside planck's connections is, read once
/// (`holders` keeps it).
async fn outside_holder(
    client: &Client,
    holder: &tokio_postgres::Statement,
    holders: &mut HashMap<i32, String>,
    root: i32,
) -> String {
    match holders.get(&root) {
        Some(h) => h.clone(),
        None => {
            let h = client
                .query_opt(holder, &[&root])
                .await
                .ok()
                .flatten()
                .and_then(|r| r.get::<_, Option<String>>(0))
                .unwrap_or_else(|| "a backend that has ended".into());
            holders.insert(root, h.clone());
            h
        }
    }
}

/// The primary key columns of a relation (as `regclass` prints it), in key order.
const KEY_COLUMNS: &str = "SELECT a.attname::text FROM pg_index i \
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
     WHERE i.indrelid = $1::text::regclass AND i.indisprimary \
     ORDER BY array_position(i.indkey::int2[], a.attnum)";

/// The primary key columns of `relation`, read once (`columns` keeps them).
async fn key_columns(
    client: &Client,
    relation: &str,
    columns: &mut HashMap<String, Vec<String>>,
) -> Vec<String> {
    if !columns.contains_key(relation) {
        let cols = client
            .query(KEY_COLUMNS, &[&relation])
            .await
            .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
            .unwrap_or_default();
        columns.insert(relation.to_string(), cols);
    }
    columns[relation].clone()
}

/// The key values of the row at `ctid` (`id = 1`, `a = 1, b = 2`): the row
/// a tuple lock names. `None` without a primary key or when the row is gone.
async fn row_key(
    client: &Client,
    relation: &str,
    ctid: (i32, i16),
    columns: &mut HashMap<String, Vec<String>>,
) -> Option<String> {
    let cols = key_columns(client, relation, columns).await;
    if cols.is_empty() {
        return None;
    }
    let select: Vec<String> = cols
        .iter()
        .map(|c| format!("{}::text", quote_ident(c)))
        .collect();
    // `relation` is regclass's own output: already quoted where needed.
    let sql = format!(
        "SELECT {} FROM {relation} WHERE ctid = $1::text::tid",
        select.join(", ")
    );
    let tid = format!("({},{})", ctid.0, ctid.1);
    let row = client.query_opt(&sql, &[&tid]).await.ok()??;
    Some(
        cols.iter()
            .enumerate()
            .map(|(i, c)| {
                let v: Option<String> = row.get(i);
                format!("{c} = {}", v.as_deref().unwrap_or("NULL"))
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}
