//! The planner: how many rows each table gets, which parent row every
//! child row belongs to, and the generator of every column, built once from
//! the catalog and the spec into the plan the workers read
//! ([`crate::seed::row::plan::SeedPlan`]).
//!
//! Skew flows down the foreign-key tree: a table under a parent is
//! allocated per tenant in proportion to the parent's rows of that tenant.
//! Uniqueness is by construction: a column of every unique constraint is
//! made unique (sequence, permutation, row-number suffix, ordinal within the
//! parent) or the constraint's columns are enumerated jointly through a
//! permutation of the row index. CHECKs are read into facts the generators
//! honour ([`crate::seed::check_expr`]), solved row by row
//! ([`crate::seed::check_solve`]) or left to the server
//! ([`crate::seed::server_check`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::catalog::schema::{PartitionBounds, Schema, TypeKind};
use crate::error::{Error, Result};
use crate::seed::check_expr::{self, ColFacts};
use crate::seed::check_solve;
use crate::seed::columns::{
    Ctx, DAY, T_HI, T_LO, default_gen, default_is_side_effect_free, make_unique, uniform_choice,
};
use crate::seed::reference::ReferenceKeys;
use crate::seed::regex;
use crate::seed::row::generate::{Gen, Text, Val};
use crate::seed::row::plan::{
    ColPlan, FkPlan, JointGroup, Layout, Pick, SeedPlan, ServerCheck, ServerChecks, TablePlan,
    Unseedable, WITHIN_PARENT, pair_count,
};
use crate::seed::row::rng::{self, Permutation, ValueRng};
use crate::seed::row::shape::{self, CheckDemands};
use crate::seed::row::solved::Solved;
use crate::seed::server_check;
use crate::seed::spec::{self, ColumnSpec, Count, Dist, SpecFile};

/// The fixed seed used when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 20_260_101;
/// Rows of a table nothing else sizes, before --scale. Chosen so that a
/// zero-spec seed can be judged by explain: a root table gets 25,000 rows and
/// its children twice their parent's, so a three-level schema's core table
/// holds 100,000, ten times explain's `min_rows` (10,000). Measured on the
/// debug build (issue 48): a four-table multi-tenant schema (225,000 rows)
/// in 3.3 s, the bundled example's eleven tables (1.1 M rows) in 19 s.
pub const DEFAULT_ROWS: u64 = 25_000;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub seed: u64,
    pub scale: f64,
    pub default_rows: Option<u64>,
    /// The keys reference tables (rows the migrations wrote) hold, by
    /// table oid and column: what foreign keys into them can take.
    pub reference_keys: ReferenceKeys,
    /// Tables kept as reference data whose keys foreign keys cannot pick
    /// among, by catalog index (see [`crate::seed::reference`]): planned as
    /// tables planck cannot seed, so the tables that reference them take
    /// NULL or are left out in turn.
    pub refused: BTreeMap<usize, Unseedable>,
    /// The queries file's `[observed]`: the literals the application
    /// compared columns with, and its NULL tests (see [`observed_gen`]).
    pub observed: crate::queries::Observed,
}

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

/// A planning error about one table/column, with a hint.
fn seed_err(
    table: &str,
    column: Option<&str>,
    message: impl Into<String>,
    hint: impl Into<String>,
) -> Error {
    Error::Seed {
        table: table.to_string(),
        column: column.map(str::to_string),
        message: message.into(),
        hint: Some(hint.into()),
    }
}

#[derive(Clone)]
struct Resolved<'a> {
    /// Schema index -> table spec.
    tables: HashMap<usize, &'a toml::Spanned<spec::TableSpec>>,
    /// (catalog table, column index) -> column spec.
    columns: HashMap<(usize, usize), &'a toml::Spanned<ColumnSpec>>,
    per: HashMap<usize, usize>,
    excluded: HashSet<usize>,
}

fn resolve<'a>(cat: &Schema, sf: &'a SpecFile) -> Result<Resolved<'a>> {
    let names = || cat.tables.iter().map(|t| t.name.as_str());
    let unknown_table = |name: &toml::Spanned<String>, what: &str| {
        let hint = match crate::error::suggest(name.get_ref(), names()) {
            Some(s) => {
                format!("did you mean `{s}`? planck seeds the tables of the migrated database")
            }
            None => "the table must exist in the database (run `planck migrate` first?); \
                     write `schema.table` outside the public schema"
                .to_string(),
        };
        sf.error(
            name.span(),
            format!("unknown table `{}` in {what}", name.get_ref()),
            Some(hint),
        )
    };
    let mut r = Resolved {
        tables: HashMap::new(),
        columns: HashMap::new(),
        per: HashMap::new(),
        excluded: HashSet::new(),
    };
    // planck's own bookkeeping (left by an interrupted run) is never seeded.
    for (i, t) in cat.tables.iter().enumerate() {
        if format!("{}.{}", t.schema, t.name) == crate::bookkeeping::TABLE {
            r.excluded.insert(i);
        }
    }
    for e in &sf.spec.exclude {
        let Some(i) = cat.find(e.get_ref()) else {
            return Err(unknown_table(e, "exclude"));
        };
        r.excluded.insert(i);
    }
    for (name, ts) in &sf.spec.tables {
        let Some(ti) = cat.find(name.get_ref()) else {
            return Err(unknown_table(name, "[tables]"));
        };
        if r.excluded.contains(&ti) {
            return Err(sf.error(
                name.span(),
                format!("table `{}` is both excluded and specified", name.get_ref()),
                Some("remove it from `exclude` or remove its [tables] section".into()),
            ));
        }
        let table = &cat.tables[ti];
        let tsr = ts.get_ref();
        if tsr.rows.is_some() && tsr.per.is_some() {
            return Err(sf.error(
                ts.span(),
                format!("table `{}` has both `rows` and `per`", name.get_ref()),
                Some("give a total (`rows = N`) or a count per parent (`per = \"parent\"`, `count = ...`), not both".into()),
            ));
        }
        if tsr.count.is_some() && tsr.per.is_none() {
            return Err(sf.error(
                ts.span(),
                format!("table `{}` has `count` without `per`", name.get_ref()),
                Some("`count` is the number of rows per row of the `per` table".into()),
            ));
        }
        if let Some(per) = &tsr.per {
            let Some(pi) = cat.find(per.get_ref()) else {
                return Err(unknown_table(per, "`per`"));
            };
            let ok = table.fks.iter().any(|f| {
                f.parent == Some(pi)
                    && pi != ti
                    && f.cols.iter().all(|c| table.columns[*c].not_null)
            });
            if !ok {
                return Err(sf.error(
                    per.span(),
                    format!("`{}` has no NOT NULL foreign key to `{}`", name.get_ref(), per.get_ref()),
                    Some("`per` names a parent table the rows reference through a NOT NULL foreign key".into()),
                ));
            }
            r.per.insert(ti, pi);
        }
        r.tables.insert(ti, ts);
        for (cname, cs) in &tsr.columns {
            let Some(ci) = table.column(cname.get_ref()) else {
                let hint = match crate::error::suggest(
                    cname.get_ref(),
                    table.columns.iter().map(|c| c.name.as_str()),
                ) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!(
                        "columns of {}: {}",
                        table.display(),
                        table
                            .columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                return Err(sf.error(
                    cname.span(),
                    format!(
                        "unknown column `{}` of table `{}`",
                        cname.get_ref(),
                        table.display()
                    ),
                    Some(hint),
                ));
            };
            if table.columns[ci].generated {
                return Err(sf.error(
                    cname.span(),
                    format!(
                        "column `{}.{}` is generated by the server",
                        table.display(),
                        cname.get_ref()
                    ),
                    Some(
                        "remove it from the spec: planck leaves generated columns to PostgreSQL"
                            .into(),
                    ),
                ));
            }
            r.columns.insert((ti, ci), cs);
        }
    }
    Ok(r)
}

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
fn tenant_of(cat: &Schema, sf: &SpecFile, res: &Resolved) -> Result<Option<usize>> {
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

/// Phase: what the table's CHECK constraints (and its columns' domains)
/// say about each column, and the constraints left to the server. A CHECK
/// is native when [`check_expr::facts`] reads it and its facts fit the
/// columns' types (see [`native_fits`]); anything else is evaluated by the
/// server over candidate rows at load time (see [`server_check`]).
fn check_facts(
    table: &crate::catalog::schema::Table,
    ci: usize,
    display: &str,
    res: &Resolved,
    referenced: &[usize],
    listed: &HashMap<usize, std::sync::Arc<Vec<Val>>>,
) -> Result<(Vec<ColFacts>, ServerChecks)> {
    let r = Reading {
        table,
        ci,
        display,
        res,
        listed,
    };
    let (mut facts, mut checks) = table_check_facts(&r)?;
    domain_check_facts(&r, &mut facts, &mut checks)?;
    let solved = solve_checks(table, ci, res, &facts, &checks);
    let (redraw, nullable) = redrawn(table, referenced, &facts, &checks);
    Ok((
        facts,
        ServerChecks {
            checks,
            redraw,
            nullable,
            solved,
        },
    ))
}

/// A table's CHECKs being read by [`check_facts`].
struct Reading<'a> {
    table: &'a crate::catalog::schema::Table,
    ci: usize,
    display: &'a str,
    res: &'a Resolved<'a>,
    listed: &'a HashMap<usize, std::sync::Arc<Vec<Val>>>,
}

