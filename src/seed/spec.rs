//! The seed spec: `seeds/*.toml`, what a user says to make data realistic.
//!
//! Every key is optional; an empty spec (or none) seeds every table from the
//! catalog alone. Unknown keys are errors, and every name the spec mentions
//! (tables, columns, parents) keeps its position so that a wrong one is
//! reported as file:line:col with a hint. The format is documented in
//! the README (planck seed, The spec); the bundled example is seeds/example.toml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::config;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Rows of every table the spec does not size (default: --rows).
    pub rows: Option<u64>,
    /// Tables planck must not touch.
    #[serde(default)]
    pub exclude: Vec<Spanned<String>>,
    pub tenant: Option<Spanned<TenantSpec>>,
    #[serde(default)]
    pub tables: BTreeMap<Spanned<String>, Spanned<TableSpec>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantSpec {
    /// The tenant table (e.g. `accounts`): one row per tenant.
    pub table: Spanned<String>,
    /// How tenant sizes are distributed.
    #[serde(default)]
    pub distribution: Option<Spanned<Dist>>,
    /// Explicitly heavy tenants.
    #[serde(default)]
    pub heavy: Vec<Spanned<Heavy>>,
}

/// `"uniform"`, `{ zipf = 1.1 }` or `{ lognormal = 1.0 }` (sigma).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Dist {
    Named(String),
    Zipf { zipf: f64 },
    Lognormal { lognormal: f64 },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heavy {
    /// The tenant's number (1 = the first tenant row).
    pub tenant: Option<u64>,
    /// Or: the top N tenants together...
    pub top: Option<u64>,
    /// ...own this share of the rows (0..1).
    pub share: Option<f64>,
    /// The table whose rows are counted (default: every table directly under the tenant).
    pub table: Option<Spanned<String>>,
    /// The tenant owns exactly this many rows of `table` (scaled by --scale).
    pub rows: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Total rows (scaled by --scale).
    pub rows: Option<u64>,
    /// Rows per row of this parent table instead of a total.
    pub per: Option<Spanned<String>>,
    /// With `per`: a number, `[min, max]`, `{ zipf = s, max = n }` or `{ lognormal = sigma, mean = m }`.
    pub count: Option<Spanned<Count>>,
    #[serde(default)]
    pub columns: BTreeMap<Spanned<String>, Spanned<ColumnSpec>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Count {
    Fixed(u64),
    Range([u64; 2]),
    Zipf { zipf: f64, max: u64 },
    Lognormal { lognormal: f64, mean: f64 },
}

/// A value of a categorical list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Values {
    List(Vec<Scalar>),
    Weighted(BTreeMap<String, f64>),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// A named generator: name, first_name, last_name, email, username, company,
    /// word, words, sentence, paragraphs, title, slug, url, ip, phone, city,
    /// country, street, zip, uuid, hex, bytes, sequence, bool.
    #[serde(rename = "gen")]
    pub generator: Option<Spanned<String>>,
    /// Categorical values: a list, or a table of value = weight.
    pub values: Option<Spanned<Values>>,
    /// `[min, max]`: numbers, or dates/timestamps as strings.
    pub range: Option<Spanned<[Scalar; 2]>>,
    /// Share of NULLs (0..1).
    pub null: Option<f64>,
    /// Word count of `words`/`sentence`/`title`, `[min, max]`.
    pub words: Option<[u32; 2]>,
    /// Length in characters of `paragraphs`, bytes of `bytes`, digits of `hex`; elements of an array.
    pub len: Option<[u32; 2]>,
    /// Timestamps only: bias towards the end of the range (1 = uniform, 3 = mostly recent).
    pub bias: Option<f64>,
    /// This timestamp comes after that column of the same row...
    pub after: Option<Spanned<String>>,
    /// ...by this many seconds, `[min, max]` (default one second to 30 days).
    pub gap: Option<[i64; 2]>,
    /// A template: `{row}` is the 1-based row number (unique), `{word}` a random word.
    pub format: Option<String>,
    /// `sequence`: first value and step.
    pub start: Option<i64>,
    pub step: Option<i64>,
    /// jsonb/json: one generator per key.
    pub json: Option<BTreeMap<String, ColumnSpec>>,
    /// Arrays: the generator of the elements (`len` sets the element count).
    pub element: Option<Box<ColumnSpec>>,
    /// Make the column unique by construction.
    pub unique: Option<bool>,
}

/// A spec with the file it came from, for error positions.
#[derive(Debug, Clone, Default)]
pub struct SpecFile {
    pub path: Option<PathBuf>,
    pub text: String,
    pub spec: Spec,
}

