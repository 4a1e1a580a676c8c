//! Which captured statements are noise, and why.
//!
//! pg_stat_statements sees everything a test run sends: the application's
//! queries, but also transaction control, session settings, the driver's
//! catalog lookups, the migrations the suite ran and planck's own queries.
//! Only the first are worth planning. Each rule here is one [`Reason`], so the
//! summary can say how many statements each one dropped.
//!
//! The rules work on tokens (sqlparser's tokenizer, which knows comments,
//! quoted identifiers and `$n` placeholders), not on a parse: normalized texts
//! are not always valid SQL for a parser, and a rule only needs the leading
//! keyword and the identifiers used.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use crate::catalog::schema::MIGRATION_TABLES;

/// The comment planck puts in front of every statement it sends while
/// recording, so the capture can recognise them.
pub const PLANCK_TAG: &str = "/* planck */";

/// Why a statement was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// Sent by planck itself: tagged `/* planck */`.
    Planck,
    /// planck's bookkeeping: its `planck` schema, `planck_migrations`, the
    /// legacy `planck_seed_saved`.
    PlanckBookkeeping,
    /// The server's own row checks and actions for a foreign key
    /// (`SELECT 1 FROM ONLY ... x WHERE ... FOR KEY SHARE OF x`, cascades).
    ForeignKeyCheck,
    /// The server validating a foreign key as it is added
    /// (`SELECT fk."..." FROM ONLY ... fk LEFT OUTER JOIN ONLY ... pk ...`).
    ForeignKeyValidation,
    /// `pg_stat_statements_reset(...)`.
    StatsReset,
    /// Reads system catalogs, information_schema or pg_stat_statements.
    Catalog,
    /// BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, ...
    Transaction,
    /// SET, RESET, SHOW and `SELECT set_config(...)`.
    Setting,
    /// DEALLOCATE and DISCARD, what pools send between clients.
    Deallocate,
    /// LISTEN, NOTIFY, UNLISTEN and `pg_notify(...)`.
    ListenNotify,
    /// Schema changes and maintenance: CREATE, ALTER, DROP, GRANT, TRUNCATE, VACUUM, ...
    Ddl,
    /// Any other utility statement (COPY, LOCK, CALL, EXPLAIN, ...): nothing to plan.
    Utility,
    /// `SELECT $1`: a connection check.
    Ping,
    /// Run only inside migrations' transactions (a transaction with DDL or
    /// a write to a migration tool's bookkeeping table: a backfill, a data
    /// migration). Told by the capture relay from the transactions it saw,
    /// never from a text alone ([`classify`] does not return it).
    Migration,
}

impl Reason {
    pub const ALL: [Reason; 14] = [
        Reason::Planck,
        Reason::PlanckBookkeeping,
        Reason::ForeignKeyCheck,
        Reason::ForeignKeyValidation,
        Reason::StatsReset,
        Reason::Catalog,
        Reason::Transaction,
        Reason::Setting,
        Reason::Deallocate,
        Reason::ListenNotify,
        Reason::Ddl,
        Reason::Utility,
        Reason::Ping,
        Reason::Migration,
    ];

