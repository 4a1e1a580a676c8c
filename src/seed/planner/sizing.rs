//! How many rows each table gets (issue 47's side of the planner): the
//! defaults read from the schema's shape (a table's role in the foreign-key
//! graph, [`crate::seed::sizing_roles`]: the core at `--rows` and growing
//! down its NOT NULL keys, configuration tables small, reference data as
//! it is, picked skewed), a `per = "parent"` table's counts per parent row, the tenant
//! table (named or inferred) and the skew its blocks carry down the
//! foreign-key tree, a table's place under its primary parent, and the
//! lowering of a table's rows that keys ask for ([`cap_rows`]: a unique key
//! with fewer values than rows). A table's count is settled while it is
//! planned, before any table after it reads it: children draw their keys
//! from the rows their parent holds in the end.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::catalog::schema::Schema;
use crate::error::{Error, Result};
use crate::seed::row::plan::{FkPlan, Layout, TablePlan};
use crate::seed::row::rng::{self, ValueRng};
use crate::seed::sizing_roles::{self, Role, Shape};
use crate::seed::spec::{self, Count, Dist, SpecFile};

use super::context::{Options, Pass, Resolved};

/// Rows of a table nothing else sizes, before --scale. Chosen so that a
/// zero-spec seed can be judged by explain: a root table gets 25,000 rows and
/// its children twice their parent's, so a three-level schema's core table
/// holds 100,000, ten times explain's `min_rows` (10,000). Measured on the
/// debug build (issue 48): a four-table multi-tenant schema (225,000 rows)
/// in 3.3 s, the bundled example's eleven tables (1.1 M rows) in 19 s.
pub const DEFAULT_ROWS: u64 = 25_000;

/// The most rows of one table (as `--rows` allows).
pub const MAX_TABLE_ROWS: u64 = 1_000_000_000_000;
/// The most rows of a table whose rows planning holds one number for each
/// (the tenant table, the parent of a `per` table): 8 bytes a row.
pub const MAX_HELD_ROWS: u64 = 200_000_000;

/// Rows beyond what planck plans, named with the flags that made them.
fn too_many(what: &str, rows: u64, opts: &Options, why: &str) -> Error {
    let scale = if opts.scale == 1.0 {
        String::new()
    } else {
        format!(" with --scale {}", opts.scale)
    };
    Error::usage_hint(
        format!("{what} would get {rows} rows{scale}: too many ({why})"),
        "lower --scale or --rows, or the table's `rows` in the spec",
    )
}

/// Cumulative allocation of `total` rows over blocks by weight, with fixed counts.
fn allocate(total: u64, weights: &[f64], fixed: &BTreeMap<usize, u64>) -> Vec<u64> {
    let fixed_sum: u64 = fixed.values().sum();
    let rem = total.saturating_sub(fixed_sum);
    let w: Vec<f64> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if fixed.contains_key(&i) {
                0.0
            } else {
                w.max(0.0)
            }
        })
        .collect();
    let wsum: f64 = w.iter().sum();
    let last = w.iter().rposition(|x| *x > 0.0);
    let mut cum = Vec::with_capacity(w.len() + 1);
    cum.push(0u64);
    let mut acc = 0.0;
    let mut prev_target = 0u64;
    let mut run = 0u64;
    for (i, wi) in w.iter().enumerate() {
        acc += wi;
        let target = if Some(i) == last {
            rem
        } else if wsum > 0.0 {
            ((rem as f64) * acc / wsum).floor().min(rem as f64) as u64
        } else {
            0
        };
        let target = target.max(prev_target);
        run += target - prev_target + fixed.get(&i).copied().unwrap_or(0);
        prev_target = target;
        cum.push(run);
    }
    cum
}

fn count_sample(c: &Count, h: u64, zipf_cdf: &[f64]) -> u64 {
    let mut r = ValueRng::new(h);
    match c {
        Count::Fixed(n) => *n,
        Count::Range([a, b]) => r.range(*a.min(b), *a.max(b)),
        Count::Zipf { .. } => {
            let u = r.unit();
            zipf_cdf.partition_point(|x| *x <= u) as u64 + 1
        }
        Count::Lognormal { lognormal, mean } => {
            let z = r.normal();
            (mean * libm::exp(lognormal * z - lognormal * lognormal / 2.0))
                .round()
                .max(0.0) as u64
        }
    }
}