impl SpecFile {
    pub fn parse(path: &Path, text: &str) -> Result<SpecFile> {
        let spec: Spec = toml::from_str(text).map_err(|e| config::toml_error(path, text, &e))?;
        Ok(SpecFile {
            path: Some(path.to_path_buf()),
            text: text.to_string(),
            spec,
        })
    }

    pub fn load(path: &Path) -> Result<SpecFile> {
        // The OS error goes in the headline only: as `Error::ReadFile` it would
        // print again as the "caused by:" line.
        let text = std::fs::read_to_string(path).map_err(|e| Error::Usage {
            message: format!("cannot read {}: {e}", path.display()),
            hint: (e.kind() == std::io::ErrorKind::NotFound).then(|| {
                "check --spec, or `[seed] spec` in planck.toml (relative to the project)"
                    .to_string()
            }),
        })?;
        SpecFile::parse(path, &text)
    }

    /// An error at a byte span of this spec.
    pub fn error(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Error {
        let (line, column) = config::line_col(&self.text, span.start);
        Error::Config {
            path: self.path.clone().unwrap_or_else(|| PathBuf::from("<spec>")),
            line: Some(line),
            column: Some(column),
            message: message.into(),
            hint,
        }
    }
}

/// "did you mean" for a misspelt name.
pub fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let v = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            cur.push(v);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Durations in the spec (`gap`) are seconds; this parses `2024-01-31`,
/// `2024-01-31 12:00:00` and `2024-01-31T12:00:00Z` into microseconds since 2000-01-01 UTC.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut d = date.split('-');
    let y: i64 = d.next()?.parse().ok()?;
    let m: i64 = d.next()?.parse().ok()?;
    let day: i64 = d.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(y, m, day) - days_from_civil(2000, 1, 1);
    let mut micros = days * 86_400_000_000;
    if let Some(t) = time {
        let t = t.trim_end_matches('Z');
        // A trailing numeric offset (+00, +01:00).
        let (t, off) = match t.rfind(['+', '-']) {
            Some(i) if i > 0 => (&t[..i], Some(&t[i..])),
            _ => (t, None),
        };
        let mut parts = t.split(':');
        let h: i64 = parts.next()?.parse().ok()?;
        let mi: i64 = parts.next().unwrap_or("0").parse().ok()?;
        let sec: f64 = parts.next().unwrap_or("0").parse().ok()?;
        micros += (h * 3600 + mi * 60) * 1_000_000 + (sec * 1e6) as i64;
        if let Some(off) = off {
            let sign = if off.starts_with('-') { -1 } else { 1 };
            let mut op = off[1..].split(':');
            let oh: i64 = op.next()?.parse().ok()?;
            let om: i64 = op.next().unwrap_or("0").parse().ok()?;
            micros -= sign * (oh * 3600 + om * 60) * 1_000_000;
        }
    }
    Some(micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_carry_their_line() {
        let text = "[tables.items]\nrows = 3\ncolour = 1\n";
        let err = SpecFile::parse(Path::new("s.toml"), text).unwrap_err();
        match err {
            Error::Config { line, message, .. } => {
                assert_eq!(line, Some(3));
                assert!(message.contains("colour"), "{message}");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn parses_a_full_spec() {
        let text = r#"
exclude = ["rate_limits"]
[tenant]
table = "accounts"
distribution = { zipf = 1.1 }
heavy = [{ tenant = 1, table = "items", rows = 3000 }, { top = 3, share = 0.2 }]
[tables.revisions]
per = "items"
count = [1, 3]
[tables.accounts.columns]
plan = { values = { free = 7, pro = 3 } }
created_at = { range = ["2021-01-01", "2026-01-01"], bias = 2.0 }
"#;
        let s = SpecFile::parse(Path::new("s.toml"), text).unwrap().spec;
        assert_eq!(s.tables.len(), 2);
        let t = s.tenant.unwrap().into_inner();
        assert!(matches!(t.distribution.unwrap().into_inner(), Dist::Zipf { zipf } if zipf == 1.1));
        assert_eq!(t.heavy.len(), 2);
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("2000-01-01"), Some(0));
        assert_eq!(parse_timestamp("2000-01-02 00:00:01"), Some(86_401_000_000));
        assert_eq!(parse_timestamp("2000-01-01 01:00:00+01"), Some(0));
        assert_eq!(
            suggest("itmes", ["items", "users"].into_iter()).as_deref(),
            Some("items")
        );
    }
}
