//! `planck explain --format json`: the wire types, the contract
//! (`format_version` 1). Owned `Serialize + Deserialize` structs, apart from
//! explain's internal types, so a refactor inside cannot change the output by
//! accident, and a consumer (`planck report`, `planck check`, a CI script, a
//! test) reads it back without depending on explain. Fields are only ever
//! added within a format version. Built by `explain::json::from_report`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonReport {
    pub format_version: u32,
    pub statements: Vec<JsonStatement>,
    pub findings: Vec<JsonFinding>,
    pub summary: JsonSummary,
    /// Where the plans were made (read by `planck report`); absent in files
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<JsonEnvironment>,
    /// Every index of the tables the statements read, and who uses it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<JsonIndex>,
    /// The judged statements whose plans read only tables below `min_rows`
    /// (no scan of theirs can be a finding), and those tables; absent when
    /// there are none, and in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_min_rows: Option<JsonBelowMinRows>,
    /// The indexes and tables no check judged because their data cannot
    /// show a verdict (a table below `min_table_rows`, or read by statements
    /// not judged): never called unused, never a missing index; absent when
    /// there are none, and in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged_objects: Option<JsonNotJudgedObjects>,
}

/// The indexes and tables the checks drew no verdict on (issue 47, 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNotJudgedObjects {
    pub min_table_rows: u64,
    /// How many distinct indexes `objects` names.
    pub indexes: usize,
    /// By table, then index.
    pub objects: Vec<JsonNotJudgedObject>,
}

impl JsonNotJudgedObjects {
    /// `2 indexes and 1 table`: what `objects` names (a table counted when
    /// a check withheld a verdict on the table itself).
    pub fn counted(&self) -> String {
        let tables: std::collections::BTreeSet<&str> = self
            .objects
            .iter()
            .filter(|x| x.index.is_none())
            .map(|x| x.table.as_str())
            .collect();
        let mut parts = Vec::new();
        if self.indexes > 0 {
            parts.push(crate::output::counted(
                self.indexes as u64,
                "index",
                "indexes",
            ));
        }
        if !tables.is_empty() {
            parts.push(crate::output::counted(
                tables.len() as u64,
                "table",
                "tables",
            ));
        }
        parts.join(" and ")
    }
}

/// One verdict withheld: on an index (`index` set) or on a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNotJudgedObject {
    /// The check that would have judged it (`unused-index`, `missing-fk-index`...).
    pub check: String,
    pub table: String,
    pub index: Option<String>,
    /// The table's rows (the catalog's estimate).
    pub rows: u64,
    /// `categories holds 3 rows, below min_table_rows (100)`.
    pub reason: String,
}

impl JsonNotJudgedObject {
    /// `index categories_name_idx on categories` / `table menu_items
    /// (missing-fk-index)`: what the entry is about, in a few words.
    pub fn subject(&self) -> String {
        match &self.index {
            Some(i) => format!("index {i} on {} ({})", self.table, self.check),
            None => format!("table {} ({})", self.table, self.check),
        }
    }
}

/// Statements no scan check could judge: every table they read holds fewer
/// rows than `min_rows` (`planck seed --rows`, or a lower `--min-rows`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonBelowMinRows {
    pub min_rows: u64,
    /// Statement ids (`statements[].id`).
    pub statements: Vec<String>,
    /// The tables those statements read, largest first.
    pub tables: Vec<JsonTableRows>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTableRows {
    pub name: String,
    /// The catalog's estimate (`reltuples` after ANALYZE, else `count(*)`).
    pub rows: u64,
}

