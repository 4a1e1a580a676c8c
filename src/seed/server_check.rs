//! CHECK constraints the server decides (issue 9, point 1): anything
//! [`crate::seed::check_expr`] does not model natively, such as a call to the
//! application's own function (`CHECK (controlled_for_whitespace(name))`), a
//! regex outside the subset PostgreSQL and Rust read alike, or a regex built
//! from the row's own key (`release ~ ('^.*,draft_' || id::text || '$')`).
//!
//! Rows are never dropped: foreign keys are arithmetic on parent row ranges,
//! so row `r` of a table must exist whatever its values. Instead, before a
//! table's COPY, [`settle`] picks for every row the first *attempt* whose
//! values the server accepts. Attempt `a` of a row redraws the constraint's
//! non-key columns from (seed, table, column, row, a); key columns (primary
//! key, unique, foreign key) are inputs and never change. Candidates go to a
//! temporary table in binary COPY, one batch at a time, and one query per
//! round evaluates the constraints' own expressions over them
//! (`WHERE NOT (expr)`: a NULL verdict passes, as it does for a CHECK). The
//! last attempt sets the redrawn nullable columns to NULL, which satisfies
//! any CHECK they alone decide. The attempt chosen for a row depends only on
//! the row and the server's verdicts, never on batching or threads, so the
//! same seed gives the same rows at any thread count.
//!
//! What the workers read of it is part of the row model: the constraints as
//! the plan carries them ([`crate::seed::row::plan::ServerChecks`]), the
//! attempts ([`crate::seed::row::attempt`]) and a row's value at an attempt
//! ([`crate::seed::row::eval::value_at`]).

use bytes::{BufMut, BytesMut};
use tokio_postgres::Transaction;

use crate::catalog::schema::TypeKind;
use crate::error::{Error, Result};
use crate::seed::check_expr;
use crate::seed::copy;
use crate::seed::direct;
use crate::seed::row::attempt::{ATTEMPTS, Attempts, NULL_ATTEMPT};
use crate::seed::row::eval::value_at;
use crate::seed::row::generate::Val;
use crate::seed::row::plan::SeedPlan;

/// Rows whose attempts are settled together (the rows of a batch are
/// sent again, fewer each time, until every row has its attempt).
const BATCH: u64 = 1 << 16;

/// Encoded candidate bytes one round sends before it asks the server for
/// its verdicts (issue 46, 4). A round is a COPY into the candidates table
/// and one query; the next round is encoded only once that query has
/// answered, so what a table's settling holds at once is one window of
/// chunks, whatever the rows' width or count. A round exceeds this only
/// by a row wider than [`MIN_CHUNK`] (every chunk holds at least one row).
/// Before, each attempt's rows were encoded whole, then copied again into
/// one buffer: with the rows several CHECKs rejected listed once per CHECK
/// (see `bad.dedup()` in [`settle`]), lago's `quote_versions` sent millions
/// of candidates an attempt (one chunk was 214 MB), the 6.1 GB peak.
pub const ROUND_BYTES: usize = 16 << 20;

/// Most encoded bytes of one chunk (one rayon task's share of a window).
const CHUNK_BYTES: usize = 1 << 20;

/// A round ends when less than this per thread is left of [`ROUND_BYTES`].
const MIN_CHUNK: usize = 64 << 10;

/// Column name of the row number in the candidates table.
const ORD: &str = "__planck_ord";

/// The boolean expression of a `CHECK (...)` definition.
pub fn check_body(def: &str) -> Option<String> {
    let body = def.trim().strip_prefix("CHECK")?.trim();
    let body = check_expr::strip_check_suffixes(body);
    (body.starts_with('(') && body.ends_with(')')).then(|| body.to_string())
}

