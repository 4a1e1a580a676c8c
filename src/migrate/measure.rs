//! What a migration does while it runs, measured on a seeded copy of the
//! database (`planck check --base` gives it a `TEMPLATE` copy of the base):
//! each statement runs on its own (autocommit) while a second connection
//! samples `pg_locks` for the first one's backend, and each table's
//! relfilenode is read before and after it (a new one: the table was
//! rewritten). Per statement: every relation it locked with the strongest
//! mode seen and how long that was seen held, and the tables it rewrote.
//!
//! Sampling sees a lock only while it is held for longer than the sampling
//! interval ([`SAMPLE_EVERY`]); a statement that ends sooner reports none,
//! which is also what matters: it blocked nobody for long.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use super::{Migration, split};
use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;

/// How often the locks of the running statement are read.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// One statement of a migration file, as it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The migration's file name.
    pub file: String,
    /// 1-based line of the statement in it.
    pub line: usize,
    pub statement: String,
    pub seconds: f64,
    /// One per relation, its strongest mode seen, strongest first.
    pub locks: Vec<Lock>,
    /// Tables whose relfilenode changed.
    pub rewritten: Vec<String>,
    /// The statement failed with this; nothing after it ran.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lock {
    pub relation: String,
    pub mode: String,
    pub held_seconds: f64,
}

impl Measured {
    /// Whether the application's reads or writes wait while it runs: a lock
    /// that conflicts with `ROW EXCLUSIVE` (what INSERT, UPDATE and DELETE
    /// take), or a rewrite (under an ACCESS EXCLUSIVE lock).
    pub fn blocking(&self) -> bool {
        !self.rewritten.is_empty() || self.locks.iter().any(|l| strength(&l.mode) >= 4)
    }
}

/// The lock modes of PostgreSQL's table-level locks, weakest first.
const MODES: [&str; 8] = [
    "AccessShareLock",
    "RowShareLock",
    "RowExclusiveLock",
    "ShareUpdateExclusiveLock",
    "ShareLock",
    "ShareRowExclusiveLock",
    "ExclusiveLock",
    "AccessExclusiveLock",
];

/// 0 (ACCESS SHARE) to 7 (ACCESS EXCLUSIVE).
pub fn strength(mode: &str) -> usize {
    MODES.iter().position(|m| *m == mode).unwrap_or(0)
}

/// What the application cannot do on the relation while the lock is held.
pub fn blocks(mode: &str) -> &'static str {
    match mode {
        "AccessExclusiveLock" => "reads and writes",
        "ExclusiveLock" | "ShareRowExclusiveLock" | "ShareLock" => "writes",
        "ShareUpdateExclusiveLock" => "other schema changes and VACUUM",
        "RowExclusiveLock" => "CREATE INDEX and other table-wide locks",
        "RowShareLock" => "EXCLUSIVE and ACCESS EXCLUSIVE locks",
        _ => "ACCESS EXCLUSIVE locks",
    }
}

/// Runs `files` on `conn`, statement by statement, measuring each. Stops at
/// the first failing statement (recorded with its error).
pub async fn run(conn: &ConnInfo, files: &[Migration], log: Log) -> Result<Vec<Measured>> {
    let worker = conn.connect().await?;
    let pid: i32 = worker
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| Error::db("reading the backend pid", e))?
        .get(0);
    let mut sampler = Some(conn.connect().await?);
    let mut out = Vec::new();
    for m in files {
        for piece in pieces(m) {
            log.debug(&format!("measuring {}:{}", m.name, piece.line));
            let before = relfilenodes(&worker).await?;
            let stop = Arc::new(AtomicBool::new(false));
            let client = sampler
                .take()
                .expect("the sampler is returned after each statement");
            let task = tokio::spawn(sample(client, pid, stop.clone()));
            let started = Instant::now();
            let result = worker.batch_execute(&piece.text).await;
            let seconds = started.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            let (client, seen) = task
                .await
                .map_err(|e| Error::internal(format!("the lock sampler stopped: {e}")))??;
            sampler = Some(client);
            let after = relfilenodes(&worker).await?;
            let rewritten = after
                .iter()
                .filter(|(oid, (_, node))| before.get(oid).is_some_and(|(_, b)| b != node))
                .map(|(_, (name, _))| name.clone())
                .collect();
            let error = result.err().map(|e| match e.as_db_error() {
                Some(db) => crate::error::PgError::from_db(db).to_string(),
                None => e.to_string(),
            });
            let failed = error.is_some();
            out.push(Measured {
                file: m.name.clone(),
                line: piece.line,
                statement: crate::queries::normalize_space(&piece.text),
                seconds: round3(seconds),
                locks: strongest(seen),
                rewritten,
                error,
            });
            if failed {
                return Ok(out);
            }
        }
    }
    Ok(out)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A file's statements; a file the tokenizer cannot cut is one statement.
