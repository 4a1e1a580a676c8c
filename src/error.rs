//! planck's error type and the exit codes it maps to.
//!
//! Library code returns [`Error`], a `thiserror` enum whose variants carry the
//! structured facts a user needs (file, line, table, statement, SQLSTATE).
//! Each variant knows its exit code, so `main` exits in one place. Findings are
//! not errors: they are data (see the explain module) and exit with code 1.

use std::fmt;
use std::path::PathBuf;

use tokio_postgres::error::SqlState;

/// Exit codes, documented in the README. The only place they are defined.
pub mod exit {
    /// Everything went fine.
    pub const OK: i32 = 0;
    /// The command ran and found problems (findings, regressions).
    pub const FINDINGS: i32 = 1;
    /// Bad usage or configuration: flags, files, specs, migrations.
    pub const USAGE: i32 = 2;
    /// The database could not be reached, or refused us.
    pub const DATABASE: i32 = 3;
    /// planck itself failed: a task panicked, stdout could not be written, the
    /// runtime could not start. A bug or the machine, never the user's input.
    pub const INTERNAL: i32 = 4;
    /// Stopped by SIGHUP (128 + 1): the terminal went away.
    pub const HANGUP: i32 = 129;
    /// Interrupted by Ctrl-C (128 + SIGINT, as shells report it).
    pub const INTERRUPTED: i32 = 130;
    /// Stopped by SIGTERM (128 + 15): `timeout`, `docker stop`, CI cancellation.
    pub const TERMINATED: i32 = 143;
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A PostgreSQL error rendered the way a person wants to read it: message,
/// DETAIL, HINT and SQLSTATE, taken from `as_db_error()` and never parsed
/// out of message text.
#[derive(Debug, Clone)]
pub struct PgError {
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based character position in the statement text, when the server gave one.
    pub position: Option<u32>,
}

impl PgError {
    pub fn from_db(e: &tokio_postgres::error::DbError) -> PgError {
        let position = match e.position() {
            Some(tokio_postgres::error::ErrorPosition::Original(p)) => Some(*p),
            _ => None,
        };
        PgError {
            code: e.code().code().to_string(),
            message: e.message().to_string(),
            detail: e.detail().map(str::to_string),
            hint: e.hint().map(str::to_string),
            position,
        }
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.code)?;
        if let Some(d) = &self.detail {
            write!(f, "\n  DETAIL: {d}")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "\n  HINT: {h}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command line or setting that makes no sense.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },

    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot write {}: {source}", path.display())]
    WriteFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A configuration or spec file that does not parse or says something wrong.
    #[error("{}{}: {message}", path.display(), location(*line, *column))]
    Config {
        path: PathBuf,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
        hint: Option<String>,
    },

    #[error("malformed database URL {url}: {message}")]
    BadUrl { url: String, message: String },

    /// The server could not be reached, refused the login, or the database is missing.
    #[error("cannot connect to {url}: {message}")]
    Connect {
        url: String,
        message: String,
        hint: Option<String>,
    },

    /// The managed local cluster could not be set up, started or stopped.
    #[error("{message}")]
    Cluster {
        message: String,
        hint: Option<String>,
    },

    /// A migration file the server rejected, with the position mapped to the file.
    #[error("migration {}{} failed: {pg}", path.display(), location(*line, *column))]
    Migration {
        path: PathBuf,
        line: Option<usize>,
        column: Option<usize>,
        pg: PgError,
    },

    /// An applied migration whose file changed afterwards.
    #[error(
        "migration {name} was changed after it was applied (checksum {applied} in the database, {current} on disk)"
    )]
    MigrationChanged {
        name: String,
        applied: String,
        current: String,
    },

    /// A table or column `planck seed` cannot fill as the schema (and spec) stand.
    #[error("cannot seed {table}{}: {message}", column.as_ref().map(|c| format!(".{c}")).unwrap_or_default())]
    Seed {
        table: String,
        column: Option<String>,
        message: String,
        hint: Option<String>,
    },

