//! Reading the expressions the catalog prints (`pg_get_expr`, `pg_policies`):
//! row-level security quals and partial-index predicates, parsed with
//! sqlparser, for tenancy (which setting guards which column) and the plan
//! checks (which functions and operators a policy calls, which literal a
//! partial index needs).

use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, visit_expressions};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Parses a policy expression as the server prints it.
pub fn parse_expr(text: &str) -> Option<Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .ok()?
        .parse_expr()
        .ok()
}

fn is_setting_call(e: &Expr) -> Option<String> {
    let mut found = None;
    let _ = visit_expressions(e, |x| {
        if let Expr::Function(f) = x
            && f.name.to_string().eq_ignore_ascii_case("current_setting")
        {
            let args = f.args.to_string();
            if let Some(s) = args.split('\'').nth(1) {
                found = Some(s.to_string());
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}

/// `(account_id = (current_setting('app.account_id'))::bigint)` ->
/// `[("account_id", "app.account_id")]`.
pub fn setting_comparisons(qual: &str) -> Vec<(String, String)> {
    match parse_expr(qual) {
        Some(expr) => column_equalities(&expr, is_setting_call),
        None => Vec::new(),
    }
}

/// Every `column = other` (either way round) in `expr` where `value` accepts
/// `other`, as (column, value). The column may be qualified; its last part counts.
pub fn column_equalities<T>(expr: &Expr, value: impl Fn(&Expr) -> Option<T>) -> Vec<(String, T)> {
    let mut out = Vec::new();
    let _ = visit_expressions(expr, |e| {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = e
        {
            for (c, other) in [(left, right), (right, left)] {
                let col = match c.as_ref() {
                    Expr::Identifier(i) => Some(i.value.clone()),
                    Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
                    _ => None,
                };
                if let (Some(col), Some(v)) = (col, value(other)) {
                    out.push((col, v));
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// Every setting a policy expression reads, as the server prints it:
/// `current_setting('app.account_id'::text)` -> `app.account_id`.
pub fn settings_read(qual: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in qual.match_indices("current_setting('") {
        let rest = &qual[at + "current_setting('".len()..];
        if let Some(end) = rest.find('\'') {
            let name = rest[..end].to_string();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Function names a policy expression calls.
pub fn functions(qual: &str) -> Vec<String> {
    let Some(expr) = parse_expr(qual) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let _ = visit_expressions(&expr, |e| {
        if let Expr::Function(f) = e
            && let Some(last) = f.name.0.last()
        {
            let n = last.to_string().trim_matches('"').to_string();
            if !out.contains(&n) {
                out.push(n);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// Comparisons a policy makes on a column: `(column, operator)`.
pub fn operators(qual: &str) -> Vec<(String, String)> {
    let Some(expr) = parse_expr(qual) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let _ = visit_expressions(&expr, |e| {
        if let Expr::BinaryOp { left, op, right } = e {
            let sym = match op {
                BinaryOperator::And | BinaryOperator::Or => None,
                BinaryOperator::PGCustomBinaryOperator(parts) => Some(parts.join(".")),
                other => Some(other.to_string()),
            };
            for c in [left, right] {
                if let (Expr::Identifier(i), Some(s)) = (c.as_ref(), &sym) {
                    out.push((i.value.clone(), s.clone()));
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_setting_and_column_of_a_policy() {
        let q = "(account_id = (current_setting('app.account_id'::text))::bigint)";
        assert_eq!(
            setting_comparisons(q),
            vec![("account_id".to_string(), "app.account_id".to_string())]
        );
        assert!(setting_comparisons("(owner = CURRENT_USER)").is_empty());
        assert_eq!(settings_read(q), vec!["app.account_id"]);
        assert_eq!(
            settings_read(
                "((org = (current_setting('app.org'::text))::uuid) OR \
                 (current_setting('app.admin'::text) = 'on'::text))"
            ),
            vec!["app.org", "app.admin"]
        );
        assert!(settings_read("(owner = CURRENT_USER)").is_empty());
        assert_eq!(functions(q), vec!["current_setting"]);
        assert_eq!(
            operators(q),
            vec![("account_id".to_string(), "=".to_string())]
        );
        assert_eq!(
            operators("(title ~~ 'a%'::text)"),
            vec![("title".to_string(), "~~".to_string())]
        );
    }
}
