//! `planck replay --format json`: the wire types (`format_version` 1, the
//! schema of the replay issue), owned so that a refactor inside replay
//! cannot change the output by accident and `planck report` reads it
//! without depending on replay. Built by `replay::report::build`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

/// What one step shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scaling {
    Growing,
    Plateau,
    Backwards,
    ClientBound,
}

impl Scaling {
    pub fn as_str(self) -> &'static str {
        match self {
            Scaling::Growing => "growing",
            Scaling::Plateau => "plateau",
            Scaling::Backwards => "backwards",
            Scaling::ClientBound => "client-bound",
        }
    }
}

/// The Universal Scalability Law fitted to a ladder:
/// X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Usl {
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    /// sqrt((1 - sigma) / kappa): where throughput peaks; `None` when kappa is 0.
    pub n_star: Option<f64>,
    pub r2: f64,
}

impl Usl {
    pub fn predict(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub format_version: u32,
    /// `server_version` of the server the replay ran on (`18.4`); empty in
    /// a report written before planck recorded it.
    #[serde(default)]
    pub server_version: String,
    pub percentile_method: String,
    pub steps: Vec<StepJson>,
    pub statements: Vec<StatementJson>,
    pub transactions: Vec<TransactionJson>,
    pub hotspots: Vec<HotspotJson>,
    pub wait_events: Vec<WaitEventJson>,
    pub integrity: IntegrityJson,
    pub client_cpu: Vec<CpuJson>,
    pub verdict: VerdictJson,
    /// The run was stopped (Ctrl-C, SIGTERM): the finished steps only.
    pub interrupted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepJson {
    pub step_index: usize,
    pub concurrency: u32,
    pub throughput_per_s: f64,
    pub statements_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub errors: BTreeMap<String, u64>,
    /// The first error text of each SQLSTATE.
    pub first_errors: BTreeMap<String, String>,
    /// Time waiting for a pooled connection (`--pool`); `None` without a pool.
    pub pool_wait_p95_ms: Option<f64>,
    /// The units' latencies: HdrHistogram V2 + DEFLATE, base64.
    pub histogram: String,
    pub shape: Scaling,
    pub units: u64,
    /// The step's counters, flattened: each at the top of the step's
    /// object, as `reconnects` always was.
    #[serde(flatten)]
    pub counters: Counters,
    /// The open loop's offered rate (`--rate`), units per second.
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    /// Connections the clients shared (`--pool`), when fewer than the clients.
    #[serde(default)]
    pub pool: Option<u32>,
    /// Runs merged into the step (`--repeat`).
    #[serde(default = "one")]
    pub runs: u32,
    /// Lock-wait samples of the step, and the share of them that named both
    /// the waiting and the blocking statement (`None` without any).
    #[serde(default)]
    pub lock_samples: u64,
    #[serde(default)]
    pub lock_samples_attributed_share: Option<f64>,
    /// Samples whose holder is not one of planck's connections (autovacuum,
    /// another application): counted apart, never the workload's hotspot.
    #[serde(default)]
    pub lock_samples_outside: u64,
}

fn one() -> u32 {
    1
}

/// A counter's merge: how two workers' (or two runs') counts make one.
pub trait Counter {
    fn merge(&mut self, other: &Self);
}

impl Counter for u64 {
    fn merge(&mut self, other: &Self) {
        *self += other;
    }
}

/// A count that may not be measured (`None`): the sum of those that were.
impl Counter for Option<u64> {
    fn merge(&mut self, other: &Self) {
        if let Some(o) = other {
            *self = Some(self.unwrap_or(0) + o);
        }
    }
}

/// Declares [`Counters`] and writes its merge once, over every field: a
/// new counter is one field, and no merge can leave it out.
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// Adds `other`'s counts to these (workers at a step's end,
            /// runs of a step under `--repeat`, steps into the run's totals).
            pub fn merge(&mut self, other: &Self) {
                $( Counter::merge(&mut self.$field, &other.$field); )*
            }
        }
    };
}