    /// No candidate row of a table passes one of its CHECK constraints, as
    /// the server evaluates it: that table's own problem, which leaves the
    /// other tables loading (a partial seed, exit 1), unlike [`Error::Seed`]
    /// at load time, which may be planck's own bug.
    #[error("cannot seed {table}: {message}")]
    CheckUnsatisfied {
        table: String,
        constraint: String,
        message: String,
        hint: Option<String>,
    },

    /// A stop signal (Ctrl-C, SIGTERM, SIGHUP) ended the command; the message
    /// says what state the database was left in. Exits 128 + `signal`.
    #[error("interrupted: {message}")]
    Interrupted { message: String, signal: i32 },

    /// A statement the server rejected, outside migrations.
    #[error("{context}: {pg}")]
    Postgres { context: String, pg: PgError },

    /// The connection broke or another client-side database failure.
    #[error("{context}: {source}")]
    Db {
        context: String,
        #[source]
        source: tokio_postgres::Error,
    },

    /// pg_stat_statements is not in the server's shared_preload_libraries.
    #[error(
        "pg_stat_statements is not loaded: the server's shared_preload_libraries is {}",
        if current.is_empty() { "empty".to_string() } else { format!("'{current}'") }
    )]
    NotPreloaded { current: String },

    /// The extension is missing in the database and this role may not create it.
    #[error(
        "the pg_stat_statements extension does not exist in database {database}, and role {role} may not create it: {pg}"
    )]
    ExtensionMissing {
        database: String,
        role: String,
        pg: PgError,
    },

    /// The command `record` should run does not exist or cannot be run.
    #[error("cannot run {program}: {message}")]
    Command {
        program: String,
        message: String,
        hint: Option<String>,
    },

    /// planck itself failed (a task panicked, stdout could not be written):
    /// exit code 4, never "usage".
    #[error("internal error: {message}")]
    Internal { message: String },

    /// Anything else, with its context chain (command glue only). Exits like
    /// [`Error::Internal`].
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// The manual's pages that explain errors, by kind (`Error::docs`).
pub mod docs {
    pub const CLUSTER: &str = "docs/troubleshooting.md#the-managed-cluster-does-not-start";
    pub const CONNECTING: &str = "docs/troubleshooting.md#connecting-to-your-own-server";
    pub const RECORD_NOTHING: &str = "docs/troubleshooting.md#planck-record-records-nothing";
    pub const SEED: &str = "docs/troubleshooting.md#planck-seed-leaves-tables-out";
    pub const INTERNAL: &str = "docs/troubleshooting.md#an-internal-error-exit-4";
    pub const CONFIGURATION: &str = "docs/configuration.md";
    pub const MIGRATE: &str = "docs/migrate.md";
    pub const RECORD: &str = "docs/record.md";
    /// Every link above (the docs tests resolve each one).
    pub const ALL: &[&str] = &[
        CLUSTER,
        CONNECTING,
        RECORD_NOTHING,
        SEED,
        INTERNAL,
        CONFIGURATION,
        MIGRATE,
        RECORD,
    ];
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage {
            message: message.into(),
            hint: None,
        }
    }

    pub fn usage_hint(message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::Usage {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::Internal {
            message: message.into(),
        }
    }

    pub fn cluster(message: impl Into<String>, hint: Option<String>) -> Error {
        Error::Cluster {
            message: message.into(),
            hint,
        }
    }

    /// Wraps a tokio-postgres error: server errors keep their structure,
    /// connection-level failures become exit code 3.
    pub fn db(context: impl Into<String>, source: tokio_postgres::Error) -> Error {
        let context = context.into();
        match source.as_db_error() {
            Some(db) => Error::Postgres {
                context,
                pg: PgError::from_db(db),
            },
            None => Error::Db { context, source },
        }
    }

    /// The SQLSTATE of a server error, if this is one.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            Error::Postgres { pg, .. } | Error::Migration { pg, .. } => Some(&pg.code),
            _ => None,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Connect { .. } | Error::Db { .. } => exit::DATABASE,
            Error::Postgres { pg, .. } if is_connection_class(&pg.code) => exit::DATABASE,
            Error::Cluster { .. } => exit::DATABASE,
            Error::Interrupted { signal, .. } => match *signal {
                1 => exit::HANGUP,
                15 => exit::TERMINATED,
                _ => exit::INTERRUPTED,
            },
            Error::Internal { .. } | Error::Other(_) => exit::INTERNAL,
            _ => exit::USAGE,
        }
    }

    /// `hint:` lines shown under the headline.
    pub fn hints(&self) -> Vec<String> {
        match self {
            Error::Usage { hint, .. }
            | Error::Config { hint, .. }
            | Error::Seed { hint, .. }
            | Error::CheckUnsatisfied { hint, .. }
            | Error::Connect { hint, .. }
            | Error::Cluster { hint, .. } => hint.iter().cloned().collect(),
            Error::Command { hint, .. } => hint.iter().cloned().collect(),
            Error::BadUrl { .. } => vec![
                "write it as postgres://user@host:5432/dbname (the password percent-encoded), \
                 or as keywords: host=... dbname=... user=..."
                    .to_string(),
            ],
            // A transaction-mode pooler breaks prepared statements: say so
            // where the server's error alone would puzzle.
            Error::Postgres { pg, .. } | Error::Migration { pg, .. } => {
                let code = SqlState::from_code(&pg.code);
                let mut hints: Vec<String> = pooler_hint_for(&code, &pg.message)
                    .map(str::to_string)
                    .into_iter()
                    .collect();
                if matches!(self, Error::Migration { .. }) {
                    if pg.code == "25001" {
                        // CREATE INDEX CONCURRENTLY, VACUUM, ALTER TYPE ... ADD VALUE (< 12).
                        hints.push(
                            "start the file with the line `-- planck:no-transaction` to run its \
                             statements one at a time, outside a transaction"
                                .to_string(),
                        );
                    }
                    hints.push(
                        "earlier migrations stay applied; fix the file and run `planck migrate` again"
                            .to_string(),
                    );
                }
                hints
            }
            Error::NotPreloaded { current } => vec![
                format!(
                    "set shared_preload_libraries = '{}' in postgresql.conf (or with ALTER SYSTEM SET), then restart the server",
                    if current.is_empty() {
                        "pg_stat_statements".to_string()
                    } else {
                        format!("{current},pg_stat_statements")
                    }
                ),
                "planck's managed cluster has it: leave --database-url and DATABASE_URL unset to use it".to_string(),
            ],
            Error::ExtensionMissing { database, .. } => vec![format!(
                "ask a superuser to run `CREATE EXTENSION pg_stat_statements;` in database {database}"
            )],
            Error::MigrationChanged { name, .. } => vec![
                format!("restore {name} as it was and add a new migration for the change"),
                "or, on a throwaway database, run `planck migrate --fresh`".to_string(),
            ],

            _ => Vec::new(),
        }
    }
}

