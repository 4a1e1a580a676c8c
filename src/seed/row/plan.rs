//! The plan the workers read: how many rows each table gets, which parent
//! row every child row belongs to, and the generator of every column.
//!
//! Rows of a table are laid out in *blocks*, one per tenant (a single block
//! when there is no tenant): tenant `b` owns rows `cum[b]..cum[b + 1]` of every
//! table under the tenant table. A child row's parent is found by arithmetic
//! on these ranges (or, with `per = "parent"`, by a binary search over the
//! per-parent counts), so any row can be generated alone, on any thread,
//! without holding its parents in memory ([`SeedPlan::ctx`]). The planner
//! (`seed::planner`) builds a [`SeedPlan`]; rows are evaluated from it
//! in `row::eval`.

use crate::catalog::schema::TypeKind;
use crate::error::Error;
use crate::seed::row::generate::Gen;
use crate::seed::row::rng::Permutation;
use crate::seed::row::shape::CheckDemands;
use crate::seed::row::solved::Solved;

#[derive(Debug, Clone)]
pub enum Layout {
    /// No parent: rows stand alone.
    Flat,
    /// Rows spread evenly over the parent's rows of the same block.
    Child { fk: usize },
    /// `count` rows per parent row: `pcum[q]..pcum[q + 1]` are parent q's children.
    PerParent { fk: usize, pcum: Vec<u64> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    Primary,
    /// The row's own tenant.
    Tenant,
    /// A random row of the parent within the row's tenant.
    SameTenant,
    Uniform,
    SelfRef,
    /// A permutation of the parent's rows: each parent at most once.
    UniqueGlobal,
    /// Distinct among the children of one primary parent.
    DistinctInParent,
    Joint {
        group: usize,
        digit: usize,
    },
}

#[derive(Debug, Clone)]
pub struct FkPlan {
    pub name: String,
    pub parent: usize,
    pub parent_cols: Vec<usize>,
    pub cols: Vec<usize>,
    pub pick: Pick,
    pub nullable: bool,
    pub null_p: f64,
    pub key: u64,
    /// Foreign keys of the table (into the same parent) whose parent rows
    /// this one never takes: a CHECK keeps them apart (`entity0 <>
    /// entity1`), and the pick draws among the rows the others left.
    pub apart: Vec<usize>,
    /// The parent rows this key may take (sorted), when a CHECK on its
    /// column admits only some of the parent's keys (`type IN (1, 3)` into
    /// a table of reference rows): every pick draws among them. None: any.
    pub only: Option<std::sync::Arc<Vec<u64>>>,
    /// Another foreign key of the table into the same parent that a CHECK
    /// orders against this one (`tag1 < tag2`), and whether this one is
    /// the lower: the two picks are drawn as they would be, then the lower
    /// parent key goes to the lower column (strict: the higher one avoids
    /// the lower one's row, see `apart`).
    pub order: Option<(usize, bool)>,
}

#[derive(Debug, Clone)]
pub struct ColPlan {
    pub name: String,
    pub kind: TypeKind,
    pub generator: Gen,
    /// In the COPY column list (false: the server's default applies).
    pub include: bool,
    pub key: u64,
    /// What the column's CHECKs ask beyond the generator (regex, case, NULL pattern).
    pub shape: Option<Box<CheckDemands>>,
}

#[derive(Debug, Clone)]
pub struct JointGroup {
    pub radices: Vec<u64>,
    pub perm: Permutation,
    /// Two foreign keys into one parent with `CHECK (a < b)` (`Some(true)`)
    /// or `a <= b`: the group enumerates the ordered pairs of parent rows
    /// (digit 0 the lower, digit 1 the higher; any further digits beside
    /// each pair) instead of every combination.
    pub pairs: Option<bool>,
    /// With `pairs`: the parent's keys do not grow with its rows (uuid, a
    /// permuted integer), so each pair's two keys are put in order by
    /// value instead of by row number.
    pub sorted: bool,
}

/// How many pairs (i, j) of `n` rows have i < j (`strict`) or i <= j.
pub(crate) fn pair_count(n: u64, strict: bool) -> u64 {
    let n = u128::from(n);
    let c = if strict {
        n * n.saturating_sub(1) / 2
    } else {
        n * (n + 1) / 2
    };
    c.min(u128::from(u64::MAX)) as u64
}

/// The k-th pair (i, j), ordered by j then i: i < j (`strict`) or i <= j.
fn pair_of(k: u64, strict: bool) -> (u64, u64) {
    // The largest j whose first pair is at or before k.
    let first = |j: u64| -> u128 {
        let j = u128::from(j);
        if strict {
            j * j.saturating_sub(1) / 2
        } else {
            j * (j + 1) / 2
        }
    };
    let k128 = u128::from(k);
    let mut j = ((2.0 * k as f64).sqrt()) as u64;
    while j > 0 && first(j) > k128 {
        j -= 1;
    }
    while first(j + 1) <= k128 {
        j += 1;
    }
    (k - first(j) as u64, j)
}

#[derive(Debug, Clone)]
pub struct TablePlan {
    pub cat: usize,
    pub oid: u32,
    pub display: String,
    pub qualified: String,
    pub key: u64,
    pub rows: u64,
    /// What planning changed on its own and says (rows lowered to fit a
    /// unique key's value space).
    pub notices: Vec<String>,
    pub partitioned: bool,
    pub cols: Vec<ColPlan>,
    pub layout: Layout,
    /// Cumulative rows per block (length: blocks + 1).
    pub cum: Vec<u64>,
    pub fks: Vec<FkPlan>,
    pub joints: Vec<JointGroup>,
    /// (sequence, column) pairs to `setval` after the load.
    pub sequences: Vec<(String, String)>,
    /// CHECK constraints the server evaluates over candidate rows.
    pub checked: ServerChecks,
}

#[derive(Debug, Clone)]
pub struct SeedPlan {
    pub seed: u64,
    /// In load order: parents first.
    pub tables: Vec<TablePlan>,
    pub tenant: Option<usize>,
    /// Schema indices of the tables planck must not touch.
    pub excluded: Vec<usize>,
    /// The tables left out (unless `--all-or-nothing`), each with its
    /// cause (a cascade names the table it depends on).
    pub skipped: Vec<Unseedable>,
    /// The columns whose values or NULL share follow the recording's
    /// `[observed]`, each with what followed it (for the summary).
    pub followed_recording: Vec<String>,
}

/// A table planning found it cannot seed, or one that references such a
/// table through a NOT NULL foreign key (a cascade).
#[derive(Debug, Clone, PartialEq)]
pub struct Unseedable {
    /// Schema index.
    pub cat: usize,
    pub table: String,
    /// What stops it, prefixed with the table (and column): `orders.total: ...`.
    pub cause: String,
    pub hints: Vec<String>,
    /// A cascade: the unseedable table it depends on.
    pub depends_on: Option<String>,
}

/// Where a row sits: its block (tenant), primary parent row and ordinal among its siblings.
#[derive(Debug, Clone, Copy)]
pub struct RowCtx {
    pub row: u64,
    pub block: usize,
    pub parent_row: u64,
    pub ordinal: u64,
}

pub const WITHIN_PARENT: usize = usize::MAX;

impl Pick {
    /// How a foreign key's values are picked, in words (for --verbose).
    pub fn label(&self) -> String {
        match self {
            Pick::Primary => "primary parent".into(),
            Pick::Tenant => "own tenant".into(),
            Pick::SameTenant => "same tenant".into(),
            Pick::Uniform => "uniform".into(),
            Pick::SelfRef => "self reference".into(),
            Pick::UniqueGlobal => "each parent once".into(),
            Pick::DistinctInParent => "distinct within parent".into(),
            Pick::Joint { group, digit } => format!("joint (group {group}, part {digit})"),
        }
    }
}

impl TablePlan {
    /// The layout, for --verbose.
    pub fn layout_name(&self) -> String {
        match &self.layout {
            Layout::Flat => "flat".into(),
            Layout::Child { fk } => format!("under {}", self.fks[*fk].name),
            Layout::PerParent { fk, .. } => format!("per row of {}", self.fks[*fk].name),
        }
    }
}

impl SeedPlan {
    pub fn ctx(&self, t: usize, row: u64) -> RowCtx {
        let tp = &self.tables[t];
        let block = if tp.cum.len() > 2 {
            tp.cum
                .partition_point(|&c| c <= row)
                .saturating_sub(1)
                .min(tp.cum.len() - 2)
        } else {
            0
        };
        let q = match &tp.layout {
            Layout::PerParent { pcum, .. } => pcum.partition_point(|&c| c <= row).saturating_sub(1),
            _ => 0,
        };
        self.ctx_at(t, row, block, q)
    }

