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
//! at the moment is only its state. That record ([`History`]) keeps the
//! units each connection ended lately, stamped by one clock, because the
//! server's snapshot is of a moment the sampler only bounds (issue 32, 2):
//! the holder's transaction may have ended, and another begun, by the time
//! the sampler reads the record.

mod relations;
mod snapshot;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

pub use relations::locked_relations;
pub use snapshot::{LockRow, LockSnapshot, Wait};

/// Orders every change to every connection's [`History`]: one count for the
/// whole process, read by the sampler just before its `pg_locks` query, so
/// that what each connection was doing when the server took its snapshot is
/// bounded by stamps (only their order matters, never their values). One
/// count rather than one per connection: a waiter's own stamps then bound
/// the snapshot for its holder too (see [`attribute`]).
static CLOCK: AtomicU64 = AtomicU64::new(0);

/// The clock now: every change stamped after this reading has a greater stamp.
pub fn clock() -> u64 {
    CLOCK.load(Ordering::SeqCst)
}

fn tick() -> u64 {
    CLOCK.fetch_add(1, Ordering::SeqCst) + 1
}

/// How many ended units a [`History`] keeps: enough for every unit a
/// connection can end while the sampler's `pg_locks` query runs (a TPC-B
/// unit takes a millisecond or more, the query a few).
pub const RECENT: usize = 64;

/// One statement a connection ran in a unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// Index of the statement in the workload.
    pub statement: usize,
    /// Relations it writes or locks (lower case, unqualified).
    pub locks: Vec<String>,
    /// The values bound, as text.
    pub params: Vec<Option<String>>,
    /// Clock stamps: taken before it was sent, and after its reply came
    /// (`None`: still running).
    pub started: u64,
    pub finished: Option<u64>,
}

impl Executed {
    /// Whether it ran at some moment after the clock read `from` and
    /// before the stamp `until`.
    fn ran_between(&self, from: u64, until: u64) -> bool {
        self.started < until && self.finished.is_none_or(|f| f > from)
    }
}

/// One unit (transaction or lone statement) a connection ran, open or ended.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitRun {
    /// Index of the unit: a transaction's, or `usize::MAX - statement`.
    pub unit: usize,
    pub executed: Vec<Executed>,
    /// Clock stamps: taken before its BEGIN was sent, and after its
    /// COMMIT or ROLLBACK returned (`None`: still open). Whatever it
    /// locked on the server, it held between the two.
    pub begun: u64,
    pub ended: Option<u64>,
}

impl UnitRun {
    fn open_between(&self, from: u64, until: u64) -> bool {
        self.begun < until && self.ended.is_none_or(|e| e > from)
    }

    /// The statement running now, if one is.
    #[cfg(test)]
    pub fn current(&self) -> Option<&Executed> {
        self.executed.last().filter(|e| e.finished.is_none())
    }

    /// [`Self::lock_taker_before`] with no time bound.
    #[cfg(test)]
    pub fn lock_taker(&self, relation: Option<&str>, row_key: Option<&str>) -> Option<&Executed> {
        self.lock_taker_before(relation, row_key, u64::MAX)
    }

    /// The statement of the unit that took a lock on `relation` (the first
    /// one that wrote or locked it; when several different statements locked
    /// it, the one whose bound values hold every value of the row's key,
    /// `row_key`, if exactly one does; without a known relation, the one
    /// statement that locks anything), among the statements started before
    /// the stamp `until`. Otherwise `None` (unknown): naming a statement that
    /// did not take the lock would be worse than saying nothing.
    fn lock_taker_before(
        &self,
        relation: Option<&str>,
        row_key: Option<&str>,
        until: u64,
    ) -> Option<&Executed> {
        let started = self.executed.iter().filter(|e| e.started < until);
        let lockers: Vec<&Executed> = match relation {
            Some(r) => started
                .filter(|e| e.locks.iter().any(|l| l.eq_ignore_ascii_case(r)))
                .collect(),
            None => started.filter(|e| !e.locks.is_empty()).collect(),
        };
        let first = *lockers.first()?;
        if lockers.iter().all(|e| e.statement == first.statement) {
            return Some(first);
        }
        let values = key_values(row_key?);
        if values.is_empty() {
            return None;
        }
        let mut holding = lockers.into_iter().filter(|e| binds(e, &values));
        let one = holding.next()?;
        holding.all(|e| e.statement == one.statement).then_some(one)
    }
}