/// SQLSTATEs that mean "the database refused or is gone": connection
/// exceptions (08), invalid authorization (28), invalid catalog name (3D), and
/// of operator intervention (57) only the 57P codes (admin or crash shutdown,
/// cannot connect now, database dropped). 57014 (a statement timeout or a
/// cancel) is a failed statement like any other, not an unreachable server.
fn is_connection_class(code: &str) -> bool {
    matches!(code.get(..2), Some("08" | "28" | "3D")) || code.starts_with("57P")
}

/// Renders an error for stderr: a lowercase headline, `hint:` lines, then the
/// cause chain.
impl Error {
    /// The page of the manual that explains this kind of error, where one
    /// does (a relative path in the repository and the crate, as the
    /// findings' help links).
    pub fn docs(&self) -> Option<&'static str> {
        Some(match self {
            Error::Cluster { .. } => docs::CLUSTER,
            Error::Connect { .. } | Error::BadUrl { .. } => docs::CONNECTING,
            Error::NotPreloaded { .. } | Error::ExtensionMissing { .. } => docs::RECORD_NOTHING,
            Error::Seed { .. } | Error::CheckUnsatisfied { .. } => docs::SEED,
            Error::Internal { .. } | Error::Other(_) => docs::INTERNAL,
            // planck.toml's keys are the configuration page's; a spec's or
            // a queries file's error names its file and line already.
            Error::Config { path, .. } if path.file_name().is_some_and(|n| n == "planck.toml") => {
                docs::CONFIGURATION
            }
            Error::Migration { .. } | Error::MigrationChanged { .. } => docs::MIGRATE,
            Error::Command { .. } => docs::RECORD,
            Error::Usage { .. }
            | Error::Config { .. }
            | Error::ReadFile { .. }
            | Error::WriteFile { .. }
            | Error::Interrupted { .. }
            | Error::Postgres { .. }
            | Error::Db { .. } => return None,
        })
    }
}

