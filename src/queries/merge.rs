//! Merging a recording into the queries file: a captured statement finds
//! its entry (by id, else by text and role), and only the facts the run
//! measured change; recorded transactions replace the recorded ones.

use std::collections::HashMap;

use super::QueryFile;
use super::statement::{Statement, text_key};
use super::transaction::Transaction;

/// What merging a capture did to one captured statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeStatus {
    /// New in the file.
    Added,
    /// Already there; its recorded facts (calls, rows, RLS flag, database) changed.
    Updated,
    /// Already there, nothing changed.
    Unchanged,
    /// Matches an entry a person added by hand, which is left as written.
    Manual,
}

impl MergeStatus {
    pub fn name(self) -> &'static str {
        match self {
            MergeStatus::Added => "added",
            MergeStatus::Updated => "updated",
            MergeStatus::Unchanged => "unchanged",
            MergeStatus::Manual => "manual",
        }
    }
}

/// What [`QueryFile::merge`] did.
#[derive(Debug, Clone, Default)]
pub struct Merge {
    /// For each captured statement, in order: its id in the file and what happened.
    pub outcomes: Vec<(String, MergeStatus)>,
    /// Recorded (not manual) entries the run did not send: removed when
    /// pruning, unless a `[[transaction]]` names them.
    pub vanished: Vec<Statement>,
    pub pruned: bool,
}

impl Merge {
    pub fn count(&self, status: MergeStatus) -> usize {
        self.outcomes.iter().filter(|(_, s)| *s == status).count()
    }
}

impl QueryFile {
    /// Merges a capture into the file. A captured statement matches an entry
    /// by id, else by [`text_key`] and role, else by text alone when the entry
    /// was added by hand without a role. A matched entry keeps its id, text,
    /// `ignore` mark and anything a person wrote; only the facts measured by
    /// the run (calls, rows, bypass_rls, database, contexts) are refreshed,
    /// and never on a `manual` entry. Recorded entries the run did not send
    /// are reported in `vanished`, and removed when `prune`; manual entries
    /// and those a `[[transaction]]` names always stay.
    pub fn merge(&mut self, captured: &[Statement], prune: bool) -> Merge {
        let mut by_id: HashMap<String, usize> = HashMap::new();
        let mut by_text: HashMap<(String, Option<String>), usize> = HashMap::new();
        for (i, s) in self.statements.iter().enumerate() {
            by_id.insert(s.id.clone(), i);
            by_text
                .entry((text_key(&s.query), s.role.clone()))
                .or_insert(i);
        }
        let mut matched = vec![false; self.statements.len()];
        let mut merge = Merge::default();
        for c in captured {
            let key = text_key(&c.query);
            let found = by_id
                .get(&c.id)
                .or_else(|| by_text.get(&(key.clone(), c.role.clone())))
                .or_else(|| by_text.get(&(key.clone(), None)))
                .copied()
                .filter(|&i| !matched[i]);
            let Some(i) = found else {
                let mut s = c.clone();
                s.line = None;
                s.manual = false;
                by_id.insert(s.id.clone(), self.statements.len());
                by_text.insert((key, s.role.clone()), self.statements.len());
                matched.push(true);
                merge.outcomes.push((s.id.clone(), MergeStatus::Added));
                self.statements.push(s);
                continue;
            };
            matched[i] = true;
            let e = &mut self.statements[i];
            if e.manual {
                merge.outcomes.push((e.id.clone(), MergeStatus::Manual));
                continue;
            }
            let facts = |e: &Statement| {
                (
                    e.calls,
                    e.rows,
                    e.bypass_rls,
                    e.database.clone(),
                    e.queryid,
                    e.contexts.clone(),
                    e.sent,
                    e.shapes.clone(),
                )
            };
            let before = facts(e);
            e.calls = c.calls;
            e.rows = c.rows;
            e.bypass_rls = c.bypass_rls;
            e.database = c.database.clone();
            e.queryid = c.queryid;
            e.contexts = c.contexts.clone();
            e.sent = c.sent;
            e.shapes = c.shapes.clone();
            let status = if before == facts(e) {
                MergeStatus::Unchanged
            } else {
                MergeStatus::Updated
            };
            merge.outcomes.push((e.id.clone(), status));
        }
        let named: std::collections::HashSet<&str> = self
            .transactions
            .iter()
            .flat_map(|t| t.statements.iter().map(String::as_str))
            .collect();
        let mut keep = Vec::with_capacity(self.statements.len());
        for (s, m) in self.statements.iter().zip(matched) {
            if !m && !s.manual {
                merge.vanished.push(s.clone());
                if prune && !named.contains(s.id.as_str()) {
                    continue;
                }
            }
            keep.push(s.clone());
        }
        self.statements = keep;
        merge.pruned = prune;
        merge
    }
}

impl QueryFile {
    /// Replaces the transactions a recording wrote (`recorded`, not made
    /// `manual`) with `recorded`; hand-written ones stay, and a recorded
    /// one whose id a hand-written one has is left out.
    ///
    /// A re-recorded transaction keeps the pause the file already gives it
    /// when the new one is a neighbouring power of two: a median close to
    /// a rounding boundary would otherwise flip between the two on every
    /// recording of the same run and make the diff noisy.
    pub fn replace_recorded_transactions(&mut self, recorded: Vec<Transaction>) {
        let before: HashMap<String, f64> = self
            .transactions
            .iter()
            .filter(|t| t.recorded && !t.manual)
            .map(|t| (t.id.clone(), t.think_ms))
            .collect();
        self.transactions.retain(|t| !t.recorded || t.manual);
        let taken: std::collections::HashSet<String> =
            self.transactions.iter().map(|t| t.id.clone()).collect();
        self.transactions
            .extend(
                recorded
                    .into_iter()
                    .filter(|t| !taken.contains(&t.id))
                    .map(|mut t| {
                        if let Some(&old) = before.get(&t.id)
                            && neighbouring_pause(old, t.think_ms)
                        {
                            t.think_ms = old;
                        }
                        t
                    }),
            );
    }
}

/// Whether two quantised pauses (0 or a power of two, in ms) are the same
/// or one rounding step apart: a factor of two, or none and at most 2 ms
/// (a pause that short is the client's and the relay's own latency, which
/// a loaded machine stretches: a psql script with no pause measured 0 on
/// one run and 2 ms on the next).
fn neighbouring_pause(a: f64, b: f64) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    lo == hi || (lo == 0.0 && hi <= 2.0) || (lo > 0.0 && hi == 2.0 * lo)
}
