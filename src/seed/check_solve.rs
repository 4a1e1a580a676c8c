//! CHECK constraints solved row by row (issue 30, point 2): a CHECK that
//! [`check_expr::facts`] cannot read as one set of facts per column, most
//! often a disjunction whose branches ask different things of the same
//! columns (lemmy's `modlog_check`: one branch per `kind`, each with its own
//! `num_nonnulls(...)` over the target foreign keys).
//!
//! Under SQL's three-valued logic a row passes a CHECK unless the expression
//! is false. [`solve`] normalises the expression ([`nnf`]: NOT pushed down
//! to the atoms, `NOT (x = ANY (ARRAY[...]))` as `x <> a AND x <> b`,
//! `(a IS NULL) <> (b IS NULL)` spelt out; the parser already drops casts,
//! so enum labels are text), expands it into its disjunctive normal form
//! ([`dnf`]), and keeps the branches whose every atom it can make true on
//! the table's columns ([`interpret`], [`Branch::fit`]): NULL or not, a set
//! of literals, excluded literals, integer ranges, and `num_nonnulls` /
//! `num_nulls` counts. Each row takes one of those branches, drawn from
//! (seed, constraint, row): deterministic, and varied across rows. The
//! [`Solved`] it returns is part of the row model
//! ([`crate::seed::row::solved`]): on the workers, each row draws its
//! branch and [`crate::seed::row::eval`] turns a column's generated value
//! into one the branch admits. The server still evaluates the CHECK over the candidate
//! rows ([`crate::seed::server_check`], one round trip per batch): what
//! planck cannot interpret stays the server's to decide, and a row the
//! solver got wrong is redrawn there, never loaded.

use std::collections::BTreeMap;

use crate::catalog::schema::{Table, TypeKind};
use crate::seed::check_expr::{self, CASE_FN, Ex, Lit};
use crate::seed::row::generate::Val;
use crate::seed::row::rng;
use crate::seed::row::solved::{Branch, ColRule, Count, Solved};

/// More branches than this and the CHECK stays the server's alone.
const MAX_BRANCHES: usize = 256;

/// One branch's atoms, read but not yet fitted to the columns.
#[derive(Debug, Clone, Default, PartialEq)]
struct Dom {
    null: Option<bool>,
    set: Option<Vec<Lit>>,
    not: Vec<Lit>,
    lo: Option<f64>,
    hi: Option<f64>,
    /// `char_length(col)` bounds.
    len_lo: Option<f64>,
    len_hi: Option<f64>,
    same_as: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
struct RawCount {
    cols: Vec<usize>,
    lo: usize,
    hi: usize,
}

/// Pushes NOT down to the atoms (`neg`: under an odd number of NOTs). Every
/// rewrite is exact in three-valued logic: `NOT (a < b)` is `a >= b` (both
/// NULL when an operand is), `IS NULL` is never NULL.
pub(crate) fn nnf(e: &Ex, neg: bool) -> Ex {
    match e {
        Ex::And(v) | Ex::Or(v) => {
            let v = v.iter().map(|x| nnf(x, neg)).collect();
            if matches!(e, Ex::And(_)) != neg {
                Ex::And(v)
            } else {
                Ex::Or(v)
            }
        }
        Ex::Not(x) => nnf(x, !neg),
        // A condition is not NULL when it is true or false (`(a > 0) IS
        // TRUE` reads `(a > 0) IS NOT NULL AND a > 0`).
        Ex::IsNull(x, is) if *is == neg && is_cond(x) => Ex::Or(vec![nnf(x, false), nnf(x, true)]),
        Ex::IsNull(x, is) => Ex::IsNull(x.clone(), *is != neg),
        // A CASE used as a condition, in any place (`NOT CASE ...`,
        // `(CASE ...) <> (a > 0)`): the rows it takes a branch in, each
        // branch's value wanted true (or false, under a NOT). Stricter than
        // the CASE (a condition NULL takes neither branch), never looser.
        Ex::Func(f, args) if f == CASE_FN => case_nnf(args, neg),
        // (a IS NULL) = (b IS NULL), (a IS NOT NULL) <> (b IS NOT NULL),
        // (credit > 0) <> (debit > 0), (flag) = (n > 3): two conditions,
        // equal or not (a bare column beside a condition is a boolean).
        Ex::Cmp(l, op, r)
            if (is_cond(l) || is_cond(r))
                && boolish(l)
                && boolish(r)
                && (op == "=" || op == "<>") =>
        {
            let same = (op == "=") != neg;
            let (a, b) = (&**l, &**r);
            let not = |x: &Ex| nnf(x, true);
            let keep = |x: &Ex| nnf(x, false);
            if same {
                Ex::Or(vec![
                    Ex::And(vec![keep(a), keep(b)]),
                    Ex::And(vec![not(a), not(b)]),
                ])
            } else {
                Ex::Or(vec![
                    Ex::And(vec![keep(a), not(b)]),
                    Ex::And(vec![not(a), keep(b)]),
                ])
            }
        }
        // A count is never NULL: `num_nonnulls(a, b) <> 2` is `< 2 OR > 2`.
        Ex::Cmp(l, op, r)
            if matches!(&**l, Ex::Func(f, _) if f == "num_nonnulls" || f == "num_nulls")
                && matches!(&**r, Ex::Lit(_))
                && (if neg {
                    op == "="
                } else {
                    op == "<>" || op == "!="
                }) =>
        {
            Ex::Or(vec![
                Ex::Cmp(l.clone(), "<".into(), r.clone()),
                Ex::Cmp(l.clone(), ">".into(), r.clone()),
            ])
        }
        Ex::Cmp(l, op, r) if neg => match negate(op) {
            Some(n) => Ex::Cmp(l.clone(), n.to_string(), r.clone()),
            None => Ex::Not(Box::new(e.clone())),
        },
        Ex::Any(l, op, arr) if neg && op == "=" => match &**arr {
            Ex::Array(items) => Ex::And(
                items
                    .iter()
                    .map(|i| Ex::Cmp(l.clone(), "<>".into(), Box::new(i.clone())))
                    .collect(),
            ),
            _ => Ex::Not(Box::new(e.clone())),
        },
        Ex::Col(_) if neg => Ex::Cmp(
            Box::new(e.clone()),
            "=".into(),
            Box::new(Ex::Lit(Lit::Bool(false))),
        ),
        Ex::Lit(Lit::Bool(b)) => Ex::Lit(Lit::Bool(*b != neg)),
        e if neg => Ex::Not(Box::new(e.clone())),
        e => e.clone(),
    }
}

/// A CASE's arguments `[c1, v1, c2, v2, ..., else?]` (see [`nnf`]) as
/// the branches that make it true (`neg`: false): `c1 AND v1`, `NOT c1
/// AND c2 AND v2`, ..., `NOT c1 AND NOT c2 AND else`; no branch for a
/// missing ELSE (NULL is neither).
fn case_nnf(args: &[Ex], neg: bool) -> Ex {
    let mut branches = Vec::new();
    let mut before: Vec<Ex> = Vec::new();
    for pair in args.chunks(2) {
        match pair {
            [c, v] => {
                let mut b = before.clone();
                b.push(nnf(c, false));
                b.push(nnf(v, neg));
                branches.push(Ex::And(b));
                before.push(nnf(c, true));
            }
            [els] => {
                before.push(nnf(els, neg));
                branches.push(Ex::And(before.clone()));
            }
            _ => {}
        }
    }
    Ex::Or(branches)
}

/// Whether `e` may stand beside a condition in `=` / `<>` as a boolean:
/// a condition, a column, a boolean literal.
fn boolish(e: &Ex) -> bool {
    is_cond(e) || matches!(e, Ex::Col(_) | Ex::Lit(Lit::Bool(_)))
}

/// Whether `e` is a condition (its value a boolean whatever the columns'
/// types): `IS NULL`, a comparison, AND, OR, NOT, a CASE over conditions.
fn is_cond(e: &Ex) -> bool {
    match e {
        Ex::IsNull(..) | Ex::And(_) | Ex::Or(_) | Ex::Not(_) | Ex::Any(..) => true,
        Ex::Func(f, args) if f == CASE_FN => args
            .iter()
            .enumerate()
            .all(|(i, a)| (i % 2 == 0 && i + 1 < args.len()) || is_cond(a)),
        Ex::Cmp(_, op, _) => negate(op).is_some(),
        _ => false,
    }
}

fn negate(op: &str) -> Option<&'static str> {
    Some(match op {
        "=" => "<>",
        "<>" | "!=" => "=",
        "<" => ">=",
        "<=" => ">",
        ">" => "<=",
        ">=" => "<",
        _ => return None,
    })
}

