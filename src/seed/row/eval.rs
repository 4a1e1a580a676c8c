//! One row's values, evaluated: the functions a worker thread calls for
//! every row and column.
//!
//! They call each other: a generator follows another column of the row
//! (`after`) or a parent row's key (a foreign key), a column's shape and a
//! solved CHECK turn the generated value into one the CHECKs admit and may
//! draw again, and a row the server refused is drawn at another attempt.
//! They live in one module so the types they work on
//! ([`crate::seed::row::plan`], [`crate::seed::row::generate`],
//! [`crate::seed::row::shape`], [`crate::seed::row::solved`]) import no
//! evaluation and no module of the row model imports another in a cycle.

use crate::catalog::schema::TypeKind;
use crate::seed::row::attempt::{ATTEMPTS, NULL_ATTEMPT};
use crate::seed::row::generate::{
    FakeKind, Gen, Text, Val, WORDS, base36, json_str, json_val, push_int, truncate_chars,
};
use crate::seed::row::plan::{Pick, RowCtx, SeedPlan};
use crate::seed::row::rng::{self, Permutation, ValueRng};
use crate::seed::row::shape::{null_in_group, shape_text};
use crate::seed::row::solved::{ColRule, Solved};

impl SeedPlan {
    pub fn value(&self, t: usize, c: usize, ctx: &RowCtx) -> Val {
        self.tables[t].cols[c].generator.eval(self, t, c, ctx)
    }

    /// The parent row of foreign key `fk` in row `ctx`; `set`: never NULL
    /// by choice (a nullable key's NULL share and first self reference).
    /// `at`: the attempt of a row whose foreign key the server's CHECKs
    /// redraw (0: the row's own draw; see [`value_at`]).
    /// `attempt`: the row's attempt (the keys this one keeps apart from
    /// are drawn at theirs).
    fn fk_row(
        &self,
        t: usize,
        fk: usize,
        ctx: &RowCtx,
        set: bool,
        at: u8,
        attempt: u8,
    ) -> Option<u64> {
        let tp = &self.tables[t];
        let f = &tp.fks[fk];
        let p = &self.tables[f.parent];
        let h = redraw(rng::hash(self.seed, tp.key, f.key, ctx.row), at);
        if !set && f.null_p > 0.0 && rng::null_draw(h, f.null_p) {
            return None;
        }
        let nullable = f.nullable && !set;
        if p.rows == 0 || f.only.as_ref().is_some_and(|o| o.is_empty()) {
            return None;
        }
        Some(match f.pick {
            // A redrawn attempt leaves the layout's parent for any other.
            Pick::Primary if at > 0 => {
                self.row_apart(t, fk, ctx, attempt, 0..p.rows, |m| rng::below(h, m))
            }
            // A parent the CHECKs do not admit: another, among those they do.
            Pick::Primary => match f.only.as_deref() {
                Some(o) if o.binary_search(&ctx.parent_row).is_err() => {
                    o[rng::below(h, o.len() as u64) as usize]
                }
                _ => ctx.parent_row,
            },
            Pick::Tenant => ctx.block as u64,
            Pick::SameTenant => {
                let (a, b) = (p.cum[ctx.block], p.cum[ctx.block + 1]);
                if b > a {
                    self.row_apart(t, fk, ctx, attempt, a..b, |m| rng::below(h, m))
                } else if nullable {
                    return None;
                } else {
                    rng::below(h, p.rows)
                }
            }
            Pick::Uniform => self.row_apart(t, fk, ctx, attempt, 0..p.rows, |m| rng::below(h, m)),
            Pick::SelfRef => {
                let start = if tp.cum.len() > 2 {
                    tp.cum[ctx.block]
                } else {
                    0
                };
                if ctx.row == start {
                    if nullable {
                        return None;
                    }
                    ctx.row
                } else if nullable {
                    start + rng::below(h, ctx.row - start)
                } else {
                    start + rng::below(h, ctx.row - start + 1)
                }
            }
            // Past the parent's rows a nullable unique key is NULL: taking a
            // parent twice would repeat the key (calcom's
            // `InstantMeetingToken.bookingId`, 4,000 tokens for 2,000 bookings).
            Pick::UniqueGlobal => {
                let n = f.only.as_ref().map_or(p.rows, |o| o.len() as u64);
                if ctx.row >= n && f.nullable {
                    return None;
                }
                let i = Permutation::new(n, f.key ^ self.seed).apply(ctx.row % n);
                f.only.as_ref().map_or(i, |o| o[i as usize])
            }
            Pick::DistinctInParent => self.row_apart(t, fk, ctx, attempt, 0..p.rows, |m| {
                (ctx.ordinal + rng::mix(ctx.parent_row ^ f.key)) % m
            }),
            Pick::Joint { group, digit } => {
                let d = self.joint_digit(t, group, digit, ctx.row);
                self.row_apart(t, fk, ctx, attempt, 0..p.rows, |m| d.min(m - 1))
            }
        })
    }

