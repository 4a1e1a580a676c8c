//! One candidate index per finding, read from the plan node the finding
//! points at: the columns its own conditions and its ancestors' join
//! conditions compare, equality first then one range column, the tenant
//! column first under row-level security, and a partial `WHERE` when the
//! statement compares one of those columns with a constant. A scan whose
//! condition matches a column with an infix `LIKE`/`ILIKE` pattern (or any
//! `ILIKE`), which no btree serves, gets a trigram index instead
//! (`USING gin (col gin_trgm_ops)`, pg_trgm's operator class).

use serde_json::Value;

use crate::params::binding::{Tok, Token, lex};

/// An index to try.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Candidate {
    /// The table's display name (`devices`, `audit.events`).
    pub table: String,
    pub columns: Vec<String>,
    /// A constant predicate of the statement (`status = 'open'`), unqualified.
    pub predicate: Option<String>,
    /// A trigram index (`USING gin (col gin_trgm_ops)`, needs pg_trgm):
    /// the scan matches `columns[0]` with an infix pattern.
    pub trigram: bool,
}

/// The extension a trigram candidate needs, created (in the advice's
/// rolled-back transaction, and in the advice file) before the index.
pub const TRIGRAM_EXTENSION: &str = "CREATE EXTENSION IF NOT EXISTS pg_trgm";

impl Candidate {
    /// `CREATE INDEX ON devices (user_id)`: the form the report shows.
    pub fn sql(&self) -> String {
        self.create("", None, &self.table)
    }

    /// `CREATE INDEX CONCURRENTLY IF NOT EXISTS devices_user_id_idx ON ...`.
    pub fn concurrent_sql(&self) -> String {
        self.create(
            " CONCURRENTLY IF NOT EXISTS",
            Some(&self.file_name()),
            &self.table,
        )
    }

    /// `CREATE INDEX <name> ON <schema>.<table> ...` with every name quoted
    /// (what planck runs itself).
    pub fn quoted_sql(&self, name: &str) -> String {
        let cols: Vec<String> = self.columns.iter().map(|c| quote(c)).collect();
        let mut s = format!(
            "CREATE INDEX {} ON {}{} ({})",
            crate::db::quote_ident(name),
            crate::catalog::sql_name(&self.table),
            self.using(),
            self.keys(cols)
        );
        if let Some(p) = &self.predicate {
            s.push_str(&format!(" WHERE {p}"));
        }
        s
    }

    fn create(&self, how: &str, name: Option<&str>, table: &str) -> String {
        let cols: Vec<String> = self.columns.iter().map(|c| ident(c)).collect();
        let table = table.split('.').map(ident).collect::<Vec<_>>().join(".");
        let mut s = format!("CREATE INDEX{how}");
        if let Some(n) = name {
            s.push(' ');
            s.push_str(&ident(n));
        }
        s.push_str(&format!(
            " ON {table}{} ({})",
            self.using(),
            self.keys(cols)
        ));
        if let Some(p) = &self.predicate {
            s.push_str(&format!(" WHERE {p}"));
        }
        s
    }

    /// ` USING gin` for a trigram index; a btree says nothing.
    fn using(&self) -> &'static str {
        if self.trigram { " USING gin" } else { "" }
    }

    /// The key columns as written, with the trigram operator class.
    fn keys(&self, cols: Vec<String>) -> String {
        if self.trigram {
            cols.iter()
                .map(|c| format!("{c} gin_trgm_ops"))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            cols.join(", ")
        }
    }

    /// The name the advice file gives the index: `devices_user_id_idx`
    /// (`_partial_idx` with a predicate), within PostgreSQL's 63 bytes.
    pub fn file_name(&self) -> String {
        let bare = self.table.rsplit('.').next().unwrap_or(&self.table);
        let suffix = if self.trigram {
            "_trgm_idx"
        } else if self.predicate.is_some() {
            "_partial_idx"
        } else {
            "_idx"
        };
        let mut n = format!("{bare}_{}", self.columns.join("_"));
        let max = 63 - suffix.len();
        if n.len() > max {
            let mut cut = max;
            while !n.is_char_boundary(cut) {
                cut -= 1;
            }
            n.truncate(cut);
        }
        n + suffix
    }
}

