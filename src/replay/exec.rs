//! What one client does: run a unit (a transaction whole, or a statement
//! alone) on its own connection inside `BEGIN ... ROLLBACK` (or COMMIT with
//! `--commit`), with its parameters bound, recording latencies and errors
//! into its worker thread's stats and every statement into the connection's
//! [`History`] for the sampler.

mod stats;
mod values;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{TryStreamExt, pin_mut};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement as Prepared};

use super::attribution::History;
use super::fresh::{self, FreshKeys};
use super::lean::{Frame, Lean, LeanError};
use super::options::TenantMode;
use super::rng::Rng;
use super::tenant::{self, TenantRun};
use super::workload::{BindSource, Unit, Workload};
use crate::db::quote_ident;
use crate::session::TenantContext;

pub use stats::{ErrorCount, Errors, WorkerStats, add_error};
use values::AnyText;
pub use values::{Picker, Pools, TextParam, param_count, pool_columns, sample_pools};

/// How long a pause sleeps before it looks for a signal again.
const PAUSE_SLICE: Duration = Duration::from_millis(50);

/// What every client of a run shares, read-only.
#[derive(Debug)]
pub struct Shared {
    pub workload: Workload,
    pub pools: Pools,
    pub statement_timeout_ms: u64,
    pub commit: bool,
    /// Per statement, a value of each parameter's type (the shared params
    /// layer's default; `None` where the type is unknown): what a parameter
    /// no bind feeds is sent.
    pub defaults: Vec<Vec<Option<String>>>,
    /// How tenant-scoped units run; `None`: as recorded.
    pub tenant: Option<TenantRun>,
    /// INSERT parameters that take fresh keys, and the run's counter of them.
    pub fresh: FreshKeys,
    pub fresh_next: AtomicU64,
    /// Set by Ctrl-C or SIGTERM: a unit pausing between statements stops
    /// there and rolls back.
    pub stop: Arc<AtomicBool>,
    /// Per statement, whether a `result` bind reads its output (only then
    /// is its first row kept as text: no allocation per execution else).
    pub returns: Vec<bool>,
}

/// Which statements a `result` bind reads an output column of.
pub fn returns_read(w: &Workload) -> Vec<bool> {
    w.statements
        .iter()
        .map(|s| {
            w.transactions.iter().flat_map(|t| &t.bind).any(|b| {
                matches!(&b.source, BindSource::Result { statement, column }
                    if *statement == s.id && !column.starts_with('$'))
            })
        })
        .collect()
}

/// The SQLSTATE of an error; `08006` when the connection was lost.
pub fn sqlstate(e: &tokio_postgres::Error) -> String {
    match e.code() {
        Some(c) => c.code().to_string(),
        None => "08006".to_string(),
    }
}

/// One text for an error: the server's message, or the client's.
pub fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}

/// Why a statement failed: its SQLSTATE (08006 when the connection
/// broke), the message, and whether the connection is gone.
struct Failed {
    code: String,
    text: String,
    lost: bool,
}

impl Failed {
    fn of(e: &tokio_postgres::Error) -> Failed {
        Failed {
            code: sqlstate(e),
            text: error_text(e),
            lost: e.code().is_none(),
        }
    }

    fn lean(e: LeanError) -> Failed {
        match e {
            LeanError::Db { code, message } => Failed {
                code,
                text: message,
                lost: false,
            },
            LeanError::Lost(text) => Failed {
                code: "08006".into(),
                text,
                lost: true,
            },
        }
    }
}

/// One client's connection and what it prepared on it.
pub struct ClientConn {
    pub client: Client,
    /// The lean path on the connection's own socket, when it is plain TCP.
    pub lean: Option<Lean>,
    /// By statement index: prepared on first use.
    pub prepared: Vec<Option<Prepared>>,
    pub history: Arc<Mutex<History>>,
    pub pid: i32,
    /// The role the connection logged in as (`session_user`).
    pub login: String,
    /// The role set on the connection (`SET ROLE`); `None`: the login.
    pub role: Option<String>,
    /// The session-level settings set on the connection, by name.
    pub session: Vec<(String, String)>,
}

