//! Types for parameters the server cannot type on its own.
//!
//! Normalized text loses the type a literal carried: `$1 - $2`,
//! `sum(CASE WHEN x = $1 THEN $2 ELSE $3 END)`, `now() - $1` are rejected
//! with 42725, 42883, 42P18 or 42804 although the application's statement
//! was valid. [`untyped`] finds the *loose* parameters (operands of
//! arithmetic, CASE results, function arguments) and what the expression
//! around each says about its type, strongest first: the column the
//! expression meets, a CASE's siblings, the aggregate, the function's
//! signature. [`attempts`] turns that into the casts to try in order: the
//! context first, then the fixed guesses ([`GUESSES`]). The engine keeps the
//! first attempt that plans and records it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value, Visit, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::binding;

/// The typed guesses tried, in this order, where the context says nothing.
pub const GUESSES: [&str; 5] = ["numeric", "bigint", "timestamptz", "interval", "text"];

/// What the expression around a parameter says about its type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hint {
    /// Added to or subtracted from a clock (`now() - $1`): an interval.
    Clock,
    /// The expression meets this column (`int_col BETWEEN $1 - $2 AND ...`).
    Column {
        table: Option<String>,
        column: String,
    },
    /// A CASE sibling of this type (a literal), or a column sibling.
    Sibling(String),
    SiblingColumn {
        table: Option<String>,
        column: String,
    },
    /// The argument of a numeric aggregate (`sum`, `avg`, ...).
    Aggregate(String),
    /// Argument `pos` (0-based) of function `name` called with `nargs` arguments.
    Argument {
        name: String,
        nargs: usize,
        pos: usize,
    },
}

impl Hint {
    /// Strength: lower is tried first.
    fn rank(&self) -> u8 {
        match self {
            Hint::Clock => 0,
            Hint::Column { .. } => 1,
            Hint::Sibling(_) | Hint::SiblingColumn { .. } => 2,
            Hint::Aggregate(_) => 3,
            Hint::Argument { .. } => 4,
        }
    }
}

/// The loose parameters of a statement and the hints about each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Untyped {
    /// Parameters without a cast whose type depends on the expression around them.
    pub loose: BTreeSet<u32>,
    /// Hints per parameter, strongest first.
    pub hints: BTreeMap<u32, Vec<Hint>>,
    /// Table aliases -> tables, to resolve a column hint's qualifier.
    pub aliases: BTreeMap<String, String>,
}

/// Aggregates whose argument is numeric when nothing else says.
const NUMERIC_AGGREGATES: [&str; 8] = [
    "sum",
    "avg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
];

/// Functions that read the clock: `now() - $1` is an interval.
const CLOCKS: [&str; 6] = [
    "now",
    "current_timestamp",
    "localtimestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "clock_timestamp",
];

/// Reads the text (already repaired); without a parse every uncast
/// parameter is loose and nothing is hinted.
pub fn untyped(text: &str) -> Untyped {
    let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, text) else {
        return Untyped {
            loose: uncast(text),
            ..Default::default()
        };
    };
    let mut v = Collector::default();
    let _ = statements.visit(&mut v);
    for hints in v.out.hints.values_mut() {
        hints.sort_by_key(Hint::rank);
        hints.dedup();
    }
    // A parameter cast somewhere is typed everywhere.
    let bare = uncast(text);
    v.out.loose.retain(|n| bare.contains(n));
    v.out.hints.retain(|n, _| bare.contains(n));
    v.out
}

/// Parameters the text does not cast.
pub fn uncast(text: &str) -> BTreeSet<u32> {
    let toks = binding::lex(text);
    let (mut bare, mut cast) = (BTreeSet::new(), BTreeSet::new());
    for (i, t) in toks.iter().enumerate() {
        if let binding::Tok::Param(n) = t.kind {
            let is_cast = toks[i + 1..]
                .iter()
                .find(|t| t.kind != binding::Tok::Space)
                .is_some_and(|t| t.kind == binding::Tok::Cast);
            if is_cast { &mut cast } else { &mut bare }.insert(n);
        }
    }
    // A parameter cast in one place is typed everywhere.
    bare.difference(&cast).copied().collect()
}

