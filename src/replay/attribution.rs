//! Who waits on whom, and which statement took the lock.
//!
//! What the server shows, and what it does not (issue 11, 5): a row-lock wait
//! is an ungranted `transactionid` lock with no relation; the row appears only
//! as the *granted* `tuple` lock of the first waiter, and later waiters queue
//! on that tuple lock, so `pg_blocking_pids()` names the first waiter (and soft
//! blockers queued ahead), rarely the holder. So: the row is taken from the
//! waiter's own tuple lock (granted or awaited), the chain of blockers is
//! followed to its root holder, preferring at each link a blocker that holds
//! what is awaited over one merely queued ahead, and the wait is attributed to
//! the statement of the root's open transaction that locked that relation,
//! from planck's own record of what each connection ran; what the root runs
//! at the moment is only its state.

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

/// One statement a connection ran in its open transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// Index of the statement in the workload.
    pub statement: usize,
    /// Relations it writes or locks (lower case, unqualified).
    pub locks: Vec<String>,
    /// The values bound, as text.
    pub params: Vec<Option<String>>,
    /// Still running.
    pub running: bool,
}

/// What a connection did in its open transaction (cleared at its end).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Index of the unit (transaction or lone statement) that is open.
    pub unit: Option<usize>,
    pub executed: Vec<Executed>,
    /// Counts every begin and end: the sampler reads it before its lock
    /// queries and again when it attributes, and trusts the history only
    /// when it did not move (the transaction it saw holding a lock may
    /// have ended, and another begun, in between).
    pub generation: u64,
}

impl History {
    pub fn begin(&mut self, unit: usize) {
        self.unit = Some(unit);
        self.executed.clear();
        self.generation += 1;
    }

    pub fn start(&mut self, statement: usize, locks: &[String], params: Vec<Option<String>>) {
        self.executed.push(Executed {
            statement,
            locks: locks.to_vec(),
            params,
            running: true,
        });
    }

    pub fn finish_statement(&mut self) {
        if let Some(e) = self.executed.last_mut() {
            e.running = false;
        }
    }

    pub fn end(&mut self) {
        self.unit = None;
        self.executed.clear();
        self.generation += 1;
    }

    /// The statement running now, if one is.
    pub fn current(&self) -> Option<&Executed> {
        self.executed.last().filter(|e| e.running)
    }

    /// The statement of the open transaction that took a lock on
    /// `relation`: the first one that wrote or locked it; when several
    /// different statements locked it, the one whose bound values hold every
    /// value of the row's key (`row_key`, `id = 7`), if exactly one does.
    /// Without a known relation, the one statement that locks anything.
    /// Otherwise `None` (unknown): naming a statement that did not take
    /// the lock would be worse than saying nothing.
    pub fn lock_taker(&self, relation: Option<&str>, row_key: Option<&str>) -> Option<&Executed> {
        let lockers: Vec<&Executed> = match relation {
            Some(r) => self
                .executed
                .iter()
                .filter(|e| e.locks.iter().any(|l| l.eq_ignore_ascii_case(r)))
                .collect(),
            None => self
                .executed
                .iter()
                .filter(|e| !e.locks.is_empty())
                .collect(),
        };
        let first = *lockers.first()?;
        if lockers.iter().all(|e| e.statement == first.statement) {
            return Some(first);
        }
        let values = key_values(row_key?);
        if values.is_empty() {
            return None;
        }
        let mut holding = lockers.into_iter().filter(|e| {
            values
                .iter()
                .all(|v| e.params.iter().any(|p| p.as_deref() == Some(v)))
        });
        let one = holding.next()?;
        holding.all(|e| e.statement == one.statement).then_some(one)
    }
}

/// The values of a row key as the sampler prints it: `a = 1, b = x` -> 1, x.
fn key_values(row_key: &str) -> Vec<&str> {
    row_key
        .split(", ")
        .filter_map(|kv| kv.split_once(" = ").map(|(_, v)| v))
        .filter(|v| *v != "NULL")
        .collect()
}

/// What the blocker was doing when the wait was seen.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockerState {
    Running(usize),
    WaitingOnLock(usize),
    IdleInTransaction,
    Unknown,
}