fn pieces(m: &Migration) -> Vec<split::Piece> {
    split::statements(&m.sql)
        .unwrap_or_else(|| {
            vec![split::Piece {
                text: m.sql.clone(),
                offset: 0,
                line: 1,
            }]
        })
        .into_iter()
        .filter(|p| !is_transaction_control(&p.text))
        .collect()
}

/// BEGIN/COMMIT in a file: every statement here runs on its own anyway.
fn is_transaction_control(text: &str) -> bool {
    let word = text
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(word.as_str(), "begin" | "commit" | "end" | "start")
        && !text.to_ascii_lowercase().contains("create")
}

/// Each table's (and materialized view's) name and relfilenode, by oid.
async fn relfilenodes(client: &Client) -> Result<BTreeMap<u32, (String, u32)>> {
    Ok(crate::db::table_files(client)
        .await?
        .into_iter()
        .map(|t| (t.oid, (t.name, t.relfilenode)))
        .collect())
}

/// (relation, mode) -> (first seen, last seen), while `stop` is unset.
type Seen = BTreeMap<(String, String), (Instant, Instant)>;

async fn sample(client: Client, pid: i32, stop: Arc<AtomicBool>) -> Result<(Client, Seen)> {
    let mut seen: Seen = BTreeMap::new();
    let statement = client
        .prepare(
            // Relations the statement itself is creating (a new table, an
            // index being built, a rewrite's transient heap) are not visible
            // yet, and no one else can wait on them: only visible ones count.
            "SELECT c.oid::regclass::text, l.mode
               FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
              WHERE l.pid = $1 AND l.locktype = 'relation' AND l.granted
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND c.relnamespace <> 'pg_catalog'::regnamespace",
        )
        .await
        .map_err(|e| Error::db("preparing the lock sampler", e))?;
    while !stop.load(Ordering::Relaxed) {
        let rows = client
            .query(&statement, &[&pid])
            .await
            .map_err(|e| Error::db("sampling pg_locks", e))?;
        let now = Instant::now();
        for r in rows {
            let key: (String, String) = (r.get(0), r.get(1));
            seen.entry(key)
                .and_modify(|(_, last)| *last = now)
                .or_insert((now, now));
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    Ok((client, seen))
}

/// One lock per relation, its strongest mode, strongest (then longest) first.
fn strongest(seen: Seen) -> Vec<Lock> {
    let mut per: BTreeMap<String, Lock> = BTreeMap::new();
    for ((relation, mode), (first, last)) in seen {
        let held = round3((last - first + SAMPLE_EVERY).as_secs_f64());
        let lock = Lock {
            relation: relation.clone(),
            mode,
            held_seconds: held,
        };
        match per.get(&relation) {
            Some(l) if strength(&l.mode) >= strength(&lock.mode) => {}
            _ => {
                per.insert(relation, lock);
            }
        }
    }
    let mut v: Vec<Lock> = per.into_values().collect();
    v.sort_by(|a, b| {
        strength(&b.mode)
            .cmp(&strength(&a.mode))
            .then(b.held_seconds.total_cmp(&a.held_seconds))
            .then(a.relation.cmp(&b.relation))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strongest_mode_per_relation_wins_and_sorts_first() {
        let t = Instant::now();
        let mut seen = Seen::new();
        seen.insert(("items".into(), "AccessShareLock".into()), (t, t));
        seen.insert(
            ("items".into(), "AccessExclusiveLock".into()),
            (t, t + Duration::from_secs(2)),
        );
        seen.insert(("users".into(), "ShareLock".into()), (t, t));
        let v = strongest(seen);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].relation, "items");
        assert_eq!(v[0].mode, "AccessExclusiveLock");
        assert_eq!(v[0].held_seconds, 2.01);
        assert_eq!(v[1].mode, "ShareLock");
    }

    #[test]
    fn share_and_stronger_block_the_application() {
        let m = |mode: &str| Measured {
            file: "f".into(),
            line: 1,
            statement: "s".into(),
            seconds: 0.0,
            locks: vec![Lock {
                relation: "t".into(),
                mode: mode.into(),
                held_seconds: 1.0,
            }],
            rewritten: vec![],
            error: None,
        };
        assert!(m("ShareLock").blocking());
        assert!(m("AccessExclusiveLock").blocking());
        assert!(!m("ShareUpdateExclusiveLock").blocking());
        assert!(!m("RowExclusiveLock").blocking());
        assert_eq!(blocks("ShareLock"), "writes");
        assert!(is_transaction_control("BEGIN"));
        assert!(!is_transaction_control("CREATE INDEX i ON t (c)"));
    }
}