    /// A row of `rows` for foreign key `fk`, other than the parent rows of
    /// the keys it is kept apart from ([`crate::seed::row::plan::FkPlan::apart`]):
    /// `draw(m)` picks the r-th (r < m) of the m rows they leave, so the
    /// pick is as its own pick would be over fewer rows (a permutation or a
    /// digit stays one-to-one for given other keys). With no row left, the
    /// r-th of them all (the server's CHECK then decides).
    fn row_apart(
        &self,
        t: usize,
        fk: usize,
        ctx: &RowCtx,
        attempt: u8,
        rows: std::ops::Range<u64>,
        draw: impl FnOnce(u64) -> u64,
    ) -> u64 {
        let tp = &self.tables[t];
        let f = &tp.fks[fk];
        // The rows it may take: the range, or the rows of `only` in it
        // (all of `only` when none is: the CHECK before the block).
        let pool: Option<&[u64]> = f.only.as_deref().map(|o| {
            let (a, b) = (
                o.partition_point(|r| *r < rows.start),
                o.partition_point(|r| *r < rows.end),
            );
            if a < b { &o[a..b] } else { o }
        });
        let all = pool.map_or(rows.end - rows.start, |p| p.len() as u64);
        let row_at = |i: u64| pool.map_or(rows.start + i, |p| p[i as usize]);
        let apart = &f.apart;
        if apart.is_empty() || all == 0 {
            return row_at(draw(all.max(1)));
        }
        // Positions (in the pool) of the rows the others took.
        let mut taken: Vec<u64> = apart
            .iter()
            .filter_map(|&o| {
                let at = if self.redrawn_fk(t, o) { attempt } else { 0 };
                self.fk_row(t, o, ctx, true, at, attempt)
            })
            .filter_map(|r| match pool {
                Some(p) => p.binary_search(&r).ok().map(|i| i as u64),
                None => rows.contains(&r).then(|| r - rows.start),
            })
            .collect();
        taken.sort_unstable();
        taken.dedup();
        let left = all - taken.len() as u64;
        if left == 0 {
            return row_at(draw(all));
        }
        let mut x = draw(left);
        for r in taken {
            if r <= x {
                x += 1;
            } else {
                break;
            }
        }
        row_at(x)
    }

    /// Whether an attempt redraws foreign key `fk` of table `t` (its
    /// columns are among those the server's CHECKs redraw).
    fn redrawn_fk(&self, t: usize, fk: usize) -> bool {
        let tp = &self.tables[t];
        tp.fks[fk]
            .cols
            .iter()
            .any(|c| tp.checked.redraw.binary_search(c).is_ok())
    }

    pub fn fk_value(&self, t: usize, fk: usize, part: usize, ctx: &RowCtx) -> Val {
        self.fk_value_of(t, fk, part, ctx, false, (0, 0))
    }

    /// [`SeedPlan::fk_value`] at attempt `attempt` of a row the server's
    /// CHECKs refused: a key they redraw (`redrawn`) picks another parent
    /// row, as the key picks; one kept apart from redrawn keys moves off
    /// their new rows.
    pub fn fk_value_at(
        &self,
        t: usize,
        fk: usize,
        part: usize,
        ctx: &RowCtx,
        attempt: u8,
        redrawn: bool,
    ) -> Val {
        let at = if redrawn { attempt } else { 0 };
        self.fk_value_of(t, fk, part, ctx, false, (at, attempt))
    }