/// Sets the role and the session-level settings a unit was recorded with,
/// where the connection's differ (once per connection when every unit ran
/// as one role): `SET ROLE` (or `RESET ROLE` back to the login) and one
/// `set_config(.., false)` per setting (NULL resets one the unit lacks),
/// pipelined in one round trip, outside any transaction so that no
/// ROLLBACK undoes them.
async fn set_session(
    conn: &mut ClientConn,
    role: Option<&str>,
    session: &[(String, String)],
) -> std::result::Result<(), tokio_postgres::Error> {
    let role_sql = match role {
        Some(r) => format!("SET ROLE {}", quote_ident(r)),
        None => "RESET ROLE".to_string(),
    };
    let mut names: Vec<&str> = session.iter().map(|(k, _)| k.as_str()).collect();
    names.extend(
        conn.session
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !session.iter().any(|(n, _)| n == k)),
    );
    let values: Vec<Option<&str>> = names
        .iter()
        .map(|n| {
            session
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        })
        .collect();
    let calls: Vec<String> = (0..names.len())
        .map(|i| format!("set_config(${}, ${}, false)", 2 * i + 1, 2 * i + 2))
        .collect();
    let select = format!("SELECT {}", calls.join(", "));
    let params: Vec<(&(dyn ToSql + Sync), Type)> = names
        .iter()
        .zip(&values)
        .flat_map(|(n, v)| {
            [
                (n as &(dyn ToSql + Sync), Type::TEXT),
                (v as &(dyn ToSql + Sync), Type::TEXT),
            ]
        })
        .collect();
    let (r, s) = tokio::join!(conn.client.batch_execute(&role_sql), async {
        match names.is_empty() {
            true => Ok(()),
            false => conn.client.query_typed(&select, &params).await.map(|_| ()),
        }
    });
    r?;
    s?;
    conn.role = role.map(str::to_string);
    conn.session = session.to_vec();
    Ok(())
}

/// How a unit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    /// The connection is gone: reconnect before the next unit.
    Lost,
}

