//! Foreign keys: which parent each one points to in the plan, how it picks
//! its parent row (the primary parent's layout, the tenant, the same
//! tenant, uniform), the existing keys of a reference parent, and the
//! columns of keys into tables planck does not seed.

use std::collections::HashMap;

use crate::catalog::schema::{Schema, TypeKind};
use crate::error::Result;
use crate::seed::check_expr::{self, ColFacts};
use crate::seed::reference::ReferenceKeys;
use crate::seed::row::generate::{Gen, Val};
use crate::seed::row::plan::{FkPlan, Pick, TablePlan};
use crate::seed::row::rng::{self, Permutation};

use super::context::{Resolved, redraw_columns, seed_err};
use super::sizing::{cap_rows, max_children};

/// The keys a single-column foreign key can take when its parent is a
/// reference table (rows the migrations wrote, kept as they are), by column.
pub(super) fn listed_parent_keys(
    cat: &Schema,
    table: &crate::catalog::schema::Table,
    reference: &ReferenceKeys,
    res: &Resolved,
) -> HashMap<usize, std::sync::Arc<Vec<Val>>> {
    let mut out = HashMap::new();
    for f in &table.fks {
        let ([c], [pc]) = (&f.cols[..], &f.parent_cols[..]) else {
            continue;
        };
        let Some(p) = f.parent.filter(|p| !res.excluded.contains(p)) else {
            continue;
        };
        if let Some(keys) = reference
            .get(&cat.tables[p].oid)
            .and_then(|cols| cols.get(pc))
        {
            out.insert(*c, keys.clone());
        }
    }
    out
}

/// A foreign key whose column a native CHECK fact sets (`parent IS NOT
/// NULL OR label IS NULL` read as `parent IS NOT NULL`) is never NULL: a
/// self reference's first row then references itself (koji's `task`).
pub(super) fn fks_set_by_checks(facts: &[ColFacts], fks: &mut [FkPlan]) {
    for f in fks {
        if f.cols.iter().any(|c| facts[*c].not_null) {
            f.nullable = false;
        }
    }
}

/// Phase: the table's foreign keys to seeded parents (as plan positions),
/// and those to parents planck does not seed.
pub(super) fn table_fks(
    table: &crate::catalog::schema::Table,
    ci: usize,
    pi: usize,
    pos: &HashMap<usize, usize>,
    res: &Resolved,
) -> (Vec<FkPlan>, Vec<usize>) {
    // Foreign keys to seeded parents; the primary parent.
    let mut fks: Vec<FkPlan> = Vec::new();
    let mut orphan_fks: Vec<usize> = Vec::new();
    for (fi, f) in table.fks.iter().enumerate() {
        match f.parent.filter(|p| !res.excluded.contains(p)) {
            Some(p) => fks.push(FkPlan {
                name: f.name.clone(),
                parent: if p == ci { pi } else { pos[&p] },
                parent_cols: f.parent_cols.clone(),
                cols: f.cols.clone(),
                pick: Pick::Uniform,
                nullable: f.cols.iter().any(|c| !table.columns[*c].not_null),
                null_p: 0.0,
                key: rng::name_key(&f.name),
                apart: Vec::new(),
                only: None,
                order: None,
            }),
            None => orphan_fks.push(fi),
        }
    }
    (fks, orphan_fks)
}

/// Phase: columns of foreign keys to tables planck does not seed stay NULL
/// (an error when they cannot).
pub(super) fn orphan_columns(
    table: &crate::catalog::schema::Table,
    display: &str,
    orphan_fks: &[usize],
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    for fi in orphan_fks {
        let f = &table.fks[*fi];
        for c in &f.cols {
            if assigned[*c] {
                continue;
            }
            if table.columns[*c].not_null {
                return Err(seed_err(
                    display,
                    Some(&table.columns[*c].name),
                    format!(
                        "it references {}, which is excluded or cannot be seeded",
                        f.parent_name
                    ),
                    format!(
                        "seed {} too (remove it from `exclude`), or exclude {display}",
                        f.parent_name
                    ),
                ));
            }
            tp.cols[*c].generator = Gen::Null;
            assigned[*c] = true;
        }
    }
    Ok(())
}

