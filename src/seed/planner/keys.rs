//! Keys, decided by construction: every unique constraint (and an
//! `EXCLUDE` of `=` elements) holds because one of its columns carries it
//! alone (a sequence, a permutation, a per-parent ordinal, a foreign key
//! taking each parent once) or its finite columns are enumerated jointly
//! through a permutation of the row index; integer keys fit their type;
//! `EXCLUDE (... WITH &&)` ranges take slots that never overlap. Where a
//! key has fewer values than the table's rows, the rows are lowered
//! ([`super::sizing::cap_rows`]) or, when the spec sized the table, the
//! error says the arithmetic.

use std::collections::HashMap;

use crate::catalog::schema::TypeKind;
use crate::error::Result;
use crate::seed::check_expr::ColFacts;
use crate::seed::columns::{DAY, T_LO, default_gen, make_unique};
use crate::seed::distinct;
use crate::seed::row::generate::{Gen, Text};
use crate::seed::row::plan::{FkPlan, Pick, TablePlan};
use crate::seed::spec::{self, SpecFile};

use super::checks::keys_off_excluded;
use super::context::{Resolved, redraw_columns, seed_err};
use super::generators::SpecSpans;
use super::generators::{unwrap_nullable, unwrap_nullable_mut};
use super::sizing::{cap_rows, max_children};

mod hold;
mod joint;
use hold::KeyHold;
pub(super) use hold::OrderedPair;
use joint::{enumerate_jointly, joint_capacity};

/// Phase (after uniqueness): a column of a unique key that another column
/// of every such key already keeps unique by construction (a sequence, a
/// unique text or uuid, a foreign key that takes each parent row once) is
/// no key value: redrawing it cannot repeat a key. Those the server's
/// CHECKs read join the columns attempts redraw (graphile-starter's
/// `user_emails`: `is_verified`, in `UNIQUE (email) WHERE is_verified`,
/// read as the key (email, is_verified) that the unique email carries, is
/// redrawn until `is_primary IS FALSE OR is_verified IS TRUE` holds).
pub(super) fn free_unique_columns(
    table: &crate::catalog::schema::Table,
    facts: &[ColFacts],
    referenced: &[usize],
    tp: &mut TablePlan,
) {
    let sc = &tp.checked;
    if sc.is_empty() || table.partitioned || table.partitioning.is_some() {
        return;
    }
    let fk_pick = |c: usize| {
        tp.fks
            .iter()
            .find(|f| f.cols.contains(&c))
            .map(|f| matches!(f.pick, Pick::UniqueGlobal) && f.cols.len() == 1)
    };
    // Unique across the whole table whatever the other columns are: an
    // ordinal or a within-parent digit is unique only beside its parent.
    let carries = |d: usize| match fk_pick(d) {
        Some(global) => global,
        None => {
            let g = unwrap_nullable(&tp.cols[d].generator);
            let redrawn = sc.redraw.contains(&d);
            g.is_unique()
                && !matches!(g, Gen::Ordinal { .. })
                && (!redrawn || matches!(g, Gen::Text { unique: true, .. }))
        }
    };
    let free = |c: usize| {
        let in_keys: Vec<_> = table
            .uniques
            .iter()
            .filter(|u| u.cols.contains(&c))
            .collect();
        !in_keys.is_empty()
            && fk_pick(c).is_none()
            && !table.columns[c].generated
            && !referenced.contains(&c)
            && !matches!(
                tp.cols[c].generator,
                Gen::Joint { .. }
                    | Gen::Sequence { .. }
                    | Gen::IntUnique { .. }
                    | Gen::Ordinal { .. }
            )
            && !tp.cols[c].generator.is_unique()
            && in_keys
                .iter()
                .all(|u| u.cols.iter().any(|&d| d != c && carries(d)))
    };
    let read: Vec<usize> = sc.cols();
    let add: Vec<usize> = read
        .into_iter()
        .filter(|c| sc.redraw.binary_search(c).is_err() && free(*c))
        .collect();
    redraw_columns(tp, table, facts, add);
}