pub fn render(err: &Error) -> String {
    let mut out = format!("error: {err}");
    for h in err.hints() {
        out.push_str("\n  hint: ");
        out.push_str(&h);
    }
    let mut causes: Vec<String> = Vec::new();
    // `Other` is transparent: walk the anyhow chain after its first element.
    if let Error::Other(a) = err {
        causes.extend(a.chain().skip(1).map(|c| c.to_string()));
    } else {
        let mut source = std::error::Error::source(err);
        while let Some(s) = source {
            causes.push(s.to_string());
            source = s.source();
        }
    }
    // Many headlines already end with their cause (`cannot read x: No such
    // file`): a cause the text above already says is not repeated.
    for cause in causes {
        if cause.is_empty() || out.contains(&cause) {
            continue;
        }
        out.push_str("\n  caused by: ");
        out.push_str(&cause);
    }
    // The page is one of planck's manual (docs/ in its source and its
    // crate), not of the user's project, where a bare `docs/...` path
    // reads as theirs; there is no published site to link instead.
    if let Some(page) = err.docs() {
        out.push_str("\n  docs: ");
        out.push_str(page);
        out.push_str(" in planck's manual");
    }
    out
}

/// "did you mean" for a misspelt name.
pub fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let v = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            cur.push(v);
        }
        prev = cur;
    }
    prev[b.len()]
}

const POOLER_HINT: &str = "this looks like a transaction-mode connection pooler (PgBouncer, \
    Supavisor: port 6543 on Supabase, a -pooler host on Neon), which breaks prepared \
    statements across transactions: use the direct or session-mode connection string";