/// [`copy::encode_chunk`] with each row's settled attempt.
pub fn encode_chunk(
    plan: &SeedPlan,
    t: usize,
    cols: &[usize],
    rows: std::ops::Range<u64>,
    capacity: usize,
    attempts: Option<&Attempts>,
) -> BytesMut {
    let Some(at) = attempts else {
        return direct::encode_chunk(plan, t, cols, rows, capacity);
    };
    let mut buf = BytesMut::with_capacity(capacity);
    let tp = &plan.tables[t];
    for ctx in plan.ctxs(t, rows) {
        let a = at.get(ctx.row);
        buf.put_i16(cols.len() as i16);
        for &c in cols {
            let v = value_at(plan, t, c, &ctx, a);
            copy::encode(&tp.cols[c].kind, &v, &mut buf);
        }
    }
    buf
}

/// Candidates of `rows` at one attempt, as binary COPY rows (ord first).
fn encode_candidates(
    plan: &SeedPlan,
    t: usize,
    cols: &[usize],
    rows: &[u64],
    attempt: u8,
) -> BytesMut {
    encode_capped(plan, t, cols, rows, attempt, usize::MAX).0
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// What [`settle`] measured, for `--verbose`.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    pub rows: u64,
    /// Candidates sent (rows × attempts they needed).
    pub candidates: u64,
    /// Rows that took the NULL resort.
    pub nulls: u64,
    /// Rounds sent (a COPY of candidates and the query judging them).
    pub rounds: u64,
    /// Encoded bytes of the largest round (at most [`ROUND_BYTES`] unless
    /// a single row is wider than [`MIN_CHUNK`]).
    pub largest_round: usize,
}

impl Settled {
    /// Accepted rows per candidate sent.
    pub fn acceptance(&self) -> f64 {
        self.rows as f64 / self.candidates.max(1) as f64
    }
}

