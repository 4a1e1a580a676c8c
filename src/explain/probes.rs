//! What explain's probe phases measured on the server, for the checks that
//! report it: the user functions a policy can reach and their calls counted
//! ([`super::per_row_call`]), plan reuse across tenants ([`super::plan_reuse`]),
//! permissive policies grouped ([`super::policy_groups`]). The types live
//! here, below both the probes and the checks (`rules`), so a check reads a
//! probe's result without the probe and the check importing each other.

use std::collections::BTreeMap;

use super::plan_reuse::Reuse;
use super::policy_groups::PermissiveGroup;
use crate::findings::CheckId;

/// What the probe phases measured on the server, for the checks that
/// report it (`explain::per_row_call`, `explain::plan_reuse`).
#[derive(Debug, Default)]
pub struct Probes {
    pub functions: Vec<UserFn>,
    pub calls: Vec<Counted>,
    pub reuse: Vec<Reuse>,
    pub permissive: Vec<PermissiveGroup>,
    /// The rows of each check's own probe (`Check::probe`), by check.
    pub declared: BTreeMap<CheckId, Vec<serde_json::Value>>,
}

/// A SQL or plpgsql function outside the system schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct UserFn {
    /// The bare name (`uid`): plans and policy texts qualify it or not.
    pub name: String,
    pub nargs: i16,
    /// Bare names of the other user functions its body calls.
    pub calls: Vec<String>,
    /// Its body calls `current_setting()`.
    pub reads_setting: bool,
}

/// Calls of one function counted while one statement ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    pub statement: String,
    pub function: String,
    pub calls: i64,
    /// The rows the filtering node examined (kept and removed, all loops).
    pub rows: f64,
    pub ms: f64,
}