/// `db::pooler_hint` for an error already taken apart (a `PgError`'s code,
/// through `SqlState::from_code`, and message).
pub fn pooler_hint_for(code: &SqlState, message: &str) -> Option<&'static str> {
    if *code == SqlState::INVALID_SQL_STATEMENT_NAME || *code == SqlState::DUPLICATE_PSTATEMENT {
        return Some(POOLER_HINT);
    }
    if *code == SqlState::PROTOCOL_VIOLATION && message.contains("prepared statement") {
        return Some(POOLER_HINT);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooler_errors_get_the_hint() {
        let cases = [
            (
                SqlState::INVALID_SQL_STATEMENT_NAME,
                "prepared statement \"s1\" does not exist",
                true,
            ),
            (
                SqlState::DUPLICATE_PSTATEMENT,
                "prepared statement \"s0\" already exists",
                true,
            ),
            (
                SqlState::PROTOCOL_VIOLATION,
                "prepared statement did not exist",
                true,
            ),
            (
                SqlState::PROTOCOL_VIOLATION,
                "prepared statement name is already in use",
                true,
            ),
            (
                SqlState::PROTOCOL_VIOLATION,
                "invalid message length",
                false,
            ),
            (SqlState::UNDEFINED_TABLE, "prepared statement", false),
        ];
        for (code, message, hinted) in cases {
            assert_eq!(
                pooler_hint_for(&code, message).is_some(),
                hinted,
                "{} {message}",
                code.code()
            );
        }
        assert!(POOLER_HINT.contains("session-mode"));
    }

    #[test]
    fn suggest_names_the_nearest_candidate() {
        let names = || ["items", "users"].into_iter();
        assert_eq!(suggest("itmes", names()).as_deref(), Some("items"));
        assert_eq!(suggest("orders", names()), None);
    }

    #[test]
    fn config_error_names_file_line_and_column() {
        let e = Error::Config {
            path: "planck.toml".into(),
            line: Some(3),
            column: Some(7),
            message: "unknown key `colour`".into(),
            hint: Some("known keys: database, tenant".into()),
        };
        let r = render(&e);
        assert!(
            r.starts_with("error: planck.toml:3:7: unknown key `colour`"),
            "{r}"
        );
        assert!(r.contains("\n  hint: known keys"), "{r}");
        assert_eq!(e.exit_code(), exit::USAGE);
    }

    /// Issue 8, section 5: a statement timeout (57014) was reported as
    /// "database unreachable" (exit 3) because all of class 57 was.
    #[test]
    fn connection_class_sqlstates_exit_3() {
        for (code, want) in [
            ("28P01", 3),
            ("3D000", 3),
            ("08006", 3),
            ("57P01", 3),
            ("57P03", 3),
            ("57014", 2),
            ("42601", 2),
        ] {
            let e = Error::Postgres {
                context: "x".into(),
                pg: PgError {
                    code: code.into(),
                    message: "m".into(),
                    detail: None,
                    hint: None,
                    position: None,
                },
            };
            assert_eq!(e.exit_code(), want, "{code}");
        }
    }

    /// Issue 8, section 5: internal failures (a task panicked, stdout broke)
    /// exited 2, the code that tells a user to fix their input.
    #[test]
    fn internal_errors_have_their_own_exit_code() {
        assert_eq!(
            Error::internal("a load task failed").exit_code(),
            exit::INTERNAL
        );
        assert_eq!(
            Error::Other(anyhow::anyhow!("writing stdout")).exit_code(),
            exit::INTERNAL
        );
        assert_ne!(exit::INTERNAL, exit::USAGE);
    }

    /// Issue 8, section 5: one cause was printed twice, once in the headline
    /// and again as "caused by".
    #[test]
    fn a_cause_is_printed_once() {
        let e = Error::ReadFile {
            path: "seeds/x.toml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"),
        };
        let r = render(&e);
        assert_eq!(r.matches("No such file or directory").count(), 1, "{r}");
        insta::assert_snapshot!(r, @"error: cannot read seeds/x.toml: No such file or directory");
    }

    fn pg(code: &str, message: &str) -> PgError {
        PgError {
            code: code.into(),
            message: message.into(),
            detail: Some("Key (id)=(1) already exists.".into()),
            hint: Some("look at the row".into()),
            position: None,
        }
    }

    /// The text of the errors a user meets most, pinned: a change to any of
    /// them is a reviewed snapshot change.
    #[test]
    fn main_errors_read_as_documented() {
        let cases = [
            Error::usage_hint("invalid --scale 0", "--scale must be above 0"),
            Error::Config {
                path: "planck.toml".into(),
                line: Some(4),
                column: Some(1),
                message: "unknown key `colour`".into(),
                hint: Some("known keys: database, paths, seed, explain".into()),
            },
            Error::Connect {
                url: "postgres://app:***@db:5432/x (from DATABASE_URL)".into(),
                message: "connection refused".into(),
                hint: Some("is the server running?".into()),
            },
            Error::Migration {
                path: "migrations/0002_content.sql".into(),
                line: Some(12),
                column: Some(5),
                pg: pg("23505", "duplicate key value violates unique constraint"),
            },
            Error::NotPreloaded {
                current: String::new(),
            },
            Error::Interrupted {
                message: "3 of 9 tables loaded; every foreign key is back".into(),
                signal: 2,
            },
            Error::Interrupted {
                message: "SIGTERM; 3 of 9 tables loaded; every foreign key is back".into(),
                signal: 15,
            },
            Error::internal("a load task panicked"),
        ];
        let text: Vec<String> = cases
            .iter()
            .map(|e| format!("[exit {}]\n{}", e.exit_code(), render(e)))
            .collect();
        insta::assert_snapshot!(text.join("\n\n"));
    }

    /// Issue 8, 3.4: behind a transaction-mode pooler, prepared statements
    /// vanish between transactions (26000); the error says why.
    #[test]
    fn pooler_errors_carry_the_hint() {
        let e = Error::Postgres {
            context: "planning statement 3".into(),
            pg: PgError {
                code: "26000".into(),
                message: "prepared statement \"s1\" does not exist".into(),
                detail: None,
                hint: None,
                position: None,
            },
        };
        assert!(render(&e).contains("hint: this looks like a transaction-mode connection pooler"));
    }
}
