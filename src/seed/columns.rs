//! Column generators: what values a column gets, from the catalog alone or
//! from the spec.
//!
//! [`default_gen`] reads a column's type, name and CHECK facts (IN lists,
//! bounds, lengths); [`Ctx::compile`] turns a column's spec (`gen`, `values`,
//! `range`, `after`, `json`, ...) into a [`Gen`], checking it against the
//! column (enum labels, IN lists, NOT NULL) with errors at the spec's
//! file:line. The planner (`seed::planner`) then decides keys and
//! uniqueness on top of these.

use crate::catalog::schema::{Column, Table, TypeKind};
use crate::error::Result;
use crate::seed::check_expr::{ColFacts, Lit};
use crate::seed::row::generate::{FakeKind, Gen, Text, Val, parse_format};
use crate::seed::spec::{self, ColumnSpec, Scalar, SpecFile, Values};

/// Default time range of timestamps: 2021-01-01 to 2026-11-01 (fixed, not "now": determinism).
pub(crate) const T_LO: i64 = 662_688_000_000_000;
pub(crate) const T_HI: i64 = 846_806_400_000_000;
pub(crate) const DAY: i64 = 86_400_000_000;

pub(crate) fn scalar_val(s: &Scalar, kind: &TypeKind) -> Option<Val> {
    Some(match (s, kind) {
        (Scalar::Str(v), k) if k.is_time() => Val::Micros(spec::parse_timestamp(v)?),
        // A weighted value's key is text (`{ "true" = 0.7 }`, `{ "1.5" = 0.2 }`).
        (Scalar::Str(v), TypeKind::Bool) => Val::Bool(parse_bool(v)?),
        (Scalar::Str(v), TypeKind::Float4 | TypeKind::Float8) => Val::Float(v.trim().parse().ok()?),
        (Scalar::Str(v), TypeKind::Numeric) => parse_dec(v)?,
        (Scalar::Str(v), _) => Val::Text(v.clone()),
        (Scalar::Int(i), TypeKind::Float4 | TypeKind::Float8) => Val::Float(*i as f64),
        (Scalar::Int(i), _) => Val::Int(*i),
        (Scalar::Float(f), _) => Val::Float(*f),
        (Scalar::Bool(b), _) => Val::Bool(*b),
    })
}

/// PostgreSQL's spellings of a boolean.
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// `-12.50` as the unscaled decimal -1250, scale 2.
fn parse_dec(s: &str) -> Option<Val> {
    let s = s.trim();
    let scale = s.split_once('.').map_or(0, |(_, f)| f.len()) as u32;
    let digits: String = s.chars().filter(|c| *c != '.').collect();
    Some(Val::Dec(digits.parse().ok()?, scale))
}

pub(crate) fn lit_val(l: &Lit, kind: &TypeKind) -> Val {
    match (l, kind) {
        (Lit::Str(s), k) if k.is_time() => spec::parse_timestamp(s)
            .map(Val::Micros)
            .unwrap_or(Val::Null),
        (Lit::Str(s), _) => Val::Text(s.clone()),
        (Lit::Num(n), k) if k.is_int() => Val::Int(*n as i64),
        (Lit::Num(n), _) => Val::Float(*n),
        (Lit::Bool(b), _) => Val::Bool(*b),
    }
}

pub(crate) fn uniform_choice(vals: Vec<Val>) -> Gen {
    let n = vals.len().max(1) as f64;
    let cum = (1..=vals.len()).map(|i| i as f64 / n).collect();
    Gen::Choice { vals, cum }
}