/// The relations a statement writes or row-locks: the target of
/// UPDATE / DELETE / INSERT / MERGE, and for `FOR UPDATE` / `FOR SHARE`
/// (any strength) the tables after FROM and JOIN. Lower case, unqualified.
pub fn locked_relations(sql: &str) -> Vec<String> {
    let toks = words(sql);
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        let n = name.rsplit('.').next().unwrap_or(name).to_string();
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    };
    let row_lock = toks
        .windows(2)
        .any(|w| w[0] == "for" && matches!(w[1].as_str(), "update" | "share" | "no" | "key"));
    for (i, t) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).map(String::as_str);
        match t.as_str() {
            "update" if i == 0 || toks[i - 1] != "for" && toks[i - 1] != "key" => {
                if let Some(n) = next(1).filter(|n| *n != "only") {
                    push(n);
                } else if let Some(n) = next(2) {
                    push(n);
                }
            }
            "into" if i > 0 && (toks[i - 1] == "insert" || toks[i - 1] == "merge") => {
                if let Some(n) = next(1) {
                    push(n);
                }
            }
            "from" if i > 0 && toks[i - 1] == "delete" => {
                if let Some(n) = next(1) {
                    push(n);
                }
            }
            "from" | "join" if row_lock => {
                if let Some(n) = next(1).filter(|n| *n != "(" && *n != "only") {
                    push(n);
                }
            }
            _ => {}
        }
    }
    out
}

