//! What the relay keeps of the values a run sent (issue 13): how each
//! statement was sent, the shape of the values of its LIKE patterns and
//! LIMITs, and the short literals of low-cardinality columns it was
//! compared with.
//!
//! Raw values live only while one execution is read; what is kept is a
//! class (`prefix`), a count (`limit 21`), or a literal of at most
//! [`MAX_LEN`] characters of a column with at most [`MAX_VALUES`] distinct
//! values whose name is not like a secret ([`looks_secret`]). A column that
//! breaks a rule once is dropped for the whole run.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, LimitClause, ObjectName, ObjectNamePart, Query, TableFactor, Value,
    Visit, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::queries::{Observed, ObservedColumn, Sent, ValueShape};

/// The longest literal kept in `[observed]`.
pub const MAX_LEN: usize = 32;
/// The most distinct literals a column may have to be kept.
pub const MAX_VALUES: usize = 32;

/// Parts of a column name that mark it as a secret, or as personal data:
/// its values are never kept.
pub const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "token",
    "secret",
    "key",
    "hash",
    "salt",
    "otp",
    "session",
    "email",
    "mail",
    "phone",
    "credential",
    "nonce",
    "signature",
    "cookie",
    "private",
    "iban",
    "ssn",
    "card",
    "cvv",
];

/// Whether a column's name looks like it holds a secret.
pub fn looks_secret(column: &str) -> bool {
    let c = column.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| c.contains(w))
}

/// Whether a value looks generated rather than chosen: 16 characters or
/// more of letters and digits (and `-`, `_`), both present, no space. A
/// one-time code or an API key sits in a column named for anything
/// (`accounts_credential.code`), and such values are no use to a seed
/// anyway: they are never kept.
pub fn looks_random(v: &str) -> bool {
    v.len() >= 16
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// How a statement tests a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Test {
    /// `col = $n`, `col <> $n`, `col IN ($n, ...)`, `col = ANY($n)` (the
    /// array flag).
    Values {
        params: Vec<u32>,
        array: bool,
    },
    Null,
    NotNull,
}

/// What the normalized text of a statement says about its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Parameters that are a LIKE or ILIKE pattern.
    pub likes: Vec<u32>,
    /// Parameters that are a LIMIT or FETCH count.
    pub limits: Vec<u32>,
    /// Column tests, by `schema.table.column`.
    pub tests: Vec<(String, Test)>,
}

/// Reads a normalized text (nothing when sqlparser cannot parse it).
pub fn analyze(text: &str) -> Analysis {
    let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, text) else {
        return Analysis::default();
    };
    let mut v = Reader::default();
    let _ = statements.visit(&mut v);
    let tests = v
        .tests
        .into_iter()
        .filter_map(|((qualifier, column), t)| {
            let table = match qualifier {
                Some(q) => v.aliases.get(&q).cloned().unwrap_or(q),
                None => match v.tables.as_slice() {
                    [one] => one.clone(),
                    _ => return None,
                },
            };
            let table = if table.contains('.') {
                table
            } else {
                format!("public.{table}")
            };
            Some((format!("{table}.{column}"), t))
        })
        .collect();
    Analysis {
        likes: v.likes,
        limits: v.limits,
        tests,
    }
}

#[derive(Default)]
struct Reader {
    likes: Vec<u32>,
    limits: Vec<u32>,
    tests: Vec<((Option<String>, String), Test)>,
    /// Distinct tables, as written.
    tables: Vec<String>,
    aliases: HashMap<String, String>,
}