/// A literal's number: `5`, or `'-17'::integer` (how the server prints a
/// negative constant).
pub(crate) fn lit_num(l: &Lit) -> Option<f64> {
    match l {
        Lit::Num(n) => Some(*n),
        Lit::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Integer bounds from CHECK facts, defaulting to [default_lo, default_hi].
pub(crate) fn int_bounds(f: &ColFacts, kind: &TypeKind, dlo: i64, dhi: i64) -> (i64, i64) {
    let mut lo = dlo;
    let mut hi = dhi;
    if let Some((l, incl)) = &f.lo
        && let Some(n) = lit_num(l)
    {
        lo = if *incl {
            n.ceil() as i64
        } else {
            n.floor() as i64 + 1
        };
        if f.hi.is_none() {
            hi = hi.max(lo + 1000);
        }
    }
    if let Some((l, incl)) = &f.hi
        && let Some(n) = lit_num(l)
    {
        hi = if *incl {
            n.floor() as i64
        } else {
            n.ceil() as i64 - 1
        };
        if f.lo.is_none() {
            lo = lo.min(hi - 1000);
        }
    }
    (lo.max(-kind.int_max()), hi.min(kind.int_max()))
}

pub(crate) fn time_bounds(f: &ColFacts) -> (i64, i64) {
    let mut lo = T_LO;
    let mut hi = T_HI;
    if let Some((Lit::Str(s), incl)) = &f.lo
        && let Some(v) = spec::parse_timestamp(s)
    {
        lo = if *incl { v } else { v + DAY };
        hi = hi.max(lo + 365 * DAY);
    }
    if let Some((Lit::Str(s), incl)) = &f.hi
        && let Some(v) = spec::parse_timestamp(s)
    {
        hi = if *incl { v } else { v - DAY };
        lo = if f.lo.is_some() {
            lo
        } else {
            lo.min(hi - 365 * DAY)
        };
    }
    (lo, hi)
}

pub(crate) fn text_by_name(table: &str, name: &str) -> Text {
    let n = name.to_lowercase();
    let has = |s: &str| n.contains(s);
    let words = |min, max| Text::Words {
        min,
        max,
        sep: ' ',
        capital: false,
    };
    if has("email") {
        Text::Fake(FakeKind::Email)
    } else if n == "first_name" || n == "firstname" || n == "given_name" {
        Text::Fake(FakeKind::FirstName)
    } else if n == "last_name" || n == "lastname" || n == "surname" || n == "family_name" {
        Text::Fake(FakeKind::LastName)
    } else if has("username") || n == "login" || n == "handle" {
        Text::Fake(FakeKind::Username)
    } else if has("company")
        || (n == "name"
            && (table.contains("account")
                || table.contains("org")
                || table.contains("compan")
                || table.contains("tenant")))
    {
        Text::Fake(FakeKind::Company)
    } else if n == "name" || has("full_name") || has("display_name") || n == "author" {
        Text::Fake(FakeKind::Name)
    } else if n == "city" {
        Text::Fake(FakeKind::City)
    } else if n == "country" {
        Text::Fake(FakeKind::Country)
    } else if has("address") || has("street") {
        Text::Fake(FakeKind::Street)
    } else if has("zip") || has("postal") {
        Text::Fake(FakeKind::Zip)
    } else if has("phone") || has("mobile") {
        Text::Fake(FakeKind::Phone)
    } else if has("url") || has("website") || has("link") {
        Text::Fake(FakeKind::Url)
    } else if n == "ip" || n.ends_with("_ip") || n.starts_with("ip_") {
        Text::Fake(FakeKind::Ip)
    } else if has("slug") {
        Text::Words {
            min: 2,
            max: 4,
            sep: '-',
            capital: false,
        }
    } else if has("title") || has("subject") || has("headline") {
        Text::Words {
            min: 2,
            max: 6,
            sep: ' ',
            capital: true,
        }
    } else if has("body")
        || has("content")
        || has("description")
        || has("message")
        || has("comment")
        || has("note")
        || n == "text"
        || has("bio")
    {
        Text::Paragraphs { min: 40, max: 400 }
    } else if has("hash")
        || has("sha")
        || has("digest")
        || has("token")
        || has("secret")
        || n == "jti"
        || has("key")
        || has("password")
        || has("signature")
        || has("checksum")
    {
        Text::Hex {
            len: if has("sha1") { 40 } else { 64 },
        }
    } else if has("path") || has("filename") || has("file_name") {
        Text::Path
    } else if has("mime") || has("content_type") {
        Text::Words {
            min: 1,
            max: 1,
            sep: '/',
            capital: false,
        }
    } else {
        words(1, 3)
    }
}

/// The generator of a column nothing else decided, from its type, name and checks.
pub(crate) fn default_gen(table: &Table, col: &Column, f: &ColFacts) -> Option<Gen> {
    if let Some(list) = &f.in_list {
        let vals: Vec<Val> = list
            .iter()
            .map(|l| lit_val(l, &col.kind))
            .filter(|v| !f.not_eq.iter().any(|n| lit_val(n, &col.kind) == *v))
            .collect();
        return Some(uniform_choice(vals));
    }
    if let (TypeKind::Json | TypeKind::Jsonb, Some(kinds)) = (&col.kind, &f.json_type) {
        return Some(json_of_kinds(kinds));
    }
    Some(match &col.kind {
        TypeKind::Bool => Gen::Bool { p_true: 0.5 },
        k @ (TypeKind::Int2 | TypeKind::Int4 | TypeKind::Int8) => {
            if col.sequence.is_some() {
                Gen::Sequence { start: 1, step: 1 }
            } else {
                let (lo, hi) = int_bounds(
                    f,
                    k,
                    0,
                    if matches!(k, TypeKind::Int2) {
                        100
                    } else {
                        1000
                    },
                );
                Gen::Int { lo, hi }
            }
        }
        TypeKind::Float4 | TypeKind::Float8 => {
            let (lo, hi) = int_bounds(f, &TypeKind::Int8, 0, 1000);
            Gen::Float {
                lo: lo as f64,
                hi: hi as f64,
            }
        }
        TypeKind::Numeric => numeric_gen(col, f),
        TypeKind::Text => text_gen(table, col, f),
        TypeKind::Bytea => Gen::Bytes { min: 16, max: 64 },
        TypeKind::Uuid => Gen::Uuid { unique: false },
        TypeKind::Date | TypeKind::Timestamp | TypeKind::Timestamptz => {
            let (lo, hi) = time_bounds(f);
            Gen::Time {
                lo,
                hi,
                bias: 1.5,
                unique: false,
            }
        }
        TypeKind::Time => Gen::TimeOfDay,
        TypeKind::Interval => Gen::Interval,
        TypeKind::Json | TypeKind::Jsonb => Gen::Json(vec![
            (
                "source".into(),
                Gen::Text {
                    text: Text::Words {
                        min: 1,
                        max: 1,
                        sep: ' ',
                        capital: false,
                    },
                    unique: false,
                    max_len: None,
                },
            ),
            ("count".into(), Gen::Int { lo: 0, hi: 100 }),
        ]),
        TypeKind::Inet => Gen::Inet,
        TypeKind::TsVector => Gen::TsVec,
        TypeKind::Enum(labels) => {
            uniform_choice(labels.iter().map(|l| Val::Text(l.clone())).collect())
        }
        TypeKind::Array(elem, _) => array_gen(table, col, elem)?,
        TypeKind::Money => {
            let (lo, hi) = int_bounds(f, &TypeKind::Int8, 0, 1000);
            Gen::Dec {
                lo: i128::from(lo) * 100,
                hi: i128::from(hi) * 100,
                scale: 2,
            }
        }
        // Two bounds of the subtype; the encoder orders them and keeps the range non-empty.
        TypeKind::Range(sub) => pair(bound_gen(table, col, sub)?),
        TypeKind::MultiRange(sub) => Gen::Array {
            elem: Box::new(pair(bound_gen(table, col, sub)?)),
            min: 1,
            max: 3,
        },
        TypeKind::Point => pair(Gen::Float {
            lo: -1000.0,
            hi: 1000.0,
        }),
        TypeKind::Cidr => Gen::Inet,
        // 48 or 64 random bits, taken from a uuid's first bytes.
        TypeKind::MacAddr | TypeKind::MacAddr8 => Gen::Uuid { unique: false },
        TypeKind::TimeTz => Gen::TimeOfDay,
        TypeKind::Bit { len, varying } => {
            let bytes = len.map_or(8, |n| n.div_ceil(8)) as u32;
            Gen::Bytes {
                min: if *varying { 1 } else { bytes },
                max: bytes,
            }
        }
        TypeKind::Xml | TypeKind::TsQuery => Gen::Text {
            text: Text::Words {
                min: 1,
                max: if col.kind == TypeKind::Xml { 6 } else { 1 },
                sep: ' ',
                capital: false,
            },
            unique: false,
            max_len: None,
        },
        TypeKind::Char => uniform_choice(
            (b'a'..=b'z')
                .map(|b| Val::Text(char::from(b).to_string()))
                .collect(),
        ),
        // Keys and values alternate; the server sorts the pairs and drops repeated keys.
        TypeKind::Hstore => Gen::Array {
            elem: Box::new(one_word()),
            min: 2,
            max: 6,
        },
        TypeKind::Ltree => Gen::Array {
            elem: Box::new(one_word()),
            min: 1,
            max: 4,
        },
        // Coordinates: box and lseg take two points, line and circle three numbers,
        // path and polygon three to six points.
        k @ (TypeKind::Box
        | TypeKind::Lseg
        | TypeKind::Line
        | TypeKind::Circle
        | TypeKind::Path
        | TypeKind::Polygon) => coords_gen(k),
        TypeKind::PgLsn => Gen::Int { lo: 0, hi: 1 << 40 },
        TypeKind::Composite(attrs) => uniform_choice(
            (0..RECORD_POOL)
                .map(|k| record_sample(attrs, k, 0))
                .collect(),
        ),
        TypeKind::Unsupported(_) => return None,
    })
}

/// JSON values of the kinds a CHECK allows (`jsonb_typeof(col) = 'array'`,
/// see [`ColFacts::json_type`]): the default object for `object`, else a
/// pool of values of each kind (arrays of zero to three words or numbers,
/// strings, numbers, booleans, JSON's `null`), drawn uniformly.
fn json_of_kinds(kinds: &[String]) -> Gen {
    let words: &[&str] = <fake::locales::EN as fake::locales::Data>::LOREM_WORD;
    let mut vals = Vec::new();
    for k in kinds {
        let x =
            |i: usize| crate::seed::row::rng::mix(crate::seed::row::rng::name_key(k) ^ i as u64);
        let word = |i: usize| words[(x(i) % words.len() as u64) as usize];
        match k.as_str() {
            "object" => {
                for i in 0..8 {
                    vals.push(Val::Json(format!(
                        "{{\"source\": \"{}\", \"count\": {}}}",
                        word(i),
                        x(i + 100) % 100
                    )));
                }
            }
            "array" => {
                for i in 0..8 {
                    let items: Vec<String> = (0..i % 4)
                        .map(|j| {
                            if i % 2 == 0 {
                                format!("\"{}\"", word(i * 4 + j))
                            } else {
                                (x(i * 4 + j) % 1000).to_string()
                            }
                        })
                        .collect();
                    vals.push(Val::Json(format!("[{}]", items.join(", "))));
                }
            }
            "string" => vals.extend((0..8).map(|i| Val::Json(format!("\"{}\"", word(i))))),
            "number" => vals.extend((0..8).map(|i| Val::Json((x(i) % 1000).to_string()))),
            "boolean" => vals.extend(["true", "false"].map(|b| Val::Json(b.into()))),
            _ => vals.push(Val::Json("null".into())),
        }
    }
    uniform_choice(vals)
}

/// A numeric column's decimals: inside its precision and its CHECKs' bounds.
fn numeric_gen(col: &Column, f: &ColFacts) -> Gen {
    let (p, s) = col.numeric.unwrap_or((12, 2));
    let max_int = 10i64.saturating_pow(p.saturating_sub(s).min(15)) - 1;
    let (lo, hi) = int_bounds(f, &TypeKind::Int8, 0, max_int.min(1000));
    // numeric(65, 30) (calcom's `valueNumber`): 10^15 * 10^30
    // overflows i128, so the products saturate and the unscaled
    // bounds stay within +-10^37 (where `hi - lo + 1` still fits).
    let m = 10i128.pow(s.min(30));
    let cap = 10i128.pow(37);
    let scaled = |v: i64| i128::from(v).saturating_mul(m).clamp(-cap, cap);
    let (mut ulo, mut uhi) = (scaled(lo), scaled(hi));
    if let Some((_, false)) = f.lo {
        ulo += 1;
    }
    uhi = uhi.min(scaled(max_int).saturating_add(m - 1).min(cap));
    if let Some((_, false)) = f.hi {
        uhi -= 1;
    }
    Gen::Dec {
        lo: ulo,
        hi: uhi.max(ulo),
        scale: s,
    }
}

/// A text column's words, fake values or paragraphs (by its name), within its length.
fn text_gen(table: &Table, col: &Column, f: &ColFacts) -> Gen {
    let mut text = text_by_name(&table.name, &col.name);
    if col.max_len.is_some_and(|m| m < 16)
        && matches!(text, Text::Paragraphs { .. } | Text::Fake(_))
    {
        text = Text::Words {
            min: 1,
            max: 1,
            sep: ' ',
            capital: false,
        };
    }
    let max_len = match (col.max_len, f.max_len) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Gen::Text {
        text,
        unique: false,
        max_len,
    }
}

/// An array column's elements: its element type's generator (one word for text), zero to three of them.
fn array_gen(table: &Table, col: &Column, elem: &TypeKind) -> Option<Gen> {
    let ec = Column {
        kind: elem.clone(),
        max_len: None,
        sequence: None,
        ..col.clone()
    };
    let eg = default_gen(table, &ec, &ColFacts::default())?;
    let eg = match eg {
        Gen::Text { max_len, .. } => Gen::Text {
            text: Text::Words {
                min: 1,
                max: 1,
                sep: ' ',
                capital: false,
            },
            unique: false,
            max_len,
        },
        g => g,
    };
    Some(Gen::Array {
        elem: Box::new(eg),
        min: 0,
        max: 3,
    })
}

/// Coordinates of a geometric column: box and lseg take two points, line
/// and circle three numbers, path and polygon three to six points.
fn coords_gen(k: &TypeKind) -> Gen {
    let (min, max) = match k {
        TypeKind::Box | TypeKind::Lseg => (4, 4),
        TypeKind::Line | TypeKind::Circle => (3, 3),
        _ => (6, 12),
    };
    Gen::Array {
        elem: Box::new(Gen::Float {
            lo: -1000.0,
            hi: 1000.0,
        }),
        min,
        max,
    }
}

/// Distinct values of a composite column: a pool drawn once at plan time.
const RECORD_POOL: u64 = 64;

/// The `k`-th value of a composite column's pool: one plain value per
/// attribute (a word, a number inside the attribute's precision, a time
/// inside the default range, an enum label), NULL for an attribute of a kind
/// not listed (composite attributes are never NOT NULL). A [`Gen`] draws
/// scalars per row; no generator draws a row of mixed kinds yet, so a
/// composite takes one of these.
fn record_sample(attrs: &[(u32, i32, TypeKind)], k: u64, depth: u32) -> Val {
    let words: &[&str] = <fake::locales::EN as fake::locales::Data>::LOREM_WORD;
    let vals = attrs.iter().enumerate().map(|(i, (_, typmod, kind))| {
        let x = crate::seed::row::rng::mix(k.wrapping_mul(0x9e37) ^ (i as u64 + 1) << 32);
        match kind {
            TypeKind::Bool => Val::Bool(x & 1 == 1),
            k if k.is_int() => Val::Int((x % 1000) as i64),
            TypeKind::Float4 | TypeKind::Float8 => Val::Float((x % 100_000) as f64 / 100.0),
            TypeKind::Numeric | TypeKind::Money => {
                let (p, s) = match (*typmod - 4, kind) {
                    (m, TypeKind::Numeric) if m >= 0 => {
                        ((m >> 16) as u32 & 0xffff, m as u32 & 0xffff)
                    }
                    _ => (12, 2),
                };
                let top = 10i128.pow(p.min(30)).min(100_000 * 10i128.pow(s.min(20)));
                Val::Dec(i128::from(x) % top.max(1), s)
            }
            TypeKind::Text => {
                let mut w = words[(x % words.len() as u64) as usize].to_string();
                if let Ok(n) = usize::try_from(*typmod - 4) {
                    w.truncate(n);
                }
                Val::Text(w)
            }
            TypeKind::Uuid => {
                Val::Uuid(u128::from(x) << 64 | u128::from(crate::seed::row::rng::mix(x)))
            }
            k if k.is_time() => Val::Micros(T_LO + (x % (T_HI - T_LO) as u64) as i64),
            TypeKind::Time | TypeKind::TimeTz => Val::Micros((x % (86_400 * 1_000_000)) as i64),
            TypeKind::Interval => Val::Micros((x % (30 * DAY as u64)) as i64),
            TypeKind::Enum(labels) if !labels.is_empty() => {
                Val::Text(labels[(x % labels.len() as u64) as usize].clone())
            }
            TypeKind::Inet | TypeKind::Cidr => Val::Inet(x as u32),
            TypeKind::Composite(inner) if depth < 4 => record_sample(inner, x, depth + 1),
            _ => Val::Null,
        }
    });
    Val::Array(vals.collect())
}

/// One lorem word.
fn one_word() -> Gen {
    Gen::Text {
        text: Text::Words {
            min: 1,
            max: 1,
            sep: ' ',
            capital: false,
        },
        unique: false,
        max_len: None,
    }
}

/// Exactly two values of `g` (a range's bounds, a point's coordinates).
fn pair(g: Gen) -> Gen {
    Gen::Array {
        elem: Box::new(g),
        min: 2,
        max: 2,
    }
}

/// The generator of one bound of a range over `sub`.
fn bound_gen(table: &Table, col: &Column, sub: &TypeKind) -> Option<Gen> {
    let bc = Column {
        kind: sub.clone(),
        max_len: None,
        numeric: None,
        sequence: None,
        ..col.clone()
    };
    default_gen(table, &bc, &ColFacts::default())
}

pub(crate) struct Ctx<'a> {
    pub(crate) sf: &'a SpecFile,
    /// The table's rows (a `distinct` share of them is a count).
    pub(crate) rows: u64,
}

impl Ctx<'_> {
    /// Compiles a column's spec into a generator.
    pub(crate) fn compile(
        &self,
        table: &Table,
        col: &Column,
        kind: &TypeKind,
        cs: &ColumnSpec,
        span: std::ops::Range<usize>,
        f: &ColFacts,
    ) -> Result<Option<Gen>> {
        let sf = self.sf;
        let here = |m: String, h: &str| sf.error(span.clone(), m, Some(h.to_string()));
        let cname = format!("{}.{}", table.display(), col.name);
        let mut g: Option<Gen> = None;
        if let Some(name) = &cs.generator {
            g = Some(self.named(name, col, kind, cs, &cname)?);
        }
        if let Some(v) = &cs.values {
            g = Some(self.values(v, kind, f, &cname)?);
        }
        if let Some(r) = &cs.range {
            // On a range column, `range` bounds the ranges' bounds.
            g = Some(match kind {
                TypeKind::Range(sub) => pair(self.range(r, col, sub, cs, &span, &cname)?),
                TypeKind::MultiRange(sub) => Gen::Array {
                    elem: Box::new(pair(self.range(r, col, sub, cs, &span, &cname)?)),
                    min: 1,
                    max: 3,
                },
                _ => self.range(r, col, kind, cs, &span, &cname)?,
            });
        }
        if cs.bins.is_some() || cs.distinct.is_some() {
            let common = match &cs.values {
                Some(v) => Some((self.values(v, kind, f, &cname)?, v)),
                None => None,
            };
            g = Some(crate::seed::histogram::compile(
                sf, self.rows, col, kind, cs, common, &span, &cname,
            )?);
        }
        if let Some(fmt) = &cs.format {
            g = Some(Gen::Text {
                text: Text::Format(parse_format(fmt)),
                unique: false,
                max_len: col.max_len,
            });
        }
        if let Some(json) = &cs.json {
            let mut fields = Vec::new();
            for (k, v) in json {
                let fg = self.compile(
                    table,
                    col,
                    &TypeKind::Json,
                    v,
                    span.clone(),
                    &ColFacts::default(),
                )?;
                fields.push((k.clone(), fg.unwrap_or(Gen::Null)));
            }
            g = Some(Gen::Json(fields));
        }
        if let Some(el) = &cs.element {
            let TypeKind::Array(ek, _) = kind else {
                return Err(here(
                    format!("`element` given for {cname}, which is not an array"),
                    "use `element` only on array columns",
                ));
            };
            let ec = Column {
                kind: (**ek).clone(),
                ..col.clone()
            };
            let eg = self.compile(table, &ec, ek, el, span.clone(), &ColFacts::default())?;
            let eg = match eg {
                Some(g) => g,
                None => default_gen(table, &ec, &ColFacts::default()).unwrap_or(Gen::Null),
            };
            let [lo, hi] = cs.len.unwrap_or([0, 3]);
            g = Some(Gen::Array {
                elem: Box::new(eg),
                min: lo,
                max: hi,
            });
        } else if let (Some([lo, hi]), TypeKind::Array(..)) = (cs.len, kind)
            && let Some(Gen::Array { elem, .. }) = default_gen(table, col, f)
        {
            g = Some(Gen::Array {
                elem,
                min: lo,
                max: hi,
            });
        }
        if g.is_none() && (cs.bias.is_some() || cs.unique.is_some()) {
            g = default_gen(table, col, f);
        }
        if let (Some(b), Some(Gen::Time { bias, .. })) = (cs.bias, g.as_mut()) {
            *bias = b;
        }
        if cs.unique == Some(true) {
            g = g.map(|g| make_unique(g, 1_000_000));
        }
        if let Some(after) = &cs.after {
            g = Some(self.after(after, table, col, cs, f, g.take(), &cname)?);
        }
        if let Some(p) = cs.null {
            g = Some(self.nulls(p, table, col, kind, f, g.take(), &span, &cname)?);
        }
        Ok(g)
    }

    /// `gen = "..."`: a named generator.
    fn named(
        &self,
        name: &toml::Spanned<String>,
        col: &Column,
        kind: &TypeKind,
        cs: &ColumnSpec,
        cname: &str,
    ) -> Result<Gen> {
        let sf = self.sf;
        let w = |min, max, sep, capital| Gen::Text {
            text: Text::Words {
                min,
                max,
                sep,
                capital,
            },
            unique: false,
            max_len: col.max_len,
        };
        let fk = |k| Gen::Text {
            text: Text::Fake(k),
            unique: false,
            max_len: col.max_len,
        };
        let [wl, wh] = cs.words.unwrap_or([1, 3]);
        let [ll, lh] = cs.len.unwrap_or([0, 0]);
        Ok(match name.get_ref().as_str() {
            "name" => fk(FakeKind::Name),
            "first_name" => fk(FakeKind::FirstName),
            "last_name" => fk(FakeKind::LastName),
            "email" => fk(FakeKind::Email),
            "username" => fk(FakeKind::Username),
            "company" => fk(FakeKind::Company),
            "url" => fk(FakeKind::Url),
            "phone" => fk(FakeKind::Phone),
            "city" => fk(FakeKind::City),
            "country" => fk(FakeKind::Country),
            "street" => fk(FakeKind::Street),
            "zip" => fk(FakeKind::Zip),
            "catch_phrase" => fk(FakeKind::CatchPhrase),
            "ip" if matches!(kind, TypeKind::Inet) => Gen::Inet,
            "ip" => fk(FakeKind::Ip),
            "word" => w(1, 1, ' ', false),
            "words" => w(wl, wh, ' ', false),
            "sentence" => w(
                cs.words.map_or(6, |x| x[0]),
                cs.words.map_or(14, |x| x[1]),
                ' ',
                true,
            ),
            "title" => w(
                cs.words.map_or(2, |x| x[0]),
                cs.words.map_or(6, |x| x[1]),
                ' ',
                true,
            ),
            "slug" => w(
                cs.words.map_or(2, |x| x[0]),
                cs.words.map_or(4, |x| x[1]),
                '-',
                false,
            ),
            "paragraphs" => Gen::Text {
                text: Text::Paragraphs {
                    min: if lh > 0 { ll } else { 200 },
                    max: if lh > 0 { lh } else { 2000 },
                },
                unique: false,
                max_len: col.max_len,
            },
            "hex" => Gen::Text {
                text: Text::Hex {
                    len: if lh > 0 { lh } else { 64 },
                },
                unique: false,
                max_len: col.max_len,
            },
            "path" => Gen::Text {
                text: Text::Path,
                unique: false,
                max_len: col.max_len,
            },
            "uuid" => Gen::Uuid { unique: false },
            "bytes" => Gen::Bytes {
                min: if lh > 0 { ll } else { 16 },
                max: if lh > 0 { lh } else { 64 },
            },
            "sequence" => Gen::Sequence {
                start: cs.start.unwrap_or(1),
                step: cs.step.unwrap_or(1),
            },
            "bool" => Gen::Bool { p_true: 0.5 },
            other => {
                const KNOWN: &[&str] = &[
                    "name",
                    "first_name",
                    "last_name",
                    "email",
                    "username",
                    "company",
                    "url",
                    "phone",
                    "city",
                    "country",
                    "street",
                    "zip",
                    "catch_phrase",
                    "ip",
                    "word",
                    "words",
                    "sentence",
                    "title",
                    "slug",
                    "paragraphs",
                    "hex",
                    "path",
                    "uuid",
                    "bytes",
                    "sequence",
                    "bool",
                ];
                let hint = match crate::error::suggest(other, KNOWN.iter().copied()) {
                    Some(s) => {
                        format!("did you mean `{s}`? known generators: {}", KNOWN.join(", "))
                    }
                    None => format!("known generators: {}", KNOWN.join(", ")),
                };
                return Err(sf.error(
                    name.span(),
                    format!("unknown generator `{other}` for {cname}"),
                    Some(hint),
                ));
            }
        })
    }

    /// `values = [...]` or `{ value = weight }`: checked against the enum or IN list.
    fn values(
        &self,
        v: &toml::Spanned<Values>,
        kind: &TypeKind,
        f: &ColFacts,
        cname: &str,
    ) -> Result<Gen> {
        let sf = self.sf;
        // A text value a number or time column cannot take is an error, not dropped.
        let strings: Vec<&str> = match v.get_ref() {
            Values::List(l) => l
                .iter()
                .filter_map(|s| match s {
                    Scalar::Str(x) => Some(x.as_str()),
                    _ => None,
                })
                .collect(),
            Values::Weighted(m) => m.keys().map(String::as_str).collect(),
        };
        if let Some(bad) = strings.iter().find(|x| match kind {
            k if k.is_int() => x.trim().parse::<i64>().is_err(),
            TypeKind::Float4 | TypeKind::Float8 => x.trim().parse::<f64>().is_err(),
            TypeKind::Numeric => parse_dec(x).is_none(),
            TypeKind::Bool => parse_bool(x).is_none(),
            k if k.is_time() => spec::parse_timestamp(x).is_none(),
            _ => false,
        }) {
            return Err(sf.error(
                v.span(),
                format!("value `{bad}` of {cname} is not a value of its type"),
                Some("give the column values its type takes".into()),
            ));
        }
        let (vals, weights): (Vec<Val>, Vec<f64>) = match v.get_ref() {
            Values::List(l) => (
                l.iter().filter_map(|s| scalar_val(s, kind)).collect(),
                vec![1.0; l.len()],
            ),
            Values::Weighted(m) => m
                .iter()
                .filter_map(|(k, w)| scalar_val(&Scalar::Str(k.clone()), kind).map(|v| (v, *w)))
                .unzip(),
        };
        if vals.is_empty() {
            return Err(sf.error(
                v.span(),
                format!("`values` of {cname} is empty"),
                Some("list at least one value".into()),
            ));
        }
        // Values must satisfy the enum / IN list.
        let allowed: Option<Vec<Val>> = match kind {
            TypeKind::Enum(labels) => Some(labels.iter().map(|l| Val::Text(l.clone())).collect()),
            _ => f
                .in_list
                .as_ref()
                .map(|l| l.iter().map(|x| lit_val(x, kind)).collect()),
        };
        if let Some(allowed) = allowed {
            let norm = |v: &Val| match v {
                Val::Float(f) if f.fract() == 0.0 => Val::Int(*f as i64),
                v => v.clone(),
            };
            if let Some(bad) = vals
                .iter()
                .find(|v| !allowed.iter().any(|a| norm(a) == norm(v)))
            {
                let list = allowed
                    .iter()
                    .map(|a| a.display())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(sf.error(
                    v.span(),
                    format!("value {} is not allowed in {cname}", bad.display()),
                    Some(format!("the column accepts only: {list}")),
                ));
            }
        }
        Ok(Gen::weighted_choice(vals, &weights))
    }

    /// `range = [low, high]`: numbers or timestamps.
    fn range(
        &self,
        r: &toml::Spanned<[Scalar; 2]>,
        col: &Column,
        kind: &TypeKind,
        cs: &ColumnSpec,
        span: &std::ops::Range<usize>,
        cname: &str,
    ) -> Result<Gen> {
        let sf = self.sf;
        let here = |m: String, h: &str| sf.error(span.clone(), m, Some(h.to_string()));
        let [a, b] = r.get_ref();
        let bad = || {
            here(
                format!("`range` of {cname} must be two numbers or two timestamps, low first"),
                "for example `range = [1, 100]` or `range = [\"2024-01-01\", \"2026-01-01\"]`",
            )
        };
        Ok(match (a, b) {
            (Scalar::Int(a), Scalar::Int(b)) if a <= b => match kind {
                TypeKind::Float4 | TypeKind::Float8 => Gen::Float {
                    lo: *a as f64,
                    hi: *b as f64,
                },
                TypeKind::Numeric => {
                    let s = col.numeric.map_or(0, |x| x.1);
                    let m = 10i128.pow(s);
                    Gen::Dec {
                        lo: i128::from(*a) * m,
                        hi: i128::from(*b) * m,
                        scale: s,
                    }
                }
                _ => Gen::Int { lo: *a, hi: *b },
            },
            (Scalar::Float(_) | Scalar::Int(_), Scalar::Float(_) | Scalar::Int(_)) => {
                let (a, b) = (num(a), num(b));
                if a > b {
                    return Err(bad());
                }
                match kind {
                    TypeKind::Numeric => {
                        let s = col.numeric.map_or(2, |x| x.1);
                        let m = libm::pow(10.0, f64::from(s));
                        Gen::Dec {
                            lo: (a * m).round() as i128,
                            hi: (b * m).round() as i128,
                            scale: s,
                        }
                    }
                    _ => Gen::Float { lo: a, hi: b },
                }
            }
            (Scalar::Str(a), Scalar::Str(b)) => {
                let (Some(a), Some(b)) = (spec::parse_timestamp(a), spec::parse_timestamp(b))
                else {
                    return Err(bad());
                };
                if a > b {
                    return Err(bad());
                }
                Gen::Time {
                    lo: a,
                    hi: b,
                    bias: cs.bias.unwrap_or(1.0),
                    unique: false,
                }
            }
            _ => return Err(bad()),
        })
    }

    /// `after = "column"`: a time after another column's, around `g` (or the default).
    #[allow(clippy::too_many_arguments)]
    fn after(
        &self,
        after: &toml::Spanned<String>,
        table: &Table,
        col: &Column,
        cs: &ColumnSpec,
        f: &ColFacts,
        mut g: Option<Gen>,
        cname: &str,
    ) -> Result<Gen> {
        let sf = self.sf;
        let Some(oc) = table.column(after.get_ref()) else {
            let hint = crate::error::suggest(
                after.get_ref(),
                table.columns.iter().map(|c| c.name.as_str()),
            )
            .map_or_else(
                || "`after` names another timestamp column of the same table".to_string(),
                |s| format!("did you mean `{s}`?"),
            );
            return Err(sf.error(
                after.span(),
                format!("unknown column `{}` in `after` of {cname}", after.get_ref()),
                Some(hint),
            ));
        };
        let [lo, hi] = cs.gap.unwrap_or([1, 30 * 86_400]);
        let fallback = g
            .take()
            .or_else(|| default_gen(table, col, f))
            .unwrap_or(Gen::Null);
        Ok(Gen::After {
            col: oc,
            min: lo * 1_000_000,
            max: hi.max(lo) * 1_000_000,
            fallback: Box::new(fallback),
        })
    }

    /// `null = p`: a share of NULLs around `g` (or the default).
    #[allow(clippy::too_many_arguments)]
    fn nulls(
        &self,
        p: f64,
        table: &Table,
        col: &Column,
        kind: &TypeKind,
        f: &ColFacts,
        mut g: Option<Gen>,
        span: &std::ops::Range<usize>,
        cname: &str,
    ) -> Result<Gen> {
        let sf = self.sf;
        let here = |m: String, h: &str| sf.error(span.clone(), m, Some(h.to_string()));
        if !(0.0..=1.0).contains(&p) {
            return Err(here(
                format!("`null` of {cname} must be between 0 and 1"),
                "it is the share of NULLs, e.g. `null = 0.1`",
            ));
        }
        if p > 0.0 && col.not_null && *kind != TypeKind::Json {
            return Err(here(
                format!("{cname} is NOT NULL, but the spec asks for NULLs"),
                "remove `null`, or drop the NOT NULL constraint",
            ));
        }
        let inner = g
            .take()
            .or_else(|| default_gen(table, col, f))
            .unwrap_or(Gen::Null);
        Ok(if p > 0.0 {
            Gen::Nullable {
                p,
                inner: Box::new(inner),
            }
        } else {
            inner
        })
    }
}

