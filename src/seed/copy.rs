//! PostgreSQL's binary COPY format, written by hand into large buffers.
//!
//! tokio-postgres's `BinaryCopyInWriter` sends one message per row through
//! `ToSql` and is slow on wide tables (rust-postgres issue 1114). Here a whole
//! chunk of rows is encoded into one `BytesMut` of a few MiB on a rayon
//! worker and handed to `CopyInSink` as a single frame. The format: an
//! 11-byte signature, flags and header-extension length, then per row a field
//! count and per field a length (-1 for NULL) and the type's binary
//! `*_send` representation; a -1 field count ends the stream.

use bytes::{BufMut, BytesMut};

use crate::catalog::schema::TypeKind;
use crate::seed::row::generate::Val;
use crate::seed::row::plan::SeedPlan;

/// Signature, flags (no OIDs), header extension length 0.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
pub const TRAILER: &[u8] = &[0xff, 0xff];

const DAY_MICROS: i64 = 86_400_000_000;

/// Encodes rows `rows` of table `t` (only the columns in `cols`).
pub fn encode_chunk(
    plan: &SeedPlan,
    t: usize,
    cols: &[usize],
    rows: std::ops::Range<u64>,
    capacity: usize,
) -> BytesMut {
    let mut buf = BytesMut::with_capacity(capacity);
    let tp = &plan.tables[t];
    for ctx in plan.ctxs(t, rows) {
        buf.put_i16(cols.len() as i16);
        for &c in cols {
            let v = plan.value(t, c, &ctx);
            encode(&tp.cols[c].kind, &v, &mut buf);
        }
    }
    buf
}