/// The disjunctive normal form of an expression in NNF: its branches, each
/// a conjunction of atoms. None past [`MAX_BRANCHES`].
pub(crate) fn dnf(e: &Ex) -> Option<Vec<Vec<Ex>>> {
    match e {
        Ex::Or(v) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(dnf(x)?);
                if out.len() > MAX_BRANCHES {
                    return None;
                }
            }
            Some(out)
        }
        Ex::And(v) => {
            let mut out: Vec<Vec<Ex>> = vec![Vec::new()];
            for x in v {
                let d = dnf(x)?;
                if out.len() * d.len() > MAX_BRANCHES {
                    return None;
                }
                out = out
                    .iter()
                    .flat_map(|a| {
                        d.iter().map(move |b| {
                            let mut c = a.clone();
                            c.extend(b.iter().cloned());
                            c
                        })
                    })
                    .collect();
            }
            Some(out)
        }
        atom => Some(vec![vec![atom.clone()]]),
    }
}

fn num(l: &Lit) -> Option<f64> {
    match l {
        Lit::Num(n) => Some(*n),
        Lit::Str(s) => s.trim().parse().ok(),
        Lit::Bool(_) => None,
    }
}

/// One branch's atoms as read by [`interpret`], whether some were beyond
/// the solver (left to the server), and whether one of those calls a
/// function (an application's, `cardinality`, ...).
type Read = (BTreeMap<usize, Dom>, Vec<RawCount>, bool, bool);

/// Reads one branch's atoms as domains per column and counts: None when the
/// branch is plainly false (`a IS NULL AND a = 1`, `num_nonnulls(a) = 2`).
/// An atom beyond the solver is skipped, and the branch marked opaque.
fn interpret(atoms: &[Ex], col: &dyn Fn(&Ex) -> Option<usize>) -> Option<Read> {
    let mut doms: BTreeMap<usize, Dom> = BTreeMap::new();
    let mut counts = Vec::new();
    let (mut opaque, mut calls) = (false, false);
    for a in atoms {
        match read_atom(a, col, &mut doms, &mut counts) {
            Atom::Read => {}
            Atom::False => return None,
            Atom::Opaque => {
                opaque = true;
                calls |= calls_function(a);
            }
        }
    }
    Some((doms, counts, opaque, calls))
}

/// Whether `e` calls a function anywhere.
fn calls_function(e: &Ex) -> bool {
    match e {
        Ex::Func(..) => true,
        Ex::Col(_) | Ex::Lit(_) => false,
        Ex::Array(v) | Ex::And(v) | Ex::Or(v) => v.iter().any(calls_function),
        Ex::Cmp(l, _, r) | Ex::Any(l, _, r) => calls_function(l) || calls_function(r),
        Ex::Not(x) | Ex::IsNull(x, _) => calls_function(x),
    }
}

