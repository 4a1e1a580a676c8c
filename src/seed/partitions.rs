//! Partitions for partitioned tables that have none (issue 30, point 3).
//!
//! Schemas that create their partitions at run time (hatchet's `v1_task`,
//! partitioned by range on `inserted_at`, gets today's partition from a
//! cron job) leave the table without any after the migrations: no row can
//! go in. By default planck creates partitions that cover what it
//! generates, before the load: a range over time gets one partition per
//! calendar month of the values' span, a range over integers four even
//! key ranges, a list one partition per value (up to [`MAX_LIST`]), a hash
//! modulus 4; a range over any other type, or a NULL key, a DEFAULT
//! partition. Each one is recorded in `planck.created_partitions`, named in
//! the summary, and `planck seed --restore --forget TABLE` drops them.
//! `--no-create-partitions` turns this off (the table is then reported as
//! not seeded: no partition of it holds its rows).

use std::collections::BTreeSet;

use tokio_postgres::Client;

use crate::catalog::schema::Catalog;
use crate::db::{quote_ident, quote_literal};
use crate::error::{Error, Result};
use crate::seed::generate::Val;
use crate::seed::layout::Plan;

/// More distinct list values than this: a DEFAULT partition instead.
pub const MAX_LIST: usize = 64;

/// planck's record of the partitions it created.
pub const CREATED: &str = "planck.created_partitions";

/// One partition to create: its name and its `FOR VALUES ...` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub bound: String,
}

const DAY: i64 = 86_400_000_000;

/// (year, month) of microseconds since 2000-01-01.
fn month_of(micros: i64) -> (i64, i64) {
    let days = micros.div_euclid(DAY) + crate::seed::spec::days_from_civil(2000, 1, 1);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m)
}

/// A partition name: the table's name (cut to fit 63 bytes) and a suffix.
fn part_name(table: &str, suffix: &str) -> String {
    let room = 63 - suffix.len() - "_planck_".len();
    let mut base = table.to_string();
    while base.len() > room {
        base.pop();
    }
    format!("{base}_planck_{suffix}")
}

/// The partitions that hold `vals`, the key values of a table partitioned
/// by `strategy` (`r`, `l`, `h`) on a column of kind `time` (timestamps,
/// dates) or an integer.
pub fn layout(table: &str, strategy: char, tz: bool, vals: &[Val]) -> Vec<Part> {
    let part = |suffix: &str, bound: String| Part {
        name: part_name(table, suffix),
        bound,
    };
    let default = || part("default", "DEFAULT".to_string());
    if strategy == 'h' {
        return (0..4)
            .map(|r| part(&format!("h{r}"), format!("WITH (MODULUS 4, REMAINDER {r})")))
            .collect();
    }
    let nulls = vals.contains(&Val::Null);
    let set: Vec<&Val> = vals.iter().filter(|v| **v != Val::Null).collect();
    let mut out = Vec::new();
    match strategy {
        'r' => {
            let micros: Vec<i64> = set
                .iter()
                .filter_map(|v| match v {
                    Val::Micros(m) => Some(*m),
                    _ => None,
                })
                .collect();
            let ints: Vec<i64> = set
                .iter()
                .filter_map(|v| match v {
                    Val::Int(i) => Some(*i),
                    _ => None,
                })
                .collect();
            if !micros.is_empty() && micros.len() == set.len() {
                let lo = month_of(*micros.iter().min().unwrap_or(&0));
                let hi = month_of(*micros.iter().max().unwrap_or(&0));
                let zone = if tz { "+00" } else { "" };
                let (mut y, mut m) = lo;
                while (y, m) <= hi {
                    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                    out.push(part(
                        &format!("{y:04}{m:02}"),
                        format!(
                            "FROM ('{y:04}-{m:02}-01 00:00:00{zone}') TO ('{ny:04}-{nm:02}-01 00:00:00{zone}')"
                        ),
                    ));
                    (y, m) = (ny, nm);
                }
            } else if !ints.is_empty() && ints.len() == set.len() {
                let lo = i128::from(*ints.iter().min().unwrap_or(&0));
                let hi = i128::from(*ints.iter().max().unwrap_or(&0)) + 1;
                let step = ((hi - lo) / 4).max(1);
                let mut from = lo;
                let mut i = 0;
                while from < hi {
                    let to = if i == 3 { hi } else { (from + step).min(hi) };
                    out.push(part(&format!("r{i}"), format!("FROM ({from}) TO ({to})")));
                    from = to;
                    i += 1;
                }
            } else if !set.is_empty() {
                out.push(default());
            }
            if nulls && !out.iter().any(|p| p.bound == "DEFAULT") {
                out.push(default());
            }
        }
        _ => {
            let lits: BTreeSet<String> = set.iter().filter_map(|v| literal(v)).collect();
            if lits.len() > MAX_LIST || set.iter().any(|v| literal(v).is_none()) {
                out.push(default());
            } else {
                for (i, l) in lits.iter().enumerate() {
                    out.push(part(&format!("v{i}"), format!("IN ({l})")));
                }
            }
            if nulls {
                out.push(part("null", "IN (NULL)".to_string()));
            }
        }
    }
    out
}