impl JsonBelowMinRows {
    /// From explain's internal list (None when it names no statement).
    pub fn from_parts(
        min_rows: u64,
        statements: &[String],
        tables: &[(String, u64)],
    ) -> Option<JsonBelowMinRows> {
        (!statements.is_empty()).then(|| JsonBelowMinRows {
            min_rows,
            statements: statements.to_vec(),
            tables: tables
                .iter()
                .map(|(name, rows)| JsonTableRows {
                    name: name.clone(),
                    rows: *rows,
                })
                .collect(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonStatement {
    pub id: String,
    pub query: String,
    pub role: Option<String>,
    /// `tenant`, `admin`, or `both` with --all-modes: the modes it is judged in.
    pub mode: Option<String>,
    /// `explained`, `skipped`, or `not_judged` (planned on data that cannot
    /// show production's plan: `reason` names the tables).
    pub status: String,
    pub reason: Option<String>,
    /// The text planned, when repairs changed it.
    pub planned_query: Option<String>,
    pub repairs: Vec<String>,
    pub param_types: Vec<String>,
    pub notes: Vec<String>,
    pub plans: Vec<JsonPlan>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonPlan {
    pub mode: String,
    /// `generic`, `custom` or `literal`.
    pub kind: String,
    /// Whose values: `heaviest`, `median`, `chosen`, `common`; null for generic plans.
    pub tenant: Option<String>,
    pub tenant_id: Option<String>,
    pub params: Vec<Option<String>>,
    /// PostgreSQL's EXPLAIN (VERBOSE, FORMAT JSON), untouched.
    pub plan: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonFinding {
    /// A check id (`seq-scan`, ...).
    pub check: String,
    pub severity: String,
    pub mode: Option<String>,
    pub statement_id: Option<String>,
    pub query: Option<String>,
    pub relation: Option<String>,
    pub index: Option<String>,
    pub message: String,
    pub help: String,
    /// Held by the baseline: does not fail CI.
    pub baseline: bool,
    /// The statement's entry in the queries file (or the migration), when known.
    pub location: Option<JsonLocation>,
    /// The plan node the finding was read from.
    pub node: Option<JsonNode>,
    /// The index that fixes it, verified by re-planning (absent when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<JsonAdvice>,
}

impl JsonFinding {
    /// An error the baseline does not hold: what fails CI. `severity` is
    /// `findings::Severity::as_str` on the wire, compared here only.
    pub fn is_new_error(&self) -> bool {
        self.severity == "error" && !self.baseline
    }
}

/// A verified index (see `explain::advice`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonAdvice {
    /// `CREATE INDEX ON devices (user_id)`.
    pub sql: String,
    pub table: String,
    pub columns: Vec<String>,
    pub predicate: Option<String>,
    /// The plan's total cost without and with the index.
    pub cost_before: f64,
    pub cost_after: f64,
    /// The scan before (`Seq Scan`) and the node reading the index after.
    pub node_before: String,
    pub node_after: String,
    /// Always true: advice the plan did not take is not reported.
    pub verified: bool,
    /// `real` (built in the rolled-back transaction) or `hypothetical` (hypopg).
    pub index: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLocation {
    /// `queries` or `migration`.
    pub kind: String,
    pub path: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNode {
    /// Index into the statement's `plans`.
    pub plan: usize,
    /// Child indexes from that plan's root node (`[]`: the root).
    pub path: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSummary {
    pub explained: usize,
    pub skipped: usize,
    /// Planned on data that cannot show production's plan (a table read is
    /// empty or nearly): no finding was drawn from them.
    #[serde(default)]
    pub not_judged: usize,
    /// Findings per check id.
    pub findings: BTreeMap<String, usize>,
    pub ignored: usize,
    pub new_errors: usize,
}

/// The server and dataset the plans were made on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JsonEnvironment {
    /// `server_version` as the server reports it (`15.8`).
    pub server_version: String,
    /// The settings that shape plans (`random_page_cost`, `work_mem`...), as shown.
    pub settings: BTreeMap<String, String>,
    pub tables: Vec<JsonTable>,
    /// The heaviest tenant, when the schema has tenants.
    pub tenant: Option<JsonTenant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTable {
    pub name: String,
    /// `pg_class.reltuples` after ANALYZE (an estimate).
    pub rows: i64,
    /// `pg_total_relation_size`: heap, indexes and TOAST.
    pub bytes: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTenant {
    pub id: String,
    /// Its share of the rows of the tenant-keyed tables, 0..1.
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonIndex {
    pub name: String,
    pub table: String,
    pub used_by: Vec<JsonIndexUse>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonIndexUse {
    pub statement_id: String,
    pub mode: String,
}
