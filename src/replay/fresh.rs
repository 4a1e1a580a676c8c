//! Fresh keys for INSERTs: a parameter inserted into a primary key, a
//! unique key or an identity column must not repeat a value
//! sampled from the data (a unique violation every time) nor one another
//! execution has in flight (two inserts of one key wait on each other: a
//! fake hotspot). Such parameters get values past the data instead, drawn
//! from one counter the whole run shares, so no two executions, on any
//! client, get the same one. In a unique key of several columns, those that
//! are no foreign key get fresh values (`items (pouch_id, slug)`: the slug),
//! so the key is new while the row still points at a sampled parent.
//!
//! Integers start past the column's maximum; uuids are version-4 shaped with
//! the counter in their last 48 bits; text is `planck-<n>`. A column of
//! another type keeps its sampled value.
//!
//! The values satisfy the column's CHECK constraints (those on the column
//! alone, read from `pg_constraint`) and its domain's: each way of making
//! values, in order ([`candidates`]), is tried on probe values (the first,
//! the second and the 100,000th) by the server itself, through the
//! constraint's own expression on a row of the column's type; the first
//! way they all pass is kept. Integers past the maximum, then below the
//! minimum; text `planck-<n>`, `planck<n>`, an e-mail-shaped one, digits,
//! then fixed widths (base 36, upper case, digits) from 2 to 32 characters.
//! A column no way satisfies keeps its sampled values, with a warning.

use std::collections::HashMap;

use tokio_postgres::Client;

use super::rng::Rng;
use super::workload::{BindSource, Workload};
use crate::db::quote_ident;

/// How a fresh value of one column is made.
#[derive(Debug, Clone, PartialEq)]
pub enum FreshKind {
    /// `base + step * n`: `base` past the column's largest value (step 1)
    /// or below its smallest (step -1).
    Int {
        base: i64,
        step: i64,
    },
    Uuid,
    Text(TextShape),
}

/// How a fresh text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextShape {
    /// `planck-<n>`
    Dashed,
    /// `planck<n>`
    Plain,
    /// `planck-<n>@example.invalid`
    Email,
    /// `9<n>`, n in 9 decimal digits at least.
    Digits,
    /// Exactly `width` characters: a marker (`z`, `Z` or `9`) then n in
    /// base 36 (lower, upper) or 10, zero-padded.
    Fixed { width: usize, alphabet: Alphabet },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    Lower36,
    Upper36,
    Decimal,
}

/// The ways to make values of a column of type `ty`, in the order tried.
/// `max`/`min`: an integer column's range in the data.
pub fn candidates(ty: &str, max: i64, min: i64) -> Vec<FreshKind> {
    match ty {
        "smallint" | "integer" | "bigint" => vec![
            FreshKind::Int {
                base: max.saturating_add(1),
                step: 1,
            },
            FreshKind::Int {
                base: min.saturating_sub(1),
                step: -1,
            },
        ],
        "uuid" => vec![FreshKind::Uuid],
        _ => {
            let mut out: Vec<FreshKind> = [
                TextShape::Dashed,
                TextShape::Plain,
                TextShape::Email,
                TextShape::Digits,
            ]
            .into_iter()
            .map(FreshKind::Text)
            .collect();
            for alphabet in [Alphabet::Lower36, Alphabet::Upper36, Alphabet::Decimal] {
                for width in 2..=32 {
                    out.push(FreshKind::Text(TextShape::Fixed { width, alphabet }));
                }
            }
            out
        }
    }
}

/// Counter values the CHECKs are tried on: a run's first two values and a
/// long run's 100,000th.
const PROBES: [u64; 3] = [0, 1, 99_999];

/// CHECK constraints on the column alone, and the column's type as SQL writes it.
const CHECKS: &str = "SELECT regexp_replace(pg_get_constraintdef(c.oid), '^CHECK \\((.*)\\)( NOT VALID)?$', '\\1') \
     FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ALL (c.conkey) \
    WHERE c.conrelid = $1::text::regclass AND c.contype = 'c' AND a.attname = $2 \
      AND cardinality(c.conkey) = 1";

/// (statement index, `$n`) -> how its fresh values are made.
pub type FreshKeys = HashMap<(usize, u32), FreshKind>;