/// The ordered pair of a table, when the parent's key grows with its row
/// number (a sequence), so the order of rows is the order of keys.
pub(super) fn ordered_pair(
    table: &crate::catalog::schema::Table,
    facts: &[ColFacts],
    fks: &[FkPlan],
    tables: &[TablePlan],
    pi: usize,
) -> Option<OrderedPair> {
    let fk_of = |c: usize| fks.iter().find(|f| f.cols == [c]);
    table.uniques.iter().find_map(|u| {
        let [a, b] = u.cols[..] else { return None };
        let (fa, fb) = (fk_of(a)?, fk_of(b)?);
        if fa.parent != fb.parent || fa.parent >= pi || fa.parent_cols != fb.parent_cols {
            return None;
        }
        let parent = tables.get(fa.parent)?;
        let pcol = parent.cols.get(fa.parent_cols[0])?;
        // Keys in row order (a sequence), or of a kind whose order planck
        // knows (integers, uuids; a text's order is its collation's).
        let sorted = match pcol.generator {
            Gen::Sequence { step, .. } if step > 0 => false,
            _ if pcol.kind.is_int() || matches!(pcol.kind, TypeKind::Uuid) => true,
            _ => return None,
        };
        let name = |c: usize| table.columns[c].name.as_str();
        let after = |hi: usize, lo: usize| {
            facts[hi]
                .after
                .iter()
                .find(|(o, _)| o == name(lo))
                .map(|(_, strict)| *strict)
        };
        if let Some(strict) = after(b, a) {
            Some(OrderedPair {
                lo: a,
                hi: b,
                strict,
                sorted,
            })
        } else {
            after(a, b).map(|strict| OrderedPair {
                lo: b,
                hi: a,
                strict,
                sorted,
            })
        }
    })
}

/// Phase: EXCLUDE constraints planck can hold: elements that are columns,
/// compared with `=` (btree equality, through btree_gist under gist) and at
/// most one with `&&` (range overlap: non-overlapping ranges per key). Any
/// other form is an error naming the constraint.
pub(super) fn exclusions_supported(
    table: &crate::catalog::schema::Table,
    display: &str,
) -> Result<()> {
    for x in &table.exclusions {
        let overlaps = x.elems.iter().filter(|(_, op)| op == "&&").count();
        let supported = !x.elems.is_empty()
            && overlaps <= 1
            && x.elems
                .iter()
                .all(|(c, op)| c.is_some() && (op == "=" || op == "&&"));
        if !supported {
            let expr = x.elems.iter().any(|(c, _)| c.is_none());
            return Err(seed_err(
                display,
                None,
                format!(
                    "exclusion constraint {} ({}) is beyond what planck generates{}",
                    x.name,
                    x.def,
                    if expr {
                        ": it compares an expression"
                    } else {
                        ""
                    }
                ),
                format!(
                    "planck holds `col WITH =` elements and one range `WITH &&`; exclude {display} in the spec (`exclude = [\"{display}\"]`); the other tables are seeded without it"
                ),
            ));
        }
    }
    Ok(())
}