/// Runs `unit` once. `record` says whether latencies count (past the
/// warm-up); the unit's latency counts from `intended`, its intended start
/// (the open loop's schedule; now, in a closed loop). A pause (`think_ms`)
/// that would last past `pauses_until` is cut there: the step waits for
/// the unit in flight, and a transaction pausing far past the step's end
/// would hold the step (and the row locks it took) that long; such a
/// unit's own latency is left out, since it did not pause as asked.
#[allow(clippy::too_many_arguments)]
pub async fn run_unit(
    conn: &mut ClientConn,
    shared: &Shared,
    unit: Unit,
    rng: &mut Rng,
    stats: &RefCell<WorkerStats>,
    record: bool,
    intended: Instant,
    pauses_until: Instant,
) -> Outcome {
    let w = &shared.workload;
    // The unit's statements, borrowed where no `repeat` makes a list.
    let (one, many);
    let stmts: &[usize] = match unit {
        Unit::Lone(s) => {
            one = [s];
            &one
        }
        Unit::Transaction(t) if w.transactions[t].repeat <= 1 => &w.transactions[t].statements,
        Unit::Transaction(_) => {
            many = w.unit_statements(unit);
            &many
        }
    };
    let traits = UnitTraits::of(w, unit);
    let tx = traits.tx;
    let think = traits.think;
    stats.borrow_mut().counters.attempted += 1;
    let tally = Tally {
        stats,
        record,
        unit,
    };
    // The draws of this execution: one sampled row per table, and results.
    let mut state = UnitState::default();
    let (local, session) = unit_settings(shared, conn, unit, stmts, &traits, &mut state, rng);
    let want_role = state.role.as_deref().filter(|r| *r != conn.login);
    if conn.role.as_deref() != want_role || conn.session != session {
        stats.borrow_mut().counters.planck_round_trips += 1;
        if let Err(e) = set_session(conn, want_role, &session).await {
            tally.fail(&sqlstate(&e), &error_text(&e), None);
            return end(conn, stats, e.code().is_none(), false).await;
        }
    }
    // A lone read with nothing to set per transaction runs in autocommit, as
    // the application sends it (the session's statement_timeout bounds it,
    // its default_transaction_read_only keeps it from writing); everything
    // else in a transaction whose BEGIN (and settings) leave in the write of
    // its first statement, and whose ROLLBACK in the one of its last when no
    // pause follows it: a write's safety costs no round trip of its own.
    let autocommit = matches!(unit, Unit::Lone(s) if !w.statements[s].writes) && local.is_empty();
    let begin = (!autocommit).then(|| tenant::begin_sql(traits.isolation.as_deref()));
    let mut p = Progress::default();
    conn.history
        .lock()
        .expect("history lock")
        .begin(match unit {
            Unit::Transaction(t) => t,
            Unit::Lone(s) => usize::MAX - s,
        });
    for (at, &s) in stmts.iter().enumerate() {
        let stmt = &w.statements[s];
        let values = state.statement_values(shared, s, tx, rng);
        // A statement whose results nothing reads runs on the lean path
        // when the connection has one (plain TCP), prepared there.
        let lean = !shared.returns[s] && conn.lean.is_some();
        let prepared = match prepared_for(conn, s, &stmt.sql, lean, stats).await {
            Ok(p) => p,
            Err(e) => {
                tally.fail(&sqlstate(&e), &error_text(&e), Some(s));
                return end(conn, stats, e.code().is_none(), p.open).await;
            }
        };
        note_start(conn, s, stmt, &values);
        let first = at == 0 && begin.is_some();
        // The ROLLBACK goes with the last statement when no pause follows
        // it (a COPY's reply does not end with its Sync: never after one).
        let last_end = at + 1 == stmts.len()
            && begin.is_some()
            && !shared.commit
            && think <= 0.0
            && !is_copy(&stmt.sql);
        let frame = Frame {
            begin: begin.as_deref().filter(|_| first),
            settings: if first { &local } else { &[] },
            end: last_end.then_some("ROLLBACK"),
        };
        stats.borrow_mut().counters.workload_round_trips += 1;
        let t0 = Instant::now();
        let res = send(conn, prepared.as_ref(), &frame, shared, s, &values).await;
        let took = t0.elapsed();
        p.open = (p.open || first) && !last_end;
        p.rolled_back |= last_end;
        conn.history
            .lock()
            .expect("history lock")
            .finish_statement();
        match res {
            Ok((affected, first_row)) => {
                p.ok_statements += 1;
                tally.statement_ok(s, stmt.modifies, affected, took);
                for (col, v) in first_row {
                    state.results.insert((s, col), v);
                }
                // Only a later statement of the unit can read what this one was sent.
                if at + 1 < stmts.len() {
                    state.sent.push((s, values));
                }
            }
            Err(f) => {
                tally.fail(&f.code, &f.text, Some(s));
                if stmt.modifies {
                    stats.borrow_mut().counters.writes_failed += 1;
                }
                if p.rolled_back {
                    stats.borrow_mut().counters.rollbacks += 1;
                }
                return end(conn, stats, f.lost, p.open).await;
            }
        }
        if think > 0.0 {
            let (was_cut, stopped) = pause(shared, think, pauses_until).await;
            p.cut |= was_cut;
            if stopped {
                p.interrupted = true;
                break;
            }
        }
    }
    finish_unit(conn, shared, &tally, tx, autocommit, &p, intended).await
}

/// How far a unit got: whether its transaction is still open on the
/// server (a failure's ROLLBACK is needed) or was rolled back with its
/// last statement, whether a pause was cut or a signal stopped it, and
/// how many statements succeeded.
#[derive(Default)]
struct Progress {
    open: bool,
    rolled_back: bool,
    cut: bool,
    interrupted: bool,
    ok_statements: u64,
}

