//! Foreign keys: which parent each one points to in the plan, how it picks
//! its parent row (the primary parent's layout, the tenant, the same
//! tenant, uniform), the existing keys of a reference parent, and the
//! columns of keys into tables planck does not seed.

use std::collections::HashMap;

use crate::catalog::schema::Schema;
use crate::error::Result;
use crate::seed::check_expr::ColFacts;
use crate::seed::reference::ReferenceKeys;
use crate::seed::row::generate::{Gen, Val};
use crate::seed::row::plan::{FkPlan, Pick, TablePlan};
use crate::seed::row::rng;

use super::context::{Resolved, redraw_columns, seed_err};

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
    let in_key = |c: &usize| table.uniques.iter().any(|u| u.cols.contains(c));
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