impl Visitor for Reader {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = t
            && let Some(n) = table_name(name)
        {
            if let Some(a) = alias {
                self.aliases
                    .insert(fold(&a.name.value, a.name.quote_style), n.clone());
            }
            if !self.tables.contains(&n) {
                self.tables.push(n);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(LimitClause::LimitOffset {
            limit: Some(limit), ..
        }) = &q.limit_clause
            && let Some(n) = placeholder(limit)
        {
            self.limits.push(n);
        }
        if let Some(n) = q
            .fetch
            .as_ref()
            .and_then(|f| f.quantity.as_ref())
            .and_then(placeholder)
        {
            self.limits.push(n);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        let values = |params: Vec<u32>, array| Test::Values { params, array };
        match e {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq | BinaryOperator::NotEq,
                right,
            } => {
                if let (Some(c), Some(n)) = (column(left), placeholder(right)) {
                    self.tests.push((c, values(vec![n], false)));
                } else if let (Some(n), Some(c)) = (placeholder(left), column(right)) {
                    self.tests.push((c, values(vec![n], false)));
                }
            }
            Expr::InList { expr, list, .. } => {
                let params: Option<Vec<u32>> = list.iter().map(placeholder).collect();
                if let (Some(c), Some(params)) = (column(expr), params) {
                    self.tests.push((c, values(params, false)));
                }
            }
            Expr::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } => {
                if let (Some(c), Some(n)) = (column(left), placeholder(right)) {
                    self.tests.push((c, values(vec![n], true)));
                }
            }
            Expr::IsNull(x) => {
                if let Some(c) = column(x) {
                    self.tests.push((c, Test::Null));
                }
            }
            Expr::IsNotNull(x) => {
                if let Some(c) = column(x) {
                    self.tests.push((c, Test::NotNull));
                }
            }
            Expr::Like { pattern, .. } | Expr::ILike { pattern, .. } => {
                if let Some(n) = placeholder(pattern) {
                    self.likes.push(n);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// `$n`, possibly cast or parenthesized.
fn placeholder(e: &Expr) -> Option<u32> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(p) => p.strip_prefix('$')?.parse().ok(),
            _ => None,
        },
        Expr::Cast { expr, .. } | Expr::Nested(expr) => placeholder(expr),
        _ => None,
    }
}

/// A column as written: its qualifier (table or alias) and name.
fn column(e: &Expr) -> Option<(Option<String>, String)> {
    match e {
        Expr::Identifier(i) => Some((None, fold(&i.value, i.quote_style))),
        Expr::CompoundIdentifier(parts) => {
            let n = parts.len();
            let c = &parts[n - 1];
            let q = &parts[n.checked_sub(2)?];
            let qualifier = match n {
                2 => fold(&q.value, q.quote_style),
                _ => format!(
                    "{}.{}",
                    fold(&parts[n - 3].value, parts[n - 3].quote_style),
                    fold(&q.value, q.quote_style)
                ),
            };
            Some((Some(qualifier), fold(&c.value, c.quote_style)))
        }
        Expr::Cast { expr, .. } | Expr::Nested(expr) => column(expr),
        _ => None,
    }
}

fn table_name(name: &ObjectName) -> Option<String> {
    let part = |p: &ObjectNamePart| match p {
        ObjectNamePart::Identifier(i) => Some(fold(&i.value, i.quote_style)),
        _ => None,
    };
    let n = name.0.len();
    let table = part(name.0.last()?)?;
    match n {
        1 => Some(table),
        _ => Some(format!("{}.{table}", part(&name.0[n - 2])?)),
    }
}

fn fold(value: &str, quote: Option<char>) -> String {
    if quote.is_some() {
        value.to_string()
    } else {
        value.to_lowercase()
    }
}

/// The class of a LIKE pattern (`None`: a wildcard inside).
pub fn like_shape(pattern: &str) -> Option<ValueShape> {
    let starts = pattern.starts_with('%');
    let ends = pattern.len() > 1 && pattern.ends_with('%') && !pattern.ends_with("\\%");
    let inner = pattern
        .get(usize::from(starts)..pattern.len() - usize::from(ends))
        .unwrap_or("");
    if inner.contains(['%', '_']) {
        return None;
    }
    Some(match (starts, ends) {
        (true, true) => ValueShape::Infix,
        (false, true) => ValueShape::Prefix,
        (true, false) => ValueShape::Suffix,
        (false, false) => ValueShape::Exact,
    })
}

/// The elements of a text array literal (`{up,"on hold"}`); `None` when
/// it is not one.
fn array_items(v: &str) -> Option<Vec<String>> {
    let inner = v.trim().strip_prefix('{')?.strip_suffix('}')?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    if inner.contains(['{', '\\']) {
        return None;
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in inner.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    Some(out)
}

/// One statement text's evidence, over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Any execution through a named statement or a re-used Parse.
    pub prepared: bool,
    /// Per LIKE parameter: prefix, infix, suffix, exact counts.
    likes: BTreeMap<u32, [u64; 4]>,
    /// Per LIMIT parameter: each count sent, how often.
    limits: BTreeMap<u32, BTreeMap<u64, u64>>,
}

impl Evidence {
    pub fn sent(&self) -> Sent {
        if self.prepared {
            Sent::Prepared
        } else {
            Sent::Unprepared
        }
    }

    /// The most common class or count per parameter (ties: the first).
    pub fn shapes(&self) -> BTreeMap<u32, ValueShape> {
        const CLASSES: [ValueShape; 4] = [
            ValueShape::Prefix,
            ValueShape::Infix,
            ValueShape::Suffix,
            ValueShape::Exact,
        ];
        let mut out = BTreeMap::new();
        for (n, counts) in &self.likes {
            let best = (0..4).rev().max_by_key(|&i| counts[i]).unwrap_or(0);
            if counts[best] > 0 {
                out.insert(*n, CLASSES[best]);
            }
        }
        for (n, counts) in &self.limits {
            if let Some((v, _)) = counts.iter().rev().max_by_key(|(_, c)| **c) {
                out.insert(*n, ValueShape::Limit(*v));
            }
        }
        out
    }

    /// Adds another text's evidence (two texts of one statement).
    pub fn absorb(&mut self, o: &Evidence) {
        self.prepared |= o.prepared;
        for (n, c) in &o.likes {
            let e = self.likes.entry(*n).or_default();
            for i in 0..4 {
                e[i] += c[i];
            }
        }
        for (n, c) in &o.limits {
            let e = self.limits.entry(*n).or_default();
            for (v, k) in c {
                *e.entry(*v).or_default() += k;
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Column {
    values: HashMap<String, u64>,
    null_tests: u64,
    not_null_tests: u64,
    /// A value too long, too many values, or one the relay could not read.
    dropped: bool,
}

/// The literals seen per column, over the run.
#[derive(Debug, Clone, Default)]
pub struct Literals {
    columns: HashMap<String, Column>,
}

impl Literals {
    /// Adds what one transaction saw (kept apart until it closed, see
    /// `session`): the same rules as seen one by one, a column dropped in
    /// either is dropped.
    pub fn absorb(&mut self, o: &Literals) {
        for (k, oc) in &o.columns {
            if !self.columns.contains_key(k) {
                self.columns.insert(k.clone(), Column::default());
            }
            let Some(c) = self.columns.get_mut(k) else {
                continue;
            };
            if c.dropped {
                continue;
            }
            c.null_tests += oc.null_tests;
            c.not_null_tests += oc.not_null_tests;
            for (v, n) in &oc.values {
                *c.values.entry(v.clone()).or_default() += n;
            }
            if oc.dropped || c.values.len() > MAX_VALUES {
                c.dropped = true;
                c.values.clear();
            }
        }
    }

    /// What passes the rules, for the file.
    pub fn observed(&self) -> Observed {
        let columns = self
            .columns
            .iter()
            .filter(|(_, c)| !c.dropped)
            .filter(|(_, c)| !c.values.is_empty() || c.null_tests + c.not_null_tests > 0)
            .map(|(k, c)| {
                (
                    k.clone(),
                    ObservedColumn {
                        values: c.values.iter().map(|(v, n)| (v.clone(), *n)).collect(),
                        null_tests: c.null_tests,
                        not_null_tests: c.not_null_tests,
                    },
                )
            })
            .collect();
        Observed { columns }
    }
}

/// Reads one execution: `value(n)` is the value of `$n` (`None`: NULL, too
/// long to have been kept, or not known).
pub fn observe(
    a: &Analysis,
    prepared: bool,
    value: &dyn Fn(u32) -> Option<String>,
    ev: &mut Evidence,
    lit: &mut Literals,
) {
    ev.prepared |= prepared;
    for &n in &a.likes {
        if let Some(s) = value(n).as_deref().and_then(like_shape) {
            let i = match s {
                ValueShape::Prefix => 0,
                ValueShape::Infix => 1,
                ValueShape::Suffix => 2,
                _ => 3,
            };
            ev.likes.entry(n).or_default()[i] += 1;
        }
    }
    for &n in &a.limits {
        if let Some(v) = value(n).and_then(|v| v.trim().parse::<u64>().ok()) {
            *ev.limits.entry(n).or_default().entry(v).or_default() += 1;
        }
    }
    for (key, test) in &a.tests {
        // Found before it is entered: most calls meet a column seen before,
        // and the key need not be copied for them.
        if !lit.columns.contains_key(key) {
            // `schema.table.column`: a table named like a secret
            // (`accounts_credential`, `user_sessions`) keeps none of its
            // values: dropped from the start.
            let mut parts = key.rsplit('.');
            let name = parts.next().unwrap_or(key);
            let table = parts.next().unwrap_or_default();
            let column = Column {
                dropped: looks_secret(name) || looks_secret(table),
                ..Default::default()
            };
            lit.columns.insert(key.clone(), column);
        }
        let Some(c) = lit.columns.get_mut(key) else {
            continue;
        };
        if c.dropped {
            continue;
        }
        match test {
            Test::Null => c.null_tests += 1,
            Test::NotNull => c.not_null_tests += 1,
            Test::Values { params, array } => {
                let mut seen = Vec::new();
                for &n in params {
                    let items = match (value(n), array) {
                        (None, _) => None,
                        (Some(v), true) => array_items(&v),
                        (Some(v), false) => Some(vec![v]),
                    };
                    match items {
                        Some(items) => seen.extend(items),
                        None => {
                            c.dropped = true;
                            break;
                        }
                    }
                }
                // A binary value (shown as hex) is not the literal itself.
                if seen
                    .iter()
                    .any(|v| v.len() > MAX_LEN || v.starts_with("\\x") || looks_random(v))
                {
                    c.dropped = true;
                }
                if c.dropped {
                    c.values.clear();
                    continue;
                }
                for v in seen {
                    *c.values.entry(v).or_default() += 1;
                }
                if c.values.len() > MAX_VALUES {
                    c.dropped = true;
                    c.values.clear();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, prepared: bool, values: &[(u32, &str)]) -> (Evidence, Observed) {
        let a = analyze(text);
        let (mut ev, mut lit) = (Evidence::default(), Literals::default());
        let map: HashMap<u32, String> = values.iter().map(|(n, v)| (*n, v.to_string())).collect();
        observe(&a, prepared, &|n| map.get(&n).cloned(), &mut ev, &mut lit);
        (ev, lit.observed())
    }

    #[test]
    fn like_patterns_are_classified() {
        assert_eq!(like_shape("abc%"), Some(ValueShape::Prefix));
        assert_eq!(like_shape("%abc%"), Some(ValueShape::Infix));
        assert_eq!(like_shape("%abc"), Some(ValueShape::Suffix));
        assert_eq!(like_shape("abc"), Some(ValueShape::Exact));
        assert_eq!(like_shape("a%c"), None);
        assert_eq!(like_shape("a_c%"), None);
        assert_eq!(like_shape("%"), Some(ValueShape::Suffix));
    }

    #[test]
    fn the_text_tells_likes_limits_and_column_tests() {
        let a = analyze(
            "SELECT c.id FROM api_check c WHERE c.name LIKE $1 AND status IN ($2, $3) \
             AND c.kind = ANY($4) AND c.done IS NULL AND $5 <> c.x ORDER BY 1 LIMIT $6",
        );
        assert_eq!(a.likes, vec![1]);
        assert_eq!(a.limits, vec![6]);
        let keys: Vec<&str> = a.tests.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "public.api_check.status",
                "public.api_check.kind",
                "public.api_check.done",
                "public.api_check.x"
            ]
        );
        let a = analyze("SELECT * FROM s.t FETCH FIRST $1 ROWS ONLY");
        assert_eq!(a.limits, vec![1]);
        // Unqualified with two tables: ambiguous, left out.
        let a = analyze("SELECT * FROM a JOIN b ON a.id = b.id WHERE status = $1");
        assert!(a.tests.is_empty(), "{:?}", a.tests);
    }

    #[test]
    fn shapes_keep_the_most_common_class_and_count() {
        let text = "SELECT * FROM t WHERE name LIKE $1 LIMIT $2";
        let a = analyze(text);
        let (mut ev, mut lit) = (Evidence::default(), Literals::default());
        for (p, l) in [("ab%", "21"), ("%x%", "21"), ("cd%", "1")] {
            let (p, l) = (p.to_string(), l.to_string());
            observe(
                &a,
                false,
                &|n| Some(if n == 1 { p.clone() } else { l.clone() }),
                &mut ev,
                &mut lit,
            );
        }
        let shapes = ev.shapes();
        assert_eq!(shapes[&1], ValueShape::Prefix);
        assert_eq!(shapes[&2], ValueShape::Limit(21));
        assert_eq!(ev.sent(), Sent::Unprepared);
    }

    #[test]
    fn observed_values_are_counted_and_secrets_or_long_values_left_out() {
        let (ev, o) = run(
            "SELECT 1 FROM api_check WHERE status IN ($1, $2) AND api_key = $3 AND processed IS NULL",
            true,
            &[(1, "up"), (2, "down"), (3, "k-123")],
        );
        assert_eq!(ev.sent(), Sent::Prepared);
        let c = &o.columns["public.api_check.status"];
        assert_eq!(c.weighted(), vec![("down", 1), ("up", 1)]);
        assert_eq!(o.columns["public.api_check.processed"].null_tests, 1);
        assert!(!o.columns.contains_key("public.api_check.api_key"));
        let (_, o) = run(
            "SELECT 1 FROM t WHERE descr = $1",
            false,
            &[(1, "a text far longer than thirty-two characters")],
        );
        assert!(o.is_empty(), "{o:?}");
        let (_, o) = run(
            "SELECT 1 FROM t WHERE kind = ANY($1)",
            false,
            &[(1, "{a,\"b c\"}")],
        );
        assert_eq!(
            o.columns["public.t.kind"].weighted(),
            vec![("a", 1), ("b c", 1)]
        );
        for name in [
            "password",
            "reset_token",
            "api_key",
            "user_email",
            "pw_hash",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        assert!(!looks_secret("status"));
        // A generated code in an innocent column of a secret-named table,
        // and one in an innocent table: neither is kept.
        let (_, o) = run(
            "SELECT 1 FROM accounts_credential WHERE code = $1",
            false,
            &[(1, "up")],
        );
        assert!(o.is_empty(), "{o:?}");
        let (_, o) = run(
            "SELECT 1 FROM t WHERE code = $1",
            false,
            &[(1, "9f86d081884c7d659a2feaa0c55ad015")],
        );
        assert!(o.is_empty(), "{o:?}");
        let (_, o) = run("SELECT 1 FROM t WHERE code = $1", false, &[(1, "fr-FR")]);
        assert_eq!(o.columns["public.t.code"].weighted(), vec![("fr-FR", 1)]);
        assert!(!looks_random("2024-01-31"));
        assert!(!looks_random("in_progress_state"));
    }

    #[test]
    fn a_column_with_too_many_values_is_dropped() {
        let a = analyze("SELECT 1 FROM t WHERE code = $1");
        let (mut ev, mut lit) = (Evidence::default(), Literals::default());
        for i in 0..=MAX_VALUES {
            let v = format!("v{i}");
            observe(&a, false, &|_| Some(v.clone()), &mut ev, &mut lit);
        }
        assert!(lit.observed().is_empty());
    }
}
