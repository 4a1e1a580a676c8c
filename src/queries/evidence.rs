//! What a recording saw of how the application sends its statements and
//! which values it uses: the evidence explain and seed judge by.
//!
//! `planck record` fills it from the capture relay (it sees every Parse,
//! Bind and Query); a recording without the relay, `--from-stats` and a
//! hand-written entry leave it out, and readers then fall back to their
//! defaults. Three pieces, each kept in the queries file:
//!
//! ```toml
//! [[statement]]
//! sent = "prepared"
//! shapes = { 1 = "prefix", 3 = "limit 21" }
//! query = "SELECT ... WHERE name LIKE $1 ... LIMIT $3"
//!
//! [observed]
//! "public.api_check.status" = { values = { up = 120, down = 4 }, null_tests = 0 }
//! ```
//!
//! Nothing here is a secret by construction: `shapes` keeps the kind of a
//! value, never the value, and `[observed]` keeps only the short,
//! low-cardinality literals `record` lets through (see its rules).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// How the application sent a statement, as the relay saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sent {
    /// Through a named prepared statement, or one Parse that served several
    /// Binds: the server may switch it to a generic plan.
    Prepared,
    /// As a simple Query or through the unnamed statement, parsed anew for
    /// each execution: always planned with the values sent.
    Unprepared,
}

impl Sent {
    pub fn name(self) -> &'static str {
        match self {
            Sent::Prepared => "prepared",
            Sent::Unprepared => "unprepared",
        }
    }
}

/// The shape of the values one parameter was sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueShape {
    /// A LIKE pattern with one trailing wildcard: `abc%`.
    Prefix,
    /// A LIKE pattern wildcarded at both ends: `%abc%`.
    Infix,
    /// A LIKE pattern with one leading wildcard: `%abc`.
    Suffix,
    /// A LIKE pattern without wildcards: an equality in effect.
    Exact,
    /// A LIMIT or FETCH count: the value sent most often.
    Limit(u64),
}

impl fmt::Display for ValueShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueShape::Prefix => f.write_str("prefix"),
            ValueShape::Infix => f.write_str("infix"),
            ValueShape::Suffix => f.write_str("suffix"),
            ValueShape::Exact => f.write_str("exact"),
            ValueShape::Limit(n) => write!(f, "limit {n}"),
        }
    }
}

/// What a shape is written as, for error hints.
pub const SHAPE_FORMS: &str = r#""prefix", "infix", "suffix", "exact" or "limit N""#;

impl FromStr for ValueShape {
    type Err = ();

    fn from_str(s: &str) -> Result<ValueShape, ()> {
        match s.trim() {
            "prefix" => Ok(ValueShape::Prefix),
            "infix" => Ok(ValueShape::Infix),
            "suffix" => Ok(ValueShape::Suffix),
            "exact" => Ok(ValueShape::Exact),
            other => other
                .strip_prefix("limit")
                .filter(|n| n.starts_with(' '))
                .and_then(|n| n.trim().parse().ok())
                .map(ValueShape::Limit)
                .ok_or(()),
        }
    }
}

/// The literals the application compared columns with, by column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// Keyed by `schema.table.column`, as written in the file.
    pub columns: BTreeMap<String, ObservedColumn>,
}

/// What the application compared one column with during the recording.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedColumn {
    /// Each literal, with how many executions compared the column with it.
    #[serde(default)]
    pub values: BTreeMap<String, u64>,
    /// Executions that tested the column with `IS NULL`.
    #[serde(default)]
    pub null_tests: u64,
    /// Executions that tested the column with `IS NOT NULL`.
    #[serde(default)]
    pub not_null_tests: u64,
}

impl Observed {
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// What was observed of `schema.table.column`.
    pub fn column(&self, schema: &str, table: &str, column: &str) -> Option<&ObservedColumn> {
        self.columns.get(&column_key(schema, table, column))
    }
}

impl ObservedColumn {
    /// The literals with their weights, heaviest first (ties by value), so
    /// a reader draws from them in the same order on every run.
    pub fn weighted(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.values.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }
}

/// The `[observed]` key of a column.
pub fn column_key(schema: &str, table: &str, column: &str) -> String {
    format!("{schema}.{table}.{column}")
}

/// Splits an `[observed]` key into schema, table and column.
pub fn split_key(key: &str) -> Option<(&str, &str, &str)> {
    let mut parts = key.splitn(3, '.');
    let (s, t, c) = (parts.next()?, parts.next()?, parts.next()?);
    (!s.is_empty() && !t.is_empty() && !c.is_empty() && !c.contains('.')).then_some((s, t, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_reads_back_what_it_writes() {
        for s in [
            ValueShape::Prefix,
            ValueShape::Infix,
            ValueShape::Suffix,
            ValueShape::Exact,
            ValueShape::Limit(21),
        ] {
            assert_eq!(s.to_string().parse::<ValueShape>(), Ok(s));
        }
        for bad in ["limit", "limit x", "limit21", "prefix%", "", "limit -1"] {
            assert_eq!(bad.parse::<ValueShape>(), Err(()), "{bad:?}");
        }
    }

    #[test]
    fn observed_values_come_heaviest_first_ties_by_value() {
        let c = ObservedColumn {
            values: [("new", 2), ("up", 120), ("down", 4), ("paused", 2)]
                .into_iter()
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            ..Default::default()
        };
        assert_eq!(
            c.weighted(),
            vec![("up", 120), ("down", 4), ("new", 2), ("paused", 2)]
        );
    }

    #[test]
    fn a_key_names_schema_table_and_column() {
        assert_eq!(split_key("app.t.c"), Some(("app", "t", "c")));
        assert_eq!(split_key("t.c"), None);
        assert_eq!(split_key("a.b.c.d"), None);
        assert_eq!(split_key("a..c"), None);
        assert_eq!(
            split_key(&column_key("public", "api_check", "status")),
            Some(("public", "api_check", "status"))
        );
    }
}
