//! `unused-partial-index` and `partial-index-needs-literal`.
//!
//! pg_stat_statements shows `$2` where the application wrote `'open'`, so a
//! partial index `WHERE status = 'open'` looks unused in every generic plan.
//! The engine re-plans each statement that compares the predicate's column
//! with a parameter, with the constant put back (a `literal` plan). If the
//! index is then used, the finding is informational
//! (`partial-index-needs-literal`), not `unused-partial-index`. Neither is
//! drawn on a table below `min_table_rows` or read by a statement not
//! judged (issue 47, 3): the index is listed as not judged instead.

use std::collections::BTreeSet;
use std::path::Path;

use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value};

use super::{Check, CheckId, Ctx, Finding, Severity, declare_check, finding, modes_phrase};
use crate::catalog::expr::parse_expr;
use crate::explain::engine::used_indexes;
use crate::explain::plan_tree::PlanKind;

declare_check! {
    /// no plan uses this partial index, not even with its predicate's constant put back; drop
    /// it, or make the statements' conditions match its WHERE clause
    pub struct UnusedPartialIndex => "unused-partial-index";

    /// the index is used only when the application inlines the constant; keep it inlined (a
    /// bind parameter would make the generic plan skip the index)
    also PartialIndexNeedsLiteral => "partial-index-needs-literal";
}

/// The id of the informational finding this check also emits.
pub const NEEDS_LITERAL: CheckId = CheckId::PartialIndexNeedsLiteral;

/// What a partial index's predicate needs of a statement's parameters:
/// the column, the literal(s) to bind to a parameter compared with it, and
/// how the predicate says it (`status <> 'down'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredicateLiteral {
    pub column: String,
    pub values: Vec<String>,
    pub shown: String,
}

/// The literals of a predicate as `pg_get_expr` prints it, for every form
/// (issue 13 §5): `col = c`, `col <> c`, `NOT (col = c)`, `col IN (...)`
/// (printed `col = ANY ('{...}'::text[])`), boolean columns (`active`,
/// `NOT archived`), through casts (`(status)::text`) and AND-combinations.
/// `col IS [NOT] NULL` needs no value: the statement's text carries it.
pub fn predicate_literals(predicate: &str) -> Vec<PredicateLiteral> {
    let Some(expr) = parse_expr(predicate) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    conjuncts(&expr, &mut out);
    out
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Cast { expr, .. } | Expr::Nested(expr) => strip(expr),
        _ => e,
    }
}

fn column_of(e: &Expr) -> Option<String> {
    match strip(e) {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
        _ => None,
    }
}