/// Phase: how each foreign key picks its parent row (the primary parent
/// first: its columns follow the layout; then self references, the tenant,
/// the same tenant, uniform), and which columns they fill.
#[allow(clippy::too_many_arguments)]
pub(super) fn fk_picks(
    primary: Option<usize>,
    pi: usize,
    my_tree: bool,
    order: &[usize],
    tenant: Option<usize>,
    in_tree: &[bool],
    t_rows: Option<u64>,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> HashMap<usize, usize> {
    // Foreign keys: primary first.
    let mut fk_order: Vec<usize> = (0..tp.fks.len()).collect();
    if let Some(p) = primary {
        fk_order.retain(|x| *x != p);
        fk_order.insert(0, p);
    }
    let mut fk_cols: HashMap<usize, usize> = HashMap::new();
    for fi in fk_order {
        let f = &mut tp.fks[fi];
        f.pick = if Some(fi) == primary {
            Pick::Primary
        } else if f.parent == pi {
            Pick::SelfRef
        } else if my_tree && Some(order[f.parent]) == tenant {
            Pick::Tenant
        } else if my_tree && in_tree.get(f.parent).copied().unwrap_or(false) {
            Pick::SameTenant
        } else {
            Pick::Uniform
        };
        if f.pick == Pick::Tenant && tp.cum.len() <= 2 && t_rows.unwrap_or(0) > 1 {
            f.pick = Pick::Uniform;
        }
        if f.nullable && !matches!(f.pick, Pick::Primary) {
            f.null_p = 0.1;
        }
        for (part, c) in f.cols.iter().enumerate() {
            if !assigned[*c] {
                tp.cols[*c].generator = Gen::Fk { fk: fi, part };
                assigned[*c] = true;
                fk_cols.insert(*c, fi);
            }
        }
    }
    fk_cols
}

/// Phase (after the keys): a foreign key the server's CHECKs read that is
/// in no unique key is redrawn with the other columns those CHECKs read:
/// an attempt picks another parent row (`person_a <> person_b` over one
/// parent, a CHECK calling a function that reads the parent), uniformly
/// for the primary parent (the layout places the row's first draw only).
/// A key a unique key or the tenant decides is an input and stays, as does
/// one a solved CHECK or the spec sets.
pub(super) fn redrawn_fks(
    table: &crate::catalog::schema::Table,
    facts: &[ColFacts],
    tp: &mut TablePlan,
) {
    let sc = &tp.checked;
    if sc.is_empty() {
        return;
    }
    let read = sc.cols();
    // In a key no other column holds unique alone (a unique text, a
    // sequence; not an ordinal, unique only within its parent).
    let in_key = |c: &usize| {
        table.uniques.iter().any(|u| {
            u.cols.contains(c)
                && !u.cols.iter().any(|o| {
                    let g = &tp.cols[*o].generator;
                    o != c && g.is_unique() && !matches!(g, Gen::Ordinal { .. })
                })
        })
    };
    let solved = |c: &usize| sc.solved.iter().any(|s| s.cols.contains(c));
    let mut add: Vec<usize> = Vec::new();
    for f in &tp.fks {
        let random = matches!(
            f.pick,
            Pick::Primary | Pick::Uniform | Pick::SameTenant | Pick::SelfRef
        );
        let own = f
            .cols
            .iter()
            .all(|&c| matches!(tp.cols[c].generator, Gen::Fk { .. }));
        if random
            && own
            && f.cols.iter().any(|c| read.contains(c))
            && !f.cols.iter().any(|c| in_key(c) || solved(c))
        {
            add.extend(
                f.cols
                    .iter()
                    .filter(|c| sc.redraw.binary_search(c).is_err()),
            );
        }
    }
    redraw_columns(tp, table, facts, add);
}

/// Phase (after the keys): foreign keys into one parent that a CHECK keeps
/// apart (`entity0 <> entity1`, [`check_expr::apart_columns`]) are decided
/// together, so no row needs another attempt: one of them draws among the
/// parent's rows minus those the others picked. Which one does is what the
/// keys left free: a uniform (or same-tenant) pick avoids any other; a
/// joint digit avoids another digit of its group or a key that every
/// unique key over it holds too (its radix one less per key avoided: the
/// group still enumerates each combination once, rows lowered to fit); a
/// pick distinct within its primary parent avoids that parent (at most
/// one child fewer per parent). Two keys the keys decide otherwise (a
/// layout, each parent once) stay as they are: the server's CHECK decides
/// them, as before.
pub(super) fn apart_picks(
    table: &crate::catalog::schema::Table,
    primary: Option<usize>,
    tables: &[TablePlan],
    tp: &mut TablePlan,
) {
    for (fa, fb) in apart_pairs(table, &tp.fks) {
        let Some((dep, other)) = apart_dependent(table, primary, tp, fa, fb) else {
            continue;
        };
        // Never a cycle: `other` must not avoid `dep`, even through others.
        if avoids(&tp.fks, other, dep) {
            continue;
        }
        let name = |f: usize| table.columns[tp.fks[f].cols[0]].name.clone();
        let (dep_name, other_name) = (name(dep), name(other));
        let fits = match tp.fks[dep].pick.clone() {
            Pick::Joint { group, digit } => joint_apart(tp, group, digit, &dep_name),
            Pick::DistinctInParent => {
                // One parent fewer to choose among: at most n - 1 children each.
                let n = tables.get(tp.fks[dep].parent).map_or(0, |p| p.rows);
                let most = max_children(tp, tables);
                if n >= 2 && most > n - 1 {
                    let why = format!(
                        "{dep_name} must differ from {other_name} and be distinct within each parent, and the parent has {n} row(s)"
                    );
                    cap_rows(tp, n - 1, true, most, &why);
                }
                n >= 2
            }
            _ => true,
        };
        if fits {
            tp.fks[dep].apart.push(other);
        }
    }
}

/// The pairs of single-column foreign keys (by index, lower first) into
/// the same parent key that the table's CHECKs keep apart.
fn apart_pairs(table: &crate::catalog::schema::Table, fks: &[FkPlan]) -> Vec<(usize, usize)> {
    let single = |c: usize| fks.iter().position(|f| f.cols == [c]);
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for ch in &table.checks {
        for (a, b) in check_expr::apart_columns(&ch.def) {
            let (Some(fa), Some(fb)) = (
                table.column(&a).and_then(single),
                table.column(&b).and_then(single),
            ) else {
                continue;
            };
            let (x, y) = (&fks[fa], &fks[fb]);
            let pair = (fa.min(fb), fa.max(fb));
            if fa != fb
                && x.parent == y.parent
                && x.parent_cols == y.parent_cols
                && !pairs.contains(&pair)
            {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// Of two foreign keys kept apart, the one whose pick avoids the other's
/// row, and the other; None when neither pick can (see [`apart_picks`]).
fn apart_dependent(
    table: &crate::catalog::schema::Table,
    primary: Option<usize>,
    tp: &TablePlan,
    fa: usize,
    fb: usize,
) -> Option<(usize, usize)> {
    let free = |p: &Pick| matches!(p, Pick::Uniform | Pick::SameTenant);
    // A joint digit may avoid a key outside its group when every unique
    // key over it holds that key too: rows equal on such a key have the
    // same rows to avoid, so the digit stays one-to-one among them.
    // Not an ordered pair's digit (its pairs are distinct already).
    let beside = |dep: usize, other: usize| {
        let (d, o) = (tp.fks[dep].cols[0], tp.fks[other].cols[0]);
        let pairs = match tp.fks[dep].pick {
            Pick::Joint { group, .. } => tp.joints[group].pairs.is_some(),
            _ => false,
        };
        !pairs
            && table
                .uniques
                .iter()
                .filter(|u| u.cols.contains(&d))
                .all(|u| u.cols.contains(&o))
    };
    let (pa, pb) = (&tp.fks[fa].pick, &tp.fks[fb].pick);
    Some(match (pa, pb) {
        (
            Pick::Joint {
                group: ga,
                digit: da,
            },
            Pick::Joint {
                group: gb,
                digit: db,
            },
        ) if ga == gb => {
            let (dep, other) = if da < db { (fb, fa) } else { (fa, fb) };
            beside(dep, other).then_some((dep, other))?
        }
        // The later of two free picks avoids the earlier (never both).
        (_, b) if free(b) => (fb, fa),
        (a, _) if free(a) => (fa, fb),
        (Pick::DistinctInParent, _) if primary == Some(fb) => (fa, fb),
        (_, Pick::DistinctInParent) if primary == Some(fa) => (fb, fa),
        (Pick::Joint { .. }, _) if beside(fa, fb) => (fa, fb),
        (_, Pick::Joint { .. }) if beside(fb, fa) => (fb, fa),
        _ => return None,
    })
}

/// Whether foreign key `from` avoids `to`'s row, directly or through the
/// keys it avoids.
fn avoids(fks: &[FkPlan], from: usize, to: usize) -> bool {
    let mut stack = vec![from];
    let mut seen = vec![false; fks.len()];
    while let Some(f) = stack.pop() {
        if f == to {
            return true;
        }
        if !std::mem::replace(&mut seen[f], true) {
            stack.extend(fks[f].apart.iter().copied());
        }
    }
    false
}

/// Digit `digit` of joint group `group` avoids one more key: its radix
/// one less, the group's permutation over the combinations left, rows
/// lowered to them. False (nothing changed) when the digit has no value
/// left.
fn joint_apart(tp: &mut TablePlan, group: usize, digit: usize, col: &str) -> bool {
    let r = tp.joints[group].radices[digit];
    if r < 2 {
        return false;
    }
    let why = format!(
        "its unique key has {{}} combinations where {col} differs from the keys a CHECK keeps it apart from"
    );
    joint_radix(tp, group, digit, r - 1, &why);
    true
}

/// Digit `digit` of joint group `group` takes `radix` values: the group's
/// permutation over the combinations left, rows lowered to them (`why`,
/// its `{}` the count of combinations, says why).
fn joint_radix(tp: &mut TablePlan, group: usize, digit: usize, radix: u64, why: &str) {
    let g = &mut tp.joints[group];
    g.radices[digit] = radix;
    let product = g
        .radices
        .iter()
        .fold(1u128, |a, r| a * u128::from(*r))
        .min(u128::from(u64::MAX)) as u64;
    g.perm = Permutation::new(product.max(1), rng::mix(tp.key ^ group as u64));
    if product < tp.rows {
        let why = why.replace("{}", &product.to_string());
        cap_rows(tp, product, false, 0, &why);
    }
}

/// Phase (after the keys, before [`apart_picks`]): a single-column
/// foreign key into a table of reference rows (keys the migrations wrote,
/// `listed`) whose CHECKs bound its values (`type IN (1, 3)`, `type <> 2`,
/// read as facts) picks only the parent rows whose keys they admit
/// ([`FkPlan::only`](crate::seed::row::plan::FkPlan)): the pick is decided
/// with the CHECK, as the parent's keys are known. A key a unique key
/// decides has that many parents fewer to enumerate (its joint digit's
/// radix, each parent once), rows lowered to fit. None admitted: a
/// nullable key is always NULL, a NOT NULL one is an error naming it.
pub(super) fn narrowed_picks(
    table: &crate::catalog::schema::Table,
    display: &str,
    facts: &[ColFacts],
    listed: &HashMap<usize, std::sync::Arc<Vec<Val>>>,
    tables: &[TablePlan],
    tp: &mut TablePlan,
) -> Result<()> {
    for fi in 0..tp.fks.len() {
        let f = &tp.fks[fi];
        let [c] = f.cols[..] else { continue };
        let Some(keys) = listed.get(&c) else { continue };
        // What the facts say of the key's value alone (a list, bounds,
        // excluded values); an order against another column is
        // `ordered_picks`'s.
        let bounds = ColFacts {
            in_list: facts[c].in_list.clone(),
            lo: facts[c].lo.clone(),
            hi: facts[c].hi.clone(),
            not_eq: facts[c].not_eq.clone(),
            ..ColFacts::default()
        };
        if !check_expr::bounds_values(&bounds) {
            continue;
        }
        let held = tables.get(f.parent).map_or(keys.len() as u64, |p| p.rows);
        let rows: Vec<u64> = keys
            .iter()
            .enumerate()
            .filter(|(i, k)| (*i as u64) < held && check_expr::admits(&bounds, k))
            .map(|(i, _)| i as u64)
            .collect();
        if rows.len() as u64 == held {
            continue;
        }
        let name = table.columns[c].name.clone();
        let parent = tables
            .get(f.parent)
            .map_or("its parent", |p| p.display.as_str());
        if rows.is_empty() && !f.nullable {
            let checks: Vec<&str> = table
                .checks
                .iter()
                .filter(|ch| ch.cols.contains(&c))
                .map(|ch| ch.name.as_str())
                .collect();
            return Err(seed_err(
                display,
                Some(&name),
                format!(
                    "its CHECK constraints ({}) admit none of the keys {parent} holds",
                    checks.join(", ")
                ),
                format!("add a row its CHECKs admit to {parent}, or exclude {display}"),
            ));
        }
        let n = rows.len() as u64;
        let why = format!(
            "{name} may take only the {n} key(s) of {parent} its CHECK constraints admit, and its unique key has {{}} combinations"
        );
        match f.pick.clone() {
            Pick::Joint { group, digit } if tp.joints[group].radices[digit] > n => {
                if tp.joints[group].pairs.is_some() {
                    // An ordered pair enumerates rows, not admitted keys.
                    continue;
                }
                joint_radix(tp, group, digit, n.max(1), &why);
            }
            Pick::UniqueGlobal if n < tp.rows && !f.nullable => {
                cap_rows(tp, n, false, 0, &why.replace("{}", &n.to_string()));
            }
            Pick::DistinctInParent => {
                let most = max_children(tp, tables);
                if most > n {
                    let why = format!(
                        "{name} must be distinct within each parent and may take only the {n} key(s) of {parent} its CHECK constraints admit"
                    );
                    cap_rows(tp, n, true, most, &why);
                }
            }
            _ => {}
        }
        tp.fks[fi].only = Some(std::sync::Arc::new(rows));
    }
    Ok(())
}

/// Phase (after the keys, before [`apart_picks`]): two single-column
/// foreign keys into one parent key that a CHECK orders (`tag1 < tag2`,
/// read as the facts' `after`), each drawn freely (uniform, or within the
/// tenant), are drawn as they are and the lower parent key goes to the
/// lower column ([`FkPlan::order`](crate::seed::row::plan::FkPlan)); for
/// `<` the higher one also avoids the lower one's row, so they never tie.
/// Keys of a kind whose order planck knows (integers, uuids). Two digits
/// of one joint enumeration (a unique key over the pair and more columns,
/// `UNIQUE (tag1, tag2, link_order)`) become its ordered pair instead
/// ([`joint_in_order`]).
pub(super) fn ordered_picks(
    table: &crate::catalog::schema::Table,
    facts: &[ColFacts],
    tables: &[TablePlan],
    tp: &mut TablePlan,
) {
    let free = |p: &Pick| matches!(p, Pick::Uniform | Pick::SameTenant);
    for (hi, f) in facts.iter().enumerate() {
        for (lo_name, strict) in &f.after {
            let single = |c: usize| tp.fks.iter().position(|f| f.cols == [c]);
            let (Some(fl), Some(fh)) = (table.column(lo_name).and_then(single), single(hi)) else {
                continue;
            };
            let (a, b) = (&tp.fks[fl], &tp.fks[fh]);
            let ordered_kind = tables.get(a.parent).is_some_and(|p| {
                let k = &p.cols[a.parent_cols[0]].kind;
                k.is_int() || matches!(k, TypeKind::Uuid)
            });
            if fl == fh
                || a.parent != b.parent
                || a.parent_cols != b.parent_cols
                || a.order.is_some()
                || b.order.is_some()
                || !ordered_kind
            {
                continue;
            }
            if let (
                Pick::Joint { group, digit: dl },
                Pick::Joint {
                    group: g2,
                    digit: dh,
                },
            ) = (a.pick.clone(), b.pick.clone())
                && group == g2
            {
                joint_in_order(tp, tables, group, dl, dh, *strict);
                continue;
            }
            // The primary parent's pick too, when no unique key holds it
            // (the layout places the row's first draw only).
            let in_key = |f: &FkPlan| {
                table
                    .uniques
                    .iter()
                    .any(|u| f.cols.iter().any(|c| u.cols.contains(c)))
            };
            let movable = |f: &FkPlan| free(&f.pick) || (f.pick == Pick::Primary && !in_key(f));
            if !movable(a) || !movable(b) || (a.pick == Pick::Primary && b.pick == Pick::Primary) {
                continue;
            }
            // For `<`, the free one avoids the other's row (a primary
            // pick follows the layout).
            let (dep, other) = if free(&b.pick) { (fh, fl) } else { (fl, fh) };
            if *strict && !avoids(&tp.fks, other, dep) {
                tp.fks[dep].apart.push(other);
            }
            tp.fks[fl].order = Some((fh, true));
            tp.fks[fh].order = Some((fl, false));
        }
    }
}

/// Digits `lo` and `hi` of joint group `group` (two foreign keys into one
/// parent a CHECK orders) become the group's ordered pair: the group
/// enumerates ordered pairs of parent rows beside its other digits (see
/// `SeedPlan::joint_digit`), its digits renumbered so the pair comes
/// first, rows lowered to the combinations left. Only when both digits
/// count the same parent rows and the group is no pair yet.
fn joint_in_order(
    tp: &mut TablePlan,
    tables: &[TablePlan],
    group: usize,
    lo: usize,
    hi: usize,
    strict: bool,
) {
    let g = &tp.joints[group];
    if g.pairs.is_some() || g.radices[lo] != g.radices[hi] || lo == hi {
        return;
    }
    // The new order of the digits: the pair, then the others as they were.
    let mut order = vec![lo, hi];
    order.extend((0..g.radices.len()).filter(|d| *d != lo && *d != hi));
    let new_of = |d: usize| order.iter().position(|x| *x == d).unwrap_or(d);
    let fk_lo = tp
        .fks
        .iter()
        .position(|f| f.pick == Pick::Joint { group, digit: lo });
    // Parent keys in row order (a sequence) or put in order by value.
    let sorted = fk_lo.is_none_or(|fi| {
        let f = &tp.fks[fi];
        tables.get(f.parent).is_none_or(|p| {
            !matches!(p.cols[f.parent_cols[0]].generator, Gen::Sequence { step, .. } if step > 0)
        })
    });
    for f in &mut tp.fks {
        if let Pick::Joint { group: fg, digit } = f.pick
            && fg == group
        {
            f.pick = Pick::Joint {
                group,
                digit: new_of(digit),
            };
        }
    }
    for c in &mut tp.cols {
        let mut gen_ = &mut c.generator;
        while let Gen::Nullable { inner, .. } = gen_ {
            gen_ = inner;
        }
        if let Gen::Joint {
            group: cg, digit, ..
        } = gen_
            && *cg == group
        {
            *digit = new_of(*digit);
        }
    }
    let g = &mut tp.joints[group];
    g.radices = order.iter().map(|d| g.radices[*d]).collect();
    g.pairs = Some(strict);
    g.sorted = sorted;
    let rest = g.radices[2..].iter().fold(1u128, |a, r| a * u128::from(*r));
    let product = (u128::from(crate::seed::row::plan::pair_count(g.radices[0], strict)) * rest)
        .min(u128::from(u64::MAX)) as u64;
    g.perm = Permutation::new(product.max(1), rng::mix(tp.key ^ group as u64));
    if product < tp.rows {
        let why =
            format!("its unique key has {product} combinations with its two ordered keys in order");
        cap_rows(tp, product, false, 0, &why);
    }
}