/// Phase: the range column of each `EXCLUDE (... WITH =, col WITH &&)`
/// takes row-numbered slots that never overlap, so the constraint holds
/// whatever its equality columns are. An exclusion of `=` elements only is
/// a unique key (see [`keys_to_hold`]). A `&&` on anything but a range of
/// integers, dates or timestamps, or on a column the spec gives values,
/// is an error naming the constraint.
pub(super) fn exclusion_slots(
    table: &crate::catalog::schema::Table,
    display: &str,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    for x in &table.exclusions {
        let Some(&(Some(c), _)) = x.elems.iter().find(|(_, op)| op == "&&") else {
            continue;
        };
        let col = &table.columns[c];
        let refuse = |why: String| {
            seed_err(
                display,
                Some(&col.name),
                format!("exclusion constraint {} ({}): {why}", x.name, x.def),
                format!(
                    "exclude {display} in the spec (`exclude = [\"{display}\"]`); the other tables are seeded without it"
                ),
            )
        };
        let (start, width, micros) = match &col.kind {
            TypeKind::Range(sub) if sub.is_int() => {
                // Integers 1, 11, 21, ...: narrower when the type would overflow.
                let room = (sub.int_max() as u64 / (tp.rows + 1)).max(1);
                (1, room.min(10) as i64, false)
            }
            TypeKind::Range(sub) if matches!(**sub, TypeKind::Date) => (T_LO, DAY, true),
            TypeKind::Range(sub) if sub.is_time() => (T_LO, DAY / 24, true),
            // uuidrange (hatchet's offloaded block indexes): the slots'
            // integers are the uuids' 128-bit values (see `Gen::Slot`).
            TypeKind::Range(sub) if matches!(**sub, TypeKind::Uuid) => (0, 1, false),
            _ => {
                return Err(refuse(format!(
                    "planck keeps `WITH &&` apart on ranges of integers, dates, timestamps and uuids, and {} is {}",
                    col.name, col.type_name
                )));
            }
        };
        if assigned[c] {
            return Err(refuse(format!(
                "the spec gives {} values, which cannot keep its ranges apart",
                col.name
            )));
        }
        tp.cols[c].generator = Gen::Slot {
            start,
            width,
            micros,
        };
        assigned[c] = true;
    }
    Ok(())
}

/// Phase: a spec's `unique = true` integer column is a permutation of
/// enough values for every row (made for a million before the rows are
/// known): widened to the rows, or an error when its `range` (or its type)
/// holds fewer values than rows.
pub(super) fn spec_unique_ints(
    sf: &SpecFile,
    res: &Resolved,
    ci: usize,
    table: &crate::catalog::schema::Table,
    spec_span: &SpecSpans,
    tp: &mut TablePlan,
) -> Result<()> {
    for (&c, span) in spec_span {
        let Some(cs) = res.columns.get(&(ci, c)) else {
            continue;
        };
        if cs.get_ref().unique != Some(true) {
            continue;
        }
        // Without a `range` the type's default range is only a start.
        let (lo, n) = match *unwrap_nullable(&tp.cols[c].generator) {
            Gen::IntUnique { lo, n } => (lo, n),
            Gen::Int { lo, .. } => (lo, 0),
            _ => continue,
        };
        let col = &table.columns[c];
        let type_max = if col.kind.is_int() {
            col.kind.int_max()
        } else {
            i64::MAX
        };
        let range = cs.get_ref().range.as_ref();
        let hi = match range.map(|r| &r.get_ref()[1]) {
            Some(spec::Scalar::Int(hi)) => (*hi).min(type_max),
            _ => type_max,
        };
        let holds = (i128::from(hi) - i128::from(lo) + 1).max(0);
        if i128::from(tp.rows) > holds {
            return Err(sf.error(
                range.map_or_else(|| span.clone(), |r| r.span()),
                format!(
                    "`unique = true` on {}.{} needs {} distinct values for {} rows, but [{lo}, {hi}] holds only {holds}",
                    tp.display, col.name, tp.rows, tp.rows
                ),
                Some("widen the `range`, or lower the table's `rows`".into()),
            ));
        }
        if n < tp.rows {
            let g = unwrap_nullable_mut(&mut tp.cols[c].generator);
            *g = Gen::IntUnique {
                lo,
                n: tp.rows.max(1),
            };
        }
    }
    Ok(())
}