pub(crate) fn num(s: &Scalar) -> f64 {
    match s {
        Scalar::Int(i) => *i as f64,
        Scalar::Float(f) => *f,
        _ => 0.0,
    }
}

/// The same generator, made unique by construction where it can be.
pub(crate) fn make_unique(g: Gen, rows: u64) -> Gen {
    match g {
        Gen::Text { text, max_len, .. } => Gen::Text {
            text,
            unique: true,
            max_len,
        },
        Gen::Uuid { .. } => Gen::Uuid { unique: true },
        Gen::Time { lo, hi, bias, .. } => Gen::Time {
            lo,
            hi,
            bias,
            unique: true,
        },
        Gen::Int { lo, hi } if (hi - lo + 1) as u64 >= rows => {
            Gen::IntUnique { lo, n: rows.max(1) }
        }
        // Distinct addresses from 10.0.0.0 on (the encoder takes an integer as an IPv4 address).
        Gen::Inet if rows <= 1 << 32 => Gen::IntUnique {
            lo: if rows <= 1 << 24 { 10 << 24 } else { 0 },
            n: rows.max(1),
        },
        Gen::Nullable { p, inner } => Gen::Nullable {
            p,
            inner: Box::new(make_unique(*inner, rows)),
        },
        g => g,
    }
}

