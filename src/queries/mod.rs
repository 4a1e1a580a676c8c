//! The queries file: the statements planck verifies, kept in the user's repo.
//!
//! `planck record` writes it, `planck explain` reads it, and people edit it
//! in pull requests, so it is TOML with one `[[statement]]` per entry, a
//! stable order, no timings (they would change on every run) and the SQL in a
//! multi-line string that diffs line by line:
//!
//! ```toml
//! format_version = 2
//!
//! [[statement]]
//! id = "5f0c3a9e1b2d4c68"
//! role = "app_user"
//! bypass_rls = false
//! calls = 12
//! rows = 40
//! query = """
//! SELECT id, title FROM items WHERE pouch_id = $1 ORDER BY updated_at DESC LIMIT $2
//! """
//!
//! [[transaction]]
//! id = "checkout"
//! statements = ["5f0c3a9e1b2d4c68"]
//! isolation = "repeatable read"
//! ```
//!
//! A statement's identity is its `id`: a hash of its normalized text (space
//! collapsed) and role, so it survives a new server, where pg_stat_statements'
//! queryid changes. Hand-added entries may leave `id` out; it is derived.
//!
//! Format 2 (this one) adds, over format 1: per-statement `contexts`,
//! `created_relations` (relations the test run created), `[[transaction]]`
//! entries ([`transaction`]) and `x-` keys, which planck never reads and
//! always keeps. Format 1 files are read as they are and written back as
//! format 2; a newer format is an error naming the file. Within format 2,
//! `record` may also write the relay's evidence ([`evidence`]): per
//! statement `sent` and `shapes`, and an `[observed]` table; older planck
//! versions reject those keys as unknown, so a file with them needs this one.
//!
//! A command rewrites only what it owns ([`write`]): `record` owns the facts
//! it measures on the statements it matched (calls, rows, bypass_rls,
//! database, contexts, sent, shapes), the `[observed]` table and the
//! entries it adds or prunes. Comments, hand edits,
//! `[[transaction]]` entries and `x-` keys survive a rewrite as written.

pub(crate) mod evidence;
mod merge;
mod read_error;
mod source;
mod statement;
pub(crate) mod transaction;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::line_col;
use crate::error::{Error, Result};

pub use evidence::{Observed, ObservedColumn, Sent, ValueShape};
pub use merge::{Merge, MergeStatus};
pub(crate) use read_error::{check_keys, file_error};
pub use statement::{Context, Statement, identity, normalize_space, text_key};
pub use transaction::{Bind, BindSource, Isolation, SettingValue, Transaction, TxOutcome};

/// The format this planck writes.
pub const FORMAT_VERSION: u32 = 2;
/// The formats this planck reads.
pub const READABLE_FORMATS: [u32; 2] = [1, 2];
/// The default file name under the project's queries folder.
pub const DEFAULT_FILE: &str = "recorded.toml";

#[derive(Debug, Clone, Default)]
pub struct QueryFile {
    pub statements: Vec<Statement>,
    /// `[[transaction]]` entries, validated against the statements.
    pub transactions: Vec<Transaction>,
    /// Relations the recorded test run created (`schema.name`), which the
    /// target database may not have.
    pub created_relations: Vec<String>,
    /// The literals the application compared columns with (`[observed]`):
    /// `record` owns it and replaces it whole.
    pub observed: Observed,
    /// The document it was read from: a rewrite edits it rather than
    /// starting over, so what no command owns survives.
    source: Option<source::Source>,
}