    /// The kebab-case name used in the summary and its JSON.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Planck => "planck",
            Reason::PlanckBookkeeping => "planck-bookkeeping",
            Reason::ForeignKeyCheck => "fk-check",
            Reason::ForeignKeyValidation => "fk-validation",
            Reason::StatsReset => "stats-reset",
            Reason::Catalog => "catalog",
            Reason::Transaction => "transaction",
            Reason::Setting => "setting",
            Reason::Deallocate => "deallocate",
            Reason::ListenNotify => "listen-notify",
            Reason::Ddl => "ddl",
            Reason::Utility => "utility",
            Reason::Ping => "ping",
            Reason::Migration => "migration",
        }
    }

    pub fn help(self) -> &'static str {
        match self {
            Reason::Planck => "planck's own statements (tagged /* planck */)",
            Reason::PlanckBookkeeping => {
                "planck's bookkeeping tables (schema planck, planck_migrations, planck_seed_saved)"
            }
            Reason::ForeignKeyCheck => "the server's foreign-key row checks and actions",
            Reason::ForeignKeyValidation => "the server validating a foreign key as it is added",
            Reason::StatsReset => "pg_stat_statements_reset()",
            Reason::Catalog => "system catalog, information_schema and pg_stat_statements queries",
            Reason::Transaction => "BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE",
            Reason::Setting => "SET, RESET, SHOW, set_config()",
            Reason::Deallocate => "DEALLOCATE, DISCARD",
            Reason::ListenNotify => "LISTEN, NOTIFY, UNLISTEN, pg_notify()",
            Reason::Ddl => "DDL and maintenance (migrations, fixtures)",
            Reason::Utility => "other utility statements (COPY, LOCK, CALL, ...)",
            Reason::Ping => "connection checks (SELECT $1)",
            Reason::Migration => {
                "statements run only by migrations: inside their transactions, or on their \
                 connection before the tool recorded them (backfills, data migrations)"
            }
        }
    }
}

impl Reason {
    /// planck's own, never the application's, even with `--keep-all`.
    pub fn is_planck(self) -> bool {
        matches!(self, Reason::Planck | Reason::PlanckBookkeeping)
    }
}

/// The tables planck keeps its bookkeeping in, outside its own schema.
const PLANCK_TABLES: &[&str] = &[
    "planck_migrations",
    "planck_seed_saved",
    "planck_seed_saved_id_seq",
];

/// One token of a statement, as much as the rules need.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier or keyword: lowercased unless it was quoted.
    Word(String),
    Punct(String),
    Placeholder,
    Other,
}

fn tokens(query: &str) -> (Vec<Tok>, Option<String>) {
    let dialect = PostgreSqlDialect {};
    let mut first_comment = None;
    let Ok(raw) = Tokenizer::new(&dialect, query).tokenize() else {
        // A text the tokenizer rejects (it happens with odd quoting): fall
        // back to splitting on whitespace and punctuation.
        let toks = query
            .split(|c: char| c.is_whitespace() || "(),;.=".contains(c))
            .filter(|w| !w.is_empty())
            .map(|w| Tok::Word(w.to_lowercase()))
            .collect();
        return (toks, None);
    };
    let mut out = Vec::new();
    for t in raw {
        match t {
            // planck's tag: in front of the statement (as planck wrote it
            // up to 0.1), or after its first word (PostgreSQL 18 drops a
            // leading comment from the text pg_stat_statements keeps).
            Token::Whitespace(Whitespace::MultiLineComment(c)) if out.len() <= 1 => {
                first_comment.get_or_insert(format!("/*{c}*/"));
            }
            Token::Whitespace(_) => {}
            Token::Word(w) => out.push(Tok::Word(if w.quote_style.is_some() {
                w.value
            } else {
                w.value.to_lowercase()
            })),
            Token::Placeholder(_) => out.push(Tok::Placeholder),
            Token::Number(..) => out.push(Tok::Placeholder),
            Token::LParen => out.push(Tok::Punct("(".into())),
            Token::RParen => out.push(Tok::Punct(")".into())),
            Token::Period => out.push(Tok::Punct(".".into())),
            Token::SemiColon => {}
            _ => out.push(Tok::Other),
        }
    }
    (out, first_comment)
}

/// The identifiers a statement uses (lowercased unless quoted), for matching
/// table names: `public.items` gives `public` and `items`.
pub fn identifiers(query: &str) -> Vec<String> {
    tokens(query)
        .0
        .into_iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
        .collect()
}