/// Ends a unit whose statements all ran: COMMIT (or ROLLBACK: an
/// interrupted unit never commits its half) unless it is over already,
/// and counts how it ended. `started` is its intended start.
async fn finish_unit(
    conn: &mut ClientConn,
    shared: &Shared,
    tally: &Tally<'_>,
    tx: Option<&super::workload::Transaction>,
    autocommit: bool,
    p: &Progress,
    started: Instant,
) -> Outcome {
    let finish = if shared.commit && !p.interrupted && tx.is_none_or(|t| !t.rollback) {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let res = if autocommit || p.rolled_back && !p.open {
        Ok(())
    } else {
        tally.stats.borrow_mut().counters.planck_round_trips += 1;
        end_transaction(conn, finish).await
    };
    conn.history.lock().expect("history lock").end();
    match res {
        Ok(()) => {
            let counted = tally.record && !p.cut && !p.interrupted;
            tally.unit_ok(
                autocommit,
                finish == "COMMIT",
                p.ok_statements,
                counted,
                started,
            );
            Outcome::Ok
        }
        Err(f) => {
            tally.fail(&f.code, &f.text, None);
            if f.lost {
                Outcome::Lost
            } else {
                Outcome::Failed
            }
        }
    }
}

/// Notes in the connection's history that statement `s` starts, with its
/// bound values when it writes: they name the row a blocker holds.
fn note_start(
    conn: &ClientConn,
    s: usize,
    stmt: &super::workload::Statement,
    values: &[TextParam<'_>],
) {
    let params = if stmt.writes {
        values
            .iter()
            .map(|v| v.0.as_deref().map(str::to_string))
            .collect()
    } else {
        Vec::new()
    };
    conn.history
        .lock()
        .expect("history lock")
        .start(s, &stmt.locks, params);
}

/// Whether `sql` is a COPY (its reply does not end with its Sync).
fn is_copy(sql: &str) -> bool {
    sql.trim_start().to_ascii_lowercase().starts_with("copy")
}

/// What a unit runs with, from its transaction (or its lone statement):
/// isolation, role, settings, which settings are the transaction's own,
/// the pause between statements, and the transaction itself.
struct UnitTraits<'a> {
    isolation: Option<String>,
    role: Option<String>,
    settings: Vec<(String, String)>,
    local_names: &'a [String],
    think: f64,
    tx: Option<&'a super::workload::Transaction>,
}

impl<'a> UnitTraits<'a> {
    /// The traits of `unit` in `w`.
    fn of(w: &'a Workload, unit: Unit) -> UnitTraits<'a> {
        match unit {
            Unit::Transaction(t) => {
                let t = &w.transactions[t];
                let role = t
                    .role
                    .clone()
                    .or_else(|| w.statements[t.statements[0]].role.clone());
                UnitTraits {
                    isolation: t.isolation.clone(),
                    role,
                    settings: t.settings.clone(),
                    local_names: t.local_settings.as_slice(),
                    think: t.think_ms,
                    tx: Some(t),
                }
            }
            Unit::Lone(s) => UnitTraits {
                isolation: None,
                role: w.statements[s].role.clone(),
                settings: Vec::new(),
                local_names: &[][..],
                think: 0.0,
                tx: None,
            },
        }
    }
}

/// Where a unit's outcomes are counted: the worker's stats, whether this
/// execution records (past the warm-up), and the unit.
struct Tally<'s> {
    stats: &'s RefCell<WorkerStats>,
    record: bool,
    unit: Unit,
}

impl Tally<'_> {
    /// Counts a failure, and its error by unit, statement and transaction.
    fn fail(&self, code: &str, text: &str, stmt: Option<usize>) {
        let mut stats = self.stats.borrow_mut();
        stats.counters.failed += 1;
        if self.record {
            add_error(&mut stats.units.errors, code, text);
            if let Some(s) = stmt {
                add_error(
                    &mut stats.statements.entry(s).or_default().errors,
                    code,
                    text,
                );
            }
            if let Unit::Transaction(t) = self.unit {
                add_error(
                    &mut stats.transactions.entry(t).or_default().errors,
                    code,
                    text,
                );
            }
        }
    }

    /// Counts a statement that succeeded: the rows it wrote and its latency.
    fn statement_ok(&self, s: usize, modifies: bool, affected: u64, took: Duration) {
        let mut stats = self.stats.borrow_mut();
        if modifies {
            stats.counters.rows_written += affected;
        }
        if self.record {
            stats.statements.entry(s).or_default().latency.record(took);
        }
    }

    /// Counts a unit that ended well: its COMMIT or ROLLBACK, its
    /// statements, and (when `counted`) its latency since `started`.
    fn unit_ok(
        &self,
        autocommit: bool,
        committed: bool,
        ok_statements: u64,
        counted: bool,
        started: Instant,
    ) {
        let mut stats = self.stats.borrow_mut();
        if autocommit {
            // No transaction of planck's to count.
        } else if committed {
            stats.counters.commits += 1;
        } else {
            stats.counters.rollbacks += 1;
        }
        stats.counters.succeeded += 1;
        if self.record {
            stats.counters.statements_ok += ok_statements;
        }
        if counted {
            stats.units.latency.record(started.elapsed());
            if let Unit::Transaction(t) = self.unit {
                stats
                    .transactions
                    .entry(t)
                    .or_default()
                    .latency
                    .record(started.elapsed());
            }
        }
    }
}

