//! Ignore rules: findings dropped on purpose, each with a reason.
//!
//! A rule names at least one of a check, a relation or a statement (a rule
//! naming nothing would silence every finding, so it is an error where it is
//! read); every field it sets must match. The rules come from planck.toml's
//! `[[explain.ignore]]`, validated with their file:line by
//! `settings::explain`.

use super::{CheckId, Finding};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreRule {
    pub check: Option<CheckId>,
    /// The relation as findings name it (`events`, `audit.events`).
    pub relation: Option<String>,
    /// A statement id (see `queries::identity`).
    pub statement: Option<String>,
    pub reason: String,
    /// Where the rule was written (`planck.toml:12`), for messages.
    pub origin: Option<String>,
}

impl IgnoreRule {
    /// Whether the rule names anything; one that does not is refused.
    pub fn names_something(&self) -> bool {
        self.check.is_some() || self.relation.is_some() || self.statement.is_some()
    }

    pub fn covers(&self, f: &Finding) -> bool {
        self.names_something()
            && self.check.is_none_or(|c| c == f.check)
            && self
                .relation
                .as_deref()
                .is_none_or(|t| f.relation.as_deref() == Some(t))
            && self
                .statement
                .as_deref()
                .is_none_or(|s| f.statement.as_deref() == Some(s))
    }
}

/// The first rule that covers a finding.
pub fn ignored_by<'a>(rules: &'a [IgnoreRule], f: &Finding) -> Option<&'a IgnoreRule> {
    rules.iter().find(|r| r.covers(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;

    fn finding(stmt: &str, rel: &str) -> Finding {
        let mut f = Finding::new(CheckId::SeqScan, Severity::Error, format!("{rel} 123 rows"));
        f.statement = Some(stmt.into());
        f.relation = Some(rel.into());
        f
    }

    fn rule(check: Option<CheckId>, relation: Option<&str>) -> IgnoreRule {
        IgnoreRule {
            check,
            relation: relation.map(str::to_string),
            statement: None,
            reason: "r".into(),
            origin: None,
        }
    }

    #[test]
    fn ignore_rules_match_on_every_field_they_set() {
        let f = finding("s1", "events");
        assert!(ignored_by(&[rule(Some(CheckId::SeqScan), Some("events"))], &f).is_some());
        assert!(ignored_by(&[rule(Some(CheckId::SeqScan), Some("items"))], &f).is_none());
        assert!(ignored_by(&[rule(Some(CheckId::UnusedIndex), None)], &f).is_none());
        assert!(ignored_by(&[rule(None, Some("events"))], &f).is_some());
    }

    /// Issue 8: an ignore naming no check, statement or relation silenced everything.
    #[test]
    fn issue8_an_ignore_naming_nothing_covers_nothing() {
        let empty = rule(None, None);
        assert!(!empty.names_something());
        assert!(ignored_by(&[empty], &finding("s1", "events")).is_none());
    }
}
