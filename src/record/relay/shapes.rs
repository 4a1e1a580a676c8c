//! What the relay keeps of a run: each distinct statement text once, and
//! transactions as shapes (which statements, in which order, under which
//! role and settings) with counts, never a log of every call. Memory grows
//! with the number of distinct texts and shapes, both capped.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// At most this many distinct statement texts; more are counted, not kept.
pub const MAX_TEXTS: usize = 50_000;
/// At most this many distinct shapes in memory.
pub const MAX_SHAPES: usize = 20_000;
/// Think-time samples kept per shape (the first ones).
const MAX_SAMPLES: usize = 256;
/// Statements of one transaction whose values are kept for bindings.
pub const MAX_BOUND_ITEMS: usize = 64;
/// A transaction longer than this (in runs of one statement) is cut.
pub const MAX_RUNS: usize = 20_000;
/// The distinct reasons kept for refused startup packets: a client that
/// sends garbage in a loop must not grow the capture.
pub const MAX_STARTUP_REASONS: usize = 8;

/// Why the relay refused a connection, as [`Capture::refused`] counts it:
/// a direct TLS handshake, a client that left when told there is no TLS,
/// a server the relay could not reach.
pub const REFUSED_DIRECT_TLS: &str = "sslnegotiation=direct";
pub const REFUSED_TLS: &str = "sslmode";
pub const REFUSED_UPSTREAM: &str = "server";
/// Every reason, in the order the relay's own process numbers them.
pub const REFUSALS: [&str; 3] = [REFUSED_DIRECT_TLS, REFUSED_TLS, REFUSED_UPSTREAM];

/// One distinct text, normalized, as a role ran it in a database.
#[derive(Debug, Clone)]
pub struct Text {
    pub database: String,
    pub role: String,
    /// Literals replaced with `$n`.
    pub text: String,
    /// One raw text, in memory only, for `EXPLAIN` to compute the
    /// server's queryid after the run (literals make a different queryid
    /// than parameters). Never written, never logged.
    pub sample: String,
    /// Whether the raw text has `$n` parameters of its own (extended protocol).
    pub params: u32,
    pub calls: u64,
    /// The settings in effect when the sample ran, with their values as
    /// set (a tenant's id too), in memory only like the sample: a policy
    /// reads its tenant setting when the statement is planned, and
    /// search_path decides which tables its names are.
    pub settings: Vec<(String, String)>,
}

/// A setting in effect during a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Setting {
    pub name: String,
    pub value: String,
    /// Set inside the transaction (`SET LOCAL`, `set_config(.., true)`),
    /// else on the session (a pool's checkout).
    pub local: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Commit,
    Rollback,
}

/// What identifies a shape: two transactions with equal keys merge.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShapeKey {
    pub database: String,
    pub role: String,
    pub isolation: Option<String>,
    pub settings: Vec<Setting>,
    pub outcome: Outcome,
    /// Runs of one text (index into the texts), the repeating unit.
    pub unit: Vec<(u32, u32)>,
    /// Times the unit repeats.
    pub repeat: u32,
}

/// A binding seen in every call of a shape: the value bound to `param` of
/// item `item` is the one item `from_item` had for `from_param`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeenBind {
    pub item: usize,
    pub param: u32,
    pub from_item: usize,
    pub from_param: u32,
}

#[derive(Debug, Clone, Default)]
pub struct ShapeStats {
    pub calls: u64,
    /// Median pause per call, in ms (the first calls).
    pub think: Vec<f64>,
    /// Bindings that held in every call so far.
    pub binds: Option<Vec<SeenBind>>,
    pub longest: Duration,
}

/// A closed transaction, from a connection.
#[derive(Debug, Clone)]
pub struct Closed {
    pub key: ShapeKey,
    pub think_ms: f64,
    pub binds: Vec<SeenBind>,
    pub duration: Duration,
    pub statements: usize,
    /// The first statement, for the hotspot list.
    pub opener: Option<u32>,
    /// A migration's transaction ([`super::text::migration_work`]).
    pub migration: bool,
}

