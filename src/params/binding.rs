//! Statement text: which statements can be planned, how normalized text is
//! repaired so it parses again, and what each `$n` is bound to.
//!
//! pg_stat_statements replaces constants with `$n`, which leaves text that no
//! longer parses (`interval $1`) or hides a list (`IN ($1 /*, ... */)` on 18).
//! A small lexer finds parameters outside strings, comments and quoted names
//! so the repairs never touch a literal; sqlparser's AST then says which
//! column each parameter is compared with, inserted into or limits, so
//! custom plans can be given realistic values.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    AssignmentTarget, Expr, LimitClause, ObjectName, ObjectNamePart, OnInsert, Query, SetExpr,
    Statement, TableFactor, TableObject, Value, Visit, Visitor,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Keywords that start a statement planck plans.
const EXPLAINABLE: [&str; 8] = [
    "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES", "WITH", "TABLE",
];

/// Statements EXPLAIN does not take.
const UTILITY: [&str; 45] = [
    "ABORT",
    "ALTER",
    "ANALYZE",
    "ANALYSE",
    "BEGIN",
    "CALL",
    "CHECKPOINT",
    "CLOSE",
    "CLUSTER",
    "COMMENT",
    "COMMIT",
    "COPY",
    "CREATE",
    "DEALLOCATE",
    "DECLARE",
    "DISCARD",
    "DO",
    "DROP",
    "END",
    "EXECUTE",
    "EXPLAIN",
    "FETCH",
    "GRANT",
    "IMPORT",
    "LISTEN",
    "LOAD",
    "LOCK",
    "MOVE",
    "NOTIFY",
    "PREPARE",
    "REASSIGN",
    "REFRESH",
    "REINDEX",
    "RELEASE",
    "RESET",
    "REVOKE",
    "ROLLBACK",
    "SAVEPOINT",
    "SECURITY",
    "SET",
    "SHOW",
    "START",
    "TRUNCATE",
    "UNLISTEN",
    "VACUUM",
];

