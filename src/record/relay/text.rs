//! Statement texts as the relay sees them: a simple Query split into its
//! statements, literals replaced by `$n` (as pg_stat_statements numbers
//! them: after the highest `$n` the text already has), and the few
//! statements whose meaning the capture needs (SET, SET ROLE, isolation).
//!
//! The raw text can hold secrets (tokens, `ALTER ROLE ... PASSWORD`): only
//! the normalized text and the literal values (kept in memory, for
//! bindings, never written) leave [`normalize`].

mod lex;

use lex::{Kind, Lexer, Token};

/// A statement with its literals taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The text with each literal replaced by `$n`.
    pub text: String,
    /// The literals, in order, with the `$n` each became.
    pub literals: Vec<(u32, String)>,
}

/// Splits a simple-protocol Query into statements at top-level semicolons
/// (quotes, identifiers, dollar quotes and comments respected). Empty
/// statements are dropped, as the server does.
pub fn split(query: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut lex = Lexer::new(query);
    let mut depth = 0i32;
    while let Some(t) = lex.next_token() {
        match t.kind {
            Kind::Punct(b'(') => depth += 1,
            Kind::Punct(b')') => depth -= 1,
            Kind::Punct(b';') if depth <= 0 => {
                push_part(&mut out, &query[start..t.start]);
                start = t.end;
            }
            _ => {}
        }
    }
    push_part(&mut out, &query[start..]);
    out
}

fn push_part<'a>(out: &mut Vec<&'a str>, s: &'a str) {
    let trimmed = s.trim();
    // A part of comments only is no statement either.
    let mut lex = Lexer::new(trimmed);
    if lex.next_token().is_some() {
        out.push(trimmed);
    }
}

