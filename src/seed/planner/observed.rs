//! What the recording observed (`[observed]` of the queries file): the
//! literals the application compared a column with, and its `IS NULL`
//! tests, followed where no constraint decides the column.

use crate::catalog::schema::TypeKind;
use crate::seed::row::generate::{Gen, Val};
use crate::seed::row::plan::TablePlan;

/// The NULL share of one the recorded application tests with `IS NULL`:
/// rare, as such columns usually are (a `deleted_at`, an optional link),
/// so the plans of those tests meet the selectivity production gives them.
pub const OBSERVED_NULL_SHARE: f64 = 0.01;

/// How `[observed]` names a column: `schema.table.column`.
pub(super) fn observed_key(
    table: &crate::catalog::schema::Table,
    col: &crate::catalog::schema::Column,
) -> String {
    format!("{}.{}.{}", table.schema, table.name, col.name)
}

/// The recorded literals of column `c` as a weighted choice (each drawn in
/// proportion to how often the application compared the column with it),
/// for a column no CHECK (the table's or its domain's) and no unique key
/// constrains: a CHECK's own values win, since a recorded literal the CHECK
/// refuses could never be stored, and a unique column cannot repeat a few
/// values. Literals the type cannot hold (an enum's unknown label, text
/// past `varchar(n)`, a non-number in an integer column) are left out;
/// None when none is left or the type is not text, enum or integer.
pub(super) fn observed_gen(
    table: &crate::catalog::schema::Table,
    c: usize,
    o: &crate::queries::ObservedColumn,
    in_unique: bool,
) -> Option<Gen> {
    let col = &table.columns[c];
    let checked = !col.domain_checks.is_empty() || table.checks.iter().any(|k| k.cols.contains(&c));
    let typed = matches!(col.kind, TypeKind::Text | TypeKind::Enum(_)) || col.kind.is_int();
    if checked || in_unique || !typed {
        return None;
    }
    let (vals, weights): (Vec<Val>, Vec<f64>) = o
        .values
        .iter()
        .filter(|(lit, n)| **n > 0 && col.max_len.is_none_or(|m| lit.chars().count() <= m))
        .filter(|(lit, _)| match &col.kind {
            TypeKind::Enum(labels) => labels.contains(lit),
            _ => true,
        })
        .filter_map(|(lit, n)| {
            let v = if col.kind.is_int() {
                let i: i64 = lit.trim().parse().ok()?;
                let max = col.kind.int_max();
                if i > max || i < -max - 1 {
                    return None;
                }
                Val::Int(i)
            } else {
                Val::Text(lit.clone())
            };
            Some((v, *n as f64))
        })
        .unzip();
    if vals.is_empty() {
        return None;
    }
    Some(Gen::weighted_choice(vals, &weights))
}

/// Phase: a nullable foreign key whose column the recorded application
/// tested with `IS NULL` (an optional parent: `parent_id IS NULL`) is NULL
/// in 1 % of the rows instead of 10 %, like the other columns it tested.
pub(super) fn observed_fk_nulls(
    table: &crate::catalog::schema::Table,
    observed: &crate::queries::Observed,
    tp: &mut TablePlan,
    followed: &mut Vec<String>,
) {
    for f in tp.fks.iter_mut().filter(|f| f.null_p > 0.0) {
        let tested = f.cols.iter().find(|&&c| {
            let key = observed_key(table, &table.columns[c]);
            observed.columns.get(&key).is_some_and(|o| o.null_tests > 0)
        });
        if let Some(&c) = tested {
            f.null_p = OBSERVED_NULL_SHARE;
            followed.push(format!(
                "{}: NULL share 1 %",
                observed_key(table, &table.columns[c])
            ));
        }
    }
}