    /// The contexts of rows `rows` of table `t`, in row order: each is
    /// [`SeedPlan::ctx`] of its row, but the block (and a `per` table's parent)
    /// is searched for once and then moved forward, where [`SeedPlan::ctx`]
    /// searches for it again for every row.
    pub fn ctxs(&self, t: usize, rows: std::ops::Range<u64>) -> impl Iterator<Item = RowCtx> + '_ {
        let tp = &self.tables[t];
        let (mut block, mut q) = (0, 0);
        let start = rows.start;
        rows.map(move |row| {
            if row == start {
                let first = self.ctx(t, row);
                block = first.block;
                if let Layout::PerParent { .. } = tp.layout {
                    q = first.parent_row as usize;
                }
                return first;
            }
            // The largest block (at most the last) and parent whose first row
            // is at or before `row`, as [`SeedPlan::ctx`]'s searches find them.
            while block + 2 < tp.cum.len() && tp.cum[block + 1] <= row {
                block += 1;
            }
            if let Layout::PerParent { pcum, .. } = &tp.layout {
                while q + 1 < pcum.len() && pcum[q + 1] <= row {
                    q += 1;
                }
            }
            self.ctx_at(t, row, block, q)
        })
    }

    /// [`SeedPlan::ctx`] of `row`, its block and (a `per` table) its parent found.
    fn ctx_at(&self, t: usize, row: u64, block: usize, q: usize) -> RowCtx {
        let tp = &self.tables[t];
        let start = tp.cum.get(block).copied().unwrap_or(0);
        match &tp.layout {
            Layout::Flat => RowCtx {
                row,
                block,
                parent_row: 0,
                ordinal: row - start,
            },
            Layout::Child { fk } => {
                let p = &self.tables[tp.fks[*fk].parent];
                let cx = tp.cum[block + 1] - start;
                let cp = p.cum[block + 1] - p.cum[block];
                let k = row - start;
                if cp == 0 || cx == 0 {
                    return RowCtx {
                        row,
                        block,
                        parent_row: 0,
                        ordinal: 0,
                    };
                }
                // In u64 when k * cp fits (every table of a few billion
                // rows): a 128-bit division is several times slower, and
                // this runs once per row and foreign key.
                let (lq, k0) = match k.checked_mul(cp) {
                    Some(kcp) => {
                        let lq = kcp / cx;
                        (lq, (lq * cx).div_ceil(cp))
                    }
                    None => {
                        let (k, cp, cx) = (u128::from(k), u128::from(cp), u128::from(cx));
                        let lq = k * cp / cx;
                        (lq as u64, ((lq * cx).div_ceil(cp)) as u64)
                    }
                };
                RowCtx {
                    row,
                    block,
                    parent_row: p.cum[block] + lq,
                    ordinal: k - k0,
                }
            }
            Layout::PerParent { pcum, .. } => RowCtx {
                row,
                block,
                parent_row: q as u64,
                ordinal: row - pcum[q],
            },
        }
    }