fn literal(e: &Expr) -> Option<String> {
    match strip(e) {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.to_string()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// `'{up,"a b"}'` or `ARRAY['up', 'new']` -> the elements.
fn array_literal(e: &Expr) -> Option<Vec<String>> {
    match strip(e) {
        Expr::Array(a) => a.elem.iter().map(literal).collect(),
        other => {
            let text = literal(other)?;
            let inner = text.strip_prefix('{')?.strip_suffix('}')?;
            Some(
                inner
                    .split(',')
                    .map(|v| v.trim().trim_matches('"').to_string())
                    .filter(|v| !v.is_empty())
                    .collect(),
            )
        }
    }
}

fn quoted(values: &[String]) -> String {
    values
        .iter()
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn conjuncts(e: &Expr, out: &mut Vec<PredicateLiteral>) {
    let mut push = |column: String, values: Vec<String>, shown: String| {
        out.push(PredicateLiteral {
            column,
            values,
            shown,
        })
    };
    match e {
        Expr::Nested(inner) => conjuncts(inner, out),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::BinaryOp { left, op, right }
            if matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) =>
        {
            for (c, v) in [(left, right), (right, left)] {
                if let (Some(col), Some(v)) = (column_of(c), literal(v)) {
                    let sign = if *op == BinaryOperator::Eq { "=" } else { "<>" };
                    let shown = format!("{col} {sign} '{v}'");
                    push(col, vec![v], shown);
                    return;
                }
            }
        }
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => {
            let mut inner = Vec::new();
            conjuncts(expr, &mut inner);
            if let Some(col) = column_of(expr) {
                push(col.clone(), vec!["false".into()], format!("NOT {col}"));
            }
            for l in inner {
                // `NOT (status = 'down')`: the same literal, the predicate negated.
                if l.values.len() == 1 && l.values[0] != "true" {
                    push(l.column, l.values, format!("NOT ({})", l.shown));
                }
            }
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            if let (Some(col), Some(values)) = (column_of(expr), list.iter().map(literal).collect())
            {
                let values: Vec<String> = values;
                let not = if *negated { "NOT " } else { "" };
                let shown = format!("{col} {not}IN ({})", quoted(&values));
                push(col, values, shown);
            }
        }
        Expr::AnyOp { left, right, .. } => {
            if let (Some(col), Some(values)) = (column_of(left), array_literal(right)) {
                let shown = format!("{col} IN ({})", quoted(&values));
                push(col, values, shown);
            }
        }
        other => {
            if let Some(col) = column_of(other) {
                push(col.clone(), vec!["true".into()], col);
            }
        }
    }
}

/// The parameters to bind so that `e` states the predicate's literals of an
/// index on `table`: each `$n` compared with a predicate column gets its
/// literal (the k-th parameter of a column its k-th value, an array
/// parameter all of them, `{up,new}`).
pub fn literal_binds(
    e: &crate::explain::engine::Explained,
    catalog: &crate::catalog::planner::Catalog,
    table: &str,
    lits: &[PredicateLiteral],
) -> Vec<(u32, String)> {
    use crate::params::binding::Binding;
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    let mut out = Vec::new();
    for (&n, b) in &e.analysis.bindings {
        let Binding::Column {
            table: t,
            column,
            array,
        } = b
        else {
            continue;
        };
        let resolved = match t.as_deref().and_then(|t| catalog.resolve(t)) {
            Some(t) => Some(t.to_string()),
            None => catalog.table_with_column(&e.analysis.tables, column),
        };
        if resolved.as_deref() != Some(table) {
            continue;
        }
        let Some(l) = lits.iter().find(|l| &l.column == column) else {
            continue;
        };
        if l.values.is_empty() {
            continue;
        }
        let value = if *array {
            let items: Vec<String> = l
                .values
                .iter()
                .map(|v| format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
                .collect();
            format!("{{{}}}", items.join(","))
        } else {
            let k = seen.entry(column.clone()).or_default();
            let v = l.values[*k % l.values.len()].clone();
            *k += 1;
            v
        };
        out.push((n, value));
    }
    out
}

/// Lines of the application's source that contain the literal, quoted, next
/// to the column name: `src/items.ts:42`.
pub fn find_in_source(dir: &Path, column: &str, literal: &str) -> Vec<String> {
    let needles = [format!("'{literal}'"), format!("\"{literal}\"")];
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                if !name.starts_with('.') && !matches!(name, "node_modules" | "target" | "vendor") {
                    stack.push(p);
                }
                continue;
            }
            let Ok(meta) = p.metadata() else { continue };
            if meta.len() > 1_000_000 {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            for (i, line) in text.lines().enumerate() {
                if line.contains(column) && needles.iter().any(|n| line.contains(n.as_str())) {
                    let rel = p.strip_prefix(dir).unwrap_or(&p);
                    out.push(format!("{}:{}", rel.display(), i + 1));
                }
            }
        }
    }
    out
}

impl Check for UnusedPartialIndex {
    fn id(&self) -> CheckId {
        CheckId::UnusedPartialIndex
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let used = used_indexes(ctx.results);
        let planned = ctx.planned_tables();
        for ix in &ctx.catalog.indexes {
            let Some(pred) = &ix.predicate else { continue };
            if !planned.contains(&ix.table) {
                continue;
            }
            let kinds = used.get(&ix.name).cloned().unwrap_or_default();
            if kinds.contains(PlanKind::Generic.as_str()) {
                continue;
            }
            let literal = kinds.contains(PlanKind::Literal.as_str());
            if !literal && kinds.contains(PlanKind::Custom.as_str()) {
                continue;
            }
            // Issue 47, 3: on a table of a few rows no plan reads the index,
            // with the constant put back or not: both verdicts need rows.
            if let Some(why) = ctx.table_not_judged(&ix.table) {
                let check = if literal { NEEDS_LITERAL } else { self.id() };
                ctx.withhold(check, &ix.table, Some(&ix.name), why);
                continue;
            }
            if literal {
                let lits = predicate_literals(pred);
                let mut seen = BTreeSet::new();
                for e in ctx.explained() {
                    for p in e.plans.iter().filter(|p| p.kind == PlanKind::Literal) {
                        if !p.indexes().contains(&ix.name)
                            || !seen.insert((e.stmt.id.clone(), p.mode))
                        {
                            continue;
                        }
                        let shown: Vec<String> = lits.iter().map(|l| l.shown.clone()).collect();
                        let param = p
                            .params
                            .iter()
                            .position(|v| {
                                lits.iter().any(|l| {
                                    l.values.iter().any(|x| v.as_deref() == Some(x.as_str()))
                                })
                            })
                            .map(|i| format!("${}", i + 1))
                            .unwrap_or_else(|| "$n".into());
                        let mut message = format!(
                            "{} on {} is used when the application inlines {}; pg_stat_statements shows {param}",
                            ix.name,
                            ix.table,
                            shown.join(" AND ")
                        );
                        if let Some(dir) = ctx.source {
                            let hits: Vec<String> = lits
                                .iter()
                                .flat_map(|l| {
                                    l.values
                                        .iter()
                                        .flat_map(|v| find_in_source(dir, &l.column, v))
                                })
                                .take(3)
                                .collect();
                            if hits.is_empty() {
                                message.push_str("; the literal was not found in the source");
                            } else {
                                message.push_str(&format!("; inlined in {}", hits.join(", ")));
                            }
                        }
                        out.push(
                            Finding::new(NEEDS_LITERAL, Severity::Info, message)
                                .statement(&e.stmt, p.mode)
                                .relation(&ix.table)
                                .index(&ix.name),
                        );
                    }
                }
                continue;
            }
            out.push(
                finding(
                    self,
                    Severity::Warning,
                    format!(
                        "partial index {} on {} (WHERE {pred}) is used by no plan, {}",
                        ix.name,
                        ix.table,
                        modes_phrase(ctx)
                    ),
                )
                .relation(&ix.table)
                .index(&ix.name),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::explain::plan_tree::Mode;
    use serde_json::json;

    fn read(predicate: &str) -> Vec<(String, Vec<String>, String)> {
        predicate_literals(predicate)
            .into_iter()
            .map(|l| (l.column, l.values, l.shown))
            .collect()
    }

    fn lit(c: &str, v: &[&str], shown: &str) -> (String, Vec<String>, String) {
        (
            c.to_string(),
            v.iter().map(|v| v.to_string()).collect(),
            shown.to_string(),
        )
    }

    #[test]
    fn reads_constants_of_a_predicate() {
        assert_eq!(
            read("(status = 'open'::text)"),
            vec![lit("status", &["open"], "status = 'open'")]
        );
        assert!(read("(deleted_at IS NULL)").is_empty());
    }

    /// Issue 13 §5: every predicate form the server prints, as it prints them.
    #[test]
    fn issue13_reads_every_predicate_form() {
        assert_eq!(
            read("(NOT ((status)::text = 'down'::text))"),
            vec![lit("status", &["down"], "NOT (status = 'down')")]
        );
        assert_eq!(
            read("((status)::text <> 'down'::text)"),
            vec![lit("status", &["down"], "status <> 'down'")]
        );
        assert_eq!(
            read(
                "((kind)::text = ANY ((ARRAY['up'::character varying, 'new'::character varying])::text[]))"
            ),
            vec![lit("kind", &["up", "new"], "kind IN ('up', 'new')")]
        );
        assert_eq!(
            read("(kind = ANY ('{up,new}'::text[]))"),
            vec![lit("kind", &["up", "new"], "kind IN ('up', 'new')")]
        );
        assert_eq!(read("active"), vec![lit("active", &["true"], "active")]);
        assert_eq!(
            read("(NOT archived)"),
            vec![lit("archived", &["false"], "NOT archived")]
        );
        assert_eq!(
            read("((processed IS NULL) AND (owner_id = 7) AND active)"),
            vec![
                lit("owner_id", &["7"], "owner_id = '7'"),
                lit("active", &["true"], "active")
            ]
        );
        assert!(read("(processed IS NOT NULL)").is_empty());
    }

    #[test]
    fn issue13_binds_each_parameter_of_a_predicate_column() {
        let cat = catalog(&[("checks", 50_000)], vec![]);
        let lits = predicate_literals("((status = ANY ('{up,new}'::text[])) AND active)");
        let e = explained(
            "SELECT 1 FROM checks WHERE status IN ($1, $2) AND account_id = $3 AND active = $4",
            vec![],
        );
        let mut cat2 = cat.clone();
        cat2.tables
            .get_mut("checks")
            .unwrap()
            .columns
            .push("active".into());
        assert_eq!(
            literal_binds(&e, &cat2, "checks", &lits),
            vec![(1, "up".into()), (2, "new".into()), (4, "true".into())]
        );
        let arr = explained("SELECT 1 FROM checks WHERE status = ANY($1)", vec![]);
        assert_eq!(
            literal_binds(&arr, &cat, "checks", &lits),
            vec![(1, "{\"up\",\"new\"}".into())]
        );
    }

    #[test]
    fn literal_only_index_is_not_unused() {
        let mut lit = index("items_open", "items", &["pouch_id"]);
        lit.predicate = Some("(status = 'open'::text)".into());
        let mut dead = index("items_dead", "items", &["pouch_id"]);
        dead.predicate = Some("(status = 'archived'::text)".into());
        let cat = catalog(&[("items", 50_000)], vec![lit, dead]);
        let seq = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "items"}}]);
        let uses = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items", "Index Name": "items_open"}}]);
        let mut e = explained(
            "SELECT * FROM items WHERE status = $1",
            vec![
                (Mode::Tenant, PlanKind::Generic, seq),
                (Mode::Tenant, PlanKind::Literal, uses),
            ],
        );
        e.plans[1].params = vec![Some("open".into())];
        let results = [e];
        let mut out = Vec::new();
        UnusedPartialIndex.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|f| (f.check, f.index.as_deref().unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                (NEEDS_LITERAL, "items_open"),
                (CheckId::UnusedPartialIndex, "items_dead")
            ]
        );
        assert!(
            out[0].message.contains("pg_stat_statements shows $1"),
            "{}",
            out[0].message
        );
        assert_eq!(out[0].severity, Severity::Info);
    }

    #[test]
    fn finds_the_literal_in_source() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/items.ts"),
            "a\nwhere status = 'open'\n",
        )
        .unwrap();
        assert_eq!(
            find_in_source(dir.path(), "status", "open"),
            vec!["src/items.ts:2"]
        );
        assert!(find_in_source(dir.path(), "status", "draft").is_empty());
    }
}