fn max_param_of(tokens: &[Token]) -> u32 {
    tokens
        .iter()
        .filter_map(|t| match t.kind {
            Kind::Param(n) => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// Replaces literals (strings, numbers, bit strings) with `$n`.
#[cfg(test)]
pub fn normalize(text: &str) -> Normalized {
    normalize_with(text, &Lexer::new(text).tokens())
}

/// What the capture reads of a statement, from one pass of the lexer.
#[derive(Debug)]
pub struct Read {
    pub norm: Normalized,
    pub meaning: Meaning,
    /// Whether it is a migration's work: a schema change, or a write to a
    /// migration tool's bookkeeping table.
    pub migration: bool,
    /// What it tells of a migration run on its connection.
    pub mark: Mark,
    /// The highest `$n` it names.
    pub params: u32,
}

/// What a statement tells of a migration run on its connection (issue 47,
/// 5): the session's build window (see `session`) opens when a migration
/// tool touches its history table, is the migrations' when the tool
/// records one there, and is the application's when a test runner isolates
/// its tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    None,
    /// It names a migration tool's history table without writing it: the
    /// tool reading what is applied, or creating its table.
    HistoryRead,
    /// It writes one that records migrations (INSERT, UPDATE, DELETE,
    /// MERGE): a migration recorded as applied, or as unapplied.
    HistoryWrite,
    /// A TRUNCATE: a test runner emptying tables between tests (Django's
    /// `TransactionTestCase`, database_cleaner), even of a history table
    /// (golang-migrate's TRUNCATE comes with its INSERT, in one transaction).
    Truncate,
}

/// A statement's normalized text, meaning, migration work and highest `$n`,
/// from one pass of the lexer: the relay reads every statement a client
/// sends. (The one-question functions `normalize`, `meaning` and
/// `migration_work` are for the tests.)
pub fn read(text: &str) -> Read {
    let tokens = Lexer::new(text).tokens();
    let (migration, mark) = migration_signs(&tokens);
    Read {
        norm: normalize_with(text, &tokens),
        meaning: meaning_with(text, &tokens),
        migration,
        mark,
        params: max_param_of(&tokens),
    }
}

fn normalize_with(text: &str, tokens: &[Token]) -> Normalized {
    let mut next = max_param_of(tokens);
    let mut out = String::with_capacity(text.len());
    let mut literals = Vec::new();
    let mut at = 0;
    for (i, t) in tokens.iter().enumerate() {
        let Kind::Literal(value) = &t.kind else {
            continue;
        };
        if is_position(tokens, i) {
            continue;
        }
        // A minus sign right before a number is part of the constant when
        // it cannot be a subtraction (after an operator, an opening, a
        // comma or a keyword), as the server's grammar folds it.
        let negated = t.numeric
            && i >= 1
            && matches!(&tokens[i - 1].kind, Kind::Op(o) if o == "-")
            && tokens[i - 1].end == t.start
            && (i == 1
                || match &tokens[i - 2].kind {
                    Kind::Op(_) | Kind::Punct(b'(' | b',' | b'[') => true,
                    Kind::Word(w) => {
                        KEYWORDS_BEFORE_VALUES.contains(&w.to_ascii_lowercase().as_str())
                    }
                    _ => false,
                });
        let (start, value) = if negated {
            (tokens[i - 1].start, format!("-{value}"))
        } else {
            (t.start, value.clone())
        };
        out.push_str(&text[at..start]);
        at = t.end;
        next += 1;
        out.push('$');
        out.push_str(&next.to_string());
        literals.push((next, value));
    }
    out.push_str(&text[at..]);
    Normalized {
        text: out.trim().trim_end_matches(';').trim_end().to_string(),
        literals,
    }
}

/// Whether the literal at `i` is a column position (`GROUP BY 1`, `ORDER BY
/// 2 DESC, 1`): a reference to the select list, not a value. A `$n` in its
/// place groups or sorts by a constant, and the server refuses the
/// statement ("must appear in the GROUP BY clause"), as Django's
/// aggregates send it. It is a whole item of a GROUP BY or ORDER BY list:
/// an unsigned integer right after `BY` or a comma of that list, followed
/// by the item's end.
fn is_position(tokens: &[Token], i: usize) -> bool {
    let word =
        |k: usize, w: &str| matches!(&tokens[k].kind, Kind::Word(x) if x.eq_ignore_ascii_case(w));
    let integer =
        matches!(&tokens[i].kind, Kind::Literal(v) if v.bytes().all(|b| b.is_ascii_digit()));
    let ends = match tokens.get(i + 1).map(|n| &n.kind) {
        None | Some(Kind::Punct(b',' | b')' | b';')) => true,
        Some(Kind::Word(w)) => ITEM_ENDS.contains(&w.to_ascii_lowercase().as_str()),
        _ => false,
    };
    if !tokens[i].numeric || !integer || !ends || i == 0 {
        return false;
    }
    // Back over the list's earlier items, at this depth, to its `BY`.
    let mut depth = 0i32;
    let mut k = i - 1;
    if !matches!(tokens[k].kind, Kind::Punct(b',')) && !word(k, "by") {
        return false;
    }
    loop {
        match &tokens[k].kind {
            Kind::Punct(b')') => depth += 1,
            Kind::Word(w) if w.eq_ignore_ascii_case("end") => depth += 1,
            Kind::Punct(b'(') if depth == 0 => return false,
            Kind::Punct(b'(') => depth -= 1,
            Kind::Word(w) if w.eq_ignore_ascii_case("case") && depth > 0 => depth -= 1,
            Kind::Punct(b';') => return false,
            Kind::Word(w) if depth == 0 && w.eq_ignore_ascii_case("by") => {
                return k >= 1 && (word(k - 1, "group") || word(k - 1, "order"));
            }
            Kind::Word(w)
                if depth == 0 && LIST_STOPS.contains(&w.to_ascii_lowercase().as_str()) =>
            {
                return false;
            }
            _ => {}
        }
        if k == 0 {
            return false;
        }
        k -= 1;
    }
}

/// Words that may follow a whole item of a GROUP BY or ORDER BY list.
const ITEM_ENDS: &[&str] = &[
    "asc",
    "desc",
    "nulls",
    "having",
    "limit",
    "offset",
    "fetch",
    "window",
    "for",
    "union",
    "intersect",
    "except",
    "order",
    "returning",
];

/// Clause words a GROUP BY or ORDER BY list never holds at its own depth.
const LIST_STOPS: &[&str] = &[
    "select",
    "from",
    "where",
    "having",
    "set",
    "values",
    "returning",
    "on",
    "limit",
    "offset",
    "window",
    "into",
    "using",
    "union",
    "intersect",
    "except",
];

/// Words after which `-1` is a negative number, not a subtraction.
const KEYWORDS_BEFORE_VALUES: &[&str] = &[
    "select", "where", "and", "or", "then", "else", "when", "values", "set", "by", "limit",
    "offset", "in", "not", "return", "between", "is", "like", "as", "default", "on", "having",
];

/// What a statement means to the capture beyond its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    Begin {
        isolation: Option<String>,
    },
    Commit,
    Rollback,
    /// `SET [SESSION|LOCAL] name = value`, `RESET name`, or a
    /// `set_config(name, value, is_local)` whose arguments are literals or
    /// parameters (then `value` is `$n`, resolved by the caller).
    Set {
        name: String,
        /// `None`: RESET.
        value: Option<String>,
        local: bool,
    },
    /// `SET TRANSACTION ISOLATION LEVEL x`.
    Isolation(String),
    Other,
}