    /// [`SeedPlan::fk_value`] where a nullable key is set: a solved CHECK's
    /// branch asks for a value (the solver's, `check_solve`).
    pub fn fk_value_set(&self, t: usize, fk: usize, part: usize, ctx: &RowCtx) -> Val {
        self.fk_value_of(t, fk, part, ctx, true, (0, 0))
    }

    /// `(at, attempt)`: the key's own redraw and the row's attempt (see
    /// [`SeedPlan::fk_row`]).
    fn fk_value_of(
        &self,
        t: usize,
        fk: usize,
        part: usize,
        ctx: &RowCtx,
        set: bool,
        (at, attempt): (u8, u8),
    ) -> Val {
        let f = &self.tables[t].fks[fk];
        if let Pick::Joint { group, digit } = f.pick
            && self.tables[t].joints[group].sorted
        {
            return self.sorted_pair_value(t, fk, group, digit, ctx.row);
        }
        let own = self.key_of(t, fk, part, ctx, self.fk_row(t, fk, ctx, set, at, attempt));
        let Some((other, low)) = f.order else {
            return own;
        };
        // An ordered pair: the lower of the two picks' keys to the lower.
        let oat = if self.redrawn_fk(t, other) {
            attempt
        } else {
            0
        };
        let theirs = self.key_of(
            t,
            other,
            part,
            ctx,
            self.fk_row(t, other, ctx, true, oat, attempt),
        );
        let swap = match (&own, &theirs) {
            (Val::Int(x), Val::Int(y)) => (x > y) == low,
            (Val::Uuid(x), Val::Uuid(y)) => (x > y) == low,
            _ => false,
        };
        if swap { theirs } else { own }
    }

    /// Part `part` of the key of parent row `prow` of foreign key `fk`
    /// (NULL for no row).
    fn key_of(&self, t: usize, fk: usize, part: usize, ctx: &RowCtx, prow: Option<u64>) -> Val {
        let f = &self.tables[t].fks[fk];
        match prow {
            None => Val::Null,
            Some(prow) => {
                if f.parent == t && prow == ctx.row {
                    // A row referencing itself: its own key value.
                    return self.value(t, f.parent_cols[part], ctx);
                }
                let pc = f.parent_cols[part];
                // Most keys are sequences: no need to place the parent row.
                if let Gen::Sequence { start, step } = &self.tables[f.parent].cols[pc].generator {
                    return Val::Int(start.wrapping_add((prow as i64).wrapping_mul(*step)));
                }
                let pctx = self.ctx(f.parent, prow);
                self.value(f.parent, pc, &pctx)
            }
        }
    }

    /// One key of an ordered pair whose parent keys are not in row order:
    /// the pair's two parent keys, the lower for digit 0.
    fn sorted_pair_value(&self, t: usize, fk: usize, group: usize, digit: usize, row: u64) -> Val {
        let f = &self.tables[t].fks[fk];
        if self.tables[f.parent].rows == 0 {
            return Val::Null;
        }
        let key = |d: usize| {
            let prow = self.joint_digit(t, group, d, row);
            let pctx = self.ctx(f.parent, prow);
            self.value(f.parent, f.parent_cols[0], &pctx)
        };
        let (a, b) = (key(0), key(1));
        let swap = match (&a, &b) {
            (Val::Int(x), Val::Int(y)) => x > y,
            (Val::Uuid(x), Val::Uuid(y)) => x > y,
            _ => false,
        };
        let (lo, hi) = if swap { (b, a) } else { (a, b) };
        if digit == 0 { lo } else { hi }
    }
}

impl Gen {
    /// Evaluates the value of column `c` of table `t` for the row `ctx`.
    pub fn eval(&self, plan: &SeedPlan, t: usize, c: usize, ctx: &RowCtx) -> Val {
        let tp = &plan.tables[t];
        let key = tp.cols[c].key;
        let h = rng::hash(plan.seed, tp.key, key, ctx.row);
        let v = self.eval_h(plan, t, c, ctx, h, 0);
        apply_shape(plan, t, c, ctx, h, v, 0)
    }