const COLUMN: &str = "SELECT format_type(coalesce(nullif(t.typbasetype, 0), a.atttypid), \
                         CASE WHEN t.typbasetype <> 0 THEN t.typtypmod ELSE a.atttypmod END), \
       a.attidentity <> '' OR EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid \
                                       AND i.indisunique AND a.attnum = ANY (i.indkey::int2[]) \
                                       AND (i.indnkeyatts = 1 OR NOT EXISTS ( \
                                            SELECT 1 FROM pg_constraint f WHERE f.conrelid = a.attrelid \
                                               AND f.contype = 'f' AND a.attnum = ANY (f.conkey)))) \
       , format_type(a.atttypid, a.atttypmod) \
     FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
    WHERE a.attrelid = $1::text::regclass AND a.attname = $2 AND NOT a.attisdropped";

fn is_insert(query: &str) -> bool {
    query
        .trim_start()
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("insert"))
}

/// Finds the INSERT parameters that need fresh values; `unsatisfied` gets
/// the columns whose CHECKs no way of making values passes.
pub async fn plan(
    client: &Client,
    w: &Workload,
    unsatisfied: &mut Vec<String>,
) -> Result<FreshKeys, tokio_postgres::Error> {
    let mut out = FreshKeys::new();
    let mut seen: HashMap<(String, String), Option<FreshKind>> = HashMap::new();
    for (i, s) in w.statements.iter().enumerate() {
        if !is_insert(&s.query) {
            continue;
        }
        let binds = s.auto_bind.iter().chain(
            w.transactions
                .iter()
                .flat_map(|t| t.bind.iter())
                .filter(|b| b.statement == s.id),
        );
        for b in binds {
            let BindSource::Column { table, column } = &b.source else {
                continue;
            };
            let key = (table.clone(), column.clone());
            if !seen.contains_key(&key) {
                let kind = column_kind(client, table, column, unsatisfied).await?;
                seen.insert(key.clone(), kind);
            }
            if let Some(k) = &seen[&key] {
                out.insert((i, b.param), k.clone());
            }
        }
    }
    Ok(out)
}

async fn column_kind(
    client: &Client,
    table: &str,
    column: &str,
    unsatisfied: &mut Vec<String>,
) -> Result<Option<FreshKind>, tokio_postgres::Error> {
    let qualified: Vec<String> = table.split('.').map(quote_ident).collect();
    let qualified = qualified.join(".");
    let Ok(Some(row)) = client.query_opt(COLUMN, &[&qualified, &column]).await else {
        // Not a table here (a CTE's name): nothing to keep fresh.
        return Ok(None);
    };
    let (ty, sql_type, unique): (String, String, bool) = (row.get(0), row.get(2), row.get(1));
    if !unique {
        return Ok(None);
    }
    let base = match ty.as_str() {
        t if t.starts_with("character varying") || t == "citext" => "text",
        t => t,
    };
    if !matches!(base, "smallint" | "integer" | "bigint" | "uuid" | "text") {
        return Ok(None);
    }
    let (max, min) = if matches!(base, "smallint" | "integer" | "bigint") {
        let r = client
            .query_one(
                &format!(
                    "SELECT coalesce(max({c})::int8, 0), coalesce(min({c})::int8, 1) FROM {qualified}",
                    c = quote_ident(column)
                ),
                &[],
            )
            .await?;
        (r.get(0), r.get(1))
    } else {
        (0, 0)
    };
    let checks: Vec<String> = client
        .query(CHECKS, &[&qualified, &column])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let domain = sql_type != ty;
    let all = candidates(base, max, min);
    if checks.is_empty() && !domain {
        return Ok(all.into_iter().next());
    }
    let mut rng = Rng::new(1);
    for kind in all {
        let probes: Vec<String> = PROBES.iter().map(|n| value(&kind, *n, &mut rng)).collect();
        if passes(client, &sql_type, column, &checks, &probes).await {
            return Ok(Some(kind));
        }
    }
    unsatisfied.push(format!("{table}.{column}"));
    Ok(None)
}

