//! Reads CHECK constraints back into facts a generator can honour (the
//! plan checks are `explain::checks`; this is CHECK-expression parsing).
//!
//! The server prints every CHECK in a normalized form (`pg_get_constraintdef`):
//! `CHECK ((plan = ANY (ARRAY['free'::text, 'pro'::text])))`,
//! `CHECK (((VALUE >= 1901) AND (VALUE <= 2155)))`. A tiny recursive-descent
//! parser turns that into an expression tree, and [`facts`] keeps what it can
//! use: IN lists, bounds (comparisons and BETWEEN), length limits,
//! column-to-column order (`created_at <= updated_at`) and NOT NULL. A
//! constraint it does not understand is reported, so the planner can ask for
//! a generator in the spec instead of failing at load time.

mod apart;
mod parse;

use std::collections::BTreeMap;

/// What a CHECK tells about one column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColFacts {
    pub in_list: Option<Vec<Lit>>,
    /// Lower bound and whether it is inclusive.
    pub lo: Option<(Lit, bool)>,
    pub hi: Option<(Lit, bool)>,
    pub min_len: Option<usize>,
    pub max_len: Option<usize>,
    /// Columns this one must be greater than (strict?) / at least.
    pub after: Vec<(String, bool)>,
    pub not_null: bool,
    pub not_eq: Vec<Lit>,
    /// `col ~ 'pattern'` (true: `~*`), or a LIKE pattern read as a regex.
    pub regex: Option<(String, bool)>,
    /// `col = lower(col)`.
    pub lower: bool,
    /// `col = btrim(col)` (or `trim`).
    pub trim: bool,
    /// `col <> ''`, `length(btrim(col)) > 0`.
    pub nonempty: bool,
    /// A NULL pattern over several columns: (rule, constraint key, index, size).
    pub nulls: Option<(NullRule, u64, usize, usize)>,
    /// `col IS NULL` as a conjunct: the column is always NULL.
    pub is_null: bool,
    /// `jsonb_typeof(col) = 'array'` (or `IN` a list): the JSON kinds a
    /// json or jsonb value may have (`object`, `array`, `string`,
    /// `number`, `boolean`, `null`).
    pub json_type: Option<Vec<String>>,
    /// `octet_length(col) <= n`: `max_len` counts bytes, not characters.
    pub len_bytes: bool,
}

pub use crate::seed::row::shape::NullRule;

pub use apart::apart_columns;
pub(crate) use parse::{CASE_FN, Ex};
pub use parse::{Lit, strip_check_suffixes};

pub(crate) fn parse(def: &str) -> Option<Ex> {
    parse::tree(def).map(|e| desugar(e, Some(true)))
}