/// Picks, for every row of `range`, the first attempt the server accepts
/// (see the module docs). None when the table has no server-evaluated
/// constraint. Runs inside the table's load transaction, before its COPY.
pub async fn settle(
    tx: &Transaction<'_>,
    plan: &SeedPlan,
    t: usize,
    range: std::ops::Range<u64>,
    pool: &rayon::ThreadPool,
) -> Result<Option<(Attempts, Settled)>> {
    let tp = &plan.tables[t];
    let sc = &tp.checked;
    if sc.is_empty() || range.is_empty() {
        return Ok(None);
    }
    let dberr = |e| Error::db(format!("checking candidate rows of {}", tp.display), e);
    let cols = sc.cols();
    let names: Vec<String> = cols.iter().map(|c| tp.cols[*c].name.clone()).collect();
    // The candidates table holds base types: a domain's own checks are
    // evaluated by the query below, not by the COPY into it.
    let types = tx
        .query(
            "WITH RECURSIVE b(attname, typ, mod, n) AS (
                 SELECT attname::text, atttypid, atttypmod, array_position($2::text[], attname::text)
                   FROM pg_catalog.pg_attribute
                  WHERE attrelid = $1 AND attname::text = ANY($2) AND NOT attisdropped
                 UNION ALL
                 SELECT b.attname, t.typbasetype, t.typtypmod, b.n
                   FROM b JOIN pg_catalog.pg_type t ON t.oid = b.typ WHERE t.typtype = 'd')
             SELECT pg_catalog.format_type(b.typ, b.mod) FROM b
               JOIN pg_catalog.pg_type t ON t.oid = b.typ
              WHERE t.typtype <> 'd' ORDER BY b.n",
            &[&tp.oid, &names],
        )
        .await
        .map_err(dberr)?;
    if types.len() != names.len() {
        return Err(Error::Seed {
            table: tp.display.clone(),
            column: None,
            message: "the columns its CHECK constraints read changed since planning".into(),
            hint: Some("run the seed again".into()),
        });
    }
    let mut ddl = format!(
        "DROP TABLE IF EXISTS pg_temp.planck_candidates;
         CREATE TEMP TABLE planck_candidates ({} int8",
        quote_ident(ORD)
    );
    for (n, r) in names.iter().zip(&types) {
        let ty: String = r.get(0);
        ddl.push_str(&format!(", {} {ty}", quote_ident(n)));
    }
    ddl.push_str(") ON COMMIT DROP");
    tx.batch_execute(&ddl).await.map_err(dberr)?;
    let rejected = rejected_sql(plan, t, None);
    let col_list = std::iter::once(quote_ident(ORD))
        .chain(names.iter().map(|n| quote_ident(n)))
        .collect::<Vec<_>>()
        .join(", ");
    let copy_stmt =
        format!("COPY pg_temp.planck_candidates ({col_list}) FROM STDIN (FORMAT binary)");

    let mut of_row = vec![0u8; (range.end - range.start) as usize];
    let mut stats = Settled {
        rows: range.end - range.start,
        ..Settled::default()
    };
    let threads = pool.current_num_threads().max(1);
    let round = Round {
        plan,
        t,
        cols: &cols,
        pool,
        threads,
        copy_stmt: &copy_stmt,
        rejected: &rejected,
    };
    let mut start = range.start;
    while start < range.end {
        let end = (start + BATCH).min(range.end);
        let mut pending: Vec<u64> = (start..end).collect();
        let mut attempt = 0u8;
        loop {
            stats.candidates += pending.len() as u64;
            // Rounds of at most ROUND_BYTES each: the server's verdicts on
            // one round are in before the next is encoded.
            let mut queue: std::collections::VecDeque<u64> = pending.into();
            let mut bad: Vec<u64> = Vec::new();
            while !queue.is_empty() {
                let (sent, bytes, rejected) =
                    round.run(tx, &mut queue, attempt).await.map_err(dberr)?;
                stats.rounds += 1;
                stats.largest_round = stats.largest_round.max(bytes);
                let mut rejected = rejected;
                rejected.sort_unstable();
                for row in sent {
                    if rejected.binary_search(&row).is_err() {
                        of_row[(row - range.start) as usize] = attempt;
                        if attempt == NULL_ATTEMPT {
                            stats.nulls += 1;
                        }
                    }
                }
                bad.extend(rejected);
            }
            // A row that several constraints reject is listed once for
            // each (`UNION ALL`): once is its next attempt. Kept twice, its
            // candidates doubled at every attempt (2^31 rows by the last,
            // lago's quote_versions with two CHECKs: the 6.1 GB peak).
            bad.sort_unstable();
            bad.dedup();
            pending = bad;
            if pending.is_empty() {
                break;
            }
            if attempt == NULL_ATTEMPT {
                return Err(no_candidate(tx, plan, t, &cols, &copy_stmt, pending[0]).await);
            }
            attempt += 1;
        }
        start = end;
    }
    tx.batch_execute("DROP TABLE pg_temp.planck_candidates")
        .await
        .map_err(dberr)?;
    Ok(Some((
        Attempts {
            start: range.start,
            of_row,
        },
        stats,
    )))
}

/// One table's settling rounds: what each round encodes and asks.
struct Round<'a> {
    plan: &'a SeedPlan,
    t: usize,
    cols: &'a [usize],
    pool: &'a rayon::ThreadPool,
    threads: usize,
    copy_stmt: &'a str,
    rejected: &'a str,
}