/// Functions a column DEFAULT may call and still be left to the server:
/// they change nothing but a sequence, and never read a session's state.
const PURE_DEFAULT_FUNCTIONS: &[&str] = &[
    "nextval",
    "now",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "timezone",
    "date_trunc",
    "gen_random_uuid",
    "uuid_generate_v1",
    "uuid_generate_v1mc",
    "uuid_generate_v4",
    "gen_random_bytes",
    "random",
    "md5",
    "encode",
    "lower",
    "upper",
    "concat",
    "coalesce",
    "array",
    "cast",
    "to_jsonb",
    "jsonb_build_object",
    "jsonb_build_array",
    "json_build_object",
    "json_build_array",
    "make_interval",
    "current_timestamp",
    "current_time",
    "localtimestamp",
    "localtime",
    "extract",
    "date_part",
    "to_char",
    "row",
    "floor",
    "round",
];

/// Whether a column DEFAULT (as `pg_get_expr` prints it) is known to be free
/// of side effects, so the server may compute it during the load: constants,
/// casts of constants, `nextval`, the clock (`now()`, `CURRENT_TIMESTAMP`,
/// ...), `gen_random_uuid()`, `random()`. A call to any other function is
/// not: koji's `get_event()` inserts an `events` row per call, and
/// graphile-starter's `current_user_id()` is NULL outside a session.
pub fn default_is_side_effect_free(expr: &str) -> bool {
    let b = expr.as_bytes();
    let mut i = 0;
    // After `::` come type names, whose parentheses hold a typmod, not arguments.
    let mut in_type = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            i += 1;
            while i < b.len() {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if c == b':' && b.get(i + 1) == Some(&b':') {
            in_type = true;
            i += 2;
            continue;
        }
        if c == b'"' || c.is_ascii_alphabetic() || c == b'_' {
            let (name, end) = if c == b'"' {
                let close = expr[i + 1..].find('"').map_or(b.len(), |e| i + 1 + e);
                (expr[i + 1..close].to_lowercase(), close + 1)
            } else {
                let mut e = i;
                while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_' || b[e] == b'$')
                {
                    e += 1;
                }
                (expr[i..e].to_lowercase(), e)
            };
            i = end;
            let mut j = i;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            match b.get(j) {
                // A qualified name: the last part decides.
                Some(b'.') => {
                    i = j + 1;
                    continue;
                }
                Some(b'(') if !in_type && !PURE_DEFAULT_FUNCTIONS.contains(&name.as_str()) => {
                    return false;
                }
                _ => {}
            }
            continue;
        }
        if !c.is_ascii_whitespace() && c != b'(' && c != b')' && c != b'[' && c != b']' {
            in_type = false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::default_is_side_effect_free as pure;

    #[test]
    fn defaults_left_to_the_server_are_those_without_side_effects() {
        for d in [
            "nextval('public.customer_customer_id_seq'::regclass)",
            "0",
            "'new'::order_status",
            "'{}'::text[]",
            "ARRAY[]::character varying(10)[]",
            "(0)::numeric(10,2)",
            "''::character varying",
            "now()",
            "CURRENT_TIMESTAMP",
            "CURRENT_TIMESTAMP(3)",
            "CURRENT_DATE",
            "LOCALTIMESTAMP",
            "clock_timestamp()",
            "statement_timestamp()",
            "transaction_timestamp()",
            "timezone('utc'::text, now())",
            "(now() + '1 day'::interval)",
            "gen_random_uuid()",
            "public.uuid_generate_v4()",
            "\"extensions\".\"uuid_generate_v4\"()",
            "md5((random())::text)",
            "'it''s get_event()'::text",
        ] {
            assert!(pure(d), "{d} was taken for a side effect");
        }
        for d in [
            "get_event()",
            "app_public.current_user_id()",
            "\"app\".\"next_id\"()",
            "(get_event() + 1)",
            "('x'::text || audit.log_row())",
            "now() + my_offset()",
        ] {
            assert!(!pure(d), "{d} was left to the server");
        }
    }
}
