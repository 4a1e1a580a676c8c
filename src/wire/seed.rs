//! `planck seed --format json`: what a seed (or a `--dry-run`) did
//! (`format_version` 1, fields only ever added within it). Built by
//! `seed::summary`; every format is rendered from it (`crate::render`).

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

/// One table of the JSON summary (wire type: changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedTable {
    pub table: String,
    pub rows: u64,
    /// Heap and TOAST bytes; null in a dry run.
    pub data_bytes: Option<u64>,
    /// With indexes; null in a dry run.
    pub total_bytes: Option<u64>,
    pub seconds: Option<f64>,
    /// On Citus, a distributed table's spread over its shards (added within
    /// format_version 1; left out elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardSpread>,
    /// A dry run's sizing role and why, `core: referenced by 5 tables`
    /// (added within format_version 1; left out when not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// The JSON summary (wire type: changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedSummary {
    pub format_version: u32,
    pub seed: u64,
    pub dry_run: bool,
    pub seconds: f64,
    pub load_seconds: Option<f64>,
    pub copy_seconds: Option<f64>,
    pub index_seconds: Option<f64>,
    pub vacuum_seconds: Option<f64>,
    pub rows: u64,
    pub data_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    pub tables: Vec<SeedTable>,
    /// Added within format_version 1 (readers of the earlier form ignore them).
    #[serde(default)]
    pub triggers_disabled: usize,
    #[serde(default)]
    pub trigger_tables: usize,
    #[serde(default)]
    pub event_triggers: Vec<String>,
    /// `table: constraint (why)`, loaded with the constraint in place.
    #[serde(default)]
    pub kept_in_place: Vec<String>,
    /// Tables left as they were (reference data, migration bookkeeping).
    #[serde(default)]
    pub tables_kept: Vec<String>,
    /// Those of `tables_kept` an earlier planck seed wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeded_before: Vec<String>,
    /// Columns that followed the queries file's `[observed]` (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub followed_recording: Vec<String>,
    /// Those of `tables_kept` kept because rows left alone reference them,
    /// each `table (rows of X reference it)` (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables_held: Vec<String>,
    /// Partitions planck created, `table: N partition(s) (how)` (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions_created: Vec<String>,
    /// The tables not seeded (a partial run, exit 1; left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_seeded: Vec<NotSeeded>,
    /// `--stats FILE`: the file and what of it the seed did not follow
    /// (added within format_version 1; left out without `--stats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsSource>,
}

/// A table the run could not seed (wire type: changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotSeeded {
    pub table: String,
    /// What stops it, prefixed with the table (and column).
    pub reason: String,
    #[serde(default)]
    pub hints: Vec<String>,
    /// The spec lines that fix it (null for a table not seeded because the
    /// table it depends on is not).
    pub spec: Option<String>,
    /// The table not seeded that a NOT NULL foreign key of this one references.
    pub depends_on: Option<String>,
}

/// `planck seed --stats FILE`: the file the data was shaped by, and what
/// of it the seed could not follow (wire type: the JSON summary's `stats`,
/// changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsSource {
    /// The statistics file, as the seed read it.
    pub file: String,
    /// Each kind of statistic the spec made of the file cannot say, with
    /// the columns (or tables) it concerns; empty when it follows them all.
    pub not_followed: Vec<NotFollowed>,
}

/// How a Citus distributed table's rows and bytes spread over its shards
/// and workers: the skew the tenants' sizes make (issue 36, 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSpread {
    pub shards: u64,
    /// The shard holding the most rows, and its worker (`host:port`).
    pub heaviest_shard: i64,
    pub heaviest_worker: String,
    pub heaviest_rows: u64,
    pub heaviest_bytes: u64,
    pub rows: u64,
    pub bytes: u64,
    /// Bytes per worker, heaviest first.
    pub workers: Vec<(String, u64)>,
}

/// One kind of statistic the spec made of a file does not follow, and the
/// columns (or tables) whose statistic it is. A wire type: the seed's JSON
/// summary holds it (`stats.not_followed`), so it changes only with that
/// summary's `format_version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotFollowed {
    /// What the spec cannot say, and what the seed does instead.
    pub kind: String,
    /// How many columns (or tables) it concerns.
    pub count: usize,
    /// Each, `schema.table.column` (or `schema.table`).
    pub names: Vec<String>,
}

impl NotFollowed {
    /// `kind: 4 (a, b, c, and 1 more)`: the line the text forms print.
    pub fn line(&self) -> String {
        let shown: Vec<&str> = self.names.iter().take(3).map(String::as_str).collect();
        let more = if self.count > 3 {
            format!(", and {} more", self.count - 3)
        } else {
            String::new()
        };
        format!("{}: {} ({}{more})", self.kind, self.count, shown.join(", "))
    }
}