impl Round<'_> {
    /// Sends the candidates at the front of `queue` (at most
    /// [`ROUND_BYTES`] of them), a window of chunks at a time, each window
    /// handed to the COPY before the next is encoded; then asks which the
    /// constraints reject and empties the candidates table. Returns the rows
    /// sent, the round's bytes and the rejected rows.
    async fn run(
        &self,
        tx: &Transaction<'_>,
        queue: &mut std::collections::VecDeque<u64>,
        attempt: u8,
    ) -> std::result::Result<(Vec<u64>, usize, Vec<u64>), tokio_postgres::Error> {
        use futures_util::SinkExt;
        let sink = tx.copy_in::<_, bytes::Bytes>(self.copy_stmt).await?;
        futures_util::pin_mut!(sink);
        sink.feed(bytes::Bytes::from_static(copy::HEADER)).await?;
        let mut bytes = 0usize;
        let mut sent = Vec::new();
        // Bytes per row seen so far (a guess of 64 before the first chunk).
        let mut per_row = 64usize;
        while !queue.is_empty() {
            let left = ROUND_BYTES.saturating_sub(bytes);
            if left < MIN_CHUNK * self.threads && !sent.is_empty() {
                break;
            }
            let cap = (left / self.threads).clamp(MIN_CHUNK, CHUNK_BYTES);
            let per_chunk = (cap / per_row).max(1);
            let take = (per_chunk * self.threads).min(queue.len());
            let window: Vec<u64> = queue.drain(..take).collect();
            let per = window.len().div_ceil(self.threads).max(1);
            let chunks: Vec<(BytesMut, usize)> = self.pool.install(|| {
                use rayon::prelude::*;
                window
                    .par_chunks(per)
                    .map(|rows| encode_capped(self.plan, self.t, self.cols, rows, attempt, cap))
                    .collect()
            });
            // Rows a chunk had no room for go back to the queue's front,
            // in order, for this round or the next.
            let mut back = Vec::new();
            for ((buf, n), rows) in chunks.into_iter().zip(window.chunks(per)) {
                sent.extend_from_slice(&rows[..n]);
                back.extend_from_slice(&rows[n..]);
                bytes += buf.len();
                if n > 0 {
                    per_row = per_row.max(buf.len().div_ceil(n));
                }
                sink.send(buf.freeze()).await?;
            }
            for &r in back.iter().rev() {
                queue.push_front(r);
            }
        }
        sink.feed(bytes::Bytes::from_static(copy::TRAILER)).await?;
        sink.as_mut().finish().await?;
        let rejected: Vec<u64> = tx
            .query(self.rejected, &[])
            .await?
            .iter()
            .map(|r| r.get::<_, i64>(0) as u64)
            .collect();
        tx.batch_execute("TRUNCATE pg_temp.planck_candidates")
            .await?;
        Ok((sent, bytes, rejected))
    }
}

/// [`encode_candidates`] of the first rows of `rows` that fit in `cap`
/// bytes (at least one row); returns the bytes and how many rows they are.
fn encode_capped(
    plan: &SeedPlan,
    t: usize,
    cols: &[usize],
    rows: &[u64],
    attempt: u8,
    cap: usize,
) -> (BytesMut, usize) {
    let tp = &plan.tables[t];
    let mut buf = BytesMut::new();
    let mut n = 0;
    for &row in rows {
        let before = buf.len();
        let ctx = plan.ctx(t, row);
        buf.put_i16(cols.len() as i16 + 1);
        copy::encode(&TypeKind::Int8, &Val::Int(row as i64), &mut buf);
        for &c in cols {
            copy::encode(
                &tp.cols[c].kind,
                &value_at(plan, t, c, &ctx, attempt),
                &mut buf,
            );
        }
        if buf.len() > cap && n > 0 {
            buf.truncate(before);
            break;
        }
        n += 1;
    }
    (buf, n)
}

async fn send(
    tx: &Transaction<'_>,
    stmt: &str,
    chunks: Vec<BytesMut>,
) -> std::result::Result<u64, tokio_postgres::Error> {
    use futures_util::SinkExt;
    let sink = tx.copy_in::<_, bytes::Bytes>(stmt).await?;
    futures_util::pin_mut!(sink);
    let mut head = BytesMut::from(copy::HEADER);
    for c in chunks {
        head.put_slice(&c);
    }
    head.put_slice(copy::TRAILER);
    sink.send(head.freeze()).await?;
    sink.as_mut().finish().await
}