#[derive(Debug, Deserialize)]
struct RawFile {
    format_version: Option<toml::Spanned<i64>>,
    #[serde(default)]
    statement: Vec<toml::Spanned<RawStatement>>,
    #[serde(default)]
    transaction: Vec<toml::Spanned<transaction::RawTransaction>>,
    #[serde(default)]
    created_relations: Vec<String>,
    observed: Option<toml::Spanned<BTreeMap<String, ObservedColumn>>>,
    /// Anything else: `x-` keys are kept, others are typos.
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct RawStatement {
    id: Option<String>,
    query: String,
    role: Option<String>,
    bypass_rls: Option<bool>,
    database: Option<String>,
    queryid: Option<i64>,
    calls: Option<u64>,
    rows: Option<u64>,
    #[serde(default)]
    contexts: Vec<Context>,
    sent: Option<Sent>,
    #[serde(default)]
    shapes: BTreeMap<String, String>,
    ignore: Option<String>,
    #[serde(default)]
    manual: bool,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

const FILE_KEYS: &str = "format_version, statement, transaction, created_relations, observed";
const STATEMENT_KEYS: &str = "id, query, role, bypass_rls, database, queryid, calls, rows, contexts, sent, shapes, ignore, manual";

/// A statement's `shapes`, keyed by parameter number.
fn parse_shapes(
    path: &Path,
    line: usize,
    raw: &BTreeMap<String, String>,
) -> Result<BTreeMap<u32, ValueShape>> {
    raw.iter()
        .map(|(k, v)| {
            let n = k.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                file_error(
                    path,
                    Some(line),
                    format!("`shapes` key `{k}` is not a parameter number"),
                    "key each shape by the number of its parameter: `shapes = { 1 = \"prefix\" }` for $1",
                )
            })?;
            let shape = v.parse::<ValueShape>().map_err(|()| {
                file_error(
                    path,
                    Some(line),
                    format!("`{v}` is not a value shape (parameter ${n})"),
                    format!("a shape is {}", evidence::SHAPE_FORMS),
                )
            })?;
            Ok((n, shape))
        })
        .collect()
}

/// The project's default queries file.
pub fn default_path(queries_dir: &Path) -> PathBuf {
    queries_dir.join(DEFAULT_FILE)
}

impl QueryFile {
    /// [`QueryFile::load`] for a command that needs the file: a missing one
    /// is a usage error saying how to make it.
    pub fn load_required(path: &Path) -> Result<QueryFile> {
        if !path.is_file() {
            return Err(Error::usage_hint(
                format!("no queries file at {}", path.display()),
                "record one with `planck record -- <your tests>`, or pass --queries PATH",
            ));
        }
        QueryFile::load(path)
    }

    pub fn load(path: &Path) -> Result<QueryFile> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        QueryFile::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<QueryFile> {
        let raw: RawFile =
            toml::from_str(text).map_err(|e| crate::config::toml_error(path, text, &e))?;
        let version = match &raw.format_version {
            Some(v) => {
                let (line, _) = line_col(text, v.span().start);
                let n = *v.get_ref();
                if !READABLE_FORMATS.iter().any(|&r| i64::from(r) == n) {
                    let newer = n > i64::from(FORMAT_VERSION);
                    return Err(file_error(
                        path,
                        Some(line),
                        if newer {
                            format!("format_version {n} is newer than this planck reads (1 and 2)")
                        } else {
                            format!("format_version {n} is not a queries file format (1 and 2 are)")
                        },
                        if newer {
                            format!(
                                "upgrade planck (this is {}), or re-record the file with this one",
                                env!("CARGO_PKG_VERSION")
                            )
                        } else {
                            "set format_version = 2, or re-record the file".to_string()
                        },
                    ));
                }
                n as u32
            }
            None => 1,
        };
        check_keys(path, None, "the queries file", &raw.other, FILE_KEYS)?;
        let mut seen: HashMap<String, usize> = Default::default();
        // Identity is text and role: two entries that differ only by a
        // hand-edited id are the same statement too.
        let mut seen_text: HashMap<(String, Option<String>), usize> = Default::default();
        let mut statements = Vec::with_capacity(raw.statement.len());
        for spanned in raw.statement {
            let (line, _) = line_col(text, spanned.span().start);
            let r = spanned.into_inner();
            check_keys(
                path,
                Some(line),
                "a [[statement]]",
                &r.other,
                STATEMENT_KEYS,
            )?;
            if r.query.trim().is_empty() {
                return Err(file_error(
                    path,
                    Some(line),
                    "statement with an empty query",
                    "delete the entry or put the SQL in `query`",
                ));
            }
            let id =
                r.id.unwrap_or_else(|| identity(&r.query, r.role.as_deref()));
            if let Some(first) = seen.insert(id.clone(), line) {
                return Err(file_error(
                    path,
                    Some(line),
                    format!("statement {id} appears twice (first at line {first})"),
                    "delete one of the two entries",
                ));
            }
            if let Some(first) = seen_text.insert((text_key(&r.query), r.role.clone()), line) {
                return Err(file_error(
                    path,
                    Some(line),
                    format!("statement {id} has the same text and role as the one at line {first}"),
                    "delete one of the two entries",
                ));
            }
            let shapes = parse_shapes(path, line, &r.shapes)?;
            statements.push(Statement {
                id,
                query: r.query.trim().to_string(),
                role: r.role,
                bypass_rls: r.bypass_rls,
                database: r.database,
                queryid: r.queryid,
                calls: r.calls,
                rows: r.rows,
                contexts: r.contexts,
                sent: r.sent,
                shapes,
                ignore: r.ignore,
                manual: r.manual,
                line: Some(line),
            });
        }
        let observed = match raw.observed {
            Some(o) => {
                let (line, _) = line_col(text, o.span().start);
                let columns = o.into_inner();
                if let Some(k) = columns.keys().find(|k| evidence::split_key(k).is_none()) {
                    return Err(file_error(
                        path,
                        Some(line),
                        format!("`{k}` in [observed] does not name a column"),
                        "write each key as \"schema.table.column\"",
                    ));
                }
                Observed { columns }
            }
            None => Observed::default(),
        };
        let transactions = transaction::validate(path, text, raw.transaction, &statements)?;
        let source = source::Source::parse(path, text, version, &statements, &observed)?;
        Ok(QueryFile {
            statements,
            transactions,
            created_relations: raw.created_relations,
            observed,
            source: Some(source),
        })
    }