/// Rewrites a CASE into the branches it stands for, where a row that makes
/// the rewrite true makes the CASE true: in a positive place (`pos` is
/// `Some(true)`: the top, under AND and OR, under an even number of NOTs),
///
/// `CASE WHEN c1 THEN v1 WHEN c2 THEN v2 ELSE v3 END` is
/// `(c1 AND v1) OR (NOT c1 AND c2 AND v2) OR (NOT c1 AND NOT c2 AND v3)`,
///
/// and `k = CASE ...` (either side, any comparison) the same with `k = vi`
/// for `vi`. A branch is a row the CASE takes, so the rewrite holds only
/// rows the CASE accepts (`NOT c` is stricter than the CASE's "c is not
/// true": c NULL takes neither), which is what a generator needs; a CASE
/// without ELSE gives no branch for its NULL. In a negative or mixed place
/// (`NOT CASE ...`, `(CASE ...) <> (x > 0)`) the CASE is left as it is, an
/// atom no reader understands (the server decides it). Comparisons of two
/// literals, which the rewrite makes (`1 = 1`), become `true`/`false`.
fn desugar(e: Ex, pos: Option<bool>) -> Ex {
    let flip = |p: Option<bool>| p.map(|p| !p);
    match e {
        Ex::And(v) => Ex::And(v.into_iter().map(|x| desugar(x, pos)).collect()),
        Ex::Or(v) => Ex::Or(v.into_iter().map(|x| desugar(x, pos)).collect()),
        Ex::Not(x) => Ex::Not(Box::new(desugar(*x, flip(pos)))),
        Ex::Func(f, args) if f == CASE_FN && pos == Some(true) => {
            case_branches(args, |v| desugar(v, Some(true)))
        }
        Ex::Cmp(l, op, r) => match (*l, *r) {
            (Ex::Func(f, args), other) if pos == Some(true) && f == CASE_FN => {
                case_branches(args, |v| {
                    desugar(
                        Ex::Cmp(Box::new(v), op.clone(), Box::new(other.clone())),
                        pos,
                    )
                })
            }
            (other, Ex::Func(f, args)) if pos == Some(true) && f == CASE_FN => {
                case_branches(args, |v| {
                    desugar(
                        Ex::Cmp(Box::new(other.clone()), op.clone(), Box::new(v)),
                        pos,
                    )
                })
            }
            (Ex::Lit(a), Ex::Lit(b)) => match lit_cmp(&a, &op, &b) {
                Some(t) => Ex::Lit(Lit::Bool(t)),
                None => Ex::Cmp(Box::new(Ex::Lit(a)), op, Box::new(Ex::Lit(b))),
            },
            // Two conditions compared (`(a > 0) <> (b > 0)`): each side is
            // wanted true in some rows and false in others.
            (l, r) => Ex::Cmp(Box::new(desugar(l, None)), op, Box::new(desugar(r, None))),
        },
        e => e,
    }
}

/// The branches of a CASE's arguments (see [`desugar`]), `then` making each
/// value's condition.
fn case_branches(args: Vec<Ex>, then: impl Fn(Ex) -> Ex) -> Ex {
    let mut branches = Vec::new();
    let mut before: Vec<Ex> = Vec::new();
    let mut it = args.into_iter();
    loop {
        match (it.next(), it.next()) {
            (Some(c), Some(v)) => {
                let c = desugar(c, None);
                let mut b = before.clone();
                b.push(c.clone());
                b.push(then(v));
                branches.push(Ex::And(b));
                before.push(Ex::Not(Box::new(c)));
            }
            (Some(els), None) => {
                before.push(then(els));
                branches.push(Ex::And(before));
                break;
            }
            _ => break,
        }
    }
    // Branches plainly false (`1 = 0`) are dropped, `true` atoms too.
    let branches: Vec<Ex> = branches
        .into_iter()
        .filter_map(|b| {
            let Ex::And(atoms) = b else { return Some(b) };
            if atoms.contains(&Ex::Lit(Lit::Bool(false))) {
                return None;
            }
            let atoms: Vec<Ex> = atoms
                .into_iter()
                .flat_map(|a| match a {
                    Ex::And(inner) => inner,
                    a => vec![a],
                })
                .filter(|a| *a != Ex::Lit(Lit::Bool(true)))
                .collect();
            Some(match atoms.len() {
                0 => Ex::Lit(Lit::Bool(true)),
                1 => atoms.into_iter().next().unwrap_or(Ex::Lit(Lit::Bool(true))),
                _ => Ex::And(atoms),
            })
        })
        .collect();
    match branches.len() {
        0 => Ex::Lit(Lit::Bool(false)),
        1 => branches
            .into_iter()
            .next()
            .unwrap_or(Ex::Lit(Lit::Bool(false))),
        _ => Ex::Or(branches),
    }
}

/// `a op b` on two literals of one kind; None when they are not comparable.
fn lit_cmp(a: &Lit, op: &str, b: &Lit) -> Option<bool> {
    let o = match (a, b) {
        (Lit::Num(x), Lit::Num(y)) => x.partial_cmp(y)?,
        // Text orders by collation: only equality is the same everywhere.
        (Lit::Str(x), Lit::Str(y)) if op == "=" || op == "<>" => x.cmp(y),
        (Lit::Bool(x), Lit::Bool(y)) => x.cmp(y),
        _ => return None,
    };
    use std::cmp::Ordering::*;
    Some(match op {
        "=" => o == Equal,
        "<>" | "!=" => o != Equal,
        "<" => o == Less,
        "<=" => o != Greater,
        ">" => o == Greater,
        ">=" => o != Less,
        _ => return None,
    })
}