/// An identifier as SQL needs it: bare when it is lowercase letters, digits
/// and underscores, quoted otherwise.
fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        crate::db::quote_ident(name)
    }
}

fn quote(name: &str) -> String {
    crate::db::quote_ident(name)
}

/// How a condition compares a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Equality,
    Range,
}

/// The plan node at `path` and its ancestors, nearest first.
fn node_and_ancestors<'a>(root: &'a Value, path: &[usize]) -> Option<Vec<&'a Value>> {
    let mut chain = vec![root];
    let mut cur = root;
    for &i in path {
        cur = cur.get("Plans")?.get(i)?;
        chain.push(cur);
    }
    chain.reverse();
    Some(chain)
}

fn text<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// The tokens of `s` without spaces and comments.
fn tokens(s: &str) -> Vec<Token> {
    lex(s)
        .into_iter()
        .filter(|t| !matches!(t.kind, Tok::Space | Tok::Comment))
        .collect()
}

fn word<'a>(s: &'a str, t: &Token) -> Option<&'a str> {
    match t.kind {
        Tok::Word => Some(&s[t.start..t.end]),
        Tok::Quoted => s.get(t.start + 1..t.end.saturating_sub(1)),
        _ => None,
    }
}

/// An operator's character (the lexer gives digits as punctuation too).
fn op_char(c: char) -> bool {
    "+-*/<>=~!@#%^&|`?".contains(c)
}

/// The operator made of the punctuation tokens from `i` on (`=`, `>=`, `<>`).
/// The token after `i` past closing parentheses and casts (`(c.status)::text`
/// to what follows it).
fn past_parens_and_casts(toks: &[Token], mut i: usize) -> usize {
    loop {
        match toks.get(i).map(|t| t.kind) {
            Some(Tok::Punct(')')) => i += 1,
            Some(Tok::Cast) => i += 2,
            _ => return i,
        }
    }
}

fn operator(s: &str, toks: &[Token], mut i: usize) -> String {
    let mut op = String::new();
    while let Some(t) = toks.get(i) {
        match t.kind {
            Tok::Punct(c) if op_char(c) => {
                op.push_str(&s[t.start..t.end]);
                i += 1;
            }
            _ => break,
        }
    }
    op
}

fn classify(op: &str) -> Option<Cmp> {
    match op {
        "=" => Some(Cmp::Equality),
        "<" | ">" | "<=" | ">=" => Some(Cmp::Range),
        _ => None,
    }
}

/// The operator just before token `i`, skipping opening parentheses.
fn operator_before(s: &str, toks: &[Token], i: usize) -> String {
    let mut j = i;
    while j > 0 && matches!(toks[j - 1].kind, Tok::Punct('(')) {
        j -= 1;
    }
    let mut start = j;
    while start > 0 && matches!(toks[start - 1].kind, Tok::Punct(c) if op_char(c)) {
        start -= 1;
    }
    (start..j).map(|k| &s[toks[k].start..toks[k].end]).collect()
}

/// Every comparison in `cond` of a column of `columns`, qualified by one of
/// `names` (or bare when `bare_ok`), in order: (column, how).
fn comparisons(
    cond: &str,
    names: &[&str],
    bare_ok: bool,
    columns: &[String],
) -> Vec<(String, Cmp)> {
    let toks = tokens(cond);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let Some(w) = word(cond, &toks[i]) else {
            i += 1;
            continue;
        };
        // `alias.column` or `column`.
        let qualified = matches!(toks.get(i + 1).map(|t| t.kind), Some(Tok::Punct('.')));
        let (col, qual_ok, first, mut next) = if qualified {
            match toks.get(i + 2).and_then(|t| word(cond, t)) {
                Some(c) => (c, names.contains(&w), i, i + 3),
                None => {
                    i += 1;
                    continue;
                }
            }
        } else {
            (w, bare_ok, i, i + 1)
        };
        if !qual_ok || !columns.iter().any(|c| c == col) {
            i = next;
            continue;
        }
        // `(c.status)::text = ...`: skip closing parentheses and casts.
        next = past_parens_and_casts(&toks, next);
        let after = classify(&operator(cond, &toks, next));
        let before = classify(&operator_before(cond, &toks, first));
        if let Some(c) = after.or(before) {
            out.push((col.to_string(), c));
        }
        i = next;
    }
    out
}

