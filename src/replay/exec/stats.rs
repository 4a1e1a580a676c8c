//! What a worker thread counts: errors by SQLSTATE and the statements'
//! latencies and counters ([`WorkerStats`]).

use std::collections::HashMap;

use crate::replay::hist::Latency;
use crate::wire::replay::Counters;

/// Errors of one kind: how many, and the first text.
#[derive(Debug, Clone, Default)]
pub struct ErrorCount {
    pub count: u64,
    pub first: String,
}

pub type Errors = HashMap<String, ErrorCount>;

pub fn add_error(errors: &mut Errors, code: &str, text: &str) {
    let e = errors.entry(code.to_string()).or_default();
    if e.count == 0 {
        e.first = text.to_string();
    }
    e.count += 1;
}

pub fn merge_errors(into: &mut Errors, from: &Errors) {
    for (k, v) in from {
        let e = into.entry(k.clone()).or_default();
        if e.count == 0 {
            e.first = v.first.clone();
        }
        e.count += v.count;
    }
}

/// A latency histogram and its errors.
#[derive(Debug, Clone, Default)]
pub struct Timed {
    pub latency: Latency,
    pub errors: Errors,
}

/// What one worker thread gathered over a step (merged at its end): the
/// latencies and errors, the units per second, and the [`Counters`].
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// All units of the step.
    pub units: Timed,
    pub statements: HashMap<usize, Timed>,
    pub transactions: HashMap<usize, Timed>,
    /// Units that succeeded in each second of the measured window.
    pub per_second: Vec<u64>,
    /// Time waiting for a pooled connection (`--pool`), apart from statement time.
    pub pool_wait: Latency,
    pub counters: Counters,
}

impl Timed {
    fn merge(&mut self, o: &Timed) {
        self.latency.merge(&o.latency);
        merge_errors(&mut self.errors, &o.errors);
    }
}

impl WorkerStats {
    pub fn merge(&mut self, o: &WorkerStats) {
        // Every field named: a new one does not compile until it merges.
        let WorkerStats {
            units,
            statements,
            transactions,
            per_second,
            pool_wait,
            counters,
        } = o;
        self.units.merge(units);
        for (k, v) in statements {
            self.statements.entry(*k).or_default().merge(v);
        }
        for (k, v) in transactions {
            self.transactions.entry(*k).or_default().merge(v);
        }
        if self.per_second.len() < per_second.len() {
            self.per_second.resize(per_second.len(), 0);
        }
        for (i, n) in per_second.iter().enumerate() {
            self.per_second[i] += n;
        }
        self.pool_wait.merge(pool_wait);
        self.counters.merge(counters);
    }

    /// Merges a later run of the same step (`--repeat`): its seconds follow
    /// this run's, so the noise estimate sees every second once.
    pub fn append_run(&mut self, o: &WorkerStats, seconds: usize) {
        let mine = std::mem::take(&mut self.per_second);
        self.merge(o);
        let mut per_second = mine;
        per_second.resize(seconds, 0);
        per_second.extend_from_slice(&o.per_second);
        self.per_second = per_second;
    }
}