counters! {
    /// What replay counts, per step: each worker counts its own and the
    /// step adds them ([`Counters::merge`]). The step's JSON carries the
    /// struct flattened into [`StepJson`]; a field marked `serde(skip)` is
    /// counted for the integrity line (whose totals `integrity` carries) and
    /// the verbose log, not shown per step. Adding a metric: a field here,
    /// the line that counts it, and a [`STEP_METRICS`] entry to show it.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Counters {
        /// Connections lost mid-step and opened again.
        pub reconnects: u64,
        /// Units started, warm-up included (the integrity line, and what
        /// `rows_read` is per).
        pub attempted: u64,
        /// Rows the database's tables gave up over the step, warm-up
        /// included, as the server counts them: the delta of
        /// pg_stat_user_tables' `seq_tup_read` plus pg_stat_user_indexes'
        /// `idx_tup_read`, read once the step's connections have closed.
        /// Database-wide (another client's reads count too). `None` before
        /// PostgreSQL 15, whose statistics collector lags the step's end.
        pub rows_read: Option<u64>,
        #[serde(skip)]
        pub succeeded: u64,
        #[serde(skip)]
        pub failed: u64,
        /// Statements that succeeded in the measured window.
        #[serde(skip)]
        pub statements_ok: u64,
        #[serde(skip)]
        pub rollbacks: u64,
        #[serde(skip)]
        pub commits: u64,
        /// Rows the server reported for write statements, warm-up included.
        #[serde(skip)]
        pub rows_written: u64,
        /// Write statements that failed: the rows they changed before their
        /// error count on the server, never in `rows_written`.
        #[serde(skip)]
        pub writes_failed: u64,
        /// Round trips that carried a statement of the workload.
        #[serde(skip)]
        pub workload_round_trips: u64,
        /// Round trips of planck's alone: the role and session settings, a
        /// PREPARE, a COMMIT or ROLLBACK that could not go with a statement.
        #[serde(skip)]
        pub planck_round_trips: u64,
    }
}

/// A step metric every renderer that shows steps (the table and markdown
/// of `planck replay`, the review's markdown and HTML) adds as a column
/// after its latencies: its header and its cell, from the step's JSON.
pub struct StepMetric {
    pub header: &'static str,
    pub cell: fn(&StepJson) -> String,
}

