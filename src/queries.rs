//! The queries file: the statements planck verifies, kept in the user's repo.
//!
//! `planck record` writes it, `planck explain` reads it, and people edit it
//! in pull requests, so it is TOML with one `[[statement]]` per entry, a
//! stable order, no timings (they would change on every run) and the SQL in a
//! multi-line string that diffs line by line:
//!
//! ```toml
//! format_version = 1
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
//! ```
//!
//! A statement's identity is its `id`: a hash of its normalized text (space
//! collapsed) and role, so it survives a new server, where pg_stat_statements'
//! queryid changes. Hand-added entries may leave `id` out; it is derived.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::config::line_col;
use crate::error::{Error, Result};

pub const FORMAT_VERSION: u32 = 1;
/// The default file name under the project's queries folder.
pub const DEFAULT_FILE: &str = "recorded.toml";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryFile {
    pub statements: Vec<Statement>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statement {
    /// Stable identity (see [`identity`]).
    pub id: String,
    /// Normalized text as pg_stat_statements shows it (`$n` for constants).
    pub query: String,
    /// The role that ran it; `None` for hand-added statements.
    pub role: Option<String>,
    /// Whether that role bypasses row-level security (superuser, BYPASSRLS or owner).
    pub bypass_rls: Option<bool>,
    /// The database it ran in.
    pub database: Option<String>,
    /// pg_stat_statements' queryid, informational only (changes across servers).
    pub queryid: Option<i64>,
    pub calls: Option<u64>,
    pub rows: Option<u64>,
    /// Set by a person: the statement is kept but not verified, with the reason.
    pub ignore: Option<String>,
    /// `true` for entries a person added by hand; `record` never prunes them.
    pub manual: bool,
    /// 1-based line of the entry in the file it was read from.
    pub line: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    format_version: Option<u32>,
    #[serde(default)]
    statement: Vec<toml::Spanned<RawStatement>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatement {
    id: Option<String>,
    query: String,
    role: Option<String>,
    bypass_rls: Option<bool>,
    database: Option<String>,
    queryid: Option<i64>,
    calls: Option<u64>,
    rows: Option<u64>,
    ignore: Option<String>,
    #[serde(default)]
    manual: bool,
}

/// Collapses runs of whitespace, so reformatting a statement keeps its identity.
pub fn normalize_space(query: &str) -> String {
    query.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The identity of a statement: 16 hex digits of SHA-256 over its
/// space-normalized text and role.
pub fn identity(query: &str, role: Option<&str>) -> String {
    let mut h = Sha256::new();
    h.update(normalize_space(query).as_bytes());
    h.update([0]);
    h.update(role.unwrap_or("").as_bytes());
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The text statements are matched on across runs, besides their id:
/// space-normalized, without a trailing semicolon. pg_stat_statements'
/// queryid cannot serve: it hashes table oids, so it changes with every new
/// database, server and major version.
pub fn text_key(query: &str) -> String {
    let n = normalize_space(query);
    n.trim_end_matches(';').trim_end().to_string()
}

/// What merging a capture did to one captured statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeStatus {
    /// New in the file.
    Added,
    /// Already there; its recorded facts (calls, rows, RLS flag, database) changed.
    Updated,
    /// Already there, nothing changed.
    Unchanged,
    /// Matches an entry a person added by hand, which is left as written.
    Manual,
}

impl MergeStatus {
    pub fn name(self) -> &'static str {
        match self {
            MergeStatus::Added => "added",
            MergeStatus::Updated => "updated",
            MergeStatus::Unchanged => "unchanged",
            MergeStatus::Manual => "manual",
        }
    }
}

/// What [`QueryFile::merge`] did.
#[derive(Debug, Clone, Default)]
pub struct Merge {
    /// For each captured statement, in order: its id in the file and what happened.
    pub outcomes: Vec<(String, MergeStatus)>,
    /// Recorded (not manual) entries the run did not send: removed when pruning.
    pub vanished: Vec<Statement>,
    pub pruned: bool,
}

impl Merge {
    pub fn count(&self, status: MergeStatus) -> usize {
        self.outcomes.iter().filter(|(_, s)| *s == status).count()
    }
}

/// The project's default queries file.
pub fn default_path(queries_dir: &Path) -> PathBuf {
    queries_dir.join(DEFAULT_FILE)
}

impl QueryFile {
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
        if let Some(v) = raw.format_version
            && v != FORMAT_VERSION
        {
            return Err(Error::Config {
                path: path.to_path_buf(),
                line: None,
                column: None,
                message: format!(
                    "format_version {v} is not one this planck reads ({FORMAT_VERSION})"
                ),
                hint: Some("re-record the file with this version of planck".into()),
            });
        }
        let mut seen: std::collections::HashMap<String, usize> = Default::default();
        // Identity is text and role: two entries that differ only by a
        // hand-edited id are the same statement too.
        let mut seen_text: std::collections::HashMap<(String, Option<String>), usize> =
            Default::default();
        let mut statements = Vec::with_capacity(raw.statement.len());
        for spanned in raw.statement {
            let (line, _) = line_col(text, spanned.span().start);
            let r = spanned.into_inner();
            if r.query.trim().is_empty() {
                return Err(Error::Config {
                    path: path.to_path_buf(),
                    line: Some(line),
                    column: None,
                    message: "statement with an empty query".into(),
                    hint: Some("delete the entry or put the SQL in `query`".into()),
                });
            }
            let id =
                r.id.unwrap_or_else(|| identity(&r.query, r.role.as_deref()));
            if let Some(first) = seen.insert(id.clone(), line) {
                return Err(Error::Config {
                    path: path.to_path_buf(),
                    line: Some(line),
                    column: None,
                    message: format!("statement {id} appears twice (first at line {first})"),
                    hint: Some("delete one of the two entries".into()),
                });
            }
            if let Some(first) = seen_text.insert((text_key(&r.query), r.role.clone()), line) {
                return Err(Error::Config {
                    path: path.to_path_buf(),
                    line: Some(line),
                    column: None,
                    message: format!(
                        "statement {id} has the same text and role as the one at line {first}"
                    ),
                    hint: Some("delete one of the two entries".into()),
                });
            }
            statements.push(Statement {
                id,
                query: r.query.trim().to_string(),
                role: r.role,
                bypass_rls: r.bypass_rls,
                database: r.database,
                queryid: r.queryid,
                calls: r.calls,
                rows: r.rows,
                ignore: r.ignore,
                manual: r.manual,
                line: Some(line),
            });
        }
        Ok(QueryFile { statements })
    }

    /// The file's text: a header, then the statements sorted by role and text,
    /// so the same set always renders to the same bytes.
    pub fn render(&self) -> String {
        let mut sorted: Vec<&Statement> = self.statements.iter().collect();
        sorted.sort_by(|a, b| {
            (a.role.as_deref(), normalize_space(&a.query), &a.id).cmp(&(
                b.role.as_deref(),
                normalize_space(&b.query),
                &b.id,
            ))
        });
        let mut out = String::from(
            "# Statements planck verifies, recorded from pg_stat_statements by `planck record`.\n\
             # Edit freely: add a [[statement]] by hand (manual = true), delete one, or\n\
             # set ignore = \"why\" on one. Re-recording keeps your edits.\n",
        );
        out.push_str(&format!("format_version = {FORMAT_VERSION}\n"));
        for s in sorted {
            out.push_str("\n[[statement]]\n");
            out.push_str(&format!("id = {}\n", toml_string(&s.id)));
            if let Some(r) = &s.role {
                out.push_str(&format!("role = {}\n", toml_string(r)));
            }
            if let Some(b) = s.bypass_rls {
                out.push_str(&format!("bypass_rls = {b}\n"));
            }
            if let Some(d) = &s.database {
                out.push_str(&format!("database = {}\n", toml_string(d)));
            }
            if let Some(q) = s.queryid {
                out.push_str(&format!("queryid = {q}\n"));
            }
            if let Some(c) = s.calls {
                out.push_str(&format!("calls = {c}\n"));
            }
            if let Some(r) = s.rows {
                out.push_str(&format!("rows = {r}\n"));
            }
            if s.manual {
                out.push_str("manual = true\n");
            }
            if let Some(i) = &s.ignore {
                out.push_str(&format!("ignore = {}\n", toml_string(i)));
            }
            out.push_str(&format!("query = {}\n", toml_multiline(&s.query)));
        }
        out
    }

    /// Merges a capture into the file. A captured statement matches an entry
    /// by id, else by [`text_key`] and role, else by text alone when the entry
    /// was added by hand without a role. A matched entry keeps its id, text,
    /// `ignore` mark and anything a person wrote; only the facts measured by
    /// the run (calls, rows, bypass_rls, database) are refreshed, and never on
    /// a `manual` entry. Recorded entries the run did not send are reported
    /// in `vanished`, and removed when `prune`; manual entries always stay.
    pub fn merge(&mut self, captured: &[Statement], prune: bool) -> Merge {
        use std::collections::HashMap;
        let mut by_id: HashMap<String, usize> = HashMap::new();
        let mut by_text: HashMap<(String, Option<String>), usize> = HashMap::new();
        for (i, s) in self.statements.iter().enumerate() {
            by_id.insert(s.id.clone(), i);
            by_text
                .entry((text_key(&s.query), s.role.clone()))
                .or_insert(i);
        }
        let mut matched = vec![false; self.statements.len()];
        let mut merge = Merge::default();
        for c in captured {
            let key = text_key(&c.query);
            let found = by_id
                .get(&c.id)
                .or_else(|| by_text.get(&(key.clone(), c.role.clone())))
                .or_else(|| by_text.get(&(key.clone(), None)))
                .copied()
                .filter(|&i| !matched[i]);
            let Some(i) = found else {
                let mut s = c.clone();
                s.line = None;
                s.manual = false;
                by_id.insert(s.id.clone(), self.statements.len());
                by_text.insert((key, s.role.clone()), self.statements.len());
                matched.push(true);
                merge.outcomes.push((s.id.clone(), MergeStatus::Added));
                self.statements.push(s);
                continue;
            };
            matched[i] = true;
            let e = &mut self.statements[i];
            if e.manual {
                merge.outcomes.push((e.id.clone(), MergeStatus::Manual));
                continue;
            }
            let before = (e.calls, e.rows, e.bypass_rls, e.database.clone(), e.queryid);
            e.calls = c.calls;
            e.rows = c.rows;
            e.bypass_rls = c.bypass_rls;
            e.database = c.database.clone();
            e.queryid = c.queryid;
            let after = (e.calls, e.rows, e.bypass_rls, e.database.clone(), e.queryid);
            let status = if before == after {
                MergeStatus::Unchanged
            } else {
                MergeStatus::Updated
            };
            merge.outcomes.push((e.id.clone(), status));
        }
        let mut keep = Vec::with_capacity(self.statements.len());
        for (s, m) in std::mem::take(&mut self.statements)
            .into_iter()
            .zip(matched)
        {
            if !m && !s.manual {
                merge.vanished.push(s.clone());
                if prune {
                    continue;
                }
            }
            keep.push(s);
        }
        self.statements = keep;
        merge.pruned = prune;
        merge
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

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML multi-line basic string, the SQL on its own lines.
fn toml_multiline(s: &str) -> String {
    let mut out = String::from("\"\"\"\n");
    let mut quotes = 0;
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            // Never three quotes in a row: that would close the string.
            '"' if quotes == 2 => {
                out.push_str("\\\"");
                quotes = 0;
                continue;
            }
            '"' => out.push('"'),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
        quotes = if ch == '"' { quotes + 1 } else { 0 };
    }
    // A closing quote right before the delimiter would merge with it.
    if s.ends_with('"') {
        out.push_str("\\\n");
    }
    out.push_str("\n\"\"\"");
    out
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
}
