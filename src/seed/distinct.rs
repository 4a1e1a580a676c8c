//! Row r's own value of a type family, for a unique key whose column's
//! generator cannot be made unique itself ([`crate::seed::columns::make_unique`]
//! covers text, uuids, timestamps and integers): a time of day, an
//! interval, an address, a network, a JSON document, a text search vector,
//! a range or an array of a key-like element. Distinct by construction, so
//! a unique index over such a column (`UNIQUE (ip, user_id)`, a unique
//! `jsonb`) holds when the rows are generated instead of failing when it
//! is re-created.

use crate::catalog::schema::TypeKind;
use crate::seed::columns::{DAY, T_LO, make_unique};
use crate::seed::row::generate::Gen;

/// The distinct generator for a column of `kind` whose generator is `g`,
/// over `rows` rows; None when `g` is not the type's own generator (a
/// CHECK's choice keeps its values, a spec its generator) or the type has
/// fewer values than the rows.
pub(crate) fn distinct_gen(kind: &TypeKind, g: &Gen, rows: u64) -> Option<Gen> {
    let rows = rows.max(1);
    match g {
        Gen::Nullable { p, inner } => Some(Gen::Nullable {
            p: *p,
            inner: Box::new(distinct_gen(kind, inner, rows)?),
        }),
        Gen::TimeOfDay
        | Gen::Interval
        | Gen::Inet
        | Gen::TsVec
        | Gen::Json(_)
        | Gen::Array { .. } => of_kind(kind, rows),
        _ => None,
    }
}

fn of_kind(kind: &TypeKind, rows: u64) -> Option<Gen> {
    let n = i64::try_from(rows).ok()?;
    Some(match kind {
        // Spread over the day, a second apart up to 86,400 rows.
        TypeKind::Time | TypeKind::TimeTz if n <= DAY => Gen::Sequence {
            start: 0,
            step: (DAY / n).clamp(1, 1_000_000),
        },
        // One minute, then a second more each row.
        TypeKind::Interval => Gen::Sequence {
            start: 60_000_000,
            step: 1_000_000,
        },
        // Distinct addresses as `make_unique` draws them (a network: /32 each).
        TypeKind::Inet | TypeKind::Cidr => {
            Some(make_unique(Gen::Inet, rows)).filter(Gen::is_unique)?
        }
        TypeKind::Jsonb => Gen::Json(vec![("n".into(), Gen::Sequence { start: 1, step: 1 })]),
        // One lexeme, the row's number.
        TypeKind::TsVector => Gen::IntUnique { lo: 1, n: rows },
        TypeKind::Range(sub) => slot(sub)?,
        TypeKind::MultiRange(sub) => Gen::Array {
            elem: Box::new(slot(sub)?),
            min: 1,
            max: 1,
        },
        // One element, the row's own (the encoder writes a value as a
        // one-element array).
        TypeKind::Array(elem, _) => match &**elem {
            e if e.is_int()
                || matches!(
                    e,
                    TypeKind::Text | TypeKind::Numeric | TypeKind::Uuid | TypeKind::Float8
                ) =>
            {
                Gen::IntUnique { lo: 1, n: rows }
            }
            TypeKind::Date | TypeKind::Timestamp | TypeKind::Timestamptz => Gen::Sequence {
                start: T_LO,
                step: DAY,
            },
            _ => return None,
        },
        _ => return None,
    })
}

/// Ranges that never meet: row r's `[start + r·width, start + (r + 1)·width)`.
fn slot(sub: &TypeKind) -> Option<Gen> {
    Some(match sub {
        s if s.is_int() || *s == TypeKind::Numeric => Gen::Slot {
            start: 1,
            width: 1,
            micros: false,
        },
        TypeKind::Date => Gen::Slot {
            start: T_LO,
            width: DAY,
            micros: true,
        },
        TypeKind::Timestamp | TypeKind::Timestamptz => Gen::Slot {
            start: T_LO,
            width: 3_600_000_000,
            micros: true,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_types_own_generator_is_replaced() {
        let choice = Gen::Choice {
            vals: Vec::new(),
            cum: Vec::new(),
        };
        assert!(distinct_gen(&TypeKind::Time, &choice, 10).is_none());
        assert!(distinct_gen(&TypeKind::Time, &Gen::TimeOfDay, 10).is_some());
        assert!(distinct_gen(&TypeKind::Inet, &Gen::Inet, 1 << 33).is_none());
        let nullable = Gen::Nullable {
            p: 0.5,
            inner: Box::new(Gen::Inet),
        };
        assert!(matches!(
            distinct_gen(&TypeKind::Inet, &nullable, 10),
            Some(Gen::Nullable { .. })
        ));
    }
}
