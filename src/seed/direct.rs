//! Column encoders compiled once per chunk: the load's hot loop.
//!
//! The general path asks, for each row and column, for a [`Val`] and then
//! encodes it ([`SeedPlan::value`], [`copy::encode`]). For the generators most
//! columns use, that round trip costs more than the value: a text choice
//! clones its string for every row and frees it after the copy, a JSON
//! object is built in its own growing `String`, an array clones its
//! elements, and every value is moved through the shape step even when the
//! column has no shape. On two cores the COPY backends need that CPU.
//!
//! An [`Encoder`] writes the same bytes straight into the COPY buffer:
//! choices are encoded once per chunk, text and JSON are built in one
//! scratch string that lives as long as the chunk, arrays of choices are
//! written element by element. Columns with a shape (a CHECK's regex, case,
//! NULL pattern) take the general path; other generators skip only the
//! shape step. The bytes are the general path's, exactly:
//! `tests/it/seed_direct.rs` compares both on every column of the bundled
//! example, of a schema with each encoder kind and of real schemas, and
//! `tests/it/seed_determinism.rs` pins the dataset.

use bytes::{BufMut, BytesMut};

use crate::catalog::schema::TypeKind;
use crate::seed::copy;
use crate::seed::row::eval;
use crate::seed::row::generate::{self, Gen, Text, Val};
use crate::seed::row::plan::{RowCtx, SeedPlan};
use crate::seed::row::rng::{self, ValueRng};