/// `Ok(())` when the statement is one EXPLAIN accepts, else the reason it is skipped.
pub fn classify(text: &str) -> Result<(), String> {
    let first = lex(text)
        .into_iter()
        .find(|t| !matches!(t.kind, Tok::Space | Tok::Comment | Tok::Punct('(')));
    match first {
        None => Err("empty statement".to_string()),
        Some(t) if t.kind == Tok::Word => {
            let word = text[t.start..t.end].to_ascii_uppercase();
            if EXPLAINABLE.contains(&word.as_str()) {
                Ok(())
            } else if !UTILITY.contains(&word.as_str()) {
                let why = analyze(text)
                    .parse_error
                    .unwrap_or_else(|| format!("unknown statement keyword {word}"));
                Err(format!("does not parse: {why}"))
            } else {
                Err(format!(
                    "utility statement ({word}): only SELECT, INSERT, UPDATE, DELETE, MERGE, \
                     VALUES and WITH are planned"
                ))
            }
        }
        Some(t) => Err(format!(
            "does not start with a keyword: {:?}",
            &text[t.start..t.end]
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    Space,
    Comment,
    /// A string literal, dollar-quoted or not.
    Str,
    /// A double-quoted identifier.
    Quoted,
    Word,
    Param(u32),
    /// `::`
    Cast,
    Punct(char),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

/// Splits SQL into the tokens the repairs need. Never fails: unterminated
/// strings or comments run to the end of the text.
pub fn lex(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        let kind = if c.is_ascii_whitespace() {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            Tok::Space
        } else if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            Tok::Comment
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            Tok::Comment
        } else if c == b'\'' {
            // E'..' strings allow backslash escapes.
            let escapes = start > 0 && matches!(b[start - 1], b'e' | b'E');
            i += 1;
            while i < b.len() {
                if escapes && b[i] == b'\\' {
                    i += 2;
                } else if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                    } else {
                        i += 1;
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            Tok::Str
        } else if c == b'"' {
            i += 1;
            while i < b.len() {
                if b[i] == b'"' {
                    if b.get(i + 1) == Some(&b'"') {
                        i += 2;
                    } else {
                        i += 1;
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            Tok::Quoted
        } else if c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            match text[start + 1..i].parse() {
                Ok(n) => Tok::Param(n),
                Err(_) => Tok::Punct('$'),
            }
        } else if c == b'$' {
            // A dollar quote: $tag$ ... $tag$.
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if b.get(j) == Some(&b'$') {
                let tag = &text[i..=j];
                match text[j + 1..].find(tag) {
                    Some(p) => i = j + 1 + p + tag.len(),
                    None => i = b.len(),
                }
                Tok::Str
            } else {
                i += 1;
                Tok::Punct('$')
            }
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80)
            {
                i += 1;
            }
            Tok::Word
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            i += 2;
            Tok::Cast
        } else {
            // One character (possibly multi-byte).
            let ch = text[i..].chars().next().unwrap_or(' ');
            i += ch.len_utf8();
            Tok::Punct(ch)
        };
        // Escapes may step past the end of an unterminated string.
        i = i.min(b.len());
        out.push(Token {
            kind,
            start,
            end: i,
        });
    }
    out
}

/// Type keywords pg_stat_statements leaves in front of a parameter.
const TYPED_LITERALS: [&str; 6] = [
    "interval",
    "date",
    "timestamp",
    "timestamptz",
    "time",
    "timetz",
];

/// How many values a squashed list (`IN ($1 /*, ... */)`, PostgreSQL 18's
/// pg_stat_statements) is planned with: lists of different lengths share
/// one entry, and the text keeps none of them. A list of one would be
/// planned as an equality, which no list of the application's is; ten is a
/// page of ids, the common case.
pub const SQUASHED_LIST_LEN: u32 = 10;

/// Repairs normalized text that does not parse as it is:
/// `interval $1` becomes `$1::interval` (likewise date, time, timestamp,
/// `timestamp with time zone`), and a squashed list `($1 /*, ... */)` gets
/// [`SQUASHED_LIST_LEN`] values, the new parameters numbered after the
/// text's last one (so no parameter after the list changes its number).
/// Returns the text and the repairs made, for the report.
pub fn repair(text: &str) -> (String, Vec<String>) {
    let toks = lex(text);
    let sig: Vec<usize> = (0..toks.len())
        .filter(|&i| !matches!(toks[i].kind, Tok::Space))
        .collect();
    let word = |i: usize| -> Option<String> {
        (toks[i].kind == Tok::Word).then(|| text[toks[i].start..toks[i].end].to_ascii_lowercase())
    };
    // (start, end, replacement) over byte ranges of the original text.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut notes = Vec::new();
    let mut next_param = params(text).last().copied().unwrap_or(0) + 1;
    let mut k = 0;
    while k < sig.len() {
        let i = sig[k];
        if let Some(w) = word(i)
            && TYPED_LITERALS.contains(&w.as_str())
        {
            // Preceded by `::` it is a cast target, not a typed literal.
            let after_cast = k > 0 && toks[sig[k - 1]].kind == Tok::Cast;
            // `timestamp with time zone $1`, `time without time zone $1`
            let mut ty = w.clone();
            let mut next = k + 1;
            let zone = |n: usize| {
                n + 2 < sig.len()
                    && matches!(word(sig[n]).as_deref(), Some("with" | "without"))
                    && word(sig[n + 1]).as_deref() == Some("time")
                    && word(sig[n + 2]).as_deref() == Some("zone")
            };
            if zone(next) {
                if word(sig[next]).as_deref() == Some("with") {
                    ty = format!("{w}tz");
                }
                next += 3;
            }
            if !after_cast
                && next < sig.len()
                && let Tok::Param(n) = toks[sig[next]].kind
            {
                edits.push((toks[i].start, toks[sig[next]].end, format!("${n}::{ty}")));
                notes.push(format!("`{w} ${n}` written as `${n}::{ty}`"));
                k = next + 1;
                continue;
            }
        }
        // `extract($1 from x)`: the field became a parameter, which does not
        // parse; the function form takes the field as text.
        if word(i).as_deref() == Some("extract")
            && k + 3 < sig.len()
            && toks[sig[k + 1]].kind == Tok::Punct('(')
            && let Tok::Param(n) = toks[sig[k + 2]].kind
            && word(sig[k + 3]).as_deref() == Some("from")
        {
            edits.push((
                toks[i].start,
                toks[sig[k + 3]].end,
                format!("pg_catalog.extract(${n}::text,"),
            ));
            notes.push(format!(
                "`extract(${n} from ...)` written as `pg_catalog.extract(${n}::text, ...)`"
            ));
            k += 4;
            continue;
        }
        if toks[i].kind == Tok::Comment {
            let body = &text[toks[i].start..toks[i].end];
            let inner = body.trim_start_matches("/*").trim_end_matches("*/").trim();
            let prev_param = match k.checked_sub(1).map(|p| toks[sig[p]].kind) {
                Some(Tok::Param(n)) => Some(n),
                _ => None,
            };
            if let Some(first) = prev_param
                && inner.starts_with(',')
                && inner.trim_start_matches(',').trim() == "..."
            {
                let added: Vec<String> = (next_param..next_param + SQUASHED_LIST_LEN - 1)
                    .map(|n| format!("${n}"))
                    .collect();
                next_param += SQUASHED_LIST_LEN - 1;
                edits.push((
                    toks[i].start,
                    toks[i].end,
                    format!(", {}", added.join(", ")),
                ));
                notes.push(format!(
                    "list `(${first} /*, ... */)` squashed by pg_stat_statements (lists of any length \
                     share it): planned with {SQUASHED_LIST_LEN} values, ${first}, {}",
                    added.join(", ")
                ));
            }
        }
        k += 1;
    }
    let out = if edits.is_empty() {
        text.to_string()
    } else {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (s, e, r) in edits {
            out.push_str(&text[at..s]);
            out.push_str(&r);
            at = e;
        }
        out.push_str(&text[at..]);
        out.trim_end().to_string()
    };
    match collapse_long_lists(&out) {
        Some((collapsed, note)) => {
            notes.push(note);
            (collapsed, notes)
        }
        None => (out, notes),
    }
}

/// The most parameters one statement may have (the protocol's 16-bit count).
pub const MAX_PARAMS: u32 = 65_535;

/// A statement with more parameters than the protocol allows (`IN ($1, ...,
/// $70000)`) cannot even be prepared: each IN list made only of parameters
/// becomes `= ANY($n)` (`<> ALL($n)` after NOT), one array parameter the
/// server types from the column, and the parameters are numbered again.
/// The planner turns an IN list into the same `= ANY(ARRAY[...])` anyway.
pub fn collapse_long_lists(text: &str) -> Option<(String, String)> {
    let toks = lex(text);
    let count = toks
        .iter()
        .filter(|t| matches!(t.kind, Tok::Param(_)))
        .count();
    let max = params(text).last().copied().unwrap_or(0);
    if count <= MAX_PARAMS as usize && max <= MAX_PARAMS {
        return None;
    }
    let sig: Vec<usize> = (0..toks.len())
        .filter(|&i| !matches!(toks[i].kind, Tok::Space | Tok::Comment))
        .collect();
    let word = |i: usize| {
        (toks[i].kind == Tok::Word).then(|| text[toks[i].start..toks[i].end].to_ascii_lowercase())
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut lists = 0;
    let mut longest = 0;
    let mut k = 0;
    while k + 2 < sig.len() {
        if word(sig[k]).as_deref() == Some("in") && toks[sig[k + 1]].kind == Tok::Punct('(') {
            // `$a , $b , ... )`
            let mut j = k + 2;
            let mut first = None;
            let mut n = 0;
            let ok = loop {
                let Some(&t) = sig.get(j) else { break false };
                match toks[t].kind {
                    Tok::Param(p) => {
                        first.get_or_insert(p);
                        n += 1;
                    }
                    _ => break false,
                }
                match sig.get(j + 1).map(|&t| toks[t].kind) {
                    Some(Tok::Punct(',')) => j += 2,
                    Some(Tok::Punct(')')) => break true,
                    _ => break false,
                }
            };
            if ok && n > 1 {
                let negated = k > 0 && word(sig[k - 1]).as_deref() == Some("not");
                let start = if negated {
                    toks[sig[k - 1]].start
                } else {
                    toks[sig[k]].start
                };
                let op = if negated { "<> ALL" } else { "= ANY" };
                edits.push((
                    start,
                    toks[sig[j + 1]].end,
                    format!("{op}(${})", first.unwrap_or(1)),
                ));
                lists += 1;
                longest = longest.max(n);
                k = j + 2;
                continue;
            }
        }
        k += 1;
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len() / 4);
    let mut at = 0;
    for (s, e, r) in edits {
        out.push_str(&text[at..s]);
        out.push_str(&r);
        at = e;
    }
    out.push_str(&text[at..]);
    Some((
        renumber(&out),
        format!(
            "{count} parameters are more than a statement may have ({MAX_PARAMS}): {lists} IN \
             {} of parameters (the longest {longest}) planned as `= ANY($n)`, one array each",
            if lists == 1 { "list" } else { "lists" }
        ),
    ))
}

/// Numbers the parameters `$1, $2, ...` in order of first appearance.
pub fn renumber(text: &str) -> String {
    let mut map: BTreeMap<u32, u32> = BTreeMap::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for t in lex(text) {
        if let Tok::Param(n) = t.kind {
            let next = map.len() as u32 + 1;
            let m = *map.entry(n).or_insert(next);
            out.push_str(&text[at..t.start]);
            out.push_str(&format!("${m}"));
            at = t.end;
        }
    }
    out.push_str(&text[at..]);
    out
}

/// Casts the given parameters to `ty` where they carry no cast yet: the
/// "typed guess" retry for parameters the server cannot type.
pub fn cast_params(text: &str, which: &BTreeSet<u32>, ty: &str) -> String {
    let toks = lex(text);
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for (i, t) in toks.iter().enumerate() {
        if let Tok::Param(n) = t.kind
            && which.contains(&n)
        {
            let cast_follows = toks[i + 1..]
                .iter()
                .find(|t| t.kind != Tok::Space)
                .is_some_and(|t| t.kind == Tok::Cast);
            if !cast_follows {
                out.push_str(&text[at..t.end]);
                out.push_str("::");
                out.push_str(ty);
                at = t.end;
            }
        }
    }
    out.push_str(&text[at..]);
    out
}

/// Every parameter number in the text.
pub fn params(text: &str) -> BTreeSet<u32> {
    lex(text)
        .into_iter()
        .filter_map(|t| match t.kind {
            Tok::Param(n) => Some(n),
            _ => None,
        })
        .collect()
}

/// Functions whose effects a ROLLBACK does not undo: a statement calling
/// one is planned without ANALYZE (the README lists them).
pub const NOT_ROLLED_BACK: [&str; 19] = [
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_advisory_lock",
    "pg_advisory_lock_shared",
    "pg_try_advisory_lock",
    "pg_try_advisory_lock_shared",
    "setval",
    "nextval",
    "dblink",
    "dblink_exec",
    "dblink_send_query",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_switch_wal",
    "lo_export",
    "pg_file_write",
    "pg_notify",
    "pg_stat_reset",
    "pg_stat_statements_reset",
];

/// The first function of [`NOT_ROLLED_BACK`] the statement calls (a word
/// followed by `(`, outside strings and comments).
pub fn not_rolled_back(text: &str) -> Option<&'static str> {
    let toks = lex(text);
    let sig: Vec<&Token> = toks
        .iter()
        .filter(|t| !matches!(t.kind, Tok::Space | Tok::Comment))
        .collect();
    sig.windows(2).find_map(|w| {
        if w[0].kind != Tok::Word || w[1].kind != Tok::Punct('(') {
            return None;
        }
        let name = text[w[0].start..w[0].end].to_ascii_lowercase();
        NOT_ROLLED_BACK.iter().find(|f| **f == name).copied()
    })
}

/// What a parameter stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// Compared with, inserted into or assigned to a column. `table` is the
    /// table (resolved from an alias) when the text names one; `array` when
    /// the parameter is an array (`= ANY($1)`).
    Column {
        table: Option<String>,
        column: String,
        array: bool,
    },
    Limit,
    Offset,
}

/// How a parameter is used beyond what it is compared with: the shape of
/// value a custom plan should bind for it (issue 13 §2). Read from the text
/// alone; recorded shapes (what the application really sent) can take their
/// place where there are some.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamShape {
    /// The pattern of a LIKE or ILIKE: a real value's prefix and `%`.
    Pattern,
    /// A range bound: `col > $n` (`lower`: the rows above it are wanted) or
    /// `col < $n`: a value that selects few rows, as such bounds usually do.
    Range { lower: bool },
    /// The `LIMIT $n` of a statement that asks whether a row exists (its
    /// projection is one constant: `SELECT 1 ... LIMIT $n`, `SELECT $1 AS a`).
    ExistsLimit,
}

/// What sqlparser could tell about a statement.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Tables the statement reads or writes, as written (`events`,
    /// `audit.events`), in order; `Catalog::resolve` finds them.
    pub tables: Vec<String>,
    pub bindings: BTreeMap<u32, Binding>,
    /// Value shapes of the parameters the text tells about (see [`ParamShape`]).
    pub shapes: BTreeMap<u32, ParamShape>,
    /// Why sqlparser could not parse the text (the server may still accept it).
    pub parse_error: Option<String>,
}

/// Parses `text` (already repaired) and binds its parameters.
pub fn analyze(text: &str) -> Analysis {
    let statements = match Parser::parse_sql(&PostgreSqlDialect {}, text) {
        Ok(s) => s,
        Err(e) => {
            return Analysis {
                parse_error: Some(e.to_string()),
                ..Default::default()
            };
        }
    };
    let mut v = Binder::default();
    let _ = statements.visit(&mut v);
    // Resolve qualifiers that are aliases to their table.
    let mut bindings = BTreeMap::new();
    for (n, b) in v.bindings {
        let b = match b {
            Binding::Column {
                table: Some(q),
                column,
                array,
            } => Binding::Column {
                table: Some(v.aliases.get(&q).cloned().unwrap_or(q)),
                column,
                array,
            },
            other => other,
        };
        bindings.entry(n).or_insert(b);
    }
    let mut shapes = BTreeMap::new();
    for (n, sh) in v.shapes {
        shapes.entry(n).or_insert(sh);
    }
    Analysis {
        tables: v.tables,
        bindings,
        shapes,
        parse_error: None,
    }
}

#[derive(Default)]
struct Binder {
    tables: Vec<String>,
    aliases: BTreeMap<String, String>,
    bindings: Vec<(u32, Binding)>,
    shapes: Vec<(u32, ParamShape)>,
    /// How many `NOT`s enclose the expression being visited: under an odd
    /// number a bound selects the other tail (`NOT (created > $1)` keeps the
    /// rows below it).
    negations: u32,
}

/// A table name as written: `events`, or `audit.events` when qualified
/// (a database qualifier, `db.schema.table`, is dropped).
fn ident_name(name: &ObjectName) -> Option<String> {
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

/// Unquoted identifiers fold to lower case, as the server does.
fn fold(value: &str, quote: Option<char>) -> String {
    if quote.is_some() {
        value.to_string()
    } else {
        value.to_lowercase()
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

/// A column reference: (qualifier, column).
fn column(e: &Expr) -> Option<(Option<String>, String)> {
    match e {
        Expr::Identifier(i) => Some((None, fold(&i.value, i.quote_style))),
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            let c = &parts[parts.len() - 1];
            let q = &parts[parts.len() - 2];
            Some((
                Some(fold(&q.value, q.quote_style)),
                fold(&c.value, c.quote_style),
            ))
        }
        Expr::Cast { expr, .. } | Expr::Nested(expr) => column(expr),
        _ => None,
    }
}

impl Binder {
    fn bind_col(&mut self, n: u32, table: Option<String>, column: String, array: bool) {
        self.bindings.push((
            n,
            Binding::Column {
                table,
                column,
                array,
            },
        ));
    }

    fn pair(&mut self, a: &Expr, b: &Expr, array: bool) {
        for (c, p) in [(a, b), (b, a)] {
            if let (Some((q, col)), Some(n)) = (column(c), placeholder(p)) {
                self.bind_col(n, q, col, array);
            }
        }
    }

    fn assignments(&mut self, table: &Option<String>, list: &[sqlparser::ast::Assignment]) {
        for a in list {
            if let (AssignmentTarget::ColumnName(name), Some(n)) =
                (&a.target, placeholder(&a.value))
                && let Some(col) = ident_name(name)
            {
                self.bind_col(n, table.clone(), col, false);
            }
        }
    }
}

/// Whether `q` asks only whether a row exists: a SELECT of one constant
/// (`SELECT 1 AS a FROM ...`, `SELECT $1 ...`), what `.exists()` sends.
fn asks_existence(q: &Query) -> bool {
    use sqlparser::ast::SelectItem;
    let SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    let [item] = s.projection.as_slice() else {
        return false;
    };
    let e = match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
        _ => return false,
    };
    placeholder(e).is_some() || matches!(e, Expr::Value(v) if matches!(v.value, Value::Number(..)))
}

impl Visitor for Binder {
    type Break = ();

    fn pre_visit_table_factor(&mut self, tf: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = tf
            && let Some(t) = ident_name(name)
        {
            if let Some(a) = alias {
                self.aliases
                    .insert(fold(&a.name.value, a.name.quote_style), t.clone());
            }
            if !self.tables.contains(&t) {
                self.tables.push(t);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_statement(&mut self, s: &Statement) -> ControlFlow<()> {
        match s {
            Statement::Insert(ins) => {
                let table = match &ins.table {
                    TableObject::TableName(n) => ident_name(n),
                    _ => None,
                };
                if let Some(t) = &table {
                    if let Some(a) = &ins.table_alias {
                        self.aliases
                            .insert(fold(&a.value, a.quote_style), t.clone());
                    }
                    if !self.tables.contains(t) {
                        self.tables.push(t.clone());
                    }
                }
                if let Some(src) = &ins.source
                    && let SetExpr::Values(values) = src.body.as_ref()
                {
                    for row in &values.rows {
                        for (i, e) in row.iter().enumerate() {
                            if let (Some(n), Some(c)) = (placeholder(e), ins.columns.get(i)) {
                                self.bind_col(
                                    n,
                                    table.clone(),
                                    fold(&c.value, c.quote_style),
                                    false,
                                );
                            }
                        }
                    }
                }
                if let Some(OnInsert::OnConflict(oc)) = &ins.on
                    && let sqlparser::ast::OnConflictAction::DoUpdate(du) = &oc.action
                {
                    self.assignments(&table, &du.assignments);
                }
            }
            Statement::Update {
                table, assignments, ..
            } => {
                let t = match &table.relation {
                    TableFactor::Table { name, .. } => ident_name(name),
                    _ => None,
                };
                self.assignments(&t, assignments);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(LimitClause::LimitOffset { limit, offset, .. }) = &q.limit_clause {
            if let Some(n) = limit.as_ref().and_then(placeholder) {
                self.bindings.push((n, Binding::Limit));
                if asks_existence(q) {
                    self.shapes.push((n, ParamShape::ExistsLimit));
                }
            }
            if let Some(n) = offset.as_ref().and_then(|o| placeholder(&o.value)) {
                self.bindings.push((n, Binding::Offset));
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if let Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Not,
            ..
        } = e
        {
            self.negations -= 1;
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        let flip = |lower: bool, negated: bool| lower != negated;
        let negated = self.negations % 2 == 1;
        match e {
            Expr::UnaryOp {
                op: sqlparser::ast::UnaryOperator::Not,
                ..
            } => self.negations += 1,
            Expr::BinaryOp { left, op, right } => {
                self.pair(left, right, false);
                use sqlparser::ast::BinaryOperator as B;
                let above = match op {
                    B::Gt | B::GtEq => Some(true),
                    B::Lt | B::LtEq => Some(false),
                    _ => None,
                };
                if let Some(above) = above {
                    // `col > $n`: a lower bound; `$n > col`: an upper one.
                    if let (Some(_), Some(n)) = (column(left), placeholder(right)) {
                        let lower = flip(above, negated);
                        self.shapes.push((n, ParamShape::Range { lower }));
                    } else if let (Some(n), Some(_)) = (placeholder(left), column(right)) {
                        let lower = flip(!above, negated);
                        self.shapes.push((n, ParamShape::Range { lower }));
                    }
                }
            }
            Expr::InList { expr, list, .. } => {
                for item in list {
                    self.pair(expr, item, false);
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated: not_between,
            } => {
                self.pair(expr, low, false);
                self.pair(expr, high, false);
                // `x NOT BETWEEN a AND b` keeps the rows below a and above b.
                let negated = negated != *not_between;
                if let Some(n) = placeholder(low) {
                    let lower = flip(true, negated);
                    self.shapes.push((n, ParamShape::Range { lower }));
                }
                if let Some(n) = placeholder(high) {
                    let lower = flip(false, negated);
                    self.shapes.push((n, ParamShape::Range { lower }));
                }
            }
            Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => {
                self.pair(expr, pattern, false);
                if let Some(n) = placeholder(pattern) {
                    self.shapes.push((n, ParamShape::Pattern));
                }
            }
            Expr::AnyOp { left, right, .. } | Expr::AllOp { left, right, .. } => {
                self.pair(left, right, true);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_utility_statements() {
        assert!(classify("  (SELECT 1)").is_ok());
        assert!(classify("with x as (select 1) select * from x").is_ok());
        assert!(classify("/* c */ INSERT INTO t VALUES ($1)").is_ok());
        let r = classify("SET search_path = $1").unwrap_err();
        assert!(r.contains("utility statement (SET)"), "{r}");
        assert!(classify("VACUUM items").is_err());
        let r = classify("SELEC oops FRM t").unwrap_err();
        assert!(r.starts_with("does not parse"), "{r}");
        assert_eq!(classify("  -- nothing\n").unwrap_err(), "empty statement");
    }

    #[test]
    fn repairs_typed_literals_and_squashed_lists() {
        let (t, notes) = repair(
            "SELECT * FROM events WHERE created_at > now() - interval $1 AND id IN ($2 /*, ... */) \
             AND d < timestamp with time zone $3 AND x = 'interval $9'",
        );
        assert_eq!(
            t,
            "SELECT * FROM events WHERE created_at > now() - $1::interval \
             AND id IN ($2 , $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             AND d < $3::timestamptz AND x = 'interval $9'"
        );
        assert_eq!(notes.len(), 3);
        assert!(notes[1].contains("planned with 10 values"), "{notes:?}");
        // Two lists (18 squashes ARRAY[...] too): each gets its own new
        // parameters, after the text's last; `$2` keeps its number.
        let (t, _) = repair(
            "SELECT 1 FROM t WHERE a IN ($1 /*, ... */) AND b = $2 AND c = ANY(ARRAY[$3 /*, ... */])",
        );
        assert_eq!(
            t,
            "SELECT 1 FROM t WHERE a IN ($1 , $4, $5, $6, $7, $8, $9, $10, $11, $12) AND b = $2 \
             AND c = ANY(ARRAY[$3 , $13, $14, $15, $16, $17, $18, $19, $20, $21])"
        );
        // A cast target is left alone.
        let (t, notes) = repair("SELECT $1::date");
        assert_eq!(t, "SELECT $1::date");
        assert!(notes.is_empty());
    }

    #[test]
    fn lexer_skips_strings_comments_and_dollar_quotes() {
        let p = params("SELECT '$1', \"$2\", $$ $3 $$, $tag$ $4 $tag$ -- $5\n, /* $6 */ $7");
        assert_eq!(p.into_iter().collect::<Vec<_>>(), vec![7]);
    }

    #[test]
    fn binds_parameters_to_columns_limits_and_inserts() {
        let a = analyze(
            "SELECT i.id FROM items i JOIN pouches p ON p.id = i.pouch_id \
             WHERE i.pouch_id = $1 AND $2 < p.updated_at AND status IN ($3, $4) \
             AND i.id = ANY($5) ORDER BY 1 LIMIT $6 OFFSET $7",
        );
        assert_eq!(a.tables, vec!["items", "pouches"]);
        let col = |t: &str, c: &str, array| Binding::Column {
            table: (!t.is_empty()).then(|| t.to_string()),
            column: c.into(),
            array,
        };
        assert_eq!(a.bindings[&1], col("items", "pouch_id", false));
        assert_eq!(a.bindings[&2], col("pouches", "updated_at", false));
        assert_eq!(a.bindings[&3], col("", "status", false));
        assert_eq!(a.bindings[&5], col("items", "id", true));
        assert_eq!(a.bindings[&6], Binding::Limit);
        assert_eq!(a.bindings[&7], Binding::Offset);

        let a = analyze(
            "INSERT INTO rate_limits (key, hits) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET hits = $3",
        );
        assert_eq!(a.bindings[&1], col("rate_limits", "key", false));
        assert_eq!(a.bindings[&3], col("rate_limits", "hits", false));
        let a = analyze("UPDATE items SET title = $1 WHERE id = $2");
        assert_eq!(a.bindings[&1], col("items", "title", false));
        assert_eq!(a.bindings[&2], col("", "id", false));
    }

    /// Issue 13 §2: the value shapes the text tells about.
    #[test]
    fn issue13_reads_value_shapes_from_the_text() {
        let a = analyze(
            "SELECT id FROM t WHERE a LIKE $1 AND b > $2 AND $3 > c AND d BETWEEN $4 AND $5 \
             AND e = $6 ORDER BY id LIMIT $7",
        );
        let got: Vec<_> = a.shapes.iter().map(|(n, s)| (*n, *s)).collect();
        assert_eq!(
            got,
            vec![
                (1, ParamShape::Pattern),
                (2, ParamShape::Range { lower: true }),
                (3, ParamShape::Range { lower: false }),
                (4, ParamShape::Range { lower: true }),
                (5, ParamShape::Range { lower: false }),
            ]
        );
        for exists in [
            "SELECT 1 AS a FROM t WHERE x = $1 LIMIT $2",
            "SELECT $1 AS a FROM t WHERE x = $2 LIMIT $3",
        ] {
            let a = analyze(exists);
            let n = *a
                .bindings
                .iter()
                .find(|(_, b)| **b == Binding::Limit)
                .unwrap()
                .0;
            assert_eq!(a.shapes.get(&n), Some(&ParamShape::ExistsLimit), "{exists}");
        }
        assert!(analyze("SELECT id, 1 FROM t LIMIT $1").shapes.is_empty());
        // Under a NOT a bound keeps the other tail; two NOTs cancel.
        let a = analyze(
            "SELECT id FROM t WHERE NOT (b > $1) AND NOT (NOT ($2 > c)) \
             AND d NOT BETWEEN $3 AND $4 AND NOT (e BETWEEN $5 AND $6) AND f < $7",
        );
        let got: Vec<_> = a.shapes.iter().map(|(n, s)| (*n, *s)).collect();
        assert_eq!(
            got,
            vec![
                (1, ParamShape::Range { lower: false }),
                (2, ParamShape::Range { lower: false }),
                (3, ParamShape::Range { lower: false }),
                (4, ParamShape::Range { lower: true }),
                (5, ParamShape::Range { lower: false }),
                (6, ParamShape::Range { lower: true }),
                (7, ParamShape::Range { lower: false }),
            ]
        );
    }

    #[test]
    fn unparseable_text_is_reported_not_fatal() {
        let a = analyze("SELEC oops FROM");
        assert!(a.parse_error.is_some());
        assert!(a.bindings.is_empty());
    }

    #[test]
    fn never_panics_on_odd_text() {
        let odd = [
            "",
            "$",
            "$$",
            "$a",
            "$1$",
            "E'\\",
            "E'abc\\",
            "'",
            "\"",
            "\"é",
            "/*",
            "/* /* */",
            "--",
            "::",
            "interval",
            "interval $",
            "timestamp with time $1",
            "IN ($1 /*, ... */",
            "SELECT 'é' || \"ü\" FROM t WHERE x = $1 /*, ... */",
            "(((",
            "ünïcode $1 $2",
            "$99999999999999999999",
            "WITH",
            "SELECT * FROM t LIMIT $1 OFFSET $2 /*",
        ];
        for t in odd {
            let _ = lex(t);
            let _ = classify(t);
            let _ = repair(t);
            let _ = analyze(t);
            let _ = params(t);
            let _ = cast_params(t, &[1].into_iter().collect(), "text");
        }
    }

    #[test]
    fn extract_with_a_parameter_field_is_written_as_the_function() {
        let (t, notes) = repair("SELECT extract($1 FROM created_at), EXTRACT ( $2 from d) FROM t");
        assert_eq!(
            t,
            "SELECT pg_catalog.extract($1::text, created_at), pg_catalog.extract($2::text, d) FROM t"
        );
        assert_eq!(notes.len(), 2);
        // A literal field is left alone.
        assert_eq!(
            repair("SELECT extract(year FROM d) FROM t").0,
            "SELECT extract(year FROM d) FROM t"
        );
    }

    /// Issue 10: `IN ($1, ..., $70000)` aborted the whole run (exit 3).
    #[test]
    fn in_lists_over_the_parameter_limit_become_one_array() {
        let list: Vec<String> = (2..=70_001).map(|n| format!("${n}")).collect();
        let text = format!(
            "SELECT * FROM t WHERE a = $1 AND id IN ({}) AND b NOT IN ($70002, $70003) AND c = $70004",
            list.join(", ")
        );
        let (t, notes) = repair(&text);
        assert_eq!(
            t,
            "SELECT * FROM t WHERE a = $1 AND id = ANY($2) AND b <> ALL($3) AND c = $4"
        );
        assert!(notes[0].contains("70004 parameters"), "{notes:?}");
        // Short lists are left alone.
        let (t, notes) = repair("SELECT * FROM t WHERE id IN ($1, $2)");
        assert_eq!(t, "SELECT * FROM t WHERE id IN ($1, $2)");
        assert!(notes.is_empty());
    }

    #[test]
    fn finds_calls_a_rollback_does_not_undo() {
        assert_eq!(
            not_rolled_back("SELECT pg_terminate_backend(pg_backend_pid())"),
            Some("pg_terminate_backend")
        );
        assert_eq!(not_rolled_back("SELECT NEXTVAL ('s')"), Some("nextval"));
        assert_eq!(
            not_rolled_back("SELECT 'setval(' , nextval_x(1) -- setval(\n"),
            None
        );
    }

    #[test]
    fn casts_untyped_parameters() {
        let which = [1, 2].into_iter().collect();
        assert_eq!(
            cast_params("SELECT $1, $2::int", &which, "text"),
            "SELECT $1::text, $2::int"
        );
    }
}