/// Everything the relay saw.
#[derive(Debug, Default)]
pub struct Capture {
    pub texts: Vec<Text>,
    /// Texts by the hash of (database, role, text): a statement the relay
    /// saw before is found without building a key.
    index: HashMap<u64, Vec<u32>>,
    /// Texts not kept because [`MAX_TEXTS`] was reached (calls).
    pub texts_dropped: u64,
    pub shapes: HashMap<ShapeKey, ShapeStats>,
    pub shapes_dropped: u64,
    pub connections: u64,
    /// Connections whose capture is incomplete (a malformed message, a cut).
    pub incomplete: u64,
    pub transactions: u64,
    /// Autocommit statements (no transaction of their own in the file).
    pub lone: u64,
    pub longest_time: Option<(Duration, usize)>,
    pub longest_statements: Option<(usize, Duration)>,
    /// Statements that opened a transaction open more than 100 ms.
    pub slow_openers: HashMap<u32, u64>,
    pub databases: BTreeMap<String, u64>,
    /// Clients that asked for TLS the relay cannot give, by what they asked.
    pub refused: BTreeMap<&'static str, u64>,
    /// Startup packets the relay refused (issue 31: another protocol, a
    /// malformed packet), counted by reason; reasons past
    /// [`MAX_STARTUP_REASONS`] are counted in `startups_refused` only.
    pub startup_reasons: BTreeMap<String, u64>,
    pub startups_refused: u64,
    /// Connections left open by the command, closed by the relay.
    pub left_open: u64,
    /// How each text was sent and the shapes of its values, by text.
    pub evidence: HashMap<u32, super::evidence::Evidence>,
    analyses: HashMap<u32, std::sync::Arc<super::evidence::Analysis>>,
    /// The literals columns were compared with.
    pub literals: super::evidence::Literals,
    /// Migrations' transactions (issue 13, 6): counted, never written.
    pub migration_transactions: u64,
    /// Migrations' autocommit statements (issue 47, 5): counted in `lone`.
    pub migration_lone: u64,
    /// Calls of each text a migration ran: inside migrations' transactions,
    /// or in a session's build window before the migration was recorded.
    migration_calls: HashMap<u32, u64>,
}

impl Capture {
    /// A connection refused at its startup packet, for the run's warnings.
    pub fn refuse_startup(&mut self, reason: &str) {
        self.startups_refused += 1;
        if let Some(n) = self.startup_reasons.get_mut(reason) {
            *n += 1;
        } else if self.startup_reasons.len() < MAX_STARTUP_REASONS {
            self.startup_reasons.insert(reason.to_string(), 1);
        }
    }

    /// The index of a text, added when new (`None` past [`MAX_TEXTS`]).
    pub fn text(
        &mut self,
        database: &str,
        role: &str,
        text: &str,
        sample: &str,
        params: u32,
    ) -> Option<u32> {
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (database, role, text).hash(&mut h);
            h.finish()
        };
        let same = self.index.get(&hash).and_then(|ids| {
            ids.iter().copied().find(|&i| {
                let t = &self.texts[i as usize];
                t.text == text && t.role == role && t.database == database
            })
        });
        if let Some(i) = same {
            self.texts[i as usize].calls += 1;
            return Some(i);
        }
        if self.texts.len() >= MAX_TEXTS {
            self.texts_dropped += 1;
            return None;
        }
        let i = self.texts.len() as u32;
        self.texts.push(Text {
            database: database.to_string(),
            role: role.to_string(),
            text: text.to_string(),
            sample: sample.to_string(),
            params,
            calls: 1,
            settings: Vec::new(),
        });
        self.index.entry(hash).or_default().push(i);
        Some(i)
    }

    pub fn close(&mut self, c: Closed) {
        self.transactions += 1;
        // A migration's transaction is no workload: its calls are counted
        // (a text run only there is left out of the recording) and its
        // shape, its length and its opener are not the application's.
        if c.migration {
            self.migration_transactions += 1;
            for (id, n) in &c.key.unit {
                *self.migration_calls.entry(*id).or_default() +=
                    u64::from(*n) * u64::from(c.key.repeat);
            }
            return;
        }
        if self.longest_time.is_none_or(|(d, _)| c.duration > d) {
            self.longest_time = Some((c.duration, c.statements));
        }
        if self
            .longest_statements
            .is_none_or(|(n, _)| c.statements > n)
        {
            self.longest_statements = Some((c.statements, c.duration));
        }
        if c.duration > Duration::from_millis(100)
            && let Some(o) = c.opener
        {
            *self.slow_openers.entry(o).or_default() += 1;
        }
        if c.key.unit.is_empty() {
            return;
        }
        if !self.shapes.contains_key(&c.key) && self.shapes.len() >= MAX_SHAPES {
            self.shapes_dropped += 1;
            return;
        }
        let s = self.shapes.entry(c.key).or_default();
        s.calls += 1;
        if s.think.len() < MAX_SAMPLES {
            s.think.push(c.think_ms);
        }
        s.longest = s.longest.max(c.duration);
        s.binds = Some(match s.binds.take() {
            None => c.binds,
            Some(old) => old.into_iter().filter(|b| c.binds.contains(b)).collect(),
        });
    }

    /// `n` autocommit calls of text `id` that a migration ran (a session's
    /// build window, see `session`): counted in `lone` when they ran.
    pub fn migration_lone(&mut self, id: u32, n: u64) {
        self.migration_lone += n;
        *self.migration_calls.entry(id).or_default() += n;
    }

    /// Whether every call of text `id` was a migration's.
    pub fn migration_only(&self, id: u32) -> bool {
        let calls = self.texts.get(id as usize).map_or(0, |t| t.calls);
        calls > 0 && self.migration_calls.get(&id).is_some_and(|&m| m >= calls)
    }

    /// Reads one execution of text `id` for its evidence (its text is
    /// parsed once); the literals go to `literals` when given (the open
    /// transaction's), else to the run's.
    pub fn observe(
        &mut self,
        id: u32,
        prepared: bool,
        value: &dyn Fn(u32) -> Option<String>,
        literals: Option<&mut super::evidence::Literals>,
    ) {
        let Some(t) = self.texts.get(id as usize) else {
            return;
        };
        let a = self
            .analyses
            .entry(id)
            .or_insert_with(|| std::sync::Arc::new(super::evidence::analyze(&t.text)))
            .clone();
        let ev = self.evidence.entry(id).or_default();
        let literals = match literals {
            Some(l) => l,
            None => &mut self.literals,
        };
        super::evidence::observe(&a, prepared, value, ev, literals);
    }

    /// Drops the raw samples: after matching nothing needs them.
    pub fn forget_samples(&mut self) {
        for t in &mut self.texts {
            t.sample = String::new();
            t.settings = Vec::new();
        }
    }
}