/// A list value as an SQL literal (None: not one planck writes).
fn literal(v: &Val) -> Option<String> {
    Some(match v {
        Val::Int(i) => i.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Text(s) => quote_literal(s),
        _ => return None,
    })
}

/// Creates the partitions of every planned table that has none (see the
/// module docs); `schema.table: N partition(s) (how)` for each.
pub async fn create_missing(c: &Client, cat: &Catalog, plan: &Plan) -> Result<Vec<String>> {
    let mut made = Vec::new();
    for (t, tp) in plan.tables.iter().enumerate() {
        let table = &cat.tables[tp.cat];
        let Some(part) = table.partitioning.as_ref().filter(|p| p.empty) else {
            continue;
        };
        if tp.rows == 0 {
            continue;
        }
        let col = &table.columns[part.col];
        let vals: Vec<Val> = if part.strategy == 'h' {
            Vec::new()
        } else {
            plan.ctxs(t, 0..tp.rows)
                .map(|ctx| plan.value(t, part.col, &ctx))
                .collect()
        };
        let tz = matches!(col.kind, crate::catalog::schema::TypeKind::Timestamptz);
        let parts = layout(&table.name, part.strategy, tz, &vals);
        if parts.is_empty() {
            continue;
        }
        // Shards of one seed compute the same partitions: one at a time,
        // and a partition another shard made is left as it is.
        let mut sql = String::from(
            "BEGIN;\nSELECT pg_advisory_xact_lock(hashtext('planck seed partitions'));\n",
        );
        for p in &parts {
            sql.push_str(&format!(
                "CREATE TABLE IF NOT EXISTS {}.{} PARTITION OF {} FOR VALUES {};\n",
                quote_ident(&table.schema),
                quote_ident(&p.name),
                tp.qualified,
                p.bound
            ));
            sql.push_str(&format!(
                "INSERT INTO {CREATED} (parent, partition) VALUES ({}, {}) ON CONFLICT DO NOTHING;\n",
                quote_literal(&format!("{}.{}", table.schema, table.name)),
                quote_literal(&format!("{}.{}", table.schema, p.name)),
            ));
        }
        sql.push_str("COMMIT;");
        if let Err(e) = c.batch_execute(&sql).await {
            let _ = c.batch_execute("ROLLBACK").await;
            return Err(Error::db(
                format!("creating the partitions of {}", tp.display),
                e,
            ));
        }
        let how = match part.strategy {
            'h' => "hash, modulus 4",
            'r' if vals.iter().any(|v| matches!(v, Val::Micros(_))) => "one per month",
            'r' => "key ranges",
            _ => "one per value",
        };
        made.push(format!(
            "{}: {} partition(s) ({how})",
            tp.display,
            parts.len()
        ));
    }
    Ok(made)
}

