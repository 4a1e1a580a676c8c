//! One planning pass, the assembly: tables in load order (parents first, a
//! cycle broken where fewest parents are missing), each planned by running
//! the decisions in turn (checks, foreign keys, rows, the spec's
//! generators, partitions, keys, the remaining columns), a table that
//! cannot be planned set aside with its cause and the tables that depend on
//! it.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::catalog::schema::Schema;
use crate::error::{Error, Result};
use crate::seed::check_expr::ColFacts;
use crate::seed::row::generate::Gen;
use crate::seed::row::plan::{
    ColPlan, FkPlan, Layout, Pick, SeedPlan, ServerChecks, TablePlan, Unseedable,
};
use crate::seed::row::rng;
use crate::seed::spec::SpecFile;

use super::checks::{check_facts, fixed_key_columns, shape_of, with_solved};
use super::context::{Options, Pass, Resolved, seed_err};
use super::fks::{
    apart_picks, fk_picks, fks_set_by_checks, listed_parent_keys, narrowed_picks, ordered_picks,
    orphan_columns, redrawn_fks, table_fks,
};
use super::generators::{expression_keys, remaining_columns, spec_fits_columns, spec_generators};
use super::keys::{
    exclusion_slots, exclusions_supported, free_unique_columns, keys_fit, ordered_pair,
    spec_unique_ints, uniqueness,
};
use super::observed::observed_fk_nulls;
use super::partition_keys::partition_keys;
use super::sizing::{DEFAULT_ROWS, placement, table_rows};

/// Orders tables parents first; a cycle is broken at the table with the fewest
/// unplaced parents (its edges back into the cycle are then "back edges").
fn order(cat: &Schema, seeded: &[usize]) -> Vec<usize> {
    let set: HashSet<usize> = seeded.iter().copied().collect();
    let parents: HashMap<usize, HashSet<usize>> = seeded
        .iter()
        .map(|&t| {
            let ps = cat.tables[t]
                .fks
                .iter()
                .filter_map(|f| f.parent)
                .filter(|p| *p != t && set.contains(p))
                .collect();
            (t, ps)
        })
        .collect();
    let mut placed: Vec<usize> = Vec::new();
    let mut done: HashSet<usize> = HashSet::new();
    while placed.len() < seeded.len() {
        let ready: Vec<usize> = seeded
            .iter()
            .copied()
            .filter(|t| !done.contains(t) && parents[t].iter().all(|p| done.contains(p)))
            .collect();
        let next = if ready.is_empty() {
            // A cycle: take the table with the fewest missing parents.
            seeded
                .iter()
                .copied()
                .filter(|t| !done.contains(t))
                .min_by_key(|t| (parents[t].iter().filter(|p| !done.contains(p)).count(), *t))
                .into_iter()
                .collect()
        } else {
            ready
        };
        for t in next {
            done.insert(t);
            placed.push(t);
        }
    }
    placed
}

/// A stand-in for a table this pass could not plan: it keeps the positions
/// of the pass's later tables; the pass is then thrown away.
fn placeholder(table: &crate::catalog::schema::Table, ci: usize) -> TablePlan {
    TablePlan {
        cat: ci,
        oid: table.oid,
        display: table.display(),
        qualified: table.qualified(),
        key: 0,
        rows: 0,
        notices: Vec::new(),
        partitioned: table.partitioned,
        cols: Vec::new(),
        layout: Layout::Flat,
        cum: vec![0, 0],
        fks: Vec::new(),
        joints: Vec::new(),
        sequences: Vec::new(),
        checked: Default::default(),
    }
}

/// A table a pass could not plan, with its error (None for a cascade).
pub(super) type Found = (Unseedable, Option<Error>);

/// Most rounds [`plan_settled`] plans a pass in before it gives up on the
/// rows settling.
const ROUNDS: usize = 8;

