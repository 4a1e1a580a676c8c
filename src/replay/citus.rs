//! The sampler's view of lock waits on a Citus coordinator with distributed
//! tables (issue 36). A router UPDATE of a distributed table's row runs on
//! the worker holding the row's shard: the coordinator's backend waits on
//! its connection to the worker (`Client`/`ClientRead` in its
//! `pg_stat_activity`), not on a lock, and the coordinator's `pg_locks`
//! shows neither the row nor the transaction it waits for. Citus gathers
//! every node's `pg_locks` in `citus_locks`, each row tagged with the
//! global pid of the distributed transaction's coordinator backend, and
//! its wait graph in `citus_lock_waits` (waiting and blocking global pids).
//! Both are read here with the global pids turned back into the
//! coordinator's pids, the ids planck's connections have: the snapshot
//! then has the shape [`super::attribution`] resolves on a plain server
//! (a tuple lock on the shard, a transaction id on the worker, queued on).
//! A lock's object is qualified by its node (transaction ids are a
//! worker's own), and a shard names its distributed table, shard and
//! worker.

use std::collections::HashMap;

use tokio_postgres::Client;

use super::attribution::{LockRow, LockSnapshot, Wait};
use crate::db::quote_ident;

// A global pid is its node id times 10^10, plus the pid on that node
// (Citus's `GLOBAL_PID_NODE_ID_MULTIPLIER`). Spelt out rather than
// `citus_pid_for_gpid()`, which raises an error for the global pid of a
// node outside the metadata (each worker's maintenance daemon has one).

/// Every lock of a node, held or awaited for one of planck's coordinator
/// backends (`$2`, their pids), on the coordinator (node `$1`) or a worker.
const LOCKS: &str = "SELECT (l.global_pid % 10000000000)::int, l.locktype, l.relation_name, \
     l.page, l.tuple, \
     l.nodeid::text || coalesce(':' || l.transactionid::text, ':' || l.virtualxid, \
        ':' || l.classid::text || ':' || l.objid::text || ':' || l.objsubid::text, ''), \
     l.granted \
     FROM citus_locks l \
     WHERE l.global_pid / 10000000000 = $1 \
       AND (l.global_pid % 10000000000)::int = ANY ($2)";

/// Who blocks whom, among the coordinator's backends: `pg_blocking_pids`
/// across the cluster.
const WAITS: &str = "SELECT (waiting_gpid % 10000000000)::int, \
     array_agg(DISTINCT (blocking_gpid % 10000000000)::int) \
     FROM citus_lock_waits \
     WHERE waiting_gpid / 10000000000 = $1 AND blocking_gpid / 10000000000 = $1 \
     GROUP BY 1";

/// The distributed table of a shard (by its id and name) and the worker
/// holding its placement on node `$3` (a reference table's shard has one on
/// every node), or its first.
const SHARD: &str = "SELECT s.logicalrelid::regclass::text, n.nodename, n.nodeport \
     FROM pg_dist_shard s JOIN pg_dist_placement p ON p.shardid = s.shardid \
     JOIN pg_dist_node n ON n.groupid = p.groupid \
     WHERE s.shardid = $1 AND shard_name(s.logicalrelid, s.shardid) = $2 \
       AND ($3::bigint IS NULL OR n.nodeid = $3) \
     ORDER BY n.nodeid LIMIT 1";

/// One statement run on one worker, its result as text.
const ON_WORKER: &str = "SELECT success, result \
     FROM master_run_on_worker(ARRAY[$1::text], ARRAY[$2::int], ARRAY[$3::text], false)";

/// A shard a lock named: its distributed table, and where it lives.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// The distributed table (`regclass` text on the coordinator).
    pub table: String,
    /// The shard's own name (`campaigns_102010`).
    pub name: String,
    pub host: String,
    pub port: i32,
}

impl Shard {
    /// `shard campaigns_102010 on worker 127.0.0.1:9701`.
    pub fn describe(&self) -> String {
        format!("shard {} on worker {}:{}", self.name, self.host, self.port)
    }
}

