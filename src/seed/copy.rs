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
use crate::seed::generate::Val;
use crate::seed::layout::Plan;

/// Signature, flags (no OIDs), header extension length 0.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
pub const TRAILER: &[u8] = &[0xff, 0xff];

const DAY_MICROS: i64 = 86_400_000_000;

/// Encodes rows `rows` of table `t` (only the columns in `cols`).
pub fn encode_chunk(
    plan: &Plan,
    t: usize,
    cols: &[usize],
    rows: std::ops::Range<u64>,
    capacity: usize,
) -> BytesMut {
    let mut buf = BytesMut::with_capacity(capacity);
    let tp = &plan.tables[t];
    for row in rows {
        let ctx = plan.ctx(t, row);
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
        TypeKind::Jsonb => {
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
        TypeKind::Uuid => {
            let u = match v {
                Val::Uuid(u) => *u,
                other => as_i64(other) as u128,
            };
            buf.put_i32(16);
            buf.put_u128(u);
        }
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
            let ip = match v {
                Val::Inet(i) => *i,
                Val::Text(s) => s
                    .split('.')
                    .fold(0u32, |a, p| (a << 8) | p.parse::<u32>().unwrap_or(0)),
                other => as_i64(other) as u32,
            };
            buf.put_i32(8);
            buf.put_u8(2); // PGSQL_AF_INET
            buf.put_u8(32);
            buf.put_u8(0);
            buf.put_u8(4);
            buf.put_u32(ip);
        }
        TypeKind::TsVector => {
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
        TypeKind::Array(elem, oid) => {
            let items: Vec<Val> = match v {
                Val::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            with_len(buf, |b| {
                if items.is_empty() {
                    b.put_i32(0);
                    b.put_i32(0);
                    b.put_u32(*oid);
                    return;
                }
                b.put_i32(1);
                b.put_i32(i32::from(items.contains(&Val::Null)));
                b.put_u32(*oid);
                b.put_i32(items.len() as i32);
                b.put_i32(1);
                for it in &items {
                    encode(elem, it, b);
                }
            });
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

    #[test]
    fn nulls_and_ints() {
        let mut b = BytesMut::new();
        encode(&TypeKind::Int4, &Val::Null, &mut b);
        encode(&TypeKind::Int4, &Val::Int(7), &mut b);
        assert_eq!(&b[..], &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 4, 0, 0, 0, 7]);
    }
}