impl Reading<'_> {
    /// A foreign key's value is its parent's key: a fact on it holds only
    /// when every key the parent holds meets it (a reference table's).
    fn honoured(&self, m: &BTreeMap<String, ColFacts>) -> bool {
        let table = self.table;
        m.iter().all(|(name, f)| {
            let Some(c) = table.column(name) else {
                return true;
            };
            if !table.fks.iter().any(|k| k.cols.contains(&c)) || !check_expr::bounds_values(f) {
                return true;
            }
            self.listed.get(&c).is_some_and(|keys| {
                !keys.is_empty() && keys.iter().all(|k| check_expr::admits(f, k))
            })
        })
    }

    /// A column the spec gives a generator keeps it: a shape (regex, case,
    /// NULL pattern) would overwrite its values, so the server checks them.
    fn spec_shaped(&self, m: &BTreeMap<String, ColFacts>) -> bool {
        m.iter().any(|(name, f)| {
            self.table
                .column(name)
                .is_some_and(|c| self.res.columns.contains_key(&(self.ci, c)))
                && (f.regex.is_some()
                    || f.lower
                    || f.trim
                    || f.nonempty
                    || f.nulls.is_some()
                    || f.is_null)
        })
    }

    fn unreadable(&self, def: &str, col: Option<&str>) -> Error {
        seed_err(
            self.display,
            col,
            format!("cannot read the CHECK definition `{def}`"),
            "this is a bug in planck: please report it with the schema",
        )
    }

    /// An OR whose branches ask different things of several columns (koji's
    /// `cg_sane`, concourse's `addr_when_running`, hatchet's `auth_method`
    /// branches) read natively keeps one branch for every row: the solver
    /// takes it instead, a branch per row (issue 30). Not when its reading
    /// is a NULL group, which varies per row already (`p IS NULL OR q IS
    /// NULL`), when a branch is beyond the solver, or when a column is a
    /// foreign key to a listed table (the native reading picks the branch
    /// those keys honour).
    fn per_row(&self, ch: &crate::catalog::schema::CheckConstraint) -> bool {
        let table = self.table;
        ch.cols.len() >= 2
            && check_expr::is_or(&ch.def)
            && !ch.cols.iter().any(|c| {
                self.listed.contains_key(c) && table.fks.iter().any(|k| k.cols.contains(c))
            })
            && !check_expr::facts(&ch.def, None)
                .is_some_and(|m| m.values().any(|f| f.nulls.is_some()))
            && check_solve::solve(table, &ch.name, &ch.def)
                .is_some_and(|s| s.branches.len() >= 2 && s.branches.iter().all(|b| !b.opaque))
    }
}

/// The facts of the table's own CHECKs, and the CHECKs left to the server.
fn table_check_facts(r: &Reading) -> Result<(Vec<ColFacts>, Vec<ServerCheck>)> {
    let table = r.table;
    let honoured = |m: &BTreeMap<String, ColFacts>| r.honoured(m);
    let mut facts: Vec<ColFacts> = Vec::new();
    let mut checks: Vec<ServerCheck> = Vec::new();
    // Facts are merged CHECK by CHECK, and an OR keeps one branch for every
    // row: branches kept apart can contradict each other or another CHECK
    // (supabase-auth's `provider_type IN ('oauth2', 'oidc')` with
    // `provider_type <> 'oauth2' OR ...` and `provider_type <> 'oidc' OR
    // ...`: no value left). A second pass leaves the ORs over a column whose
    // facts contradict to the server, which decides row by row.
    let mut demoted: Vec<usize> = Vec::new();
    for pass in 0..2 {
        facts = vec![ColFacts::default(); table.columns.len()];
        checks.clear();
        let mut read: Vec<(usize, Vec<usize>)> = Vec::new();
        for (k, ch) in table.checks.iter().enumerate() {
            // A column holds one NULL group: a second group over it (graphile's
            // `(user_id IS NULL) <> (email IS NULL)` with `(code IS NULL) =
            // (email IS NULL)`) goes to the server, which redraws its other columns.
            let regrouped = |m: &BTreeMap<String, ColFacts>, facts: &[ColFacts]| {
                m.iter().any(|(name, f)| {
                    f.nulls.is_some()
                        && table
                            .column(name)
                            .is_some_and(|c| facts[c].nulls.is_some_and(|g| Some(g) != f.nulls))
                })
            };
            let native = if demoted.contains(&k) || r.per_row(ch) {
                None
            } else {
                check_expr::facts_where(&ch.def, None, &honoured)
                    .filter(|m| native_fits(table, m) && !r.spec_shaped(m) && !regrouped(m, &facts))
            };
            match native {
                Some(m) => {
                    let mut cols = Vec::new();
                    for (name, f) in m {
                        if let Some(c) = table.column(&name) {
                            check_expr::merge(&mut facts[c], f);
                            cols.push(c);
                        }
                    }
                    read.push((k, cols));
                }
                None => checks.push(ServerCheck {
                    name: ch.name.clone(),
                    def: ch.def.clone(),
                    expr: server_check::check_body(&ch.def)
                        .ok_or_else(|| r.unreadable(&ch.def, None))?,
                    domain_col: None,
                    cols: ch.cols.clone(),
                }),
            }
        }
        let bad: Vec<usize> = (0..facts.len())
            .filter(|c| check_expr::contradicts(&facts[*c]))
            .collect();
        let more: Vec<usize> = read
            .iter()
            .filter(|(k, cols)| {
                cols.iter().any(|c| bad.contains(c)) && check_expr::is_or(&table.checks[*k].def)
            })
            .map(|(k, _)| *k)
            .collect();
        if pass == 1 || more.is_empty() {
            break;
        }
        demoted = more;
    }
    Ok((facts, checks))
}

/// The facts of the columns' domains' CHECKs merged into `facts`; those
/// planck does not read go to the server.
fn domain_check_facts(
    r: &Reading,
    facts: &mut [ColFacts],
    checks: &mut Vec<ServerCheck>,
) -> Result<()> {
    let table = r.table;
    for (c, col) in table.columns.iter().enumerate() {
        for d in &col.domain_checks {
            match check_expr::facts(d, Some(&col.name))
                .filter(|m| native_fits(table, m) && !r.spec_shaped(m))
            {
                Some(m) => {
                    for (_, f) in m {
                        check_expr::merge(&mut facts[c], f);
                    }
                }
                None => checks.push(ServerCheck {
                    name: format!("of the domain of {} ({})", col.name, col.type_name),
                    def: d.clone(),
                    expr: server_check::check_body(d)
                        .ok_or_else(|| r.unreadable(d, Some(&col.name)))?,
                    domain_col: Some(c),
                    cols: vec![c],
                }),
            }
        }
    }
    Ok(())
}