/// Phase: integer keys must fit their type (a smallint id holds 32,767
/// rows). A table nothing in the spec sizes, whose key generators the spec
/// does not give, is lowered to fit, with a notice; otherwise an error with
/// the arithmetic.
pub(super) fn keys_fit(
    table: &crate::catalog::schema::Table,
    display: &str,
    tp: &mut TablePlan,
    tables: &[TablePlan],
    may_lower: bool,
    spec_span: &SpecSpans,
) -> Result<()> {
    let max_per_parent = max_children(tp, tables);
    for (c, col) in table.columns.iter().enumerate() {
        if !col.kind.is_int() {
            continue;
        }
        let max = i128::from(col.kind.int_max());
        // (the largest value, the rows or children per parent that fit, per parent?)
        let (top, fits, within) = match unwrap_nullable(&tp.cols[c].generator) {
            Gen::Sequence { start, step } if *step > 0 => {
                let top =
                    i128::from(*start) + i128::from(*step) * i128::from(tp.rows.saturating_sub(1));
                let fits = ((max - i128::from(*start)) / i128::from(*step) + 1).max(0);
                (top, fits, false)
            }
            Gen::IntUnique { lo, n } => {
                let fits = (max - i128::from(*lo) + 1).max(0);
                let (lo, n) = (*lo, *n);
                if i128::from(n) > fits && i128::from(tp.rows) <= fits {
                    // A permutation over fewer values still covers the rows.
                    set_int_unique_n(&mut tp.cols[c].generator, fits as u64);
                    continue;
                }
                (i128::from(lo) + i128::from(n) - 1, fits, false)
            }
            Gen::Ordinal { lo } => {
                let top = i128::from(*lo) + i128::from(max_per_parent.saturating_sub(1));
                (top, (max - i128::from(*lo) + 1).max(0), true)
            }
            _ => continue,
        };
        if top <= max {
            continue;
        }
        let fits = u64::try_from(fits).unwrap_or(u64::MAX);
        if may_lower && !spec_span.contains_key(&c) && fits > 0 {
            set_int_unique_n(&mut tp.cols[c].generator, fits);
            cap_rows(
                tp,
                fits,
                within,
                max_per_parent,
                &format!(
                    "{} is {} and holds {fits} value(s){} from where it starts",
                    col.name,
                    col.type_name,
                    if within { " per parent" } else { "" }
                ),
            );
            continue;
        }
        return Err(seed_err(
            display,
            Some(&col.name),
            format!(
                "{} rows need values up to {top}, beyond {} (at most {fits} rows fit{})",
                if within { max_per_parent } else { tp.rows },
                col.type_name,
                if within { " per parent" } else { "" }
            ),
            "lower the table's rows (or --rows/--scale), or widen the column's type",
        ));
    }
    Ok(())
}

/// The value count of a (possibly nullable) unique-integer generator.
fn set_int_unique_n(g: &mut Gen, to: u64) {
    if let Gen::IntUnique { n, .. } = unwrap_nullable_mut(g) {
        *n = to;
    }
}

/// The unique keys [`uniqueness`] makes hold, in the order it takes them.
/// A column with one value (`CHECK (active)`, `CHECK (kind = 'x')`, a
/// one-value enum), which a unique key's column never leaves NULL, repeats
/// in every row: the key holds exactly when the rest of it does, so the
/// rest is the key (a key of only such columns stays as it is, and holds
/// one row). A key that holds a smaller one holds with it, so smaller keys
/// come first, then the primary key, then the others (koji's
/// tag_inheritance: `UNIQUE (tag_id, priority, active)` is `(tag_id,
/// priority)`, which the primary key `(create_event, tag_id, priority)`
/// holds once `priority` is unique).
fn keys_to_hold(
    table: &crate::catalog::schema::Table,
    facts: &[ColFacts],
    fk_cols: &HashMap<usize, usize>,
    tp: &TablePlan,
    assigned: &[bool],
) -> Vec<crate::catalog::schema::Unique> {
    let one_value = |c: usize| {
        let col = &table.columns[c];
        if fk_cols.contains_key(&c) || col.generated {
            return false;
        }
        let domain = if assigned[c] {
            tp.cols[c].generator.domain()
        } else {
            default_gen(table, col, &facts[c]).and_then(|g| g.domain())
        };
        domain == Some(1)
    };
    // `EXCLUDE (a WITH =, b WITH =)` is UNIQUE (a, b).
    let equal_only = table.exclusions.iter().filter_map(|x| {
        let cols: Option<Vec<usize>> = x
            .elems
            .iter()
            .map(|(c, op)| c.filter(|_| op == "="))
            .collect();
        cols.filter(|c| !c.is_empty())
            .map(|cols| crate::catalog::schema::Unique {
                name: x.name.clone(),
                cols,
                primary: false,
                escape: Vec::new(),
                exprs: Vec::new(),
            })
    });
    let keys: Vec<crate::catalog::schema::Unique> = table
        .uniques
        .iter()
        .cloned()
        .chain(equal_only)
        .map(|u| {
            let rest: Vec<usize> = u.cols.iter().copied().filter(|c| !one_value(*c)).collect();
            let mut k = u;
            if !rest.is_empty() {
                k.cols = rest;
            }
            k
        })
        .collect();
    let holds_smaller = |u: &crate::catalog::schema::Unique| {
        keys.iter()
            .any(|v| v.cols.len() < u.cols.len() && v.cols.iter().all(|c| u.cols.contains(c)))
    };
    let mut ordered: Vec<(bool, crate::catalog::schema::Unique)> =
        keys.iter().map(|u| (holds_smaller(u), u.clone())).collect();
    ordered.sort_by_key(|(bigger, u)| (*bigger, !u.primary));
    ordered.into_iter().map(|(_, u)| u).collect()
}

