//! A column drawn as PostgreSQL's planner statistics describe it (issue
//! 49, `planck seed --stats`; any spec may use the same keys): the spec's
//! `values` at their shares of the rows (the most common values), the rest
//! from an equi-depth histogram (`bins`: each bin as likely as the next; a
//! `range` is one bin), and about `distinct` different values in all.
//!
//! A distinct count is met by drawing the rest from a fixed set of points
//! placed at equal depths through the histogram: `d` points drawn `n`
//! times give `d (1 - e^(-n/d))` distinct values on average, so `d` is
//! solved for the count asked. When the count is about the rows drawn (a
//! column of nearly all-different values) or needs more than
//! [`MAX_POINTS`], the rest is drawn continuously through the bins instead
//! (the most common values are then kept only if they weigh: see
//! [`continuous`]).

use crate::catalog::schema::{Column, TypeKind};
use crate::error::Result;
use crate::seed::row::generate::{Gen, Val};
use crate::seed::spec::{self, ColumnSpec, Scalar, SpecFile, Values};

/// Points a column's rest is drawn from, at most (their values and
/// weights are held in memory for the whole seed).
pub(crate) const MAX_POINTS: usize = 100_000;

/// Most common values that together hold less than this share of the rows
/// are left out of a continuous draw (each is then below the fidelity
/// report's 0.02 tolerance on a value's frequency).
const WEIGHS: f64 = 0.02;

const DAY: f64 = 86_400_000_000.0;

/// The generator of a column with `bins` or `distinct` (`cs`), drawn for a
/// table of `rows` rows. `common` is the `values` entry compiled (checked
/// against the column's enum or IN list), with the spec's own entry: its
/// weights are shares of all rows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compile(
    sf: &SpecFile,
    rows: u64,
    col: &Column,
    kind: &TypeKind,
    cs: &ColumnSpec,
    common: Option<(Gen, &toml::Spanned<Values>)>,
    span: &std::ops::Range<usize>,
    cname: &str,
) -> Result<Gen> {
    let here = |m: String, h: &str| sf.error(span.clone(), m, Some(h.to_string()));
    let numeric = kind.is_int()
        || kind.is_time()
        || matches!(
            kind,
            TypeKind::Float4 | TypeKind::Float8 | TypeKind::Numeric
        );
    if !numeric {
        return Err(here(
            format!(
                "`bins` and `distinct` of {cname}: {} is not a number, date or timestamp",
                col.type_name
            ),
            "give a text column `values`, or leave `bins` and `distinct` out",
        ));
    }
    let key = |s: &Scalar| match s {
        Scalar::Int(i) => Some(*i as f64),
        Scalar::Float(f) => Some(*f),
        Scalar::Str(t) if kind.is_time() => spec::parse_timestamp(t).map(|m| m as f64),
        _ => None,
    };
    let bounds: Option<Vec<f64>> = match (&cs.bins, &cs.range) {
        (Some(b), _) => b.get_ref().iter().map(key).collect(),
        (None, Some(r)) => r.get_ref().iter().map(key).collect(),
        (None, None) => None,
    };
    let Some(bounds) = bounds.filter(|b| b.len() >= 2) else {
        return Err(here(
            format!("`distinct` of {cname} needs `bins` or `range` of its type to draw from"),
            "for example `range = [1, 1000], distinct = 50`",
        ));
    };
    let mut vals = Vec::new();
    let mut weights = Vec::new();
    if let Some((g, v)) = common {
        let Values::Weighted(m) = v.get_ref() else {
            return Err(sf.error(
                v.span(),
                format!(
                    "`values` of {cname} beside `bins` or `distinct` must give each value its share"
                ),
                Some("`values = { 0 = 0.3, 1 = 0.1 }`: each value's share of the rows".into()),
            ));
        };
        let total: f64 = m.values().sum();
        if let Gen::Choice { vals: v, cum } = g {
            let mut last = 0.0;
            for (x, c) in v.into_iter().zip(cum) {
                vals.push(x);
                weights.push((c - last) * total);
                last = c;
            }
        }
    }
    let null = cs.null.unwrap_or(0.0).clamp(0.0, 1.0);
    let common_share: f64 = weights.iter().sum::<f64>().min(1.0 - null);
    let rest = (1.0 - null - common_share).max(0.0);
    let drawn = rows as f64 * rest;
    let wanted = cs.distinct.as_ref().map(|d| {
        let d = *d.get_ref();
        let all = if d < 0.0 { -d * rows as f64 } else { d };
        (all - vals.len() as f64).max(1.0)
    });
    let points = match wanted {
        _ if rest <= 0.0 => Some(0),
        Some(w) => points_for(w, drawn),
        None => None,
    };
    let point = |q: f64| to_val(kind, col, at_depth(&bounds, q));
    match points {
        Some(d) => {
            let d = d.min(MAX_POINTS);
            for j in 0..d {
                let v = point((j as f64 + 0.5) / d as f64);
                // Points that fall on the same value (an integer's narrow
                // bin, a date's day) are one value with their weights summed.
                if vals.last() == Some(&v) {
                    *weights.last_mut().expect("a weight per value") += rest / d as f64;
                } else {
                    vals.push(v);
                    weights.push(rest / d as f64);
                }
            }
            Ok(Gen::weighted_choice(vals, &weights))
        }
        None if common_share >= WEIGHS => {
            // Continuous, but the common values weigh: the rest on as many
            // points as may be held.
            for j in 0..MAX_POINTS {
                vals.push(point((j as f64 + 0.5) / MAX_POINTS as f64));
                weights.push(rest / MAX_POINTS as f64);
            }
            Ok(Gen::weighted_choice(vals, &weights))
        }
        None => Ok(continuous(kind, col, &bounds)),
    }
}