fn with_len(buf: &mut BytesMut, f: impl FnOnce(&mut BytesMut)) {
    let at = buf.len();
    buf.put_i32(0);
    f(buf);
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn text_of(v: &Val) -> String {
    match v {
        Val::Text(s) | Val::Json(s) => s.clone(),
        Val::Int(i) | Val::Micros(i) => i.to_string(),
        Val::Float(f) => f.to_string(),
        Val::Dec(u, s) => {
            let m = 10i128.pow(*s);
            if *s == 0 {
                u.to_string()
            } else {
                format!(
                    "{}{}.{:0w$}",
                    if *u < 0 { "-" } else { "" },
                    (u / m).abs(),
                    (u % m).abs(),
                    w = *s as usize
                )
            }
        }
        Val::Bool(b) => b.to_string(),
        Val::Uuid(u) => {
            let h = format!("{u:032x}");
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        }
        Val::Inet(i) => format!(
            "{}.{}.{}.{}",
            i >> 24,
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255
        ),
        Val::TsVec(w) => w.join(" "),
        Val::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        Val::Array(a) => a.iter().map(text_of).collect::<Vec<_>>().join(","),
        Val::Null => String::new(),
    }
}

fn as_i64(v: &Val) -> i64 {
    match v {
        Val::Int(i) | Val::Micros(i) => *i,
        Val::Float(f) => *f as i64,
        Val::Dec(u, s) => (u / 10i128.pow(*s)) as i64,
        Val::Bool(b) => i64::from(*b),
        Val::Text(s) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

fn as_f64(v: &Val) -> f64 {
    match v {
        Val::Float(f) => *f,
        Val::Dec(u, s) => *u as f64 / libm::pow(10.0, f64::from(*s)),
        other => as_i64(other) as f64,
    }
}

/// Writes one field (length and value) for a column of `kind`.
pub fn encode(kind: &TypeKind, v: &Val, buf: &mut BytesMut) {
    if *v == Val::Null {
        buf.put_i32(-1);
        return;
    }
    match kind {
        TypeKind::Bool => {
            buf.put_i32(1);
            buf.put_u8(u8::from(
                matches!(v, Val::Bool(true)) || (!matches!(v, Val::Bool(_)) && as_i64(v) != 0),
            ));
        }
        TypeKind::Int2 => {
            buf.put_i32(2);
            buf.put_i16(as_i64(v) as i16);
        }
        TypeKind::Int4 => {
            buf.put_i32(4);
            buf.put_i32(as_i64(v) as i32);
        }
        TypeKind::Int8 => {
            buf.put_i32(8);
            buf.put_i64(as_i64(v));
        }
        TypeKind::Float4 => {
            buf.put_i32(4);
            buf.put_f32(as_f64(v) as f32);
        }
        TypeKind::Float8 => {
            buf.put_i32(8);
            buf.put_f64(as_f64(v));
        }
        TypeKind::Numeric => {
            let (u, s) = match v {
                Val::Dec(u, s) => (*u, *s),
                Val::Float(f) => ((f * 100.0).round() as i128, 2),
                other => (i128::from(as_i64(other)), 0),
            };
            with_len(buf, |b| numeric(b, u, s));
        }
        TypeKind::Text | TypeKind::Enum(_) | TypeKind::Json | TypeKind::Unsupported(_) => match v {
            Val::Text(s) | Val::Json(s) => {
                buf.put_i32(s.len() as i32);
                buf.put_slice(s.as_bytes());
            }
            other => {
                let s = text_of(other);
                buf.put_i32(s.len() as i32);
                buf.put_slice(s.as_bytes());
            }
        },
        TypeKind::Jsonb => jsonb(v, buf),
        TypeKind::Bytea => match v {
            Val::Bytes(b) => {
                buf.put_i32(b.len() as i32);
                buf.put_slice(b);
            }
            other => {
                let s = text_of(other);
                buf.put_i32(s.len() as i32);
                buf.put_slice(s.as_bytes());
            }
        },
        TypeKind::Uuid => uuid(v, buf),
        TypeKind::Date => {
            buf.put_i32(4);
            buf.put_i32(as_i64(v).div_euclid(DAY_MICROS) as i32);
        }
        TypeKind::Timestamp | TypeKind::Timestamptz | TypeKind::Time => {
            buf.put_i32(8);
            buf.put_i64(as_i64(v));
        }
        TypeKind::Interval => {
            buf.put_i32(16);
            buf.put_i64(as_i64(v));
            buf.put_i32(0);
            buf.put_i32(0);
        }
        TypeKind::Inet => {
            let (ip, bits) = ipv4(v);
            inet_field(buf, ip, bits.unwrap_or(32).min(32), false);
        }
        TypeKind::TsVector => tsvector(v, buf),
        TypeKind::Money => {
            buf.put_i32(8);
            buf.put_i64(cents(v));
        }
        TypeKind::Range(sub) => with_len(buf, |b| range(sub, v, b)),
        TypeKind::MultiRange(sub) => with_len(buf, |b| multirange(sub, v, b)),
        TypeKind::Point => point(v, buf),
        TypeKind::Cidr => cidr(v, buf),
        TypeKind::MacAddr | TypeKind::MacAddr8 => macaddr(kind, v, buf),
        TypeKind::TimeTz => {
            buf.put_i32(12);
            buf.put_i64(as_i64(v));
            buf.put_i32(0); // UTC
        }
        TypeKind::Bit { len, varying } => with_len(buf, |b| bits(*len, *varying, v, b)),
        TypeKind::Xml => xml(v, buf),
        TypeKind::TsQuery => with_len(buf, |b| tsquery(v, b)),
        TypeKind::Char => {
            let byte = match v {
                Val::Text(s) => s.as_bytes().first().copied().unwrap_or(0),
                other => as_i64(other) as u8,
            };
            buf.put_i32(1);
            buf.put_u8(byte);
        }
        TypeKind::Hstore => with_len(buf, |b| hstore(v, b)),
        TypeKind::Ltree => with_len(buf, |b| ltree(v, b)),
        TypeKind::Composite(attrs) => with_len(buf, |b| composite(attrs, v, b)),
        TypeKind::Box | TypeKind::Lseg | TypeKind::Line | TypeKind::Circle => {
            geometric(kind, v, buf)
        }
        TypeKind::Path | TypeKind::Polygon => with_len(buf, |b| path(kind, v, b)),
        TypeKind::PgLsn => {
            buf.put_i32(8);
            buf.put_i64(as_i64(v));
        }
        TypeKind::Array(elem, oid) => array(elem, *oid, v, buf),
    }
}

/// An IPv4 address and the prefix length written after it (`10.0.0.0/8`), if any.
/// jsonb_send: a version byte, then the text.
fn jsonb(v: &Val, buf: &mut BytesMut) {
    let owned;
    let s: &str = match v {
        Val::Json(s) => s,
        Val::Text(s) => {
            owned = serde_json::Value::String(s.clone()).to_string();
            &owned
        }
        other => {
            owned = text_of(other);
            &owned
        }
    };
    buf.put_i32(s.len() as i32 + 1);
    buf.put_u8(1);
    buf.put_slice(s.as_bytes());
}

/// A uuid's 16 bytes (a text one read from its hex digits).
fn uuid(v: &Val, buf: &mut BytesMut) {
    let u = match v {
        Val::Uuid(u) => *u,
        Val::Text(t) => {
            let hex: String = t.chars().filter(char::is_ascii_hexdigit).collect();
            u128::from_str_radix(&hex, 16).unwrap_or(0)
        }
        other => as_i64(other) as u128,
    };
    buf.put_i32(16);
    buf.put_u128(u);
}

/// tsvector_send: the lexemes, sorted and distinct, without positions.
fn tsvector(v: &Val, buf: &mut BytesMut) {
    let words: Vec<String> = match v {
        Val::TsVec(w) => w.clone(),
        other => {
            let mut w: Vec<String> = text_of(other)
                .split_whitespace()
                .map(str::to_lowercase)
                .collect();
            w.sort();
            w.dedup();
            w
        }
    };
    with_len(buf, |b| {
        b.put_i32(words.len() as i32);
        for w in &words {
            b.put_slice(w.as_bytes());
            b.put_u8(0);
            b.put_u16(0);
        }
    });
}

/// multirange_send: the ranges (a single value as one range).
fn multirange(sub: &TypeKind, v: &Val, b: &mut BytesMut) {
    match v {
        Val::Array(rs) => {
            b.put_i32(rs.len() as i32);
            for r in rs {
                with_len(b, |b| range(sub, r, b));
            }
        }
        other => {
            b.put_i32(1);
            with_len(b, |b| range(sub, other, b));
        }
    }
}

/// A point's x and y.
fn point(v: &Val, buf: &mut BytesMut) {
    let (x, y) = match v {
        Val::Array(a) if a.len() == 2 => (as_f64(&a[0]), as_f64(&a[1])),
        // `(x, y)` or `x,y` as the spec wrote it.
        Val::Text(t) => {
            let t = t.trim().trim_start_matches('(').trim_end_matches(')');
            let (x, y) = t.split_once(',').unwrap_or((t, "0"));
            (
                x.trim().parse().unwrap_or(0.0),
                y.trim().parse().unwrap_or(0.0),
            )
        }
        other => (as_f64(other), 0.0),
    };
    buf.put_i32(16);
    buf.put_f64(x);
    buf.put_f64(y);
}

/// A cidr: an IPv4 network (host bits cleared).
fn cidr(v: &Val, buf: &mut BytesMut) {
    let (ip, given) = ipv4(v);
    // A random address becomes a network of 16 to 32 prefix bits drawn
    // from it (host bits cleared); a key (an integer) stays a /32, distinct.
    let drawn = match v {
        Val::Inet(_) => 16 + (ip % 17) as u8,
        _ => 32,
    };
    let bits = given.unwrap_or(drawn).min(32);
    let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
    inet_field(buf, ip & mask, bits, true);
}

/// A macaddr (6 bytes) or macaddr8 (8 bytes).
fn macaddr(kind: &TypeKind, v: &Val, buf: &mut BytesMut) {
    let u = match v {
        Val::Uuid(u) => *u,
        // `08:00:2b:01:02:03` (or with `-`) as the spec wrote it.
        Val::Text(t) => {
            let hex: String = t.chars().filter(char::is_ascii_hexdigit).collect();
            let shift = 128 - 4 * hex.len().min(32) as u32;
            u128::from_str_radix(&hex, 16)
                .unwrap_or(0)
                .checked_shl(shift)
                .unwrap_or(0)
        }
        other => (as_i64(other) as u128) << 64,
    };
    let n = if *kind == TypeKind::MacAddr { 6 } else { 8 };
    buf.put_i32(n as i32);
    buf.put_slice(&u.to_be_bytes()[..n]);
}

/// An xml document (a value that is not one wrapped in `<doc>`).
fn xml(v: &Val, buf: &mut BytesMut) {
    let doc = match v {
        Val::Text(s) if s.trim_start().starts_with('<') => s.clone(),
        other => {
            let mut d = String::from("<doc>");
            xml_escape(&mut d, &text_of(other));
            d.push_str("</doc>");
            d
        }
    };
    buf.put_i32(doc.len() as i32);
    buf.put_slice(doc.as_bytes());
}

/// tsquery_send of one lexeme.
fn tsquery(v: &Val, b: &mut BytesMut) {
    // One lexeme (tsquery_send: item count, then type, weight, prefix, string).
    let text = text_of(v);
    let word = text.split_whitespace().next().unwrap_or("");
    let lexeme: String = word
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    b.put_i32(1);
    b.put_u8(1);
    b.put_u8(0);
    b.put_u8(0);
    b.put_slice(if lexeme.is_empty() { "a" } else { &lexeme }.as_bytes());
    b.put_u8(0);
}

/// hstore_send: key/value pairs.
fn hstore(v: &Val, b: &mut BytesMut) {
    let words: Vec<String> = match v {
        Val::Array(a) => a.iter().map(text_of).collect(),
        other => vec![text_of(other), String::new()],
    };
    let pairs = words.chunks_exact(2);
    b.put_i32(pairs.len() as i32);
    for kv in pairs {
        for s in kv {
            b.put_i32(s.len() as i32);
            b.put_slice(s.as_bytes());
        }
    }
}

/// ltree_send: a version byte, then the labels joined by dots.
fn ltree(v: &Val, b: &mut BytesMut) {
    b.put_u8(1); // ltree_send's version
    match v {
        Val::Array(labels) => {
            for (i, l) in labels.iter().enumerate() {
                if i > 0 {
                    b.put_u8(b'.');
                }
                let l = text_of(l);
                let label: Vec<u8> = l
                    .bytes()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .collect();
                b.put_slice(if label.is_empty() { b"x" } else { &label });
            }
        }
        other => b.put_slice(text_of(other).as_bytes()),
    }
}

/// record_send of a composite type's attributes.
fn composite(attrs: &[(u32, i32, TypeKind)], v: &Val, b: &mut BytesMut) {
    // record_send: attribute count, then per attribute its type oid and field.
    b.put_i32(attrs.len() as i32);
    let parsed;
    let fields: &[Val] = match v {
        Val::Array(a) => a,
        Val::Text(t) => {
            parsed = record_text(attrs, t);
            &parsed
        }
        _ => &[],
    };
    for (i, (oid, _, k)) in attrs.iter().enumerate() {
        b.put_u32(*oid);
        encode(k, fields.get(i).unwrap_or(&Val::Null), b);
    }
}

/// A box, line segment, line or circle: its 3 or 4 coordinates.
fn geometric(kind: &TypeKind, v: &Val, buf: &mut BytesMut) {
    let mut xs = [0.0f64; 4];
    if let Val::Array(a) = v {
        for (x, it) in xs.iter_mut().zip(a) {
            *x = as_f64(it);
        }
    }
    let n = match kind {
        TypeKind::Line | TypeKind::Circle => 3,
        _ => 4,
    };
    match kind {
        // A line's A and B cannot both be zero; a circle's radius is not negative.
        TypeKind::Line if xs[0] == 0.0 && xs[1] == 0.0 => xs[0] = 1.0,
        TypeKind::Circle => xs[2] = xs[2].abs(),
        _ => {}
    }
    buf.put_i32(8 * n as i32);
    for x in &xs[..n] {
        buf.put_f64(*x);
    }
}

/// A path (open) or polygon: its points.
fn path(kind: &TypeKind, v: &Val, b: &mut BytesMut) {
    let xs: Vec<f64> = match v {
        Val::Array(a) => a.iter().map(as_f64).collect(),
        _ => Vec::new(),
    };
    // At least one point; an odd coordinate left over is dropped.
    let pts = (xs.len() / 2).max(1);
    if *kind == TypeKind::Path {
        b.put_u8(0); // open
    }
    b.put_i32(pts as i32);
    for i in 0..pts * 2 {
        b.put_f64(xs.get(i).copied().unwrap_or(0.0));
    }
}

/// array_send: one dimension, a NULL flag, the element type and the elements.
fn array(elem: &TypeKind, oid: u32, v: &Val, buf: &mut BytesMut) {
    let items: &[Val] = match v {
        Val::Array(a) => a,
        other => std::slice::from_ref(other),
    };
    with_len(buf, |b| {
        if items.is_empty() {
            b.put_i32(0);
            b.put_i32(0);
            b.put_u32(oid);
            return;
        }
        b.put_i32(1);
        b.put_i32(i32::from(items.contains(&Val::Null)));
        b.put_u32(oid);
        b.put_i32(items.len() as i32);
        b.put_i32(1);
        for it in items {
            encode(elem, it, b);
        }
    });
}

fn ipv4(v: &Val) -> (u32, Option<u8>) {
    match v {
        Val::Inet(i) => (*i, None),
        Val::Text(s) => {
            let (addr, bits) = match s.split_once('/') {
                Some((a, b)) => (a, b.trim().parse().ok()),
                None => (s.as_str(), None),
            };
            let ip = addr
                .trim()
                .split('.')
                .fold(0u32, |a, p| (a << 8) | p.parse::<u32>().unwrap_or(0));
            (ip, bits)
        }
        other => (as_i64(other) as u32, None),
    }
}

/// The `inet_send` format for IPv4: family, prefix bits, cidr flag, address length, address.
fn inet_field(buf: &mut BytesMut, ip: u32, bits: u8, cidr: bool) {
    buf.put_i32(8);
    buf.put_u8(2); // PGSQL_AF_INET
    buf.put_u8(bits);
    buf.put_u8(u8::from(cidr));
    buf.put_u8(4);
    buf.put_u32(ip);
}

/// Money in cents (`cash_send` is an int8 of the smallest unit).
fn cents(v: &Val) -> i64 {
    match v {
        Val::Dec(u, s) if *s >= 2 => (u / 10i128.pow(s - 2)) as i64,
        Val::Dec(u, s) => (u * 10i128.pow(2 - s)) as i64,
        Val::Float(f) => (f * 100.0).round() as i64,
        other => as_i64(other).saturating_mul(100),
    }
}

const RANGE_EMPTY: u8 = 0x01;
const RANGE_LB_INC: u8 = 0x02;
const RANGE_UB_INC: u8 = 0x04;
const RANGE_LB_INF: u8 = 0x08;
const RANGE_UB_INF: u8 = 0x10;

/// The `range_send` body: flags, then each finite bound as a field of the
/// subtype. Two generated values become `[low, high)` with low < high (equal
/// draws are pulled one unit apart), so the range is never empty; a NULL
/// bound is an infinite one.
fn range(sub: &TypeKind, v: &Val, b: &mut BytesMut) {
    let a = match v {
        Val::Array(a) => a,
        Val::Text(t) => return range_text(sub, t, b),
        _ => {
            b.put_u8(RANGE_EMPTY);
            return;
        }
    };
    let [lo, hi] = a.as_slice() else {
        b.put_u8(RANGE_EMPTY);
        return;
    };
    let (lo, hi) = match (lo, hi) {
        (Val::Null, _) | (_, Val::Null) => (lo.clone(), hi.clone()),
        _ => ordered_bounds(sub, lo, hi),
    };
    let mut flags = RANGE_LB_INC;
    if lo == Val::Null {
        flags = RANGE_LB_INF;
    }
    if hi == Val::Null {
        flags |= RANGE_UB_INF;
    }
    b.put_u8(flags);
    for bound in [&lo, &hi] {
        if *bound != Val::Null {
            encode(sub, bound, b);
        }
    }
}

/// A range the spec wrote as text (`[1,10)`, `(,2026-01-01]`, `empty`): its
/// bounds parsed for the subtype, its brackets kept. Bounds planck cannot
/// read make the range empty.
fn range_text(sub: &TypeKind, t: &str, b: &mut BytesMut) {
    let t = t.trim();
    let parsed = (|| {
        let lb_inc = match t.as_bytes().first()? {
            b'[' => true,
            b'(' => false,
            _ => return None,
        };
        let ub_inc = match t.as_bytes().last()? {
            b']' => true,
            b')' => false,
            _ => return None,
        };
        let (lo, hi) = t.get(1..t.len() - 1)?.split_once(',')?;
        let bound = |x: &str| -> Option<Val> {
            let x = x.trim().trim_matches('"');
            if x.is_empty() {
                return Some(Val::Null);
            }
            Some(match sub {
                k if k.is_int() => Val::Int(x.parse().ok()?),
                k if k.is_time() => Val::Micros(crate::seed::spec::parse_timestamp(x)?),
                TypeKind::Numeric => {
                    let (int, frac) = x.split_once('.').unwrap_or((x, ""));
                    let scale = frac.len() as u32;
                    Val::Dec(format!("{int}{frac}").parse().ok()?, scale)
                }
                _ => Val::Float(x.parse().ok()?),
            })
        };
        Some((lb_inc, bound(lo)?, bound(hi)?, ub_inc))
    })();
    let Some((lb_inc, lo, hi, ub_inc)) = parsed else {
        b.put_u8(RANGE_EMPTY);
        return;
    };
    let mut flags = 0;
    if lo == Val::Null {
        flags |= RANGE_LB_INF;
    } else if lb_inc {
        flags |= RANGE_LB_INC;
    }
    if hi == Val::Null {
        flags |= RANGE_UB_INF;
    } else if ub_inc {
        flags |= RANGE_UB_INC;
    }
    b.put_u8(flags);
    for bound in [&lo, &hi] {
        if *bound != Val::Null {
            encode(sub, bound, b);
        }
    }
}

/// A composite value the spec wrote as text, `(1,"a b",2024-01-01)`: one
/// value per attribute, read for the attribute's kind (an empty unquoted
/// field is NULL).
fn record_text(attrs: &[(u32, i32, TypeKind)], t: &str) -> Vec<Val> {
    let inner = t
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(t);
    let mut fields: Vec<(String, bool)> = vec![(String::new(), false)];
    let mut chars = inner.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        let cur = fields.last_mut().map(|f| &mut f.0);
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.into_iter().for_each(|f| f.push('"'));
            }
            '"' => {
                quoted = !quoted;
                if let Some(f) = fields.last_mut() {
                    f.1 = true;
                }
            }
            '\\' => {
                if let (Some(n), Some(f)) = (chars.next(), cur) {
                    f.push(n);
                }
            }
            ',' if !quoted => fields.push((String::new(), false)),
            c => cur.into_iter().for_each(|f| f.push(c)),
        }
    }
    attrs
        .iter()
        .zip(
            fields
                .iter()
                .chain(std::iter::repeat(&(String::new(), false))),
        )
        .map(|((_, _, k), (f, q))| {
            if f.is_empty() && !q {
                return Val::Null;
            }
            match k {
                k if k.is_int() => f.trim().parse().map_or(Val::Null, Val::Int),
                k if k.is_time() => {
                    crate::seed::spec::parse_timestamp(f).map_or(Val::Null, Val::Micros)
                }
                TypeKind::Numeric | TypeKind::Money => {
                    let (int, frac) = f.trim().split_once('.').unwrap_or((f.trim(), ""));
                    format!("{int}{frac}")
                        .parse()
                        .map_or(Val::Null, |u| Val::Dec(u, frac.len() as u32))
                }
                TypeKind::Float4 | TypeKind::Float8 => {
                    f.trim().parse().map_or(Val::Null, Val::Float)
                }
                TypeKind::Bool => Val::Bool(matches!(
                    f.trim().to_ascii_lowercase().as_str(),
                    "t" | "true" | "y" | "yes" | "on" | "1"
                )),
                _ => Val::Text(f.clone()),
            }
        })
        .collect()
}