/// Whether every value, as the column's type (a domain checks its own),
/// passes every CHECK: the server evaluates the constraints' expressions.
async fn passes(
    client: &Client,
    sql_type: &str,
    column: &str,
    checks: &[String],
    values: &[String],
) -> bool {
    // The column itself is read, or the planner drops the cast (and the
    // domain's check with it).
    let all = std::iter::once(format!("{} IS NOT NULL", quote_ident(column)))
        .chain(checks.iter().map(|c| format!("coalesce(({c}), true)")))
        .collect::<Vec<_>>()
        .join(" AND ");
    let sql = format!(
        "SELECT bool_and({all}) FROM (SELECT v::{sql_type} AS {} FROM unnest($1::text[]) v) t",
        quote_ident(column)
    );
    matches!(
        client
            .query_one(&sql, &[&values])
            .await
            .map(|r| r.get::<_, Option<bool>>(0)),
        Ok(Some(true))
    )
}

/// The `n`th fresh value of a column.
pub fn value(kind: &FreshKind, n: u64, rng: &mut Rng) -> String {
    match kind {
        FreshKind::Int { base, step } => base
            .saturating_add(step.saturating_mul(n as i64))
            .to_string(),
        FreshKind::Uuid => {
            let hi = rng.next_u64();
            format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                hi >> 32,
                (hi >> 16) & 0xffff,
                hi & 0x0fff,
                0x8000 | ((n >> 48) & 0x3fff),
                n & 0xffff_ffff_ffff
            )
        }
        FreshKind::Text(TextShape::Dashed) => format!("planck-{n}"),
        FreshKind::Text(TextShape::Plain) => format!("planck{n}"),
        FreshKind::Text(TextShape::Email) => format!("planck-{n}@example.invalid"),
        FreshKind::Text(TextShape::Digits) => format!("9{n:09}"),
        FreshKind::Text(TextShape::Fixed { width, alphabet }) => {
            let (marker, radix, upper) = match alphabet {
                Alphabet::Lower36 => ('z', 36, false),
                Alphabet::Upper36 => ('Z', 36, true),
                Alphabet::Decimal => ('9', 10, false),
            };
            let mut digits = Vec::new();
            let mut x = n;
            loop {
                let d = std::char::from_digit((x % radix) as u32, radix as u32).unwrap_or('0');
                digits.push(if upper { d.to_ascii_uppercase() } else { d });
                x /= radix;
                if x == 0 {
                    break;
                }
            }
            let body: String = digits.iter().rev().collect();
            // Too many for the width: longer, so a length CHECK refuses it.
            let pad = width.saturating_sub(1).saturating_sub(body.len());
            format!("{marker}{}{body}", "0".repeat(pad))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_values_do_not_repeat() {
        let mut rng = Rng::new(3);
        let ints: Vec<String> = (0..3)
            .map(|n| value(&FreshKind::Int { base: 41, step: 1 }, n, &mut rng))
            .collect();
        assert_eq!(ints, ["41", "42", "43"]);
        let down = value(&FreshKind::Int { base: 0, step: -1 }, 2, &mut rng);
        assert_eq!(down, "-2");
        let a = value(&FreshKind::Uuid, 7, &mut rng);
        let b = value(&FreshKind::Uuid, 8, &mut rng);
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.ends_with("000000000007"), "{a}");
        let text = |shape| value(&FreshKind::Text(shape), 5, &mut Rng::new(1));
        assert_eq!(text(TextShape::Dashed), "planck-5");
        assert_eq!(text(TextShape::Email), "planck-5@example.invalid");
        assert_eq!(text(TextShape::Digits), "9000000005");
        let fixed = |width, alphabet, n| {
            value(
                &FreshKind::Text(TextShape::Fixed { width, alphabet }),
                n,
                &mut Rng::new(1),
            )
        };
        assert_eq!(fixed(8, Alphabet::Lower36, 35), "z000000z");
        assert_eq!(fixed(8, Alphabet::Upper36, 36), "Z0000010");
        assert_eq!(fixed(4, Alphabet::Decimal, 7), "9007");
        // Distinct counters never meet in one width.
        assert_ne!(
            fixed(3, Alphabet::Lower36, 1),
            fixed(3, Alphabet::Lower36, 36 * 35 + 1)
        );
        // Past the width's room the value is longer, for a length CHECK to refuse.
        assert_eq!(fixed(3, Alphabet::Decimal, 1234).len(), 5);
        assert!(is_insert("  insert INTO t VALUES (1)"));
        assert!(!is_insert("UPDATE t SET a = 1"));
    }
}
