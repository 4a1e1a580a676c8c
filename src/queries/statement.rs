//! One `[[statement]]` of the queries file, and its identity: the hash of
//! its space-normalized text and role, which survives a new server.

use std::collections::BTreeMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::evidence::{Sent, ValueShape};

/// Where a statement ran: pg_stat_statements' `toplevel` (PostgreSQL 14+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Context {
    /// Sent by the client.
    Top,
    /// Run inside a function or procedure.
    Function,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Top => "top",
            Context::Function => "function",
        }
    }
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
    /// Where it ran inside the recording: `function` when (also) inside a
    /// function or procedure. Empty: as the client sent it (or unknown,
    /// before PostgreSQL 14). `record` owns it.
    pub contexts: Vec<Context>,
    /// How the application sent it, when the relay saw it. `record` owns it.
    pub sent: Option<Sent>,
    /// The shape of the values sent for each parameter (`$n` by n), where
    /// the relay could tell. `record` owns it.
    pub shapes: BTreeMap<u32, ValueShape>,
    /// Set by a person: the statement is kept but not verified, with the reason.
    pub ignore: Option<String>,
    /// `true` for entries a person added by hand; `record` never prunes them.
    pub manual: bool,
    /// 1-based line of the entry in the file it was read from.
    pub line: Option<usize>,
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
