//! What one report is made from ([`Inputs`]: explain's and replay's wire
//! types, the diff, where the sources are) and how every renderer reads it:
//! findings worst first, each finding's key and subject, a check's help. Its
//! own module, below the renderers, so that `report/mod.rs` can call each
//! renderer while each renderer reads only this.

use crate::wire;
use crate::wire::explain::{JsonFinding, JsonReport};

/// What one report is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub explain: wire::explain::JsonReport,
    pub replay: Option<wire::replay::ReplayReport>,
    /// What changed since a previous run or the base of a branch.
    pub diff: Option<wire::diff::JsonDiff>,
    /// What the diff compares against (`origin/main`, `previous run`).
    pub base_label: Option<String>,
    /// The folder the findings' relative paths are relative to (the
    /// project's git work tree, see [`crate::findings::source`]): SARIF's
    /// `%SRCROOT%`.
    pub source_root: Option<std::path::PathBuf>,
    /// `planck check`'s gate (`None` for `planck report`): the Markdown
    /// opens with its verdict, JUnit gains a case per reason.
    pub gate: Option<wire::check::JsonGate>,
    /// Indexes a migration dropped that a new error lost (`planck check`):
    /// SARIF places those errors at the DROP.
    pub lost_indexes: Vec<wire::check::JsonLostIndex>,
}

impl Inputs {
    /// A report of explain's run and a replay's alone: no diff, no gate.
    pub fn new(
        explain: JsonReport,
        replay: Option<wire::replay::ReplayReport>,
        source_root: Option<std::path::PathBuf>,
    ) -> Inputs {
        Inputs {
            explain,
            replay,
            diff: None,
            base_label: None,
            source_root,
            gate: None,
            lost_indexes: Vec::new(),
        }
    }
}

/// Severities from the worst; anything unknown sorts last.
pub(crate) fn severity_rank(s: &str) -> usize {
    match s {
        "error" => 0,
        "warning" => 1,
        "info" => 2,
        _ => 3,
    }
}

/// Findings worst first, then by check and statement: the order every output uses.
pub(crate) fn sorted_findings(findings: &[JsonFinding]) -> Vec<&JsonFinding> {
    let mut v: Vec<&JsonFinding> = findings.iter().collect();
    v.sort_by(|a, b| {
        (
            severity_rank(&a.severity),
            &a.check,
            &a.statement_id,
            &a.mode,
        )
            .cmp(&(
                severity_rank(&b.severity),
                &b.check,
                &b.statement_id,
                &b.mode,
            ))
    });
    v
}

/// A finding's identity across runs (the baseline's key): check, statement,
/// mode, relation, index. Code scanning tracks a finding across pushes by it.
pub(crate) fn finding_key(f: &JsonFinding) -> String {
    let part = |o: &Option<String>| o.clone().unwrap_or_default();
    format!(
        "{}/{}/{}/{}/{}",
        f.check,
        part(&f.statement_id),
        part(&f.mode),
        part(&f.relation),
        part(&f.index)
    )
}

/// Errors not held by the baseline: what fails CI.
pub(crate) fn new_errors(r: &JsonReport) -> usize {
    r.findings.iter().filter(|f| f.is_new_error()).count()
}

/// What a finding is about, in a few words: `items` or `items_account_idx on items`.
pub(crate) fn subject(f: &JsonFinding) -> String {
    match (&f.index, &f.relation) {
        (Some(i), Some(r)) => format!("{i} on {r}"),
        (Some(i), None) => i.clone(),
        (None, Some(r)) => r.clone(),
        (None, None) => String::new(),
    }
}

/// The help text of a check: planck's own, else what the finding carried.
pub(crate) fn check_help(check: &str, fallback: &str) -> String {
    crate::findings::CheckId::ALL
        .iter()
        .find(|c| c.as_str() == check)
        .map_or_else(|| fallback.to_string(), |c| c.help().to_string())
}

/// The statements the data could not judge: the gate's list under `planck
/// check`, else computed from explain's report as the gate does.
pub(crate) fn not_judged(i: &Inputs) -> Vec<wire::check::JsonNotJudged> {
    match &i.gate {
        Some(g) => g.not_judged.clone(),
        None => wire::check::JsonNotJudged::of(&i.explain),
    }
}

/// The indexes and tables no check judged for want of rows (issue 47, 3):
/// explain's list, read the same way under `planck check` and `planck report`.
pub(crate) fn not_judged_objects(i: &Inputs) -> &[wire::explain::JsonNotJudgedObject] {
    i.explain
        .not_judged_objects
        .as_ref()
        .map_or(&[], |o| o.objects.as_slice())
}

/// A finding's own help (built from its tables, columns and settings: issue
/// 48, 5), else its check's.
pub(crate) fn finding_help(check: &str, own: &str) -> String {
    if own.trim().is_empty() {
        check_help(check, own)
    } else {
        own.to_string()
    }
}

/// `query` on one line, cut to `max` characters.
pub(crate) fn one_line(query: &str, max: usize) -> String {
    let flat = crate::queries::normalize_space(query);
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The report fixture's [`inputs`](super::fixture::inputs) under a gate that
/// could not judge one statement (issue 48).
#[cfg(test)]
pub(crate) fn inputs_with_unjudged() -> crate::report::Inputs {
    let mut i = super::fixture::inputs();
    i.gate = Some(crate::wire::check::JsonGate {
        passed: true,
        fail_on: vec!["errors".into()],
        failures: vec![],
        statements: 3,
        not_judged: vec![crate::wire::check::JsonNotJudged {
            statement_id: "s9".into(),
            query: "SELECT * FROM cards WHERE board_id = $1".into(),
            reason: "every table it reads is below min_rows (10,000): cards 4,000 rows".into(),
        }],
    });
    i
}

/// The report fixture's [`inputs`](super::fixture::inputs) with an index
/// and a table no check judged for want of rows (issue 47, 3).
#[cfg(test)]
pub(crate) fn inputs_with_unjudged_objects() -> crate::report::Inputs {
    use crate::wire::explain::{JsonNotJudgedObject, JsonNotJudgedObjects};
    let mut i = super::fixture::inputs();
    i.explain.not_judged_objects = Some(JsonNotJudgedObjects {
        min_table_rows: 100,
        indexes: 1,
        objects: vec![
            JsonNotJudgedObject {
                check: "unused-index".into(),
                table: "menu_items".into(),
                index: Some("menu_items_label_idx".into()),
                rows: 6,
                reason: "menu_items holds 6 rows, below min_table_rows (100)".into(),
            },
            JsonNotJudgedObject {
                check: "missing-fk-index".into(),
                table: "menu_items".into(),
                index: None,
                rows: 6,
                reason: "menu_items holds 6 rows, below min_table_rows (100)".into(),
            },
        ],
    });
    i
}