    /// The value of attempt `at` (> 0) of a row whose constraints the server
    /// checks (`server_check`): the same column and row,
    /// another draw. Attempt 0 is [`Gen::eval`].
    /// `redrawn`: the column is one the attempt redraws (else only the
    /// columns it follows may differ).
    pub fn eval_attempt(
        &self,
        plan: &SeedPlan,
        t: usize,
        c: usize,
        ctx: &RowCtx,
        at: u8,
        redrawn: bool,
    ) -> Val {
        let tp = &plan.tables[t];
        let key = tp.cols[c].key;
        let h0 = rng::hash(plan.seed, tp.key, key, ctx.row);
        let h = if redrawn { redraw(h0, at) } else { h0 };
        let v = self.eval_h(plan, t, c, ctx, h, at);
        apply_shape(plan, t, c, ctx, h, v, at)
    }

    pub(crate) fn eval_h(
        &self,
        plan: &SeedPlan,
        t: usize,
        c: usize,
        ctx: &RowCtx,
        h: u64,
        at: u8,
    ) -> Val {
        let row = ctx.row;
        match self {
            Gen::Null => Val::Null,
            Gen::Const(v) => v.clone(),
            Gen::Sequence { start, step } => {
                Val::Int(start.wrapping_add((row as i64).wrapping_mul(*step)))
            }
            Gen::Int { lo, hi } => {
                let span = (*hi as i128 - *lo as i128 + 1) as u128;
                if span > u128::from(u64::MAX) {
                    Val::Int(h as i64)
                } else {
                    Val::Int((*lo as i128 + rng::below(h, span as u64) as i128) as i64)
                }
            }
            Gen::IntUnique { lo, n } => {
                let p = Permutation::new(*n, h_key(plan, t, c));
                Val::Int(lo + p.apply(row % n.max(&1)) as i64)
            }
            Gen::Float { lo, hi } => Val::Float(lo + (hi - lo) * rng::unit(h)),
            Gen::Dec { lo, hi, scale } => Val::Dec(lo + dec_offset(*lo, *hi, h), *scale),
            Gen::Bool { p_true } => Val::Bool(rng::unit(h) < *p_true),
            Gen::Choice { vals, cum } => vals
                .get(rng::choice_index(cum, vals.len(), h))
                .cloned()
                .unwrap_or(Val::Null),
            Gen::Text {
                text,
                unique,
                max_len,
            } => {
                let mut r = ValueRng::new(h);
                let mut s = text.make(&mut r, row, h_key(plan, t, c));
                if *unique {
                    unique_suffix(plan, t, row, at, text, *max_len, &mut s);
                } else if let Some(m) = max_len {
                    truncate_chars(&mut s, *m);
                }
                Val::Text(s)
            }
            Gen::Uuid { unique } => {
                let hi = if *unique {
                    rng::mix(row ^ h_key(plan, t, c))
                } else {
                    h
                };
                uuid_v4(hi, h)
            }
            Gen::Time {
                lo,
                hi,
                bias,
                unique,
            } => {
                if *unique {
                    let n = plan.tables[t].rows.max(1);
                    let p = Permutation::new(n, h_key(plan, t, c));
                    let step = ((hi - lo) / n as i64).max(1);
                    Val::Micros(lo + p.apply(row % n) as i64 * step)
                } else {
                    let u = libm::pow(rng::unit(h), *bias);
                    Val::Micros(hi - ((hi - lo) as f64 * u) as i64)
                }
            }
            Gen::After {
                col,
                min,
                max,
                fallback,
            } => {
                // The base of the same attempt: a redrawn base moves its followers.
                let base = value_at(plan, t, *col, ctx, at);
                let kind = &plan.tables[t].cols[c].kind;
                match after(kind, &base, *min, *max, h) {
                    Some(v) => v,
                    None => fallback.eval_h(plan, t, c, ctx, h, at),
                }
            }
            Gen::Interval => Val::Micros(rng::below(h, 30 * 86_400_000_000) as i64),
            Gen::TimeOfDay => Val::Micros(rng::below(h, 86_400_000_000) as i64),
            Gen::Listed(vals) if vals.is_empty() => Val::Null,
            Gen::Listed(vals) => vals[(row % vals.len() as u64) as usize].clone(),
            Gen::Bytes { min, max } => {
                let mut r = ValueRng::new(h);
                let n = r.range(u64::from(*min), u64::from(*max)) as usize;
                let mut v = vec![0u8; n];
                rand::Rng::fill_bytes(&mut r, &mut v);
                Val::Bytes(v)
            }
            Gen::Inet => Val::Inet((h >> 32) as u32),
            Gen::TsVec => ts_vector(h),
            Gen::Json(fields) => json_object(fields, plan, t, c, ctx, h, at),
            Gen::Array { elem, min, max } => {
                let mut r = ValueRng::new(h);
                let n = r.range(u64::from(*min), u64::from(*max));
                Val::Array(
                    (0..n)
                        .map(|_| elem.eval_h(plan, t, c, ctx, r.step(), at))
                        .collect(),
                )
            }
            Gen::Fk { fk, part } => plan.fk_value(t, *fk, *part, ctx),
            Gen::Ordinal { lo } => Val::Int(lo + ctx.ordinal as i64),
            Gen::Steps { n, .. } => self.nth(rng::below(h, (*n).max(1))),
            Gen::Joint {
                group,
                digit,
                inner,
            } => {
                if *group == usize::MAX {
                    // Distinct within the parent: the row's ordinal among its siblings.
                    inner.nth(ctx.ordinal % inner.domain().unwrap_or(1).max(1))
                } else {
                    inner.nth(plan.joint_digit(t, *group, *digit, row))
                }
            }
            Gen::Slot {
                start,
                width,
                micros,
            } => {
                let lo = start.wrapping_add((row as i64).wrapping_mul(*width));
                let bound = |x: i64| if *micros { Val::Micros(x) } else { Val::Int(x) };
                Val::Array(vec![bound(lo), bound(lo.wrapping_add(*width))])
            }
            Gen::Ranges(ranges) => in_ranges(ranges, h),
            Gen::Nullable { p, inner } => {
                if rng::null_draw(h, *p) {
                    Val::Null
                } else {
                    inner.eval_h(plan, t, c, ctx, h, at)
                }
            }
        }
    }
}