/// Phase: the tenant table, named in the spec or inferred.
pub(super) fn tenant_of(cat: &Schema, sf: &SpecFile, res: &Resolved) -> Result<Option<usize>> {
    let tenant = match &sf.spec.tenant {
        Some(t) => {
            let tn = &t.get_ref().table;
            let Some(ti) = cat.find(tn.get_ref()) else {
                let hint =
                    crate::error::suggest(tn.get_ref(), cat.tables.iter().map(|t| t.name.as_str()))
                        .map_or_else(
                            || {
                                "the tenant table holds one row per tenant, e.g. `accounts`"
                                    .to_string()
                            },
                            |s| format!("did you mean `{s}`?"),
                        );
                return Err(sf.error(
                    tn.span(),
                    format!("unknown tenant table `{}`", tn.get_ref()),
                    Some(hint),
                ));
            };
            if res.excluded.contains(&ti) {
                return Err(sf.error(
                    tn.span(),
                    format!("the tenant table `{}` is excluded", tn.get_ref()),
                    Some("remove it from `exclude`".into()),
                ));
            }
            Some(ti)
        }
        None => infer_tenant(cat, &res.excluded),
    };
    Ok(tenant)
}

/// Phase (rows of a `per = "parent"` table): each parent row's child count,
/// drawn from the spec's `count`; returns the running sums over the parent's rows.
fn per_parent_counts(ts: &spec::TableSpec, p: &TablePlan, display: &str, seed: u64) -> Vec<u64> {
    let count = ts
        .count
        .as_ref()
        .map(|c| c.get_ref().clone())
        .unwrap_or(Count::Fixed(1));
    let zipf_cdf: Vec<f64> = match &count {
        Count::Zipf { zipf, max } => {
            let w: Vec<f64> = (1..=(*max).max(1))
                .map(|k| 1.0 / libm::pow(k as f64, *zipf))
                .collect();
            let s: f64 = w.iter().sum();
            let mut acc = 0.0;
            w.iter()
                .map(|x| {
                    acc += x / s;
                    acc
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let ck = rng::name_key(&format!("{display}#count"));
    let mut pcum = Vec::with_capacity(p.rows as usize + 1);
    pcum.push(0u64);
    let mut run = 0u64;
    for q in 0..p.rows {
        run = run.saturating_add(count_sample(&count, rng::hash(seed, ck, 0, q), &zipf_cdf));
        pcum.push(run);
    }
    pcum
}

/// Where a table sits in the foreign-key tree: its primary parent (the
/// foreign key its rows are laid out under), whether it is in the tenant
/// tree, and its depth under its parents.
pub(super) struct Placement {
    pub(super) primary: Option<usize>,
    pub(super) in_tree: bool,
    pub(super) depth: usize,
}

/// The primary parent of table `ci` among its foreign keys `fks` (none for
/// the tenant table; the `per` parent when the spec names one; else the
/// deepest NOT NULL parent in the tenant tree, outside an ordered `pair`:
/// the columns of two foreign keys a CHECK orders, see
/// [`super::keys::ordered_pair`]), and the table's place in the tree.
pub(super) fn placement(
    p: &Pass,
    pi: usize,
    ci: usize,
    fks: &[FkPlan],
    pair: Option<[usize; 2]>,
) -> Placement {
    let placed = |f: &FkPlan| f.parent < pi;
    let tree_parent = |f: &FkPlan, in_tree: &[bool]| placed(f) && in_tree[f.parent];
    let is_tenant = Some(ci) == p.tenant;
    let in_pair = |f: &FkPlan| pair.is_some_and(|p| f.cols.len() == 1 && p.contains(&f.cols[0]));
    let primary: Option<usize> = if is_tenant {
        None
    } else if let Some(per) = p.res.per.get(&ci) {
        fks.iter()
            .position(|f| placed(f) && p.order[f.parent] == *per && !f.nullable)
    } else {
        fks.iter()
            .enumerate()
            .filter(|(_, f)| placed(f) && !f.nullable && !in_pair(f))
            .max_by_key(|(i, f)| (tree_parent(f, p.in_tree), p.depth[f.parent], usize::MAX - i))
            .map(|(i, _)| i)
    };
    let in_tree = is_tenant || primary.is_some_and(|k| tree_parent(&fks[k], p.in_tree));
    let depth = fks
        .iter()
        .filter(|f| placed(f))
        .map(|f| p.depth[f.parent] + 1)
        .max()
        .unwrap_or(0);
    Placement {
        primary,
        in_tree,
        depth,
    }
}

/// Table `ci`'s rows and blocks: its layout under its primary parent, its
/// row count (the spec's, per parent row, or from its parents and the
/// defaults) and the cumulative rows per block (per tenant in the tree).
pub(super) fn table_rows(
    p: &Pass,
    ci: usize,
    tspec: Option<&spec::TableSpec>,
    fks: &[FkPlan],
    place: &Placement,
) -> Result<(Layout, u64, Vec<u64>)> {
    let (cat, sf, opts) = (p.cat, p.sf, p.opts);
    let spec = &sf.spec;
    let display = cat.tables[ci].display();
    let scaled = |n: u64| (n as f64 * opts.scale).round() as u64;
    let is_tenant = Some(ci) == p.tenant;
    let primary = place.primary;
    let base_rows = p.base_rows;
    let tables = p.tables;
    let t_rows = p.tenant_rows();
    let mut layout = Layout::Flat;
    let rows: u64;
    let mut cum: Vec<u64>;
    if let Some(ts) = tspec.filter(|s| s.per.is_some()) {
        let fk = primary.unwrap_or(0);
        let p = &tables[fks[fk].parent];
        if p.rows > MAX_HELD_ROWS {
            return Err(too_many(
                &format!("{} (parent of the `per` table {display})", p.display),
                p.rows,
                opts,
                "a count per parent row is held in memory for every parent row",
            ));
        }
        let pcum = per_parent_counts(ts, p, &display, opts.seed);
        let run = *pcum.last().unwrap_or(&0);
        rows = run;
        cum = p.cum.iter().map(|&c| pcum[c as usize]).collect();
        layout = Layout::PerParent { fk, pcum };
    } else {
        rows = match tspec.and_then(|s| s.rows) {
            Some(n) => scaled(n),
            None if is_tenant => base_rows.round() as u64,
            None => shaped_rows(p, ci, fks),
        };
        // A tenant table scaled down to nothing would surface later as a
        // puzzling "heavy tenant 1 does not exist"; name the cause here.
        let asked = tspec
            .and_then(|s| s.rows)
            .unwrap_or_else(|| opts.default_rows.or(spec.rows).unwrap_or(DEFAULT_ROWS));
        if is_tenant && rows == 0 && asked > 0 && opts.scale < 1.0 {
            let scale = crate::output::number(opts.scale);
            return Err(Error::usage_hint(
                format!(
                    "--scale {scale} leaves the tenant table {display} with 0 rows: {asked} rows × {scale} rounds down to 0"
                ),
                format!(
                    "raise --scale to at least {} so {display} keeps a row",
                    1.0 / asked as f64
                ),
            ));
        }
        cum = vec![0, rows];
        if let Some(fk) = primary {
            let parent = &tables[fks[fk].parent];
            layout = if tspec.and_then(|s| s.rows).is_none()
                && !place.in_tree
                && is_reference(p, parent.cat)
                && parent.rows > 0
                && parent.cum.len() == 2
            {
                // Kept rows are picked skewed, as production's are (the
                // first category holds the most threads): an even spread
                // over 3 categories is no shape a plan meets.
                Layout::PerParent {
                    fk,
                    pcum: sizing_roles::skewed_pcum(rows, parent.rows),
                }
            } else {
                Layout::Child { fk }
            };
        }
    }
    if rows > MAX_TABLE_ROWS {
        return Err(too_many(
            &display,
            rows,
            opts,
            "planck seeds at most 10^12 rows a table",
        ));
    }
    if is_tenant && rows > MAX_HELD_ROWS {
        return Err(too_many(
            &format!("{display} (the tenant table)"),
            rows,
            opts,
            "each tenant's share is held in memory",
        ));
    }
    if is_tenant {
        cum = (0..=rows).collect();
    } else if place.in_tree && matches!(layout, Layout::Child { .. }) {
        cum = tree_alloc(
            sf,
            spec,
            opts,
            tables,
            fks,
            primary.unwrap_or(0),
            ci,
            cat,
            p.tenant,
            t_rows.unwrap_or(0),
            rows,
            p.pos,
        )?;
    }

    // Blocks are the truth: several heavy tenants may ask for more than `rows`.
    let rows = if cum.len() > 2 {
        *cum.last().unwrap_or(&0)
    } else {
        rows
    };
    Ok((layout, rows, cum))
}

/// Whether table `ci` keeps the rows it holds (reference data: the keys
/// foreign keys into it pick among were read, or refused).
fn is_reference(p: &Pass, ci: usize) -> bool {
    p.opts.reference_keys.contains_key(&p.cat.tables[ci].oid) || p.opts.refused.contains_key(&ci)
}

/// Every table's role in this pass, from the foreign-key graph of the
/// tables it plans (see [`sizing_roles`]).
fn shapes(p: &Pass) -> Vec<Option<Shape>> {
    let mut nodes = sizing_roles::nodes(
        p.cat,
        |i| !p.res.excluded.contains(&i),
        |i| is_reference(p, i),
        |i| {
            p.res
                .tables
                .get(&i)
                .map(|s| s.get_ref())
                .filter(|s| s.rows.is_some() || s.per.is_some())
                .map(|_| "in the spec".to_string())
        },
        p.tenant,
    );
    // A table holding rows the run does not keep as reference data is grown
    // past them: a part of the core. (Rows an earlier seed wrote that
    // --truncate replaces read as none: `sizing_roles::forget_replaced`.)
    for (i, n) in nodes.iter_mut().enumerate() {
        if n.seeded && !n.reference && p.cat.tables[i].has_rows {
            n.grown = Some(String::new());
        }
    }
    sizing_roles::classify(&nodes)
}

/// Rows of table `ci`, which neither the spec nor the tenancy sizes, from
/// its role (issue 47): a configuration table a few dozen; a core table
/// twice its largest core parent's rows (through a NOT NULL foreign key, at
/// most 10 × the base), or the base at a root of the core. A parent kept as
/// reference data sizes nothing: a forum's users are not twice its 4 groups.
/// NOT NULL is the plan's: a CHECK may ask a nullable key for a value
/// (koji's `rpminfo (build_id, draft)`), which the catalog's graph cannot see.
fn shaped_rows(p: &Pass, ci: usize, fks: &[FkPlan]) -> u64 {
    let base = p.base_rows.round() as u64;
    let placed = |f: &FkPlan| f.parent < p.pos[&ci];
    let shapes = shapes(p);
    let Some(shape) = shapes.get(ci).and_then(Option::as_ref) else {
        return base;
    };
    if shape.role == Role::Configuration {
        return sizing_roles::configuration_rows(p.base_rows);
    }
    // A subtype (a one-to-one child by its key): its share of the parent's
    // rows, the parent's subtypes splitting them.
    if let Some((parent, k)) = shape.shares
        && let Some(f) = fks
            .iter()
            .find(|f| placed(f) && p.order[f.parent] == parent)
    {
        return p.tables[f.parent].rows / k.max(1);
    }
    fks.iter()
        .filter(|f| placed(f) && !f.nullable)
        .filter(|f| {
            shapes[p.order[f.parent]]
                .as_ref()
                .is_some_and(|s| !matches!(s.role, Role::Reference | Role::Configuration))
        })
        .map(|f| p.tables[f.parent].rows)
        .max()
        .map_or(base, |m| {
            m.saturating_mul(2).min((p.base_rows * 10.0).round() as u64)
        })
}

/// With no `[tenant]` in the spec: the table that at least two tables
/// reference through a NOT NULL `tenant_id`/`account_id`/`org_id`/
/// `organization_id`/`workspace_id` column, if there is one. Its rows become
/// tenants of zipf-distributed sizes, so even a zero-spec load is skewed the
/// way multi-tenant production data is.
fn infer_tenant(cat: &Schema, excluded: &HashSet<usize>) -> Option<usize> {
    const NAMES: &[&str] = &[
        "tenant_id",
        "account_id",
        "org_id",
        "organization_id",
        "workspace_id",
    ];
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for (ti, t) in cat.tables.iter().enumerate() {
        if excluded.contains(&ti) {
            continue;
        }
        for f in &t.fks {
            let Some(p) = f.parent else { continue };
            if f.cols.len() != 1 || p == ti || excluded.contains(&p) {
                continue;
            }
            let c = &t.columns[f.cols[0]];
            if c.not_null && NAMES.contains(&c.name.as_str()) {
                *counts.entry(p).or_default() += 1;
            }
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .max_by_key(|(p, n)| (*n, usize::MAX - *p))
        .map(|(p, _)| p)
}

/// Most children any one parent row has.
pub(super) fn max_children(tp: &TablePlan, tables: &[TablePlan]) -> u64 {
    match &tp.layout {
        Layout::Flat => tp.rows,
        Layout::PerParent { pcum, .. } => pcum.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0),
        Layout::Child { fk } => {
            let p = &tables[tp.fks[*fk].parent];
            (0..tp.cum.len() - 1)
                .map(|b| {
                    let cx = tp.cum[b + 1] - tp.cum[b];
                    let cp = p.cum[b + 1] - p.cum[b];
                    if cp == 0 { 0 } else { cx.div_ceil(cp) }
                })
                .max()
                .unwrap_or(0)
        }
    }
}

/// Lowers a zero-spec table's rows so a limited unique domain suffices, and
/// says so (`why`: the constraint and the values it has).
pub(super) fn cap_rows(
    tp: &mut TablePlan,
    allowed: u64,
    within: bool,
    max_per_parent: u64,
    why: &str,
) {
    let before = tp.rows;
    lower_rows(tp, allowed, within, max_per_parent);
    if tp.rows < before {
        tp.notices.push(format!(
            "{}: {before} rows lowered to {}: {why}",
            tp.display, tp.rows
        ));
    }
}

fn lower_rows(tp: &mut TablePlan, allowed: u64, within: bool, max_per_parent: u64) {
    let new_rows = if within && max_per_parent > 0 {
        (tp.rows as u128 * u128::from(allowed) / u128::from(max_per_parent)) as u64
    } else {
        allowed
    };
    if new_rows >= tp.rows {
        return;
    }
    if let Layout::PerParent { pcum, .. } = &mut tp.layout {
        // Every parent's children scaled alike (down, each alone), so a
        // bound per parent holds for each; the blocks follow their parents.
        let old_pcum = pcum.clone();
        let old_total = tp.rows.max(1);
        let mut run = 0u64;
        for (q, w) in old_pcum.windows(2).enumerate() {
            run += (u128::from(w[1] - w[0]) * u128::from(new_rows) / u128::from(old_total)) as u64;
            pcum[q + 1] = run;
        }
        tp.cum = tp
            .cum
            .iter()
            .map(|c| pcum[old_pcum.partition_point(|x| x < c)])
            .collect();
        tp.rows = run;
        return;
    }
    tp.rows = new_rows;
    if tp.cum.len() == 2 {
        tp.cum = vec![0, new_rows];
    } else {
        // Scale every block down.
        let old = tp.cum.clone();
        let old_total = *old.last().unwrap_or(&0);
        tp.cum = old
            .iter()
            .map(|c| {
                if old_total == 0 {
                    0
                } else {
                    (u128::from(*c) * u128::from(new_rows) / u128::from(old_total)) as u64
                }
            })
            .collect();
        tp.rows = *tp.cum.last().unwrap_or(&0);
    }
}

/// Tenant weights for the blocks of a table directly under the tenant table.
fn tenant_weights(spec: &spec::Spec, opts: &Options, t_rows: u64, t_key: u64) -> Vec<f64> {
    let dist = spec
        .tenant
        .as_ref()
        .and_then(|t| t.get_ref().distribution.as_ref())
        .map(|d| d.get_ref().clone());
    (0..t_rows)
        .map(|b| match &dist {
            Some(Dist::Named(n)) if n == "uniform" => 1.0,
            Some(Dist::Lognormal { lognormal }) => {
                let mut r = ValueRng::new(rng::hash(opts.seed, t_key, 1, b));
                libm::exp(lognormal * r.normal())
            }
            Some(Dist::Zipf { zipf }) => 1.0 / libm::pow((b + 1) as f64, *zipf),
            _ => 1.0 / (b + 1) as f64,
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn tree_alloc(
    sf: &SpecFile,
    spec: &spec::Spec,
    opts: &Options,
    tables: &[TablePlan],
    fks: &[FkPlan],
    fk: usize,
    ci: usize,
    cat: &Schema,
    tenant: Option<usize>,
    t_rows: u64,
    rows: u64,
    pos: &HashMap<usize, usize>,
) -> Result<Vec<u64>> {
    let p = &tables[fks[fk].parent];
    let parent_is_tenant = Some(p.cat) == tenant;
    let mut weights: Vec<f64> = if parent_is_tenant {
        tenant_weights(spec, opts, t_rows, p.key)
    } else {
        p.cum.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    };
    let mut fixed: BTreeMap<usize, u64> = BTreeMap::new();
    if let Some(ts) = &spec.tenant {
        if let Some(d) = &ts.get_ref().distribution
            && let Dist::Named(n) = d.get_ref()
            && n != "uniform"
        {
            return Err(sf.error(
                d.span(),
                format!("unknown distribution `{n}`"),
                Some("use \"uniform\", { zipf = 1.1 } or { lognormal = 1.0 }".into()),
            ));
        }
        for h in &ts.get_ref().heavy {
            let hv = h.get_ref();
            let applies = match &hv.table {
                Some(tn) => {
                    let Some(hi) = cat.find(tn.get_ref()) else {
                        return Err(sf.error(
                            tn.span(),
                            format!("unknown table `{}` in a heavy tenant", tn.get_ref()),
                            crate::error::suggest(
                                tn.get_ref(),
                                cat.tables.iter().map(|t| t.name.as_str()),
                            )
                            .map(|s| format!("did you mean `{s}`?")),
                        ));
                    };
                    if !pos.contains_key(&hi) {
                        return Err(sf.error(
                            tn.span(),
                            format!("table `{}` of a heavy tenant is excluded", tn.get_ref()),
                            None,
                        ));
                    }
                    hi == ci
                }
                None => parent_is_tenant,
            };
            if !applies {
                continue;
            }
            match (hv.tenant, hv.top, hv.rows, hv.share) {
                (Some(n), None, r, s) if r.is_some() != s.is_some() => {
                    if n == 0 || n > t_rows {
                        return Err(sf.error(
                            h.span(),
                            format!("heavy tenant {n} does not exist: there are {t_rows} tenants"),
                            Some("tenants are numbered from 1".into()),
                        ));
                    }
                    let want = match (r, s) {
                        (Some(r), _) => (r as f64 * opts.scale).round() as u64,
                        (_, Some(s)) => (s * rows as f64).round() as u64,
                        _ => 0,
                    };
                    if want > rows {
                        return Err(sf.error(h.span(), format!("heavy tenant {n} should own {want} rows of {}, which has only {rows}", cat.tables[ci].display()), Some("raise the table's `rows` or lower the tenant's".into())));
                    }
                    let b = (n - 1) as usize;
                    fixed.insert(b, if weights[b] > 0.0 { want } else { 0 });
                }
                (None, Some(k), None, Some(share)) if (0.0..=1.0).contains(&share) => {
                    let k = (k as usize).min(weights.len());
                    let top: f64 = weights[..k].iter().sum();
                    let rest: f64 = weights[k..].iter().sum();
                    if top > 0.0 && rest > 0.0 {
                        for (i, w) in weights.iter_mut().enumerate() {
                            *w *= if i < k {
                                share / top
                            } else {
                                (1.0 - share) / rest
                            };
                        }
                    }
                }
                _ => {
                    return Err(sf.error(h.span(), "a heavy tenant is `{ tenant = N, rows = R }`, `{ tenant = N, share = S }` or `{ top = K, share = S }`".to_string(), Some("`table` is optional; `share` is between 0 and 1".into())));
                }
            }
        }
    }
    let cum = allocate(rows, &weights, &fixed);
    if let Some(total) = cum.last()
        && *total < rows
        && fixed.is_empty()
        && weights.iter().all(|w| *w == 0.0)
    {
        return Ok(vec![0; t_rows as usize + 1]);
    }
    Ok(cum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_is_exact_and_respects_fixed_counts() {
        let mut fixed = BTreeMap::new();
        fixed.insert(0, 30);
        let cum = allocate(100, &[1.0, 1.0, 1.0, 0.0, 1.0], &fixed);
        assert_eq!(cum.len(), 6);
        assert_eq!(*cum.last().unwrap(), 100);
        assert_eq!(cum[1] - cum[0], 30);
        assert_eq!(cum[4] - cum[3], 0, "a zero weight gets nothing");
    }
}