/// Constant predicates of the statement text on these columns:
/// `col = 'literal'`, `col = 42`, `col = true`, `col IS [NOT] NULL`.
fn constant_predicates(text: &str, columns: &[String]) -> Vec<(String, String)> {
    let toks = tokens(text);
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Some(col) = word(text, t) else { continue };
        if !columns.iter().any(|c| c == col) {
            continue;
        }
        // A qualified name's column only: `x.col`, never `col.x`.
        if matches!(toks.get(i + 1).map(|t| t.kind), Some(Tok::Punct('.'))) {
            continue;
        }
        let rest: Vec<&Token> = toks[i + 1..].iter().take(4).collect();
        let w = |k: usize| {
            rest.get(k)
                .and_then(|t| word(text, t))
                .map(str::to_lowercase)
        };
        let pred = if w(0).as_deref() == Some("is") {
            match (w(1).as_deref(), w(2).as_deref()) {
                (Some("null"), _) => Some(format!("{} IS NULL", ident(col))),
                (Some("not"), Some("null")) => Some(format!("{} IS NOT NULL", ident(col))),
                _ => None,
            }
        } else if rest.first().map(|t| t.kind) == Some(Tok::Punct('=')) {
            constant_after(text, &toks[i + 2..]).map(|lit| format!("{} = {lit}", ident(col)))
        } else {
            None
        };
        if let Some(p) = pred
            && !out.iter().any(|(c, _)| c == col)
        {
            out.push((col.to_string(), p));
        }
    }
    out
}

/// The constant starting the tokens: a string, a number (digits come as
/// punctuation from the lexer), `true`/`false`; not a parameter or a column.
fn constant_after(text: &str, toks: &[Token]) -> Option<String> {
    let first = toks.first()?;
    match first.kind {
        Tok::Str => Some(text[first.start..first.end].to_string()),
        Tok::Word => {
            let w = &text[first.start..first.end];
            let boolean = matches!(w.to_lowercase().as_str(), "true" | "false");
            let then_dot = matches!(toks.get(1).map(|t| t.kind), Some(Tok::Punct('.')));
            (boolean && !then_dot).then(|| w.to_string())
        }
        Tok::Punct(c) if c.is_ascii_digit() => {
            let n: String = toks
                .iter()
                .take_while(|t| matches!(t.kind, Tok::Punct(c) if c.is_ascii_digit() || c == '.'))
                .map(|t| &text[t.start..t.end])
                .collect();
            Some(n)
        }
        _ => None,
    }
}

/// What a candidate is read from.
pub struct Source<'a> {
    /// The plan's JSON (EXPLAIN's `[{"Plan": ...}]`).
    pub plan: &'a Value,
    /// The scan node's path from the root.
    pub path: &'a [usize],
    /// The scanned table's display name and its columns.
    pub table: &'a str,
    pub columns: &'a [String],
    /// The statement as planned (constants still in it).
    pub text: &'a str,
    /// The policy column under row-level security (tenant mode).
    pub tenant_column: Option<&'a str>,
}

