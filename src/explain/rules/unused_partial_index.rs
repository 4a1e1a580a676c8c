//! `unused-partial-index` and `partial-index-needs-literal`.
//!
//! pg_stat_statements shows `$2` where the application wrote `'open'`, so a
//! partial index `WHERE status = 'open'` looks unused in every generic plan.
//! The engine re-plans each statement that compares the predicate's column
//! with a parameter, with the constant put back (a `literal` plan). If the
//! index is then used, the finding is informational
//! (`partial-index-needs-literal`), not `unused-partial-index`.

use std::collections::BTreeSet;
use std::path::Path;

use sqlparser::ast::{Expr, Value};

use super::{Check, CheckId, Ctx, Finding, Severity, finding, modes_phrase};
use crate::catalog::expr::{column_equalities, parse_expr};
use crate::explain::engine::used_indexes;
use crate::explain::plan_tree::PlanKind;

pub struct UnusedPartialIndex;

/// The id of the informational finding this check also emits.
pub const NEEDS_LITERAL: CheckId = CheckId::PartialIndexNeedsLiteral;

/// `(status = 'open'::text)` -> `[("status", "open")]`.
pub fn predicate_literals(predicate: &str) -> Vec<(String, String)> {
    let Some(expr) = parse_expr(predicate) else {
        return Vec::new();
    };
    fn literal(e: &Expr) -> Option<String> {
        match e {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => Some(s.clone()),
                Value::Number(n, _) => Some(n.to_string()),
                Value::Boolean(b) => Some(b.to_string()),
                _ => None,
            },
            Expr::Cast { expr, .. } | Expr::Nested(expr) => literal(expr),
            _ => None,
        }
    }
    column_equalities(&expr, literal)
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
        let touched = ctx.touched();
        for ix in &ctx.catalog.indexes {
            let Some(pred) = &ix.predicate else { continue };
            if !touched.contains(&ix.table) {
                continue;
            }
            let kinds = used.get(&ix.name).cloned().unwrap_or_default();
            if kinds.contains(PlanKind::Generic.as_str()) {
                continue;
            }
            if kinds.contains(PlanKind::Literal.as_str()) {
                let lits = predicate_literals(pred);
                let mut seen = BTreeSet::new();
                for e in ctx.explained() {
                    for p in e.plans.iter().filter(|p| p.kind == PlanKind::Literal) {
                        if !p.indexes().contains(&ix.name)
                            || !seen.insert((e.stmt.id.clone(), p.mode))
                        {
                            continue;
                        }
                        let shown: Vec<String> =
                            lits.iter().map(|(c, v)| format!("{c} = '{v}'")).collect();
                        let param = p
                            .params
                            .iter()
                            .position(|v| {
                                lits.iter().any(|(_, l)| v.as_deref() == Some(l.as_str()))
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
                                .flat_map(|(c, v)| find_in_source(dir, c, v))
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
            if kinds.contains(PlanKind::Custom.as_str()) {
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

    #[test]
    fn reads_constants_of_a_predicate() {
        assert_eq!(
            predicate_literals("(status = 'open'::text)"),
            vec![("status".to_string(), "open".to_string())]
        );
        assert!(predicate_literals("(deleted_at IS NULL)").is_empty());
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
