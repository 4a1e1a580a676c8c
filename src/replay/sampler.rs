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

use super::attribution::{BlockerState, History, LockRow, LockSnapshot};
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
    /// The blocker's unit (see [`History::unit`]).
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
        // Each history's place just before the pg_locks query, and a copy
        // of it just after: a history that moved on in between (its
        // transaction ended, another began, or a waiter moved to its next
        // statement) is not what the server showed, and names nothing.
        let reg = registry.lock().expect("registry lock").clone();
        let before: HashMap<i32, History> = reg
            .iter()
            .map(|(pid, h)| (*pid, h.lock().expect("history lock").clone()))
            .collect();
        let Ok(lrows) = client.query(&locks, &[&app]).await else {
            out.errors += 1;
            continue;
        };
        // Each backend's history just after: the server's snapshot was
        // taken between `before` and `after`, so what it shows a backend
        // doing is in one of the two (the same one when it did not move).
        let after: HashMap<i32, History> = reg
            .iter()
            .map(|(pid, h)| (*pid, h.lock().expect("history lock").clone()))
            .collect();
        let Ok(brows) = client.query(&blocking, &[&app]).await else {
            out.errors += 1;
            continue;
        };
        let snap = LockSnapshot {
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
        };
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
            let (waiting, blocking, blocker_unit, params, state, outside) =
                attribute(&wait, &before, &after, &states, row_key.as_deref());
            let outside = match (wait.root, outside) {
                (_, false) => None,
                (Some(root), true) => Some(match holders.get(&root) {
                    Some(h) => h.clone(),
                    None => {
                        let h = client
                            .query_opt(&holder, &[&root])
                            .await
                            .ok()
                            .flatten()
                            .and_then(|r| r.get::<_, Option<String>>(0))
                            .unwrap_or_else(|| "a backend that has ended".into());
                        holders.insert(root, h.clone());
                        h
                    }
                }),
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

/// What a wait is attributed to: (waiting statement, blocking statement,
/// the blocker's unit, the values it bound, its state, whether the holder
/// is outside planck's connections).
type Attributed = (
    Option<usize>,
    Option<usize>,
    Option<usize>,
    Vec<Option<String>>,
    BlockerState,
    bool,
);

/// Attributes one wait from planck's own record of its connections, the
/// histories read just `before` and just `after` the server's snapshot
/// (issue 32: every wait of planck's connections names both statements,
/// never split into an attributed and an unattributed copy when a history
/// moved in between). The waiter's statement is the one it was running
/// when the snapshot began (else the one after); the holder's lock taker
/// is looked for in the transaction it had open before, then after. A
/// holder that is no connection of planck's is outside the workload.
pub fn attribute(
    wait: &super::attribution::Wait,
    before: &HashMap<i32, History>,
    after: &HashMap<i32, History>,
    states: &HashMap<i32, (String, Option<String>)>,
    row_key: Option<&str>,
) -> Attributed {
    let both = |pid: i32| [before.get(&pid), after.get(&pid)].into_iter().flatten();
    let waiter = both(wait.waiter)
        .find_map(|h| h.current())
        .or_else(|| both(wait.waiter).find_map(|h| h.executed.last()));
    let waiting = waiter.map(|e| e.statement);
    let Some(root) = wait
        .root
        .filter(|r| before.contains_key(r) || after.contains_key(r))
    else {
        return (waiting, None, None, Vec::new(), BlockerState::Unknown, true);
    };
    // The relation of the row: the lock's own, else the one the waiting
    // statement writes or locks, when it is one.
    let own = wait.relation.as_deref().map(|r| {
        r.rsplit('.')
            .next()
            .unwrap_or(r)
            .trim_matches('"')
            .to_lowercase()
    });
    let relation = own.or_else(|| match waiter.map(|e| e.locks.as_slice()) {
        Some([one]) => Some(one.clone()),
        _ => None,
    });
    let taken = both(root).find_map(|h| h.lock_taker(relation.as_deref(), row_key).map(|e| (h, e)));
    let h = taken
        .map(|(h, _)| h)
        .or_else(|| both(root).find(|h| h.unit.is_some()))
        .or_else(|| after.get(&root))
        .expect("the root has a history");
    let state = match (states.get(&root), h.current()) {
        (Some((s, _)), _) if s.starts_with("idle in transaction") => {
            BlockerState::IdleInTransaction
        }
        (Some((_, Some(t))), Some(c)) if t == "Lock" => BlockerState::WaitingOnLock(c.statement),
        (_, Some(c)) => BlockerState::Running(c.statement),
        (_, None) => BlockerState::IdleInTransaction,
    };
    (
        waiting,
        taken.map(|(_, e)| e.statement),
        h.unit,
        taken.map(|(_, e)| e.params.clone()).unwrap_or_default(),
        state,
        false,
    )
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
