//! The sampler: on its own connection, `pg_stat_activity` every
//! `--sample-ms` for planck's backends (tagged by `application_name`), and
//! only when one of them waits on a Lock, `pg_locks` and
//! `pg_blocking_pids()` (both take the lock manager's partition locks: the
//! manual warns against calling them often). Waits are resolved to their root
//! holder and the statement that took the lock ([`super::attribution`]);
//! every wait event of planck's backends counts in the step's profile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::Client;

use super::attribution::{self, Attribution, BlockerState, History, LockRow, LockSnapshot, Seen};
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
    let (Ok(activity), Ok(locks), Ok(blocking), Ok(holder)) = (
        client.prepare(ACTIVITY).await,
        client.prepare(LOCKS).await,
        client.prepare(BLOCKING).await,
        client.prepare(HOLDER).await,
    ) else {
        out.errors += 1;
        return out;
    };
    // Each row's key, read once: (relation, ctid) -> `id = 1`.
    let mut keys: HashMap<(String, (i32, i16)), Option<String>> = HashMap::new();
    let mut key_columns: HashMap<String, Vec<String>> = HashMap::new();
    // What each holder outside planck's connections is, read once.
    let mut holders: HashMap<i32, String> = HashMap::new();
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
        let mut states: HashMap<i32, (String, Option<String>)> = HashMap::new();
        let mut any_lock = false;
        for r in &rows {
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
        if !any_lock {
            continue;
        }
        out.lock_polls += 1;
        // The clock just before the pg_locks query, and after it what each
        // connection ran since: the server's snapshot was taken in between,
        // so the units it shows holding or awaiting a lock are among those
        // read, even the ones that have ended since (issue 32).
        let from = attribution::clock();
        let Ok(lrows) = client.query(&locks, &[&app]).await else {
            out.errors += 1;
            continue;
        };
        let reg = registry.lock().expect("registry lock").clone();
        let seen: Seen = reg
            .iter()
            .map(|(pid, h)| (*pid, h.lock().expect("history lock").since(from)))
            .collect();
        let Ok(brows) = client.query(&blocking, &[&app]).await else {
            out.errors += 1;
            continue;
        };
        let snap = lock_snapshot(&lrows, &brows);
        for wait in snap.waits() {
            let row_key = match (&wait.relation, wait.row) {
                (Some(rel), Some(ctid)) => {
                    let k = (rel.clone(), ctid);
                    if !keys.contains_key(&k) {
                        let v = row_key(&client, rel, ctid, &mut key_columns).await;
                        keys.insert(k.clone(), v);
                    }
                    keys[&k].clone()
                }
                _ => None,
            };
            let Attribution {
                waiting,
                blocking,
                blocker_unit,
                blocker_params: params,
                state,
                outside,
            } = attribution::attribute(&wait, from, &seen, &states, row_key.as_deref());
            let outside = match (wait.root, outside) {
                (_, false) => None,
                (Some(root), true) => {
                    Some(outside_holder(&client, &holder, &mut holders, root).await)
                }
                (None, true) => Some("a holder the server no longer showed".into()),
            };
            out.lock_samples += 1;
            if outside.is_some() {
                out.outside_samples += 1;
            } else if waiting.is_some() && blocking.is_some() {
                out.attributed_samples += 1;
            }
            let key = HotspotKey {
                lock_type: wait.lock_type,
                relation: wait.relation,
                row: wait.row,
                waiting,
                blocking,
                blocker_unit,
                outside,
            };
            let c = out.hotspots.entry(key).or_default();
            c.samples += 1;
            *c.states.entry(state).or_default() += 1;
            if c.blocker_params.is_empty() {
                c.blocker_params = params;
            }
            if c.row_key.is_none() {
                c.row_key = row_key;
            }
        }
    }
    out
}

/// The server's locks and who blocks whom, as one snapshot.
fn lock_snapshot(lrows: &[tokio_postgres::Row], brows: &[tokio_postgres::Row]) -> LockSnapshot {
    LockSnapshot {
        locks: lrows
            .iter()
            .map(|r| LockRow {
                pid: r.get(0),
                locktype: r.get(1),
                relation: r.get(2),
                page: r.get(3),
                tuple: r.get(4),
                object: r.get(5),
                granted: r.get(6),
            })
            .collect(),
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

/// The key values of the row at `ctid` (`id = 1`, `a = 1, b = 2`): the row
/// a tuple lock names. `None` without a primary key or when the row is gone.
async fn row_key(
    client: &Client,
    relation: &str,
    ctid: (i32, i16),
    columns: &mut HashMap<String, Vec<String>>,
) -> Option<String> {
    if !columns.contains_key(relation) {
        let cols = client
            .query(KEY_COLUMNS, &[&relation])
            .await
            .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
            .unwrap_or_default();
        columns.insert(relation.to_string(), cols);
    }
    let cols = &columns[relation];
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
