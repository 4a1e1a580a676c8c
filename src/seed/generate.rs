//! Value generators: pure functions from (seed, table, column, row) to a value.
//!
//! A [`Gen`] is compiled once by the planner and evaluated for every row on
//! rayon workers. It holds no state and allocates only the value it returns,
//! so any row can be produced in any order on any thread and come out the
//! same. Keys (foreign keys, ordinals, joint enumerations) need the row's
//! place in the plan and are resolved through [`crate::seed::layout::Plan`].

use std::fmt::Write as _;

use fake::Fake;
use fake::locales::{Data, EN};

use crate::catalog::schema::TypeKind;
use crate::seed::layout::{Plan, RowCtx};
use crate::seed::rng::{self, Permutation, ValueRng};
use crate::seed::{server_check, shape};

/// One generated value, before it is encoded for the column's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Unscaled integer and scale: 1234, 2 is 12.34.
    Dec(i128, u32),
    Text(String),
    Bytes(Vec<u8>),
    Uuid(u128),
    /// Microseconds since 2000-01-01 (timestamps; dates take the day, times the time of day).
    Micros(i64),
    Json(String),
    Inet(u32),
    TsVec(Vec<String>),
    Array(Vec<Val>),
}

impl Val {
    /// The value as a user writes it in a spec, for messages.
    pub fn display(&self) -> String {
        match self {
            Val::Text(s) => format!("{s:?}"),
            Val::Int(i) => i.to_string(),
            Val::Float(f) => f.to_string(),
            Val::Bool(b) => b.to_string(),
            other => format!("{other:?}"),
        }
    }