/// [`plan_pass`] until every table's rows are settled before any table
/// reads them (issue 47 point 2): a table planned before its parent (a
/// back edge of a cycle) draws its keys from what the parent holds in the
/// end, which the parent's own planning may lower (a unique key with fewer
/// values than rows). Each round plans every table again with the rows the
/// round before settled, until a round gives every table the rows it was
/// planned with; a schema without a back edge takes one round. The plan
/// returned never draws a key beyond its parent's rows (checked: see
/// [`key_beyond_parent`]).
pub(super) fn plan_settled(
    cat: &Schema,
    sf: &SpecFile,
    opts: &Options,
    res: &Resolved,
    tenant: Option<usize>,
    unseedable: &BTreeMap<usize, Unseedable>,
) -> Result<std::result::Result<SeedPlan, Vec<Found>>> {
    let mut settled: HashMap<usize, u64> = HashMap::new();
    for _ in 0..ROUNDS {
        let plan = match plan_pass(cat, sf, opts, res, tenant, unseedable, &settled)? {
            Ok(plan) => plan,
            Err(found) => return Ok(Err(found)),
        };
        let back_edges = plan
            .tables
            .iter()
            .enumerate()
            .any(|(t, tp)| tp.fks.iter().any(|f| f.parent > t));
        let rows: HashMap<usize, u64> = plan.tables.iter().map(|tp| (tp.cat, tp.rows)).collect();
        if !back_edges || rows == settled {
            return match key_beyond_parent(&plan) {
                None => Ok(Ok(plan)),
                Some(message) => Err(Error::Internal { message }),
            };
        }
        settled = rows;
    }
    Err(Error::Internal {
        message: format!("the tables' rows did not settle in {ROUNDS} planning rounds"),
    })
}

/// A foreign key that would draw a parent row the parent does not hold
/// (a joint enumeration over more parent rows than it has, each parent
/// once for more rows than parents), named; None when every key the plan
/// draws exists. Planning settles the rows so this never happens: it
/// stops a plan that would end in the server's 23503 after the load.
fn key_beyond_parent(plan: &SeedPlan) -> Option<String> {
    for tp in &plan.tables {
        for f in &tp.fks {
            let p = &plan.tables[f.parent];
            let beyond = match f.pick {
                Pick::Joint { group, digit } => {
                    let g = &tp.joints[group];
                    let radix = if g.pairs.is_some() {
                        g.radices[0]
                    } else {
                        g.radices[digit]
                    };
                    radix > p.rows
                }
                Pick::UniqueGlobal => tp.rows > p.rows && !f.nullable,
                _ => false,
            };
            if beyond && p.rows > 0 {
                return Some(format!(
                    "planning drew keys of {} ({}) beyond the {} rows of {}",
                    tp.display, f.name, p.rows, p.display
                ));
            }
        }
    }
    None
}

/// One planning pass over the tables `res` does not exclude: the plan, or
/// every table the pass found it cannot seed (the caller excludes them and
/// plans again). `unseedable` holds the tables earlier passes set aside, to
/// name them as the cause of a cascade; `settled`, by catalog index, the
/// rows the round before gave each table (see [`plan_settled`]).
fn plan_pass(
    cat: &Schema,
    sf: &SpecFile,
    opts: &Options,
    res: &Resolved,
    tenant: Option<usize>,
    unseedable: &BTreeMap<usize, Unseedable>,
    settled: &HashMap<usize, u64>,
) -> Result<std::result::Result<SeedPlan, Vec<Found>>> {
    let spec = &sf.spec;
    let seeded: Vec<usize> = (0..cat.tables.len())
        .filter(|i| !res.excluded.contains(i))
        .collect();
    let order = order(cat, &seeded);
    let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let later: Vec<Option<u64>> = order.iter().map(|t| settled.get(t).copied()).collect();
    let base_rows = opts.default_rows.or(spec.rows).unwrap_or(DEFAULT_ROWS) as f64 * opts.scale;
    // A tenant table that cannot be seeded takes the tenancy with it.
    let tenant = tenant.filter(|t| !unseedable.contains_key(t));

    let mut tables: Vec<TablePlan> = Vec::new();
    let mut in_tree: Vec<bool> = Vec::new();
    let mut depth: Vec<usize> = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    let mut followed_recording: Vec<String> = Vec::new();
    // Schema indices of the tables this pass could not plan.
    let mut failed: HashSet<usize> = HashSet::new();

    for (pi, &ci) in order.iter().enumerate() {
        let table = &cat.tables[ci];
        let planned = match blocked(cat, ci, opts, unseedable, &failed) {
            Some(cause) => {
                if let Some(f) = cause {
                    found.push(f);
                    failed.insert(ci);
                }
                tables.push(placeholder(table, ci));
                in_tree.push(false);
                depth.push(0);
                continue;
            }
            None => {
                let pass = Pass {
                    cat,
                    sf,
                    opts,
                    res,
                    tenant,
                    order: &order,
                    pos: &pos,
                    base_rows,
                    tables: &tables,
                    in_tree: &in_tree,
                    depth: &depth,
                    later: &later,
                };
                plan_table(&pass, pi, ci, &mut followed_recording)
            }
        };
        match planned {
            Ok((tp, my_tree, my_depth)) => {
                in_tree.push(my_tree);
                depth.push(my_depth);
                tables.push(tp);
            }
            // A flag's value (--scale, --rows) is no table's problem.
            Err(e @ Error::Usage { .. }) => return Err(e),
            Err(e) => {
                found.push((Unseedable::of(ci, &table.display(), &e), Some(e)));
                failed.insert(ci);
                tables.push(placeholder(table, ci));
                in_tree.push(false);
                depth.push(0);
            }
        }
    }

    if !found.is_empty() {
        return Ok(Err(found));
    }
    let found = parents_without_rows(&tables);
    if !found.is_empty() {
        return Ok(Err(found));
    }
    let excluded = res.excluded.iter().copied().collect();
    Ok(Ok(SeedPlan {
        seed: opts.seed,
        tables,
        tenant: tenant.and_then(|t| pos.get(&t).copied()),
        excluded,
        skipped: Vec::new(),
        followed_recording,
    }))
}