/// Lower-case words of SQL with quotes and punctuation dropped (a
/// qualified name stays one word, `audit.events`).
fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_str = false;
    for c in sql.chars() {
        if in_str {
            if c == '\'' {
                in_str = false;
            }
            continue;
        }
        match c {
            '\'' => in_str = true,
            c if c.is_alphanumeric() || c == '_' || c == '.' || c == '$' => {
                cur.extend(c.to_lowercase())
            }
            '"' => {}
            _ => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if c == '(' {
                    out.push("(".into());
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(
        pid: i32,
        t: &str,
        rel: Option<&str>,
        row: Option<(i32, i16)>,
        obj: Option<&str>,
        granted: bool,
    ) -> LockRow {
        LockRow {
            pid,
            locktype: t.into(),
            relation: rel.map(Into::into),
            page: row.map(|r| r.0),
            tuple: row.map(|r| r.1),
            object: obj.map(Into::into),
            granted,
        }
    }

    /// The shape measured with pgbench: holder 10 (idle in transaction,
    /// holding xid 500), first waiter 11 holds the tuple lock and waits on the
    /// xid, later waiters 12 and 13 queue on the tuple lock; 13's
    /// pg_blocking_pids names 11 and the soft blocker 12, never 10.
    fn queue() -> LockSnapshot {
        let row = Some((0, 3));
        LockSnapshot {
            locks: vec![
                lock(10, "transactionid", None, None, Some("500"), true),
                lock(11, "transactionid", None, None, Some("500"), false),
                lock(11, "tuple", Some("accounts"), row, None, true),
                lock(12, "tuple", Some("accounts"), row, None, false),
                lock(13, "tuple", Some("accounts"), row, None, false),
            ],
            blocking: HashMap::from([(11, vec![10]), (12, vec![11]), (13, vec![12, 11])]),
        }
    }

    #[test]
    fn root_holder_follows_the_chain_past_soft_blockers() {
        let s = queue();
        assert_eq!(s.root_holder(11), Some(10));
        assert_eq!(s.root_holder(12), Some(10));
        // 12 is listed first but is only queued ahead: 11 holds the tuple.
        assert_eq!(s.root_holder(13), Some(10));
        assert_eq!(s.root_holder(10), None);
    }

    #[test]
    fn waits_take_the_row_from_the_waiters_tuple_lock() {
        let waits = queue().waits();
        assert_eq!(waits.len(), 3);
        let first = &waits[0];
        assert_eq!(first.waiter, 11);
        assert_eq!(first.lock_type, "transactionid");
        assert_eq!(first.relation.as_deref(), Some("accounts"));
        assert_eq!(first.row, Some((0, 3)));
        assert_eq!(waits[2].lock_type, "tuple");
        assert!(waits.iter().all(|w| w.root == Some(10)));
    }

    #[test]
    fn deadlock_cycle_terminates() {
        let s = LockSnapshot {
            locks: vec![],
            blocking: HashMap::from([(1, vec![2]), (2, vec![1])]),
        };
        assert!(s.root_holder(1).is_some());
    }

    /// Attribution from a recorded history: the blocker locked `accounts`
    /// with its first statement and is now running its third; the wait is
    /// on the first, not on what it runs now.
    #[test]
    fn wait_is_attributed_to_the_statement_that_took_the_lock() {
        let mut h = History::default();
        h.begin(0);
        h.start(
            7,
            &locked_relations("SELECT * FROM accounts WHERE id = $1 FOR UPDATE"),
            vec![Some("1".into())],
        );
        h.finish_statement();
        h.start(
            8,
            &locked_relations("INSERT INTO items (account_id) VALUES ($1)"),
            vec![],
        );
        h.finish_statement();
        h.start(9, &locked_relations("SELECT count(*) FROM events"), vec![]);
        assert_eq!(h.lock_taker(Some("accounts"), None).unwrap().statement, 7);
        assert_eq!(h.lock_taker(Some("items"), None).unwrap().statement, 8);
        assert_eq!(h.current().unwrap().statement, 9);
        // A relation none of its statements locked: unknown, never the
        // first statement that locked something else.
        assert!(h.lock_taker(Some("tenants"), None).is_none());
        // No relation and two statements locking: unknown.
        assert!(h.lock_taker(None, None).is_none());
        let g = h.generation;
        h.end();
        assert!(h.generation > g);
        assert!(h.lock_taker(None, None).is_none());
    }

    /// Issue 11: the second statement takes the row, the first wrote
    /// another table; while the third runs, the row's taker is the second.
    /// Two statements locking one relation are told apart by the row's key
    /// values, or left unknown.
    #[test]
    fn second_statement_is_the_taker_and_ambiguity_is_unknown() {
        let mut h = History::default();
        h.begin(0);
        h.start(
            1,
            &locked_relations("INSERT INTO log (n) VALUES ($1)"),
            vec![Some("1".into())],
        );
        h.finish_statement();
        h.start(
            2,
            &locked_relations("UPDATE hot SET n = n + 1 WHERE id = $1"),
            vec![Some("7".into())],
        );
        h.finish_statement();
        h.start(3, &locked_relations("SELECT count(*) FROM other"), vec![]);
        assert_eq!(
            h.lock_taker(Some("hot"), Some("id = 7")).unwrap().statement,
            2
        );
        assert_eq!(h.lock_taker(Some("hot"), None).unwrap().statement, 2);
        assert!(h.lock_taker(Some("other"), None).is_none());
        h.finish_statement();
        h.start(
            4,
            &locked_relations("UPDATE hot SET n = 0 WHERE id = $1"),
            vec![Some("8".into())],
        );
        h.finish_statement();
        assert_eq!(
            h.lock_taker(Some("hot"), Some("id = 8")).unwrap().statement,
            4
        );
        assert_eq!(
            h.lock_taker(Some("hot"), Some("id = 7")).unwrap().statement,
            2
        );
        assert!(h.lock_taker(Some("hot"), None).is_none());
        assert!(h.lock_taker(Some("hot"), Some("id = 9")).is_none());
    }

    /// The holder comes from the one pg_locks snapshot even when
    /// pg_blocking_pids (read later) names a backend of another moment.
    #[test]
    fn root_holder_is_the_owner_of_the_awaited_xid() {
        let mut s = queue();
        s.blocking = HashMap::from([(11, vec![14]), (12, vec![14]), (13, vec![14])]);
        assert_eq!(s.root_holder(11), Some(10));
        assert_eq!(s.root_holder(13), Some(10));
        // Waiters come from pg_locks: 11 is one though pg_blocking_pids
        // no longer lists it.
        s.blocking.remove(&11);
        assert_eq!(s.waits().len(), 3);
    }

    #[test]
    fn locked_relations_of_common_shapes() {
        assert_eq!(
            locked_relations("UPDATE pgbench_accounts SET abalance = 1 WHERE aid = $1"),
            ["pgbench_accounts"]
        );
        assert_eq!(
            locked_relations("update public.\"Accounts\" set x = 1"),
            ["accounts"]
        );
        assert_eq!(
            locked_relations("INSERT INTO pgbench_history (tid) VALUES ($1)"),
            ["pgbench_history"]
        );
        assert_eq!(
            locked_relations("DELETE FROM items WHERE id = 1"),
            ["items"]
        );
        assert_eq!(
            locked_relations("SELECT * FROM a JOIN b ON a.id = b.a WHERE a.id = 1 FOR UPDATE OF a"),
            ["a", "b"]
        );
        assert_eq!(
            locked_relations("SELECT * FROM a WHERE note = 'for update'"),
            Vec::<String>::new()
        );
        assert_eq!(
            locked_relations("SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
            Vec::<String>::new()
        );
        assert_eq!(locked_relations("SELECT 1 FROM t FOR NO KEY UPDATE"), ["t"]);
    }
}
