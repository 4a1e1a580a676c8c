//! Step 2 of [`super::uniqueness`]: a key's finite columns enumerated
//! jointly. A time column's domain is finite at its granularity (a day for
//! a date, a second for `timestamp(0)`): its values become `n` instants
//! ([`Gen::Steps`]), `n` the combinations the key still needs beside the
//! other columns (the parent's keys, a choice), its range widened past an
//! end no CHECK bounds when the range holds fewer (a `(query_id, date)`
//! key of 40,000 rows over 20,000 parents needs 2 dates a parent, a
//! `UNIQUE (day)` of 10,000 rows 10,000 days); when a CHECK bounds both
//! ends, the rows are lowered to what it allows.

use std::collections::HashSet;

use crate::catalog::schema::TypeKind;
use crate::error::Result;
use crate::seed::check_expr::Lit;
use crate::seed::columns::DAY;
use crate::seed::row::generate::Gen;
use crate::seed::row::plan::{JointGroup, Pick, TablePlan, WITHIN_PARENT, pair_count};
use crate::seed::row::rng::{self, Permutation};
use crate::seed::spec;

use super::super::context::seed_err;
use super::super::sizing::cap_rows;
use super::hold::KeyHold;

/// The combinations of values the key's columns have ([`enumerate_jointly`]
/// enumerates them), or None when one has no finite domain or another
/// key holds one already (an enumeration, a foreign key's distinct picks).
pub(super) fn joint_capacity(k: &KeyHold, tp: &TablePlan) -> Option<u64> {
    let mut seen_fk = HashSet::new();
    let mut product = 1u128;
    for &c in &k.rest {
        let radix = match k.fk_cols.get(&c).copied() {
            Some(fi) if !seen_fk.insert(fi) => continue,
            Some(fi)
                if matches!(
                    tp.fks[fi].pick,
                    Pick::Joint { .. } | Pick::DistinctInParent | Pick::UniqueGlobal
                ) =>
            {
                return None;
            }
            Some(fi) => k.parent_rows(tp.fks[fi].parent).unwrap_or(tp.rows),
            None if matches!(tp.cols[c].generator, Gen::Joint { .. }) => return None,
            None => tp.cols[c].generator.domain()?,
        };
        product = product.saturating_mul(u128::from(radix));
    }
    Some(product.min(u128::from(u64::MAX)) as u64)
}

/// Step 2 of [`uniqueness`]: the key's finite columns (foreign keys,
/// choices, small ranges) enumerated jointly through a permutation of the
/// row index (ordered pairs for two foreign keys a CHECK orders), rows
/// capped to the combinations there are.
pub(super) fn enumerate_jointly(k: &KeyHold, tp: &mut TablePlan) -> Result<()> {
    let (u, table, within, need) = (k.u, k.table, k.within, k.need);
    let (spec_span, sized_by_spec, max_per_parent) =
        (k.spec_span, k.sized_by_spec, k.max_per_parent);
    let mut radices = Vec::new();
    let mut members: Vec<(usize, Option<usize>)> = Vec::new();
    let mut seen_fk = HashSet::new();
    let mut times = Vec::new();
    for &c in &k.rest {
        if let Some(fk_i) = k.fk_cols.get(&c).copied() {
            if seen_fk.insert(fk_i) {
                radices.push(k.parent_rows(tp.fks[fk_i].parent).unwrap_or(tp.rows));
                members.push((c, Some(fk_i)));
            }
        } else if let Gen::Time { lo, hi, .. } = tp.cols[c].generator {
            // Its instants are counted once the other radices are known.
            times.push((radices.len(), c, lo, hi));
            radices.push(1);
            members.push((c, None));
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
    // Each time column: as many instants as the combinations the key
    // still needs beside the other columns' (the first one widened).
    let total = if within && members.len() == 1 {
        need
    } else {
        tp.rows.max(1)
    };
    for (i, c, lo, hi) in times {
        let others = radices
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .fold(1u64, |a, (_, r)| a.saturating_mul(*r))
            .max(1);
        let g = time_steps(k, c, lo, hi, total.div_ceil(others));
        radices[i] = g.domain().unwrap_or(1);
        tp.cols[c].generator = g;
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

/// The distance between two distinct values of a time column once stored,
/// in microseconds: a day for a date, `10^(6-p)` for a `timestamp(p)`,
/// else one.
pub(super) fn granularity(col: &crate::catalog::schema::Column) -> i64 {
    match col.kind {
        TypeKind::Date => DAY,
        TypeKind::Timestamp | TypeKind::Timestamptz => col
            .type_name
            .split_once('(')
            .and_then(|(_, r)| r.split(')').next()?.trim().parse::<u32>().ok())
            .filter(|p| *p < 6)
            .map_or(1, |p| 10i64.pow(6 - p)),
        _ => 1,
    }
}

/// Time column `c`'s values in `lo..=hi` as `want` distinct instants at
/// its granularity, spread over the range; when the range holds fewer, it
/// is widened past `hi` (or, when a CHECK bounds `hi`, before `lo`) one
/// granule a value, unless a CHECK bounds both ends or the spec gives the
/// values: then as many as the range holds (the caller lowers the rows).
pub(super) fn time_steps(k: &KeyHold, c: usize, lo: i64, hi: i64, want: u64) -> Gen {
    let gran = granularity(&k.table.columns[c]);
    let want = want.clamp(1, (i64::MAX / gran) as u64);
    // Inside the CHECK's bounds (the default range keeps a year's width,
    // which may reach past one: `day BETWEEN '2024-01-01' AND '2024-01-31'`).
    let bound = |b: &Option<(Lit, bool)>, dir: i64| match b {
        Some((Lit::Str(s), incl)) => {
            spec::parse_timestamp(s).map(|v| if *incl { v } else { v + dir * gran })
        }
        _ => None,
    };
    let lo = bound(&k.facts[c].lo, 1).map_or(lo, |b| lo.max(b));
    let hi = bound(&k.facts[c].hi, -1).map_or(hi, |b| hi.min(b));
    let fit = (hi.saturating_sub(lo).max(0) / gran) as u64 + 1;
    if fit >= want {
        let spread = if want > 1 {
            (hi - lo) / (want - 1) as i64 / gran * gran
        } else {
            0
        };
        return Gen::Steps {
            lo,
            step: spread.max(gran),
            n: want,
        };
    }
    let facts = &k.facts[c];
    let from_spec = k.spec_span.contains_key(&c);
    let span = ((want - 1) as i64).saturating_mul(gran);
    let lo = if from_spec || (facts.hi.is_some() && facts.lo.is_some()) {
        return Gen::Steps {
            lo,
            step: gran,
            n: fit,
        };
    } else if facts.hi.is_none() {
        lo
    } else {
        hi.saturating_sub(span)
    };
    Gen::Steps {
        lo,
        step: gran,
        n: want,
    }
}