/// One column's compiled encoder.
#[derive(Debug)]
enum Encoder<'a> {
    /// The general path: the value (with its shape), then its encoding.
    General,
    /// A shapeless column: the generator's value, then its encoding.
    Plain(&'a Gen),
    /// A weighted choice: each value encoded once.
    Choice { cum: &'a [f64], enc: Vec<Vec<u8>> },
    /// NULL with probability `p`, else `inner` (same draw).
    Nullable { p: f64, inner: Box<Encoder<'a>> },
    /// Text that is not made unique, cut to `max_len` characters.
    Text {
        text: &'a Text,
        max_len: Option<usize>,
    },
    /// A JSON object: `{"key": value, ...}`, `jsonb` with its version byte.
    Json {
        jsonb: bool,
        fields: Vec<JsonField<'a>>,
    },
    /// An array of a weighted choice.
    ChoiceArray {
        min: u32,
        max: u32,
        oid: u32,
        cum: &'a [f64],
        enc: Vec<Vec<u8>>,
        null: Vec<bool>,
    },
}

#[derive(Debug)]
struct JsonField<'a> {
    /// `{"key": ` for the first field, `, "key": ` for the others.
    prefix: String,
    /// The field name's key and the field's place: its draw's inputs.
    key: u64,
    index: usize,
    value: JsonValue<'a>,
}

#[derive(Debug)]
enum JsonValue<'a> {
    /// A weighted choice, each value written as JSON once.
    Choice { cum: &'a [f64], json: Vec<String> },
    /// Any other generator: its value, written as JSON.
    Other(&'a Gen),
}

fn encoded(kind: &TypeKind, v: &Val) -> Vec<u8> {
    let mut b = BytesMut::new();
    copy::encode(kind, v, &mut b);
    b.to_vec()
}

impl<'a> Encoder<'a> {
    fn new(plan: &'a SeedPlan, t: usize, c: usize) -> Encoder<'a> {
        let col = &plan.tables[t].cols[c];
        if col.shape.is_some() {
            return Encoder::General;
        }
        Encoder::of(&col.kind, &col.generator)
    }

    /// The encoder of generator `g` for a shapeless column of `kind`.
    fn of(kind: &TypeKind, g: &'a Gen) -> Encoder<'a> {
        match g {
            Gen::Choice { vals, cum } if !vals.is_empty() => Encoder::Choice {
                cum,
                enc: vals.iter().map(|v| encoded(kind, v)).collect(),
            },
            Gen::Nullable { p, inner } => Encoder::Nullable {
                p: *p,
                inner: Box::new(Encoder::of(kind, inner)),
            },
            Gen::Text {
                text,
                unique: false,
                max_len,
            } if *kind == TypeKind::Text => Encoder::Text {
                text,
                max_len: *max_len,
            },
            Gen::Json(fields) if matches!(kind, TypeKind::Json | TypeKind::Jsonb) => {
                Encoder::Json {
                    jsonb: *kind == TypeKind::Jsonb,
                    fields: fields
                        .iter()
                        .enumerate()
                        .map(|(i, (k, g))| {
                            let mut prefix = String::from(if i == 0 { "{" } else { ", " });
                            generate::json_str(&mut prefix, k);
                            prefix.push_str(": ");
                            let value = match g {
                                Gen::Choice { vals, cum } if !vals.is_empty() => {
                                    JsonValue::Choice {
                                        cum,
                                        json: vals
                                            .iter()
                                            .map(|v| {
                                                let mut s = String::new();
                                                generate::json_val(&mut s, v);
                                                s
                                            })
                                            .collect(),
                                    }
                                }
                                other => JsonValue::Other(other),
                            };
                            JsonField {
                                prefix,
                                key: rng::name_key(k),
                                index: i,
                                value,
                            }
                        })
                        .collect(),
                }
            }
            Gen::Array { elem, min, max } => match (kind, elem.as_ref()) {
                (TypeKind::Array(ek, oid), Gen::Choice { vals, cum }) if !vals.is_empty() => {
                    Encoder::ChoiceArray {
                        min: *min,
                        max: *max,
                        oid: *oid,
                        cum,
                        enc: vals.iter().map(|v| encoded(ek, v)).collect(),
                        null: vals.iter().map(|v| *v == Val::Null).collect(),
                    }
                }
                _ => Encoder::Plain(g),
            },
            other => Encoder::Plain(other),
        }
    }

    /// Appends column `c`'s field of row `ctx`; `h` is the column's draw for
    /// the row.
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        plan: &SeedPlan,
        t: usize,
        c: usize,
        ctx: &RowCtx,
        h: u64,
        buf: &mut BytesMut,
        scratch: &mut Scratch,
    ) {
        match self {
            Encoder::General => {
                let v = plan.value(t, c, ctx);
                copy::encode(&plan.tables[t].cols[c].kind, &v, buf);
            }
            Encoder::Plain(g) => {
                let v = g.eval_h(plan, t, c, ctx, h, 0);
                copy::encode(&plan.tables[t].cols[c].kind, &v, buf);
            }
            Encoder::Choice { cum, enc } => {
                buf.put_slice(&enc[rng::choice_index(cum, enc.len(), h)])
            }
            Encoder::Nullable { p, inner } => {
                if rng::null_draw(h, *p) {
                    buf.put_i32(-1);
                } else {
                    inner.put(plan, t, c, ctx, h, buf, scratch);
                }
            }
            Encoder::Text { text, max_len } => {
                let s = &mut scratch.text;
                s.clear();
                let mut r = ValueRng::new(h);
                text.make_into(s, &mut r, ctx.row, eval::h_key(plan, t, c));
                if let Some(m) = max_len {
                    generate::truncate_chars(s, *m);
                }
                buf.put_i32(s.len() as i32);
                buf.put_slice(s.as_bytes());
            }
            Encoder::Json { jsonb, fields } => {
                let s = &mut scratch.text;
                s.clear();
                for f in fields {
                    s.push_str(&f.prefix);
                    let hk = rng::json_field(h, f.key, f.index);
                    match &f.value {
                        JsonValue::Choice { cum, json } => {
                            s.push_str(&json[rng::choice_index(cum, json.len(), hk)])
                        }
                        JsonValue::Other(g) => {
                            generate::json_val(s, &g.eval_h(plan, t, c, ctx, hk, 0));
                        }
                    }
                }
                if fields.is_empty() {
                    s.push('{');
                }
                s.push('}');
                if *jsonb {
                    buf.put_i32(s.len() as i32 + 1);
                    buf.put_u8(1);
                } else {
                    buf.put_i32(s.len() as i32);
                }
                buf.put_slice(s.as_bytes());
            }
            Encoder::ChoiceArray {
                min,
                max,
                oid,
                cum,
                enc,
                null,
            } => {
                let mut r = ValueRng::new(h);
                let n = r.range(u64::from(*min), u64::from(*max));
                let picks = &mut scratch.picks;
                picks.clear();
                picks.extend((0..n).map(|_| rng::choice_index(cum, enc.len(), r.step())));
                let at = buf.len();
                buf.put_i32(0);
                if picks.is_empty() {
                    buf.put_i32(0);
                    buf.put_i32(0);
                    buf.put_u32(*oid);
                } else {
                    buf.put_i32(1);
                    buf.put_i32(i32::from(picks.iter().any(|&i| null[i])));
                    buf.put_u32(*oid);
                    buf.put_i32(picks.len() as i32);
                    buf.put_i32(1);
                    for &i in picks.iter() {
                        buf.put_slice(&enc[i]);
                    }
                }
                let len = (buf.len() - at - 4) as i32;
                buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
            }
        }
    }
}

/// Buffers reused from row to row of a chunk.
#[derive(Debug, Default)]
struct Scratch {
    text: String,
    picks: Vec<usize>,
}

/// Encodes rows `rows` of table `t` (only the columns in `cols`) as binary
/// COPY rows: [`copy::encode_chunk`]'s bytes, by the compiled encoders.
pub fn encode_chunk(
    plan: &SeedPlan,
    t: usize,
    cols: &[usize],
    rows: std::ops::Range<u64>,
    capacity: usize,
) -> BytesMut {
    let mut buf = BytesMut::with_capacity(capacity);
    let tp = &plan.tables[t];
    let encoders: Vec<(usize, u64, Encoder)> = cols
        .iter()
        .map(|&c| (c, tp.cols[c].key, Encoder::new(plan, t, c)))
        .collect();
    let mut scratch = Scratch::default();
    for ctx in plan.ctxs(t, rows) {
        buf.put_i16(cols.len() as i16);
        for (c, key, e) in &encoders {
            let h = rng::hash(plan.seed, tp.key, *key, ctx.row);
            e.put(plan, t, *c, &ctx, h, &mut buf, &mut scratch);
        }
    }
    buf
}

/// The name of the encoder column `c` of table `t` compiles to, for tests
/// that check which paths a schema takes.
#[doc(hidden)]
pub fn encoder_name(plan: &SeedPlan, t: usize, c: usize) -> &'static str {
    fn name(e: &Encoder) -> &'static str {
        match e {
            Encoder::General => "general",
            Encoder::Plain(_) => "plain",
            Encoder::Choice { .. } => "choice",
            Encoder::Nullable { inner, .. } => match inner.as_ref() {
                Encoder::Choice { .. } => "nullable choice",
                Encoder::Text { .. } => "nullable text",
                Encoder::Json { .. } => "nullable json",
                _ => "nullable",
            },
            Encoder::Text { .. } => "text",
            Encoder::Json { .. } => "json",
            Encoder::ChoiceArray { .. } => "choice array",
        }
    }
    name(&Encoder::new(plan, t, c))
}