/// Creates `planck.created_partitions` when missing.
pub async fn ensure_table(c: &Client) -> Result<()> {
    c.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {};
         CREATE TABLE IF NOT EXISTS {CREATED} (
             parent text NOT NULL,
             partition text PRIMARY KEY,
             created_at timestamptz NOT NULL DEFAULT now())",
        crate::bookkeeping::SCHEMA
    ))
    .await
    .map_err(|e| Error::db("creating planck.created_partitions", e))
}

/// `--forget NAME`: drops the partitions planck created of table NAME
/// (`schema.table` or a table of the search path) or the one partition
/// NAME; the names dropped.
pub async fn forget(c: &Client, name: &str) -> Result<Vec<String>> {
    let exists: bool = c
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&CREATED])
        .await
        .map_err(|e| Error::db("reading planck.created_partitions", e))?
        .get(0);
    if !exists {
        return Ok(Vec::new());
    }
    let rows = c
        .query(
            &format!(
                "SELECT partition FROM {CREATED}
                  WHERE $1 IN (parent, partition, split_part(parent, '.', 2), split_part(partition, '.', 2))
                  ORDER BY partition"
            ),
            &[&name],
        )
        .await
        .map_err(|e| Error::db("reading planck.created_partitions", e))?;
    let mut dropped = Vec::new();
    for r in rows {
        let p: String = r.get(0);
        let (schema, rel) = p.split_once('.').unwrap_or(("public", p.as_str()));
        c.batch_execute(&format!(
            "BEGIN; DROP TABLE IF EXISTS {}.{}; DELETE FROM {CREATED} WHERE partition = {}; COMMIT;",
            quote_ident(schema),
            quote_ident(rel),
            quote_literal(&p)
        ))
        .await
        .map_err(|e| Error::db(format!("dropping partition {p}"), e))?;
        dropped.push(p);
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_read_from_micros() {
        assert_eq!(month_of(0), (2000, 1));
        assert_eq!(month_of(31 * DAY - 1), (2000, 1));
        assert_eq!(month_of(31 * DAY), (2000, 2));
        assert_eq!(month_of(-1), (1999, 12));
    }

    /// hatchet's `v1_task` (range on `inserted_at timestamptz`): one
    /// partition per month from the first value's to the last's, bounds in UTC.
    #[test]
    fn a_time_range_gets_a_partition_per_month() {
        let jan = crate::seed::spec::parse_timestamp("2024-01-15").unwrap();
        let mar = crate::seed::spec::parse_timestamp("2024-03-02").unwrap();
        let p = layout("v1_task", 'r', true, &[Val::Micros(mar), Val::Micros(jan)]);
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "v1_task_planck_202401",
                "v1_task_planck_202402",
                "v1_task_planck_202403"
            ]
        );
        assert_eq!(
            p[2].bound,
            "FROM ('2024-03-01 00:00:00+00') TO ('2024-04-01 00:00:00+00')"
        );
    }

    /// hatchet's `v1_task_events_olap_tmp` (hash on a bigint): modulus 4.
    #[test]
    fn hash_gets_modulus_four_and_lists_one_per_value() {
        let h = layout("t", 'h', false, &[]);
        assert_eq!(h.len(), 4);
        assert_eq!(h[3].bound, "WITH (MODULUS 4, REMAINDER 3)");
        let l = layout(
            "t",
            'l',
            false,
            &[
                Val::Text("b".into()),
                Val::Text("a".into()),
                Val::Null,
                Val::Text("a".into()),
            ],
        );
        let bounds: Vec<&str> = l.iter().map(|p| p.bound.as_str()).collect();
        assert_eq!(bounds, ["IN ('a')", "IN ('b')", "IN (NULL)"]);
    }

    #[test]
    fn integer_ranges_cover_every_key_in_four() {
        let vals: Vec<Val> = (1..=10).map(Val::Int).collect();
        let p = layout("t", 'r', false, &vals);
        let bounds: Vec<&str> = p.iter().map(|p| p.bound.as_str()).collect();
        assert_eq!(
            bounds,
            [
                "FROM (1) TO (3)",
                "FROM (3) TO (5)",
                "FROM (5) TO (7)",
                "FROM (7) TO (11)"
            ]
        );
        assert!(part_name(&"x".repeat(80), "default").len() <= 63);
    }
}
