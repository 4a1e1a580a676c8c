//! What [`super::uniqueness`] knows of one unique constraint while it
//! makes the key hold: shared by its steps in `keys.rs` and `keys/joint.rs`.

use std::collections::HashMap;

use crate::error::Error;
use crate::seed::check_expr::ColFacts;
use crate::seed::row::plan::TablePlan;
use crate::seed::spec::SpecFile;

use super::super::context::{Resolved, seed_err};

/// Two single-column foreign keys into one parent, unique together and
/// ordered by a CHECK (`tag1 < tag2`): `lo` must stay below `hi`.
#[derive(Debug, Clone, Copy)]
pub(in crate::seed::planner) struct OrderedPair {
    pub(in crate::seed::planner) lo: usize,
    pub(in crate::seed::planner) hi: usize,
    pub(in crate::seed::planner) strict: bool,
    /// The parent's keys are not in row order: order each pair by value.
    pub(in crate::seed::planner) sorted: bool,
}

/// One unique constraint [`super::uniqueness`] makes hold, with what planning
/// knows of its table.
pub(super) struct KeyHold<'a> {
    pub(super) sf: &'a SpecFile,
    pub(super) res: &'a Resolved<'a>,
    pub(super) ci: usize,
    pub(super) pi: usize,
    pub(super) pair: Option<OrderedPair>,
    pub(super) table: &'a crate::catalog::schema::Table,
    pub(super) display: &'a str,
    pub(super) facts: &'a [ColFacts],
    pub(super) spec_span: &'a HashMap<usize, std::ops::Range<usize>>,
    pub(super) fk_cols: &'a HashMap<usize, usize>,
    pub(super) sized_by_spec: bool,
    pub(super) tables: &'a [TablePlan],
    /// The rows of the tables planned after this one (see
    /// [`super::super::context::Pass::later`]).
    pub(super) later: &'a [Option<u64>],
    pub(super) max_per_parent: u64,
    pub(super) u: &'a crate::catalog::schema::Unique,
    /// Unique within each parent: the key holds the primary parent's
    /// columns and more.
    pub(super) within: bool,
    /// The key's columns to make unique (without the parent's, `within`).
    pub(super) rest: Vec<usize>,
    /// The distinct values it needs: the table's rows, or (`within`) the
    /// most children of one parent.
    pub(super) need: u64,
}

impl KeyHold<'_> {
    /// The rows of the table at plan position `t`: its plan's, or for a
    /// parent planned after this table (a back edge of a cycle) the rows
    /// the previous planning round settled; None in the first round.
    pub(super) fn parent_rows(&self, t: usize) -> Option<u64> {
        self.tables
            .get(t)
            .map(|p| p.rows)
            .or_else(|| self.later.get(t).copied().flatten())
    }

    pub(super) fn span_of(&self, c: usize) -> Option<std::ops::Range<usize>> {
        self.spec_span
            .get(&c)
            .cloned()
            .or_else(|| self.res.tables.get(&self.ci).map(|s| s.span()))
    }

    /// The key's columns, by name.
    pub(super) fn columns(&self) -> String {
        self.u
            .cols
            .iter()
            .map(|c| self.table.columns[*c].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn impossible(&self, c: usize, allowed: u64, need: u64) -> Error {
        let (u, table, within) = (self.u, self.table, self.within);
        let what = format!(
            "impossible uniqueness: {} ({}) must be unique{}, but {} allows only {} distinct value(s) for {} row(s)",
            u.name,
            self.columns(),
            if within { " within each parent" } else { "" },
            table.columns[c].name,
            allowed,
            need
        );
        let hint = "widen the column's `values`/`range`, lower the table's `rows` or `count`, or mark a text column `unique = true`".to_string();
        match self.span_of(c) {
            Some(s) => self.sf.error(s, what, Some(hint)),
            None => seed_err(self.display, Some(&table.columns[c].name), what, hint),
        }
    }

    pub(super) fn why(&self, c: usize, allowed: u64) -> String {
        format!(
            "{} ({}) must be unique{}, and {} allows only {allowed} distinct value(s)",
            self.u.name,
            self.columns(),
            if self.within {
                " within each parent"
            } else {
                ""
            },
            self.table.columns[c].name,
        )
    }
}