/// How many equally likely points, drawn `drawn` times, give `wanted`
/// distinct values on average; None when no count of points does (the
/// draws are nearly all different) or more than [`MAX_POINTS`] would.
fn points_for(wanted: f64, drawn: f64) -> Option<usize> {
    if drawn < 1.0 {
        return Some(wanted.round().max(1.0) as usize);
    }
    if wanted >= 0.97 * drawn {
        return None;
    }
    let expect = |d: f64| d * (1.0 - (-drawn / d).exp());
    let (mut lo, mut hi) = (wanted, wanted);
    while expect(hi) < wanted {
        hi *= 2.0;
        if hi > MAX_POINTS as f64 * 4.0 {
            return None;
        }
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if expect(mid) < wanted {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let d = hi.round() as usize;
    (d <= MAX_POINTS).then_some(d.max(1))
}

/// The value at depth `q` (0..1) of an equi-depth histogram: bin
/// `q * bins`, linearly inside it.
fn at_depth(bounds: &[f64], q: f64) -> f64 {
    let bins = bounds.len() - 1;
    let x = q.clamp(0.0, 1.0) * bins as f64;
    let k = (x.floor() as usize).min(bins - 1);
    bounds[k] + (bounds[k + 1] - bounds[k]) * (x - k as f64)
}

/// `x` as a value of the column's type.
fn to_val(kind: &TypeKind, col: &Column, x: f64) -> Val {
    match kind {
        TypeKind::Date => Val::Micros(((x / DAY).round() * DAY) as i64),
        k if k.is_time() => Val::Micros(x.round() as i64),
        k if k.is_int() => Val::Int(x.round() as i64),
        TypeKind::Numeric => {
            let s = col.numeric.map_or(2, |n| n.1);
            Val::Dec((x * libm::pow(10.0, f64::from(s))).round() as i128, s)
        }
        _ => Val::Float(x),
    }
}

/// The rest drawn continuously: through each bin, each bin as likely
/// (integers, dates, timestamps); a float or numeric uniformly between
/// the first and last bound.
fn continuous(kind: &TypeKind, col: &Column, bounds: &[f64]) -> Gen {
    let (lo, hi) = (bounds[0], bounds[bounds.len() - 1]);
    if kind.is_int() || kind.is_time() {
        let step = if kind.is_int() { 1 } else { 0 };
        return Gen::Ranges(
            bounds
                .windows(2)
                .map(|w| (w[0] as i64, (w[1] as i64 + step).max(w[0] as i64 + 1)))
                .collect(),
        );
    }
    match kind {
        TypeKind::Numeric => {
            let s = col.numeric.map_or(2, |n| n.1);
            let m = libm::pow(10.0, f64::from(s));
            Gen::Dec {
                lo: (lo * m).round() as i128,
                hi: (hi * m).round() as i128,
                scale: s,
            }
        }
        _ => Gen::Float { lo, hi },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_give_the_distinct_count_asked() {
        for (wanted, drawn) in [(50.0, 10_000.0), (3_000.0, 10_000.0), (8_000.0, 20_000.0)] {
            let d = points_for(wanted, drawn).unwrap() as f64;
            let got = d * (1.0 - (-drawn / d).exp());
            assert!(
                (got / wanted - 1.0).abs() < 0.01,
                "{wanted} {drawn}: {d} {got}"
            );
        }
        assert_eq!(points_for(9_800.0, 10_000.0), None, "nearly all different");
    }

    #[test]
    fn depths_run_through_the_bins_equally() {
        let b = [0.0, 10.0, 1000.0];
        assert_eq!(at_depth(&b, 0.25), 5.0);
        assert_eq!(at_depth(&b, 0.5), 10.0);
        assert_eq!(at_depth(&b, 0.75), 505.0);
        assert_eq!(at_depth(&b, 1.0), 1000.0);
    }
}