/// One set of casts to try, and whether it rests on a fixed-order guess
/// (then the findings it gives are warnings naming the guess).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub casts: BTreeMap<u32, String>,
    /// Parameters typed by a fixed-order guess, not by their context.
    pub guessed: BTreeSet<u32>,
}

impl Attempt {
    /// The repair notes for the report: `$1, $2 typed integer (context)`.
    pub fn describe(&self) -> Vec<String> {
        let mut by: BTreeMap<(bool, &str), Vec<u32>> = BTreeMap::new();
        for (n, ty) in &self.casts {
            by.entry((self.guessed.contains(n), ty.as_str()))
                .or_default()
                .push(*n);
        }
        by.into_iter()
            .map(|((guessed, ty), ns)| {
                let list = ns
                    .iter()
                    .map(|n| format!("${n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let what = if ns.len() == 1 {
                    "parameter"
                } else {
                    "parameters"
                };
                if guessed {
                    format!("untyped {what} {list} guessed as {ty}")
                } else {
                    format!("untyped {what} {list} typed {ty} from the expression around it")
                }
            })
            .collect()
    }
}

/// The attempts in order: each loose parameter with its context type;
/// then the unhinted ones with each fixed guess; then every loose one with
/// each fixed guess. `hinted` maps parameters to the types their hints
/// resolved to, strongest first.
pub fn attempts(loose: &BTreeSet<u32>, hinted: &BTreeMap<u32, Vec<String>>) -> Vec<Attempt> {
    let mut out: Vec<Attempt> = Vec::new();
    let mut push = |a: Attempt| {
        if !a.casts.is_empty() && !out.contains(&a) {
            out.push(a);
        }
    };
    let context: BTreeMap<u32, String> = loose
        .iter()
        .filter_map(|n| Some((*n, hinted.get(n)?.first()?.clone())))
        .collect();
    // Each further context type of a parameter, one at a time.
    push(Attempt {
        casts: context.clone(),
        guessed: BTreeSet::new(),
    });
    for (n, tys) in hinted {
        for ty in tys.iter().skip(1) {
            let mut casts = context.clone();
            casts.insert(*n, ty.clone());
            push(Attempt {
                casts,
                guessed: BTreeSet::new(),
            });
        }
    }
    let unhinted: BTreeSet<u32> = loose
        .iter()
        .filter(|n| !context.contains_key(n))
        .copied()
        .collect();
    if !unhinted.is_empty() {
        for g in GUESSES {
            let mut casts = context.clone();
            for n in &unhinted {
                casts.insert(*n, g.to_string());
            }
            push(Attempt {
                casts,
                guessed: unhinted.clone(),
            });
        }
    }
    for g in GUESSES {
        push(Attempt {
            casts: loose.iter().map(|n| (*n, g.to_string())).collect(),
            guessed: loose.clone(),
        });
    }
    out
}

/// The text with each parameter of `casts` cast to its type.
pub fn apply(text: &str, casts: &BTreeMap<u32, String>) -> String {
    let mut by: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for (n, ty) in casts {
        by.entry(ty.as_str()).or_default().insert(*n);
    }
    let mut out = text.to_string();
    for (ty, which) in by {
        out = binding::cast_params(&out, &which, ty);
    }
    out
}

#[derive(Default)]
struct Collector {
    out: Untyped,
}

/// `$n` without a cast (parenthesized is fine).
fn bare_param(e: &Expr) -> Option<u32> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(p) => p.strip_prefix('$')?.parse().ok(),
            _ => None,
        },
        Expr::Nested(e) => bare_param(e),
        _ => None,
    }
}

fn is_arith(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo
    )
}

fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// The bare parameters an arithmetic expression is made of (`$1 - $2 * $3`).
fn arith_params(e: &Expr, out: &mut Vec<u32>) {
    match e {
        Expr::BinaryOp { left, op, right } if is_arith(op) => {
            arith_params(left, out);
            arith_params(right, out);
        }
        Expr::UnaryOp { expr, .. } => arith_params(expr, out),
        Expr::Nested(inner) => arith_params(inner, out),
        _ => out.extend(bare_param(e)),
    }
}