/// The one candidate for a scan node, or None when its conditions name no
/// column of its table that an index could lead with.
pub fn candidate(src: &Source) -> Option<Candidate> {
    let root = crate::explain::plan_tree::root(src.plan)?;
    let chain = node_and_ancestors(root, src.path)?;
    let node = chain.first()?;
    let bare = src.table.rsplit('.').next().unwrap_or(src.table);
    let alias = text(node, "Alias").unwrap_or(bare);
    let names = [alias, bare];

    let mut found: Vec<(String, Cmp)> = Vec::new();
    for k in ["Index Cond", "Recheck Cond", "Filter"] {
        if let Some(c) = text(node, k) {
            found.extend(comparisons(c, &names, true, src.columns));
        }
    }
    // A bitmap scan's conditions are on its children.
    if let Some(kids) = node.get("Plans").and_then(Value::as_array) {
        for kid in kids {
            if let Some(c) = text(kid, "Index Cond") {
                found.extend(comparisons(c, &names, true, src.columns));
            }
        }
    }
    // Joins above it: only conditions qualified with this scan's alias.
    for a in chain.iter().skip(1) {
        for k in ["Hash Cond", "Merge Cond", "Join Filter"] {
            if let Some(c) = text(a, k) {
                found.extend(comparisons(c, &[alias], false, src.columns));
            }
        }
    }

    // An infix pattern no btree serves: a trigram index on that column.
    for k in ["Filter", "Recheck Cond", "Index Cond"] {
        if let Some(c) = text(node, k).and_then(|c| infix_match(c, &names, src.columns)) {
            return Some(Candidate {
                table: src.table.to_string(),
                columns: vec![c],
                predicate: None,
                trigram: true,
            });
        }
    }

    let compared: Vec<String> = found.iter().map(|(c, _)| c.clone()).collect();
    let constants = constant_predicates(src.text, &compared);
    // One constant predicate makes the index partial (the first, in text order).
    let predicate = constants.first().cloned();

    let mut columns: Vec<String> = Vec::new();
    let push = |c: &str, cols: &mut Vec<String>| {
        if !cols.iter().any(|x| x == c) {
            cols.push(c.to_string());
        }
    };
    if let Some(t) = src
        .tenant_column
        .filter(|t| src.columns.iter().any(|c| c == t))
    {
        push(t, &mut columns);
    }
    let is_predicate = |c: &str| predicate.as_ref().is_some_and(|(p, _)| p == c);
    for (c, how) in &found {
        if *how == Cmp::Equality && !is_predicate(c) {
            push(c, &mut columns);
        }
    }
    if let Some((c, _)) = found
        .iter()
        .find(|(c, how)| *how == Cmp::Range && !is_predicate(c))
    {
        push(c, &mut columns);
    }
    columns.truncate(4);
    // Only a tenant column, or nothing, is not what the finding is about.
    let own = columns
        .iter()
        .any(|c| Some(c.as_str()) != src.tenant_column);
    match (own, predicate) {
        (true, p) => Some(Candidate {
            table: src.table.to_string(),
            columns,
            predicate: p.map(|(_, p)| p),
            trigram: false,
        }),
        // `WHERE deleted_at IS NULL` alone: index the column itself.
        (false, Some((c, _))) => {
            push(&c, &mut columns);
            Some(Candidate {
                table: src.table.to_string(),
                columns,
                predicate: None,
                trigram: false,
            })
        }
        (false, None) => None,
    }
}

