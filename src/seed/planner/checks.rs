//! What a table's CHECKs (and its columns' domains') ask of each column:
//! facts the generators honour ([`crate::seed::check_expr`]), CHECKs the
//! solver makes hold row by row ([`crate::seed::check_solve`]) and those the
//! server decides over candidate rows ([`crate::seed::server_check`]), with
//! the columns its attempts may redraw.

use std::collections::{BTreeMap, HashMap};

use crate::catalog::schema::TypeKind;
use crate::error::{Error, Result};
use crate::seed::check_expr::{self, ColFacts};
use crate::seed::row::generate::{Gen, Val};
use crate::seed::row::plan::{Pick, ServerCheck, ServerChecks, TablePlan};
use crate::seed::row::shape::{self, CheckDemands};
use crate::seed::row::solved::Solved;
use crate::seed::{check_solve, regex, server_check};

use super::context::{Resolved, seed_err};
use super::generators::unwrap_nullable_mut;

/// Phase: what the table's CHECK constraints (and its columns' domains)
/// say about each column, and the constraints left to the server. A CHECK
/// is native when [`check_expr::facts`] reads it and its facts fit the
/// columns' types (see [`native_fits`]); anything else is evaluated by the
/// server over candidate rows at load time (see [`server_check`]).
pub(super) fn check_facts(
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
            fixed: Vec::new(),
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
        // A column another CHECK sets: the solver's branches that leave it
        // NULL would break that CHECK, which the server does not evaluate.
        let narrowed = narrowed.and_then(|s| {
            cols.iter()
                .filter(|&&c| facts[c].not_null)
                .try_fold(s, |s, &c| s.never_null(c))
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

/// Phase (after every generator): the columns of the solved CHECKs whose
/// values their generators decide as keys (a sequence, a permutation, a
/// joint enumeration, the keys a reference table holds, a foreign key
/// that takes each parent once): the solver draws each row's branch among
/// those that admit them instead of moving them, which would repeat a key
/// (`CHECK (id <> 1 OR (area_id IS NULL AND born IS NULL))` on a serial
/// `id` moved row 1's id onto row 2's). A CHECK read as facts instead
/// (`id <> 1 OR type = 3` with `type` a foreign key, musicbrainz's
/// `artist_va_check`) still moves the key: not handled here.
pub(super) fn fixed_key_columns(table: &crate::catalog::schema::Table, tp: &mut TablePlan) {
    let mut fixed: Vec<usize> = Vec::new();
    for s in &tp.checked.solved {
        for &c in &s.cols {
            // A nullable key column stays the solver's: a branch that wants
            // it NULL may set it (a NULL never collides in a unique key), as
            // koji's `CHECK (parent IS NOT NULL OR label IS NULL)` over
            // `UNIQUE (parent, label)` needs.
            if table
                .column(&tp.cols[c].name)
                .is_some_and(|i| !table.columns[i].not_null)
            {
                continue;
            }
            let mut g = &tp.cols[c].generator;
            while let Gen::Nullable { inner, .. } = g {
                g = inner;
            }
            let key = match g {
                Gen::Joint { .. } | Gen::Listed(_) => true,
                Gen::Fk { fk, .. } => matches!(
                    tp.fks[*fk].pick,
                    Pick::UniqueGlobal | Pick::Joint { .. } | Pick::DistinctInParent
                ),
                g => g.is_unique(),
            };
            if key {
                fixed.push(c);
            }
        }
    }
    fixed.sort_unstable();
    fixed.dedup();
    tp.checked.fixed = fixed;
}

/// A column's shape with the solved CHECK that decides it (if any).
pub(super) fn with_solved(
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
        if (f.lower || f.trim || f.nonempty || f.min_len.is_some()) && !text {
            return false;
        }
        if f.json_type.is_some() && !matches!(col.kind, TypeKind::Json | TypeKind::Jsonb) {
            return false;
        }
        if (f.nulls.is_some() || f.is_null) && col.not_null {
            return false;
        }
        true
    })
}

/// The shape a column's facts ask of its values (None: nothing beyond bounds).
pub(super) fn shape_of(
    col: &crate::catalog::schema::Column,
    f: &ColFacts,
) -> Option<Box<CheckDemands>> {
    let max_len = match (col.max_len, f.max_len) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    // A character(n) value is padded to n with blanks, and `~` on it reads
    // the padding (bpcharregexeq): a value a regex decides has all n
    // characters, or a pattern ending in `$` fails on the blanks
    // (musicbrainz's `iswc character(15) CHECK (iswc ~ '^T-?\d{3}...\d$')`).
    let fixed_len =
        max_len.filter(|_| f.regex.is_some() && col.type_name.starts_with("character("));
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
        min_len: fixed_len.max(f.min_len.filter(|_| col.kind.is_text())),
        len_bytes: f.len_bytes && col.kind.is_text(),
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

/// A key that counts (a sequence, a permutation of integers) starts past
/// the values a CHECK excludes from it (`CHECK (id <> 1 OR (kind = 3 AND
/// ...))` read as `id <> 1`: the ids start at 2). Moving an excluded value
/// when the row is drawn would land on the next row's key (`Key (id)=(2)
/// is duplicated`); a key is decided once, with the constraints in view.
pub(super) fn keys_off_excluded(facts: &[ColFacts], tp: &mut TablePlan) {
    let rows = tp.rows;
    for (c, f) in facts.iter().enumerate() {
        let mut excluded: Vec<i64> = f
            .not_eq
            .iter()
            .filter_map(|l| match l {
                check_expr::Lit::Num(n) if n.fract() == 0.0 => Some(*n as i64),
                _ => None,
            })
            .collect();
        if excluded.is_empty() {
            continue;
        }
        excluded.sort_unstable();
        match unwrap_nullable_mut(&mut tp.cols[c].generator) {
            Gen::Sequence { start, step } if *step > 0 => {
                for &v in &excluded {
                    let end = start.saturating_add(step.saturating_mul(rows as i64));
                    if v >= *start && v < end && (v - *start) % *step == 0 {
                        *start = v.saturating_add(1);
                    }
                }
            }
            Gen::IntUnique { lo, n } => {
                for &v in &excluded {
                    if v >= *lo && v < lo.saturating_add(*n as i64) {
                        *lo = v.saturating_add(1);
                    }
                }
            }
            _ => {}
        }
    }
}
