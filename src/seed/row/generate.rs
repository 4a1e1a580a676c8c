//! Values and their generators: what a column's value is drawn from.
//!
//! A [`Gen`] is compiled once by the planner and evaluated for every row on
//! rayon workers. It holds no state and allocates only the value it returns,
//! so any row can be produced in any order on any thread and come out the
//! same. This module holds the types ([`Val`], [`Gen`], [`Text`]) and what
//! needs no row's place in the plan (text, words, JSON); keys (foreign keys,
//! ordinals, joint enumerations) need the row's place in the plan and are
//! evaluated in `row::eval`.

use std::fmt::Write as _;

use fake::Fake;
use fake::locales::{Data, EN};

use crate::seed::row::rng::{self, ValueRng};

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
    /// One of `n` instants `lo + k·step` (microseconds): a time column's
    /// finite domain at its granularity (a day for a date), which a unique
    /// key enumerates ([`Gen::domain`], [`Gen::nth`]).
    Steps {
        lo: i64,
        step: i64,
        n: u64,
    },
    /// NULL with probability `p`, else `inner`.
    Nullable {
        p: f64,
        inner: Box<Gen>,
    },
}

pub(crate) const WORDS: &[&str] = EN::LOREM_WORD;

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
    pub(crate) fn make(&self, r: &mut ValueRng, row: u64, key: u64) -> String {
        let mut s = String::new();
        self.make_into(&mut s, r, row, key);
        s
    }

    /// [`Text::make`] into `s`, which must be empty: the direct encoders
    /// (`seed::direct`) reuse one string for every row of a chunk.
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
            Gen::Steps { n, .. } => Some(*n),
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
            Gen::Steps { lo, step, .. } => {
                Val::Micros(lo.saturating_add((n as i64).saturating_mul(*step)))
            }
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
            Gen::Json(fields) => fields.iter().any(|(_, g)| g.is_unique()),
            _ => false,
        }
    }
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