/// Runs of one statement, folded into the smallest unit that repeats to
/// make the whole: `[A, B, A, B]` is `[A, B]` twice, `[A x 500]` is `[A]`
/// 500 times.
pub fn fold(runs: &[(u32, u32)]) -> (Vec<(u32, u32)>, u32) {
    if let [(id, n)] = runs {
        return (vec![(*id, 1)], *n);
    }
    let len = runs.len();
    for p in 1..=len / 2 {
        if len.is_multiple_of(p) && (p..len).all(|i| runs[i] == runs[i - p]) {
            return (runs[..p].to_vec(), (len / p) as u32);
        }
    }
    (runs.to_vec(), 1)
}

/// Milliseconds quantised to the nearest power of two (0 below 1 ms), so
/// a re-recording writes the same number.
pub fn quantise_ms(ms: f64) -> f64 {
    if !ms.is_finite() || ms < 1.0 {
        return 0.0;
    }
    let low = ms.log2().floor();
    let (a, b) = (2f64.powf(low), 2f64.powf(low + 1.0));
    if ms - a <= b - ms { a } else { b }
}

pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_fold_into_a_unit_and_a_count() {
        assert_eq!(fold(&[(3, 500)]), (vec![(3, 1)], 500));
        assert_eq!(
            fold(&[(1, 1), (2, 1), (1, 1), (2, 1)]),
            (vec![(1, 1), (2, 1)], 2)
        );
        assert_eq!(
            fold(&[(1, 1), (2, 3), (4, 1)]),
            (vec![(1, 1), (2, 3), (4, 1)], 1)
        );
    }

    #[test]
    fn think_times_are_powers_of_two() {
        assert_eq!(quantise_ms(0.4), 0.0);
        assert_eq!(quantise_ms(1.0), 1.0);
        assert_eq!(quantise_ms(2.9), 2.0);
        assert_eq!(quantise_ms(3.1), 4.0);
        assert_eq!(quantise_ms(100.0), 128.0);
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
    }

    #[test]
    fn shapes_merge_and_keep_only_bindings_every_call_had() {
        let mut c = Capture::default();
        let a = c.text("d", "r", "select $1", "select 1", 0).unwrap();
        assert_eq!(c.text("d", "r", "select $1", "select 2", 0), Some(a));
        assert_eq!(c.texts[0].calls, 2);
        let key = ShapeKey {
            database: "d".into(),
            role: "r".into(),
            isolation: None,
            settings: vec![],
            outcome: Outcome::Commit,
            unit: vec![(a, 1)],
            repeat: 1,
        };
        let b1 = SeenBind {
            item: 1,
            param: 1,
            from_item: 0,
            from_param: 2,
        };
        let b2 = SeenBind { param: 2, ..b1 };
        for (binds, ms) in [(vec![b1, b2], 300u64), (vec![b1], 5)] {
            c.close(Closed {
                key: key.clone(),
                think_ms: 1.0,
                binds,
                duration: Duration::from_millis(ms),
                statements: 1,
                opener: Some(a),
                migration: false,
            });
        }
        let s = &c.shapes[&key];
        assert_eq!(s.calls, 2);
        assert_eq!(s.binds.as_deref(), Some(&[b1][..]));
        assert_eq!(c.transactions, 2);
        assert_eq!(c.slow_openers.get(&a), Some(&1));
        assert_eq!(c.longest_time, Some((Duration::from_millis(300), 1)));
    }
}