/// Phase: every unique constraint (primary key first) holds by
/// construction: one of its columns becomes a sequence, a permutation, a
/// per-parent ordinal or a joint digit group, or the spec's generator is
/// checked to be unique (an error when it cannot be).
#[allow(clippy::too_many_arguments)]
pub(super) fn uniqueness(
    sf: &SpecFile,
    res: &Resolved,
    (ci, pi, primary, pair): (usize, usize, Option<usize>, Option<OrderedPair>),
    table: &crate::catalog::schema::Table,
    display: &str,
    facts: &[ColFacts],
    spec_span: &HashMap<usize, std::ops::Range<usize>>,
    fk_cols: &HashMap<usize, usize>,
    sized_by_spec: bool,
    (tables, later): (&[TablePlan], &[Option<u64>]),
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    // Uniqueness.
    let max_per_parent = max_children(tp, tables);
    let uniques = keys_to_hold(table, facts, fk_cols, tp, assigned);
    let mut held: Vec<Vec<usize>> = Vec::new();
    for u in &uniques {
        for c in &u.cols {
            if let Some(fi) = fk_cols.get(c) {
                tp.fks[*fi].null_p = 0.0;
            }
        }
        // A key that holds one made to hold already holds with it; taking
        // it again would re-pick its columns (koji's cg_users: the primary
        // key (create_event, cg_id, user_id) re-enumerated `user_id`, which
        // (cg_id, user_id) had made distinct per content generator).
        if held.iter().any(|h| h.iter().all(|c| u.cols.contains(c))) {
            continue;
        }
        held.push(u.cols.clone());
        let pfk_cols: Vec<usize> = primary.map(|p| tp.fks[p].cols.clone()).unwrap_or_default();
        let beside_parent = !pfk_cols.is_empty() && pfk_cols.iter().all(|c| u.cols.contains(c));
        // An ordinal among the primary parent's children is unique only in a
        // key that holds the parent too (koji's tag_inheritance: `priority`,
        // an ordinal under `create_event`, repeated in UNIQUE (tag_id, priority, active)).
        if u.cols.iter().any(|c| {
            let g = &tp.cols[*c].generator;
            (g.is_unique() && (beside_parent || !matches!(g, Gen::Ordinal { .. })))
                || fk_cols
                    .get(c)
                    .is_some_and(|fi| matches!(tp.fks[*fi].pick, Pick::UniqueGlobal))
        }) {
            continue;
        }
        // A partial index another key already left behind: its way out
        // holds a value in every row.
        if u.escape.iter().any(|c| {
            !matches!(tp.cols[*c].generator, Gen::Nullable { .. } | Gen::Null)
                && assigned[*c]
                && !fk_cols.contains_key(c)
        }) {
            continue;
        }
        let within = beside_parent && u.cols.len() > pfk_cols.len();
        let rest: Vec<usize> = u
            .cols
            .iter()
            .copied()
            .filter(|c| !within || !pfk_cols.contains(c))
            .collect();
        let k = KeyHold {
            sf,
            res,
            ci,
            pi,
            pair,
            table,
            display,
            facts,
            spec_span,
            fk_cols,
            sized_by_spec,
            tables,
            later,
            max_per_parent,
            u,
            within,
            rest,
            need: if within { max_per_parent } else { tp.rows },
        };
        // 1. A column that can carry uniqueness alone.
        if carry_alone(&k, tp, assigned)? {
            continue;
        }
        // A partial index whose rows its columns cannot tell apart, or only
        // by enumerating again a column another key enumerated (which would
        // undo that key): every row leaves its predicate (`WHERE
        // deleted_at IS NULL`: a deleted_at in every row) rather than the
        // rows being lowered.
        if joint_capacity(&k, tp).is_none_or(|n| n < k.need) && escape_predicate(&k, tp, assigned) {
            continue;
        }
        // 2. Enumerate the finite columns jointly.
        enumerate_jointly(&k, tp)?;
    }
    keys_off_excluded(facts, tp);
    Ok(())
}