/// Why `query` is noise, or `None` when it is a statement to keep.
pub fn classify(query: &str) -> Option<Reason> {
    let (toks, first_comment) = tokens(query);
    if first_comment.as_deref() == Some(PLANCK_TAG) {
        return Some(Reason::Planck);
    }
    let word = |i: usize| match toks.get(i) {
        Some(Tok::Word(w)) => w.as_str(),
        _ => "",
    };
    let has_word = |w: &str| toks.iter().any(|t| matches!(t, Tok::Word(x) if x == w));
    // Leading parentheses: `(SELECT ...) UNION (SELECT ...)`.
    let start = toks
        .iter()
        .position(|t| *t != Tok::Punct("(".into()))
        .unwrap_or(0);
    let first = word(start);
    let second = word(start + 1);
    let word_is = |i: usize, w: &str| matches!(toks.get(i), Some(Tok::Word(x)) if x == w);
    let punct_is = |i: usize, p: &str| matches!(toks.get(i), Some(Tok::Punct(x)) if x == p);
    // planck's bookkeeping: `planck.<anything>` or one of its legacy tables.
    let bookkeeping = toks.iter().enumerate().any(|(i, t)| match t {
        Tok::Word(w) if w == "planck" => punct_is(i + 1, "."),
        Tok::Word(w) => PLANCK_TABLES.contains(&w.as_str()),
        _ => false,
    }) || (matches!(first, "create" | "drop" | "alter")
        && has_word("schema")
        && has_word("planck"));
    if bookkeeping {
        return Some(Reason::PlanckBookkeeping);
    }
    if toks
        .iter()
        .any(|t| matches!(t, Tok::Word(w) if w == "pg_stat_statements_reset"))
    {
        return Some(Reason::StatsReset);
    }
    // The server's own SPI statements for foreign keys (ri_triggers.c), in
    // their fixed forms. The row check: `SELECT 1 FROM [ONLY] t x WHERE ...
    // FOR KEY SHARE OF x`.
    let n = toks.len();
    let tail = ["for", "key", "share", "of", "x"];
    if first == "select"
        && matches!(toks.get(start + 1), Some(Tok::Placeholder))
        && word_is(start + 2, "from")
        && n >= tail.len()
        && tail
            .iter()
            .enumerate()
            .all(|(k, w)| word_is(n - tail.len() + k, w))
    {
        return Some(Reason::ForeignKeyCheck);
    }
    // The validation of a new foreign key: `SELECT fk."a" FROM [ONLY] child
    // fk LEFT OUTER JOIN [ONLY] parent pk ON ...`.
    if first == "select"
        && word_is(start + 1, "fk")
        && punct_is(start + 2, ".")
        && toks.windows(3).any(|w| {
            w == [
                Tok::Word("left".into()),
                Tok::Word("outer".into()),
                Tok::Word("join".into()),
            ]
        })
        && has_word("pk")
    {
        return Some(Reason::ForeignKeyValidation);
    }
    // Cascades and SET NULL / SET DEFAULT actions: `DELETE FROM ONLY t
    // WHERE $1 OPERATOR(pg_catalog.=) "a"`, `UPDATE ONLY t SET ...`.
    let qualified_operator = toks.windows(4).any(|w| {
        w == [
            Tok::Word("operator".into()),
            Tok::Punct("(".into()),
            Tok::Word("pg_catalog".into()),
            Tok::Punct(".".into()),
        ]
    });
    if matches!(first, "delete" | "update") && has_word("only") && qualified_operator {
        return Some(Reason::ForeignKeyCheck);
    }
    // Migration tools' bookkeeping is part of running migrations.
    if toks
        .iter()
        .any(|t| matches!(t, Tok::Word(w) if MIGRATION_TABLES.contains(&w.as_str())))
    {
        return Some(Reason::Ddl);
    }
    let reason = match first {
        "begin" | "start" | "commit" | "end" | "rollback" | "abort" | "savepoint" | "release" => {
            Some(Reason::Transaction)
        }
        "prepare" if second == "transaction" => Some(Reason::Transaction),
        "set" | "reset" | "show" => Some(Reason::Setting),
        "deallocate" | "discard" => Some(Reason::Deallocate),
        "listen" | "notify" | "unlisten" => Some(Reason::ListenNotify),
        "create" | "alter" | "drop" | "comment" | "grant" | "revoke" | "truncate" | "do"
        | "reindex" | "cluster" | "vacuum" | "analyze" | "analyse" | "refresh" | "security"
        | "import" | "reassign" => Some(Reason::Ddl),
        "select" | "insert" | "update" | "delete" | "with" | "values" | "table" | "merge" => None,
        _ => Some(Reason::Utility),
    };
    if reason.is_some() {
        return reason;
    }
    // Catalog: a pg_* relation (a pg_* word not followed by a parenthesis is
    // a relation, not a function), information_schema, pg_stat_statements.
    let lparen = Tok::Punct("(".into());
    let catalog = toks.iter().enumerate().any(|(i, t)| match t {
        // `pg_catalog.set_config(...)` is a function call, not a catalog read.
        Tok::Word(w) if w == "pg_catalog" => toks.get(i + 3) != Some(&lparen),
        Tok::Word(w) => {
            w == "information_schema"
                || w.starts_with("pg_stat_statements")
                || w.starts_with("pg_") && toks.get(i + 1) != Some(&lparen)
        }
        _ => false,
    });
    if catalog {
        return Some(Reason::Catalog);
    }
    let no_from = !has_word("from") && !has_word("into") && first == "select";
    if no_from && has_word("set_config") {
        return Some(Reason::Setting);
    }
    if no_from && has_word("pg_notify") {
        return Some(Reason::ListenNotify);
    }
    if first == "select" && toks.len() == 2 && toks[1] == Tok::Placeholder {
        return Some(Reason::Ping);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_statements_are_kept() {
        for q in [
            "SELECT id, title FROM items WHERE pouch_id = $1 AND status = $2",
            "INSERT INTO rate_limits (key) VALUES ($1) ON CONFLICT (key) DO UPDATE SET hits = rate_limits.hits + $2",
            "WITH x AS (SELECT $1) UPDATE items SET title = $2 WHERE id = $3",
            "(SELECT id FROM a) UNION (SELECT id FROM b)",
            "DELETE FROM dpop_replays WHERE seen_at < now() - $1::interval",
            "SELECT pg_advisory_xact_lock($1)",
            "SELECT set_config($1, $2, $3) FROM accounts",
            // Look like the server's forms, but are the application's.
            "SELECT 1 FROM items x WHERE x.id = $1 FOR UPDATE",
            "SELECT fk FROM links WHERE pk = $1",
            "DELETE FROM items WHERE id = $1",
            "SELECT planck FROM t",
        ] {
            assert_eq!(classify(q), None, "{q}");
        }
    }

    #[test]
    fn noise_is_dropped_with_its_reason() {
        let cases = [
            (
                "SELECT /* planck */ count(*) FROM pg_stat_statements",
                Reason::Planck,
            ),
            // The tag in front, as recorded before PostgreSQL 18 dropped it.
            (
                "/* planck */ SELECT count(*) FROM pg_stat_statements",
                Reason::Planck,
            ),
            (
                "SET /* planck */ pg_stat_statements.track = $1",
                Reason::Planck,
            ),
            (
                "SELECT name FROM planck_migrations ORDER BY name",
                Reason::PlanckBookkeeping,
            ),
            (
                "INSERT INTO planck.seed_saved (kind, ddl) VALUES ($1, $2)",
                Reason::PlanckBookkeeping,
            ),
            (
                "CREATE SCHEMA IF NOT EXISTS planck",
                Reason::PlanckBookkeeping,
            ),
            (
                "SELECT id, ddl FROM \"planck\".\"seed_saved\" ORDER BY id",
                Reason::PlanckBookkeeping,
            ),
            (
                "DELETE FROM planck_seed_saved WHERE id = $1",
                Reason::PlanckBookkeeping,
            ),
            (
                "SELECT $2 FROM ONLY \"public\".\"pouches\" x WHERE \"id\" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x",
                Reason::ForeignKeyCheck,
            ),
            (
                "SELECT 1 FROM \"public\".\"accounts\" x WHERE \"id\" OPERATOR(pg_catalog.=) $1 AND \"region\" OPERATOR(pg_catalog.=) $2 FOR KEY SHARE OF x",
                Reason::ForeignKeyCheck,
            ),
            (
                "DELETE FROM ONLY \"public\".\"items\" WHERE $1 OPERATOR(pg_catalog.=) \"pouch_id\"",
                Reason::ForeignKeyCheck,
            ),
            (
                "UPDATE ONLY \"public\".\"items\" SET \"pouch_id\" = NULL WHERE $1 OPERATOR(pg_catalog.=) \"pouch_id\"",
                Reason::ForeignKeyCheck,
            ),
            (
                "SELECT fk.\"pouch_id\" FROM ONLY \"public\".\"items\" fk LEFT OUTER JOIN ONLY \"public\".\"pouches\" pk ON ( pk.\"id\" OPERATOR(pg_catalog.=) fk.\"pouch_id\") WHERE pk.\"id\" IS NULL AND (fk.\"pouch_id\" IS NOT NULL)",
                Reason::ForeignKeyValidation,
            ),
            ("BEGIN", Reason::Transaction),
            ("begin isolation level serializable", Reason::Transaction),
            ("COMMIT", Reason::Transaction),
            ("SAVEPOINT s1", Reason::Transaction),
            ("RELEASE SAVEPOINT s1", Reason::Transaction),
            ("ROLLBACK TO SAVEPOINT s1", Reason::Transaction),
            ("SET LOCAL app.account_id = '42'", Reason::Setting),
            ("RESET ALL", Reason::Setting),
            ("SHOW server_version", Reason::Setting),
            ("SELECT set_config($1, $2, $3)", Reason::Setting),
            (
                "select pg_catalog.set_config($1, $2, false)",
                Reason::Setting,
            ),
            ("DEALLOCATE $1", Reason::Deallocate),
            ("DISCARD ALL", Reason::Deallocate),
            ("LISTEN jobs", Reason::ListenNotify),
            ("NOTIFY jobs, 'x'", Reason::ListenNotify),
            ("SELECT pg_notify($1, $2)", Reason::ListenNotify),
            ("CREATE TABLE t (a int)", Reason::Ddl),
            ("-- migration 3\nALTER TABLE t ADD b int", Reason::Ddl),
            ("TRUNCATE items, pouches CASCADE", Reason::Ddl),
            (
                "SELECT version, checksum FROM _sqlx_migrations ORDER BY version",
                Reason::Ddl,
            ),
            (
                "INSERT INTO \"schema_migrations\" (\"version\") VALUES ($1)",
                Reason::Ddl,
            ),
            ("SELECT \"name\" FROM \"SequelizeMeta\"", Reason::Ddl),
            ("DO $$ BEGIN NULL; END $$", Reason::Ddl),
            ("COPY items FROM STDIN", Reason::Utility),
            (
                "SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid = $1",
                Reason::Catalog,
            ),
            ("SELECT * FROM pg_class", Reason::Catalog),
            (
                "select table_name from information_schema.tables",
                Reason::Catalog,
            ),
            (
                "SELECT pg_stat_statements_reset($1, $2, $3)",
                Reason::StatsReset,
            ),
            (
                "SELECT /* planck */ 1 FROM \"public\".pg_stat_statements_reset(0, $1, 0)",
                Reason::Planck,
            ),
            (
                "SELECT pg_catalog.pg_stat_statements_reset()",
                Reason::StatsReset,
            ),
            ("SELECT $1", Reason::Ping),
        ];
        for (q, want) in cases {
            assert_eq!(classify(q), Some(want), "{q}");
        }
    }

    #[test]
    fn identifiers_keep_quoted_case() {
        assert_eq!(
            identifiers("SELECT a FROM public.Items JOIN \"Files\" f ON $1"),
            [
                "select", "a", "from", "public", "items", "join", "Files", "f", "on"
            ]
        );
    }
}