/// A coordinator's distributed lock view, with what it has looked up.
#[derive(Debug)]
pub struct Coordinator {
    /// The coordinator's node id: the global pids of its backends carry it.
    node: i64,
    /// Relation names (`regclass` text on their node) that are shards, or
    /// not, by the node the lock was on.
    shards: HashMap<(String, Option<i64>), Option<Shard>>,
}

impl Coordinator {
    /// The coordinator `client` is connected to, when it has distributed
    /// tables; `None` on any other server.
    pub async fn detect(client: &Client) -> Option<Coordinator> {
        let stats = crate::session::StatsMode::Untracked;
        if !crate::catalog::citus::has_distributed_tables(client, stats)
            .await
            .ok()?
        {
            return None;
        }
        let node: i64 = client
            .query_one("SELECT citus_backend_gpid() / 10000000000", &[])
            .await
            .ok()?
            .get(0);
        Some(Coordinator {
            node,
            shards: HashMap::new(),
        })
    }

    /// The locks of planck's backends `pids` across the cluster, when one
    /// of them awaits a lock (`Ok(None)`: none does). `between` runs after
    /// the locks are read and before the wait graph is (the sampler reads
    /// what each connection ran there).
    pub async fn snapshot(
        &self,
        client: &Client,
        pids: &[i32],
        between: impl FnOnce(),
    ) -> Result<Option<LockSnapshot>, tokio_postgres::Error> {
        let rows = client.query(LOCKS, &[&self.node, &pids]).await?;
        let locks: Vec<LockRow> = rows.iter().map(LockRow::from_row).collect();
        if locks.iter().all(|l| l.granted) {
            return Ok(None);
        }
        between();
        let blocking = client
            .query(WAITS, &[&self.node])
            .await?
            .iter()
            .map(|r| (r.get(0), r.get::<_, Vec<i32>>(1)))
            .collect();
        Ok(Some(LockSnapshot { locks, blocking }))
    }

    /// The shard `relation` (a lock's relation, as its node names it) is
    /// one of, with the worker of its placement on `node` (the lock's;
    /// unknown: its first placement), read once; `None` for a relation
    /// that is no shard.
    pub async fn shard(
        &mut self,
        client: &Client,
        relation: &str,
        node: Option<i64>,
    ) -> Option<Shard> {
        let key = (relation.to_string(), node);
        if let Some(s) = self.shards.get(&key) {
            return s.clone();
        }
        let s = match shard_id(relation) {
            Some(id) => client
                .query_opt(SHARD, &[&id, &relation, &node])
                .await
                .ok()
                .flatten()
                .map(|r| Shard {
                    table: r.get(0),
                    name: relation.to_string(),
                    host: r.get(1),
                    port: r.get::<_, i32>(2),
                }),
            None => None,
        };
        self.shards.insert(key, s.clone());
        s
    }
}

/// The node of a wait's row: the one of the waiter's lock on the wait's
/// relation (its tuple lock), else of the lock it awaits. A lock's object
/// starts with its node id (see [`LOCKS`]).
pub fn node_of(snap: &LockSnapshot, wait: &Wait) -> Option<i64> {
    let on_relation = snap
        .locks
        .iter()
        .find(|l| l.pid == wait.waiter && l.locktype == "tuple" && l.relation == wait.relation);
    let lock = on_relation.or_else(|| snap.awaited(wait.waiter))?;
    let object = lock.object.as_deref()?;
    object.split(':').next()?.parse().ok()
}

/// The shard id a shard's name ends with (`campaigns_102010`: 102010).
fn shard_id(relation: &str) -> Option<i64> {
    let (_, digits) = relation.trim_end_matches('"').rsplit_once('_')?;
    digits.parse().ok()
}