/// Reads what a raw statement does to the session or the transaction.
#[cfg(test)]
pub fn meaning(text: &str) -> Meaning {
    meaning_with(text, &Lexer::new(text).tokens())
}

fn meaning_with(text: &str, tokens: &[Token]) -> Meaning {
    const OPENERS: &[&str] = &[
        "begin", "start", "commit", "end", "rollback", "abort", "set", "reset",
    ];
    let opener = match tokens.first().map(|t| &t.kind) {
        Some(Kind::Word(w)) => OPENERS.iter().any(|o| w.eq_ignore_ascii_case(o)),
        _ => false,
    };
    // Most statements are none of these: only a set_config can make them
    // more than Other, and there is no need to lower-case their words.
    if !opener {
        return set_config_meaning(text, tokens);
    }
    let words: Vec<String> = tokens
        .iter()
        .take(12)
        .map(|t| match &t.kind {
            Kind::Word(w) => w.to_ascii_lowercase(),
            _ => String::new(),
        })
        .collect();
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    match w(0) {
        "begin" | "start" => {
            return Meaning::Begin {
                isolation: isolation_of(tokens),
            };
        }
        "commit" | "end" => return Meaning::Commit,
        "rollback" | "abort" if w(1) != "to" && w(2) != "to" => return Meaning::Rollback,
        "set" | "reset" => return set_meaning(text, tokens, &words),
        _ => {}
    }
    set_config_meaning(text, tokens)
}

/// `set_config('name', value, is_local)` anywhere in a SELECT.
fn set_config_meaning(text: &str, tokens: &[Token]) -> Meaning {
    for (i, t) in tokens.iter().enumerate() {
        if matches!(&t.kind, Kind::Word(x) if x.eq_ignore_ascii_case("set_config"))
            && matches!(tokens.get(i + 1).map(|t| &t.kind), Some(Kind::Punct(b'(')))
        {
            let arg = |k: usize| {
                tokens
                    .get(i + 2 + 2 * k)
                    .map(|t| (&t.kind, &text[t.start..t.end]))
            };
            let sep_ok = [3usize, 5]
                .iter()
                .all(|&k| matches!(tokens.get(i + k).map(|t| &t.kind), Some(Kind::Punct(b','))));
            if !sep_ok {
                continue;
            }
            let value_of = |a: Option<(&Kind, &str)>| match a {
                Some((Kind::Literal(v), _)) => Some(v.clone()),
                Some((Kind::Param(n), _)) => Some(format!("${n}")),
                _ => None,
            };
            let (Some(name), Some(value), Some(local)) =
                (value_of(arg(0)), value_of(arg(1)), arg(2))
            else {
                continue;
            };
            let local = match local {
                (Kind::Word(b), _) => b.eq_ignore_ascii_case("true"),
                // Known from the bound value only: taken as session-wide.
                (Kind::Param(_), _) => false,
                (Kind::Literal(v), _) => matches!(v.as_str(), "t" | "true" | "on" | "1"),
                _ => false,
            };
            return Meaning::Set {
                name: name.to_ascii_lowercase(),
                value: Some(value),
                local,
            };
        }
    }
    Meaning::Other
}