/// The columns an attempt redraws for the server's CHECKs, and those of
/// them that may take the NULL resort (both sorted).
fn redrawn(
    table: &crate::catalog::schema::Table,
    referenced: &[usize],
    facts: &[ColFacts],
    checks: &[ServerCheck],
) -> (Vec<usize>, Vec<usize>) {
    // Attempts redraw what the constraints read, except keys (inputs, never
    // redrawn: foreign keys are arithmetic on parent rows) and generated columns.
    // A unique key that holds a smaller one (koji's UNIQUE (id, draft) over
    // PRIMARY KEY (id)) holds whatever its other columns are.
    let implied = |u: &crate::catalog::schema::Unique| {
        table
            .uniques
            .iter()
            .any(|v| v.cols.len() < u.cols.len() && v.cols.iter().all(|c| u.cols.contains(c)))
    };
    // A unique text column alone in its keys, that no foreign key reads,
    // is redrawn too: its generator's fixed-width row suffix keeps it unique
    // whatever the rest of the value (graphile-starter's `username`, unique
    // citext under a regex CHECK).
    let suffix_unique = |c: usize| {
        matches!(table.columns[c].kind, TypeKind::Text)
            && !referenced.contains(&c)
            && table
                .uniques
                .iter()
                .filter(|u| u.cols.contains(&c))
                .all(|u| u.cols.len() == 1 && !u.primary)
    };
    let key = |c: usize| {
        table
            .uniques
            .iter()
            .any(|u| u.cols.contains(&c) && (!implied(u) || u.cols.len() == 1))
            && !suffix_unique(c)
            || table.fks.iter().any(|f| f.cols.contains(&c))
            || table.columns[c].generated
    };
    let mut redraw: Vec<usize> = checks
        .iter()
        .flat_map(|ch| ch.cols.iter().copied())
        .filter(|c| !key(*c))
        .collect();
    redraw.sort_unstable();
    redraw.dedup();
    let nullable = redraw
        .iter()
        .copied()
        .filter(|c| !table.columns[*c].not_null && !facts[*c].not_null && facts[*c].nulls.is_none())
        .collect();
    (redraw, nullable)
}

/// The server's CHECKs the solver makes hold row by row (issue 30 point 2,
/// see [`check_solve`]). A column the spec generates, that another CHECK
/// already shapes (a NULL pattern, a list, a regex) or that an earlier
/// solved CHECK decides is left as it was: the server decides that CHECK.
fn solve_checks(
    table: &crate::catalog::schema::Table,
    ci: usize,
    res: &Resolved,
    facts: &[ColFacts],
    checks: &[ServerCheck],
) -> Vec<std::sync::Arc<Solved>> {
    let mut taken: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for ch in checks.iter().filter(|c| c.domain_col.is_none()) {
        let Some(solved) = check_solve::solve(table, &ch.name, &ch.def) else {
            continue;
        };
        // A column another CHECK lists the values of: the solver draws
        // from those (a row it sets NULL passes the list under three-valued logic).
        let cols = solved.cols.clone();
        let narrowed = cols
            .iter()
            .try_fold(solved, |s, &c| match &facts[c].in_list {
                Some(lits) => s.narrowed(table, c, lits),
                None => Some(s),
            });
        let Some(s) = narrowed else {
            continue;
        };
        let free = s.cols.iter().all(|&c| {
            let f = &facts[c];
            !res.columns.contains_key(&(ci, c))
                && !taken.contains(&c)
                && f.nulls.is_none()
                && !f.is_null
                && f.regex.is_none()
        });
        if free {
            taken.extend(&s.cols);
            out.push(std::sync::Arc::new(s));
        }
    }
    out
}

/// A column's shape with the solved CHECK that decides it (if any).
fn with_solved(
    shape: Option<Box<CheckDemands>>,
    c: usize,
    checked: &ServerChecks,
) -> Option<Box<CheckDemands>> {
    let Some(s) = checked.solved.iter().find(|s| s.cols.contains(&c)) else {
        return shape;
    };
    let mut shape = shape.unwrap_or_default();
    shape.solved = Some(s.clone());
    Some(shape)
}

/// Phase (after uniqueness): a column of a unique key that another column
/// of every such key already keeps unique by construction (a sequence, a
/// unique text or uuid, a foreign key that takes each parent row once) is
/// no key value: redrawing it cannot repeat a key. Those the server's
/// CHECKs read join the columns attempts redraw (graphile-starter's
/// `user_emails`: `is_verified`, in `UNIQUE (email) WHERE is_verified`,
/// read as the key (email, is_verified) that the unique email carries, is
/// redrawn until `is_primary IS FALSE OR is_verified IS TRUE` holds).
fn free_unique_columns(
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
    if add.is_empty() {
        return;
    }
    let nullable: Vec<usize> = add
        .iter()
        .copied()
        .filter(|c| !table.columns[*c].not_null && !facts[*c].not_null && facts[*c].nulls.is_none())
        .collect();
    let sc = &mut tp.checked;
    sc.redraw.extend(add);
    sc.redraw.sort_unstable();
    sc.nullable.extend(nullable);
    sc.nullable.sort_unstable();
}