/// What one execution of a unit drew and saw: the row sampled per table,
/// its tenant and role, the first rows its statements returned, and what
/// its earlier statements were sent (for `$n` shared binds).
#[derive(Default)]
struct UnitState<'a> {
    rows: Draws<'a>,
    chosen: Option<String>,
    role: Option<String>,
    results: HashMap<(usize, String), Option<String>>,
    sent: Vec<(usize, Vec<TextParam<'a>>)>,
}

impl<'a> UnitState<'a> {
    /// The values statement `s` is sent: its binds' (drawn rows, earlier
    /// results, literal values), fresh keys, and else its types' defaults.
    fn statement_values(
        &mut self,
        shared: &'a Shared,
        s: usize,
        tx: Option<&'a super::workload::Transaction>,
        rng: &mut Rng,
    ) -> Vec<TextParam<'a>> {
        let w = &shared.workload;
        let stmt = &w.statements[s];
        let chosen = self.chosen.as_deref();
        let rows = &mut self.rows;
        // A parameter no bind feeds, or whose source has nothing this time
        // (an empty table), keeps the value of its type.
        let mut values: Vec<TextParam> = shared.defaults[s]
            .iter()
            .map(|d| TextParam(d.as_deref().map(Cow::Borrowed)))
            .collect();
        let own = tx.map(|t| t.bind.as_slice()).unwrap_or(&[]);
        for b in stmt
            .auto_bind
            .iter()
            .chain(own.iter().filter(|b| b.statement == stmt.id))
        {
            let Some(slot) = values.get_mut(b.param as usize - 1) else {
                continue;
            };
            let bound: Option<Option<Cow<str>>> = match &b.source {
                BindSource::Value(v) => Some(Some(Cow::Borrowed(v.as_str()))),
                BindSource::Column { table, column } => shared
                    .pools
                    .get(table)
                    .filter(|p| !p.rows.is_empty())
                    .and_then(|p| {
                        let r = rows.get_or_draw(table, || p.draw(chosen, rng));
                        let c = p.columns.iter().position(|c| c == column)?;
                        Some(p.rows[r][c].as_deref().map(Cow::Borrowed))
                    }),
                BindSource::Result { statement, column } => {
                    let from = w.statements.iter().position(|x| &x.id == statement);
                    match (from, column.strip_prefix('$').map(str::parse::<usize>)) {
                        (Some(f), Some(Ok(n))) => self
                            .sent
                            .iter()
                            .rev()
                            .find(|(x, _)| *x == f)
                            .and_then(|(_, v)| v.get(n.checked_sub(1)?))
                            .map(|v| v.0.clone()),
                        (Some(f), _) => self
                            .results
                            .get(&(f, column.clone()))
                            .cloned()
                            .map(|v| v.map(Cow::Owned)),
                        (None, _) => None,
                    }
                }
            };
            if let Some(v) = bound {
                slot.0 = v;
            }
        }
        for (p, slot) in values.iter_mut().enumerate() {
            if shared.fresh.is_empty() {
                break;
            }
            if let Some(kind) = shared.fresh.get(&(s, p as u32 + 1)) {
                let n = shared.fresh_next.fetch_add(1, Ordering::Relaxed);
                slot.0 = Some(Cow::Owned(fresh::value(kind, n, rng)));
            }
        }
        values
    }
}