    /// The statement with this id (what a transaction's `statements` name).
    pub fn statement(&self, id: &str) -> Option<&Statement> {
        self.statements.iter().find(|s| s.id == id)
    }

    /// A transaction's statements, in the order they run.
    pub fn statements_of<'a>(&'a self, t: &'a Transaction) -> impl Iterator<Item = &'a Statement> {
        t.statements.iter().filter_map(|id| self.statement(id))
    }

    /// The format of the file it was read from (1 when it had none), or
    /// `None` for a file made in memory.
    pub fn read_format(&self) -> Option<u32> {
        self.source.as_ref().map(|s| s.version)
    }

    /// Writes the file atomically (a temporary file renamed over it), so a
    /// failure never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let write_err = |source| Error::WriteFile {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, self.render()).map_err(write_err)?;
        std::fs::rename(&tmp, path).map_err(write_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(query: &str, role: &str) -> Statement {
        Statement {
            id: identity(query, Some(role)),
            query: query.into(),
            role: Some(role.into()),
            bypass_rls: Some(false),
            calls: Some(3),
            ..Default::default()
        }
    }

    #[test]
    fn renders_and_parses_back_the_same() {
        let f = QueryFile {
            statements: vec![
                stmt(
                    "SELECT \"weird\"\"\"\" FROM t WHERE a = $1 AND b = 'x\\y'",
                    "app_user",
                ),
                stmt("SELECT 1\nFROM accounts", "admin"),
            ],
            ..Default::default()
        };
        let text = f.render();
        let back = QueryFile::parse(Path::new("q.toml"), &text).unwrap();
        let mut want = f.statements.clone();
        want.sort_by(|a, b| a.role.cmp(&b.role));
        let got: Vec<_> = back
            .statements
            .iter()
            .map(|s| (&s.id, &s.query, &s.role))
            .collect();
        let exp: Vec<_> = want.iter().map(|s| (&s.id, &s.query, &s.role)).collect();
        assert_eq!(got, exp);
        assert_eq!(back.render(), text, "rendering is stable");
    }

    #[test]
    fn identity_ignores_whitespace_but_not_role() {
        assert_eq!(
            identity("SELECT  1\n FROM t", Some("a")),
            identity("SELECT 1 FROM t", Some("a"))
        );
        assert_ne!(
            identity("SELECT 1", Some("a")),
            identity("SELECT 1", Some("b"))
        );
    }

    #[test]
    fn duplicate_identities_are_an_error_with_line() {
        let text = "format_version = 1\n[[statement]]\nquery = \"SELECT 1\"\n\n[[statement]]\nquery = \"SELECT  1\"\n";
        let err = QueryFile::parse(Path::new("q.toml"), text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("q.toml:5"), "{msg}");
        assert!(msg.contains("appears twice (first at line 2)"), "{msg}");
    }

    #[test]
    fn merge_keeps_hand_edits_and_reports_vanished() {
        let text = r#"format_version = 1

[[statement]]
role = "app_user"
bypass_rls = false
calls = 1
ignore = "known slow, ticket 12"
query = """
SELECT * FROM items
  WHERE id = $1
"""

[[statement]]
manual = true
query = "SELECT count(*) FROM events"

[[statement]]
role = "app_user"
calls = 4
query = "SELECT gone FROM old_table"
"#;
        let mut f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        let captured = vec![
            stmt("SELECT * FROM items WHERE id = $1;", "app_user"),
            stmt("SELECT count(*) FROM events", "owner"),
            stmt("SELECT 2 FROM new_table", "owner"),
        ];
        let m = f.clone().merge(&captured, false);
        let statuses: Vec<MergeStatus> = m.outcomes.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            statuses,
            [
                MergeStatus::Updated,
                MergeStatus::Manual,
                MergeStatus::Added
            ]
        );
        assert_eq!(m.vanished.len(), 1);
        assert_eq!(m.vanished[0].query, "SELECT gone FROM old_table");
        let m = f.merge(&captured, true);
        assert_eq!(m.vanished.len(), 1);
        assert_eq!(f.statements.len(), 3, "pruned the vanished entry only");
        let items = &f.statements[0];
        assert_eq!(items.ignore.as_deref(), Some("known slow, ticket 12"));
        assert_eq!(
            items.query, "SELECT * FROM items\n  WHERE id = $1",
            "hand formatting kept"
        );
        assert_eq!(items.calls, Some(3));
        assert!(f.statements[1].manual && f.statements[1].role.is_none());
        // A second merge of the same capture changes nothing.
        let once = f.render();
        let m = f.merge(&captured, true);
        assert_eq!(m.count(MergeStatus::Unchanged), 2);
        assert_eq!(m.count(MergeStatus::Manual), 1);
        assert!(m.vanished.is_empty());
        assert_eq!(f.render(), once);
    }