/// Two bounds in order and distinct in the subtype's own unit (a day for dates).
fn ordered_bounds(sub: &TypeKind, a: &Val, b: &Val) -> (Val, Val) {
    let apart = |x: i64, y: i64, max: i64| {
        let (x, y) = (x.min(y), x.max(y));
        match x == y {
            true if x < max => (x, x + 1),
            true => (x - 1, x),
            false => (x, y),
        }
    };
    match sub {
        k if k.is_int() => {
            let (x, y) = apart(as_i64(a), as_i64(b), k.int_max());
            (Val::Int(x), Val::Int(y))
        }
        TypeKind::Date => {
            let day = |v| as_i64(v).div_euclid(DAY_MICROS);
            let (x, y) = apart(day(a), day(b), i64::MAX);
            (Val::Micros(x * DAY_MICROS), Val::Micros(y * DAY_MICROS))
        }
        TypeKind::Numeric => {
            let dec = |v: &Val| match v {
                Val::Dec(u, s) => (*u, *s),
                Val::Float(f) => ((f * 100.0).round() as i128, 2),
                other => (i128::from(as_i64(other)), 0),
            };
            let ((u, s), (w, t)) = (dec(a), dec(b));
            let s2 = s.max(t);
            let (u, w) = (u * 10i128.pow(s2 - s), w * 10i128.pow(s2 - t));
            let (x, y) = (u.min(w), u.max(w));
            (
                Val::Dec(x, s2),
                Val::Dec(if x == y { x + 1 } else { y }, s2),
            )
        }
        TypeKind::Float4 | TypeKind::Float8 => {
            let (x, y) = (as_f64(a), as_f64(b));
            let (x, y) = (x.min(y), x.max(y));
            (Val::Float(x), Val::Float(if x == y { x + 1.0 } else { y }))
        }
        // uuidrange (hatchet): uuids compare as big-endian 128-bit numbers.
        TypeKind::Uuid => {
            let u = |v: &Val| match v {
                Val::Uuid(u) => *u,
                other => as_i64(other) as u128,
            };
            let (x, y) = (u(a).min(u(b)), u(a).max(u(b)));
            match x == y {
                true if x < u128::MAX => (Val::Uuid(x), Val::Uuid(x + 1)),
                true => (Val::Uuid(x - 1), Val::Uuid(x)),
                false => (Val::Uuid(x), Val::Uuid(y)),
            }
        }
        _ => {
            let (x, y) = apart(as_i64(a), as_i64(b), i64::MAX);
            (Val::Micros(x), Val::Micros(y))
        }
    }
}