/// A uniform offset in `[0, hi - lo]` (unscaled decimals) from `h`.
fn dec_offset(lo: i128, hi: i128, h: u64) -> i128 {
    let span = (hi - lo + 1).max(1) as u128;
    // A span past 2^64 (numeric(65, 30)) would overflow `h * span`:
    // its high half times `h` stays below the span.
    if span <= u128::from(u64::MAX) {
        ((u128::from(h) * span) >> 64) as i128
    } else {
        ((span >> 64) * u128::from(h)) as i128
    }
}

/// One of `ranges`, then uniform inside it (NULL without any).
fn in_ranges(ranges: &[(i64, i64)], h: u64) -> Val {
    if ranges.is_empty() {
        return Val::Null;
    }
    let (a, b) = ranges[rng::below(h, ranges.len() as u64) as usize];
    let v = a + rng::below(rng::mix(h), (b - a).max(1) as u64) as i64;
    Val::Micros(v)
}

/// A version 4 uuid: `hi` and the row's hash `h` as its bits.
fn uuid_v4(hi: u64, h: u64) -> Val {
    let lo = rng::mix(h ^ 0x5555);
    // Version 4, variant 1 bits.
    let mut v = (u128::from(hi) << 64) | u128::from(lo);
    v = (v & !(0xf << 76)) | (0x4 << 76);
    v = (v & !(0x3 << 62)) | (0x2 << 62);
    Val::Uuid(v)
}

/// One to five distinct lorem words, sorted (a tsvector's lexemes).
fn ts_vector(h: u64) -> Val {
    let mut r = ValueRng::new(h);
    let mut v: Vec<String> = (0..r.range(1, 6))
        .map(|_| WORDS[r.below(WORDS.len() as u64) as usize].to_string())
        .collect();
    v.sort();
    v.dedup();
    Val::TsVec(v)
}