    #[test]
    fn same_text_and_role_under_two_ids_is_an_error() {
        let text = "[[statement]]\nid = \"a\"\nrole = \"r\"\nquery = \"SELECT 1;\"\n\n\
                    [[statement]]\nid = \"b\"\nrole = \"r\"\nquery = \"SELECT  1\"\n\n\
                    [[statement]]\nid = \"c\"\nrole = \"other\"\nquery = \"SELECT 1\"\n";
        let msg = QueryFile::parse(Path::new("q.toml"), text)
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "q.toml:6: statement b has the same text and role as the one at line 1"
        );
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let text = "format_version = 1\n[[statement]]\nquery = \"SELECT 1\nrole = 1\n";
        let msg = QueryFile::parse(Path::new("q.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("q.toml:3:"), "{msg}");
    }

    /// The defect (issue 8): a re-recording rebuilt the file from its
    /// statements, so every comment a person wrote was lost.
    #[test]
    fn comments_survive_a_rewrite_defect() {
        let text = "# our team's notes on the queries\nformat_version = 2\n\n\
            # hot path: keep an eye on this one\n[[statement]]\nrole = \"app\"\ncalls = 1 # measured\n\
            query = \"SELECT a FROM t WHERE a = $1\"\n\n[[statement]]\nrole = \"app\"\ncalls = 2\n\
            query = \"SELECT b FROM u\"\n# the end\n";
        let mut f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        let captured = vec![Statement {
            calls: Some(5),
            ..stmt("SELECT a FROM t WHERE a = $1", "app")
        }];
        f.merge(&captured, true);
        let out = f.render();
        assert_eq!(
            out,
            "# our team's notes on the queries\nformat_version = 2\n\n\
            # hot path: keep an eye on this one\n[[statement]]\nrole = \"app\"\ncalls = 5 # measured\n\
            bypass_rls = false\nquery = \"SELECT a FROM t WHERE a = $1\"\n# the end\n"
        );
    }

    /// The defect (issue 8): entries record does not own (transactions, x-
    /// keys) would be dropped by a rewrite; they survive as written.
    #[test]
    fn entries_no_command_owns_survive_a_rewrite_defect() {
        let text = "format_version = 2\nx-team = \"payments\"\n\n[[statement]]\nid = \"s1\"\nrole = \"app\"\n\
            x-owner = \"bob\"\nquery = \"SELECT a FROM t\"\n\n\
            [[transaction]]\nid = \"t1\"\nstatements = [\"s1\"]   # the only one\nthink_ms = 3\n\n\
            [[transaction.bind]]\nstatement = \"s1\"\nparam = 1\nvalue = 7\n\n[x-notes]\nwhy = \"later\"\n";
        let mut f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        assert_eq!(f.transactions.len(), 1);
        let captured = vec![
            stmt("SELECT a FROM t", "app"),
            stmt("SELECT 2 FROM v", "app"),
        ];
        f.merge(&captured, true);
        let out = f.render();
        for kept in [
            "x-team = \"payments\"\n",
            "x-owner = \"bob\"\n",
            "[[transaction]]\nid = \"t1\"\nstatements = [\"s1\"]   # the only one\nthink_ms = 3\n",
            "[[transaction.bind]]\nstatement = \"s1\"\nparam = 1\nvalue = 7\n",
            "[x-notes]\nwhy = \"later\"\n",
            "SELECT 2 FROM v",
        ] {
            assert!(out.contains(kept), "{kept:?} lost:\n{out}");
        }
        let back = QueryFile::parse(Path::new("q.toml"), &out).unwrap();
        assert_eq!(back.transactions, {
            let mut t = f.transactions.clone();
            t[0].line = back.transactions[0].line;
            t
        });
        assert_eq!(back.render(), out, "a second rewrite changes nothing");
    }

    #[test]
    fn a_transactions_statements_are_found_in_order() {
        let text = "[[statement]]\nid = \"a\"\nquery = \"SELECT 1 FROM t\"\n\
            [[statement]]\nid = \"b\"\nquery = \"SELECT 2 FROM t\"\n\
            [[transaction]]\nid = \"t1\"\nstatements = [\"b\", \"a\", \"b\"]\n";
        let f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        let ids: Vec<&str> = f
            .statements_of(&f.transactions[0])
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(ids, ["b", "a", "b"]);
        assert!(f.statement("zz").is_none());
    }

    #[test]
    fn x_subtables_stay_with_their_statement_when_sorting_moves_it() {
        let text = "format_version = 2\n\n[[statement]]\nrole = \"b\"\nquery = \"SELECT 2 FROM t\"\n\n\
            [statement.x-meta]\nowner = \"bob\"\n\n[[statement]]\nrole = \"a\"\nquery = \"SELECT 1 FROM t\"\n";
        let mut f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        f.merge(&[], false);
        let out = f.render();
        assert_eq!(
            out,
            "format_version = 2\n\n[[statement]]\nrole = \"a\"\nquery = \"SELECT 1 FROM t\"\n\n\
            [[statement]]\nrole = \"b\"\nquery = \"SELECT 2 FROM t\"\n\n[statement.x-meta]\nowner = \"bob\"\n"
        );
        QueryFile::parse(Path::new("q.toml"), &out).unwrap();
    }

    #[test]
    fn pruning_keeps_statements_a_transaction_names() {
        let text = "[[statement]]\nid = \"s1\"\nrole = \"app\"\nquery = \"SELECT a FROM t\"\n\
            [[transaction]]\nid = \"t1\"\nstatements = [\"s1\"]\n";
        let mut f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        let m = f.merge(&[], true);
        assert_eq!(m.vanished.len(), 1);
        assert_eq!(f.statements.len(), 1, "named by t1: kept");
        QueryFile::parse(Path::new("q.toml"), &f.render()).unwrap();
    }

    #[test]
    fn format_1_is_read_and_written_back_as_2() {
        let text =
            "format_version = 1\n\n[[statement]]\nrole = \"app\"\nquery = \"SELECT 1 FROM t\"\n";
        let f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        assert_eq!(f.read_format(), Some(1));
        assert_eq!(f.statements.len(), 1);
        assert_eq!(
            f.render(),
            text.replace("format_version = 1", "format_version = 2")
        );
        let none =
            QueryFile::parse(Path::new("q.toml"), "[[statement]]\nquery = \"SELECT 1\"\n").unwrap();
        assert_eq!(none.read_format(), Some(1), "no format_version: format 1");
    }

    #[test]
    fn a_newer_format_is_a_clear_error_naming_the_file() {
        let msg = QueryFile::parse(Path::new("q/recorded.toml"), "\nformat_version = 3\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "q/recorded.toml:2: format_version 3 is newer than this planck reads (1 and 2)"
        );
        let msg = QueryFile::parse(Path::new("q.toml"), "format_version = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("format_version 0 is not a queries file format"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_keys_are_typos_unless_x_prefixed() {
        let msg = QueryFile::parse(
            Path::new("q.toml"),
            "[[statement]]\nquery = \"SELECT 1\"\nignroe = \"x\"\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(msg, "q.toml:1: unknown key `ignroe` in a [[statement]]");
        let err = QueryFile::parse(
            Path::new("q.toml"),
            "[[statement]]\nquery = \"SELECT 1\"\nignroe = \"x\"\n",
        )
        .unwrap_err();
        assert!(
            crate::error::render(&err).contains("hint: did you mean `ignore`?"),
            "{}",
            crate::error::render(&err)
        );
        let msg = QueryFile::parse(Path::new("q.toml"), "[[statment]]\nquery = \"SELECT 1\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("unknown key `statment` in the queries file"),
            "{msg}"
        );
    }

    #[test]
    fn contexts_are_read_and_written() {
        let text =
            "[[statement]]\nquery = \"SELECT 1 FROM t\"\ncontexts = [\"top\", \"function\"]\n";
        let f = QueryFile::parse(Path::new("q.toml"), text).unwrap();
        assert_eq!(f.statements[0].contexts, [Context::Top, Context::Function]);
        let fresh = QueryFile {
            statements: f
                .statements
                .iter()
                .map(|s| Statement {
                    line: None,
                    ..s.clone()
                })
                .collect(),
            ..Default::default()
        };
        let back = QueryFile::parse(Path::new("q.toml"), &fresh.render()).unwrap();
        assert_eq!(
            back.statements[0].contexts,
            [Context::Top, Context::Function]
        );
    }

    fn evidence_file() -> QueryFile {
        let mut s = stmt("SELECT id FROM t WHERE name LIKE $1 LIMIT $2", "app_user");
        s.sent = Some(Sent::Prepared);
        s.shapes = [(1, ValueShape::Prefix), (2, ValueShape::Limit(21))].into();
        let mut u = stmt("SELECT 1 FROM t WHERE status = $1", "app_user");
        u.sent = Some(Sent::Unprepared);
        let mut observed = Observed::default();
        observed.columns.insert(
            "public.t.status".into(),
            ObservedColumn {
                values: [("up".to_string(), 120), ("it's down".to_string(), 4)].into(),
                null_tests: 0,
                not_null_tests: 2,
            },
        );
        observed.columns.insert(
            "public.t.processed".into(),
            ObservedColumn {
                null_tests: 7,
                ..Default::default()
            },
        );
        QueryFile {
            statements: vec![s, u],
            observed,
            ..Default::default()
        }
    }

    #[test]
    fn evidence_is_read_and_written_back_stably() {
        let f = evidence_file();
        let text = f.render();
        assert!(text.contains("sent = \"prepared\""), "{text}");
        assert!(
            text.contains("shapes = { 1 = \"prefix\", 2 = \"limit 21\" }"),
            "{text}"
        );
        assert!(text.contains("[observed]"), "{text}");
        let back = QueryFile::parse(Path::new("q.toml"), &text).unwrap();
        let like = back
            .statements
            .iter()
            .find(|s| s.query.contains("LIKE"))
            .unwrap();
        assert_eq!(like.sent, Some(Sent::Prepared));
        assert_eq!(
            like.shapes,
            [(1, ValueShape::Prefix), (2, ValueShape::Limit(21))].into()
        );
        let eq = back
            .statements
            .iter()
            .find(|s| s.query.contains("status"))
            .unwrap();
        assert_eq!((eq.sent, eq.shapes.len()), (Some(Sent::Unprepared), 0));
        assert_eq!(back.observed, f.observed);
        assert_eq!(
            back.observed
                .column("public", "t", "status")
                .map(|c| c.weighted()),
            Some(vec![("up", 120), ("it's down", 4)])
        );
        assert_eq!(back.render(), text, "rendering is stable");
    }

    #[test]
    fn a_re_recording_replaces_the_evidence_and_the_observed_table() {
        let f = evidence_file();
        let mut back = QueryFile::parse(Path::new("q.toml"), &f.render()).unwrap();
        let mut captured = f.statements.clone();
        captured[0].sent = Some(Sent::Unprepared);
        captured[0].shapes = [(1, ValueShape::Infix)].into();
        captured[1].sent = None;
        back.merge(&captured, false);
        back.observed = Observed::default();
        let text = back.render();
        assert!(!text.contains("[observed]"), "{text}");
        assert!(!text.contains("sent = \"prepared\""), "{text}");
        let again = QueryFile::parse(Path::new("q.toml"), &text).unwrap();
        let like = again
            .statements
            .iter()
            .find(|s| s.query.contains("LIKE"))
            .unwrap();
        assert_eq!(like.sent, Some(Sent::Unprepared));
        assert_eq!(like.shapes, [(1, ValueShape::Infix)].into());
        let eq = again
            .statements
            .iter()
            .find(|s| s.query.contains("status"))
            .unwrap();
        assert_eq!(eq.sent, None);
    }

    #[test]
    fn bad_evidence_is_an_error_naming_the_line() {
        let err = |text: &str| {
            QueryFile::parse(Path::new("q.toml"), text)
                .unwrap_err()
                .to_string()
        };
        let e = err("[[statement]]\nquery = \"SELECT 1\"\nshapes = { x = \"prefix\" }\n");
        assert!(
            e.contains("q.toml") && e.contains("`x` is not a parameter number"),
            "{e}"
        );
        let e = err("\n[[statement]]\nquery = \"SELECT 1\"\nshapes = { 1 = \"begins\" }\n");
        assert!(
            e.contains(":2") && e.contains("`begins` is not a value shape"),
            "{e}"
        );
        let e = err("[[statement]]\nquery = \"SELECT 1\"\nsent = \"sometimes\"\n");
        assert!(e.contains("sometimes"), "{e}");
        let e = err("[observed]\n\"t.status\" = { values = { up = 1 } }\n");
        assert!(
            e.contains("`t.status` in [observed] does not name a column"),
            "{e}"
        );
        let e = err("[observed]\n\"public.t.status\" = { value = { up = 1 } }\n");
        assert!(e.contains("value"), "{e}");
    }

    #[test]
    fn a_re_recorded_pause_one_rounding_step_away_keeps_the_file_s_value() {
        let tx = |id: &str, think_ms: f64| Transaction {
            id: id.into(),
            name: None,
            statements: vec![],
            repeat: 1,
            calls: Some(1),
            think_ms,
            role: None,
            settings: vec![],
            isolation: None,
            bind: vec![],
            outcome: TxOutcome::Commit,
            manual: false,
            line: None,
            recorded: true,
            local_settings: vec![],
        };
        let mut f = QueryFile {
            transactions: vec![
                tx("a", 1.0),
                tx("b", 2.0),
                tx("c", 0.0),
                tx("d", 0.0),
                tx("gone", 4.0),
            ],
            ..Default::default()
        };
        f.replace_recorded_transactions(vec![
            tx("a", 2.0),
            tx("b", 8.0),
            tx("c", 2.0),
            tx("d", 4.0),
            tx("new", 1.0),
        ]);
        let got: Vec<(&str, f64)> = f
            .transactions
            .iter()
            .map(|t| (t.id.as_str(), t.think_ms))
            .collect();
        // a moved one step and c from none to 2 ms: kept; b moved two steps and d from none to
        // 4 ms: updated; gone is no longer recorded; new is written as measured.
        assert_eq!(
            got,
            [("a", 1.0), ("b", 8.0), ("c", 0.0), ("d", 4.0), ("new", 1.0)]
        );
    }
}
