//! The planner-statistics file (`planck stats capture`, issue 49): what
//! production's planner knows about every table and column, and no row.
//!
//! A team commits this file and diffs it, so its text is stable: fields in
//! the order declared here, tables sorted by schema and name, columns in
//! their table's order, floats printed as PostgreSQL's `real` holds them
//! (`f32`, so 0.3 is written `0.3`). Values (most common values, histogram
//! bounds) are kept, replaced by tokens or dropped, as [`ValuesMode`] says;
//! the file says which. The fidelity report ([`FidelityReport`]) compares
//! two of these: a database's statistics now against a file.

use serde::{Deserialize, Serialize};

/// The version of this format; a reader refuses a newer one.
pub const FORMAT_VERSION: u32 = 1;

/// What a file keeps of the values PostgreSQL keeps (`--values`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ValuesMode {
    /// Text values replaced by tokens of the same length and character
    /// classes that keep their sort order; numbers, dates, times,
    /// booleans and enum labels kept (the default).
    #[default]
    Shape,
    /// Every value as PostgreSQL keeps it.
    Keep,
    /// No value at all: counts, fractions and frequencies only.
    None,
}

impl ValuesMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ValuesMode::Shape => "shape",
            ValuesMode::Keep => "keep",
            ValuesMode::None => "none",
        }
    }
}

/// One capture: the whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsFile {
    pub format_version: u32,
    /// planck's version that wrote it.
    pub planck_version: String,
    /// The server's `server_version_num` (150004 is 15.4).
    pub server_version_num: i32,
    /// What was kept of the values.
    pub values: ValuesMode,
    /// Where the statistics were read: `views` (pg_stats and pg_stats_ext,
    /// as the role may see them) or `functions` (planck_stats.pg_stats()
    /// and its siblings, the security-definer functions of
    /// `planck stats capture --setup-sql`).
    pub source: String,
    /// sha256 of every captured table's columns and types, one line each
    /// (`schema.table\tcolumn\ttype`), sorted: equal on an equal schema.
    pub schema_fingerprint: String,
    pub tables: Vec<TableStats>,
    /// Foreign keys between the captured tables: with the referencing
    /// column's own statistics they give each parent's fan-out.
    pub foreign_keys: Vec<ForeignKeyStats>,
}

/// One table's size and its columns' statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableStats {
    pub schema: String,
    pub name: String,
    /// `table`, `partitioned` or `partition`.
    pub kind: String,
    /// `reltuples`: the planner's row estimate; -1 when never analyzed
    /// (PostgreSQL 14+), 0 before 14.
    pub reltuples: f32,
    pub relpages: i32,
    /// `pg_table_size`: the heap, TOAST and maps, without indexes.
    pub bytes: i64,
    /// Whether any column had statistics the capture could read: false for
    /// a table never analyzed, or hidden from the capturing role.
    pub analyzed: bool,
    pub columns: Vec<ColumnStats>,
    pub extended: Vec<ExtendedStats>,
}

/// One column as pg_stats describes it. Value lists are the values' text
/// forms (or tokens, see [`ValuesMode`]); null when PostgreSQL keeps none
/// or the mode drops them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnStats {
    pub name: String,
    /// `format_type` of the column's type (`text`, `timestamp with time zone`).
    pub type_name: String,
    /// Whether the values were kept as they are (numbers, dates, times,
    /// booleans, enum labels) rather than shaped, in mode `shape`.
    pub values_kept: bool,
    /// Whether the row is pg_stats' `inherited = true` one (a partitioned
    /// table's, over its partitions).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherited: bool,
    /// False when the capture found no statistics for the column; every
    /// other field is then empty.
    pub analyzed: bool,
    pub null_frac: Option<f32>,
    pub avg_width: Option<i32>,
    /// As PostgreSQL keeps it: a count when positive, minus a fraction of
    /// the rows when negative (-1: unique).
    pub n_distinct: Option<f32>,
    pub most_common_vals: Option<Vec<Option<String>>>,
    pub most_common_freqs: Option<Vec<f32>>,
    pub histogram_bounds: Option<Vec<Option<String>>>,
    /// How many histogram bounds there are (also when the values are dropped).
    pub histogram_len: usize,
    pub correlation: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_elems: Option<Vec<Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_elem_freqs: Option<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem_count_histogram: Option<Vec<f32>>,
    /// Range types (PostgreSQL 17+ in pg_stats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_length_histogram: Option<Vec<Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_empty_frac: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_bounds_histogram: Option<Vec<Option<String>>>,
}

/// One extended statistics object (CREATE STATISTICS), as pg_stats_ext
/// shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtendedStats {
    pub schema: String,
    pub name: String,
    /// The plain columns it covers, by name.
    pub columns: Vec<String>,
    /// Its expressions (PostgreSQL 14+), as pg_get_statistics_objdef writes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expressions: Vec<String>,
    /// The kinds defined: `d` (ndistinct), `f` (dependencies), `m` (mcv), `e` (expressions).
    pub kinds: Vec<String>,
    /// pg_ndistinct's text (`{"1, 2": 40}`: attribute numbers, expressions negative).
    pub n_distinct: Option<String>,
    /// pg_dependencies' text (`{"1 => 2": 1.0}`).
    pub dependencies: Option<String>,
    /// Each row one combination of the columns' values, in `columns` order
    /// then expressions.
    pub most_common_vals: Option<Vec<Vec<Option<String>>>>,
    pub most_common_freqs: Option<Vec<f64>>,
    pub most_common_base_freqs: Option<Vec<f64>>,
    /// Each expression's own statistics (pg_stats_ext_exprs), named by
    /// the expression; its values are always shaped in mode `shape`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expression_stats: Vec<ColumnStats>,
}

/// A foreign key between captured tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForeignKeyStats {
    /// `schema.table` of the referencing side.
    pub table: String,
    pub columns: Vec<String>,
    pub references: String,
    pub referenced_columns: Vec<String>,
}

/// What `planck stats capture` prints once the file is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSummary {
    pub format_version: u32,
    /// The file written (`-` for stdout).
    pub file: String,
    pub values: ValuesMode,
    pub source: String,
    pub tables: usize,
    /// Columns with statistics, over every table.
    pub columns_with_statistics: usize,
    pub extended_statistics: usize,
    /// Tables with no statistics the capture could read (`schema.table`).
    pub not_analyzed: Vec<String>,
    pub schema_fingerprint: String,
}

/// The fidelity report: a database's statistics now against a file's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FidelityReport {
    pub format_version: u32,
    /// Whether the two schemas' fingerprints are equal.
    pub same_schema: bool,
    /// Tables and columns on one side only (`only in file: public.t.c`).
    pub drift: Vec<String>,
    pub tables: Vec<TableFidelity>,
    /// How many deviations are beyond their tolerance, over every table.
    pub beyond_tolerance: usize,
}

/// One table's largest deviations, worst first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableFidelity {
    /// `schema.table`.
    pub table: String,
    /// Rows (reltuples) in the file, scaled when the comparison was.
    pub expected_rows: f64,
    pub actual_rows: f64,
    pub deviations: Vec<Deviation>,
}

/// One statistic that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deviation {
    /// The column, or null for the table's rows.
    pub column: Option<String>,
    /// `rows`, `null_frac`, `n_distinct`, `mcv_freq[1]` (the 1st most
    /// common value's frequency), `correlation`.
    pub statistic: String,
    pub expected: f64,
    pub actual: f64,
    /// `actual - expected` for fractions and correlation, the relative
    /// difference (`actual / expected - 1`) for rows and distinct counts.
    pub deviation: f64,
    pub tolerance: f64,
    pub within: bool,
}
