//! A CHECK the solver makes hold row by row, as the workers read it: its
//! satisfiable branches and what each asks of the columns it decides.
//!
//! `seed::check_solve` reads the CHECK into a [`Solved`] when it
//! plans; here each row draws its branch ([`Solved::branch_of`]) and what
//! the branch decides about a column ([`Solved::decide`]), from (seed,
//! constraint, row, attempt) alone; `row::eval` turns a
//! generated value into one the branch admits.

use std::collections::BTreeMap;

use crate::seed::row::attempt::ATTEMPTS;
use crate::seed::row::generate::Val;
use crate::seed::row::rng;

/// What one branch asks of one column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColRule {
    /// Some(true): NULL; Some(false): not NULL.
    pub null: Option<bool>,
    /// The values it may take (empty: any).
    pub set: Vec<Val>,
    /// Values it may not take.
    pub not: Vec<Val>,
    /// Inclusive integer bounds.
    pub range: Option<(i64, i64)>,
    /// Inclusive bounds on a text's length in characters.
    pub len: Option<(usize, usize)>,
    /// The column it equals (`a = b`): an earlier column of the same type,
    /// whose value of the row it takes.
    pub same_as: Option<usize>,
}

/// `num_nonnulls` of `free` (the columns the branch leaves open) in `lo..=hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct Count {
    pub free: Vec<usize>,
    pub lo: usize,
    pub hi: usize,
}

/// One satisfiable branch of the disjunctive normal form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Branch {
    pub rules: BTreeMap<usize, ColRule>,
    pub counts: Vec<Count>,
    /// Some of its atoms are beyond the solver: the server decides them.
    pub opaque: bool,
}

/// A CHECK the solver makes hold, row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    pub name: String,
    /// Draws the branch of a row (with the seed and the row).
    pub key: u64,
    /// The columns it decides (sorted).
    pub cols: Vec<usize>,
    pub branches: Vec<Branch>,
}

impl ColRule {
    /// Whether value `v` passes this rule (a column equality is not judged
    /// here: the column it follows is drawn with the row).
    pub fn admits(&self, v: &Val) -> bool {
        if *v == Val::Null {
            return self.null != Some(false);
        }
        if self.null == Some(true) || self.not.contains(v) {
            return false;
        }
        if !self.set.is_empty() && !self.set.contains(v) {
            return false;
        }
        match v {
            Val::Int(i) => self.range.is_none_or(|(lo, hi)| lo <= *i && *i <= hi),
            Val::Text(t) => self.len.is_none_or(|(lo, hi)| {
                let n = t.chars().count();
                lo <= n && n <= hi
            }),
            _ => true,
        }
    }
}

impl Solved {
    /// The branch of row `row` at the server's attempt `at`: any branch
    /// first, then (from half the attempts on, when a branch the server
    /// decides was refused) one the solver reads whole.
    pub fn branch_of(&self, seed: u64, row: u64, at: u8) -> &Branch {
        self.branch_where(seed, row, at, &|_| true)
    }

    /// [`Solved::branch_of`] among the branches `admits` accepts: those that
    /// admit the row's values of the columns the solver may not change (a
    /// key's sequence; see `ServerChecks::fixed`). When none does, any
    /// branch (the server then refuses the row and names the CHECK).
    pub fn branch_where(
        &self,
        seed: u64,
        row: u64,
        at: u8,
        admits: &dyn Fn(&Branch) -> bool,
    ) -> &Branch {
        let h = rng::mix(rng::mix(seed ^ self.key) ^ row ^ (u64::from(at) << 56));
        let mut pool: Vec<&Branch> = self.branches.iter().filter(|b| admits(b)).collect();
        if pool.is_empty() {
            pool = self.branches.iter().collect();
        }
        let clear: Vec<&Branch> = pool.iter().copied().filter(|b| !b.opaque).collect();
        if at >= ATTEMPTS / 2 && !clear.is_empty() {
            return clear[rng::below(h, clear.len() as u64) as usize];
        }
        pool[rng::below(h, pool.len() as u64) as usize]
    }

    /// What row `row`'s branch decides about column `c`: NULL or not (None:
    /// open), and the column's rule.
    pub fn decide(
        &self,
        seed: u64,
        row: u64,
        at: u8,
        c: usize,
    ) -> (Option<bool>, Option<&ColRule>) {
        self.decide_where(seed, row, at, c, &|_| true)
    }

    /// [`Solved::decide`] with the row's branch drawn among those `admits`
    /// accepts (see [`Solved::branch_where`]).
    pub fn decide_where(
        &self,
        seed: u64,
        row: u64,
        at: u8,
        c: usize,
        admits: &dyn Fn(&Branch) -> bool,
    ) -> (Option<bool>, Option<&ColRule>) {
        let b = self.branch_where(seed, row, at, admits);
        let rule = b.rules.get(&c);
        let mut null = rule.and_then(|r| r.null);
        for (i, k) in b.counts.iter().enumerate() {
            if !k.free.contains(&c) {
                continue;
            }
            let hk = rng::mix(
                rng::mix(seed ^ self.key ^ ((i as u64 + 1) << 40)) ^ row ^ (u64::from(at) << 56),
            );
            let n = k.lo + rng::below(hk, (k.hi - k.lo + 1) as u64) as usize;
            let mut order = k.free.clone();
            order.sort_by_key(|x| rng::mix(hk ^ *x as u64));
            let rank = order.iter().position(|x| *x == c).unwrap_or(0);
            null = Some(rank >= n);
        }
        (null, rule)
    }
}
