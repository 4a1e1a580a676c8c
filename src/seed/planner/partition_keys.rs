//! Partition keys: values inside the partitions' bounds (every level of a
//! multi-level partitioning), so every row routes to a partition.

use crate::catalog::schema::{PartitionBounds, TypeKind};
use crate::error::Result;
use crate::seed::columns::{T_HI, T_LO, uniform_choice};
use crate::seed::row::generate::{Gen, Val};
use crate::seed::row::plan::TablePlan;
use crate::seed::spec;

use super::context::seed_err;

/// Phase: a partition key the spec leaves alone gets values inside the
/// partitions' bounds.
pub(super) fn partition_keys(
    table: &crate::catalog::schema::Table,
    display: &str,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    if let Some(part) = &table.partitioning {
        key_in_bounds(table, display, part, tp, assigned)?;
    }
    sub_partition_keys(table, display, tp, assigned)
}

/// A partition key's generator inside its partitions' bounds.
fn key_in_bounds(
    table: &crate::catalog::schema::Table,
    display: &str,
    part: &crate::catalog::schema::Partitioning,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    if !assigned[part.col] {
        let kind = &table.columns[part.col].kind;
        let conv = |s: &str| -> Option<i64> {
            if kind.is_time() {
                spec::parse_timestamp(s)
            } else {
                s.parse().ok()
            }
        };
        match &part.bounds {
            PartitionBounds::Range(rs) => {
                let ranges: Vec<(i64, i64)> = rs
                    .iter()
                    .filter_map(|(a, b)| {
                        let a = a.as_deref().map_or(Some(T_LO), conv)?;
                        let b = b.as_deref().map_or(Some(T_HI), conv)?;
                        (b > a).then_some((a, b))
                    })
                    .collect();
                if ranges.is_empty() {
                    return Err(seed_err(
                        display,
                        Some(&table.columns[part.col].name),
                        "its partitions' bounds are beyond what planck understands",
                        "give the partition key a `range` in the spec",
                    ));
                }
                tp.cols[part.col].generator = if kind.is_time() {
                    Gen::Ranges(ranges)
                } else {
                    let (a, b) = ranges[0];
                    Gen::Int { lo: a, hi: b - 1 }
                };
                assigned[part.col] = true;
            }
            PartitionBounds::List(vals) => {
                let typed: Option<Vec<Val>> = vals.iter().map(|v| list_value(kind, v)).collect();
                let Some(typed) = typed else {
                    return Err(seed_err(
                        display,
                        Some(&table.columns[part.col].name),
                        format!(
                            "its list partitions' values ({}) are beyond what planck reads for {}",
                            vals.join(", "),
                            table.columns[part.col].type_name
                        ),
                        "give the partition key `values` in the spec",
                    ));
                };
                tp.cols[part.col].generator = uniform_choice(typed);
                assigned[part.col] = true;
            }
            PartitionBounds::Any => {}
        }
    }
    Ok(())
}

/// A list partition's value (as the catalog prints it, unquoted) as the
/// value of a column of `kind`, or None when planck cannot read it. Each
/// value is typed as the encoder writes that kind: a boolean's `true` as a
/// text would be written as `false` (every row in one partition, whose
/// own unique keys then repeat), a date's text as the year 2000.
fn list_value(kind: &TypeKind, v: &str) -> Option<Val> {
    Some(match kind {
        TypeKind::Bool => match v.to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "on" | "1" => Val::Bool(true),
            "false" | "f" | "no" | "off" | "0" => Val::Bool(false),
            _ => return None,
        },
        k if k.is_int() => Val::Int(v.parse().ok()?),
        k if k.is_time() => Val::Micros(spec::parse_timestamp(v)?),
        TypeKind::Numeric => {
            let (int, frac) = v.split_once('.').unwrap_or((v, ""));
            let digits: i128 = format!("{int}{frac}").parse().ok()?;
            Val::Dec(digits, frac.len() as u32)
        }
        TypeKind::Float4 | TypeKind::Float8 => Val::Float(v.parse().ok()?),
        _ => Val::Text(v.to_string()),
    })
}

/// Phase (multi-level partitioning): a key of partitions partitioned in
/// turn, that the spec and the top level leave alone, gets values every
/// such partition routes: the labels all their lists share, or their
/// ranges when they agree. (A partition that is not partitioned again takes
/// any value.)
fn sub_partition_keys(
    table: &crate::catalog::schema::Table,
    display: &str,
    tp: &mut TablePlan,
    assigned: &mut [bool],
) -> Result<()> {
    let mut cols: Vec<usize> = table.sub_partitions.iter().map(|p| p.col).collect();
    cols.sort_unstable();
    cols.dedup();
    for c in cols {
        if assigned[c] {
            continue;
        }
        let col = &table.columns[c];
        let levels: Vec<&PartitionBounds> = table
            .sub_partitions
            .iter()
            .filter(|p| p.col == c && !matches!(p.bounds, PartitionBounds::Any))
            .map(|p| &p.bounds)
            .collect();
        let disagree = || {
            seed_err(
                display,
                Some(&col.name),
                "its sub-partitions' bounds have no value in common",
                format!(
                    "give {} a generator in the spec whose values every sub-partition accepts",
                    col.name
                ),
            )
        };
        let Some(first) = levels.first() else {
            continue;
        };
        match first {
            PartitionBounds::List(_) => {
                let mut common: Vec<String> = match first {
                    PartitionBounds::List(v) => v.clone(),
                    _ => Vec::new(),
                };
                for b in &levels[1..] {
                    let PartitionBounds::List(v) = b else {
                        return Err(disagree());
                    };
                    common.retain(|x| v.contains(x));
                }
                if common.is_empty() {
                    return Err(disagree());
                }
                let sub = crate::catalog::schema::Partitioning {
                    col: c,
                    bounds: PartitionBounds::List(common),
                    strategy: 'l',
                    empty: false,
                };
                key_in_bounds(table, display, &sub, tp, assigned)?;
            }
            PartitionBounds::Range(r) => {
                if levels
                    .iter()
                    .any(|b| !matches!(b, PartitionBounds::Range(x) if x == r))
                {
                    return Err(disagree());
                }
                let sub = crate::catalog::schema::Partitioning {
                    col: c,
                    bounds: (*first).clone(),
                    strategy: 'r',
                    empty: false,
                };
                key_in_bounds(table, display, &sub, tp, assigned)?;
            }
            PartitionBounds::Any => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_values_are_typed_as_their_column() {
        assert_eq!(list_value(&TypeKind::Bool, "true"), Some(Val::Bool(true)));
        assert_eq!(list_value(&TypeKind::Bool, "false"), Some(Val::Bool(false)));
        assert_eq!(list_value(&TypeKind::Bool, "maybe"), None);
        assert_eq!(list_value(&TypeKind::Int4, "7"), Some(Val::Int(7)));
        assert_eq!(list_value(&TypeKind::Int4, "x"), None);
        assert_eq!(
            list_value(&TypeKind::Date, "2024-01-02"),
            spec::parse_timestamp("2024-01-02").map(Val::Micros)
        );
        assert_eq!(
            list_value(&TypeKind::Numeric, "-1.25"),
            Some(Val::Dec(-125, 2))
        );
        assert_eq!(
            list_value(&TypeKind::Text, "eu"),
            Some(Val::Text("eu".to_string()))
        );
    }
}
