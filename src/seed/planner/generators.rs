//! Column generators outside keys: the spec's (checked against the
//! column's type), and for every column nothing else filled its type's
//! default, NULL now and then, or an error naming the column.

use std::collections::HashMap;

use crate::catalog::schema::TypeKind;
use crate::error::Result;
use crate::seed::check_expr::ColFacts;
use crate::seed::columns::{Ctx, DAY, default_gen, default_is_side_effect_free, text_by_name};
use crate::seed::row::generate::Gen;
use crate::seed::row::plan::TablePlan;
use crate::seed::spec::{self, SpecFile};

use super::context::{Resolved, seed_err};
use super::observed::{OBSERVED_NULL_SHARE, observed_gen, observed_key};

/// The NULL share of a nullable column nothing else decided.
const DEFAULT_NULL_SHARE: f64 = 0.1;
/// Phase: every column nothing else filled gets its type's default
/// generator (after another column, NULL now and then, or an error).
pub(super) fn remaining_columns(
    table: &crate::catalog::schema::Table,
    display: &str,
    facts: &[ColFacts],
    tp: &mut TablePlan,
    assigned: &[bool],
    (observed, followed): (&crate::queries::Observed, &mut Vec<String>),
) -> Result<()> {
    // Everything else.
    for (c, col) in table.columns.iter().enumerate() {
        if col.generated {
            tp.cols[c].include = false;
            continue;
        }
        if assigned[c] {
            continue;
        }
        if let Some((other, strict)) = facts[c].after.first().cloned()
            && let Some(oc) = table.column(&other)
        {
            let fallback = default_gen(table, col, &facts[c]).unwrap_or(Gen::Null);
            tp.cols[c].generator = Gen::After {
                col: oc,
                min: if strict { 1_000_000 } else { 0 },
                max: 30 * DAY,
                fallback: Box::new(fallback),
            };
            continue;
        }
        let in_unique = table.uniques.iter().any(|u| u.cols.contains(&c));
        let seen = observed.columns.get(&observed_key(table, col));
        let recorded = seen.and_then(|o| observed_gen(table, c, o, in_unique));
        let values_followed = recorded.is_some();
        let null_p = match seen {
            Some(o) if o.null_tests > 0 => OBSERVED_NULL_SHARE,
            _ => DEFAULT_NULL_SHARE,
        };
        match recorded.or_else(|| default_gen(table, col, &facts[c])) {
            Some(g) => {
                let nullable = !col.not_null && !facts[c].not_null && !in_unique;
                let mut what = Vec::new();
                if values_followed {
                    what.push("values");
                }
                if nullable && null_p == OBSERVED_NULL_SHARE {
                    what.push("NULL share 1 %");
                }
                if !what.is_empty() {
                    followed.push(format!("{}: {}", observed_key(table, col), what.join(", ")));
                }
                tp.cols[c].generator = if nullable {
                    Gen::Nullable {
                        p: null_p,
                        inner: Box::new(g),
                    }
                } else {
                    g
                };
            }
            None if !col.not_null => tp.cols[c].generator = Gen::Null,
            None if col
                .default
                .as_deref()
                .is_some_and(default_is_side_effect_free) =>
            {
                tp.cols[c].include = false
            }
            None => {
                let why = match &col.default {
                    Some(d) => format!(
                        "planck cannot produce values of type {}, and its default {d} calls a function that may have side effects, so planck does not let the server run it",
                        col.type_name
                    ),
                    None => format!("planck cannot produce values of type {}", col.type_name),
                };
                return Err(seed_err(
                    display,
                    Some(&col.name),
                    why,
                    format!(
                        "exclude {} in the spec (`exclude = [\"{}\"]`), or give the column a DEFAULT without side effects (a constant, now(), gen_random_uuid(), nextval)",
                        display, table.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Phase: what the spec says of a column must suit the column's type: a
/// `range` inside what the type holds (`[0, 100000]` on a smallint wrapped
/// in the encoder), `after` naming a column of the same kind of time.
pub(super) fn spec_fits_columns(
    sf: &SpecFile,
    res: &Resolved,
    ci: usize,
    table: &crate::catalog::schema::Table,
) -> Result<()> {
    for (c, col) in table.columns.iter().enumerate() {
        let Some(cs) = res.columns.get(&(ci, c)) else {
            continue;
        };
        let cs = cs.get_ref();
        if let Some(r) = &cs.range {
            let limits: Option<(f64, f64)> = match (&col.kind, col.numeric) {
                (k, _) if k.is_int() => {
                    let max = k.int_max() as f64;
                    Some((-max - 1.0, max))
                }
                (TypeKind::Numeric, Some((p, s))) if p > s => {
                    let max = 10f64.powi((p - s) as i32);
                    Some((-max, max))
                }
                _ => None,
            };
            let value = |v: &spec::Scalar| match v {
                spec::Scalar::Int(i) => Some(*i as f64),
                spec::Scalar::Float(f) => Some(*f),
                _ => None,
            };
            if let Some((lo, hi)) = limits {
                for v in r.get_ref() {
                    if let Some(x) = value(v)
                        && !(lo..=hi).contains(&x)
                    {
                        return Err(sf.error(
                            r.span(),
                            format!(
                                "`range` of {}.{}: {x} is beyond {} ({lo} to {hi})",
                                table.display(),
                                col.name,
                                col.type_name
                            ),
                            Some(
                                "keep the range inside the column's type, or widen the type".into(),
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(after) = &cs.after
            && let Some(oc) = table.column(after.get_ref())
        {
            let other = &table.columns[oc];
            let stamp = |k: &TypeKind| matches!(k, TypeKind::Timestamp | TypeKind::Timestamptz);
            let same = col.kind == other.kind || (stamp(&col.kind) && stamp(&other.kind));
            if !(col.kind.is_time() && same) {
                return Err(sf.error(
                    after.span(),
                    format!(
                        "`after = \"{}\"`: {}.{} is {} and {} is {}",
                        after.get_ref(),
                        table.display(),
                        col.name,
                        col.type_name,
                        other.name,
                        other.type_name
                    ),
                    Some("`after` orders two dates or two timestamps of the same row".into()),
                ));
            }
        }
    }
    Ok(())
}

/// Column index -> where its generator stands in the spec file.
pub(super) type SpecSpans = HashMap<usize, std::ops::Range<usize>>;

/// Phase: the columns the spec gives a generator; returns which columns
/// are assigned and where in the spec each generator stands.
pub(super) fn spec_generators(
    sf: &SpecFile,
    res: &Resolved,
    table: &crate::catalog::schema::Table,
    ci: usize,
    facts: &[ColFacts],
    tp: &mut TablePlan,
) -> Result<(Vec<bool>, SpecSpans)> {
    let ctx = Ctx { sf, rows: tp.rows };
    let mut assigned: Vec<bool> = vec![false; table.columns.len()];
    let mut spec_span: HashMap<usize, std::ops::Range<usize>> = HashMap::new();
    for (c, col) in table.columns.iter().enumerate() {
        let Some(cs) = res.columns.get(&(ci, c)) else {
            continue;
        };
        if let Some(g) = ctx.compile(table, col, &col.kind, cs.get_ref(), cs.span(), &facts[c])? {
            tp.cols[c].generator = g;
            assigned[c] = true;
            spec_span.insert(c, cs.span());
        }
    }
    Ok((assigned, spec_span))
}

/// The generator under any [`Gen::Nullable`] wrappers.
pub(super) fn unwrap_nullable(g: &Gen) -> &Gen {
    match g {
        Gen::Nullable { inner, .. } => unwrap_nullable(inner),
        g => g,
    }
}

/// [`unwrap_nullable`], to change it.
pub(super) fn unwrap_nullable_mut(g: &mut Gen) -> &mut Gen {
    match g {
        Gen::Nullable { inner, .. } => unwrap_nullable_mut(inner),
        g => g,
    }
}

/// A member of a json column a unique index reads (`(data ->> 'key')`,
/// `(data -> 'key')`): the column and the member's name.
pub(super) fn json_member(expr: &str) -> Option<(String, String)> {
    let mut e = expr.trim();
    while let Some(inner) = e.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
        e = inner.trim();
    }
    let (col, member) = e.split_once(" ->> ").or_else(|| e.split_once(" -> "))?;
    // `(settings)::jsonb -> 'slot'`: the column under a cast to jsonb.
    let mut col = col.trim();
    if let Some(c) = col.strip_suffix("::jsonb") {
        col = c.trim();
        while let Some(inner) = col.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            col = inner.trim();
        }
    }
    let col = match col.strip_prefix('"').and_then(|c| c.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None if col.chars().all(|ch| ch.is_alphanumeric() || ch == '_') => col.to_string(),
        None => return None,
    };
    let member = member.trim();
    let member = member.strip_suffix("::text").unwrap_or(member);
    let member = member.strip_prefix('\'')?.strip_suffix('\'')?;
    if member.contains('\'') && !member.contains("''") {
        return None;
    }
    Some((col, member.replace("''", "'")))
}

/// Phase: a json column under a unique expression index on one of its
/// members (`(data ->> 'key')`, alone or beside other columns) gets an
/// object whose member is a unique text, so the expression is unique when
/// the rows are generated (the column's own uniqueness would not make the
/// member unique, nor present). Lower/upper of a unique text stay unique
/// (its row suffix has no letters), and a constant in a key reads no
/// column, so those need nothing here.
pub(super) fn expression_keys(
    table: &crate::catalog::schema::Table,
    facts: &[ColFacts],
    tp: &mut TablePlan,
    assigned: &mut [bool],
) {
    for u in &table.uniques {
        for (col, member) in u.exprs.iter().filter_map(|e| json_member(e)) {
            let Some(c) = table.column(&col) else {
                continue;
            };
            let kind = &table.columns[c].kind;
            let object = facts[c]
                .json_type
                .as_ref()
                .is_none_or(|k| k.iter().any(|k| k == "object"));
            if assigned[c] || !matches!(kind, TypeKind::Json | TypeKind::Jsonb) || !object {
                continue;
            }
            let unique = Gen::Text {
                text: text_by_name(&table.name, &member),
                unique: true,
                max_len: None,
            };
            let mut fields = match default_gen(table, &table.columns[c], &ColFacts::default()) {
                Some(Gen::Json(f)) => f,
                _ => Vec::new(),
            };
            fields.retain(|(k, _)| *k != member);
            fields.insert(0, (member, unique));
            tp.cols[c].generator = Gen::Json(fields);
            assigned[c] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::json_member;

    #[test]
    fn json_members_are_read_from_index_expressions() {
        let m = |e: &str| json_member(e).map(|(c, k)| format!("{c}.{k}"));
        assert_eq!(m("(data ->> 'key'::text)").as_deref(), Some("data.key"));
        assert_eq!(m("(\"Data\" -> 'k''s'::text)").as_deref(), Some("Data.k's"));
        assert_eq!(
            m("((settings)::jsonb -> 'slot'::text)").as_deref(),
            Some("settings.slot")
        );
        assert_eq!(m("lower(handle)"), None);
        assert_eq!(m("(data ->> name)"), None);
    }
}