/// Step 1 of [`uniqueness`]: a column of the key that can carry its
/// uniqueness alone (a foreign key taking each parent once, a sequence, a
/// permutation, an ordinal, a unique text, uuid or time) gets the
/// generator that does. Whether one did.
fn carry_alone(k: &KeyHold, tp: &mut TablePlan, assigned: &mut [bool]) -> Result<bool> {
    let (within, need) = (k.within, k.need);
    for &c in &k.rest {
        if let Some(fi) = k.fk_cols.get(&c).copied() {
            if tp.fks[fi].cols.len() == 1 && k.rest.len() == 1 {
                let prow = k.parent_rows(tp.fks[fi].parent).unwrap_or(u64::MAX);
                if tp.fks[fi].parent == k.pi {
                    continue;
                }
                if prow < need {
                    if k.sized_by_spec {
                        return Err(k.impossible(c, prow, need));
                    }
                    cap_rows(tp, prow, within, k.max_per_parent, &k.why(c, prow));
                }
                tp.fks[fi].pick = if within {
                    Pick::DistinctInParent
                } else {
                    Pick::UniqueGlobal
                };
                return Ok(true);
            }
            continue;
        }
        let g = std::mem::replace(&mut tp.cols[c].generator, Gen::Null);
        let g = if assigned[c] {
            g
        } else {
            default_gen(k.table, &k.table.columns[c], &k.facts[c]).unwrap_or(Gen::Null)
        };
        if let Some(g) = unique_gen(k, c, g, tp)? {
            tp.cols[c].generator = g;
            assigned[c] = true;
            return Ok(true);
        }
        // A type whose own generator has no unique form (a time of day,
        // an address, a range): row r's own value of the type.
        if !k.spec_span.contains_key(&c)
            && let Some(g) =
                distinct::distinct_gen(&k.table.columns[c].kind, &tp.cols[c].generator, tp.rows)
        {
            tp.cols[c].generator = g;
            assigned[c] = true;
            return Ok(true);
        }
        if !assigned[c] {
            // Keep the default generator for joint enumeration below.
            assigned[c] = true;
        }
    }
    Ok(false)
}