fn column(e: &Expr) -> Option<(Option<String>, String)> {
    let fold = |i: &sqlparser::ast::Ident| {
        if i.quote_style.is_some() {
            i.value.clone()
        } else {
            i.value.to_lowercase()
        }
    };
    match e {
        Expr::Identifier(i) => Some((None, fold(i))),
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => Some((
            Some(fold(&parts[parts.len() - 2])),
            fold(&parts[parts.len() - 1]),
        )),
        Expr::Nested(e) => column(e),
        _ => None,
    }
}

fn function_name(f: &sqlparser::ast::Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_lowercase())
        .unwrap_or_default()
}

fn is_clock(e: &Expr) -> bool {
    match e {
        Expr::Function(f) => CLOCKS.contains(&function_name(f).as_str()),
        Expr::Nested(e) => is_clock(e),
        _ => false,
    }
}

/// A literal's type, for a CASE sibling.
fn literal_type(e: &Expr) -> Option<&'static str> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) if n.contains(['.', 'e', 'E']) => Some("numeric"),
            Value::Number(..) => Some("integer"),
            Value::SingleQuotedString(_) => Some("text"),
            Value::Boolean(_) => Some("boolean"),
            _ => None,
        },
        Expr::Nested(e) => literal_type(e),
        _ => None,
    }
}