enum Atom {
    Read,
    False,
    Opaque,
}

/// Reads one atom into `doms` and `counts`.
fn read_atom(
    a: &Ex,
    col: &dyn Fn(&Ex) -> Option<usize>,
    doms: &mut BTreeMap<usize, Dom>,
    counts: &mut Vec<RawCount>,
) -> Atom {
    // An atom is read whole or not at all: it is first read into copies.
    let (mut d2, mut c2) = (doms.clone(), counts.clone());
    match read_into(std::slice::from_ref(a), col, &mut d2, &mut c2) {
        Some(Some(())) => {
            *doms = d2;
            *counts = c2;
            Atom::Read
        }
        Some(None) => Atom::False,
        None => Atom::Opaque,
    }
}

/// Reads atoms into `doms` and `counts`: None when one is beyond the
/// solver, Some(None) when the branch is plainly false.
fn read_into(
    atoms: &[Ex],
    col: &dyn Fn(&Ex) -> Option<usize>,
    doms: &mut BTreeMap<usize, Dom>,
    counts: &mut Vec<RawCount>,
) -> Option<Option<()>> {
    let mut falsy = false;
    let mut not_null = |d: &mut Dom| {
        if d.null == Some(true) {
            falsy = true;
        }
        d.null = Some(false);
    };
    for a in atoms {
        match a {
            Ex::Lit(Lit::Bool(true)) => {}
            Ex::Lit(Lit::Bool(false)) => return Some(None),
            Ex::IsNull(x, is) => {
                let d = doms.entry(col(x)?).or_default();
                if d.null.is_some_and(|n| n != *is) {
                    return Some(None);
                }
                d.null = Some(*is);
            }
            Ex::Col(_) => {
                let d = doms.entry(col(a)?).or_default();
                not_null(d);
                narrow(d, vec![Lit::Bool(true)]);
            }
            Ex::Any(l, op, arr) if op == "=" => {
                let Ex::Array(items) = &**arr else {
                    return None;
                };
                let lits: Option<Vec<Lit>> = items
                    .iter()
                    .map(|i| match i {
                        Ex::Lit(l) => Some(l.clone()),
                        _ => None,
                    })
                    .collect();
                let d = doms.entry(col(l)?).or_default();
                not_null(d);
                narrow(d, lits?);
            }
            Ex::Cmp(l, op, r) => {
                if let Ex::Func(f, args) = &**l
                    && (f == "num_nonnulls" || f == "num_nulls")
                {
                    let Ex::Lit(lit) = &**r else { return None };
                    let k = num(lit)?;
                    let cols: Option<Vec<usize>> = args.iter().map(col).collect();
                    let cols = cols?;
                    let n = cols.len() as f64;
                    // As a count of non-NULL arguments.
                    let (op, k) = if f == "num_nulls" {
                        (check_expr::flip(op), n - k)
                    } else {
                        (op.as_str(), k)
                    };
                    let (lo, hi) = match op {
                        "=" => (k, k),
                        ">=" => (k, n),
                        ">" => (k.floor() + 1.0, n),
                        "<=" => (0.0, k),
                        "<" => (0.0, k.ceil() - 1.0),
                        _ => return None,
                    };
                    let (lo, hi) = (lo.max(0.0).ceil(), hi.min(n).floor());
                    if lo > hi {
                        return Some(None);
                    }
                    // A second count over the same columns narrows the first
                    // (`num_nonnulls(a, b) < 2 AND num_nonnulls(a, b) = 1`).
                    if let Some(k) = counts.iter_mut().find(|k| k.cols == cols) {
                        k.lo = k.lo.max(lo as usize);
                        k.hi = k.hi.min(hi as usize);
                        if k.lo > k.hi {
                            return Some(None);
                        }
                        continue;
                    }
                    counts.push(RawCount {
                        cols,
                        lo: lo as usize,
                        hi: hi as usize,
                    });
                    continue;
                }
                // char_length(col) <= n, length(col) > 0, ...
                if let (Ex::Func(f, args), Ex::Lit(lit)) = (&**l, &**r)
                    && matches!(f.as_str(), "char_length" | "length" | "character_length")
                    && args.len() == 1
                {
                    let k = num(lit)?;
                    let d = doms.entry(col(&args[0])?).or_default();
                    not_null(d);
                    let (lo, hi) = match op.as_str() {
                        "=" => (Some(k), Some(k)),
                        ">=" => (Some(k.ceil()), None),
                        ">" => (Some(k.floor() + 1.0), None),
                        "<=" => (None, Some(k.floor())),
                        "<" => (None, Some(k.ceil() - 1.0)),
                        _ => return None,
                    };
                    if let Some(lo) = lo {
                        d.len_lo = Some(d.len_lo.map_or(lo, |x| x.max(lo)));
                    }
                    if let Some(hi) = hi {
                        d.len_hi = Some(d.len_hi.map_or(hi, |x| x.min(hi)));
                    }
                    continue;
                }
                // Two columns equal (`a = b`): the later takes the earlier's value.
                if op == "="
                    && let (Some(x), Some(y)) = (col(l), col(r))
                {
                    let (a, b) = (x.min(y), x.max(y));
                    if a == b {
                        continue;
                    }
                    not_null(doms.entry(a).or_default());
                    let d = doms.entry(b).or_default();
                    not_null(d);
                    if d.same_as.is_some_and(|s| s != a) {
                        return None;
                    }
                    d.same_as = Some(a);
                    continue;
                }
                let (c, op, lit) = match (&**l, &**r) {
                    (_, Ex::Lit(lit)) => (col(l)?, op.as_str(), lit.clone()),
                    (Ex::Lit(lit), _) => (col(r)?, check_expr::flip(op), lit.clone()),
                    _ => return None,
                };
                let d = doms.entry(c).or_default();
                not_null(d);
                match op {
                    "=" => narrow(d, vec![lit]),
                    "<>" | "!=" => d.not.push(lit),
                    ">" | ">=" => {
                        let n = num(&lit)?;
                        let n = if op == ">" { n.floor() + 1.0 } else { n.ceil() };
                        d.lo = Some(d.lo.map_or(n, |x| x.max(n)));
                    }
                    "<" | "<=" => {
                        let n = num(&lit)?;
                        let n = if op == "<" { n.ceil() - 1.0 } else { n.floor() };
                        d.hi = Some(d.hi.map_or(n, |x| x.min(n)));
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    Some((!falsy).then_some(()))
}

fn narrow(d: &mut Dom, lits: Vec<Lit>) {
    d.set = Some(match d.set.take() {
        None => lits,
        Some(s) => s.into_iter().filter(|l| lits.contains(l)).collect(),
    });
}

/// A literal as a value of a column of `kind`; None when it is not one.
pub(crate) fn lit_val(l: &Lit, kind: &TypeKind, numeric: Option<(u32, u32)>) -> Option<Val> {
    match (l, kind) {
        (Lit::Str(s), TypeKind::Enum(labels)) => labels.contains(s).then(|| Val::Text(s.clone())),
        (Lit::Str(s), k) if k.is_text() => Some(Val::Text(s.clone())),
        (Lit::Bool(b), TypeKind::Bool) => Some(Val::Bool(*b)),
        (Lit::Str(s), TypeKind::Bool) => match s.as_str() {
            "true" | "t" => Some(Val::Bool(true)),
            "false" | "f" => Some(Val::Bool(false)),
            _ => None,
        },
        (l, k) if k.is_int() => {
            let n = num(l)?;
            (n.fract() == 0.0 && n.abs() < 9.0e18).then_some(Val::Int(n as i64))
        }
        (l, TypeKind::Float4 | TypeKind::Float8) => num(l).map(Val::Float),
        (l, TypeKind::Numeric) => {
            let n = num(l)?;
            let s = numeric.map_or(if n.fract() == 0.0 { 0 } else { 6 }, |x| x.1.min(18));
            let v = (n * 10f64.powi(s as i32)).round();
            (v.abs() < 1e30).then_some(Val::Dec(v as i128, s))
        }
        _ => None,
    }
}

impl Branch {
    /// The branch as rules on the table's columns; None when the columns
    /// cannot honour it (a NULL in a NOT NULL column, a literal asked of a
    /// foreign key or a single-column unique key, an empty set, ...).
    fn fit(
        table: &Table,
        doms: BTreeMap<usize, Dom>,
        raw: Vec<RawCount>,
        opaque: bool,
    ) -> Option<Branch> {
        let fk = |c: usize| table.fks.iter().any(|f| f.cols.contains(&c));
        let unique = |c: usize| table.uniques.iter().any(|u| u.cols == [c]);
        let mut rules = BTreeMap::new();
        for (c, d) in doms {
            let col = &table.columns[c];
            if col.generated || (d.null == Some(true) && col.not_null) {
                return None;
            }
            let valued = d.set.is_some() || !d.not.is_empty() || d.lo.is_some() || d.hi.is_some();
            if valued && fk(c) {
                return None;
            }
            if let Some(a) = d.same_as {
                let other = &table.columns[a];
                if other.type_name != col.type_name || fk(c) || unique(c) || valued {
                    return None;
                }
            }
            let conv = |l: &Lit| lit_val(l, &col.kind, col.numeric);
            let not: Vec<Val> = d.not.iter().map(conv).collect::<Option<_>>()?;
            let range = match (d.lo, d.hi) {
                (None, None) => None,
                // Bounds are read as whole numbers inside the literal ones
                // (`amount > 0.5` as `amount >= 1`): on a numeric or float
                // column the solver draws a whole number between them.
                _ if !col.kind.is_int()
                    && !matches!(
                        col.kind,
                        TypeKind::Numeric | TypeKind::Float4 | TypeKind::Float8
                    ) =>
                {
                    return None;
                }
                (lo, hi) => {
                    let max = if col.kind.is_int() {
                        col.kind.int_max() as f64
                    } else {
                        // numeric(p, s) holds whole numbers below 10^(p - s).
                        let digits = col.numeric.map_or(15, |(p, s)| p.saturating_sub(s).min(15));
                        10f64.powi(digits as i32) - 1.0
                    };
                    let lo = lo.unwrap_or(-max).max(-max);
                    let hi = hi.unwrap_or(max).min(max);
                    if lo > hi {
                        return None;
                    }
                    Some((lo as i64, hi as i64))
                }
            };
            let mut set = Vec::new();
            if let Some(s) = &d.set {
                if unique(c) {
                    return None;
                }
                for l in s {
                    let v = conv(l)?;
                    let inside = match (&v, range) {
                        (Val::Int(i), Some((lo, hi))) => *i >= lo && *i <= hi,
                        _ => true,
                    };
                    if inside && !not.contains(&v) && !set.contains(&v) {
                        set.push(v);
                    }
                }
                if set.is_empty() {
                    return None;
                }
            } else if let TypeKind::Enum(labels) = &col.kind
                && !not.is_empty()
                && labels.iter().all(|l| not.contains(&Val::Text(l.clone())))
            {
                return None;
            }
            let len = match (d.len_lo, d.len_hi) {
                (None, None) => None,
                _ if !col.kind.is_text() || fk(c) => return None,
                (lo, hi) => {
                    let lo = lo.unwrap_or(0.0).max(0.0);
                    let hi = hi
                        .unwrap_or(f64::from(u32::MAX))
                        .min(col.max_len.map_or(f64::from(u32::MAX), |m| m as f64));
                    if lo > hi {
                        return None;
                    }
                    Some((lo as usize, hi as usize))
                }
            };
            if let Some((lo, hi)) = len {
                set.retain(|v| matches!(v, Val::Text(t) if (lo..=hi).contains(&t.chars().count())));
                if d.set.is_some() && set.is_empty() {
                    return None;
                }
            }
            rules.insert(
                c,
                ColRule {
                    null: d.null,
                    set,
                    not,
                    range,
                    len,
                    same_as: d.same_as,
                },
            );
        }
        let mut counts = Vec::new();
        let mut seen: Vec<usize> = Vec::new();
        for k in raw {
            let mut forced = 0;
            let mut free = Vec::new();
            for &c in &k.cols {
                let col = &table.columns[c];
                match rules.get(&c).and_then(|r| r.null) {
                    Some(true) => {}
                    Some(false) => forced += 1,
                    None if col.not_null => forced += 1,
                    None if col.generated => return None,
                    None => free.push(c),
                }
            }
            if k.hi < forced || free.iter().any(|c| seen.contains(c)) {
                return None;
            }
            let lo = k.lo.saturating_sub(forced);
            let hi = (k.hi - forced).min(free.len());
            if lo > hi {
                return None;
            }
            seen.extend(&free);
            counts.push(Count { free, lo, hi });
        }
        Some(Branch {
            rules,
            counts,
            opaque,
        })
    }
}

/// The CHECK `def` of `table` as branches the solver makes hold; None when
/// no branch can be made to hold by the solver alone.
pub fn solve(table: &Table, name: &str, def: &str) -> Option<Solved> {
    let e = check_expr::parse(def)?;
    let col = |x: &Ex| check_expr::col_of(x, None).and_then(|n| table.column(&n));
    let mut branches = Vec::new();
    let mut cols: Vec<usize> = Vec::new();
    let mut calls = false;
    for atoms in dnf(&nnf(&e, false))? {
        let Some((doms, raw, opaque, call)) = interpret(&atoms, &col) else {
            continue;
        };
        calls |= call;
        cols.extend(doms.keys().copied());
        cols.extend(raw.iter().flat_map(|k| k.cols.iter().copied()));
        if let Some(b) = Branch::fit(table, doms, raw, opaque)
            && !branches.contains(&b)
        {
            branches.push(b);
        }
    }
    // What the solver leaves to the server is a comparison of two columns,
    // a LIKE or a regex, never a function: the branches are drawn as read
    // (random values meet such atoms often, and the server judges).
    if branches.is_empty() || (branches.iter().all(|b| b.opaque) && calls) {
        return None;
    }
    // A branch with atoms beyond the solver (an application's function, a
    // regex) is the server's to decide, and its redraws change every
    // column but the keys: the solver takes such a CHECK only when it
    // decides a key column, which no redraw changes (a foreign key or
    // unique column it sets NULL or not). Otherwise the server alone
    // decides, as it did (`body IS NULL OR even_length(body)` would leave
    // half the bodies NULL).
    let key = |c: &usize| {
        table.fks.iter().any(|f| f.cols.contains(c))
            || table.uniques.iter().any(|u| u.cols.contains(c))
    };
    if calls && branches.iter().any(|b| b.opaque) && !cols.iter().any(key) {
        return None;
    }
    cols.sort_unstable();
    cols.dedup();
    Some(Solved {
        name: name.to_string(),
        key: rng::name_key(&format!("{name} {def}")),
        cols,
        branches,
    })
}
/// open), and the column's rule.
impl Solved {
    /// Narrows column `c` to the values another CHECK lists (`provider_type
    /// IN ('oauth2', 'oidc')` beside `provider_type <> 'oidc' OR issuer IS
    /// NOT NULL`): each branch that leaves the column open or asks a set of
    /// it takes the listed values it admits; a branch left with none, or
    /// one that asks a range or length of the column, is dropped. None when
    /// no branch the solver reads whole is left.
    pub fn narrowed(mut self, table: &Table, c: usize, lits: &[Lit]) -> Option<Solved> {
        let col = &table.columns[c];
        let listed: Vec<Val> = lits
            .iter()
            .map(|l| lit_val(l, &col.kind, col.numeric))
            .collect::<Option<_>>()?;
        self.branches.retain_mut(|b| {
            let r = b.rules.entry(c).or_default();
            if r.null == Some(true) {
                return true;
            }
            if r.range.is_some() || r.len.is_some() {
                return false;
            }
            let set: Vec<Val> = listed
                .iter()
                .filter(|v| (r.set.is_empty() || r.set.contains(v)) && !r.not.contains(v))
                .cloned()
                .collect();
            r.set = set;
            r.not.clear();
            !r.set.is_empty()
        });
        if self.branches.iter().all(|b| b.opaque) {
            return None;
        }
        if !self.cols.contains(&c) {
            self.cols.push(c);
            self.cols.sort_unstable();
        }
        Some(self)
    }

    /// The CHECK with column `c` never NULL (another CHECK's reading says
    /// it is set: `c IS NOT NULL OR ...` read as `c IS NOT NULL`): branches
    /// that ask NULL of it go, and a `num_nonnulls` count over it counts it
    /// as set. None when only branches the server decides are left.
    pub fn never_null(mut self, c: usize) -> Option<Solved> {
        self.branches.retain_mut(|b| {
            if b.rules.get(&c).is_some_and(|r| r.null == Some(true)) {
                return false;
            }
            for k in &mut b.counts {
                if let Some(i) = k.free.iter().position(|x| *x == c) {
                    if k.hi == 0 {
                        return false;
                    }
                    k.free.remove(i);
                    k.lo = k.lo.saturating_sub(1);
                    k.hi -= 1;
                }
            }
            true
        });
        if self.branches.iter().all(|b| b.opaque) {
            return None;
        }
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::schema::{Column, ForeignKey};

    fn column(name: &str, kind: TypeKind, not_null: bool) -> Column {
        Column {
            attnum: 0,
            name: name.into(),
            type_name: String::new(),
            kind,
            not_null,
            default: None,
            identity: false,
            generated: false,
            max_len: None,
            numeric: None,
            domain_checks: Vec::new(),
            sequence: None,
        }
    }

    /// Nullable bigint foreign keys named `fks`, after the other columns.
    fn table(mut cols: Vec<Column>, fks: &[&str]) -> Table {
        let first = cols.len();
        cols.extend(fks.iter().map(|n| column(n, TypeKind::Int8, false)));
        Table {
            oid: 0,
            schema: "public".into(),
            name: "t".into(),
            partitioned: false,
            columns: cols,
            uniques: Vec::new(),
            fks: (0..fks.len())
                .map(|i| ForeignKey {
                    name: format!("fk{i}"),
                    cols: vec![first + i],
                    parent: None,
                    parent_name: "p".into(),
                    parent_cols: vec![0],
                })
                .collect(),
            checks: Vec::new(),
            partitioning: None,
            has_rows: false,
            migration_bookkeeping: false,
            sub_partitions: Vec::new(),
            exclusions: Vec::new(),
        }
    }

    fn kind_enum(labels: &[&str]) -> TypeKind {
        TypeKind::Enum(labels.iter().map(|s| s.to_string()).collect())
    }

    /// A row as the solver decides it: every column its branch leaves open
    /// takes a plain value of its type (a generator's stand-in).
    fn row(table: &Table, s: &Solved, seed: u64, r: u64) -> Vec<Val> {
        (0..table.columns.len())
            .map(|c| {
                let (null, rule) = s.decide(seed, r, 0, c);
                if null == Some(true) {
                    return Val::Null;
                }
                let col = &table.columns[c];
                let mut v = match &col.kind {
                    TypeKind::Enum(l) => Val::Text(l[r as usize % l.len()].clone()),
                    TypeKind::Bool => Val::Bool(r.is_multiple_of(2)),
                    k if k.is_int() => Val::Int(r as i64 % 50 - 10),
                    _ => Val::Text(format!("v{r}")),
                };
                // A nullable column the branch leaves open is NULL in some rows.
                if null.is_none() && !col.not_null && r.is_multiple_of(3) {
                    v = Val::Null;
                }
                let Some(rule) = rule else { return v };
                if !rule.set.is_empty() {
                    v = rule.set[r as usize % rule.set.len()].clone();
                }
                if let (Some((lo, hi)), Val::Int(i)) = (rule.range, &v)
                    && (*i < lo || *i > hi)
                {
                    v = Val::Int(lo);
                }
                if let (Some((lo, hi)), Val::Text(text)) = (rule.len, &mut v) {
                    let n = text.chars().count();
                    if n > hi {
                        *text = text.chars().take(hi).collect();
                    } else if n < lo {
                        text.extend(std::iter::repeat_n('x', lo - n));
                    }
                }
                if rule.not.contains(&v) {
                    v = match (&col.kind, v) {
                        (TypeKind::Enum(l), _) => l
                            .iter()
                            .map(|x| Val::Text(x.clone()))
                            .find(|x| !rule.not.contains(x))
                            .unwrap(),
                        (_, Val::Int(i)) => Val::Int(i + 1),
                        (_, Val::Bool(b)) => Val::Bool(!b),
                        (_, other) => other,
                    };
                }
                v
            })
            .collect()
    }

    /// Three-valued evaluation (None: NULL) of the subset of SQL the
    /// corpus CHECKs below use.
    fn eval(e: &Ex, t: &Table, row: &[Val]) -> Option<Val> {
        let col = |x: &Ex| check_expr::col_of(x, None).and_then(|n| t.column(&n));
        let b = |v: Option<bool>| v.map(Val::Bool);
        let truth = |e: &Ex| match eval(e, t, row) {
            Some(Val::Bool(b)) => Some(b),
            None => None,
            other => panic!("not a boolean: {other:?}"),
        };
        match e {
            Ex::Col(_) => Some(row[col(e).expect("a column")].clone()).filter(|v| *v != Val::Null),
            Ex::Lit(l) => Some(match l {
                Lit::Bool(x) => Val::Bool(*x),
                Lit::Num(n) => Val::Int(*n as i64),
                Lit::Str(s) => Val::Text(s.clone()),
            }),
            Ex::And(v) => {
                let r: Vec<Option<bool>> = v.iter().map(truth).collect();
                b(if r.contains(&Some(false)) {
                    Some(false)
                } else if r.contains(&None) {
                    None
                } else {
                    Some(true)
                })
            }
            Ex::Or(v) => {
                let r: Vec<Option<bool>> = v.iter().map(truth).collect();
                b(if r.contains(&Some(true)) {
                    Some(true)
                } else if r.contains(&None) {
                    None
                } else {
                    Some(false)
                })
            }
            Ex::Not(x) => b(truth(x).map(|x| !x)),
            Ex::IsNull(x, is) => Some(Val::Bool(eval(x, t, row).is_none() == *is)),
            Ex::Func(f, args) if f == "char_length" && args.len() == 1 => {
                match eval(&args[0], t, row)? {
                    Val::Text(s) => Some(Val::Int(s.chars().count() as i64)),
                    other => panic!("char_length of {other:?}"),
                }
            }
            Ex::Func(f, args) if f == "num_nonnulls" || f == "num_nulls" => {
                let set = args.iter().filter(|a| eval(a, t, row).is_some()).count();
                Some(Val::Int(if f == "num_nulls" {
                    (args.len() - set) as i64
                } else {
                    set as i64
                }))
            }
            Ex::Any(l, op, arr) => {
                let Ex::Array(items) = &**arr else {
                    panic!("ANY over {arr:?}")
                };
                let ors = items
                    .iter()
                    .map(|i| Ex::Cmp(l.clone(), op.clone(), Box::new(i.clone())))
                    .collect();
                eval(&Ex::Or(ors), t, row)
            }
            Ex::Cmp(l, op, r) => {
                let (x, y) = (eval(l, t, row)?, eval(r, t, row)?);
                let ord = match (&x, &y) {
                    (Val::Int(a), Val::Int(b)) => a.cmp(b),
                    (Val::Text(a), Val::Text(b)) => a.cmp(b),
                    (Val::Bool(a), Val::Bool(b)) => a.cmp(b),
                    _ => panic!("comparing {x:?} with {y:?}"),
                };
                use std::cmp::Ordering::*;
                Some(Val::Bool(match op.as_str() {
                    "=" => ord == Equal,
                    "<>" => ord != Equal,
                    "<" => ord == Less,
                    "<=" => ord != Greater,
                    ">" => ord == Greater,
                    ">=" => ord != Less,
                    o => panic!("operator {o}"),
                }))
            }
            other => panic!("cannot evaluate {other:?}"),
        }
    }

    /// Solves `def`, then asserts 400 rows pass it (three-valued: not
    /// false) and that the rows take every branch; returns the solution.
    fn holds(t: &Table, def: &str) -> Solved {
        let s = solve(t, "c", def).unwrap_or_else(|| panic!("not solved: {def}"));
        let e = check_expr::parse(def).unwrap();
        let mut taken = vec![false; s.branches.len()];
        for r in 0..400 {
            let vals = row(t, &s, 7, r);
            let verdict = eval(&e, t, &vals);
            assert_ne!(
                verdict,
                Some(Val::Bool(false)),
                "row {r} {vals:?} fails {def}"
            );
            let b = s.branch_of(7, r, 0);
            taken[s.branches.iter().position(|x| x == b).unwrap()] = true;
        }
        assert!(taken.iter().all(|x| *x), "a branch no row takes: {s:?}");
        s
    }

    /// lemmy, `modlog_check` (abridged to four of its 21 kinds): each kind
    /// sets its own targets, foreign keys, and leaves the others NULL.
    #[test]
    fn lemmy_modlog_kinds_set_their_own_targets() {
        let t = table(
            vec![column(
                "kind",
                kind_enum(&[
                    "AdminAdd",
                    "ModRemovePost",
                    "AdminPurgeCommunity",
                    "ModFeaturePostCommunity",
                ]),
                true,
            )],
            &[
                "target_person_id",
                "target_instance_id",
                "target_community_id",
                "target_post_id",
                "target_comment_id",
            ],
        );
        let s = holds(
            &t,
            "CHECK ((((kind = 'AdminAdd'::modlog_kind) AND (num_nonnulls(target_person_id, target_instance_id) = 2) \
             AND (num_nonnulls(target_community_id, target_post_id, target_comment_id) = 0)) \
             OR ((kind = 'ModRemovePost'::modlog_kind) AND (num_nonnulls(target_post_id, target_community_id, target_person_id) = 3) \
             AND (num_nonnulls(target_instance_id, target_comment_id) = 0)) \
             OR ((kind = 'AdminPurgeCommunity'::modlog_kind) AND (num_nonnulls(target_post_id, target_person_id, target_community_id, target_instance_id, target_comment_id) = 0)) \
             OR ((kind = 'ModFeaturePostCommunity'::modlog_kind) AND (num_nonnulls(target_post_id, target_community_id) = 2) \
             AND (num_nonnulls(target_instance_id, target_person_id, target_comment_id) = 0))))",
        );
        assert_eq!(s.branches.len(), 4);
    }

    /// lemmy, `notification_check`: an OR inside an AND, and `>= 2` of three.
    #[test]
    fn lemmy_notification_counts_at_least() {
        let t = table(
            vec![column(
                "kind",
                kind_enum(&[
                    "Mention",
                    "Reply",
                    "PrivateMessage",
                    "Subscribed",
                    "ModAction",
                ]),
                true,
            )],
            &[
                "post_id",
                "comment_id",
                "community_id",
                "private_message_id",
                "modlog_id",
                "instance_id",
            ],
        );
        let s = holds(
            &t,
            "CHECK (((((kind = 'Mention'::notification_type_enum) OR (kind = 'Reply'::notification_type_enum)) \
             AND (num_nonnulls(post_id, comment_id, community_id) >= 2)) \
             OR ((kind = 'PrivateMessage'::notification_type_enum) AND (num_nonnulls(private_message_id) = 1)) \
             OR ((kind = 'Subscribed'::notification_type_enum) AND (num_nonnulls(post_id) = 1)) \
             OR ((kind = 'ModAction'::notification_type_enum) AND (num_nonnulls(modlog_id, post_id, comment_id, community_id, instance_id) >= 2))))",
        );
        // Mention and Reply are two branches: one per kind.
        assert_eq!(s.branches.len(), 5);
    }

    /// koji, `tag_inheritance.active_revoke_sane`: NULLs that go together,
    /// on a NOT NULL-free boolean and two foreign keys.
    #[test]
    fn koji_active_revoke_sane() {
        let t = table(
            vec![column("active", TypeKind::Bool, false)],
            &["revoke_event", "revoker_id"],
        );
        holds(
            &t,
            "CHECK ((((active IS NULL) AND (revoke_event IS NOT NULL) AND (revoker_id IS NOT NULL)) \
             OR ((active IS NOT NULL) AND (revoke_event IS NULL) AND (revoker_id IS NULL))))",
        );
    }

    /// river's `finalized_or_finalized_at_null` as the server spells it:
    /// `NOT IN` becomes `<> ALL (ARRAY[...])`, read as the labels it excludes.
    #[test]
    fn river_not_in_as_the_server_spells_it() {
        let labels = [
            "available",
            "cancelled",
            "completed",
            "discarded",
            "running",
        ];
        let t = table(
            vec![
                column("state", kind_enum(&labels), true),
                column("finalized_at", TypeKind::Int8, false),
            ],
            &[],
        );
        let s = holds(
            &t,
            "CHECK ((((finalized_at IS NULL) AND (state <> ALL (ARRAY['cancelled'::river_job_state, \
             'completed'::river_job_state, 'discarded'::river_job_state]))) OR ((finalized_at IS NOT NULL) \
             AND (state = ANY (ARRAY['cancelled'::river_job_state, 'completed'::river_job_state, \
             'discarded'::river_job_state])))))",
        );
        assert_eq!(s.branches.len(), 2);
        assert!(s.branches.iter().all(|b| !b.opaque));
    }

    /// graphile-starter, `user_authentication_secrets`-style and hatchet's
    /// `(a IS NULL) <> (b IS NULL)` with NOT pushed down: `NOT (x = ANY
    /// (...))`, `NOT ((a IS NULL) = (b IS NULL))` and a range.
    #[test]
    fn not_is_pushed_down_through_in_lists_and_null_pairs() {
        let t = table(
            vec![
                column(
                    "status",
                    kind_enum(&["queued", "running", "done", "failed"]),
                    true,
                ),
                column("attempts", TypeKind::Int4, true),
                column("finished_at", TypeKind::Text, false),
                column("error", TypeKind::Text, false),
            ],
            &[],
        );
        holds(
            &t,
            "CHECK (((NOT (status = ANY (ARRAY['done'::run_status, 'failed'::run_status]))) AND (finished_at IS NULL)) \
             OR ((status = ANY (ARRAY['done'::run_status, 'failed'::run_status])) AND (finished_at IS NOT NULL) \
             AND (attempts >= 1) AND (attempts <= 5) AND (NOT ((error IS NULL) = (finished_at IS NULL)))))",
        );
    }

    /// river, `river_job` `finalized_or_finalized_at_null`-like: a NOT NULL
    /// column cannot take the NULL branch, so only the other one is kept.
    #[test]
    fn a_branch_a_not_null_column_cannot_take_is_dropped() {
        let t = table(
            vec![
                column("a", TypeKind::Int4, true),
                column("b", TypeKind::Int4, false),
            ],
            &[],
        );
        let s = holds(
            &t,
            "CHECK ((((a IS NULL) AND (b > 0)) OR ((b IS NULL) AND (a <> 0))))",
        );
        assert_eq!(s.branches.len(), 1);
    }

    /// A branch the solver reads in part, beside a key column it decides:
    /// the server judges the rest, and the later attempts take a branch the
    /// solver reads whole.
    #[test]
    fn a_branch_read_in_part_is_left_to_later_attempts() {
        let t = table(
            vec![
                column("kind", kind_enum(&["a", "b"]), true),
                column("body", TypeKind::Text, false),
            ],
            &["person_id"],
        );
        let def = "CHECK ((((kind = 'a'::k) AND my_fn(body)) OR ((kind = 'b'::k) AND (person_id IS NULL))))";
        let s = solve(&t, "c", def).expect("solved");
        assert_eq!(s.branches.iter().filter(|b| b.opaque).count(), 1);
        let at0: Vec<bool> = (0..200).map(|r| s.branch_of(7, r, 0).opaque).collect();
        assert!(at0.contains(&true) && at0.contains(&false));
        for r in 0..200 {
            assert!(!s.branch_of(7, r, 16).opaque);
            assert_eq!(s.decide(7, r, 16, 2).0, Some(true), "person_id is NULL");
        }
    }

    /// supabase-auth, `custom_oauth_providers`: lengths inside an OR's
    /// branches (`issuer_length` and `name_length`, joined here into one
    /// disjunction over a type column).
    #[test]
    fn supabase_lengths_inside_branches() {
        let t = table(
            vec![
                column("provider_type", TypeKind::Text, true),
                column("issuer", TypeKind::Text, false),
                column("name", TypeKind::Text, true),
            ],
            &[],
        );
        let s = holds(
            &t,
            "CHECK ((((provider_type = 'oidc'::text) AND (char_length(issuer) >= 30) AND (char_length(issuer) <= 40)) \
             OR ((provider_type = 'oauth2'::text) AND (issuer IS NULL) AND (char_length(name) <= 1))))",
        );
        assert_eq!(s.branches[0].rules[&1].len, Some((30, 40)));
    }

    /// A CHECK with a branch the solver cannot read stays the server's,
    /// and so does one no branch of which can hold.
    #[test]
    fn an_application_function_is_left_to_the_server() {
        let t = table(vec![column("name", TypeKind::Text, false)], &[]);
        assert_eq!(solve(&t, "c", "CHECK (my_check(name))"), None);
        assert_eq!(
            solve(&t, "c", "CHECK (((name IS NULL) OR my_check(name)))"),
            None
        );
        assert_eq!(
            solve(&t, "c", "CHECK (((name IS NULL) AND (name IS NOT NULL)))"),
            None
        );
    }
}