    pub fn joint_digit(&self, t: usize, group: usize, digit: usize, row: u64) -> u64 {
        let g = &self.tables[t].joints[group];
        if let Some(strict) = g.pairs {
            // Digits 0 and 1 are the pair, one digit of `pair_count`
            // values, above the others (a wider key: the pair and an order).
            let rest: u64 = g.radices[2..].iter().product::<u64>().max(1);
            let total = pair_count(g.radices[0], strict).saturating_mul(rest);
            let x = g.perm.apply(row % total.max(1));
            if digit < 2 {
                let (i, j) = pair_of(x / rest, strict);
                return if digit == 0 { i } else { j };
            }
            let mut y = x % rest;
            for r in g.radices[digit + 1..].iter() {
                y /= r;
            }
            return y % g.radices[digit];
        }
        let total: u64 = g.radices.iter().product();
        let mut x = g.perm.apply(row % total.max(1));
        for r in g.radices[digit + 1..].iter() {
            x /= r;
        }
        x % g.radices[digit]
    }

    pub fn total_rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }
}

impl Unseedable {
    /// The spec line that settles the table for good: leaving it out (the
    /// hints say how to seed it instead). Written as the spec names tables.
    pub fn spec_fix(&self) -> String {
        format!("exclude = [{}]", toml_string(&self.table))
    }

