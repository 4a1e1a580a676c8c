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

/// A call of a function other than `current_setting`, possibly cast
/// (`(app.uid())::text`): its name as written, qualified when it is.
fn function_call(e: &Expr) -> Option<String> {
    match e {
        Expr::Cast { expr, .. } | Expr::Nested(expr) => function_call(expr),
        Expr::Function(f) if !f.name.to_string().eq_ignore_ascii_case("current_setting") => Some(
            f.name
                .0
                .iter()
                .map(|p| p.to_string().trim_matches('"').to_string())
                .collect::<Vec<_>>()
                .join("."),
        ),
        // `(SELECT auth.uid())`: the InitPlan form.
        Expr::Subquery(q) => match q.body.as_ref() {
            sqlparser::ast::SetExpr::Select(sel) if sel.from.is_empty() => {
                match sel.projection.as_slice() {
                    [sqlparser::ast::SelectItem::UnnamedExpr(e)]
                    | [sqlparser::ast::SelectItem::ExprWithAlias { expr: e, .. }] => {
                        function_call(e)
                    }
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// `(user_id = app_public.current_user_id())` ->
/// `[("user_id", "app_public.current_user_id")]`: columns a policy compares
/// with a function's result (the tenant read through a function).
pub fn function_comparisons(qual: &str) -> Vec<(String, String)> {
    match parse_expr(qual) {
        Some(expr) => column_equalities(&expr, function_call),
        None => Vec::new(),
    }
}

/// How a function body reads the tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyRead {
    /// `current_setting('name')`, the JSON key when it is read as
    /// `current_setting('name')::jsonb ->> 'key'`.
    Setting { name: String, claim: Option<String> },
    /// `SELECT out_col FROM table WHERE key_col = <inner>`: the tenant is
    /// looked up from what `inner` (a setting or a function) gives.
    Lookup {
        table: String,
        out_col: String,
        key_col: String,
        inner: LookupInner,
    },
    /// Another function is called for it.
    Calls(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupInner {
    Setting { name: String, claim: Option<String> },
    Function(String),
}

/// The settings a function body (`pg_proc.prosrc`, SQL or plpgsql) reads,
/// with the JSON key each is read through.
pub fn body_settings(body: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let lower = body.to_lowercase();
    for (at, _) in lower.match_indices("current_setting(") {
        let rest = &body[at + "current_setting(".len()..];
        let Some(q) = rest.find('\'') else { continue };
        let after = &rest[q + 1..];
        let Some(end) = after.find('\'') else {
            continue;
        };
        let name = after[..end].to_string();
        // `...)::jsonb ->> 'sub'` within the same expression.
        let tail: String = after[end..].chars().take(80).collect();
        let claim = tail.find("->>").and_then(|i| {
            let t = &tail[i + 3..];
            let a = t.find('\'')?;
            let b = t[a + 1..].find('\'')?;
            Some(t[a + 1..a + 1 + b].to_string())
        });
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, claim));
        }
    }
    out
}

/// What an SQL function body does to read the tenant: a lookup
/// (`select user_id from app_private.sessions where uuid = f()`), a setting,
/// or a call of another function. `None` when it reads none.
pub fn body_read(body: &str) -> Option<BodyRead> {
    use sqlparser::ast::{SelectItem, SetExpr, Statement, TableFactor};
    let stmts = Parser::parse_sql(&PostgreSqlDialect {}, body).ok();
    if let Some([Statement::Query(q)]) = stmts.as_deref()
        && let SetExpr::Select(sel) = q.body.as_ref()
        && let [t] = sel.from.as_slice()
        && t.joins.is_empty()
        && let TableFactor::Table { name, .. } = &t.relation
        && let [SelectItem::UnnamedExpr(out)] = sel.projection.as_slice()
        && let Some(sel_expr) = &sel.selection
    {
        let ident = |e: &Expr| match e {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
            _ => None,
        };
        let table = name
            .0
            .iter()
            .map(|p| p.to_string().trim_matches('"').to_string())
            .collect::<Vec<_>>()
            .join(".");
        let inner = |e: &Expr| -> Option<LookupInner> {
            if let Some(f) = function_call(e) {
                return Some(LookupInner::Function(f));
            }
            let (name, claim) = body_settings(&e.to_string()).into_iter().next()?;
            Some(LookupInner::Setting { name, claim })
        };
        if let Some(out_col) = ident(out)
            && let Some((key_col, inner)) = column_equalities(sel_expr, inner).into_iter().next()
        {
            return Some(BodyRead::Lookup {
                table,
                out_col,
                key_col,
                inner,
            });
        }
    }
    if let Some((name, claim)) = body_settings(body).into_iter().next() {
        return Some(BodyRead::Setting { name, claim });
    }
    // `select app.uid()` / `return app.uid();`: one function called for it.
    if let Some([Statement::Query(q)]) = stmts.as_deref()
        && let SetExpr::Select(sel) = q.body.as_ref()
        && sel.from.is_empty()
        && let [SelectItem::UnnamedExpr(e)] = sel.projection.as_slice()
        && let Some(f) = function_call(e)
    {
        return Some(BodyRead::Calls(f));
    }
    None
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

    #[test]
    fn finds_the_tenant_read_through_functions() {
        assert_eq!(
            function_comparisons("(user_id = app_public.current_user_id())"),
            vec![(
                "user_id".to_string(),
                "app_public.current_user_id".to_string()
            )]
        );
        assert_eq!(
            function_comparisons("(user_id = ( SELECT auth.uid() AS uid))"),
            vec![("user_id".to_string(), "auth.uid".to_string())]
        );
        assert_eq!(
            body_read(
                "\n  select user_id from app_private.sessions where uuid = app_public.current_session_id();\n"
            ),
            Some(BodyRead::Lookup {
                table: "app_private.sessions".into(),
                out_col: "user_id".into(),
                key_col: "uuid".into(),
                inner: LookupInner::Function("app_public.current_session_id".into()),
            })
        );
        assert_eq!(
            body_read(
                "select nullif(pg_catalog.current_setting('jwt.claims.session_id', true), '')::uuid;"
            ),
            Some(BodyRead::Setting {
                name: "jwt.claims.session_id".into(),
                claim: None
            })
        );
        assert_eq!(
            body_read(
                "select (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')::uuid"
            ),
            Some(BodyRead::Setting {
                name: "request.jwt.claims".into(),
                claim: Some("sub".into())
            })
        );
        assert_eq!(
            body_read("begin return auth.uid(); end"),
            None,
            "plpgsql is read for its settings only"
        );
    }
}