/// A unique text's row number appended to `s` (before an email's `@`),
/// `s` truncated first so both fit `max_len`.
fn unique_suffix(
    plan: &SeedPlan,
    t: usize,
    row: u64,
    at: u8,
    text: &Text,
    max_len: Option<usize>,
    s: &mut String,
) {
    let suffix = if max_len.is_some_and(|m| m < 12) {
        base36(row + 1)
    } else if at > 0 {
        // A redrawn attempt (a CHECK the server decides
        // refused the first): the row as fixed-width base-36
        // digits, unique among the rows drawn so whatever the
        // prefix (the unique index re-created after the load
        // checks them against the others); with `_` on even
        // attempts, with no separator on odd ones.
        let width = base36(plan.tables[t].rows.max(1)).len();
        let digits = format!("{:0>width$}", base36(row + 1));
        if at.is_multiple_of(2) {
            format!("_{digits}")
        } else {
            digits
        }
    } else {
        let mut d = String::with_capacity(21);
        d.push('-');
        push_int(&mut d, (row + 1) as i64);
        d
    };
    if let Some(m) = max_len {
        truncate_chars(s, m.saturating_sub(suffix.chars().count()));
    }
    match s.find('@') {
        Some(at) if matches!(text, Text::Fake(FakeKind::Email)) => s.insert_str(at, &suffix),
        _ => s.push_str(&suffix),
    }
}

/// A JSON object of `fields`, each value drawn from its own hash.
fn json_object(
    fields: &[(String, Gen)],
    plan: &SeedPlan,
    t: usize,
    c: usize,
    ctx: &RowCtx,
    h: u64,
    at: u8,
) -> Val {
    let mut out = String::with_capacity(16 * fields.len() + 2);
    out.push('{');
    for (i, (k, g)) in fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        json_str(&mut out, k);
        out.push_str(": ");
        let hk = rng::json_field(h, rng::name_key(k), i);
        json_val(&mut out, &g.eval_h(plan, t, c, ctx, hk, at));
    }
    out.push('}');
    Val::Json(out)
}

const DAY_MICROS: i64 = 86_400_000_000;

/// A value of a column of `kind` at or after `base` (strictly after when
/// `min` > 0), `min`/`max` being a gap in microseconds. Timestamps take the
/// gap as it is; dates whole days (at least one when strict); numbers read
/// it in seconds (1 to 30 days: 1 to 2,592,000 units), clamped to the type,
/// and a numeric keeps the base's scale so rounding cannot undo the order.
/// None when the base is no value to order after (NULL: any value passes).
fn after(kind: &TypeKind, base: &Val, min: i64, max: i64, h: u64) -> Option<Val> {
    let pick = |lo: i64, hi: i64| lo + rng::below(h, (hi - lo + 1).max(1) as u64) as i64;
    let units = |lo: i64, hi: i64| {
        let lo = if min > 0 { (lo / 1_000_000).max(1) } else { 0 };
        pick(lo, (hi / 1_000_000).max(lo))
    };
    match (kind, base) {
        (TypeKind::Int2 | TypeKind::Int4 | TypeKind::Int8, b) => {
            let b = b.as_i64()?;
            let v = b.saturating_add(units(min, max)).min(kind.int_max());
            Some(Val::Int(if v <= b && min > 0 { b } else { v }))
        }
        (TypeKind::Numeric, Val::Dec(u, s)) => {
            let g = i128::from(units(min, max)) * 10i128.pow(*s);
            Some(Val::Dec(u + g, *s))
        }
        (TypeKind::Numeric | TypeKind::Float4 | TypeKind::Float8, b) => {
            let b = match b {
                Val::Float(f) => *f,
                Val::Dec(u, s) => *u as f64 / libm::pow(10.0, f64::from(*s)),
                other => other.as_i64()? as f64,
            };
            Some(Val::Float(b + units(min, max) as f64))
        }
        (TypeKind::Date, b) => {
            let b = b.as_i64()?;
            let lo = if min > 0 {
                (min / DAY_MICROS).max(1)
            } else {
                0
            };
            let days = pick(lo, (max / DAY_MICROS).max(lo));
            Some(Val::Micros(
                b.div_euclid(DAY_MICROS) * DAY_MICROS + days * DAY_MICROS,
            ))
        }
        (_, b) => Some(Val::Micros(b.as_i64()? + pick(min, max))),
    }
}

pub(crate) fn h_key(plan: &SeedPlan, t: usize, c: usize) -> u64 {
    rng::mix(plan.seed ^ plan.tables[t].key ^ plan.tables[t].cols[c].key.rotate_left(17))
}