/// Whether table `ci` waits out this pass: `Some(None)` when a foreign key
/// of it points to a table this pass failed (the next pass decides),
/// `Some(Some(found))` when it cannot be seeded: a NOT NULL foreign key
/// into a table set aside or failed (a cascade), or a reference table
/// foreign keys cannot pick among.
fn blocked(
    cat: &Schema,
    ci: usize,
    opts: &Options,
    unseedable: &BTreeMap<usize, Unseedable>,
    failed: &HashSet<usize>,
) -> Option<Option<Found>> {
    let table = &cat.tables[ci];
    // A NOT NULL foreign key into a table set aside is a cascade; a
    // foreign key into one this pass failed waits for the next pass.
    let cascade = table.fks.iter().find_map(|f| {
        let p = f.parent.filter(|p| *p != ci)?;
        let not_null = f.cols.iter().all(|c| table.columns[*c].not_null);
        (not_null && (unseedable.contains_key(&p) || failed.contains(&p))).then_some(p)
    });
    if let Some(p) = cascade {
        let u = Unseedable {
            cat: ci,
            table: table.display(),
            cause: format!(
                "{}: depends on {}",
                table.display(),
                cat.tables[p].display()
            ),
            hints: Vec::new(),
            depends_on: Some(cat.tables[p].display()),
        };
        return Some(Some((u, None)));
    }
    if table
        .fks
        .iter()
        .any(|f| f.parent.is_some_and(|p| failed.contains(&p)))
    {
        return Some(None);
    }
    opts.refused.get(&ci).map(|u| Some((u.clone(), None)))
}

/// The tables that reference, through a NOT NULL foreign key, a parent that
/// got no rows.
fn parents_without_rows(tables: &[TablePlan]) -> Vec<Found> {
    let mut found = Vec::new();
    for tp in tables {
        for f in &tp.fks {
            if tables[f.parent].rows == 0 && !f.nullable && tp.rows > 0 {
                let p = &tables[f.parent].display;
                let e = seed_err(
                    &tp.display,
                    None,
                    format!("it references {p}, which gets no rows"),
                    format!("give {p} some rows in the spec, or exclude {}", tp.display),
                );
                found.push((Unseedable::of(tp.cat, &tp.display, &e), Some(e)));
                break;
            }
        }
    }
    found
}