/// Whether a statement is a migration's own work (issue 13, 6): a schema
/// change (CREATE, ALTER, DROP, COMMENT ON; a temporary table aside, which
/// an application's batch job may make) or a write to a migration tool's
/// bookkeeping table (`django_migrations`, `schema_migrations`, ...: see
/// [`crate::catalog::schema::MIGRATION_TABLES`]). A transaction that runs
/// one is a migration's: Django runs each migration in one atomic block
/// with its `INSERT INTO django_migrations`, Rails and sqlx likewise.
/// TRUNCATE is no sign: test runners empty tables between tests with it.
#[cfg(test)]
pub fn migration_work(text: &str) -> bool {
    migration_signs(&Lexer::new(text).tokens()).0
}

/// What a statement tells of a migration run ([`Mark`]).
#[cfg(test)]
pub fn mark(text: &str) -> Mark {
    migration_signs(&Lexer::new(text).tokens()).1
}

/// Bookkeeping tables a write to which records no migration: the locks of
/// knex, Liquibase and Kysely (taken before the migrations run) and Rails'
/// environment name. A write
/// to one is migration work, but only an access for the build window.
const RECORDS_NONE: &[&str] = &[
    "knex_migrations_lock",
    "ar_internal_metadata",
    "databasechangeloglock",
    "kysely_migration_lock",
];

/// A statement's migration work ([`migration_work`]) and its [`Mark`].
fn migration_signs(tokens: &[Token]) -> (bool, Mark) {
    let is = |i: usize, names: &[&str]| match tokens.get(i).map(|t| &t.kind) {
        Some(Kind::Word(w)) => names.iter().any(|n| w.eq_ignore_ascii_case(n)),
        _ => false,
    };
    // planck's own `migrate` too, where its role may not untrack itself.
    use crate::catalog::schema::{MIGRATION_TABLES, PLANCK_MIGRATIONS};
    let tables = MIGRATION_TABLES.iter().chain([&PLANCK_MIGRATIONS]);
    // The history tables the statement names: (any, one that records).
    let (mut any, mut records) = (false, false);
    for t in tokens {
        let named = match &t.kind {
            Kind::Word(w) => tables.clone().find(|n| w.eq_ignore_ascii_case(n)),
            Kind::Quoted(q) => tables.clone().find(|n| q.as_str() == **n),
            _ => None,
        };
        if let Some(n) = named {
            any = true;
            records |= !RECORDS_NONE.contains(n);
        }
    }
    let write = is(0, &["insert", "update", "delete", "merge", "with"]);
    let mark = if is(0, &["truncate"]) {
        Mark::Truncate
    } else if write && records {
        Mark::HistoryWrite
    } else if any {
        Mark::HistoryRead
    } else {
        Mark::None
    };
    let schema = if is(0, &["create"]) {
        !(1..=3).any(|i| is(i, &["temp", "temporary"]))
    } else {
        is(0, &["alter", "drop", "comment"])
    };
    (schema || write && any, mark)
}

