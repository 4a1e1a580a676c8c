//! The integrity line: the server's counters and the written tables'
//! checksums, read before and after the run ([`server_counters`]), beside
//! planck's own counts ([`integrity`]).

use tokio_postgres::Client;

use crate::db::quote_ident;
use crate::error::{Error, Result};
use crate::replay::options::Options;
use crate::replay::report::{Counters, IntegrityJson};

/// The counters and checksums the integrity line compares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerCounters {
    pub rows_changed: i64,
    pub xact_commit: i64,
    pub xact_rollback: i64,
    /// (relation, rows, checksum); `None` when skipped.
    pub checksums: Vec<(String, i64, Option<String>)>,
}

fn qualified(rel: &str) -> String {
    rel.split('.')
        .map(quote_ident)
        .collect::<Vec<_>>()
        .join(".")
}

/// How long the counters of a server before 15 are given to settle (see
/// [`server_counters`]).
const COLLECTOR_LAG_MS: u64 = 600;

/// Reads the server's counters and the written tables' checksums.
/// `version`: the server's `server_version_num`.
pub async fn server_counters(
    client: &Client,
    version: i32,
    relations: &[String],
    max_rows: u64,
) -> Result<ServerCounters> {
    let ctx = |what: &'static str| move |e| Error::db(what, e);
    if version < 150000 {
        // Before 15 the counters go through the statistics collector: a
        // backend's last changes reach it over a socket, and a snapshot may
        // be up to 500 ms (PGSTAT_STAT_INTERVAL) old. Waiting past that
        // counts the changes made just before (the run's own, or the
        // setup's) on the side they belong to.
        tokio::time::sleep(std::time::Duration::from_millis(COLLECTOR_LAG_MS)).await;
    }
    client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await
        .map_err(ctx("clearing the statistics snapshot"))?;
    let rows: i64 = client
        .query_one(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int8 FROM pg_stat_user_tables",
            &[],
        )
        .await
        .map_err(ctx("reading pg_stat_user_tables"))?
        .get(0);
    let x = client
        .query_one(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
        .map_err(ctx("reading pg_stat_database"))?;
    let mut checksums = Vec::new();
    for rel in relations {
        let q = qualified(rel);
        let n: i64 = match client
            .query_one(&format!("SELECT count(*) FROM {q}"), &[])
            .await
        {
            Ok(r) => r.get(0),
            // A relation the text names that is not a table here (a CTE name).
            Err(_) => continue,
        };
        let sum = if n as u64 <= max_rows {
            let r = client
                .query_one(
                    &format!(
                        "SELECT md5(coalesce(string_agg(h, '' ORDER BY h), '')) \
                         FROM (SELECT md5(t::text) AS h FROM {q} t) s"
                    ),
                    &[],
                )
                .await
                .map_err(ctx("checksumming a table"))?;
            Some(r.get::<_, String>(0))
        } else {
            None
        };
        checksums.push((rel.clone(), n, sum));
    }
    Ok(ServerCounters {
        rows_changed: rows,
        xact_commit: x.get(0),
        xact_rollback: x.get(1),
        checksums,
    })
}

/// The integrity line: planck's own counters, each counted on its own, beside
/// the server's deltas and the checksums.
pub fn integrity(
    t: &Counters,
    before: &ServerCounters,
    after: &ServerCounters,
    opts: &Options,
    interrupted: bool,
) -> IntegrityJson {
    let mut notes = Vec::new();
    let server_rows = after.rows_changed - before.rows_changed;
    if interrupted {
        // The server saw the dropped step's executions, planck's counters
        // did not: comparing them would raise a false alarm.
        notes.push(
            "counters not cross-checked: the run was interrupted, and the executions of the step \
             that was running are not counted"
                .to_string(),
        );
    } else if server_rows > t.rows_written as i64 && t.writes_failed > 0 {
        // A write that fails midway (a deadlock, a timeout, a constraint)
        // has changed rows the server counts; its error reports none.
        notes.push(format!(
            "the server counted {server_rows} rows inserted, updated or deleted, planck's executions \
             reported {}: the {} more are rows that {} write{} changed before failing (the server \
             counts them though they were rolled back; a failed statement reports none)",
            t.rows_written,
            server_rows - t.rows_written as i64,
            t.writes_failed,
            if t.writes_failed == 1 { "" } else { "s" },
        ));
    } else if server_rows != t.rows_written as i64 {
        notes.push(format!(
            "MISMATCH: the server counted {server_rows} rows inserted, updated or deleted, planck's executions reported {}",
            t.rows_written
        ));
    }
    if !interrupted && t.attempted != t.succeeded + t.failed {
        notes.push(format!(
            "MISMATCH: {} attempted but {} succeeded and {} failed (units cut off by the end of the run)",
            t.attempted, t.succeeded, t.failed
        ));
    }
    let server_rollbacks = after.xact_rollback - before.xact_rollback;
    if !interrupted && server_rollbacks < t.rollbacks as i64 {
        notes.push(format!(
            "MISMATCH: planck rolled back {} transactions, the server counted {server_rollbacks}",
            t.rollbacks
        ));
    }
    let mut unchanged = true;
    for (rel, n, sum) in &before.checksums {
        let a = after.checksums.iter().find(|(r, _, _)| r == rel);
        match (sum, a) {
            (None, _) => notes.push(format!(
                "{rel} not checksummed: {n} rows, above --verify-max-rows {}",
                opts.verify_max_rows
            )),
            (Some(s), Some((_, an, Some(asum)))) if s == asum && n == an => {}
            (Some(_), Some((_, an, _))) => {
                unchanged = false;
                notes.push(format!(
                    "{rel} changed: {n} rows before, {an} after, checksum differs"
                ));
            }
            (Some(_), None) => {
                unchanged = false;
                notes.push(format!("{rel} could not be read after the run"));
            }
        }
    }
    if t.reconnects > 0 {
        notes.push(format!(
            "{} connections were lost mid-run and re-established (the server restarted, or \
             terminated them): the units they were running count as failed, under 08006 or the \
             server's SQLSTATE (57P01 at a shutdown)",
            t.reconnects
        ));
    }
    if !opts.commit {
        notes.push(
            "every unit ran inside BEGIN .. ROLLBACK: production's commit (its WAL flush, so locks are held a \
             little longer there) and READ COMMITTED waiters re-checking a committed row are left out; sequences advance"
                .into(),
        );
    }
    IntegrityJson {
        attempted: t.attempted,
        succeeded: t.succeeded,
        failed: t.failed,
        planck_rows_changed: t.rows_written,
        server_rows_changed: Some(server_rows),
        planck_rollbacks: t.rollbacks,
        planck_commits: t.commits,
        server_xact_rollback: Some(server_rollbacks),
        server_xact_commit: Some(after.xact_commit - before.xact_commit),
        data_unchanged: (!before.checksums.is_empty()).then_some(unchanged),
        notes,
        skipped: Vec::new(),
    }
}