/// The `bit_send` / `varbit_send` body: the bit count, then the bits, padded
/// with zeros. Bytes give the bits (bit(n) takes exactly n, varbit between 1
/// and its limit); a text of 0s and 1s is taken as written.
fn bits(len: Option<usize>, varying: bool, v: &Val, b: &mut BytesMut) {
    let mut owned = Vec::new();
    let (src, mut n): (&[u8], usize) = match v {
        Val::Bytes(x) => {
            let avail = x.len() * 8;
            let n = if varying {
                avail.saturating_sub(usize::from(x.first().copied().unwrap_or(0) & 7))
            } else {
                avail
            };
            (x, n.max(1))
        }
        other => {
            // 0s and 1s as written; other text (a unique key's hex digits) gives 4 bits a digit.
            let s = text_of(other);
            let binary = s.bytes().all(|c| matches!(c, b'0' | b'1'));
            let mut n = 0;
            for c in s.bytes() {
                let (v, w) = match c {
                    b'0' | b'1' if binary => (c - b'0', 1),
                    _ if binary => continue,
                    c if c.is_ascii_hexdigit() => ((c as char).to_digit(16).unwrap_or(0) as u8, 4),
                    _ => continue,
                };
                for k in (0..w).rev() {
                    if n % 8 == 0 {
                        owned.push(0u8);
                    }
                    if (v >> k) & 1 == 1 {
                        owned[n / 8] |= 0x80 >> (n % 8);
                    }
                    n += 1;
                }
            }
            (&owned, n.max(1))
        }
    };
    if let Some(max) = len {
        n = if varying { n.min(max) } else { max };
    }
    b.put_i32(n as i32);
    let nbytes = n.div_ceil(8);
    for i in 0..nbytes {
        let mut byte = src.get(i).copied().unwrap_or(0);
        if i == nbytes - 1 && n % 8 != 0 {
            byte &= 0xffu8 << (8 - n % 8);
        }
        b.put_u8(byte);
    }
}