fn isolation_of(tokens: &[Token]) -> Option<String> {
    let words: Vec<String> = tokens
        .iter()
        .filter_map(|t| match &t.kind {
            Kind::Word(w) => Some(w.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let i = words.iter().position(|w| w == "level")?;
    match words.get(i + 1).map(String::as_str)? {
        "serializable" => Some("serializable".into()),
        "repeatable" => Some("repeatable read".into()),
        "read" => match words.get(i + 2).map(String::as_str)? {
            "committed" => Some("read committed".into()),
            // read uncommitted is read committed in PostgreSQL.
            _ => Some("read committed".into()),
        },
        _ => None,
    }
}

fn set_meaning(text: &str, tokens: &[Token], words: &[String]) -> Meaning {
    let reset = words[0] == "reset";
    let mut i = 1;
    let mut local = false;
    match words.get(1).map(String::as_str) {
        Some("local") => {
            local = true;
            i = 2;
        }
        Some("session")
            if words.get(2).map(String::as_str) != Some("authorization")
                && words.get(2).map(String::as_str) != Some("characteristics") =>
        {
            i = 2;
        }
        _ => {}
    }
    match words.get(i).map(String::as_str) {
        Some("transaction") if !reset => {
            return match isolation_of(tokens) {
                Some(l) => Meaning::Isolation(l),
                None => Meaning::Other,
            };
        }
        Some("session") => {
            // SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL x:
            // the session's default isolation.
            if let Some(l) = isolation_of(tokens) {
                return Meaning::Set {
                    name: "default_transaction_isolation".into(),
                    value: Some(l),
                    local: false,
                };
            }
            return Meaning::Other;
        }
        Some("all") if reset => return Meaning::Other,
        Some("time") if words.get(i + 1).map(String::as_str) == Some("zone") => {
            let value = tokens.get(i + 2).map(|t| literal_or_word(text, t));
            return Meaning::Set {
                name: "timezone".into(),
                value: if reset { None } else { value },
                local,
            };
        }
        _ => {}
    }
    // The name: a word, or words joined by dots; then TO or =, or (SET
    // ROLE x, SET SESSION AUTHORIZATION x) nothing.
    let mut name = String::new();
    let mut j = i;
    while let Some(t) = tokens.get(j) {
        match &t.kind {
            Kind::Word(w) | Kind::Quoted(w) if name.is_empty() || name.ends_with('.') => {
                name.push_str(&w.to_ascii_lowercase())
            }
            Kind::Punct(b'.') if !name.is_empty() => name.push('.'),
            _ => break,
        }
        j += 1;
    }
    match tokens.get(j).map(|t| &t.kind) {
        Some(Kind::Op(o)) if o == "=" => j += 1,
        Some(Kind::Word(w)) if w.eq_ignore_ascii_case("to") => j += 1,
        _ => {}
    }
    if name.is_empty() {
        return Meaning::Other;
    }
    if reset {
        return Meaning::Set {
            name,
            value: None,
            local,
        };
    }
    // The value: the rest, literals unquoted, a list joined with ", ".
    let values: Vec<String> = tokens[j.min(tokens.len())..]
        .iter()
        .filter(|t| !matches!(t.kind, Kind::Punct(b',')))
        .map(|t| literal_or_word(text, t))
        .collect();
    let value = values.join(", ");
    let value = if value.eq_ignore_ascii_case("default") {
        None
    } else {
        Some(value)
    };
    Meaning::Set { name, value, local }
}

fn literal_or_word(text: &str, t: &Token) -> String {
    match &t.kind {
        Kind::Literal(v) => v.clone(),
        Kind::Word(w) => w.to_ascii_lowercase(),
        _ => text[t.start..t.end].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 13, 6: what marks a transaction as a migration's.
    #[test]
    fn issue13_schema_changes_and_bookkeeping_writes_are_migration_work() {
        for q in [
            "CREATE TABLE t (a int)",
            "-- 0002\nALTER TABLE \"api_check\" ADD COLUMN \"tz\" varchar(36) DEFAULT 'UTC' NOT NULL",
            "DROP INDEX items_kind",
            "COMMENT ON TABLE t IS 'x'",
            "CREATE UNIQUE INDEX t_a ON t (a)",
            "INSERT INTO \"django_migrations\" (\"app\", \"name\", \"applied\") VALUES ('api', '0001', now())",
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            "DELETE FROM public.goose_db_version WHERE version_id = 3",
            "INSERT INTO \"__EFMigrationsHistory\" VALUES ($1, $2)",
        ] {
            assert!(migration_work(q), "{q}");
        }
        for q in [
            "UPDATE api_check SET tz = 'UTC' WHERE tz = 'Europe/Kiev'",
            "SELECT * FROM django_migrations",
            "CREATE TEMP TABLE batch (id int)",
            "CREATE TEMPORARY TABLE batch (id int)",
            "TRUNCATE api_check CASCADE",
            "INSERT INTO migrations_report (x) VALUES (1)",
            "INSERT INTO \"SEQUELIZEMETA\" VALUES (1)",
            "SELECT 1 FROM t FOR UPDATE",
        ] {
            assert!(!migration_work(q), "{q}");
        }
    }

    /// Issue 47, 5: what opens, ends and settles a session's build window.
    #[test]
    fn history_reads_writes_and_truncates_are_marked() {
        for (q, want) in [
            (
                "SELECT \"django_migrations\".\"id\", \"django_migrations\".\"app\" FROM \"django_migrations\"",
                Mark::HistoryRead,
            ),
            (
                "CREATE TABLE IF NOT EXISTS schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)",
                Mark::HistoryRead,
            ),
            (
                "/*NO LOAD BALANCE*/\nSELECT \"installed_rank\",\"version\" FROM \"public\".\"flyway_schema_history\" WHERE \"installed_rank\" > $1",
                Mark::HistoryRead,
            ),
            (
                "INSERT INTO \"django_migrations\" (\"app\", \"name\", \"applied\") VALUES ('forum', '0002', now()) RETURNING \"django_migrations\".\"id\"",
                Mark::HistoryWrite,
            ),
            (
                "UPDATE alembic_version SET version_num='ae1027a6acf' WHERE alembic_version.version_num = '1975ea83b712'",
                Mark::HistoryWrite,
            ),
            (
                "DELETE FROM \"django_migrations\" WHERE (\"app\" = 'forum' AND \"name\" = '0003')",
                Mark::HistoryWrite,
            ),
            (
                "INSERT INTO planck_migrations (name) VALUES ('0002_tz.sql')",
                Mark::HistoryWrite,
            ),
            (
                "TRUNCATE \"forum_post\", \"forum_thread\" CASCADE",
                Mark::Truncate,
            ),
            ("TRUNCATE schema_migrations", Mark::Truncate),
            // knex takes its lock before it migrates: no record.
            (
                "UPDATE \"knex_migrations_lock\" SET \"is_locked\" = $1 WHERE \"is_locked\" = $2",
                Mark::HistoryRead,
            ),
            // A table's name as a value is no access to it.
            (
                "SELECT 1 FROM pg_class WHERE relname = 'django_migrations'",
                Mark::None,
            ),
            ("CREATE TABLE forum_tag (id int)", Mark::None),
            ("UPDATE forum_thread SET likes = 0", Mark::None),
        ] {
            assert_eq!(mark(q), want, "{q}");
        }
    }

    #[test]
    fn queries_split_at_top_level_semicolons_only() {
        assert_eq!(
            split("BEGIN; select 'a;b', $x$;$x$ -- c;\n; /* d; */ COMMIT;;"),
            vec!["BEGIN", "select 'a;b', $x$;$x$ -- c;", "/* d; */ COMMIT"]
        );
        assert_eq!(split("  ;  -- nothing\n"), Vec::<&str>::new());
        assert_eq!(
            split("CREATE FUNCTION f() RETURNS int AS $$ select 1; $$ LANGUAGE sql; select 2"),
            vec![
                "CREATE FUNCTION f() RETURNS int AS $$ select 1; $$ LANGUAGE sql",
                "select 2"
            ]
        );
    }

    #[test]
    fn column_positions_stay_as_they_are() {
        let n = normalize(
            "SELECT a, count(*) FROM t WHERE b = 5 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10",
        );
        assert_eq!(
            n.text,
            "SELECT a, count(*) FROM t WHERE b = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $2"
        );
        // Django's aggregate: the position after a CASE item, in a subquery.
        let n = normalize(
            "SELECT * FROM (SELECT \"x\", CASE WHEN y > 3 THEN 1 ELSE 0 END AS c, COUNT(*) \
             FROM t GROUP BY \"x\", CASE WHEN y > 3 THEN 1 ELSE 0 END, 3) s",
        );
        assert_eq!(
            n.text,
            "SELECT * FROM (SELECT \"x\", CASE WHEN y > $1 THEN $2 ELSE $3 END AS c, COUNT(*) \
             FROM t GROUP BY \"x\", CASE WHEN y > $4 THEN $5 ELSE $6 END, 3) s"
        );
        // Values, not positions: in an expression, a function's arguments, a
        // string, a signed or decimal number, a list other than GROUP/ORDER BY.
        for (text, kept) in [
            ("SELECT a FROM t ORDER BY a + 1", 0),
            ("SELECT a FROM t ORDER BY coalesce(a, 1)", 0),
            ("SELECT a FROM t ORDER BY '1'", 0),
            ("SELECT a FROM t ORDER BY -1", 0),
            ("SELECT a FROM t ORDER BY 1.5", 0),
            ("SELECT a FROM t WHERE a IN (1, 2)", 0),
            ("SELECT rank() OVER (PARTITION BY 1) FROM t", 0),
            ("SELECT 1, 2 FROM t", 0),
        ] {
            let n = normalize(text);
            assert!(
                n.literals.len() + kept > 0 && !n.text.contains(" 1"),
                "{text}: {n:?}"
            );
        }
    }

    #[test]
    fn literals_become_numbered_parameters() {
        let n =
            normalize("UPDATE pgbench_accounts SET abalance = abalance + -4321 WHERE aid = 77;");
        assert_eq!(
            n.text,
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
        );
        assert_eq!(
            n.literals,
            vec![(1, "-4321".to_string()), (2, "77".to_string())]
        );
        let n = normalize(
            "select * from t1 where a = $1 and b = 'it''s' and c > 1.5e-3 and d = E'\\n'",
        );
        assert_eq!(
            n.text,
            "select * from t1 where a = $1 and b = $2 and c > $3 and d = $4"
        );
        assert_eq!(n.literals[0], (2, "it's".to_string()));
        let n = normalize(
            "select now() - interval '1 day', x-1 from t where \"col 2\" = 'secret-token'",
        );
        assert_eq!(
            n.text,
            "select now() - interval $1, x-$2 from t where \"col 2\" = $3"
        );
        assert!(!n.text.contains("secret"));
    }

    #[test]
    fn session_and_transaction_statements_are_read() {
        assert_eq!(
            meaning("BEGIN ISOLATION LEVEL REPEATABLE READ"),
            Meaning::Begin {
                isolation: Some("repeatable read".into())
            }
        );
        assert_eq!(meaning("begin"), Meaning::Begin { isolation: None });
        assert_eq!(meaning("END"), Meaning::Commit);
        assert_eq!(meaning("ROLLBACK"), Meaning::Rollback);
        assert_eq!(meaning("ROLLBACK TO SAVEPOINT a"), Meaning::Other);
        assert_eq!(
            meaning("SET LOCAL app.tenant = '42'"),
            Meaning::Set {
                name: "app.tenant".into(),
                value: Some("42".into()),
                local: true
            }
        );
        assert_eq!(
            meaning("set search_path to app, public"),
            Meaning::Set {
                name: "search_path".into(),
                value: Some("app, public".into()),
                local: false
            }
        );
        assert_eq!(
            meaning("SET ROLE app_user"),
            Meaning::Set {
                name: "role".into(),
                value: Some("app_user".into()),
                local: false
            }
        );
        assert_eq!(
            meaning("RESET ROLE"),
            Meaning::Set {
                name: "role".into(),
                value: None,
                local: false
            }
        );
        assert_eq!(
            meaning("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            Meaning::Isolation("serializable".into())
        );
        assert_eq!(
            meaning("select set_config('role', 'app_user', true), set_config('x', $1, false)"),
            Meaning::Set {
                name: "role".into(),
                value: Some("app_user".into()),
                local: true
            }
        );
        assert_eq!(
            meaning("SELECT set_config('app.account_id', $1, false)"),
            Meaning::Set {
                name: "app.account_id".into(),
                value: Some("$1".into()),
                local: false
            }
        );
        assert_eq!(meaning("select 1"), Meaning::Other);
    }
}