/// The comparison with its sides swapped: `a < b` is `b > a`.
pub(crate) fn flip(op: &str) -> &str {
    match op {
        "<" => ">",
        ">" => "<",
        "<=" => ">=",
        ">=" => "<=",
        o => o,
    }
}

pub(crate) fn col_of(e: &Ex, value_name: Option<&str>) -> Option<String> {
    match e {
        Ex::Col(c) => Some(match value_name {
            Some(n) if c == "VALUE" => n.to_string(),
            _ => c.clone(),
        }),
        _ => None,
    }
}

fn apply_bound(f: &mut ColFacts, op: &str, lit: Lit) -> bool {
    match op {
        ">" => f.lo = Some((lit, false)),
        ">=" => f.lo = Some((lit, true)),
        "<" => f.hi = Some((lit, false)),
        "<=" => f.hi = Some((lit, true)),
        "=" => f.in_list = Some(vec![lit]),
        "<>" | "!=" => f.not_eq.push(lit),
        _ => return false,
    }
    true
}

/// Which facts the table can honour (an OR takes a branch it can).
type Accept<'a> = &'a dyn Fn(&BTreeMap<String, ColFacts>) -> bool;

fn conjunct(e: &Ex, vn: Option<&str>, ok: Accept, out: &mut BTreeMap<String, ColFacts>) -> bool {
    match e {
        Ex::And(v) => v.iter().all(|x| conjunct(x, vn, ok, out)),
        Ex::IsNull(x, false) => match col_of(x, vn) {
            Some(c) => {
                out.entry(c).or_default().not_null = true;
                true
            }
            None => false,
        },
        Ex::IsNull(x, true) => match col_of(x, vn) {
            Some(c) => {
                out.entry(c).or_default().is_null = true;
                true
            }
            None => false,
        },
        Ex::Not(x) => match &**x {
            Ex::IsNull(y, true) => conjunct(&Ex::IsNull(y.clone(), false), vn, ok, out),
            Ex::Col(_) => match col_of(x, vn) {
                Some(c) => {
                    out.entry(c).or_default().in_list = Some(vec![Lit::Bool(false)]);
                    true
                }
                None => false,
            },
            _ => false,
        },
        Ex::Lit(Lit::Bool(true)) => true,
        Ex::Any(l, op, arr) if op == "=" && json_typeof(l, vn).is_some() => {
            let (Some(c), Ex::Array(items)) = (json_typeof(l, vn), &**arr) else {
                return false;
            };
            let kinds: Option<Vec<String>> = items
                .iter()
                .map(|i| match i {
                    Ex::Lit(Lit::Str(s)) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            kinds.is_some_and(|k| json_kinds(out.entry(c).or_default(), k))
        }
        Ex::Any(l, op, arr) if op == "=" => {
            let (Some(c), Ex::Array(items)) = (col_of(l, vn), &**arr) else {
                return false;
            };
            let mut lits = Vec::new();
            for it in items {
                match it {
                    Ex::Lit(l) => lits.push(l.clone()),
                    _ => return false,
                }
            }
            out.entry(c).or_default().in_list = Some(lits);
            true
        }
        Ex::Or(v) if v.iter().any(|x| matches!(x, Ex::IsNull(_, true))) => {
            // `x IS NULL OR <cond>`: values that meet <cond> meet it.
            // `a IS NULL OR b IS NULL`: at most one of them is set.
            let guards: Vec<String> = v
                .iter()
                .filter_map(|x| match x {
                    Ex::IsNull(c, true) => col_of(c, vn),
                    _ => None,
                })
                .collect();
            let rest: Vec<&Ex> = v
                .iter()
                .filter(|x| !matches!(x, Ex::IsNull(_, true)))
                .collect();
            match rest.as_slice() {
                [] if guards.len() >= 2 => null_group(&guards, NullRule::AtMostOne, e, out),
                [one] => conjunct(one, vn, ok, out),
                _ => false,
            }
        }
        Ex::Or(v) => {
            if in_list_or(v, vn, out) {
                return true;
            }
            // Values that meet one branch meet the OR: of the branches planck
            // reads, the one with the fewest NOT NULL demands (a nullable
            // foreign key cannot promise a value; a NULL it can always give).
            // A branch the table can honour comes first (koji's rpminfo:
            // `external_repo_id <> 0` cannot hold when the referenced table
            // holds only key 0; the other branch, `= 0`, always does).
            let mut best: Option<(bool, usize, BTreeMap<String, ColFacts>)> = None;
            for x in v {
                let mut scratch = out.clone();
                if conjunct(x, vn, ok, &mut scratch) {
                    let honoured = ok(&scratch);
                    let demands = scratch.values().filter(|f| f.not_null).count();
                    if best
                        .as_ref()
                        .is_none_or(|(h, d, _)| (!honoured, demands) < (!*h, *d))
                    {
                        best = Some((honoured, demands, scratch));
                    }
                }
            }
            match best {
                Some((_, _, m)) => {
                    *out = m;
                    true
                }
                None => false,
            }
        } // A boolean column: `CHECK (active)`, `CHECK (NOT archived)`.
        Ex::Col(_) => match col_of(e, vn) {
            Some(c) => {
                out.entry(c).or_default().in_list = Some(vec![Lit::Bool(true)]);
                true
            }
            None => false,
        },
        Ex::Cmp(..) => comparison(e, vn, out),
        _ => false,
    }
}

/// The expressions a sum counts as set: each term `CASE WHEN x IS NULL
/// THEN 0 ELSE 1 END`, `CASE WHEN x IS NOT NULL THEN 1 ELSE 0 END` or
/// `(x IS NOT NULL)::int` counts x; None when a term is anything else.
fn nonnull_terms(e: &Ex) -> Option<Vec<Ex>> {
    let num = |e: &Ex| match e {
        Ex::Lit(Lit::Num(n)) => Some(*n),
        _ => None,
    };
    match e {
        Ex::Cmp(a, op, b) if op == "+" => {
            let mut t = nonnull_terms(a)?;
            t.extend(nonnull_terms(b)?);
            Some(t)
        }
        Ex::IsNull(x, false) => Some(vec![(**x).clone()]),
        Ex::Func(f, args) if f == CASE_FN && args.len() == 3 => {
            let Ex::IsNull(x, is_null) = &args[0] else {
                return None;
            };
            let (then, other) = (num(&args[1])?, num(&args[2])?);
            let counts = if *is_null {
                (then, other) == (0.0, 1.0)
            } else {
                (then, other) == (1.0, 0.0)
            };
            counts.then(|| vec![(**x).clone()])
        }
        _ => None,
    }
}

/// A comparison read into facts: a regex or LIKE pattern, a NULL pattern
/// (`(a IS NULL) <> (b IS NULL)`, `num_nonnulls(...)`), case and blanks
/// (`col = lower(col)`), not empty, or a bound (see [`bound`]).
fn comparison(e: &Ex, vn: Option<&str>, out: &mut BTreeMap<String, ColFacts>) -> bool {
    match e {
        Ex::Cmp(l, op, r) if op == "~" || op == "~*" || op == "~~" => {
            let (Some(c), Ex::Lit(Lit::Str(p))) = (col_of(l, vn), &**r) else {
                return false;
            };
            let re = if op == "~~" {
                match crate::seed::regex::like_regex(p) {
                    Some(re) => re,
                    None => return false,
                }
            } else {
                p.clone()
            };
            let f = out.entry(c).or_default();
            if f.regex.is_some() {
                return false;
            }
            f.regex = Some((re, op == "~*"));
            true
        }
        // (a IS NOT NULL) <> (b IS NOT NULL): exactly one; (a IS NULL) = (b IS NULL): both or neither.
        Ex::Cmp(l, op, r)
            if matches!((&**l, &**r), (Ex::IsNull(..), Ex::IsNull(..)))
                && (op == "<>" || op == "=") =>
        {
            let (Ex::IsNull(a, na), Ex::IsNull(b, nb)) = (&**l, &**r) else {
                return false;
            };
            let (Some(a), Some(b)) = (col_of(a, vn), col_of(b, vn)) else {
                return false;
            };
            let same = (na == nb) == (op == "=");
            let rule = if same {
                NullRule::AllOrNone
            } else {
                NullRule::ExactlyOne
            };
            null_group(&[a, b], rule, e, out)
        }
        // A sum that counts the columns set, `CASE WHEN a IS NULL THEN 0
        // ELSE 1 END + ...` or `(a IS NOT NULL)::int + ...`, is
        // num_nonnulls(a, ...) (sanbase's `only_one_fk`).
        Ex::Cmp(l, op, r) if nonnull_terms(l).is_some_and(|t| t.len() > 1) => {
            let cols = nonnull_terms(l).unwrap_or_default();
            let counted = Ex::Func("num_nonnulls".into(), cols);
            comparison(&Ex::Cmp(Box::new(counted), op.clone(), r.clone()), vn, out)
        }
        // num_nonnulls(a, b, c) = 1, num_nulls(a, b) >= 1, ...
        Ex::Cmp(l, op, r) if matches!(&**l, Ex::Func(f, _) if f == "num_nonnulls" || f == "num_nulls") =>
        {
            let (Ex::Func(f, args), Ex::Lit(Lit::Num(n))) = (&**l, &**r) else {
                return false;
            };
            let cols: Option<Vec<String>> = args.iter().map(|a| col_of(a, vn)).collect();
            let Some(cols) = cols else { return false };
            let k = cols.len() as f64;
            // The number of columns set that the comparison asks for.
            let set = |x: f64| if f == "num_nulls" { k - x } else { x };
            let rule = match op.as_str() {
                "=" if set(*n) == 1.0 => NullRule::ExactlyOne,
                ">=" if f == "num_nonnulls" && *n == 1.0 => NullRule::ExactlyOne,
                ">" if f == "num_nonnulls" && *n == 0.0 => NullRule::ExactlyOne,
                "<=" if f == "num_nonnulls" && *n == 1.0 => NullRule::AtMostOne,
                "<" if f == "num_nonnulls" && *n == 2.0 => NullRule::AtMostOne,
                // At least n NULLs, n < k: at most one set leaves k - 1.
                ">=" if f == "num_nulls" && *n >= 1.0 && *n <= k - 1.0 => NullRule::AtMostOne,
                ">" if f == "num_nulls" && *n >= 0.0 && *n <= k - 2.0 => NullRule::AtMostOne,
                _ => return false,
            };
            null_group(&cols, rule, e, out)
        }
        // col = lower(col), col = btrim(col) (either side).
        Ex::Cmp(l, op, r)
            if op == "="
                && (matches!(&**r, Ex::Func(..)) || matches!(&**l, Ex::Func(..)))
                && (col_of(l, vn).is_some() || col_of(r, vn).is_some()) =>
        {
            let (c, func) = match (col_of(l, vn), col_of(r, vn)) {
                (Some(c), _) => (c, &**r),
                (_, Some(c)) => (c, &**l),
                _ => return false,
            };
            let Ex::Func(f, args) = func else {
                return false;
            };
            if args.len() != 1 || col_of(&args[0], vn).as_deref() != Some(c.as_str()) {
                return false;
            }
            let e = out.entry(c).or_default();
            match f.as_str() {
                "lower" => e.lower = true,
                "btrim" | "trim" => e.trim = true,
                _ => return false,
            }
            true
        }
        // jsonb_typeof(col) = 'array'
        Ex::Cmp(l, op, r) if op == "=" && json_typeof(l, vn).is_some() => {
            let (Some(c), Ex::Lit(Lit::Str(k))) = (json_typeof(l, vn), &**r) else {
                return false;
            };
            json_kinds(out.entry(c).or_default(), vec![k.clone()])
        }
        // length(btrim(col)) > 0, char_length(TRIM(BOTH FROM col)) >= 3:
        // the value is made trimmed, so its own length is the trimmed one.
        Ex::Cmp(l, op, r)
            if matches!(&**l, Ex::Func(f, a) if LENGTH_FNS.contains(&f.as_str())
                && a.len() == 1 && matches!(&a[0], Ex::Func(g, _) if g == "btrim" || g == "trim")) =>
        {
            let Ex::Func(f, a) = &**l else { return false };
            let Ex::Func(_, inner) = &a[0] else {
                return false;
            };
            let (Some(c), Ex::Lit(Lit::Num(n))) = (inner.first().and_then(|x| col_of(x, vn)), &**r)
            else {
                return false;
            };
            if inner.len() != 1 {
                return false;
            }
            let e = out.entry(c).or_default();
            if !length_bound(e, op, *n, f == "octet_length") {
                return false;
            }
            e.trim = true;
            e.nonempty |= e.min_len.is_some_and(|m| m > 0);
            true
        }
        // col <> ''
        Ex::Cmp(l, op, r)
            if (op == "<>" || op == "!=")
                && matches!(&**r, Ex::Lit(Lit::Str(s)) if s.is_empty()) =>
        {
            match col_of(l, vn) {
                Some(c) => {
                    let e = out.entry(c).or_default();
                    e.nonempty = true;
                    e.not_eq.push(Lit::Str(String::new()));
                    true
                }
                None => false,
            }
        }
        Ex::Cmp(l, op, r) => bound(l, op, r, vn, out),
        _ => false,
    }
}

/// `col <op> literal` (either side): a bound, a value or an excluded one;
/// `length(col) <op> n`: a length limit; `a <op> b`: an order between columns.
fn bound(l: &Ex, op: &str, r: &Ex, vn: Option<&str>, out: &mut BTreeMap<String, ColFacts>) -> bool {
    match (l, r) {
        (Ex::Lit(lit), _) if col_of(r, vn).is_some() => {
            let c = col_of(r, vn).unwrap_or_default();
            apply_bound(out.entry(c).or_default(), flip(op), lit.clone())
        }
        (Ex::Lit(_), Ex::Func(..)) => bound(r, flip(op), l, vn, out),
        (_, Ex::Lit(lit)) => {
            if let Some(c) = col_of(l, vn) {
                return apply_bound(out.entry(c).or_default(), op, lit.clone());
            }
            if let Ex::Func(f, args) = l
                && LENGTH_FNS.contains(&f.as_str())
                && args.len() == 1
                && let (Some(c), Lit::Num(n)) = (col_of(&args[0], vn), lit)
            {
                return length_bound(out.entry(c).or_default(), op, *n, f == "octet_length");
            }
            false
        }
        _ => match (col_of(l, vn), col_of(r, vn)) {
            (Some(a), Some(b)) => {
                let (hi, lo, strict) = match op {
                    "<" => (b, a, true),
                    "<=" => (b, a, false),
                    ">" => (a, b, true),
                    ">=" => (a, b, false),
                    _ => return false,
                };
                out.entry(hi).or_default().after.push((lo, strict));
                true
            }
            _ => false,
        },
    }
}

/// The functions whose value is a text's length.
const LENGTH_FNS: &[&str] = &["length", "char_length", "character_length", "octet_length"];

/// A length bound `length(col) <op> n` into `e` (the tightest of those
/// read): false for an operator that is no bound.
fn length_bound(e: &mut ColFacts, op: &str, n: f64, bytes: bool) -> bool {
    let (lo, hi) = match op {
        "=" => (Some(n.ceil()), Some(n.floor())),
        ">=" => (Some(n.ceil()), None),
        ">" => (Some(n.floor() + 1.0), None),
        "<=" => (None, Some(n.floor())),
        "<" => (None, Some(n.ceil() - 1.0)),
        _ => return false,
    };
    if let Some(lo) = lo {
        let lo = lo.max(0.0) as usize;
        e.min_len = Some(e.min_len.map_or(lo, |m| m.max(lo)));
    }
    if let Some(hi) = hi {
        let hi = hi.max(0.0) as usize;
        e.max_len = Some(e.max_len.map_or(hi, |m| m.min(hi)));
        e.len_bytes |= bytes;
    }
    true
}

/// The column of `jsonb_typeof(col)` / `json_typeof(col)`.
fn json_typeof(e: &Ex, vn: Option<&str>) -> Option<String> {
    match e {
        Ex::Func(f, args) if (f == "jsonb_typeof" || f == "json_typeof") && args.len() == 1 => {
            col_of(&args[0], vn)
        }
        _ => None,
    }
}

/// Narrows a column's JSON kinds to `kinds` (false: a kind JSON has not).
fn json_kinds(f: &mut ColFacts, kinds: Vec<String>) -> bool {
    const KINDS: &[&str] = &["object", "array", "string", "number", "boolean", "null"];
    if !kinds.iter().all(|k| KINDS.contains(&k.as_str())) {
        return false;
    }
    f.json_type = Some(match f.json_type.take() {
        Some(prev) => prev.into_iter().filter(|k| kinds.contains(k)).collect(),
        None => kinds,
    });
    true
}

/// `(a = 'x') OR (a = 'y')`: an IN list.
fn in_list_or(v: &[Ex], vn: Option<&str>, out: &mut BTreeMap<String, ColFacts>) -> bool {
    let mut col = None;
    let mut lits = Vec::new();
    for x in v {
        match x {
            Ex::Cmp(l, op, r) if op == "=" => match (col_of(l, vn), &**r) {
                (Some(c), Ex::Lit(lit)) if col.as_ref().is_none_or(|k| *k == c) => {
                    col = Some(c);
                    lits.push(lit.clone());
                }
                _ => return false,
            },
            _ => return false,
        }
    }
    match col {
        Some(c) => {
            out.entry(c).or_default().in_list = Some(lits);
            true
        }
        None => false,
    }
}

/// Puts `cols` in one NULL group (a column in two groups is beyond this).
fn null_group(
    cols: &[String],
    rule: NullRule,
    e: &Ex,
    out: &mut BTreeMap<String, ColFacts>,
) -> bool {
    let mut uniq = cols.to_vec();
    uniq.sort();
    uniq.dedup();
    if uniq.len() != cols.len() || cols.len() < 2 {
        return false;
    }
    let key = crate::seed::row::rng::name_key(&format!("{e:?}"));
    for (i, c) in cols.iter().enumerate() {
        let f = out.entry(c.clone()).or_default();
        if f.nulls.is_some() {
            return false;
        }
        f.nulls = Some((rule, key, i, cols.len()));
    }
    true
}

/// Whether a column's merged facts leave it no value: every listed value
/// excluded, NULL and not NULL at once, or bounds the wrong way round.
pub fn contradicts(f: &ColFacts) -> bool {
    let listed_out = f
        .in_list
        .as_ref()
        .is_some_and(|l| l.iter().all(|v| f.not_eq.contains(v)));
    let crossed = match (&f.lo, &f.hi) {
        (Some((Lit::Num(a), ai)), Some((Lit::Num(b), bi))) => a > b || (a == b && !(*ai && *bi)),
        _ => false,
    };
    let lengths = matches!((f.min_len, f.max_len), (Some(a), Some(b)) if a > b);
    let no_json = f.json_type.as_ref().is_some_and(Vec::is_empty);
    listed_out || (f.is_null && f.not_null) || crossed || lengths || no_json
}

/// Whether a CHECK definition is a disjunction at its top (or under ANDs).
pub fn is_or(def: &str) -> bool {
    fn has_or(e: &Ex) -> bool {
        match e {
            Ex::Or(_) => true,
            Ex::And(v) => v.iter().any(has_or),
            _ => false,
        }
    }
    parse(def).is_some_and(|e| has_or(&e))
}

/// Facts per column of one CHECK definition; None when it is not understood.
/// `value_name` renames a domain's `VALUE` to the column.
pub fn facts(def: &str, value_name: Option<&str>) -> Option<BTreeMap<String, ColFacts>> {
    facts_where(def, value_name, &|_| true)
}

/// [`facts`], where an OR prefers a branch whose facts `ok` accepts.
pub fn facts_where(
    def: &str,
    value_name: Option<&str>,
    ok: Accept,
) -> Option<BTreeMap<String, ColFacts>> {
    let e = parse(def)?;
    let mut out = BTreeMap::new();
    conjunct(&e, value_name, ok, &mut out).then_some(out)
}

/// Whether the facts say anything of a column's values beyond NULL-ness.
pub fn bounds_values(f: &ColFacts) -> bool {
    f.in_list.is_some()
        || f.lo.is_some()
        || f.hi.is_some()
        || !f.not_eq.is_empty()
        || beyond_equality_and_bounds(f)
}

/// Whether the facts ask more of a value than a list, bounds and
/// exclusions: a pattern, a length, case or blanks, an order against
/// another column, a JSON kind.
fn beyond_equality_and_bounds(f: &ColFacts) -> bool {
    f.regex.is_some()
        || f.min_len.is_some()
        || f.max_len.is_some()
        || f.lower
        || f.trim
        || f.nonempty
        || !f.after.is_empty()
        || f.json_type.is_some()
}

/// Whether `v` meets the value facts of `f` (an integer or a text; any
/// other value, or a fact on more than equality and bounds, does not).
pub fn admits(f: &ColFacts, v: &crate::seed::row::generate::Val) -> bool {
    use crate::seed::row::generate::Val;
    if beyond_equality_and_bounds(f) {
        return false;
    }
    let eq = |l: &Lit| match (l, v) {
        (Lit::Num(n), Val::Int(i)) => *n == *i as f64,
        (Lit::Str(s), Val::Text(t)) => s == t,
        (Lit::Bool(b), Val::Bool(c)) => b == c,
        _ => false,
    };
    let num = match v {
        Val::Int(i) => Some(*i as f64),
        _ => None,
    };
    let above = |b: &Option<(Lit, bool)>, up: bool| match b {
        None => true,
        Some((Lit::Num(n), incl)) => num.is_some_and(|x| {
            if up {
                x > *n || (*incl && x == *n)
            } else {
                x < *n || (*incl && x == *n)
            }
        }),
        Some(_) => false,
    };
    f.in_list.as_ref().is_none_or(|l| l.iter().any(eq))
        && !f.not_eq.iter().any(eq)
        && above(&f.lo, true)
        && above(&f.hi, false)
}

/// Merges facts of several constraints on one column.
pub fn merge(into: &mut ColFacts, f: ColFacts) {
    if let Some(l) = f.in_list {
        into.in_list = Some(match into.in_list.take() {
            Some(prev) => prev.into_iter().filter(|x| l.contains(x)).collect(),
            None => l,
        });
    }
    if f.lo.is_some() {
        into.lo = f.lo;
    }
    if f.hi.is_some() {
        into.hi = f.hi;
    }
    // Lengths: the tightest of the constraints'.
    if let Some(m) = f.max_len {
        into.max_len = Some(into.max_len.map_or(m, |x| x.min(m)));
    }
    if let Some(m) = f.min_len {
        into.min_len = Some(into.min_len.map_or(m, |x| x.max(m)));
    }
    into.len_bytes |= f.len_bytes;
    if let Some(k) = f.json_type {
        into.json_type = Some(match into.json_type.take() {
            Some(prev) => prev.into_iter().filter(|x| k.contains(x)).collect(),
            None => k,
        });
    }
    into.after.extend(f.after);
    into.not_null |= f.not_null;
    into.not_eq.extend(f.not_eq);
    if f.regex.is_some() {
        into.regex = f.regex;
    }
    into.lower |= f.lower;
    into.trim |= f.trim;
    into.nonempty |= f.nonempty;
    if f.nulls.is_some() {
        into.nulls = f.nulls;
    }
    into.is_null |= f.is_null;
}

#[cfg(test)]
mod tests;