fn xml_escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// The `numeric_send` format: base-10000 digits, weight, sign, display scale.
fn numeric(buf: &mut BytesMut, u: i128, scale: u32) {
    let neg = u < 0;
    let pad = (4 - scale % 4) % 4;
    let mut a = u.unsigned_abs() * 10u128.pow(pad);
    let frac_groups = ((scale + pad) / 4) as usize;
    let mut groups: Vec<i16> = Vec::new();
    while a > 0 {
        groups.push((a % 10_000) as i16);
        a /= 10_000;
    }
    if !groups.is_empty() {
        while groups.len() < frac_groups {
            groups.push(0);
        }
    }
    groups.reverse();
    let mut weight = groups.len() as i32 - frac_groups as i32 - 1;
    let lead = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..lead);
    weight -= lead as i32;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    buf.put_i16(groups.len() as i16);
    buf.put_i16(weight as i16);
    buf.put_u16(if neg && !groups.is_empty() { 0x4000 } else { 0 });
    buf.put_u16(scale as u16);
    for g in groups {
        buf.put_i16(g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(u: i128, s: u32) -> Vec<i16> {
        let mut b = BytesMut::new();
        numeric(&mut b, u, s);
        b.chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect()
    }

    #[test]
    fn numeric_matches_the_server_format() {
        // 12.34: one integer group (12), one fraction group (3400), weight 0, dscale 2.
        assert_eq!(num(1234, 2), vec![2, 0, 0, 2, 12, 3400]);
        // 0: no digits.
        assert_eq!(num(0, 2), vec![0, 0, 0, 2]);
        // 100000000 = 1 * 10000^2.
        assert_eq!(num(100_000_000, 0), vec![1, 2, 0, 0, 1]);
        // -0.0001.
        assert_eq!(num(-1, 4), vec![1, -1, 0x4000, 4, 1]);
    }

    fn field(kind: &TypeKind, v: &Val) -> Vec<u8> {
        let mut b = BytesMut::new();
        encode(kind, v, &mut b);
        b.to_vec()
    }

    #[test]
    fn ranges_are_ordered_and_never_empty() {
        let int4 = TypeKind::Range(Box::new(TypeKind::Int4));
        // [7, 3] drawn: written [3, 7), flags 0x02, two int4 fields.
        let r = field(&int4, &Val::Array(vec![Val::Int(7), Val::Int(3)]));
        assert_eq!(
            r,
            [
                0, 0, 0, 17, 2, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 7
            ]
        );
        // Equal draws are pulled one apart, at the type's top too.
        let r = field(&int4, &Val::Array(vec![Val::Int(5), Val::Int(5)]));
        assert_eq!((r[12], r[20]), (5, 6));
        let top = i64::from(i32::MAX);
        let (lo, hi) = ordered_bounds(&TypeKind::Int4, &Val::Int(top), &Val::Int(top));
        assert_eq!((lo, hi), (Val::Int(top - 1), Val::Int(top)));
        // Dates: two times on one day become two days.
        let (lo, hi) = ordered_bounds(&TypeKind::Date, &Val::Micros(10), &Val::Micros(20));
        assert_eq!((lo, hi), (Val::Micros(0), Val::Micros(DAY_MICROS)));
        // Text as the spec wrote it keeps its brackets: (,5] is upper-inclusive, lower-infinite.
        let r = field(&int4, &Val::Text("(,5]".into()));
        assert_eq!(r[4], RANGE_LB_INF | RANGE_UB_INC);
        assert_eq!(field(&int4, &Val::Text("nonsense".into()))[4], RANGE_EMPTY);
    }

    #[test]
    fn bit_strings_have_the_type_length_with_zero_padding() {
        let bit5 = TypeKind::Bit {
            len: Some(5),
            varying: false,
        };
        // 5 bits of 0xff: length 5, the last three bits cleared.
        assert_eq!(
            field(&bit5, &Val::Bytes(vec![0xff])),
            [0, 0, 0, 5, 0, 0, 0, 5, 0xf8]
        );
        // "1010" as written, padded to bit(5).
        assert_eq!(
            field(&bit5, &Val::Text("1010".into())),
            [0, 0, 0, 5, 0, 0, 0, 5, 0xa0]
        );
        let varbit = TypeKind::Bit {
            len: Some(12),
            varying: true,
        };
        // Two bytes, the first one's low bits (3) drop 3 bits: 13, capped at 12.
        let f = field(&varbit, &Val::Bytes(vec![0x03, 0xff]));
        assert_eq!(&f[4..8], &[0, 0, 0, 12]);
        assert_eq!(f[9], 0xf0);
    }

    #[test]
    fn money_is_cents_and_cidr_clears_host_bits() {
        assert_eq!(cents(&Val::Dec(1234, 2)), 1234);
        assert_eq!(cents(&Val::Dec(12345, 3)), 1234);
        assert_eq!(cents(&Val::Int(5)), 500);
        let f = field(&TypeKind::Cidr, &Val::Text("10.1.2.3/8".into()));
        assert_eq!(&f[4..], &[2, 8, 1, 4, 10, 0, 0, 0]);
        // A key (an integer) is a /32 and keeps every bit.
        let f = field(&TypeKind::Cidr, &Val::Int(0x0a00_0001));
        assert_eq!(&f[4..], &[2, 32, 1, 4, 10, 0, 0, 1]);
    }

    #[test]
    fn nulls_and_ints() {
        let mut b = BytesMut::new();
        encode(&TypeKind::Int4, &Val::Null, &mut b);
        encode(&TypeKind::Int4, &Val::Int(7), &mut b);
        assert_eq!(&b[..], &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 4, 0, 0, 0, 7]);
    }
}
