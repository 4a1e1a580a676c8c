//! What the engine learnt about each statement ([`Explained`], with its
//! [`Status`]), as the checks, the report and the advice read it.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::PgError;
use crate::explain::plan_tree::{Mode, Plan};
use crate::params::binding::Analysis;
use crate::queries::Statement;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Explained,
    Skipped(String),
    /// Planned, but on data that cannot show production's plan (see
    /// [`super::data`]): no finding is drawn from it.
    NotJudged(String),
}

/// Everything planck learnt about one statement.
#[derive(Debug, Clone)]
pub struct Explained {
    pub stmt: Statement,
    /// The text actually planned (repaired, perhaps with typed guesses).
    pub text: String,
    pub repairs: Vec<String>,
    pub analysis: Analysis,
    /// Modes whose findings count for this statement.
    pub judged: Vec<Mode>,
    pub status: Status,
    pub param_types: Vec<String>,
    pub plans: Vec<Plan>,
    /// The server's error when the statement names something that is gone.
    pub stale: Option<PgError>,
    /// Plans that could not be made, and why (the others still count).
    pub notes: Vec<String>,
    /// Parameter types guessed in the fixed order, not read from the
    /// context: findings on this statement are warnings naming them.
    pub guesses: Vec<String>,
}

impl Explained {
    pub fn plans_in(&self, mode: Mode) -> impl Iterator<Item = &Plan> {
        self.plans.iter().filter(move |p| p.mode == mode)
    }
}

/// Indexes used by plans of each kind.
pub fn used_indexes(results: &[Explained]) -> BTreeMap<String, BTreeSet<&'static str>> {
    let mut used: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    for e in results {
        for p in &e.plans {
            for i in p.indexes() {
                used.entry(i).or_default().insert(p.kind.as_str());
            }
        }
    }
    used
}