/// Plans table `ci`, at position `pi` of the load order: its plan, whether
/// it is in the tenant tree and its depth.
fn plan_table(
    p: &Pass,
    pi: usize,
    ci: usize,
    followed_recording: &mut Vec<String>,
) -> Result<(TablePlan, bool, usize)> {
    let (cat, sf, opts, res) = (p.cat, p.sf, p.opts, p.res);
    let table = &cat.tables[ci];
    let display = table.display();
    let tspec = res.tables.get(&ci).map(|s| s.get_ref());
    let referenced: Vec<usize> = cat
        .tables
        .iter()
        .flat_map(|t| &t.fks)
        .filter(|f| f.parent == Some(ci))
        .flat_map(|f| f.parent_cols.iter().copied())
        .collect();
    let listed = listed_parent_keys(cat, table, &opts.reference_keys, res);
    let (facts, checked) = check_facts(table, ci, &display, res, &referenced, &listed)?;

    // Foreign keys to seeded parents; the primary parent.
    let (mut fks, orphan_fks) = table_fks(table, ci, pi, p.pos, res);
    fks_set_by_checks(&facts, &mut fks);
    let pair = ordered_pair(table, &facts, &fks, p.tables, pi);
    let place = placement(p, pi, ci, &fks, pair.map(|p| [p.lo, p.hi]));
    let primary = place.primary;
    let sized_by_spec = tspec.is_some_and(|s| s.rows.is_some() || s.per.is_some());
    let (layout, rows, cum) = table_rows(p, ci, tspec, &fks, &place)?;
    let mut tp = new_table_plan(table, ci, rows, layout, cum, fks, &facts, checked);
    spec_fits_columns(sf, res, ci, table)?;
    exclusions_supported(table, &display)?;
    let (mut assigned, spec_span) = spec_generators(sf, res, table, ci, &facts, &mut tp)?;
    spec_unique_ints(sf, res, ci, table, &spec_span, &mut tp)?;
    let fk_cols = fk_picks(
        primary,
        pi,
        place.in_tree,
        p.order,
        p.tenant,
        p.in_tree,
        p.tenant_rows(),
        &mut tp,
        &mut assigned,
    );
    orphan_columns(table, &display, &orphan_fks, &mut tp, &mut assigned)?;
    // Null ratios given in the spec for FK columns.
    for (c, fi) in &fk_cols {
        if let Some(cs) = res.columns.get(&(ci, *c))
            && let Some(p) = cs.get_ref().null
        {
            tp.fks[*fi].null_p = p;
        }
    }

    partition_keys(table, &display, &mut tp, &mut assigned)?;
    exclusion_slots(table, &display, &mut tp, &mut assigned)?;
    expression_keys(table, &facts, &mut tp, &mut assigned);

    uniqueness(
        sf,
        res,
        (ci, pi, primary, pair),
        table,
        &display,
        &facts,
        &spec_span,
        &fk_cols,
        sized_by_spec,
        (p.tables, p.later),
        &mut tp,
        &mut assigned,
    )?;
    narrowed_picks(table, &display, &facts, &listed, p.tables, &mut tp)?;
    ordered_picks(table, &facts, p.tables, &mut tp);
    apart_picks(table, primary, p.tables, &mut tp);
    let observed = (&opts.observed, &mut *followed_recording);
    remaining_columns(table, &display, &facts, &mut tp, &assigned, observed)?;
    observed_fk_nulls(table, &opts.observed, &mut tp, followed_recording);
    free_unique_columns(table, &facts, &referenced, &mut tp);
    redrawn_fks(table, &facts, &mut tp);
    fixed_key_columns(table, &mut tp);
    keys_fit(
        table,
        &display,
        &mut tp,
        p.tables,
        !sized_by_spec,
        &spec_span,
    )?;
    Ok((tp, place.in_tree, place.depth))
}

/// Table `ci`'s plan before its generators: its columns with their shapes
/// (generators filled in later), its layout and foreign keys, its
/// sequences and the CHECKs the server evaluates.
#[allow(clippy::too_many_arguments)]
fn new_table_plan(
    table: &crate::catalog::schema::Table,
    ci: usize,
    rows: u64,
    layout: Layout,
    cum: Vec<u64>,
    fks: Vec<FkPlan>,
    facts: &[ColFacts],
    checked: ServerChecks,
) -> TablePlan {
    let display = table.display();
    TablePlan {
        cat: ci,
        oid: table.oid,
        display: display.clone(),
        qualified: table.qualified(),
        key: rng::name_key(&display),
        rows,
        notices: Vec::new(),
        partitioned: table.partitioned,
        cols: table
            .columns
            .iter()
            .zip(facts)
            .enumerate()
            .map(|(i, (c, f))| ColPlan {
                name: c.name.clone(),
                kind: c.kind.clone(),
                generator: Gen::Null,
                include: !c.generated,
                key: rng::name_key(&c.name),
                shape: with_solved(shape_of(c, f), i, &checked).map(|mut s| {
                    s.unique = table.uniques.iter().any(|u| u.cols == [i]);
                    s
                }),
            })
            .collect(),
        layout,
        cum,
        fks,
        joints: Vec::new(),
        sequences: table
            .columns
            .iter()
            .filter_map(|c| c.sequence.clone().map(|s| (s, c.name.clone())))
            .collect(),
        checked,
    }
}