/// The query listing the rows some constraint rejects; with `only`, the
/// verdict of each constraint on that row instead.
fn rejected_sql(plan: &SeedPlan, t: usize, only: Option<u64>) -> String {
    let tp = &plan.tables[t];
    let ord = quote_ident(ORD);
    let mut parts = Vec::new();
    for ch in &tp.checked.checks {
        let from = match ch.domain_col {
            None => "pg_temp.planck_candidates".to_string(),
            Some(c) => format!(
                "(SELECT {ord}, {} AS value FROM pg_temp.planck_candidates) AS d",
                quote_ident(&tp.cols[c].name)
            ),
        };
        parts.push(match only {
            None => format!("SELECT {ord} FROM {from} WHERE NOT {}", ch.expr),
            Some(row) => format!(
                "SELECT (SELECT ({}) IS NOT FALSE FROM {from} WHERE {ord} = {row})",
                ch.expr
            ),
        });
    }
    parts.join(" UNION ALL ")
}

/// The error when no attempt of `row` passes: names the constraint, shows a
/// candidate and the server's verdict, and says what spec line would help.
async fn no_candidate(
    tx: &Transaction<'_>,
    plan: &SeedPlan,
    t: usize,
    cols: &[usize],
    copy_stmt: &str,
    row: u64,
) -> Error {
    let tp = &plan.tables[t];
    let mut failing = None;
    let mut shown = String::new();
    let probe = async {
        tx.batch_execute("TRUNCATE pg_temp.planck_candidates")
            .await?;
        send(
            tx,
            copy_stmt,
            vec![encode_candidates(plan, t, cols, &[row], 0)],
        )
        .await?;
        let rows = tx.query(&rejected_sql(plan, t, Some(row)), &[]).await?;
        let cand = tx
            .query_one(
                &format!(
                    "SELECT (to_jsonb(c) - '{ORD}')::text FROM pg_temp.planck_candidates c WHERE {} = $1",
                    quote_ident(ORD)
                ),
                &[&(row as i64)],
            )
            .await?;
        Ok::<_, tokio_postgres::Error>((rows, cand.get::<_, String>(0)))
    };
    if let Ok((verdicts, cand)) = probe.await {
        shown = cand;
        failing = verdicts
            .iter()
            .position(|r| r.get::<_, Option<bool>>(0) == Some(false));
    }
    let ch = &tp.checked.checks[failing.unwrap_or(0)];
    let redrawn: Vec<&str> = ch
        .cols
        .iter()
        .filter(|c| tp.checked.redraw.binary_search(c).is_ok())
        .map(|c| tp.cols[*c].name.as_str())
        .collect();
    let target = redrawn
        .first()
        .copied()
        .or_else(|| ch.cols.first().map(|c| tp.cols[*c].name.as_str()))
        .unwrap_or("COLUMN");
    Error::CheckUnsatisfied {
        table: tp.display.clone(),
        constraint: ch.name.clone(),
        message: format!(
            "no candidate row satisfies CHECK constraint {} {} after {ATTEMPTS} attempts \
             (row {}; candidate {shown}; the server says: false)",
            ch.name,
            ch.def,
            row + 1,
        ),
        hint: Some(format!(
            "give {} a generator whose values pass, e.g. [tables.{}.columns] {target} = {{ values = [...] }}{}",
            if redrawn.is_empty() {
                "the columns it reads".to_string()
            } else {
                redrawn.join(", ")
            },
            tp.display,
            if redrawn.is_empty() {
                " (it reads only key columns, which planck never redraws)"
            } else {
                ""
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_keep_their_parentheses() {
        assert_eq!(
            check_body("CHECK ((a > 0)) NOT VALID").as_deref(),
            Some("((a > 0))")
        );
        assert_eq!(
            check_body("CHECK (my_fn(name))").as_deref(),
            Some("(my_fn(name))")
        );
        assert_eq!(check_body("UNIQUE (a)"), None);
        // PostgreSQL 18 (issue 31): a CHECK the server does not enforce.
        assert_eq!(
            check_body("CHECK (((rating >= 1) AND (rating <= 5))) NOT ENFORCED").as_deref(),
            Some("(((rating >= 1) AND (rating <= 5)))")
        );
        assert_eq!(
            check_body("CHECK ((a > 0)) NO INHERIT NOT ENFORCED").as_deref(),
            Some("((a > 0))")
        );
    }
}
