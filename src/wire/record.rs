//! `planck record --format json`: what a recording did (`format_version`
//! 1). Owned types, apart from record's internal ones, so it changes only on
//! purpose; tools (and the tests) read it back with these same types. Built
//! by `record::report::to_wire`; every format is rendered from it
//! (`crate::render`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReport {
    pub format_version: u32,
    pub database: String,
    /// The queries file, relative to the project when inside it.
    pub file: String,
    pub command: Vec<String>,
    /// `None` when there was no command.
    pub exit: Option<Exit>,
    /// `reset`, `snapshot` or `current`.
    pub mode: String,
    pub created_extension: bool,
    pub kept: usize,
    /// Distinct statements dropped, for every reason (0 included).
    pub dropped: BTreeMap<String, usize>,
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub manual: usize,
    pub vanished: Vec<Vanished>,
    pub pruned: bool,
    pub warnings: Vec<String>,
    pub statements: Vec<Statement>,
    /// What the capture relay saw; absent when the run was not relayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<Relay>,
    /// The databases whose statements were recorded: the target, then
    /// those created during the run.
    #[serde(default)]
    pub recorded_databases: Vec<String>,
    /// Statements run only by migrations, left out of the file (issue
    /// 13, 6): their texts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migration_only: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relay {
    pub connections: u64,
    pub incomplete_connections: u64,
    pub left_open: u64,
    pub transactions: u64,
    pub autocommit_statements: u64,
    pub shapes_written: usize,
    pub shapes_over_limit: usize,
    pub calls_over_limit: u64,
    pub matched_by_queryid: usize,
    pub matched_by_text: usize,
    pub unmatched: usize,
    /// Distinct relayed texts left out as noise (catalog queries).
    #[serde(default)]
    pub noise: usize,
    /// Statements only the relay had (not in pg_stat_statements).
    #[serde(default)]
    pub relay_only: usize,
    pub longest_ms: Option<f64>,
    pub longest_statements: Option<usize>,
    pub most_statements: Option<usize>,
    pub most_statements_ms: Option<f64>,
    /// Statement id (else normalized text) and how often it opened a
    /// transaction that stayed open over 100 ms.
    pub slow_openers: Vec<(String, u64)>,
    /// Database and connections to it.
    pub databases: BTreeMap<String, u64>,
    /// Exact median pause (ms) per written transaction id.
    pub think_ms: BTreeMap<String, f64>,
    /// Migrations' transactions: counted in `transactions`, never written.
    #[serde(default)]
    pub migration_transactions: u64,
    /// Migrations' autocommit statements (run before the tool recorded
    /// the migration): counted in `autocommit_statements`.
    #[serde(default)]
    pub migration_autocommit_statements: u64,
}

/// `{"code": 0}` or `{"signal": 9, "signal_name": "SIGKILL"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vanished {
    pub id: String,
    pub role: Option<String>,
    pub query: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    pub id: String,
    pub queryid: i64,
    pub role: String,
    pub bypass_rls: bool,
    pub calls: u64,
    pub rows: u64,
    pub total_ms: f64,
    pub mean_ms: f64,
    pub query: String,
    /// Why it is noise, when kept with `--keep-all`.
    pub noise: Option<String>,
    /// `added`, `updated`, `unchanged` or `manual`.
    pub status: String,
    /// `top` and/or `function`, as the queries file keeps them (empty:
    /// as the client sent it).
    pub contexts: Vec<String>,
    /// Taken from the capture relay alone: no timings.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_relay: bool,
}