/// Applies column `c`'s shape to its generated value `v` (`h`: the row's
/// hash, `at`: the server's attempt, see [`crate::seed::row::attempt`]).
pub fn apply_shape(
    plan: &SeedPlan,
    t: usize,
    c: usize,
    ctx: &RowCtx,
    h: u64,
    v: Val,
    at: u8,
) -> Val {
    let Some(s) = plan.tables[t].cols[c].shape.as_deref() else {
        return v;
    };
    if s.null {
        return Val::Null;
    }
    let mut v = v;
    if let Some(g) = &s.nulls {
        if null_in_group(g, plan.seed, ctx.row) {
            return Val::Null;
        }
        if v == Val::Null {
            // Set in this row: a nullable generator's inner value, a
            // nullable foreign key's parent (`num_nonnulls(a_id, b_id) = 1`).
            v = set_value(plan, t, c, ctx, &plan.tables[t].cols[c].generator);
        }
    }
    let mut v = match v {
        Val::Text(text) => Val::Text(shape_text(s, text, h)),
        other => other,
    };
    if let Some(sv) = &s.solved {
        v = sv.apply(plan, t, c, ctx, h, v, at);
    }
    // Off an excluded value: the next integer, or one more character.
    for _ in 0..s.not_eq.len() + 1 {
        if !s.not_eq.contains(&v) {
            break;
        }
        v = match v {
            Val::Int(i) => Val::Int(if i == i64::MAX { i - 1 } else { i + 1 }),
            Val::Text(mut t) => {
                t.push('x');
                Val::Text(t)
            }
            other => other,
        };
    }
    v
}

/// A value of generator `g` for column `c` in a row where a NULL group
/// sets it: a nullable generator's inner value, a foreign key's parent
/// key even where the key is nullable.
fn set_value(plan: &SeedPlan, t: usize, c: usize, ctx: &RowCtx, g: &Gen) -> Val {
    match g {
        Gen::Nullable { inner, .. } => set_value(plan, t, c, ctx, inner),
        Gen::Fk { fk, part } => plan.fk_value_set(t, *fk, *part, ctx),
        g => g.eval(plan, t, c, ctx),
    }
}

impl Solved {
    /// Column `c`'s value `v` (its generator's, `h` the row's draw) turned
    /// into one its row's branch admits.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &self,
        plan: &SeedPlan,
        t: usize,
        c: usize,
        ctx: &RowCtx,
        h: u64,
        v: Val,
        at: u8,
    ) -> Val {
        let fixed = &plan.tables[t].checked.fixed;
        if fixed.binary_search(&c).is_ok() {
            return v;
        }
        // The row's values of the key columns the CHECK reads: its branch
        // must admit them.
        let keys: Vec<(usize, Val)> = self
            .cols
            .iter()
            .filter(|k| fixed.binary_search(k).is_ok())
            .map(|&k| (k, plan.value(t, k, ctx)))
            .collect();
        let admits = |b: &crate::seed::row::solved::Branch| {
            keys.iter()
                .all(|(k, kv)| b.rules.get(k).is_none_or(|r| r.admits(kv)))
        };
        let (null, rule) = self.decide_where(plan.seed, ctx.row, at, c, &admits);
        if null == Some(true) {
            return Val::Null;
        }
        let mut v = v;
        if let Some(a) = rule.and_then(|r| r.same_as) {
            // The row's value of the column it equals, as that column draws it.
            let g = &plan.tables[t].cols[a].generator;
            return g.eval_attempt(plan, t, a, ctx, at, true);
        }
        if let Some(r) = rule
            && !r.set.is_empty()
        {
            v = r.set[rng::below(rng::mix(h ^ 0x5e7), r.set.len() as u64) as usize].clone();
        }
        if v == Val::Null && null == Some(false) {
            v = non_null(plan, t, c, ctx, h, &plan.tables[t].cols[c].generator);
        }
        let Some(r) = rule else { return v };
        if let (Some((lo, hi)), Val::Int(i)) = (r.range, &v)
            && (*i < lo || *i > hi)
        {
            let span = (i128::from(hi) - i128::from(lo) + 1).min(i128::from(u64::MAX)) as u64;
            v = Val::Int((i128::from(lo) + i128::from(rng::below(h, span.max(1)))) as i64);
        }
        if let Some((lo, hi)) = r.range {
            let span = (i128::from(hi) - i128::from(lo) + 1).min(i128::from(u64::MAX)) as u64;
            let draw = || (i128::from(lo) + i128::from(rng::below(h, span.max(1)))) as i64;
            match &v {
                Val::Float(f) if *f < lo as f64 || *f > hi as f64 => v = Val::Float(draw() as f64),
                Val::Dec(u, s) => {
                    let one = 10i128.pow(*s);
                    if *u < i128::from(lo) * one || *u > i128::from(hi) * one {
                        v = Val::Dec(i128::from(draw()) * one, *s);
                    }
                }
                _ => {}
            }
        }
        if let (Some((lo, hi)), Val::Text(text)) = (r.len, &mut v) {
            let n = text.chars().count();
            if n > hi {
                *text = text.chars().take(hi).collect();
            } else if n < lo {
                text.extend(std::iter::repeat_n('x', lo - n));
            }
        }
        if r.not.contains(&v) {
            v = off(plan, t, c, h, v, r);
        }
        v
    }
}