/// A unit's settings split into the transaction's (`local`, set with each
/// transaction) and the session's (set on the connection when they
/// change); draws the unit's tenant and its role into `state`.
fn unit_settings<'a>(
    shared: &'a Shared,
    conn: &ClientConn,
    unit: Unit,
    stmts: &[usize],
    traits: &UnitTraits<'a>,
    state: &mut UnitState<'a>,
    rng: &mut Rng,
) -> (SettingList, SettingList) {
    let w = &shared.workload;
    // Tenant mode: the tenant of this execution, and who it runs as.
    let scoped = shared.tenant.as_ref().filter(|t| t.scopes(w, unit));
    state.chosen = scoped.map(|t| match t.mode {
        TenantMode::Heavy => t.id.clone(),
        // The first tenant-scoped table the unit binds from draws the
        // tenant, with the data's skew; the others follow it.
        TenantMode::Spread => first_tenant_row(shared, stmts, traits.tx, &mut state.rows, rng)
            .unwrap_or_else(|| t.id.clone()),
    });
    let ctx = match (scoped, &state.chosen) {
        (Some(t), Some(id)) => t.context(id, &traits.settings),
        _ => TenantContext {
            role: traits.role.clone(),
            settings: traits
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), crate::session::SettingValue::Text(v.clone())))
                .collect(),
        },
    };
    // As the application ran (issue 32): the role and the session-level
    // settings are the connection's, set when they change (once per
    // connection); the transaction-level ones (and the tenant's, drawn per
    // execution) are set with each transaction.
    let tenant_setting = scoped.map(|t| t.setting.as_str());
    let (local, session): (SettingList, SettingList) = ctx
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), v.as_text()))
        .partition(|(k, _)| {
            tenant_setting.is_some_and(|t| t.eq_ignore_ascii_case(k))
                || traits.local_names.iter().any(|n| n.eq_ignore_ascii_case(k))
        });
    // A lone statement records no settings: it runs in the session as the
    // connection has it.
    let session = match unit {
        Unit::Lone(_) if session.is_empty() => conn.session.clone(),
        _ => session,
    };
    state.role = ctx.role;
    (local, session)
}

/// Settings by name, with their values as text.
type SettingList = Vec<(String, String)>;

/// Statement `s` prepared on the connection's tokio-postgres path (on
/// first use), or `None` when it runs on the lean path.
async fn prepared_for(
    conn: &mut ClientConn,
    s: usize,
    sql: &str,
    lean: bool,
    stats: &RefCell<WorkerStats>,
) -> std::result::Result<Option<Prepared>, tokio_postgres::Error> {
    Ok(match conn.prepared.get(s).and_then(Option::as_ref) {
        _ if lean => None,
        Some(p) => Some(p.clone()),
        None => {
            let p = prepare(&conn.client, sql, stats).await?;
            if conn.prepared.len() <= s {
                conn.prepared.resize(s + 1, None);
            }
            conn.prepared[s] = Some(p.clone());
            Some(p)
        }
    })
}

