//! Fresh keys for INSERTs: a parameter inserted into a primary key, a
//! single-column unique key or an identity column must not repeat a value
//! sampled from the data (a unique violation every time) nor one another
//! execution has in flight (two inserts of one key wait on each other: a
//! fake hotspot). Such parameters get values past the data instead, drawn
//! from one counter the whole run shares, so no two executions, on any
//! client, get the same one.
//!
//! Integers start past the column's maximum; uuids are version-4 shaped with
//! the counter in their last 48 bits; text is `planck-<n>`. A column of
//! another type keeps its sampled value, and CHECK constraints are not read.

use std::collections::HashMap;

use tokio_postgres::Client;

use super::exec::Rng;
use super::workload::{BindSource, Workload};
use crate::db::quote_ident;

/// How a fresh value of one column is made.
#[derive(Debug, Clone, PartialEq)]
pub enum FreshKind {
    /// `base + n`: `base` is past the column's largest value.
    Int(i64),
    Uuid,
    Text,
}

/// (statement index, `$n`) -> how its fresh values are made.
pub type FreshKeys = HashMap<(usize, u32), FreshKind>;

const COLUMN: &str = "SELECT format_type(a.atttypid, a.atttypmod), \
       a.attidentity <> '' OR EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid \
                                       AND i.indisunique AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum) \
     FROM pg_attribute a \
    WHERE a.attrelid = $1::text::regclass AND a.attname = $2 AND NOT a.attisdropped";

fn is_insert(query: &str) -> bool {
    query
        .trim_start()
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("insert"))
}

/// Finds the INSERT parameters that need fresh values.
pub async fn plan(client: &Client, w: &Workload) -> Result<FreshKeys, tokio_postgres::Error> {
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
                let kind = column_kind(client, table, column).await?;
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
) -> Result<Option<FreshKind>, tokio_postgres::Error> {
    let qualified: Vec<String> = table.split('.').map(quote_ident).collect();
    let qualified = qualified.join(".");
    let Ok(Some(row)) = client.query_opt(COLUMN, &[&qualified, &column]).await else {
        // Not a table here (a CTE's name): nothing to keep fresh.
        return Ok(None);
    };
    let (ty, unique): (String, bool) = (row.get(0), row.get(1));
    if !unique {
        return Ok(None);
    }
    Ok(match ty.as_str() {
        "smallint" | "integer" | "bigint" => {
            let max: i64 = client
                .query_one(
                    &format!(
                        "SELECT coalesce(max({})::int8, 0) FROM {qualified}",
                        quote_ident(column)
                    ),
                    &[],
                )
                .await?
                .get(0);
            Some(FreshKind::Int(max + 1))
        }
        "uuid" => Some(FreshKind::Uuid),
        "text" => Some(FreshKind::Text),
        t if t.starts_with("character varying") => Some(FreshKind::Text),
        _ => None,
    })
}

/// The `n`th fresh value of a column.
pub fn value(kind: &FreshKind, n: u64, rng: &mut Rng) -> String {
    match kind {
        FreshKind::Int(base) => (base + n as i64).to_string(),
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
        FreshKind::Text => format!("planck-{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_values_do_not_repeat() {
        let mut rng = Rng::new(3);
        let ints: Vec<String> = (0..3)
            .map(|n| value(&FreshKind::Int(41), n, &mut rng))
            .collect();
        assert_eq!(ints, ["41", "42", "43"]);
        let a = value(&FreshKind::Uuid, 7, &mut rng);
        let b = value(&FreshKind::Uuid, 8, &mut rng);
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.ends_with("000000000007"), "{a}");
        assert_eq!(value(&FreshKind::Text, 5, &mut rng), "planck-5");
        assert!(is_insert("  insert INTO t VALUES (1)"));
        assert!(!is_insert("UPDATE t SET a = 1"));
    }
}