/// The key values (`company_id = 7, id = 1`) of the row at `ctid` in
/// `shard`, read on its worker; `columns` are the distributed table's
/// primary key. `None` without a key, or when the row is gone.
pub async fn row_key(
    client: &Client,
    shard: &Shard,
    columns: &[String],
    ctid: (i32, i16),
) -> Option<String> {
    if columns.is_empty() {
        return None;
    }
    let parts: Vec<String> = columns
        .iter()
        .map(|c| {
            format!(
                "'{} = ' || coalesce({}::text, 'NULL')",
                c.replace('\'', "''"),
                quote_ident(c)
            )
        })
        .collect();
    // The shard's name is its node's `regclass` text: quoted where needed.
    let sql = format!(
        "SELECT concat_ws(', ', {}) FROM {} WHERE ctid = '({},{})'::tid",
        parts.join(", "),
        shard.name,
        ctid.0,
        ctid.1
    );
    let row = client
        .query_opt(ON_WORKER, &[&shard.host, &shard.port, &sql])
        .await
        .ok()??;
    let (ok, result): (bool, Option<String>) = (row.get(0), row.get(1));
    result.filter(|r| ok && !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_id_is_the_number_its_name_ends_with() {
        assert_eq!(shard_id("campaigns_102010"), Some(102010));
        assert_eq!(shard_id("\"Ad Groups_102042\""), Some(102042));
        assert_eq!(shard_id("campaigns"), None);
        assert_eq!(shard_id("ad_groups"), None);
    }

    fn lock(pid: i32, t: &str, rel: Option<&str>, obj: &str, granted: bool) -> LockRow {
        let tuple = t == "tuple";
        LockRow {
            pid,
            locktype: t.into(),
            relation: rel.map(Into::into),
            page: tuple.then_some(0),
            tuple: tuple.then_some(8),
            object: Some(obj.into()),
            granted,
        }
    }

    /// The shape `citus_locks` showed for four clients updating one row of
    /// the tutorial's campaigns (Citus 13.2, the pids the coordinator's):
    /// 32 holds the row's transaction on worker node 2; 35, the first
    /// waiter, holds the shard's tuple lock and awaits 32's transaction
    /// id; 33 and 34 queue on the tuple lock. Each also holds locks on the
    /// coordinator (node 1) and its own transaction id on the worker.
    #[test]
    fn a_workers_row_wait_resolves_to_the_coordinator_backend_holding_it() {
        let shard = Some("campaigns_102040");
        let snap = LockSnapshot {
            locks: vec![
                lock(32, "relation", Some("campaigns"), "1", true),
                lock(32, "transactionid", None, "2:1048", true),
                lock(32, "relation", shard, "2", true),
                lock(33, "relation", Some("campaigns"), "1", true),
                lock(33, "tuple", shard, "2", false),
                lock(33, "transactionid", None, "2:1042", true),
                lock(34, "tuple", shard, "2", false),
                lock(34, "transactionid", None, "2:1043", true),
                lock(35, "tuple", shard, "2", true),
                lock(35, "transactionid", None, "2:1041", true),
                lock(35, "transactionid", None, "2:1048", false),
                // The same transaction id on the other worker is another
                // transaction: its holder holds nothing 35 awaits.
                lock(36, "transactionid", None, "3:1048", true),
            ],
            blocking: HashMap::new(),
        };
        let waits = snap.waits();
        assert_eq!(waits.len(), 3, "{waits:?}");
        for w in &waits {
            assert_eq!(w.relation.as_deref(), shard, "{w:?}");
            assert_eq!(w.row, Some((0, 8)), "{w:?}");
            assert_eq!(w.root, Some(32), "{w:?}");
            // The row is on worker node 2, where the tuple lock is.
            assert_eq!(node_of(&snap, w), Some(2), "{w:?}");
        }
    }

    #[test]
    fn a_shard_is_described_with_its_worker() {
        let s = Shard {
            table: "campaigns".into(),
            name: "campaigns_102010".into(),
            host: "127.0.0.1".into(),
            port: 9701,
        };
        assert_eq!(
            s.describe(),
            "shard campaigns_102010 on worker 127.0.0.1:9701"
        );
    }
}
