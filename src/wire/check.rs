//! `planck check --json`: the result of the pre-merge gate (`format_version`
//! 1). The head's explain report, with `--base` the base's and their diff,
//! what head's new migration files changed and (with `--base`) what they did
//! while they ran, and the gate's verdict with the reasons it failed.

use serde::{Deserialize, Serialize};

use super::diff::JsonDiff;
use super::explain::JsonReport;

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonCheck {
    pub format_version: u32,
    /// The ref given to `--base` and the merge base it resolved to.
    pub base_ref: Option<String>,
    pub base_commit: Option<String>,
    pub head: JsonReport,
    pub base: Option<JsonReport>,
    /// Why the base side could not be built (its migrations failed); the head side still ran.
    pub base_error: Option<String>,
    pub diff: Option<JsonDiff>,
    /// Each statement of head's new migration files as it ran on a copy of
    /// the seeded base (`--base` only).
    pub migration: Vec<JsonMigrationStatement>,
    /// The indexes and constraints head's new migration files created,
    /// dropped or renamed, with the file and line.
    pub objects: Vec<JsonObjectChange>,
    /// Things the reader should know (a full rebuild because an applied file changed...).
    pub notes: Vec<String>,
    pub gate: JsonGate,
    /// `--replay`: the head's short replay, and with `--base` the base's
    /// (their p95 per step compared in `diff.replay_steps`).
    #[serde(default)]
    pub replay: Option<super::replay::ReplayReport>,
    #[serde(default)]
    pub base_replay: Option<super::replay::ReplayReport>,
    /// Head's new errors that read a table whose index a migration dropped,
    /// the index matched by the columns the plan filters, joins or sorts on
    /// (what names the DROP INDEX without `--base`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_indexes: Vec<JsonLostIndex>,
}

/// A new error finding and the dropped index that had served it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLostIndex {
    /// The finding: its check, statement, mode and relation.
    pub check: String,
    pub statement_id: String,
    pub mode: Option<String>,
    pub relation: String,
    /// The index, its columns, the DROP and (when known) the CREATE.
    pub columns: Vec<String>,
    pub dropped: super::diff::DroppedIndex,
}

impl JsonLostIndex {
    /// Whether this is about finding `f`.
    pub fn is_for(&self, f: &super::explain::JsonFinding) -> bool {
        f.check == self.check
            && f.statement_id.as_deref() == Some(self.statement_id.as_str())
            && f.mode == self.mode
            && f.relation.as_deref() == Some(self.relation.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonObjectChange {
    /// The migration file, relative to the project.
    pub file: String,
    pub line: usize,
    /// `created`, `dropped`, `rebuilt`, `renamed`.
    pub action: String,
    /// `index` or `constraint`.
    pub kind: String,
    pub name: String,
    pub table: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonMigrationStatement {
    pub file: String,
    pub line: usize,
    /// The statement's text (shortened).
    pub statement: String,
    pub seconds: f64,
    /// Every lock on a relation seen while it ran, strongest first.
    pub locks: Vec<JsonLock>,
    /// Tables (and indexes) whose relfilenode changed: rewritten.
    pub rewritten: Vec<String>,
    /// Whether the statement blocks the application's reads or writes meanwhile.
    pub blocking: bool,
    /// The statement failed (the error); the statements after it did not run.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLock {
    pub relation: String,
    /// `AccessExclusiveLock`, `ShareLock`...
    pub mode: String,
    /// How long it was seen held (sampled), in seconds.
    pub held_seconds: f64,
    /// What the lock blocks, in words: `reads and writes`, `writes`.
    pub blocks: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonGate {
    pub passed: bool,
    /// `errors`, `regressions`, `blocking-migration`, `slo`.
    pub fail_on: Vec<String>,
    pub failures: Vec<JsonGateFailure>,
    /// The head's statements that were planned (explained or not judged).
    #[serde(default)]
    pub statements: usize,
    /// The planned statements the gate could not judge: a table they read is
    /// empty or nearly (`status` `not_judged`), or every table they read is
    /// below `min_rows` (`head.below_min_rows`). They fail the gate with
    /// `fail_on` `not-judged`; else "check passed" names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<JsonNotJudged>,
}

impl JsonGate {
    /// How many of `statements` were judged.
    pub fn judged(&self) -> usize {
        self.statements.saturating_sub(self.not_judged.len())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNotJudged {
    pub statement_id: String,
    pub query: String,
    /// `cards holds 4,000 rows, below min_rows (10,000)`.
    pub reason: String,
}

impl JsonNotJudged {
    /// The planned statements of `head` its data could not judge (issue 48):
    /// those explain marked `not_judged` (a table empty or nearly), then those
    /// that read only tables below `min_rows`, in report order. The gate lists
    /// them; SARIF and GitLab's report name them too.
    pub fn of(head: &JsonReport) -> Vec<JsonNotJudged> {
        let below = head.below_min_rows.as_ref();
        let small_reason = |s: &crate::wire::explain::JsonStatement| {
            let b = below.filter(|b| b.statements.contains(&s.id))?;
            // Its own tables: the ones its plans name (a table's display name
            // may carry its schema, a plan's Relation Name does not).
            let mut read = std::collections::BTreeSet::new();
            for p in &s.plans {
                relation_names(&p.plan, &mut read);
            }
            let own: Vec<String> = b
                .tables
                .iter()
                .filter(|t| read.contains(t.name.rsplit('.').next().unwrap_or(&t.name)))
                .map(|t| {
                    format!(
                        "{} {}",
                        t.name,
                        crate::output::counted(t.rows, "row", "rows")
                    )
                })
                .collect();
            Some(format!(
                "every table it reads is below min_rows ({}): {}",
                crate::output::count(b.min_rows),
                own.join(", ")
            ))
        };
        head.statements
            .iter()
            .filter_map(|s| {
                let reason = match s.status.as_str() {
                    "not_judged" => s.reason.clone().unwrap_or_else(|| "not judged".into()),
                    "explained" => small_reason(s)?,
                    _ => return None,
                };
                Some(JsonNotJudged {
                    statement_id: s.id.clone(),
                    query: s.query.clone(),
                    reason,
                })
            })
            .collect()
    }
}

/// Every `Relation Name` in an EXPLAIN (FORMAT JSON) value.
fn relation_names(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::String(r)) = m.get("Relation Name") {
                out.insert(r.clone());
            }
            m.values().for_each(|x| relation_names(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| relation_names(x, out)),
        _ => {}
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonGateFailure {
    /// The gate this fails.
    pub gate: String,
    pub message: String,
    pub statement_id: Option<String>,
    pub query: Option<String>,
    pub index: Option<String>,
    /// The migration file and line behind it (a dropped index's DROP INDEX).
    pub file: Option<String>,
    pub line: Option<usize>,
}