    /// The value as an integer, for `after` and joint keys.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Val::Int(i) | Val::Micros(i) => Some(*i),
            Val::Float(f) => Some(*f as i64),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeKind {
    Name,
    FirstName,
    LastName,
    Email,
    Username,
    Company,
    Url,
    Phone,
    City,
    Country,
    Street,
    Zip,
    CatchPhrase,
    Ip,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Text {
    Fake(FakeKind),
    /// Lorem words joined by `sep`, optionally capitalized.
    Words {
        min: u32,
        max: u32,
        sep: char,
        capital: bool,
    },
    /// Sentences until the length (characters) drawn from [min, max].
    Paragraphs {
        min: u32,
        max: u32,
    },
    Hex {
        len: u32,
    },
    Path,
    /// `{row}` and `{word}` placeholders.
    Format(Vec<Piece>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Lit(String),
    Row,
    Word,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Gen {
    Null,
    Const(Val),
    /// `start + row * step` (row is the 0-based global row index).
    Sequence {
        start: i64,
        step: i64,
    },
    /// Uniform integer in [lo, hi].
    Int {
        lo: i64,
        hi: i64,
    },
    /// Unique integer: `lo + perm(row)` over [0, n).
    IntUnique {
        lo: i64,
        n: u64,
    },
    Float {
        lo: f64,
        hi: f64,
    },
    /// Uniform decimal, unscaled bounds.
    Dec {
        lo: i128,
        hi: i128,
        scale: u32,
    },
    Bool {
        p_true: f64,
    },
    /// Weighted categorical; `cum` holds cumulative weights ending at 1.0.
    Choice {
        vals: Vec<Val>,
        cum: Vec<f64>,
    },
    /// Text; `unique` appends the row number; `max_len` truncates (characters).
    Text {
        text: Text,
        unique: bool,
        max_len: Option<usize>,
    },
    Uuid {
        unique: bool,
    },
    /// Microseconds in [lo, hi]; `bias` > 1 leans towards `hi`; unique spreads rows apart.
    Time {
        lo: i64,
        hi: i64,
        bias: f64,
        unique: bool,
    },
    /// After another column of the same row, by a gap in [min, max] microseconds.
    After {
        col: usize,
        min: i64,
        max: i64,
        fallback: Box<Gen>,
    },
    Interval,
    TimeOfDay,
    Bytes {
        min: u32,
        max: u32,
    },
    Inet,
    TsVec,
    Json(Vec<(String, Gen)>),
    Array {
        elem: Box<Gen>,
        min: u32,
        max: u32,
    },
    /// The row's value from a fixed list (`list[row % len]`): the keys a
    /// table kept as reference data already holds, so foreign keys into it
    /// pick among them.
    Listed(std::sync::Arc<Vec<Val>>),
    /// A foreign key column: the `part`-th referenced column of the parent row picked for `fk`.
    Fk {
        fk: usize,
        part: usize,
    },
    /// `lo + n`, n the row's ordinal among the children of its parent row.
    Ordinal {
        lo: i64,
    },
    /// The `digit`-th coordinate of a joint enumeration, mapped through `inner.nth`.
    Joint {
        group: usize,
        digit: usize,
        inner: Box<Gen>,
    },
    /// One of the partitions' ranges, then uniform inside it.
    Ranges(Vec<(i64, i64)>),
    /// Row r's range `[start + r·width, start + (r + 1)·width)`: ranges of
    /// different rows never overlap (an exclusion's `WITH &&`). `micros`:
    /// the bounds are times, else integers.
    Slot {
        start: i64,
        width: i64,
        micros: bool,
    },
    /// NULL with probability `p`, else `inner`.
    Nullable {
        p: f64,
        inner: Box<Gen>,
    },
}

const WORDS: &[&str] = EN::LOREM_WORD;

/// Width of a word's slot in [`padded_words`].
const SLOT: usize = 16;

/// Every lorem word followed by spaces to [`SLOT`] bytes, one after the
/// other; `None` when a word is not ASCII or does not leave room for a
/// space. Appending a word then copies a constant 16 bytes (a register
/// move, where a word's own length made a call to `memcpy`) and cuts the
/// string back to the word and one space.
fn padded_words() -> Option<&'static str> {
    static PADDED: std::sync::LazyLock<Option<String>> = std::sync::LazyLock::new(|| {
        let mut all = String::with_capacity(WORDS.len() * SLOT);
        for w in WORDS {
            if !w.is_ascii() || w.len() >= SLOT {
                return None;
            }
            all.push_str(w);
            all.extend(std::iter::repeat_n(' ', SLOT - w.len()));
        }
        Some(all)
    });
    PADDED.as_deref()
}

fn push_words(out: &mut String, r: &mut ValueRng, n: u32, sep: char, capital: bool) {
    let padded = padded_words().filter(|_| sep == ' ' && n > 1);
    push_words_with(out, r, n, sep, capital, padded);
}

/// [`push_words`], appending through `padded` (see [`padded_words`]) when
/// given: each word then comes with its space, and the last one is taken
/// back at the end.
fn push_words_with(
    out: &mut String,
    r: &mut ValueRng,
    n: u32,
    sep: char,
    capital: bool,
    padded: Option<&str>,
) {
    // One 64-bit draw picks four words (16 bits each, multiply-shift into the list).
    let mut bits = 0u64;
    for i in 0..n {
        if i % 4 == 0 {
            bits = r.step();
        }
        let idx = (((bits & 0xffff) * WORDS.len() as u64) >> 16) as usize;
        bits >>= 16;
        let w = WORDS[idx];
        let capital = capital && i == 0;
        match padded {
            Some(p) if !capital => {
                let at = out.len();
                out.push_str(&p[idx * SLOT..idx * SLOT + SLOT]);
                out.truncate(at + w.len() + 1);
            }
            Some(_) => {
                push_word(out, w, true);
                out.push(' ');
            }
            None => {
                if i > 0 {
                    out.push(sep);
                }
                push_word(out, w, capital);
            }
        }
    }
    if padded.is_some() && n > 0 {
        // The last word's space.
        out.pop();
    }
}

fn push_word(out: &mut String, w: &str, capital: bool) {
    let b = w.as_bytes();
    if capital && !b.is_empty() && b[0].is_ascii_lowercase() {
        out.push(b[0].to_ascii_uppercase() as char);
        out.push_str(&w[1..]);
    } else {
        out.push_str(w);
    }
}

fn paragraphs(out: &mut String, r: &mut ValueRng, len: usize) {
    let mut in_para = 0;
    while out.len() < len {
        if !out.is_empty() {
            if in_para >= 5 {
                out.push_str("\n\n");
                in_para = 0;
            } else {
                out.push(' ');
            }
        }
        let n = r.range(4, 14) as u32;
        push_words(out, r, n, ' ', true);
        out.push('.');
        in_para += 1;
    }
    truncate_chars(out, len);
}

pub(crate) fn truncate_chars(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    // ASCII (the lorem words, most fakes): characters are bytes.
    if s.is_ascii() {
        s.truncate(max);
    } else if let Some((i, _)) = s.char_indices().nth(max) {
        s.truncate(i);
    }
}

/// Appends the decimal digits of `i`, as `{i}` formats it, without the
/// formatting machinery (one call per value in a hot loop).
pub(crate) fn push_int(out: &mut String, i: i64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = i.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push('-');
    }
    for &b in &buf[at..] {
        out.push(b as char);
    }
}

fn fake_text(kind: FakeKind, r: &mut ValueRng) -> String {
    use fake::faker::{
        address::en as a, company::en as co, internet::en as i, name::en as n,
        phone_number::en as p,
    };
    match kind {
        FakeKind::Name => n::Name().fake_with_rng(r),
        FakeKind::FirstName => n::FirstName().fake_with_rng(r),
        FakeKind::LastName => n::LastName().fake_with_rng(r),
        FakeKind::Email => i::SafeEmail().fake_with_rng(r),
        FakeKind::Username => i::Username().fake_with_rng(r),
        FakeKind::Company => co::CompanyName().fake_with_rng(r),
        FakeKind::Url => {
            let d: String = i::DomainSuffix().fake_with_rng(r);
            let mut s = String::from("https://");
            push_words(&mut s, r, 1, '-', false);
            s.push('.');
            s.push_str(&d);
            s.push('/');
            push_words(&mut s, r, 2, '/', false);
            s
        }
        FakeKind::Phone => p::PhoneNumber().fake_with_rng(r),
        FakeKind::City => a::CityName().fake_with_rng(r),
        FakeKind::Country => a::CountryName().fake_with_rng(r),
        FakeKind::Street => {
            let b: String = a::BuildingNumber().fake_with_rng(r);
            let s: String = a::StreetName().fake_with_rng(r);
            format!("{b} {s}")
        }
        FakeKind::Zip => a::ZipCode().fake_with_rng(r),
        FakeKind::CatchPhrase => co::CatchPhrase().fake_with_rng(r),
        FakeKind::Ip => {
            let v = r.step() as u32;
            let mut s = String::with_capacity(15);
            for (k, shift) in [24, 16, 8, 0].into_iter().enumerate() {
                if k > 0 {
                    s.push('.');
                }
                push_int(&mut s, i64::from((v >> shift) & 255));
            }
            s
        }
    }
}

const MIMES: &[&str] = &[
    "md", "txt", "json", "yaml", "py", "rs", "ts", "sh", "toml", "png",
];

/// Base-36 digits of n, for compact unique suffixes.
pub fn base36(mut n: u64) -> String {
    let mut v = Vec::new();
    loop {
        v.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    v.reverse();
    String::from_utf8(v).unwrap_or_default()
}

impl Text {
    fn make(&self, r: &mut ValueRng, row: u64, key: u64) -> String {
        let mut s = String::new();
        self.make_into(&mut s, r, row, key);
        s
    }

    /// [`Text::make`] into `s`, which must be empty: the direct encoders
    /// ([`crate::seed::direct`]) reuse one string for every row of a chunk.
    pub(crate) fn make_into(&self, s: &mut String, r: &mut ValueRng, row: u64, key: u64) {
        debug_assert!(s.is_empty());
        match self {
            Text::Fake(k) => s.push_str(&fake_text(*k, r)),
            Text::Words {
                min,
                max,
                sep,
                capital,
            } => {
                let n = r.range(u64::from(*min), u64::from(*max)) as u32;
                push_words(s, r, n.max(1), *sep, *capital);
            }
            Text::Paragraphs { min, max } => {
                let n = r.range(u64::from(*min), u64::from(*max)) as usize;
                // Room for the last sentence past the length, before the cut.
                s.reserve(n.max(1) + 256);
                paragraphs(s, r, n.max(1));
            }
            Text::Hex { len } => {
                // The first 16 digits are a bijection of the row: unique by construction.
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let mut x = rng::mix(row ^ key);
                s.reserve(*len as usize);
                for i in 0..*len {
                    if i > 0 && i % 16 == 0 {
                        x = r.step();
                    }
                    s.push(char::from(HEX[(x >> 60) as usize]));
                    x <<= 4;
                }
            }
            Text::Path => {
                let n = r.range(1, 3) as u32;
                push_words(s, r, n, '/', false);
                s.push('.');
                s.push_str(MIMES[r.below(MIMES.len() as u64) as usize]);
            }
            Text::Format(pieces) => {
                for p in pieces {
                    match p {
                        Piece::Lit(l) => s.push_str(l),
                        Piece::Row => push_int(s, (row + 1) as i64),
                        Piece::Word => push_words(s, r, 1, ' ', false),
                    }
                }
            }
        }
    }
}

/// Parses a `format` template.
pub fn parse_format(t: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        let (lit, tail) = rest.split_at(i);
        if !lit.is_empty() {
            out.push(Piece::Lit(lit.to_string()));
        }
        if let Some(t2) = tail.strip_prefix("{row}") {
            out.push(Piece::Row);
            rest = t2;
        } else if let Some(t2) = tail.strip_prefix("{word}") {
            out.push(Piece::Word);
            rest = t2;
        } else {
            out.push(Piece::Lit("{".into()));
            rest = &tail[1..];
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Lit(rest.to_string()));
    }
    out
}

impl Gen {
    /// A weighted [`Gen::Choice`]: `weights[i]` is `vals[i]`'s share of
    /// their sum (any positive scale: counts, fractions).
    pub fn weighted_choice(vals: Vec<Val>, weights: &[f64]) -> Gen {
        let total: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let mut acc = 0.0;
        let cum = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        Gen::Choice { vals, cum }
    }

    /// Number of distinct values, when finite and small enough to enumerate.
    pub fn domain(&self) -> Option<u64> {
        match self {
            Gen::Const(_) => Some(1),
            Gen::Int { lo, hi } => Some((hi - lo + 1).max(0) as u64),
            Gen::Bool { .. } => Some(2),
            Gen::Choice { vals, .. } => Some(vals.len() as u64),
            Gen::Null => Some(0),
            _ => None,
        }
    }

    /// The n-th value of a finite domain.
    pub fn nth(&self, n: u64) -> Val {
        match self {
            Gen::Const(v) => v.clone(),
            Gen::Int { lo, .. } => Val::Int(lo + n as i64),
            Gen::Bool { .. } => Val::Bool(n == 1),
            Gen::Choice { vals, .. } => vals.get(n as usize).cloned().unwrap_or(Val::Null),
            _ => Val::Null,
        }
    }

    /// Whether values are distinct across rows by construction.
    pub fn is_unique(&self) -> bool {
        match self {
            Gen::Sequence { step, .. } => *step != 0,
            Gen::IntUnique { .. } | Gen::Ordinal { .. } => true,
            Gen::Text { unique, text, .. } => {
                *unique || matches!(text, Text::Format(p) if p.contains(&Piece::Row))
            }
            Gen::Uuid { unique } => *unique,
            Gen::Time { unique, .. } => *unique,
            _ => false,
        }
    }

    /// Evaluates the value of column `c` of table `t` for the row `ctx`.
    pub fn eval(&self, plan: &Plan, t: usize, c: usize, ctx: &RowCtx) -> Val {
        let tp = &plan.tables[t];
        let key = tp.cols[c].key;
        let h = rng::hash(plan.seed, tp.key, key, ctx.row);
        let v = self.eval_h(plan, t, c, ctx, h, 0);
        shape::apply(plan, t, c, ctx, h, v, 0)
    }

    /// The value of attempt `at` (> 0) of a row whose constraints the server
    /// checks (see [`crate::seed::server_check`]): the same column and row,
    /// another draw. Attempt 0 is [`Gen::eval`].
    /// `redrawn`: the column is one the attempt redraws (else only the
    /// columns it follows may differ).
    pub fn eval_attempt(
        &self,
        plan: &Plan,
        t: usize,
        c: usize,
        ctx: &RowCtx,
        at: u8,
        redrawn: bool,
    ) -> Val {
        let tp = &plan.tables[t];
        let key = tp.cols[c].key;
        let h0 = rng::hash(plan.seed, tp.key, key, ctx.row);
        let draw = at.min(server_check::ATTEMPTS - 1);
        let h = if draw == 0 || !redrawn {
            h0
        } else {
            rng::mix(h0 ^ u64::from(draw).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        };
        let v = self.eval_h(plan, t, c, ctx, h, at);
        shape::apply(plan, t, c, ctx, h, v, at)
    }

    pub(crate) fn eval_h(
        &self,
        plan: &Plan,
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
            Gen::Dec { lo, hi, scale } => {
                let span = (hi - lo + 1).max(1) as u128;
                // A span past 2^64 (numeric(65, 30)) would overflow `h * span`:
                // its high half times `h` stays below the span.
                let v = if span <= u128::from(u64::MAX) {
                    ((u128::from(h) * span) >> 64) as i128
                } else {
                    ((span >> 64) * u128::from(h)) as i128
                };
                Val::Dec(lo + v, *scale)
            }
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
                        truncate_chars(&mut s, m.saturating_sub(suffix.chars().count()));
                    }
                    match s.find('@') {
                        Some(at) if matches!(text, Text::Fake(FakeKind::Email)) => {
                            s.insert_str(at, &suffix)
                        }
                        _ => s.push_str(&suffix),
                    }
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
                let lo = rng::mix(h ^ 0x5555);
                // Version 4, variant 1 bits.
                let mut v = (u128::from(hi) << 64) | u128::from(lo);
                v = (v & !(0xf << 76)) | (0x4 << 76);
                v = (v & !(0x3 << 62)) | (0x2 << 62);
                Val::Uuid(v)
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
                let base = server_check::value_at(plan, t, *col, ctx, at);
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
            Gen::TsVec => {
                let mut r = ValueRng::new(h);
                let mut v: Vec<String> = (0..r.range(1, 6))
                    .map(|_| WORDS[r.below(WORDS.len() as u64) as usize].to_string())
                    .collect();
                v.sort();
                v.dedup();
                Val::TsVec(v)
            }
            Gen::Json(fields) => {
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
            Gen::Ranges(ranges) => {
                if ranges.is_empty() {
                    return Val::Null;
                }
                let (a, b) = ranges[rng::below(h, ranges.len() as u64) as usize];
                let v = a + rng::below(rng::mix(h), (b - a).max(1) as u64) as i64;
                Val::Micros(v)
            }
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

pub(crate) fn h_key(plan: &Plan, t: usize, c: usize) -> u64 {
    rng::mix(plan.seed ^ plan.tables[t].key ^ plan.tables[t].cols[c].key.rotate_left(17))
}

pub(crate) fn json_str(out: &mut String, s: &str) {
    out.push('"');
    // Nothing to escape (the usual case): the string as it is.
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(s);
        out.push('"');
        return;
    }
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(crate) fn json_val(out: &mut String, v: &Val) {
    match v {
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Int(i) | Val::Micros(i) => push_int(out, *i),
        Val::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f}");
        }
        Val::Json(s) => out.push_str(s),
        Val::Text(s) => json_str(out, s),
        other => out.push_str(&to_json(other).to_string()),
    }
}

fn to_json(v: &Val) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Val::Null => J::Null,
        Val::Bool(b) => J::Bool(*b),
        Val::Int(i) | Val::Micros(i) => J::from(*i),
        Val::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .unwrap_or(J::Null),
        Val::Dec(u, s) => serde_json::Number::from_f64(*u as f64 / libm::pow(10.0, f64::from(*s)))
            .map(J::Number)
            .unwrap_or(J::Null),
        Val::Text(s) | Val::Json(s) => J::String(s.clone()),
        Val::Array(a) => J::Array(a.iter().map(to_json).collect()),
        Val::Uuid(u) => J::String(format!("{u:032x}")),
        Val::Inet(i) => J::String(format!(
            "{}.{}.{}.{}",
            i >> 24,
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255
        )),
        Val::Bytes(b) => J::from(b.len()),
        Val::TsVec(w) => J::String(w.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_base36() {
        assert_eq!(
            parse_format("item-{row}"),
            vec![Piece::Lit("item-".into()), Piece::Row]
        );
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }

    /// The padded-slot path writes exactly the words the plain loop writes
    /// (the pinned datasets depend on it), after text already in the string.
    #[test]
    fn padded_words_write_what_the_plain_loop_writes() {
        let padded = padded_words();
        assert!(padded.is_some(), "the lorem list fits the slots");
        for seed in 0..200u64 {
            for (n, capital) in [(2, false), (3, true), (13, true), (40, false)] {
                let mut fast = String::from("x. ");
                push_words_with(&mut fast, &mut ValueRng::new(seed), n, ' ', capital, padded);
                let mut plain = String::from("x. ");
                push_words_with(&mut plain, &mut ValueRng::new(seed), n, ' ', capital, None);
                assert_eq!(fast, plain, "seed {seed}, {n} words");
            }
        }
    }

    #[test]
    fn push_int_writes_what_display_writes() {
        for i in [0, 7, -7, 10, 99, -100, 1234567890, i64::MAX, i64::MIN] {
            let mut s = String::from("x");
            push_int(&mut s, i);
            assert_eq!(s, format!("x{i}"));
        }
    }

    #[test]
    fn truncation_counts_characters_in_and_out_of_ascii() {
        let mut s = "abcdef".to_string();
        truncate_chars(&mut s, 4);
        assert_eq!(s, "abcd");
        let mut s = "ééééé".to_string();
        truncate_chars(&mut s, 3);
        assert_eq!(s, "ééé");
    }

    #[test]
    fn json_strings_escape_only_what_needs_it() {
        let mut s = String::new();
        json_str(&mut s, "plain");
        json_str(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, "\"plain\"\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn paragraphs_have_the_asked_length() {
        let mut r = ValueRng::new(1);
        let mut s = String::new();
        paragraphs(&mut s, &mut r, 300);
        assert_eq!(s.chars().count(), 300);
    }
}