/// What a connection ran: the unit it has open and the last [`RECENT`] it
/// ended, each statement and unit stamped by the [`clock`]. The sampler
/// reads the clock before its `pg_locks` query and, after it, the units
/// each connection had open at some moment since ([`History::since`]):
/// the one the server saw holding or awaiting a lock is among them, even
/// when it ended (and another began) while the query ran (issue 32).
#[derive(Debug, Clone, Default)]
pub struct History {
    open: Option<UnitRun>,
    /// Oldest first.
    ended: VecDeque<UnitRun>,
    /// The end stamp of the newest unit dropped from `ended`.
    forgotten: u64,
    /// The statements of the unit dropped last, kept for the next one to
    /// fill: a unit allocates no list of its own.
    spare: Vec<Executed>,
}

impl History {
    pub fn begin(&mut self, unit: usize) {
        self.end();
        let mut executed = std::mem::take(&mut self.spare);
        executed.clear();
        self.open = Some(UnitRun {
            unit,
            executed,
            begun: tick(),
            ended: None,
        });
    }

    /// A statement of the open unit starts (outside a unit: not recorded).
    pub fn start(&mut self, statement: usize, locks: &[String], params: Vec<Option<String>>) {
        if let Some(u) = &mut self.open {
            u.executed.push(Executed {
                statement,
                locks: locks.to_vec(),
                params,
                started: tick(),
                finished: None,
            });
        }
    }

    pub fn finish_statement(&mut self) {
        if let Some(e) = self
            .open
            .as_mut()
            .and_then(|u| u.executed.last_mut())
            .filter(|e| e.finished.is_none())
        {
            e.finished = Some(tick());
        }
    }

    /// The open unit ends: call it once the server has ended its
    /// transaction (its locks released).
    pub fn end(&mut self) {
        let Some(mut u) = self.open.take() else {
            return;
        };
        let ended = tick();
        // A statement cut short (a lost connection) ends with its unit.
        for e in &mut u.executed {
            e.finished.get_or_insert(ended);
        }
        u.ended = Some(ended);
        if self.ended.len() == RECENT
            && let Some(old) = self.ended.pop_front()
        {
            self.forgotten = old.ended.unwrap_or(ended);
            self.spare = old.executed;
        }
        self.ended.push_back(u);
    }

    /// The unit open now, if one is.
    #[cfg(test)]
    pub fn open(&self) -> Option<&UnitRun> {
        self.open.as_ref()
    }

    /// Every unit open at some moment after the clock read `from`: those
    /// ended since, oldest first, then the open one. `None` when one that
    /// ended since is already forgotten (more than [`RECENT`] ended since):
    /// the unit the sampler looks for may be the one missing.
    pub fn since(&self, from: u64) -> Option<Vec<UnitRun>> {
        if self.forgotten > from {
            return None;
        }
        let after = self
            .ended
            .iter()
            .rev()
            .take_while(|u| u.ended.is_some_and(|e| e > from))
            .count();
        Some(
            self.ended
                .range(self.ended.len() - after..)
                .chain(&self.open)
                .cloned()
                .collect(),
        )
    }
}

/// Whether a statement bound every one of `values`.
fn binds(e: &Executed, values: &[&str]) -> bool {
    values
        .iter()
        .all(|v| e.params.iter().any(|p| p.as_deref() == Some(v)))
}

/// Each of planck's connections, by pid: the units it had open at some
/// moment since the sampler's clock reading ([`History::since`]).
pub type Seen = HashMap<i32, Option<Vec<UnitRun>>>;

/// What one wait is attributed to.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribution {
    /// The statement that waits.
    pub waiting: Option<usize>,
    /// The statement that took the lock, and its unit.
    pub blocking: Option<usize>,
    pub blocker_unit: Option<usize>,
    /// The values the blocking statement bound.
    pub blocker_params: Vec<Option<String>>,
    pub state: BlockerState,
    /// The holder is no connection of planck's (autovacuum, another
    /// application, or gone): the wait is not the workload's own.
    pub outside: bool,
}

