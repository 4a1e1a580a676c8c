//! Findings: what a check reports, as data (never as an error), shared by
//! `explain` today and `replay` and `report` next.
//!
//! A [`Finding`] names its check by [`CheckId`] (an enum, so a typo in
//! `disable = [...]`, `[[explain.ignore]] check` or a flag fails when it is
//! parsed), carries a [`Location`] (the queries file and line of its
//! statement, for SARIF and JUnit) and a [`PlanNode`] pointer into the plan
//! it was read from. [`baseline`] holds the findings CI accepts as they are;
//! [`ignore`] the rules that drop findings on purpose, each with a reason.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::queries::Statement;
use crate::tenancy::Mode;

pub(crate) mod baseline;
pub(crate) mod ignore;
pub(crate) mod source;

// The `CheckId` enum: each check declares its id and help in its own file
// (`declare_check!` in `src/explain/rules/`), and build.rs collects them, so
// this layer has the ids without importing `explain` (see build.rs).
include!(concat!(env!("OUT_DIR"), "/check_ids.rs"));

impl CheckId {
    /// Where the manual explains this check, with an example finding and
    /// the fix: a path from the repository's root, its anchor the id
    /// (`docs/checks.md#seq-scan`). tests/docs.rs checks the section exists.
    pub fn docs(self) -> String {
        format!("docs/checks.md#{}", self.as_str())
    }

    /// `known checks: seq-scan, ...`, for error hints.
    pub fn known() -> String {
        let ids: Vec<&str> = CheckId::ALL.iter().map(|c| c.as_str()).collect();
        format!("known checks: {}", ids.join(", "))
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text is not a check id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCheck(pub String);

impl fmt::Display for UnknownCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown check {:?} ({})", self.0, CheckId::known())
    }
}

impl std::error::Error for UnknownCheck {}

impl FromStr for CheckId {
    type Err = UnknownCheck;

    fn from_str(s: &str) -> Result<CheckId, UnknownCheck> {
        CheckId::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCheck(s.to_string()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// Where a finding points a reader: the entry of the statement in the queries
/// file, the migration that made the object, or nowhere (the schema as a whole).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    Queries {
        path: PathBuf,
        line: usize,
    },
    Migration {
        path: PathBuf,
        line: usize,
    },
    #[default]
    None,
}

impl Location {
    /// `queries/recorded.toml:12`, or None.
    pub fn display(&self) -> Option<String> {
        match self {
            Location::Queries { path, line } | Location::Migration { path, line } => {
                Some(format!("{}:{line}", path.display()))
            }
            Location::None => None,
        }
    }
}

/// The plan node a finding was read from: which of the statement's plans
/// (its index in the report's `plans`), and the path of child indexes from
/// that plan's root (`[]` is the root, `[0, 1]` its first child's second child).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PlanNode {
    pub plan: usize,
    pub path: Vec<usize>,
}

/// A finding is data, not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub check: CheckId,
    pub severity: Severity,
    /// `None` for findings about the schema as a whole (unused indexes).
    pub mode: Option<Mode>,
    pub statement: Option<String>,
    pub query: Option<String>,
    pub relation: Option<String>,
    pub index: Option<String>,
    pub message: String,
    pub help: &'static str,
    pub location: Location,
    pub node: Option<PlanNode>,
    /// An index proposed for this finding and verified by re-planning with it.
    pub advice: Option<Advice>,
}

/// An index that fixes a finding, proven on the data: the statement was
/// re-planned with the index present (created inside a rolled-back
/// transaction, or hypothetically) and the plan used it.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// `CREATE INDEX ON devices (user_id)`.
    pub sql: String,
    /// The index's table (display name) and key columns, and its WHERE clause.
    pub table: String,
    pub columns: Vec<String>,
    pub predicate: Option<String>,
    /// The plan's total cost before and after, and the scans they did.
    pub cost_before: f64,
    pub cost_after: f64,
    pub node_before: String,
    pub node_after: String,
    /// True only when the re-planned plan used the index.
    pub verified: bool,
    /// `real` (built in the rolled-back transaction) or `hypothetical`.
    pub how: &'static str,
}

impl Finding {
    pub fn new(check: CheckId, severity: Severity, message: String) -> Finding {
        Finding {
            check,
            severity,
            mode: None,
            statement: None,
            query: None,
            relation: None,
            index: None,
            message,
            help: check.help(),
            location: Location::None,
            node: None,
            advice: None,
        }
    }

    /// About one statement, in one mode.
    pub fn statement(mut self, stmt: &Statement, mode: Mode) -> Finding {
        self.statement = Some(stmt.id.clone());
        self.query = Some(stmt.query.clone());
        self.mode = Some(mode);
        self
    }

    pub fn mode(mut self, m: Mode) -> Finding {
        self.mode = Some(m);
        self
    }

    pub fn relation(mut self, r: impl Into<String>) -> Finding {
        self.relation = Some(r.into());
        self
    }

    pub fn index(mut self, i: impl Into<String>) -> Finding {
        self.index = Some(i.into());
        self
    }

    pub fn node(mut self, plan: usize, path: &[usize]) -> Finding {
        self.node = Some(PlanNode {
            plan,
            path: path.to_vec(),
        });
        self
    }
}

/// Points each statement finding at its entry in the queries file (the
/// statement's `line`), when the statements came from one.
pub fn locate(findings: &mut [Finding], statements: &[Statement], path: &std::path::Path) {
    let lines: std::collections::BTreeMap<&str, usize> = statements
        .iter()
        .filter_map(|s| s.line.map(|l| (s.id.as_str(), l)))
        .collect();
    for f in findings {
        if let Some(line) = f.statement.as_deref().and_then(|id| lines.get(id)) {
            f.location = Location::Queries {
                path: path.to_path_buf(),
                line: *line,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_ids_parse_from_text_serde_and_clap() {
        for c in CheckId::ALL {
            assert_eq!(c.as_str().parse::<CheckId>(), Ok(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<CheckId>(&json).unwrap(), c);
            assert_eq!(
                <CheckId as clap::ValueEnum>::from_str(c.as_str(), false),
                Ok(c)
            );
            assert!(!c.help().is_empty());
        }
        let err = "seq-scn".parse::<CheckId>().unwrap_err();
        assert!(err.to_string().contains("known checks: seq-scan"), "{err}");
        assert!(serde_json::from_str::<CheckId>("\"seq-scn\"").is_err());
    }

    #[test]
    fn statement_findings_point_at_their_queries_file_line() {
        let s = Statement {
            id: "abc".into(),
            query: "SELECT 1".into(),
            line: Some(7),
            ..Default::default()
        };
        let mut f = vec![
            Finding::new(CheckId::SeqScan, Severity::Error, "m".into()).statement(&s, Mode::Admin),
            Finding::new(CheckId::UnusedIndex, Severity::Warning, "m".into()),
        ];
        locate(&mut f, &[s], std::path::Path::new("queries/recorded.toml"));
        assert_eq!(
            f[0].location.display().as_deref(),
            Some("queries/recorded.toml:7")
        );
        assert_eq!(f[1].location, Location::None);
    }
}