/// The column of `columns` (qualified by one of `names`, or bare) that
/// `cond` matches with a pattern a btree cannot serve: `ILIKE` (`~~*`,
/// any pattern: a btree has no case-insensitive order) or `LIKE` (`~~`)
/// with a constant pattern starting with a wildcard (`'%smith%'`). A
/// `LIKE $1` or `LIKE 'abc%'` is left to the btree candidates.
pub fn infix_match(cond: &str, names: &[&str], columns: &[String]) -> Option<String> {
    let toks = tokens(cond);
    let mut i = 0;
    while i < toks.len() {
        let Some(w) = word(cond, &toks[i]) else {
            i += 1;
            continue;
        };
        let qualified = matches!(toks.get(i + 1).map(|t| t.kind), Some(Tok::Punct('.')));
        let (col, ok, mut next) = if qualified {
            match toks.get(i + 2).and_then(|t| word(cond, t)) {
                Some(c) => (c, names.contains(&w), i + 3),
                None => {
                    i += 1;
                    continue;
                }
            }
        } else {
            (w, true, i + 1)
        };
        if !ok || !columns.iter().any(|c| c == col) {
            i = next;
            continue;
        }
        next = past_parens_and_casts(&toks, next);
        let op = operator(cond, &toks, next);
        let op_len = toks[next..]
            .iter()
            .take_while(|t| matches!(t.kind, Tok::Punct(c) if op_char(c)))
            .count();
        let pattern = toks
            .get(next + op_len)
            .filter(|t| t.kind == Tok::Str)
            .map(|t| &cond[t.start..t.end]);
        let infix = pattern.is_some_and(|p| p.starts_with("'%") || p.starts_with("'_"));
        if op == "~~*" || (op == "~~" && infix) {
            return Some(col.to_string());
        }
        i = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn equality_first_then_one_range_tenant_leading() {
        let plan = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "events",
            "Alias": "e",
            "Filter": "((e.created_at > '2024-01-01'::timestamptz) AND (e.kind = 'x'::text) AND (e.actor_id = 7) AND (e.account_id = (current_setting('app.account_id'))::bigint))"}}]);
        let columns = cols(&["id", "account_id", "actor_id", "kind", "created_at"]);
        let c = candidate(&Source {
            plan: &plan,
            path: &[],
            table: "events",
            columns: &columns,
            text: "SELECT id FROM events WHERE created_at > $1 AND kind = $2 AND actor_id = $3",
            tenant_column: Some("account_id"),
        })
        .unwrap();
        assert_eq!(c.columns, ["account_id", "kind", "actor_id", "created_at"]);
        assert_eq!(c.predicate, None);
        assert_eq!(
            c.sql(),
            "CREATE INDEX ON events (account_id, kind, actor_id, created_at)"
        );
    }

    #[test]
    fn join_condition_of_an_ancestor_and_a_constant_predicate() {
        let plan = json!([{"Plan": {"Node Type": "Hash Join",
        "Hash Cond": "(c.ticket_id = t.id)",
        "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "comments", "Alias": "c",
             "Filter": "((c.status)::text = 'open'::text)"},
            {"Node Type": "Hash", "Plans": [{"Node Type": "Seq Scan",
                "Relation Name": "tickets", "Alias": "t"}]}
        ]}}]);
        let columns = cols(&["id", "ticket_id", "status", "body"]);
        let c = candidate(&Source {
            plan: &plan,
            path: &[0],
            table: "comments",
            columns: &columns,
            text: "SELECT c.body FROM comments c JOIN tickets t ON c.ticket_id = t.id \
                   WHERE c.status = 'open' AND t.id = $1",
            tenant_column: None,
        })
        .unwrap();
        assert_eq!(c.columns, ["ticket_id"]);
        assert_eq!(c.predicate.as_deref(), Some("status = 'open'"));
        assert_eq!(
            c.concurrent_sql(),
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS comments_ticket_id_partial_idx \
             ON comments (ticket_id) WHERE status = 'open'"
        );
        // The other side's columns are not this table's.
        let tcols = cols(&["id", "subject"]);
        let t = candidate(&Source {
            plan: &plan,
            path: &[1, 0],
            table: "tickets",
            columns: &tcols,
            text: "",
            tenant_column: None,
        })
        .unwrap();
        assert_eq!(t.columns, ["id"]);
    }

    #[test]
    fn no_comparable_column_no_candidate_and_names_are_quoted_when_needed() {
        let plan = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t",
            "Filter": "(lower(name) ~~ 'a%'::text)"}}]);
        let columns = cols(&["name"]);
        let src = Source {
            plan: &plan,
            path: &[],
            table: "t",
            columns: &columns,
            text: "SELECT * FROM t WHERE lower(name) LIKE $1",
            tenant_column: None,
        };
        assert_eq!(candidate(&src), None);
        let c = Candidate {
            trigram: false,
            table: "audit.Events".into(),
            columns: cols(&["userId"]),
            predicate: Some("deleted_at IS NULL".into()),
        };
        assert_eq!(
            c.sql(),
            "CREATE INDEX ON audit.\"Events\" (\"userId\") WHERE deleted_at IS NULL"
        );
        assert_eq!(
            c.quoted_sql("planck_advice"),
            "CREATE INDEX \"planck_advice\" ON \"audit\".\"Events\" (\"userId\") WHERE deleted_at IS NULL"
        );
    }

    #[test]
    fn constants_in_the_text_not_parameters() {
        let columns = cols(&["status", "pouch_id", "deleted_at"]);
        let p = constant_predicates(
            "SELECT 1 FROM items i WHERE i.pouch_id = $1 AND i.status = 'open' AND deleted_at IS NULL",
            &columns,
        );
        assert_eq!(
            p,
            vec![
                ("status".to_string(), "status = 'open'".to_string()),
                ("deleted_at".to_string(), "deleted_at IS NULL".to_string())
            ]
        );
        assert!(constant_predicates("WHERE pouch_id = $1", &columns).is_empty());
        assert!(constant_predicates("WHERE pouch_id = other.id", &columns).is_empty());
        assert_eq!(
            constant_predicates("WHERE pouch_id = 42 AND status = true", &columns),
            vec![
                ("pouch_id".to_string(), "pouch_id = 42".to_string()),
                ("status".to_string(), "status = true".to_string())
            ]
        );
    }
}