/// The first of `items` when they all agree on `key`; `None` when they
/// disagree or there are none.
fn agreed<T: Copy, K: PartialEq>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(T) -> K,
) -> Option<T> {
    let mut items = items.into_iter();
    let first = items.next()?;
    let k = key(first);
    items.all(|x| key(x) == k).then_some(first)
}

/// Attributes one wait of the server's snapshot, taken after the clock
/// read `from`, from planck's own record of what each connection ran
/// since (`seen`, read after the snapshot): every wait among planck's
/// connections names both statements (issue 32), and never one that did
/// not wait or take the lock.
///
/// The snapshot fell at some moment after `from`. The waiter waited in one
/// of the statements it ran since; one that locks the awaited relation is
/// preferred over one that does not (its statement just before or after
/// the wait), and when they disagree the wait is left unnamed. The waiter's
/// candidates bound the moment further: after the first of them started,
/// before the last returned. The holder held the lock in one of the units
/// it had open in that span; each names its lock taker (its statements
/// started in the span), and the one statement they all name (or all those
/// bound to the row's key name) is the blocking one. A holder that is no
/// connection of planck's is outside the workload; one whose units since
/// are forgotten names nothing.
pub fn attribute(
    wait: &Wait,
    from: u64,
    seen: &Seen,
    states: &HashMap<i32, (String, Option<String>)>,
    row_key: Option<&str>,
) -> Attribution {
    let units = |pid: i32| seen.get(&pid).and_then(Option::as_deref).unwrap_or(&[]);
    // The relation of the row: the lock's own.
    let own = wait.relation.as_deref().map(|r| {
        r.rsplit('.')
            .next()
            .unwrap_or(r)
            .trim_matches('"')
            .to_lowercase()
    });
    let running: Vec<&Executed> = units(wait.waiter)
        .iter()
        .flat_map(|u| &u.executed)
        .filter(|e| e.ran_between(from, u64::MAX))
        .collect();
    // Between statements all along (waiting in its COMMIT): its unit's last.
    let candidates: Vec<&Executed> = if running.is_empty() {
        units(wait.waiter)
            .iter()
            .filter_map(|u| u.executed.last())
            .collect()
    } else {
        running.clone()
    };
    let on_relation: Vec<&Executed> = candidates
        .iter()
        .copied()
        .filter(|e| {
            own.as_deref()
                .is_some_and(|r| e.locks.iter().any(|l| l.eq_ignore_ascii_case(r)))
        })
        .collect();
    let waiter = if on_relation.is_empty() {
        agreed(candidates.iter().copied(), |e| e.statement)
    } else {
        agreed(on_relation, |e| e.statement)
    };
    let waiting = waiter.map(|e| e.statement);
    let Some(root) = wait.root.filter(|r| seen.contains_key(r)) else {
        return Attribution {
            waiting,
            blocking: None,
            blocker_unit: None,
            blocker_params: Vec::new(),
            state: BlockerState::Unknown,
            outside: true,
        };
    };
    // Without a relation of its own, the lock's is the one the waiting
    // statement writes or locks, when it is one.
    let relation = own.or_else(|| match waiter.map(|e| e.locks.as_slice()) {
        Some([one]) => Some(one.clone()),
        _ => None,
    });
    // The span the snapshot fell in: after `from` and after the first
    // candidate of the waiter started, before the last returned.
    let lo = running
        .iter()
        .map(|e| e.started)
        .min()
        .unwrap_or(0)
        .max(from);
    let hi = running
        .iter()
        .map(|e| e.finished.unwrap_or(u64::MAX))
        .max()
        .unwrap_or(u64::MAX);
    let held: Vec<&UnitRun> = units(root)
        .iter()
        .filter(|u| u.open_between(lo, hi))
        .collect();
    let mut takers: Vec<(&UnitRun, &Executed)> = held
        .iter()
        .filter_map(|u| {
            u.lock_taker_before(relation.as_deref(), row_key, hi)
                .map(|e| (*u, e))
        })
        .collect();
    let values = row_key.map(key_values).unwrap_or_default();
    if !values.is_empty() && takers.iter().any(|(_, e)| binds(e, &values)) {
        // Takers of other rows than the awaited one did not hold it.
        takers.retain(|(_, e)| binds(e, &values));
    }
    let taken = agreed(takers.iter().copied(), |(_, e)| e.statement);
    let blocking = taken.map(|(_, e)| e.statement);
    let blocker_unit = if takers.is_empty() {
        agreed(held.iter().copied(), |u| u.unit).map(|u| u.unit)
    } else {
        agreed(takers.iter().copied(), |(u, _)| u.unit).map(|(u, _)| u.unit)
    };
    let blocker_params = taken.map(|(_, e)| e.params.clone()).unwrap_or_default();
    // What the holder ran in the span: the first statement of its first
    // unit there (the taker's, when one was found) that ran in it.
    let unit = takers
        .first()
        .map(|(u, _)| *u)
        .or_else(|| held.first().copied());
    let ran = unit.and_then(|u| u.executed.iter().find(|e| e.ran_between(lo, hi)));
    let state = match (states.get(&root), ran) {
        (Some((s, _)), _) if s.starts_with("idle in transaction") => {
            BlockerState::IdleInTransaction
        }
        (Some((_, Some(t))), Some(c)) if t == "Lock" => BlockerState::WaitingOnLock(c.statement),
        (_, Some(c)) => BlockerState::Running(c.statement),
        (_, None) if unit.is_some() => BlockerState::IdleInTransaction,
        (_, None) => BlockerState::Unknown,
    };
    Attribution {
        waiting,
        blocking,
        blocker_unit,
        blocker_params,
        state,
        outside: false,
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

    /// Issue 32, 2, seen on TPC-B: 11 waits on the xid 10 holds; 10 awaits
    /// nothing in the pg_locks snapshot, but pg_blocking_pids(), read a
    /// moment later, finds it waiting on 12. The root is 10.
    #[test]
    fn a_holder_waiting_only_after_the_snapshot_is_the_root() {
        let s = LockSnapshot {
            locks: vec![
                lock(10, "transactionid", None, None, Some("500"), true),
                lock(11, "transactionid", None, None, Some("500"), false),
                lock(12, "transactionid", None, None, Some("501"), true),
            ],
            blocking: HashMap::from([(10, vec![12])]),
        };
        assert_eq!(s.root_holder(11), Some(10));
        assert_eq!(s.waits()[0].root, Some(10));
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
        assert_eq!(
            h.open()
                .unwrap()
                .lock_taker(Some("accounts"), None)
                .unwrap()
                .statement,
            7
        );
        assert_eq!(
            h.open()
                .unwrap()
                .lock_taker(Some("items"), None)
                .unwrap()
                .statement,
            8
        );
        assert_eq!(h.open().unwrap().current().unwrap().statement, 9);
        // A relation none of its statements locked: unknown, never the
        // first statement that locked something else.
        assert!(
            h.open()
                .unwrap()
                .lock_taker(Some("tenants"), None)
                .is_none()
        );
        // No relation and two statements locking: unknown.
        assert!(h.open().unwrap().lock_taker(None, None).is_none());
        h.end();
        assert!(h.open().is_none());
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
            h.open()
                .unwrap()
                .lock_taker(Some("hot"), Some("id = 7"))
                .unwrap()
                .statement,
            2
        );
        assert_eq!(
            h.open()
                .unwrap()
                .lock_taker(Some("hot"), None)
                .unwrap()
                .statement,
            2
        );
        assert!(h.open().unwrap().lock_taker(Some("other"), None).is_none());
        h.finish_statement();
        h.start(
            4,
            &locked_relations("UPDATE hot SET n = 0 WHERE id = $1"),
            vec![Some("8".into())],
        );
        h.finish_statement();
        assert_eq!(
            h.open()
                .unwrap()
                .lock_taker(Some("hot"), Some("id = 8"))
                .unwrap()
                .statement,
            4
        );
        assert_eq!(
            h.open()
                .unwrap()
                .lock_taker(Some("hot"), Some("id = 7"))
                .unwrap()
                .statement,
            2
        );
        assert!(h.open().unwrap().lock_taker(Some("hot"), None).is_none());
        assert!(
            h.open()
                .unwrap()
                .lock_taker(Some("hot"), Some("id = 9"))
                .is_none()
        );
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

    /// Runs one unit of transaction `unit` on `h`: each statement (index,
    /// SQL, bound values) started and finished, the last left running
    /// when `running_last`.
    fn run(h: &mut History, unit: usize, stmts: &[(usize, &str, &[&str])], running_last: bool) {
        h.begin(unit);
        for (i, (s, sql, params)) in stmts.iter().enumerate() {
            let params = params.iter().map(|p| Some(p.to_string())).collect();
            h.start(*s, &locked_relations(sql), params);
            if !(running_last && i + 1 == stmts.len()) {
                h.finish_statement();
            }
        }
    }

    const ACC: (usize, &str, &[&str]) = (
        0,
        "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
        &["5", "42"],
    );
    const TEL: (usize, &str, &[&str]) = (
        2,
        "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
        &["5", "3"],
    );
    const BRA: (usize, &str, &[&str]) = (
        3,
        "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
        &["5", "1"],
    );
    const HIS: (usize, &str, &[&str]) = (
        4,
        "INSERT INTO pgbench_history (tid, bid) VALUES ($1, $2)",
        &["3", "1"],
    );
    /// Another transaction's update of the branch row.
    const BRA2: (usize, &str, &[&str]) = (
        5,
        "UPDATE pgbench_branches SET bbalance = 0 WHERE bid = $1",
        &["1"],
    );

    fn branch_wait(waiter: i32, root: i32) -> Wait {
        Wait {
            waiter,
            lock_type: "transactionid".into(),
            relation: Some("pgbench_branches".into()),
            row: Some((0, 1)),
            root: Some(root),
        }
    }

    fn seen(hs: &[(i32, &History)], from: u64) -> Seen {
        hs.iter().map(|(pid, h)| (*pid, h.since(from))).collect()
    }

    /// Issue 32, 2: the unit open at the clock reading ended, and another
    /// began, before the sampler read the history: the ended one is
    /// still there, with its statements; the one ended before is not.
    #[test]
    fn since_finds_a_unit_that_ended_after_the_reading() {
        let mut h = History::default();
        run(&mut h, 7, &[ACC], false);
        h.end();
        run(&mut h, 0, &[ACC, TEL], true);
        let from = clock();
        h.finish_statement();
        h.start(BRA.0, &locked_relations(BRA.1), vec![]);
        h.finish_statement();
        h.end();
        run(&mut h, 1, &[ACC], true);
        let units = h.since(from).expect("nothing forgotten");
        assert_eq!(units.iter().map(|u| u.unit).collect::<Vec<_>>(), [0, 1]);
        assert!(units[0].ended.is_some() && units[1].ended.is_none());
        let taker = units[0].lock_taker(Some("pgbench_branches"), None);
        assert_eq!(taker.unwrap().statement, 3);
        assert_eq!(units[1].current().unwrap().statement, 0);
        h.end();
        assert!(h.open().is_none());
        assert_eq!(h.since(clock()), Some(Vec::new()));
    }

    /// More than RECENT units ended since the reading: the one open at it
    /// may be the one forgotten, so nothing is returned; a reading after
    /// the forgotten unit ended still finds the rest.
    #[test]
    fn since_is_none_once_a_unit_ended_since_is_forgotten() {
        let mut h = History::default();
        let from = clock();
        run(&mut h, 0, &[BRA], false);
        h.end();
        let after_first = clock();
        for _ in 0..RECENT {
            run(&mut h, 1, &[ACC], false);
            h.end();
        }
        assert_eq!(h.since(from), None);
        let rest = h.since(after_first).expect("only the first is forgotten");
        assert_eq!(rest.len(), RECENT);
        assert!(rest.iter().all(|u| u.unit == 1));
    }

    /// Issue 32, 2, the TPC-B shape: the holder's unit took the branch row,
    /// then ended and the next began while the pg_locks query ran; the
    /// waiter moved from its teller update to the branch update in that
    /// time. Both statements are named: the waiter's by the relation it
    /// waits on, the holder's from its ended unit.
    #[test]
    fn a_holder_that_ended_during_the_query_is_named() {
        let (mut holder, mut waiter) = (History::default(), History::default());
        run(&mut holder, 0, &[ACC, TEL, BRA], false);
        run(&mut waiter, 0, &[ACC, TEL], true);
        let from = clock();
        waiter.finish_statement();
        waiter.start(BRA.0, &locked_relations(BRA.1), vec![]);
        holder.start(HIS.0, &locked_relations(HIS.1), vec![]);
        holder.finish_statement();
        holder.end();
        run(&mut holder, 0, &[ACC], true);
        let s = seen(&[(10, &holder), (11, &waiter)], from);
        let a = attribute(
            &branch_wait(11, 10),
            from,
            &s,
            &HashMap::new(),
            Some("bid = 1"),
        );
        assert_eq!(a.waiting, Some(3));
        assert_eq!(a.blocking, Some(3));
        assert_eq!(a.blocker_unit, Some(0));
        assert_eq!(a.blocker_params, [Some("5".into()), Some("1".into())]);
        assert!(!a.outside);
        // The new unit alone (its branch update not yet run) names nothing,
        // never its account update.
        let mut fresh = History::default();
        let from = clock();
        run(&mut fresh, 0, &[ACC], true);
        let s = seen(&[(10, &fresh), (11, &waiter)], from);
        let a = attribute(&branch_wait(11, 10), from, &s, &HashMap::new(), None);
        assert_eq!(a.waiting, Some(3));
        assert_eq!(a.blocking, None);
        assert!(!a.outside);
    }

    /// Two units of the holder since the reading took the row with
    /// different statements: unknown. The waiter's statement started after
    /// the first ended bounds the snapshot: only the second held the lock.
    #[test]
    fn holders_that_disagree_name_nothing_unless_the_waiter_rules_one_out() {
        let (mut holder, mut waiter) = (History::default(), History::default());
        run(&mut waiter, 0, &[BRA], true);
        let from = clock();
        run(&mut holder, 0, &[BRA], false);
        holder.end();
        run(&mut holder, 1, &[BRA2], false);
        let s = seen(&[(10, &holder), (11, &waiter)], from);
        let a = attribute(
            &branch_wait(11, 10),
            from,
            &s,
            &HashMap::new(),
            Some("bid = 1"),
        );
        assert_eq!((a.blocking, a.blocker_unit), (None, None));
        assert_eq!(a.waiting, Some(3));

        let (mut holder, mut waiter) = (History::default(), History::default());
        let from = clock();
        run(&mut holder, 0, &[BRA], false);
        holder.end();
        run(&mut waiter, 0, &[BRA], true);
        run(&mut holder, 1, &[BRA2], false);
        let s = seen(&[(10, &holder), (11, &waiter)], from);
        let a = attribute(&branch_wait(11, 10), from, &s, &HashMap::new(), None);
        assert_eq!((a.blocking, a.blocker_unit), (Some(5), Some(1)));
    }

    /// A holder whose units since the reading are forgotten names nothing
    /// and is still planck's; a holder that is no connection of planck's
    /// is outside the workload.
    #[test]
    fn a_forgotten_holder_names_nothing_and_a_stranger_is_outside() {
        let mut waiter = History::default();
        run(&mut waiter, 0, &[BRA], true);
        let from = clock();
        let mut s = seen(&[(11, &waiter)], from);
        s.insert(10, None);
        let a = attribute(&branch_wait(11, 10), from, &s, &HashMap::new(), None);
        assert_eq!((a.waiting, a.blocking, a.outside), (Some(3), None, false));
        let a = attribute(&branch_wait(11, 99), from, &s, &HashMap::new(), None);
        assert_eq!((a.waiting, a.blocking, a.outside), (Some(3), None, true));
    }
}