    pub(crate) fn of(cat: usize, table: &str, err: &Error) -> Unseedable {
        let cause = match err {
            Error::Seed {
                table,
                column,
                message,
                ..
            } => match column {
                Some(c) => format!("{table}.{c}: {message}"),
                None => format!("{table}: {message}"),
            },
            Error::CheckUnsatisfied { table, message, .. } => format!("{table}: {message}"),
            e => format!("{table}: {e}"),
        };
        Unseedable {
            cat,
            table: table.to_string(),
            cause,
            hints: err.hints(),
            depends_on: None,
        }
    }
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// One constraint evaluated by the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCheck {
    /// The constraint's name (a domain's: `domain NAME on COLUMN`).
    pub name: String,
    /// The definition as the server prints it (`CHECK (...)`).
    pub def: String,
    /// The boolean expression inside `CHECK (...)`.
    pub expr: String,
    /// Some(column): a domain check whose `VALUE` is that column.
    pub domain_col: Option<usize>,
    /// Columns the expression reads.
    pub cols: Vec<usize>,
}

/// A table's server-evaluated constraints and the columns attempts redraw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerChecks {
    pub checks: Vec<ServerCheck>,
    /// Columns an attempt redraws (sorted).
    pub redraw: Vec<usize>,
    /// Redrawn columns that may be NULL (the last resort).
    pub nullable: Vec<usize>,
    /// Checks among `checks` that `seed::check_solve` makes hold
    /// row by row (the server still evaluates them).
    pub solved: Vec<std::sync::Arc<Solved>>,
    /// Columns of `solved`'s CHECKs whose values their generators decide
    /// (a key's sequence or permutation, a joint enumeration: changing one
    /// would repeat a key): a row's branch is drawn among those that admit
    /// the row's values there, and the solver never changes them (sorted).
    pub fixed: Vec<usize>,
}

impl ServerChecks {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// Adds columns an attempt redraws, and those of them that may be NULL,
    /// keeping both lists sorted and without repeats.
    pub(crate) fn redraw_also(&mut self, redraw: Vec<usize>, nullable: Vec<usize>) {
        self.redraw.extend(redraw);
        self.redraw.sort_unstable();
        self.redraw.dedup();
        self.nullable.extend(nullable);
        self.nullable.sort_unstable();
        self.nullable.dedup();
    }

    /// Every column the candidates table holds (sorted).
    pub(crate) fn cols(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.checks.iter().flat_map(|c| c.cols.clone()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Issue 9 point 4: the k-th ordered pair enumerates each pair once.
    #[test]
    fn ordered_pairs_are_enumerated_once_each() {
        for strict in [true, false] {
            for n in [1u64, 2, 7, 100] {
                let total = pair_count(n, strict);
                let pairs: HashSet<(u64, u64)> = (0..total).map(|k| pair_of(k, strict)).collect();
                assert_eq!(pairs.len() as u64, total, "n {n} strict {strict}");
                for (i, j) in pairs {
                    assert!(
                        j < n && if strict { i < j } else { i <= j },
                        "({i}, {j}) of {n}"
                    );
                }
            }
        }
        assert_eq!(pair_count(7, true), 21);
        assert_eq!(pair_count(7, false), 28);
    }
}
