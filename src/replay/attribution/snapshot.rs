//! What the server shows of planck's backends at one poll ([`LockSnapshot`]:
//! its `pg_locks` rows and `pg_blocking_pids`), and the waits read from it,
//! each followed to its root holder ([`Wait`]).

use std::collections::{HashMap, HashSet};

/// One row of `pg_locks` for a planck backend.
#[derive(Debug, Clone, PartialEq)]
pub struct LockRow {
    pub pid: i32,
    pub locktype: String,
    /// The relation's name (`relation::regclass`), unqualified for the search path.
    pub relation: Option<String>,
    pub page: Option<i32>,
    pub tuple: Option<i16>,
    /// The transaction id, virtual or real, or advisory key, as text: what
    /// makes two rows the same lockable object along with the rest.
    pub object: Option<String>,
    pub granted: bool,
}

impl LockRow {
    /// A row of the sampler's lock queries, whose columns are, in order:
    /// pid, locktype, relation, page, tuple, object, granted (`pg_locks` on a
    /// plain server, `citus_locks` on a coordinator).
    pub fn from_row(r: &tokio_postgres::Row) -> LockRow {
        LockRow {
            pid: r.get(0),
            locktype: r.get(1),
            relation: r.get(2),
            page: r.get(3),
            tuple: r.get(4),
            object: r.get(5),
            granted: r.get(6),
        }
    }

    fn same_object(&self, other: &LockRow) -> bool {
        self.locktype == other.locktype
            && self.relation == other.relation
            && self.page == other.page
            && self.tuple == other.tuple
            && self.object == other.object
    }
}

/// What the server showed of planck's backends at one poll.
#[derive(Debug, Clone, Default)]
pub struct LockSnapshot {
    pub locks: Vec<LockRow>,
    /// `pg_blocking_pids(pid)` of each waiting backend.
    pub blocking: HashMap<i32, Vec<i32>>,
}

/// One wait, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Wait {
    pub waiter: i32,
    /// The lock type the waiter waits on (`transactionid`, `tuple`, `relation`, ...).
    pub lock_type: String,
    pub relation: Option<String>,
    /// (page, tuple) of the row, from the waiter's tuple lock.
    pub row: Option<(i32, i16)>,
    /// The root holder: a backend that blocks without being blocked.
    pub root: Option<i32>,
}

impl LockSnapshot {
    /// The lock `pid` waits for (its one ungranted lock).
    pub fn awaited(&self, pid: i32) -> Option<&LockRow> {
        self.locks.iter().find(|l| l.pid == pid && !l.granted)
    }

    fn holds(&self, pid: i32, lock: &LockRow) -> bool {
        self.locks
            .iter()
            .any(|l| l.pid == pid && l.granted && l.same_object(lock))
    }

    /// Follows the blocking chain from `pid` to a backend that is not itself
    /// waiting. At each link a blocker holding the awaited object wins over
    /// one only queued ahead for it (a soft blocker).
    pub fn root_holder(&self, pid: i32) -> Option<i32> {
        let mut cur = pid;
        let mut seen = HashSet::from([pid]);
        loop {
            // A row wait's holder is in the pg_locks snapshot itself: the one
            // backend granted the awaited transaction id (its owner) or tuple
            // lock. pg_blocking_pids() is read by another query, later: it
            // may name backends of another moment, so it is only the fallback.
            if let Some(holder) = self.sole_holder(cur) {
                if !seen.insert(holder) {
                    return Some(holder);
                }
                cur = holder;
                continue;
            }
            // A blocker that awaits nothing in the snapshot is the root,
            // whatever pg_blocking_pids() says of it a moment later (it
            // may be waiting by then, on a backend that held nothing of
            // this wait at the snapshot: issue 32, 2).
            if cur != pid && self.awaited(cur).is_none() {
                return Some(cur);
            }
            let blockers = self.blocking.get(&cur).filter(|b| !b.is_empty());
            let Some(blockers) = blockers else {
                return (cur != pid).then_some(cur);
            };
            let awaited = self.awaited(cur);
            let soft = |b: i32| {
                awaited.is_some_and(|a| {
                    self.awaited(b).is_some_and(|ba| ba.same_object(a)) && !self.holds(b, a)
                })
            };
            let next = blockers
                .iter()
                .copied()
                .find(|b| awaited.is_some_and(|a| self.holds(*b, a)))
                .or_else(|| blockers.iter().copied().find(|b| !soft(*b)))
                .or_else(|| blockers.first().copied())?;
            if !seen.insert(next) {
                // A deadlock cycle: the server will cancel one side.
                return Some(next);
            }
            cur = next;
        }
    }

    /// The one other backend granted what `pid` awaits, for the lock types
    /// only one backend holds at a time (`transactionid`, `tuple`).
    fn sole_holder(&self, pid: i32) -> Option<i32> {
        let awaited = self
            .awaited(pid)
            .filter(|a| a.locktype == "transactionid" || a.locktype == "tuple")?;
        let mut holders = self
            .locks
            .iter()
            .filter(|l| l.pid != pid && l.granted && l.same_object(awaited))
            .map(|l| l.pid);
        let one = holders.next()?;
        holders.all(|p| p == one).then_some(one)
    }

    /// Every wait of the snapshot, with its row and root holder.
    pub fn waits(&self) -> Vec<Wait> {
        // The waiters of the pg_locks snapshot (one consistent view), not
        // those pg_blocking_pids() saw a moment later.
        let mut pids: Vec<i32> = self
            .locks
            .iter()
            .filter(|l| !l.granted)
            .map(|l| l.pid)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids.into_iter()
            .filter_map(|pid| {
                let awaited = self.awaited(pid)?;
                // The row: the awaited tuple lock, else the granted tuple lock
                // a first waiter holds while it waits on the transaction.
                let tuple = if awaited.locktype == "tuple" {
                    Some(awaited)
                } else {
                    self.locks
                        .iter()
                        .find(|l| l.pid == pid && l.granted && l.locktype == "tuple")
                };
                Some(Wait {
                    waiter: pid,
                    lock_type: awaited.locktype.clone(),
                    relation: tuple
                        .and_then(|t| t.relation.clone())
                        .or_else(|| awaited.relation.clone()),
                    row: tuple.and_then(|t| Some((t.page?, t.tuple?))),
                    root: self.root_holder(pid),
                })
            })
            .collect()
    }
}