/// The step metrics shown, in column order (the JSON carries every
/// counter not skipped, shown here or not).
pub const STEP_METRICS: &[StepMetric] = &[StepMetric {
    // What a unit costs the server, whatever its latency: a scan that
    // grows with the table shows here before it shows in p95.
    header: "rows read/unit",
    cell: |s| match s.counters.rows_read {
        Some(rows) => format!("{:.1}", rows as f64 / s.counters.attempted.max(1) as f64),
        None => "-".into(),
    },
}];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementJson {
    pub id: String,
    pub query: String,
    pub step_index: usize,
    pub calls: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub errors: BTreeMap<String, u64>,
    pub first_errors: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransactionJson {
    pub id: String,
    pub name: String,
    pub statements: Vec<String>,
    pub queries: Vec<String>,
    pub step_index: usize,
    pub calls: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub errors: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotspotJson {
    pub step_index: usize,
    pub lock_type: String,
    pub relation: Option<String>,
    /// The row's key (`id = 1`), else `ctid (page,tuple)` and the values the
    /// blocker bound, else, when the server did not show the row, a phrase
    /// starting `a row` (`a row of items (the server does not show which)`,
    /// the table taken from the blocking statement when it writes only one).
    pub row: String,
    pub waiting_statement: Option<String>,
    pub waiting_statement_id: Option<String>,
    pub blocking_statement: Option<String>,
    pub blocking_statement_id: Option<String>,
    /// `running <statement>`, `waiting on a lock in <statement>`,
    /// `idle in transaction`, or `unknown`.
    pub blocker_state: String,
    /// The blocker's transaction (its name), or the lone statement's id.
    pub transaction: Option<String>,
    pub samples: u64,
    pub wait_seconds: f64,
    pub wait_share: f64,
    /// The holder, when it is not one of planck's connections (`autovacuum
    /// worker`, `client backend 'psql', idle in transaction`): a wait the
    /// workload did not cause, listed after the workload's own.
    #[serde(default)]
    pub outside_workload: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitEventJson {
    pub step_index: usize,
    pub wait_event_type: String,
    pub wait_event: String,
    pub samples: u64,
    pub share: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntegrityJson {
    pub attempted: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Rows planck's write statements reported (warm-up included).
    pub planck_rows_changed: u64,
    /// pg_stat_user_tables n_tup_ins + n_tup_upd + n_tup_del, delta.
    pub server_rows_changed: Option<i64>,
    pub planck_rollbacks: u64,
    pub planck_commits: u64,
    /// pg_stat_database xact_rollback, delta.
    pub server_xact_rollback: Option<i64>,
    pub server_xact_commit: Option<i64>,
    /// Every verified table holds the same row count and checksum as before.
    pub data_unchanged: Option<bool>,
    pub notes: Vec<String>,
    /// Statements skipped as stale (what they name no longer exists here),
    /// with the units that ran them; absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedJson>,
}

/// A statement the run skipped because the server no longer runs it as
/// recorded (a migration since: a table, column, schema or type gone).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkippedJson {
    pub statement_id: String,
    pub query: String,
    /// Where the queries file holds it (`queries/recorded.toml:12`).
    pub location: Option<String>,
    /// The bind (`table.column`) that names what is gone; `None`: the
    /// statement's own text does.
    pub bind: Option<String>,
    pub sqlstate: String,
    /// The server's error.
    pub error: String,
    /// The units skipped with it: its transactions' names, or its own id
    /// when it ran alone.
    pub units: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuJson {
    pub step_index: usize,
    pub planck_cpu_share: f64,
    pub server_cpu_share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictJson {
    pub peak_concurrency: Option<u32>,
    pub shape: Scaling,
    pub usl: Option<Usl>,
    pub text: String,
}

/// Issue 11, the hotspot label: what a hotspot waits on, in words, for
/// the text output, the demo and the reports (never a `?`).
impl HotspotJson {
    /// `the row of accounts id = 1`, `a row of accounts at ctid (0,3)`,
    /// `the table items`, `an advisory lock`; a row lock whose row the
    /// server did not show reads as the `row` field says it.
    pub fn what_is_locked(&self) -> String {
        let row_lock = matches!(self.lock_type.as_str(), "transactionid" | "tuple");
        match (row_lock, self.relation.as_deref()) {
            (true, Some(rel)) if self.row.starts_with("ctid ") => {
                format!("a row of {rel} at {}", self.row)
            }
            (true, Some(_)) if self.row.starts_with("a row") => self.row.clone(),
            (true, Some(rel)) => format!("the row of {rel} {}", self.row),
            (true, None) => self.row.clone(),
            (false, Some(rel)) if self.lock_type == "relation" => format!("the table {rel}"),
            (false, Some(rel)) => format!("the {} lock on {rel}", self.lock_type),
            (false, None) => format!("a lock of type {}", self.lock_type),
        }
    }

    /// [`Self::what_is_locked`] and who holds it: `the row of accounts
    /// id = 1, locked by transaction tx-add-item`.
    pub fn label(&self) -> String {
        let holder = match self.transaction.as_deref() {
            // A lone statement's unit is named by the statement's id.
            Some(t) if self.blocking_statement_id.as_deref() == Some(t) => {
                format!("the transaction of lone statement {t}")
            }
            Some(t) => format!("transaction {t}"),
            None => "a transaction planck did not run".to_string(),
        };
        format!("{}, locked by {holder}", self.what_is_locked())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50, 2: the merge written once adds every counter (a worker's
    /// into the step's, a run's into the step's under `--repeat`, a step's
    /// into the run's totals); a count not measured stays unknown until
    /// one side measured it.
    #[test]
    fn counters_merge_adds_every_field() {
        let one = Counters {
            reconnects: 1,
            attempted: 2,
            rows_read: Some(12),
            succeeded: 3,
            failed: 4,
            statements_ok: 5,
            rollbacks: 6,
            commits: 7,
            rows_written: 8,
            writes_failed: 9,
            workload_round_trips: 10,
            planck_round_trips: 11,
        };
        let mut sum = one.clone();
        sum.merge(&one);
        assert_eq!(
            sum,
            Counters {
                reconnects: 2,
                attempted: 4,
                rows_read: Some(24),
                succeeded: 6,
                failed: 8,
                statements_ok: 10,
                rollbacks: 12,
                commits: 14,
                rows_written: 16,
                writes_failed: 18,
                workload_round_trips: 20,
                planck_round_trips: 22,
            }
        );
        let mut unknown: Option<u64> = None;
        unknown.merge(&None);
        assert_eq!(unknown, None);
        unknown.merge(&Some(3));
        unknown.merge(&None);
        unknown.merge(&Some(4));
        assert_eq!(unknown, Some(7));
    }

    /// The counters the step's JSON carries sit at the top of the step's
    /// object (`reconnects`, as before they were a struct); the skipped ones
    /// are not in it.
    #[test]
    fn counters_are_flattened_into_the_step() {
        let c = Counters {
            reconnects: 3,
            attempted: 9,
            rows_read: Some(90),
            failed: 1,
            ..Default::default()
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v,
            serde_json::json!({ "reconnects": 3, "attempted": 9, "rows_read": 90 })
        );
    }
}