/// Column `c`'s generator `g` made to carry the key's uniqueness alone,
/// or None (`g` put back) when it cannot.
fn unique_gen(k: &KeyHold, c: usize, g: Gen, tp: &mut TablePlan) -> Result<Option<Gen>> {
    let (within, need) = (k.within, k.need);
    let (col, facts) = (&k.table.columns[c], k.facts);
    let from_spec = k.spec_span.contains_key(&c);
    let sized_by_spec = k.sized_by_spec;
    Ok(match g {
        Gen::Sequence { .. } | Gen::IntUnique { .. } => Some(g),
        Gen::Int { lo, hi } if within && !from_spec => {
            if (hi - lo + 1) as u64 >= need || facts[c].hi.is_none() {
                Some(Gen::Ordinal { lo })
            } else {
                tp.cols[c].generator = Gen::Int { lo, hi };
                None
            }
        }
        Gen::Int { lo, .. } if !from_spec && facts[c].hi.is_none() && col.kind.is_int() => {
            Some(if k.u.primary || col.sequence.is_some() {
                Gen::Sequence {
                    start: lo.max(1),
                    step: 1,
                }
            } else {
                Gen::IntUnique {
                    lo,
                    n: tp.rows.max(1),
                }
            })
        }
        Gen::Int { lo, hi } => {
            if (hi - lo + 1) as u64 >= tp.rows {
                Some(Gen::IntUnique {
                    lo,
                    n: tp.rows.max(1),
                })
            } else {
                tp.cols[c].generator = Gen::Int { lo, hi };
                None
            }
        }
        // Rows closer together than the column's granularity (a date's
        // day) would repeat once stored: the key's columns are enumerated
        // jointly instead, the time's range widened ([`joint::time_steps`]).
        Gen::Time { lo, hi, .. }
            if (hi - lo) / (tp.rows.max(1) as i64) < joint::granularity(col) =>
        {
            tp.cols[c].generator = g;
            None
        }
        // A unique decimal or float key: 1, 2, 3... (encoded for its type).
        Gen::Dec { .. } | Gen::Float { .. } if !from_spec => {
            Some(Gen::Sequence { start: 1, step: 1 })
        }
        g @ (Gen::Text { .. } | Gen::Uuid { .. } | Gen::Time { .. } | Gen::Nullable { .. }) => {
            let g2 = make_unique(g.clone(), tp.rows);
            if g2.is_unique() || matches!(&g2, Gen::Nullable { inner, .. } if inner.is_unique()) {
                if let Gen::Text {
                    max_len: Some(m),
                    unique: true,
                    ..
                } = &g2
                {
                    // Row numbers in base 36 (`1`..`zzz` in varchar(3)).
                    let digits = crate::seed::row::generate::base36(tp.rows).len();
                    if *m < digits {
                        let allowed = 36u64.saturating_pow(*m as u32) - 1;
                        if sized_by_spec || from_spec {
                            tp.cols[c].generator = g;
                            return Err(k.impossible(c, allowed, tp.rows));
                        }
                        cap_rows(tp, allowed, false, 0, &k.why(c, allowed));
                    }
                }
                // Below 12 characters the row number is a base-36
                // suffix of varying width after a truncated prefix
                // (`c` + `n` and `` + `cn` collide): the suffix alone
                // is unique.
                match g2 {
                    Gen::Text {
                        max_len: Some(m),
                        unique: true,
                        ..
                    } if m < 12 && !from_spec => Some(Gen::Text {
                        text: Text::Format(Vec::new()),
                        unique: true,
                        max_len: Some(m),
                    }),
                    g2 => Some(g2),
                }
            } else {
                tp.cols[c].generator = g;
                None
            }
        }
        Gen::Bytes { .. } => Some(Gen::Text {
            text: Text::Hex { len: 32 },
            unique: true,
            max_len: None,
        }),
        other => {
            tp.cols[c].generator = other;
            None
        }
    })
}

/// A partial unique index left behind by every row: the first column its
/// predicate requires NULL that planck fills takes a value in every row (a
/// foreign key always references a parent). Whether one did.
fn escape_predicate(k: &KeyHold, tp: &mut TablePlan, assigned: &mut [bool]) -> bool {
    for &c in &k.u.escape {
        let col = &k.table.columns[c];
        if col.generated || k.spec_span.contains_key(&c) {
            continue;
        }
        if let Some(fi) = k.fk_cols.get(&c).copied() {
            if tp.fks[fi].cols.len() == 1 {
                tp.fks[fi].null_p = 0.0;
                return true;
            }
            continue;
        }
        let g = if assigned[c] {
            unwrap_nullable(&tp.cols[c].generator).clone()
        } else {
            match default_gen(k.table, col, &k.facts[c]) {
                Some(g) => g,
                None => continue,
            }
        };
        if matches!(g, Gen::Null) {
            continue;
        }
        tp.cols[c].generator = g;
        assigned[c] = true;
        return true;
    }
    false
}
