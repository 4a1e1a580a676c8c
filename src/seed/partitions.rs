//! Partitions for partitioned tables that have none (issue 30, point 3).
//!
//! Schemas that create their partitions at run time (hatchet's `v1_task`,
//! partitioned by range on `inserted_at`, gets today's partition from a
//! cron job) leave the table without any after the migrations: no row can
//! go in. By default planck creates partitions that cover what it
//! generates, before the load: a range over time gets one partition per
//! calendar month of the values' span (per quarter, year, decade or
//! century when months would make more than [`MAX_TIME_PARTS`]: a span of
//! a century of timestamps is not 1,200 tables), a range over integers four even
//! key ranges, a list one partition per value (up to [`MAX_LIST`]), a hash
//! modulus 4; a range over any other type, or a NULL key, a DEFAULT
//! partition. Each one is recorded in `planck.created_partitions`, named in
//! the summary, and `planck seed --restore --forget TABLE` drops them.
//! `--no-create-partitions` turns this off (the table is then reported as
//! not seeded: no partition of it holds its rows).

use std::collections::BTreeSet;

use tokio_postgres::Client;

use crate::catalog::schema::Schema;
use crate::db::{quote_ident, quote_literal};
use crate::error::{Error, Result};
use crate::seed::row::generate::Val;
use crate::seed::row::plan::SeedPlan;

/// More distinct list values than this: a DEFAULT partition instead.
pub const MAX_LIST: usize = 64;

/// At most this many partitions over a time range: the period widens
/// (month, quarter, year, decade, century) until the span fits.
pub const MAX_TIME_PARTS: i64 = 120;

/// How a time range's partitions are cut, for the summary: `one per month`.
fn time_period(vals: &[Val]) -> &'static str {
    let months: Vec<i64> = vals
        .iter()
        .filter_map(|v| match v {
            Val::Micros(m) => {
                let (y, mo) = month_of(*m);
                Some(y * 12 + mo - 1)
            }
            _ => None,
        })
        .collect();
    let (lo, hi) = (
        months.iter().min().copied().unwrap_or(0),
        months.iter().max().copied().unwrap_or(0),
    );
    match period_months(lo, hi) {
        1 => "one per month",
        3 => "one per quarter",
        12 => "one per year",
        120 => "one per decade",
        _ => "one per century or wider",
    }
}

/// The period, in months, of the partitions over a time range spanning the
/// months `lo..=hi` (counted from year 0).
fn period_months(lo: i64, hi: i64) -> i64 {
    [1, 3, 12, 120, 1200]
        .into_iter()
        .find(|s| hi.div_euclid(*s) - lo.div_euclid(*s) < MAX_TIME_PARTS)
        .unwrap_or(12_000)
}

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
                let index = |(y, m): (i64, i64)| y * 12 + m - 1;
                let lo = index(month_of(*micros.iter().min().unwrap_or(&0)));
                let hi = index(month_of(*micros.iter().max().unwrap_or(&0)));
                let step = period_months(lo, hi);
                let zone = if tz { "+00" } else { "" };
                let mut at = lo.div_euclid(step) * step;
                while at <= hi {
                    let (y, m) = (at.div_euclid(12), at.rem_euclid(12) + 1);
                    let next = at + step;
                    let (ny, nm) = (next.div_euclid(12), next.rem_euclid(12) + 1);
                    out.push(part(
                        &format!("{y:04}{m:02}"),
                        format!(
                            "FROM ('{y:04}-{m:02}-01 00:00:00{zone}') TO ('{ny:04}-{nm:02}-01 00:00:00{zone}')"
                        ),
                    ));
                    at = next;
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
pub async fn create_missing(c: &Client, cat: &Schema, plan: &SeedPlan) -> Result<Vec<String>> {
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
            'r' if vals.iter().any(|v| matches!(v, Val::Micros(_))) => time_period(&vals),
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

    /// A span of decades gets wider periods, never more than
    /// MAX_TIME_PARTS partitions, and they still cover every value.
    #[test]
    fn a_long_time_span_gets_wider_partitions() {
        let from = crate::seed::spec::parse_timestamp("1901-05-03").unwrap();
        let to = crate::seed::spec::parse_timestamp("2026-11-30").unwrap();
        let p = layout("t", 'r', false, &[Val::Micros(from), Val::Micros(to)]);
        assert!(p.len() as i64 <= MAX_TIME_PARTS, "{}", p.len());
        assert_eq!(
            p[0].bound,
            "FROM ('1900-01-01 00:00:00') TO ('1910-01-01 00:00:00')"
        );
        assert_eq!(
            p.last().unwrap().bound,
            "FROM ('2020-01-01 00:00:00') TO ('2030-01-01 00:00:00')"
        );
        // Ten years: months; fifteen: quarters; forty: years.
        assert_eq!(period_months(2016 * 12, 2025 * 12 + 11), 1);
        assert_eq!(period_months(2011 * 12, 2025 * 12 + 11), 3);
        assert_eq!(period_months(1986 * 12, 2025 * 12 + 11), 12);
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