fn args(f: &sqlparser::ast::Function) -> Vec<&Expr> {
    match &f.args {
        FunctionArguments::List(l) => l
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                FunctionArg::Named {
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

impl Collector {
    fn hint(&mut self, n: u32, h: Hint) {
        self.out.hints.entry(n).or_default().push(h);
    }

    fn loose(&mut self, n: u32) {
        self.out.loose.insert(n);
    }

    /// A column meets an arithmetic expression of parameters.
    fn meets(&mut self, col: &Expr, other: &Expr) {
        if let Some((table, column)) = column(col)
            && !matches!(other, Expr::Value(_))
        {
            let mut ps = Vec::new();
            arith_params(other, &mut ps);
            for n in ps {
                self.loose(n);
                self.hint(
                    n,
                    Hint::Column {
                        table: table.clone(),
                        column: column.clone(),
                    },
                );
            }
        }
    }

    /// The results of a CASE: each bare parameter is loose, hinted by its siblings.
    fn case_results(&mut self, results: &[&Expr]) {
        let params: Vec<u32> = results.iter().filter_map(|e| bare_param(e)).collect();
        if params.is_empty() {
            return;
        }
        let mut hints = Vec::new();
        for r in results {
            if let Some(ty) = literal_type(r) {
                hints.push(Hint::Sibling(ty.to_string()));
            } else if let Some((table, column)) = column(r) {
                hints.push(Hint::SiblingColumn { table, column });
            }
        }
        for n in params {
            self.loose(n);
            for h in &hints {
                self.hint(n, h.clone());
            }
        }
    }
}

/// The CASE results of `e` (when `e` is a CASE), else `e` itself.
fn results_of(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Case {
            conditions,
            else_result,
            ..
        } => conditions
            .iter()
            .map(|c| &c.result)
            .chain(else_result.as_deref())
            .collect(),
        Expr::Nested(e) => results_of(e),
        _ => vec![e],
    }
}

impl Visitor for Collector {
    type Break = ();

    fn pre_visit_relation(&mut self, _: &sqlparser::ast::ObjectName) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, tf: &sqlparser::ast::TableFactor) -> ControlFlow<()> {
        if let sqlparser::ast::TableFactor::Table {
            name,
            alias: Some(a),
            ..
        } = tf
        {
            let t = name
                .0
                .iter()
                .filter_map(|p| p.as_ident())
                .map(|i| i.value.to_lowercase())
                .collect::<Vec<_>>()
                .join(".");
            self.out.aliases.insert(a.name.value.to_lowercase(), t);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::BinaryOp { left, op, right } if is_arith(op) => {
                let (l, r) = (bare_param(left), bare_param(right));
                for n in l.iter().chain(r.iter()) {
                    self.loose(*n);
                }
                if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus) {
                    if let Some(n) = r
                        && is_clock(left)
                    {
                        self.hint(n, Hint::Clock);
                    }
                    if let Some(n) = l
                        && is_clock(right)
                    {
                        self.hint(n, Hint::Clock);
                    }
                }
            }
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                self.meets(left, right);
                self.meets(right, left);
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                self.meets(expr, low);
                self.meets(expr, high);
            }
            Expr::InList { expr, list, .. } => {
                for item in list {
                    self.meets(expr, item);
                }
            }
            Expr::Case { .. } => {
                let results = results_of(e);
                self.case_results(&results);
            }
            Expr::Function(f) => {
                let name = function_name(f);
                let args = args(f);
                let nargs = args.len();
                for (pos, a) in args.into_iter().enumerate() {
                    if NUMERIC_AGGREGATES.contains(&name.as_str()) {
                        for r in results_of(a) {
                            if let Some(n) = bare_param(r) {
                                self.loose(n);
                                self.hint(n, Hint::Aggregate("numeric".into()));
                            }
                        }
                    } else if let Some(n) = bare_param(a) {
                        self.loose(n);
                        self.hint(
                            n,
                            Hint::Argument {
                                name: name.clone(),
                                nargs,
                                pos,
                            },
                        );
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(t: Option<&str>, c: &str) -> Hint {
        Hint::Column {
            table: t.map(str::to_string),
            column: c.into(),
        }
    }

    #[test]
    fn parameter_arithmetic_meets_the_column() {
        let u = untyped("SELECT * FROM t WHERE n BETWEEN $1 - $2 AND $3 + $4");
        assert_eq!(u.loose, [1, 2, 3, 4].into());
        for n in 1..=4 {
            assert_eq!(u.hints[&n], vec![col(None, "n")], "${n}");
        }
        let u = untyped("SELECT $1 * $2");
        assert_eq!(u.loose, [1, 2].into());
        assert!(u.hints.is_empty());
    }

    #[test]
    fn case_results_in_an_aggregate_are_numeric() {
        let u = untyped("SELECT sum(CASE WHEN x = $1 THEN $2 ELSE $3 END) FROM t");
        assert_eq!(u.loose, [2, 3].into());
        assert_eq!(u.hints[&2], vec![Hint::Aggregate("numeric".into())]);
        let u = untyped(
            "SELECT CASE WHEN x THEN $1 ELSE 2.5 END, CASE WHEN y THEN t.c ELSE $2 END FROM t",
        );
        assert_eq!(u.hints[&1], vec![Hint::Sibling("numeric".into())]);
        assert_eq!(
            u.hints[&2],
            vec![Hint::SiblingColumn {
                table: Some("t".into()),
                column: "c".into()
            }]
        );
    }

    #[test]
    fn a_clock_minus_a_parameter_is_an_interval_first() {
        let u = untyped("SELECT * FROM e WHERE created_at > now() - $1");
        assert_eq!(u.hints[&1], vec![Hint::Clock, col(None, "created_at")]);
    }

    #[test]
    fn function_arguments_are_hinted_by_the_signature() {
        let u = untyped("SELECT lpad(name, $1) FROM t");
        assert_eq!(
            u.hints[&1],
            vec![Hint::Argument {
                name: "lpad".into(),
                nargs: 2,
                pos: 1
            }]
        );
    }

    #[test]
    fn attempts_go_context_first_then_the_fixed_order() {
        let loose = [1, 2].into();
        let hinted = [(1, vec!["integer".to_string()])].into();
        let a = attempts(&loose, &hinted);
        assert_eq!(a[0].casts, [(1, "integer".to_string())].into());
        assert!(a[0].guessed.is_empty());
        assert_eq!(
            a[1].casts,
            [(1, "integer".to_string()), (2, "numeric".to_string())].into()
        );
        assert_eq!(a[1].guessed, [2].into());
        assert_eq!(a.last().unwrap().casts[&1], "text");
        assert_eq!(
            a[1].describe(),
            vec![
                "untyped parameter $1 typed integer from the expression around it".to_string(),
                "untyped parameter $2 guessed as numeric".to_string()
            ]
        );
    }

    #[test]
    fn cast_parameters_are_not_loose() {
        assert_eq!(uncast("SELECT $1::int + $2, $1"), [2].into());
        assert_eq!(
            apply(
                "SELECT $1 + $2",
                &[(1, "int".into()), (2, "text".into())].into()
            ),
            "SELECT $1::int + $2::text"
        );
    }
}