/// A value of column `c` that is not NULL, from its generator.
fn non_null(plan: &SeedPlan, t: usize, c: usize, ctx: &RowCtx, h: u64, g: &Gen) -> Val {
    match g {
        Gen::Nullable { inner, .. } => non_null(plan, t, c, ctx, h, inner),
        Gen::Fk { fk, part } => plan.fk_value_set(t, *fk, *part, ctx),
        g => g.eval_h(plan, t, c, ctx, h, 0),
    }
}

/// Another value than the excluded `v`: another of the column's choices
/// or enum labels, the next integer, the other boolean, one more character.
fn off(plan: &SeedPlan, t: usize, c: usize, h: u64, v: Val, r: &ColRule) -> Val {
    let cp = &plan.tables[t].cols[c];
    let mut g = &cp.generator;
    while let Gen::Nullable { inner, .. } = g {
        g = inner;
    }
    let pool: Vec<Val> = match (g, &cp.kind) {
        (Gen::Choice { vals, .. }, _) => vals.clone(),
        (_, TypeKind::Enum(labels)) => labels.iter().cloned().map(Val::Text).collect(),
        _ => Vec::new(),
    };
    if !pool.is_empty() {
        let start = rng::below(h, pool.len() as u64) as usize;
        if let Some(x) = (0..pool.len())
            .map(|i| &pool[(start + i) % pool.len()])
            .find(|x| !r.not.contains(x) && **x != Val::Null)
        {
            return x.clone();
        }
    }
    let mut v = v;
    for _ in 0..=r.not.len() {
        if !r.not.contains(&v) {
            break;
        }
        v = match v {
            Val::Int(i) => Val::Int(i.wrapping_add(1)),
            Val::Bool(b) => Val::Bool(!b),
            Val::Text(mut s) => {
                s.push('x');
                Val::Text(s)
            }
            other => other,
        };
    }
    v
}

/// The hash of attempt `at` of a redrawn column whose own draw is `h0`
/// (attempt 0 is the draw itself; the NULL resort draws as the last).
fn redraw(h0: u64, at: u8) -> u64 {
    let draw = at.min(ATTEMPTS - 1);
    if draw == 0 {
        h0
    } else {
        rng::mix(h0 ^ u64::from(draw).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

/// The value of column `c` for attempt `attempt` of the row `ctx`.
pub fn value_at(plan: &SeedPlan, t: usize, c: usize, ctx: &RowCtx, attempt: u8) -> Val {
    let sc = &plan.tables[t].checked;
    if attempt == 0 || sc.is_empty() {
        return plan.value(t, c, ctx);
    }
    let redrawn = sc.redraw.binary_search(&c).is_ok();
    if redrawn && attempt >= NULL_ATTEMPT && sc.nullable.binary_search(&c).is_ok() {
        return Val::Null;
    }
    // A foreign key the CHECKs read picks another parent row; one kept
    // apart from such keys (or ordered against one) moves off their new rows.
    if let Gen::Fk { fk, part } = plan.tables[t].cols[c].generator
        && (redrawn
            || !plan.tables[t].fks[fk].apart.is_empty()
            || plan.tables[t].fks[fk].order.is_some())
    {
        return plan.fk_value_at(t, fk, part, ctx, attempt, redrawn);
    }
    // Not redrawn, the column keeps its draw; one that follows a redrawn
    // column (`after`) follows that column's new value.
    plan.tables[t].cols[c]
        .generator
        .eval_attempt(plan, t, c, ctx, attempt, redrawn)
}
