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

use serde::{Deserialize, Serialize};

use crate::queries::Statement;
use crate::tenancy::Mode;

pub mod baseline;
pub mod ignore;
pub mod source;

/// Every id a check can emit, kebab-case on the wire, in report order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum CheckId {
    SeqScan,
    FullIndexScan,
    UnusedIndex,
    UnusedPartialIndex,
    PartialIndexNeedsLiteral,
    RlsPolicy,
    StaleStatement,
    FilterRemovesMostRows,
    RlsPerRowCall,
    TenantPlanReuse,
    TenantMisestimate,
    MultiplePermissivePolicies,
    DuplicateIndex,
    MultiShard,
    RepartitionJoin,
}

impl CheckId {
    pub const ALL: [CheckId; 15] = [
        CheckId::SeqScan,
        CheckId::FullIndexScan,
        CheckId::UnusedIndex,
        CheckId::UnusedPartialIndex,
        CheckId::PartialIndexNeedsLiteral,
        CheckId::RlsPolicy,
        CheckId::StaleStatement,
        CheckId::FilterRemovesMostRows,
        CheckId::RlsPerRowCall,
        CheckId::TenantPlanReuse,
        CheckId::TenantMisestimate,
        CheckId::MultiplePermissivePolicies,
        CheckId::DuplicateIndex,
        CheckId::MultiShard,
        CheckId::RepartitionJoin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::SeqScan => "seq-scan",
            CheckId::FullIndexScan => "full-index-scan",
            CheckId::UnusedIndex => "unused-index",
            CheckId::UnusedPartialIndex => "unused-partial-index",
            CheckId::PartialIndexNeedsLiteral => "partial-index-needs-literal",
            CheckId::RlsPolicy => "rls-policy",
            CheckId::StaleStatement => "stale-statement",
            CheckId::FilterRemovesMostRows => "filter-removes-most-rows",
            CheckId::RlsPerRowCall => "rls-per-row-call",
            CheckId::TenantPlanReuse => "tenant-plan-reuse",
            CheckId::TenantMisestimate => "tenant-misestimate",
            CheckId::MultiplePermissivePolicies => "multiple-permissive-policies",
            CheckId::DuplicateIndex => "duplicate-index",
            CheckId::MultiShard => "multi-shard",
            CheckId::RepartitionJoin => "repartition-join",
        }
    }

    /// What to do about a finding of this check. The text lives with the id
    /// (not in the check's file) so a renderer can list every check's help
    /// (SARIF's rule table) without running any check.
    pub fn help(self) -> &'static str {
        match self {
            CheckId::SeqScan => {
                "add an index that leads with the columns the statement filters or joins on, \
                 or raise --min-rows if the table stays small"
            }
            CheckId::FullIndexScan => {
                "the scan does not constrain the index's first column; add an index that leads \
                 with the filtered column, or filter on the leading one"
            }
            CheckId::UnusedIndex => {
                "no recorded statement reads this index; drop it (it slows every write) unless \
                 something outside the recorded statements needs it"
            }
            CheckId::UnusedPartialIndex => {
                "no plan uses this partial index, not even with its predicate's constant put back; \
                 drop it, or make the statements' conditions match its WHERE clause"
            }
            CheckId::PartialIndexNeedsLiteral => {
                "the index is used only when the application inlines the constant; \
                 keep it inlined (a bind parameter would make the generic plan skip the index)"
            }
            CheckId::RlsPolicy => {
                "policies should compare an indexed column with a STABLE expression through LEAKPROOF \
                 operators, e.g. account_id = current_setting('app.account_id')::bigint"
            }
            CheckId::StaleStatement => {
                "the schema changed under this statement: fix the code that sends it, or \
                 re-record the queries file (`planck record`)"
            }
            CheckId::FilterRemovesMostRows => {
                "the scan reads rows only to discard them; index the filtered columns \
                 (needs --analyze, which measures the rows removed)"
            }
            CheckId::RlsPerRowCall => {
                "wrap the call in a scalar subquery, `(select auth.uid())`, so it runs once per \
                 statement as an InitPlan (the message gives the rewritten policy); inside a \
                 helper, pass the per-request value in as a (select ...) argument"
            }
            CheckId::TenantPlanReuse => {
                "the statement has parameters: set plan_cache_mode = force_custom_plan on the \
                 login role the application connects with (ALTER ROLE ... SET; not a role reached \
                 by SET ROLE), or do not keep it prepared; a tenant-leading index helps both plans"
            }
            CheckId::TenantMisestimate => {
                "raise the statistics target of the filtered columns, or create extended \
                 statistics on (tenant column, filtered column), then ANALYZE"
            }
            CheckId::MultiplePermissivePolicies => {
                "combine the policies into one (their conditions ORed in one USING), or make the \
                 extra ones RESTRICTIVE where they are meant to narrow, not widen"
            }
            CheckId::DuplicateIndex => {
                "drop the duplicate (DROP INDEX CONCURRENTLY); every write maintains both"
            }
            CheckId::MultiShard => {
                "filter on the table's distribution column (the tenant) so Citus routes the \
                 statement to one shard; join distributed tables on their distribution columns \
                 (co-located), or make a small shared table a reference table"
            }
            CheckId::RepartitionJoin => {
                "join distributed tables on their distribution columns (co-locate them: \
                 distribute both by the tenant and join on it), or make the smaller side a \
                 reference table (create_reference_table)"
            }
        }
    }

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