/// Sends statement `s` with its `frame` (BEGIN and settings before it,
/// ROLLBACK after it) in one round trip: prepared on tokio-postgres, or
/// on the lean path: rows affected and the first row kept.
async fn send(
    conn: &mut ClientConn,
    prepared: Option<&Prepared>,
    frame: &Frame<'_>,
    shared: &Shared,
    s: usize,
    values: &[TextParam<'_>],
) -> std::result::Result<(u64, Vec<(String, Option<String>)>), Failed> {
    match (&mut conn.lean, prepared) {
        (_, Some(p)) => {
            let (b, r, e) = tokio::join!(
                async {
                    match frame.begin {
                        Some(b) => tenant::begin(&conn.client, b, frame.settings).await,
                        None => Ok(()),
                    }
                },
                execute(&conn.client, p, values, shared.returns[s]),
                async {
                    match frame.end {
                        Some(e) => conn.client.batch_execute(e).await,
                        None => Ok(()),
                    }
                }
            );
            b.and(r)
                .and_then(|r| e.map(|()| r))
                .map_err(|e| Failed::of(&e))
        }
        (Some(l), None) => l
            .execute_framed(
                s,
                &shared.workload.statements[s].sql,
                values.iter().map(|v| v.0.as_deref()),
                frame,
            )
            .await
            .map(|n| (n, Vec::new()))
            .map_err(Failed::lean),
        (None, None) => unreachable!("a lean execution without a lean path"),
    }
}

/// Pauses `think` ms between statements, in slices so that a signal ends
/// it within one, and never past `pauses_until`: whether the pause was cut
/// there, and whether a signal stopped it.
async fn pause(shared: &Shared, think: f64, pauses_until: Instant) -> (bool, bool) {
    let wake = Instant::now() + Duration::from_secs_f64(think / 1000.0);
    let cut = wake > pauses_until;
    let end = wake.min(pauses_until);
    while Instant::now() < end && !shared.stop.load(Ordering::Relaxed) {
        tokio::time::sleep_until(end.min(Instant::now() + PAUSE_SLICE).into()).await;
    }
    (cut, shared.stop.load(Ordering::Relaxed))
}

/// Ends the unit's transaction with `finish` (COMMIT or ROLLBACK).
async fn end_transaction(conn: &mut ClientConn, finish: &str) -> std::result::Result<(), Failed> {
    match &mut conn.lean {
        Some(l) => l.simple(finish).await.map_err(Failed::lean),
        None => conn
            .client
            .batch_execute(finish)
            .await
            .map_err(|e| Failed::of(&e)),
    }
}

/// The row drawn from each table's pool in one execution of a unit (its
/// statements bind one row per table). A unit binds from a few tables: the
/// first four are kept inline, so an execution allocates nothing for them.
#[derive(Default)]
struct Draws<'a> {
    inline: [(&'a str, usize); 4],
    len: usize,
    more: Vec<(&'a str, usize)>,
}

impl<'a> Draws<'a> {
    /// The row drawn from `table` in this execution, drawn now when none is.
    fn get_or_draw(&mut self, table: &'a str, draw: impl FnOnce() -> usize) -> usize {
        if let Some((_, r)) = self.inline[..self.len]
            .iter()
            .chain(&self.more)
            .find(|(t, _)| *t == table)
        {
            return *r;
        }
        let r = draw();
        if self.len < self.inline.len() {
            self.inline[self.len] = (table, r);
            self.len += 1;
        } else {
            self.more.push((table, r));
        }
        r
    }
}

/// `spread`: draws the row of the first tenant-scoped table the unit binds
/// from (kept in `rows` for its binds) and returns that row's tenant.
fn first_tenant_row<'a>(
    shared: &'a Shared,
    stmts: &[usize],
    tx: Option<&'a super::workload::Transaction>,
    rows: &mut Draws<'a>,
    rng: &mut Rng,
) -> Option<String> {
    let w = &shared.workload;
    for &s in stmts {
        let stmt = &w.statements[s];
        let own = tx.map(|t| t.bind.as_slice()).unwrap_or(&[]);
        for b in stmt
            .auto_bind
            .iter()
            .chain(own.iter().filter(|b| b.statement == stmt.id))
        {
            if let BindSource::Column { table, .. } = &b.source
                && let Some(p) = shared.pools.get(table)
                && p.tenant.is_some()
                && !p.rows.is_empty()
            {
                let r = rng.below(p.rows.len());
                rows.get_or_draw(table, || r);
                return p.tenant_of(r).map(str::to_string);
            }
        }
    }
    None
}

/// Prepares a statement on the tokio-postgres path: a round trip of planck's own.
async fn prepare(
    client: &Client,
    sql: &str,
    stats: &RefCell<WorkerStats>,
) -> std::result::Result<Prepared, tokio_postgres::Error> {
    stats.borrow_mut().counters.planck_round_trips += 1;
    client.prepare(sql).await
}

/// Ends a failed unit: ROLLBACK when its transaction is `open`, unless
/// the connection is gone.
async fn end(
    conn: &mut ClientConn,
    stats: &RefCell<WorkerStats>,
    lost: bool,
    open: bool,
) -> Outcome {
    let outcome = if lost || conn.client.is_closed() {
        Outcome::Lost
    } else if !open {
        Outcome::Failed
    } else {
        stats.borrow_mut().counters.planck_round_trips += 1;
        if end_transaction(conn, "ROLLBACK").await.is_ok() {
            stats.borrow_mut().counters.rollbacks += 1;
            Outcome::Failed
        } else {
            Outcome::Lost
        }
    };
    // The unit ends in the history once the server ended its transaction:
    // a failed one holds its locks until its ROLLBACK returns.
    conn.history.lock().expect("history lock").end();
    outcome
}

/// Executes a prepared statement: rows affected, and, when `keep`, the
/// first row's columns as text (for `result` binds). Without `keep` the
/// rows are counted, never built (`execute_raw` skips their data).
async fn execute(
    client: &Client,
    prepared: &Prepared,
    values: &[TextParam<'_>],
    keep: bool,
) -> Result<(u64, Vec<(String, Option<String>)>), tokio_postgres::Error> {
    if !keep {
        return Ok((
            client.execute_raw(prepared, values.iter()).await?,
            Vec::new(),
        ));
    }
    let stream = client.query_raw(prepared, values.iter()).await?;
    pin_mut!(stream);
    let mut first = Vec::new();
    let mut n = 0u64;
    while let Some(row) = stream.try_next().await? {
        if n == 0 && keep {
            for (i, c) in row.columns().iter().enumerate() {
                let v = row.try_get::<_, AnyText>(i).map(|a| a.0).unwrap_or(None);
                first.push((c.name().to_string(), v));
            }
        }
        n += 1;
    }
    Ok((stream.rows_affected().unwrap_or(n), first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_count_skips_strings() {
        assert_eq!(param_count("SELECT $1, $12 FROM t WHERE a = '$30'"), 12);
        assert_eq!(param_count("SELECT 1"), 0);
    }

    /// One row per table and execution, however many tables a unit binds.
    #[test]
    fn draws_keep_one_row_per_table() {
        let mut d = Draws::default();
        let names: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(d.get_or_draw(n, || i * 10), i * 10);
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(d.get_or_draw(n, || 999), i * 10, "{n}");
        }
        assert_eq!(d.more.len(), 2);
    }

    #[test]
    fn picker_follows_weights() {
        let units = [(Unit::Lone(0), 9.0), (Unit::Lone(1), 1.0)];
        let p = Picker::new(&units);
        let mut rng = Rng::new(7);
        let n = 20_000;
        let zeros = (0..n).filter(|_| p.pick(&mut rng) == Unit::Lone(0)).count();
        let share = zeros as f64 / n as f64;
        assert!((share - 0.9).abs() < 0.02, "{share}");
    }
}
