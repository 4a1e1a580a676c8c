//! `planck migrate --format json`: what the run applied and the indexes and
//! constraints its statements changed (`format_version` 1). Built by
//! `migrate::report::to_wire`; every format of the result is rendered from
//! it (`crate::render`).

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigrateReport {
    pub format_version: u32,
    /// The database, password hidden.
    pub database: String,
    /// Files applied by this run, in order.
    pub applied: Vec<String>,
    /// Files applied earlier.
    pub already_applied: usize,
    /// Indexes and constraints this run's statements changed.
    pub objects: Vec<Object>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    pub migration: String,
    pub line: usize,
    /// `created`, `dropped`, `recreated` or `renamed`.
    pub action: String,
    /// `index` or `constraint`.
    pub kind: String,
    pub schema: String,
    pub name: String,
    pub table: Option<String>,
    pub renamed_from: Option<String>,
}