/// The keys a single-column foreign key can take when its parent is a
/// reference table (rows the migrations wrote, kept as they are), by column.
fn listed_parent_keys(
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

/// Whether the facts of one CHECK fit the columns they name, so generators
/// can honour them: a regex on a text column (not citext, whose `~` ignores
/// case) within the subset [`regex::native_regex`] accepts, case and blanks
/// on text, NULL patterns over nullable columns.
fn native_fits(table: &crate::catalog::schema::Table, m: &BTreeMap<String, ColFacts>) -> bool {
    m.iter().all(|(name, f)| {
        let Some(c) = table.column(name) else {
            return false;
        };
        let col = &table.columns[c];
        let text = col.kind.is_text() && !col.type_name.contains("citext");
        if let Some((p, icase)) = &f.regex
            && (!text
                || regex::native_regex(
                    p,
                    *icase,
                    col.max_len.min(f.max_len).or(col.max_len.or(f.max_len)),
                )
                .is_none())
        {
            return false;
        }
        if (f.lower || f.trim || f.nonempty) && !text {
            return false;
        }
        if (f.nulls.is_some() || f.is_null) && col.not_null {
            return false;
        }
        true
    })
}

/// The shape a column's facts ask of its values (None: nothing beyond bounds).
fn shape_of(col: &crate::catalog::schema::Column, f: &ColFacts) -> Option<Box<CheckDemands>> {
    let max_len = match (col.max_len, f.max_len) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let s = CheckDemands {
        regex: f
            .regex
            .as_ref()
            .and_then(|(p, i)| regex::native_regex(p, *i, max_len))
            .map(std::sync::Arc::new),
        pattern: f.regex.as_ref().map(|r| r.0.clone()),
        lower: f.lower,
        trim: f.trim,
        nonempty: f.nonempty,
        max_len,
        not_eq: f
            .not_eq
            .iter()
            .filter_map(|l| match (l, &col.kind) {
                (check_expr::Lit::Num(n), k) if k.is_int() && n.fract() == 0.0 => {
                    Some(Val::Int(*n as i64))
                }
                (check_expr::Lit::Str(t), k) if k.is_text() => Some(Val::Text(t.clone())),
                _ => None,
            })
            .collect(),
        null: f.is_null,
        solved: None,
        unique: false,
        nulls: f.nulls.map(|(rule, key, index, size)| shape::NullGroup {
            rule,
            key,
            index,
            size,
        }),
    };
    (!s.is_empty()).then(|| Box::new(s))
}

/// A foreign key whose column a native CHECK fact sets (`parent IS NOT
/// NULL OR label IS NULL` read as `parent IS NOT NULL`) is never NULL: a
/// self reference's first row then references itself (koji's `task`).
fn fks_set_by_checks(facts: &[ColFacts], fks: &mut [FkPlan]) {
    for f in fks {
        if f.cols.iter().any(|c| facts[*c].not_null) {
            f.nullable = false;
        }
    }
}

/// Phase: the table's foreign keys to seeded parents (as plan positions),
/// and those to parents planck does not seed.
fn table_fks(
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

/// Phase: a partition key the spec leaves alone gets values inside the
/// partitions' bounds.
fn partition_keys(
    table: &crate::catalog::schema::Table,
    display: &str,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    if let Some(part) = &table.partitioning {
        key_in_bounds(table, display, part, tp, assigned)?;
    }
    sub_partition_keys(table, display, tp, assigned)
}

/// A partition key's generator inside its partitions' bounds.
fn key_in_bounds(
    table: &crate::catalog::schema::Table,
    display: &str,
    part: &crate::catalog::schema::Partitioning,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    if !assigned[part.col] {
        let kind = &table.columns[part.col].kind;
        let conv = |s: &str| -> Option<i64> {
            if kind.is_time() {
                spec::parse_timestamp(s)
            } else {
                s.parse().ok()
            }
        };
        match &part.bounds {
            PartitionBounds::Range(rs) => {
                let ranges: Vec<(i64, i64)> = rs
                    .iter()
                    .filter_map(|(a, b)| {
                        let a = a.as_deref().map_or(Some(T_LO), conv)?;
                        let b = b.as_deref().map_or(Some(T_HI), conv)?;
                        (b > a).then_some((a, b))
                    })
                    .collect();
                if ranges.is_empty() {
                    return Err(seed_err(
                        display,
                        Some(&table.columns[part.col].name),
                        "its partitions' bounds are beyond what planck understands",
                        "give the partition key a `range` in the spec",
                    ));
                }
                tp.cols[part.col].generator = if kind.is_time() {
                    Gen::Ranges(ranges)
                } else {
                    let (a, b) = ranges[0];
                    Gen::Int { lo: a, hi: b - 1 }
                };
                assigned[part.col] = true;
            }
            PartitionBounds::List(vals) => {
                tp.cols[part.col].generator = uniform_choice(
                    vals.iter()
                        .map(|v| match kind {
                            k if k.is_int() => v.parse().map(Val::Int).unwrap_or(Val::Null),
                            _ => Val::Text(v.clone()),
                        })
                        .collect(),
                );
                assigned[part.col] = true;
            }
            PartitionBounds::Any => {}
        }
    }
    Ok(())
}

/// Phase (multi-level partitioning): a key of partitions partitioned in
/// turn, that the spec and the top level leave alone, gets values every
/// such partition routes: the labels all their lists share, or their
/// ranges when they agree. (A partition that is not partitioned again takes
/// any value.)
fn sub_partition_keys(
    table: &crate::catalog::schema::Table,
    display: &str,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    let mut cols: Vec<usize> = table.sub_partitions.iter().map(|p| p.col).collect();
    cols.sort_unstable();
    cols.dedup();
    for c in cols {
        if assigned[c] {
            continue;
        }
        let col = &table.columns[c];
        let levels: Vec<&PartitionBounds> = table
            .sub_partitions
            .iter()
            .filter(|p| p.col == c && !matches!(p.bounds, PartitionBounds::Any))
            .map(|p| &p.bounds)
            .collect();
        let disagree = || {
            seed_err(
                display,
                Some(&col.name),
                "its sub-partitions' bounds have no value in common",
                format!(
                    "give {} a generator in the spec whose values every sub-partition accepts",
                    col.name
                ),
            )
        };
        let Some(first) = levels.first() else {
            continue;
        };
        match first {
            PartitionBounds::List(_) => {
                let mut common: Vec<String> = match first {
                    PartitionBounds::List(v) => v.clone(),
                    _ => Vec::new(),
                };
                for b in &levels[1..] {
                    let PartitionBounds::List(v) = b else {
                        return Err(disagree());
                    };
                    common.retain(|x| v.contains(x));
                }
                if common.is_empty() {
                    return Err(disagree());
                }
                let sub = crate::catalog::schema::Partitioning {
                    col: c,
                    bounds: PartitionBounds::List(common),
                    strategy: 'l',
                    empty: false,
                };
                key_in_bounds(table, display, &sub, tp, assigned)?;
            }
            PartitionBounds::Range(r) => {
                if levels
                    .iter()
                    .any(|b| !matches!(b, PartitionBounds::Range(x) if x == r))
                {
                    return Err(disagree());
                }
                let sub = crate::catalog::schema::Partitioning {
                    col: c,
                    bounds: (*first).clone(),
                    strategy: 'r',
                    empty: false,
                };
                key_in_bounds(table, display, &sub, tp, assigned)?;
            }
            PartitionBounds::Any => {}
        }
    }
    Ok(())
}

/// The NULL share of a nullable column nothing else decided.
const DEFAULT_NULL_SHARE: f64 = 0.1;
/// The NULL share of one the recorded application tests with `IS NULL`:
/// rare, as such columns usually are (a `deleted_at`, an optional link),
/// so the plans of those tests meet the selectivity production gives them.
pub const OBSERVED_NULL_SHARE: f64 = 0.01;

/// How `[observed]` names a column: `schema.table.column`.
fn observed_key(
    table: &crate::catalog::schema::Table,
    col: &crate::catalog::schema::Column,
) -> String {
    format!("{}.{}.{}", table.schema, table.name, col.name)
}

/// The recorded literals of column `c` as a weighted choice (each drawn in
/// proportion to how often the application compared the column with it),
/// for a column no CHECK (the table's or its domain's) and no unique key
/// constrains: a CHECK's own values win, since a recorded literal the CHECK
/// refuses could never be stored, and a unique column cannot repeat a few
/// values. Literals the type cannot hold (an enum's unknown label, text
/// past `varchar(n)`, a non-number in an integer column) are left out;
/// None when none is left or the type is not text, enum or integer.
fn observed_gen(
    table: &crate::catalog::schema::Table,
    c: usize,
    o: &crate::queries::ObservedColumn,
    in_unique: bool,
) -> Option<Gen> {
    let col = &table.columns[c];
    let checked = !col.domain_checks.is_empty() || table.checks.iter().any(|k| k.cols.contains(&c));
    let typed = matches!(col.kind, TypeKind::Text | TypeKind::Enum(_)) || col.kind.is_int();
    if checked || in_unique || !typed {
        return None;
    }
    let (vals, weights): (Vec<Val>, Vec<f64>) = o
        .values
        .iter()
        .filter(|(lit, n)| **n > 0 && col.max_len.is_none_or(|m| lit.chars().count() <= m))
        .filter(|(lit, _)| match &col.kind {
            TypeKind::Enum(labels) => labels.contains(lit),
            _ => true,
        })
        .filter_map(|(lit, n)| {
            let v = if col.kind.is_int() {
                let i: i64 = lit.trim().parse().ok()?;
                let max = col.kind.int_max();
                if i > max || i < -max - 1 {
                    return None;
                }
                Val::Int(i)
            } else {
                Val::Text(lit.clone())
            };
            Some((v, *n as f64))
        })
        .unzip();
    if vals.is_empty() {
        return None;
    }
    Some(Gen::weighted_choice(vals, &weights))
}

/// Phase: a nullable foreign key whose column the recorded application
/// tested with `IS NULL` (an optional parent: `parent_id IS NULL`) is NULL
/// in 1 % of the rows instead of 10 %, like the other columns it tested.
fn observed_fk_nulls(
    table: &crate::catalog::schema::Table,
    observed: &crate::queries::Observed,
    tp: &mut TablePlan,
    followed: &mut Vec<String>,
) {
    for f in tp.fks.iter_mut().filter(|f| f.null_p > 0.0) {
        let tested = f.cols.iter().find(|&&c| {
            let key = observed_key(table, &table.columns[c]);
            observed.columns.get(&key).is_some_and(|o| o.null_tests > 0)
        });
        if let Some(&c) = tested {
            f.null_p = OBSERVED_NULL_SHARE;
            followed.push(format!(
                "{}: NULL share 1 %",
                observed_key(table, &table.columns[c])
            ));
        }
    }
}

/// Phase: every column nothing else filled gets its type's default
/// generator (after another column, NULL now and then, or an error).
fn remaining_columns(
    table: &crate::catalog::schema::Table,
    display: &str,
    facts: &[ColFacts],
    tp: &mut TablePlan,
    assigned: &[bool],
    (observed, followed): (&crate::queries::Observed, &mut Vec<String>),
) -> Result<()> {
    // Everything else.
    for (c, col) in table.columns.iter().enumerate() {
        if col.generated {
            tp.cols[c].include = false;
            continue;
        }
        if assigned[c] {
            continue;
        }
        if let Some((other, strict)) = facts[c].after.first().cloned()
            && let Some(oc) = table.column(&other)
        {
            let fallback = default_gen(table, col, &facts[c]).unwrap_or(Gen::Null);
            tp.cols[c].generator = Gen::After {
                col: oc,
                min: if strict { 1_000_000 } else { 0 },
                max: 30 * DAY,
                fallback: Box::new(fallback),
            };
            continue;
        }
        let in_unique = table.uniques.iter().any(|u| u.cols.contains(&c));
        let seen = observed.columns.get(&observed_key(table, col));
        let recorded = seen.and_then(|o| observed_gen(table, c, o, in_unique));
        let values_followed = recorded.is_some();
        let null_p = match seen {
            Some(o) if o.null_tests > 0 => OBSERVED_NULL_SHARE,
            _ => DEFAULT_NULL_SHARE,
        };
        match recorded.or_else(|| default_gen(table, col, &facts[c])) {
            Some(g) => {
                let nullable = !col.not_null && !facts[c].not_null && !in_unique;
                let mut what = Vec::new();
                if values_followed {
                    what.push("values");
                }
                if nullable && null_p == OBSERVED_NULL_SHARE {
                    what.push("NULL share 1 %");
                }
                if !what.is_empty() {
                    followed.push(format!("{}: {}", observed_key(table, col), what.join(", ")));
                }
                tp.cols[c].generator = if nullable {
                    Gen::Nullable {
                        p: null_p,
                        inner: Box::new(g),
                    }
                } else {
                    g
                };
            }
            None if !col.not_null => tp.cols[c].generator = Gen::Null,
            None if col
                .default
                .as_deref()
                .is_some_and(default_is_side_effect_free) =>
            {
                tp.cols[c].include = false
            }
            None => {
                let why = match &col.default {
                    Some(d) => format!(
                        "planck cannot produce values of type {}, and its default {d} calls a function that may have side effects, so planck does not let the server run it",
                        col.type_name
                    ),
                    None => format!("planck cannot produce values of type {}", col.type_name),
                };
                return Err(seed_err(
                    display,
                    Some(&col.name),
                    why,
                    format!(
                        "exclude {} in the spec (`exclude = [\"{}\"]`), or give the column a DEFAULT without side effects (a constant, now(), gen_random_uuid(), nextval)",
                        display, table.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Two single-column foreign keys into one parent, unique together and
/// ordered by a CHECK (`tag1 < tag2`): `lo` must stay below `hi`.
#[derive(Debug, Clone, Copy)]
struct OrderedPair {
    lo: usize,
    hi: usize,
    strict: bool,
    /// The parent's keys are not in row order: order each pair by value.
    sorted: bool,
}

/// The ordered pair of a table, when the parent's key grows with its row
/// number (a sequence), so the order of rows is the order of keys.
fn ordered_pair(
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
fn exclusions_supported(table: &crate::catalog::schema::Table, display: &str) -> Result<()> {
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
fn exclusion_slots(
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

/// Phase: what the spec says of a column must suit the column's type: a
/// `range` inside what the type holds (`[0, 100000]` on a smallint wrapped
/// in the encoder), `after` naming a column of the same kind of time.
fn spec_fits_columns(
    sf: &SpecFile,
    res: &Resolved,
    ci: usize,
    table: &crate::catalog::schema::Table,
) -> Result<()> {
    for (c, col) in table.columns.iter().enumerate() {
        let Some(cs) = res.columns.get(&(ci, c)) else {
            continue;
        };
        let cs = cs.get_ref();
        if let Some(r) = &cs.range {
            let limits: Option<(f64, f64)> = match (&col.kind, col.numeric) {
                (k, _) if k.is_int() => {
                    let max = k.int_max() as f64;
                    Some((-max - 1.0, max))
                }
                (TypeKind::Numeric, Some((p, s))) if p > s => {
                    let max = 10f64.powi((p - s) as i32);
                    Some((-max, max))
                }
                _ => None,
            };
            let value = |v: &spec::Scalar| match v {
                spec::Scalar::Int(i) => Some(*i as f64),
                spec::Scalar::Float(f) => Some(*f),
                _ => None,
            };
            if let Some((lo, hi)) = limits {
                for v in r.get_ref() {
                    if let Some(x) = value(v)
                        && !(lo..=hi).contains(&x)
                    {
                        return Err(sf.error(
                            r.span(),
                            format!(
                                "`range` of {}.{}: {x} is beyond {} ({lo} to {hi})",
                                table.display(),
                                col.name,
                                col.type_name
                            ),
                            Some(
                                "keep the range inside the column's type, or widen the type".into(),
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(after) = &cs.after
            && let Some(oc) = table.column(after.get_ref())
        {
            let other = &table.columns[oc];
            let stamp = |k: &TypeKind| matches!(k, TypeKind::Timestamp | TypeKind::Timestamptz);
            let same = col.kind == other.kind || (stamp(&col.kind) && stamp(&other.kind));
            if !(col.kind.is_time() && same) {
                return Err(sf.error(
                    after.span(),
                    format!(
                        "`after = \"{}\"`: {}.{} is {} and {} is {}",
                        after.get_ref(),
                        table.display(),
                        col.name,
                        col.type_name,
                        other.name,
                        other.type_name
                    ),
                    Some("`after` orders two dates or two timestamps of the same row".into()),
                ));
            }
        }
    }
    Ok(())
}

/// Phase: a spec's `unique = true` integer column is a permutation of
/// enough values for every row (made for a million before the rows are
/// known): widened to the rows, or an error when its `range` (or its type)
/// holds fewer values than rows.
fn spec_unique_ints(
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
fn keys_fit(
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

fn unwrap_nullable(g: &Gen) -> &Gen {
    match g {
        Gen::Nullable { inner, .. } => unwrap_nullable(inner),
        g => g,
    }
}

fn unwrap_nullable_mut(g: &mut Gen) -> &mut Gen {
    match g {
        Gen::Nullable { inner, .. } => unwrap_nullable_mut(inner),
        g => g,
    }
}

/// Phase: columns of foreign keys to tables planck does not seed stay NULL
/// (an error when they cannot).
fn orphan_columns(
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
fn uniqueness(
    sf: &SpecFile,
    res: &Resolved,
    (ci, pi, primary, pair): (usize, usize, Option<usize>, Option<OrderedPair>),
    table: &crate::catalog::schema::Table,
    display: &str,
    facts: &[ColFacts],
    spec_span: &HashMap<usize, std::ops::Range<usize>>,
    fk_cols: &HashMap<usize, usize>,
    sized_by_spec: bool,
    tables: &[TablePlan],
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
        // 2. Enumerate the finite columns jointly.
        enumerate_jointly(&k, tp)?;
    }
    Ok(())
}

/// One unique constraint [`uniqueness`] makes hold, with what planning
/// knows of its table.
struct KeyHold<'a> {
    sf: &'a SpecFile,
    res: &'a Resolved<'a>,
    ci: usize,
    pi: usize,
    pair: Option<OrderedPair>,
    table: &'a crate::catalog::schema::Table,
    display: &'a str,
    facts: &'a [ColFacts],
    spec_span: &'a HashMap<usize, std::ops::Range<usize>>,
    fk_cols: &'a HashMap<usize, usize>,
    sized_by_spec: bool,
    tables: &'a [TablePlan],
    max_per_parent: u64,
    u: &'a crate::catalog::schema::Unique,
    /// Unique within each parent: the key holds the primary parent's
    /// columns and more.
    within: bool,
    /// The key's columns to make unique (without the parent's, `within`).
    rest: Vec<usize>,
    /// The distinct values it needs: the table's rows, or (`within`) the
    /// most children of one parent.
    need: u64,
}

impl KeyHold<'_> {
    fn span_of(&self, c: usize) -> Option<std::ops::Range<usize>> {
        self.spec_span
            .get(&c)
            .cloned()
            .or_else(|| self.res.tables.get(&self.ci).map(|s| s.span()))
    }

    /// The key's columns, by name.
    fn columns(&self) -> String {
        self.u
            .cols
            .iter()
            .map(|c| self.table.columns[*c].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn impossible(&self, c: usize, allowed: u64, need: u64) -> Error {
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

    fn why(&self, c: usize, allowed: u64) -> String {
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

/// Step 1 of [`uniqueness`]: a column of the key that can carry its
/// uniqueness alone (a foreign key taking each parent once, a sequence, a
/// permutation, an ordinal, a unique text, uuid or time) gets the
/// generator that does. Whether one did.
fn carry_alone(k: &KeyHold, tp: &mut TablePlan, assigned: &mut [bool]) -> Result<bool> {
    let (within, need) = (k.within, k.need);
    for &c in &k.rest {
        if let Some(fi) = k.fk_cols.get(&c).copied() {
            if tp.fks[fi].cols.len() == 1 && k.rest.len() == 1 {
                let prow = k.tables.get(tp.fks[fi].parent).map_or(u64::MAX, |p| p.rows);
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
        } else if !assigned[c] {
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

/// Step 2 of [`uniqueness`]: the key's finite columns (foreign keys,
/// choices, small ranges) enumerated jointly through a permutation of the
/// row index (ordered pairs for two foreign keys a CHECK orders), rows
/// capped to the combinations there are.
fn enumerate_jointly(k: &KeyHold, tp: &mut TablePlan) -> Result<()> {
    let (u, table, within, need) = (k.u, k.table, k.within, k.need);
    let (spec_span, sized_by_spec, max_per_parent) =
        (k.spec_span, k.sized_by_spec, k.max_per_parent);
    let mut radices = Vec::new();
    let mut members: Vec<(usize, Option<usize>)> = Vec::new();
    let mut seen_fk = HashSet::new();
    for &c in &k.rest {
        if let Some(fi) = k.fk_cols.get(&c).copied() {
            if seen_fk.insert(fi) {
                radices.push(k.tables.get(tp.fks[fi].parent).map_or(tp.rows, |p| p.rows));
                members.push((c, Some(fi)));
            }
        } else if let Some(d) = tp.cols[c].generator.domain() {
            radices.push(d);
            members.push((c, None));
        } else {
            return Err(seed_err(
                k.display,
                Some(&table.columns[c].name),
                format!("cannot make {} unique", u.name),
                format!(
                    "give {} a unique generator in the spec (`unique = true`, `gen = \"sequence\"`, or `format = \"...{{row}}\"`)",
                    table.columns[c].name
                ),
            ));
        }
    }
    // Two foreign keys into one parent ordered by a CHECK: ordered pairs.
    let pairs = k.pair.filter(|p| {
        u.cols.len() == 2 && u.cols.contains(&p.lo) && u.cols.contains(&p.hi) && !within
    });
    if let Some(p) = pairs {
        members.sort_by_key(|(c, _)| usize::from(*c != p.lo));
    }
    let product = match pairs {
        Some(p) => pair_count(radices[0], p.strict),
        None => radices
            .iter()
            .fold(1u128, |a, r| a * u128::from(*r))
            .min(u128::from(u64::MAX)) as u64,
    };
    if within {
        if members.len() == 1 && product >= need {
            let (c, fk) = members[0];
            match fk {
                Some(fi) => tp.fks[fi].pick = Pick::DistinctInParent,
                None => {
                    let inner = std::mem::replace(&mut tp.cols[c].generator, Gen::Null);
                    tp.cols[c].generator = Gen::Joint {
                        group: WITHIN_PARENT,
                        digit: 0,
                        inner: Box::new(inner),
                    };
                }
            }
            return Ok(());
        }
        if product < need {
            let c = members.first().map_or(u.cols[0], |m| m.0);
            if sized_by_spec || spec_span.contains_key(&c) {
                return Err(k.impossible(c, product, need));
            }
            cap_rows(tp, product, true, max_per_parent, &k.why(c, product));
        }
        // Fall through: a global enumeration is unique within parents too.
    }
    if product < tp.rows {
        let c = members
            .iter()
            .find(|m| spec_span.contains_key(&m.0))
            .or(members.first())
            .map_or(u.cols[0], |m| m.0);
        if sized_by_spec || spec_span.contains_key(&c) {
            return Err(k.impossible(c, product, tp.rows));
        }
        cap_rows(tp, product, false, 0, &k.why(c, product));
    }
    let group = tp.joints.len();
    tp.joints.push(JointGroup {
        perm: Permutation::new(product.max(1), rng::mix(tp.key ^ group as u64)),
        radices,
        pairs: pairs.map(|p| p.strict),
        sorted: pairs.is_some_and(|p| p.sorted),
    });
    for (digit, (c, fk)) in members.iter().enumerate() {
        match fk {
            Some(fi) => tp.fks[*fi].pick = Pick::Joint { group, digit },
            None => {
                let inner = std::mem::replace(&mut tp.cols[*c].generator, Gen::Null);
                tp.cols[*c].generator = Gen::Joint {
                    group,
                    digit,
                    inner: Box::new(inner),
                };
            }
        }
    }
    Ok(())
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

/// Column index -> where its generator stands in the spec file.
type SpecSpans = HashMap<usize, std::ops::Range<usize>>;

/// Phase: the columns the spec gives a generator; returns which columns
/// are assigned and where in the spec each generator stands.
fn spec_generators(
    sf: &SpecFile,
    res: &Resolved,
    table: &crate::catalog::schema::Table,
    ci: usize,
    facts: &[ColFacts],
    tp: &mut TablePlan,
) -> Result<(Vec<bool>, SpecSpans)> {
    let ctx = Ctx { sf };
    let mut assigned: Vec<bool> = vec![false; table.columns.len()];
    let mut spec_span: HashMap<usize, std::ops::Range<usize>> = HashMap::new();
    for (c, col) in table.columns.iter().enumerate() {
        let Some(cs) = res.columns.get(&(ci, c)) else {
            continue;
        };
        if let Some(g) = ctx.compile(table, col, &col.kind, cs.get_ref(), cs.span(), &facts[c])? {
            tp.cols[c].generator = g;
            assigned[c] = true;
            spec_span.insert(c, cs.span());
        }
    }
    Ok((assigned, spec_span))
}

/// Phase: how each foreign key picks its parent row (the primary parent
/// first: its columns follow the layout; then self references, the tenant,
/// the same tenant, uniform), and which columns they fill.
#[allow(clippy::too_many_arguments)]
fn fk_picks(
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

/// Plans every table; any table that cannot be seeded is an error listing
/// every such table (see [`build_skipping`]).
pub fn build(cat: &Schema, sf: &SpecFile, opts: &Options) -> Result<SeedPlan> {
    build_skipping(cat, sf, opts, false)
}

/// Plans every table. Planning never stops at the first table it cannot
/// seed: it collects each one's cause (and the tables that reference it
/// through a NOT NULL foreign key, as cascades), plans again without them,
/// and repeats until the plan holds. Then, unless `skip_unseedable` (false
/// with `--all-or-nothing`), one error lists them all; with it the plan seeds the others and
/// [`SeedPlan::skipped`] says what was left out. Errors of the spec as a whole
/// (an unknown table, a bad tenant) still stop at once.
pub fn build_skipping(
    cat: &Schema,
    sf: &SpecFile,
    opts: &Options,
    skip_unseedable: bool,
) -> Result<SeedPlan> {
    let res = resolve(cat, sf)?;
    let tenant = tenant_of(cat, sf, &res)?;
    let mut unseedable: BTreeMap<usize, Unseedable> = BTreeMap::new();
    // The first error of each table, to return as it is when it is the only one.
    let mut errors: BTreeMap<usize, Error> = BTreeMap::new();
    let mut plan = loop {
        let mut pass = res.clone();
        pass.excluded.extend(unseedable.keys().copied());
        match plan_pass(cat, sf, opts, &pass, tenant, &unseedable)? {
            Ok(plan) => break plan,
            Err(found) => {
                let before = unseedable.len();
                for (u, e) in found {
                    if let Some(e) = e {
                        errors.entry(u.cat).or_insert(e);
                    }
                    unseedable.entry(u.cat).or_insert(u);
                }
                if unseedable.len() == before {
                    return Err(Error::Internal {
                        message: "planning found the same unseedable tables twice".into(),
                    });
                }
            }
        }
    };
    if unseedable.is_empty() {
        return Ok(plan);
    }
    let list: Vec<Unseedable> = unseedable.into_values().collect();
    if !skip_unseedable {
        // One table alone keeps its own error (and its file:line:col headline).
        if let ([only], Some(e)) = (list.as_slice(), errors.pop_first())
            && only.depends_on.is_none()
        {
            return Err(e.1);
        }
        return Err(unseedable_error(&list, plan.tables.len()));
    }
    plan.excluded.extend(list.iter().map(|u| u.cat));
    plan.excluded.sort_unstable();
    plan.excluded.dedup();
    plan.skipped = list;
    Ok(plan)
}

/// The one error that lists every table planning cannot seed.
fn unseedable_error(list: &[Unseedable], seedable: usize) -> Error {
    let direct = list.iter().filter(|u| u.depends_on.is_none()).count();
    let cascades = list.len() - direct;
    let mut message = format!("cannot seed {direct} table(s)");
    if cascades > 0 {
        message.push_str(&format!(" and {cascades} that depend on them"));
    }
    message.push_str("; nothing was written:");
    for u in list {
        match &u.depends_on {
            None => {
                message.push_str(&format!("\n  - {}", u.cause));
                for h in &u.hints {
                    message.push_str(&format!("\n    hint: {h}"));
                }
            }
            Some(p) => message.push_str(&format!(
                "\n  - {}: depends on {p} (a NOT NULL foreign key)",
                u.table
            )),
        }
    }
    Error::usage_hint(
        message,
        format!(
            "fix or exclude the tables above, or run without --all-or-nothing to seed the other {seedable} table(s) without them"
        ),
    )
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
type Found = (Unseedable, Option<Error>);

/// One planning pass over the tables `res` does not exclude: the plan, or
/// every table the pass found it cannot seed (the caller excludes them and
/// plans again). `unseedable` holds the tables earlier passes set aside, to
/// name them as the cause of a cascade.
fn plan_pass(
    cat: &Schema,
    sf: &SpecFile,
    opts: &Options,
    res: &Resolved,
    tenant: Option<usize>,
    unseedable: &BTreeMap<usize, Unseedable>,
) -> Result<std::result::Result<SeedPlan, Vec<Found>>> {
    let spec = &sf.spec;
    let seeded: Vec<usize> = (0..cat.tables.len())
        .filter(|i| !res.excluded.contains(i))
        .collect();
    let order = order(cat, &seeded);
    let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(i, t)| (*t, i)).collect();
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

/// What a planning pass holds while it plans one table: its inputs, and the
/// tables it planned before (in load order, parents first).
struct Pass<'a> {
    cat: &'a Schema,
    sf: &'a SpecFile,
    opts: &'a Options,
    res: &'a Resolved<'a>,
    tenant: Option<usize>,
    /// Load order: catalog indices, parents first.
    order: &'a [usize],
    /// Schema index -> position in `order`.
    pos: &'a HashMap<usize, usize>,
    /// Rows of a table nothing sizes, scaled.
    base_rows: f64,
    /// The tables planned so far, whether each is in the tenant tree, and
    /// its depth under its parents.
    tables: &'a [TablePlan],
    in_tree: &'a [bool],
    depth: &'a [usize],
}

impl Pass<'_> {
    /// The tenant table's rows, once it is planned.
    fn tenant_rows(&self) -> Option<u64> {
        self.tenant
            .and_then(|t| self.pos.get(&t))
            .and_then(|p| self.tables.get(*p))
            .map(|t| t.rows)
    }
}

/// Where a table sits in the foreign-key tree: its primary parent (the
/// foreign key its rows are laid out under), whether it is in the tenant
/// tree, and its depth under its parents.
struct Placement {
    primary: Option<usize>,
    in_tree: bool,
    depth: usize,
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
    let place = placement(p, pi, ci, &fks, pair.as_ref());
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
        p.tables,
        &mut tp,
        &mut assigned,
    )?;
    let observed = (&opts.observed, &mut *followed_recording);
    remaining_columns(table, &display, &facts, &mut tp, &assigned, observed)?;
    observed_fk_nulls(table, &opts.observed, &mut tp, followed_recording);
    free_unique_columns(table, &facts, &referenced, &mut tp);
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

/// The primary parent of table `ci` among its foreign keys `fks` (none for
/// the tenant table; the `per` parent when the spec names one; else the
/// deepest NOT NULL parent in the tenant tree, outside an ordered `pair`),
/// and the table's place in the tree.
fn placement(
    p: &Pass,
    pi: usize,
    ci: usize,
    fks: &[FkPlan],
    pair: Option<&OrderedPair>,
) -> Placement {
    let placed = |f: &FkPlan| f.parent < pi;
    let tree_parent = |f: &FkPlan, in_tree: &[bool]| placed(f) && in_tree[f.parent];
    let is_tenant = Some(ci) == p.tenant;
    let in_pair = |f: &FkPlan| {
        pair.is_some_and(|p| f.cols.len() == 1 && (f.cols[0] == p.lo || f.cols[0] == p.hi))
    };
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
fn table_rows(
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
    let placed = |f: &FkPlan| f.parent < p.pos[&ci];
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
            None => match primary {
                _ if is_tenant => base_rows.round() as u64,
                Some(_) => {
                    let pmax = fks
                        .iter()
                        .filter(|f| placed(f) && !f.nullable)
                        .map(|f| tables[f.parent].rows)
                        .max()
                        .unwrap_or(0);
                    (pmax.saturating_mul(2)).min((base_rows * 10.0).round() as u64)
                }
                None => base_rows.round() as u64,
            },
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
            layout = Layout::Child { fk };
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
fn max_children(tp: &TablePlan, tables: &[TablePlan]) -> u64 {
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
fn cap_rows(tp: &mut TablePlan, allowed: u64, within: bool, max_per_parent: u64, why: &str) {
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

#[cfg(test)]
mod plan_tests {
    use std::collections::HashSet;
    use std::path::Path;

    use super::*;
    use crate::catalog::schema::{CheckConstraint, Column, ForeignKey, Table, Unique};
    use crate::seed::row::plan::RowCtx;

    fn col(attnum: i16, name: &str, kind: TypeKind, seq: bool) -> Column {
        Column {
            attnum,
            name: name.into(),
            type_name: format!("{kind:?}"),
            kind,
            not_null: true,
            default: None,
            identity: seq,
            generated: false,
            max_len: None,
            numeric: None,
            domain_checks: Vec::new(),
            sequence: seq.then(|| format!("{name}_seq")),
        }
    }

    fn catalog() -> Schema {
        let parent = Table {
            oid: 1,
            schema: "public".into(),
            name: "parents".into(),
            partitioned: false,
            columns: vec![col(1, "id", TypeKind::Int8, true)],
            uniques: vec![Unique {
                name: "parents_pkey".into(),
                cols: vec![0],
                primary: true,
            }],
            fks: Vec::new(),
            checks: Vec::new(),
            partitioning: None,
            has_rows: false,
            migration_bookkeeping: false,
            sub_partitions: Vec::new(),
            exclusions: Vec::new(),
        };
        let child = Table {
            oid: 2,
            schema: "public".into(),
            name: "children".into(),
            partitioned: false,
            columns: vec![
                col(1, "id", TypeKind::Int8, true),
                col(2, "parent_id", TypeKind::Int8, false),
                col(3, "number", TypeKind::Int4, false),
                col(4, "label", TypeKind::Text, false),
            ],
            uniques: vec![
                Unique {
                    name: "children_pkey".into(),
                    cols: vec![0],
                    primary: true,
                },
                Unique {
                    name: "children_number".into(),
                    cols: vec![1, 2],
                    primary: false,
                },
                Unique {
                    name: "children_label".into(),
                    cols: vec![3],
                    primary: false,
                },
            ],
            fks: vec![ForeignKey {
                name: "children_parent_id_fkey".into(),
                cols: vec![1],
                parent: Some(0),
                parent_name: "parents".into(),
                parent_cols: vec![0],
            }],
            checks: vec![CheckConstraint {
                name: "children_number_check".into(),
                def: "CHECK ((number > 0))".into(),
                cols: vec![2],
            }],
            partitioning: None,
            has_rows: false,
            migration_bookkeeping: false,
            sub_partitions: Vec::new(),
            exclusions: Vec::new(),
        };
        Schema {
            tables: vec![parent, child],
        }
    }

    fn opts() -> Options {
        Options {
            seed: 1,
            scale: 1.0,
            default_rows: None,
            reference_keys: ReferenceKeys::new(),
            refused: Default::default(),
            observed: Default::default(),
        }
    }

    #[test]
    fn children_follow_per_parent_counts_with_ordinals_and_unique_labels() {
        let spec =
            "[tables.parents]\nrows = 50\n[tables.children]\nper = \"parents\"\ncount = [0, 7]\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let plan = build(&catalog(), &sf, &opts()).unwrap();
        let (p, c) = (0, 1);
        assert_eq!(plan.tables[p].rows, 50);
        let mut pairs = HashSet::new();
        let mut labels = HashSet::new();
        for row in 0..plan.tables[c].rows {
            let ctx = plan.ctx(c, row);
            let parent = plan.value(c, 1, &ctx).as_i64().unwrap();
            let number = plan.value(c, 2, &ctx).as_i64().unwrap();
            assert!((1..=50).contains(&parent), "row {row}: parent {parent}");
            assert!(number >= 1, "CHECK (number > 0) at row {row}");
            assert!(
                pairs.insert((parent, number)),
                "duplicate (parent, number) at row {row}"
            );
            let Val::Text(l) = plan.value(c, 3, &ctx) else {
                panic!("text")
            };
            assert!(labels.insert(l), "duplicate label at row {row}");
        }
        // Ordinals start at 1 within each parent and have no gaps.
        for parent in 1..=50 {
            let n = pairs.iter().filter(|(p, _)| *p == parent).count() as i64;
            for k in 1..=n {
                assert!(
                    pairs.contains(&(parent, k)),
                    "parent {parent} misses number {k}"
                );
            }
        }
    }

    /// `SeedPlan::ctxs`, which moves its block and parent forward row by row,
    /// places every row as `SeedPlan::ctx` does, from any first row: blocks of
    /// a tenant, parents without children (equal cumulative counts), a
    /// chunk that starts inside either.
    #[test]
    fn row_contexts_in_sequence_are_each_rows_own() {
        let same = |a: &RowCtx, b: &RowCtx| {
            (a.row, a.block, a.parent_row, a.ordinal) == (b.row, b.block, b.parent_row, b.ordinal)
        };
        for spec in [
            "[tenant]\ntable = \"parents\"\n[tables.parents]\nrows = 40\n[tables.children]\nper = \"parents\"\ncount = [0, 5]\n",
            "[tenant]\ntable = \"parents\"\ndistribution = { zipf = 1.0 }\n[tables.parents]\nrows = 40\n[tables.children]\nrows = 900\n",
            "[tables.parents]\nrows = 7\n[tables.children]\nrows = 100\n",
        ] {
            let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
            let plan = build(&catalog(), &sf, &opts()).unwrap();
            for (t, tp) in plan.tables.iter().enumerate() {
                assert!(tp.rows > 0, "{spec}");
                for start in [0, 1, tp.rows / 3, tp.rows / 2 + 1, tp.rows - 1] {
                    let seq: Vec<RowCtx> = plan.ctxs(t, start..tp.rows).collect();
                    assert_eq!(seq.len() as u64, tp.rows - start);
                    for (a, row) in seq.iter().zip(start..) {
                        let b = plan.ctx(t, row);
                        assert!(
                            same(a, &b),
                            "{} from {start}, row {row}: {a:?} vs {b:?}\n{spec}",
                            tp.display
                        );
                    }
                }
                assert_eq!(plan.ctxs(t, 5..5).count(), 0);
            }
            // The tenant specs make blocks (else the first case tests nothing new).
            if spec.contains("tenant") {
                assert!(plan.tables[1].cum.len() > 3, "{spec}");
            }
        }
    }

    #[test]
    fn the_same_row_gives_the_same_values_in_any_order() {
        let spec = "[tables.parents]\nrows = 20\n[tables.children]\nrows = 300\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let plan = build(&catalog(), &sf, &opts()).unwrap();
        let forward: Vec<Vec<Val>> = (0..300)
            .map(|r| (0..4).map(|k| plan.value(1, k, &plan.ctx(1, r))).collect())
            .collect();
        for r in (0..300).rev() {
            let again: Vec<Val> = (0..4).map(|k| plan.value(1, k, &plan.ctx(1, r))).collect();
            assert_eq!(again, forward[r as usize]);
        }
        // Children are spread evenly: 15 per parent.
        let firsts: Vec<i64> = forward.iter().map(|v| v[1].as_i64().unwrap()).collect();
        assert_eq!(firsts.iter().filter(|p| **p == 1).count(), 15);
    }

    #[test]
    fn impossible_uniqueness_names_the_spec_position() {
        let spec = "[tables.parents]\nrows = 5\n[tables.children]\nrows = 10\n[tables.children.columns]\nlabel = { values = [\"a\", \"b\"] }\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let err = build(&catalog(), &sf, &opts()).unwrap_err();
        let msg = crate::error::render(&err);
        assert!(
            msg.contains("s.toml:6:9: impossible uniqueness: children_label (label)"),
            "{msg}"
        );
    }

    #[test]
    fn a_smallint_key_cannot_hold_more_rows_than_it_counts() {
        let mut cat = catalog();
        cat.tables[0].columns[0].kind = TypeKind::Int2;
        cat.tables[0].columns[0].type_name = "smallint".into();
        let sf = SpecFile::parse(Path::new("s.toml"), "[tables.parents]\nrows = 40000\n").unwrap();
        let msg = crate::error::render(&build(&cat, &sf, &opts()).unwrap_err());
        assert!(
            msg.contains("  - parents.id: 40000 rows need values up to 40000, beyond smallint"),
            "{msg}"
        );
        // Its child goes with it, reported as a cascade.
        assert!(
            msg.contains("  - children: depends on parents (a NOT NULL foreign key)"),
            "{msg}"
        );
    }

    fn things() -> Schema {
        Schema {
            tables: vec![Table {
                oid: 1,
                schema: "public".into(),
                name: "things".into(),
                partitioned: false,
                columns: vec![
                    col(1, "id", TypeKind::Int8, true),
                    col(2, "code", TypeKind::Int8, false),
                ],
                uniques: vec![Unique {
                    name: "things_pkey".into(),
                    cols: vec![0],
                    primary: true,
                }],
                fks: Vec::new(),
                checks: Vec::new(),
                partitioning: None,
                sub_partitions: Vec::new(),
                exclusions: Vec::new(),
                has_rows: false,
                migration_bookkeeping: false,
            }],
        }
    }

    /// Issue 9 point 3: `unique = true` on an integer was a permutation of a
    /// million values, so row 1,000,001 repeated row 1.
    #[test]
    fn spec_unique_integers_stay_unique_beyond_a_million_rows() {
        let spec =
            "[tables.things]\nrows = 1200000\n[tables.things.columns]\ncode = { unique = true }\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let plan = build(&things(), &sf, &opts()).unwrap();
        let mut seen = HashSet::new();
        for row in 0..plan.tables[0].rows {
            let v = plan.value(0, 1, &plan.ctx(0, row)).as_i64().unwrap();
            assert!(seen.insert(v), "row {row} repeats {v}");
        }
        assert_eq!(seen.len(), 1_200_000);
    }

    #[test]
    fn spec_unique_integers_beyond_their_range_are_an_error_with_the_arithmetic() {
        let spec = "[tables.things]\nrows = 1200000\n[tables.things.columns]\ncode = { unique = true, range = [1, 1100000] }\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let msg = crate::error::render(&build(&things(), &sf, &opts()).unwrap_err());
        assert!(
            msg.contains("s.toml:4:33: `unique = true` on things.code needs 1200000 distinct values for 1200000 rows, but [1, 1100000] holds only 1100000"),
            "{msg}"
        );
    }

    fn rejected(cat: &Schema, spec: &str, opts: &Options) -> String {
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        crate::error::render(&build(cat, &sf, opts).unwrap_err())
    }

    /// Issue 9 point 10: `range = [0, 100000]` on a smallint wrapped in the encoder.
    #[test]
    fn a_range_beyond_the_column_type_is_an_error_at_its_position() {
        let mut cat = catalog();
        cat.tables[1].columns[2].kind = TypeKind::Int2;
        cat.tables[1].columns[2].type_name = "smallint".into();
        let msg = rejected(
            &cat,
            "[tables.children.columns]\nnumber = { range = [1, 100000] }\n",
            &opts(),
        );
        assert!(
            msg.contains("s.toml:2:20: `range` of children.number: 100000 is beyond smallint (-32768 to 32767)"),
            "{msg}"
        );
    }

    /// Issue 9 point 10: `after` on a column of another type.
    #[test]
    fn after_a_column_of_another_type_is_an_error_at_its_position() {
        let msg = rejected(
            &catalog(),
            "[tables.children.columns]\nlabel = { after = \"number\" }\n",
            &opts(),
        );
        assert!(
            msg.contains(
                "s.toml:2:19: `after = \"number\"`: children.label is Text and number is Int4"
            ),
            "{msg}"
        );
    }

    /// Issue 9 point 10: a scale that plans more rows than planck can hold
    /// names the flag instead of panicking on allocation.
    #[test]
    fn a_scale_beyond_what_planck_holds_names_the_flag() {
        let o = Options {
            scale: 1e6,
            ..opts()
        };
        let msg = rejected(
            &catalog(),
            "[tables.parents]\nrows = 1000000000\n[tables.children]\nper = \"parents\"\ncount = 1\n",
            &o,
        );
        assert!(
            msg.contains(
                "error: parents would get 1000000000000000 rows with --scale 1000000: too many"
            ),
            "{msg}"
        );
        assert!(msg.contains("hint: lower --scale or --rows"), "{msg}");
        // A per-parent table over a parent too large to count in memory.
        let msg = rejected(
            &catalog(),
            "[tables.parents]\nrows = 300000000\n[tables.children]\nper = \"parents\"\ncount = 1\n",
            &opts(),
        );
        assert!(
            msg.contains(
                "error: parents (parent of the `per` table children) would get 300000000 rows: too many"
            ),
            "{msg}"
        );
    }

    /// Issue 9 point 8: which exclusion forms planning lets through.
    #[test]
    fn exclusion_forms_beyond_equality_and_one_overlap_are_refused() {
        use crate::catalog::schema::Exclusion;
        let mut t = things().tables.remove(0);
        let x = |ops: &[&str]| Exclusion {
            name: "things_excl".into(),
            def: "EXCLUDE ...".into(),
            method: "gist".into(),
            elems: ops.iter().map(|o| (Some(1), o.to_string())).collect(),
        };
        for (ops, ok) in [
            (&["="][..], true),
            (&["=", "&&"][..], true),
            (&["&&", "&&"][..], false),
            (&["=", "<<"][..], false),
            (&["-|-"][..], false),
        ] {
            t.exclusions = vec![x(ops)];
            let r = exclusions_supported(&t, "things");
            assert_eq!(r.is_ok(), ok, "{ops:?}");
            if let Err(e) = r {
                assert!(
                    crate::error::render(&e).contains("exclusion constraint things_excl"),
                    "{ops:?}"
                );
            }
        }
    }
}
