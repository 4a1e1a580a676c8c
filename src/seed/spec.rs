//! The seed spec: `seeds/*.toml`, what a user says to make data realistic.
//!
//! Every key is optional; an empty spec (or none) seeds every table from the
//! catalog alone. Unknown keys are errors, and every name the spec mentions
//! (tables, columns, parents) keeps its position so that a wrong one is
//! reported as file:line:col with a hint. The format is documented in
//! docs/seed.md (The spec); the bundled example is seeds/example.toml.

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
    /// An equi-depth histogram: ascending bounds (numbers, or dates and
    /// timestamps as strings), each bin as likely as the next; the values
    /// `values` does not give are drawn from it. Integer, float, date and
    /// timestamp columns.
    pub bins: Option<Spanned<Vec<Scalar>>>,
    /// The column's number of distinct values, as PostgreSQL's n_distinct
    /// says it: a count (`200`), or minus a fraction of the table's rows
    /// (`-0.25`: a quarter of them, however many the seed makes). With
    /// `bins` or `range`.
    pub distinct: Option<Spanned<f64>>,
}

/// A spec with the file it came from, for error positions.
#[derive(Debug, Clone, Default)]
pub struct SpecFile {
    pub path: Option<PathBuf>,
    pub text: String,
    pub spec: Spec,
    /// Set when planck made this spec of a statistics file (`planck seed
    /// --stats FILE`): its errors name that file and the table and column,
    /// not a line of text the user never saw.
    pub made_from: Option<MadeFrom>,
}

/// Where a spec `planck seed --stats` made came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MadeFrom {
    /// The statistics file (`--stats FILE`).
    pub stats: PathBuf,
    /// `--exact-tenants`.
    pub exact_tenants: bool,
    /// The user's spec laid over it (`--spec`, `[seed] spec`, the one
    /// `seeds/*.toml`), its path and its text; None under `--no-spec`.
    pub user: Option<(PathBuf, String)>,
    /// What the spec does not follow of the file, by kind.
    pub notes: Vec<crate::planner_stats::seed_spec::NotFollowed>,
}

/// The same file with the same text (the spec is parsed from the text).
impl PartialEq for SpecFile {
    fn eq(&self, other: &SpecFile) -> bool {
        self.path == other.path && self.text == other.text
    }
}

impl SpecFile {
    pub fn parse(path: &Path, text: &str) -> Result<SpecFile> {
        let spec: Spec = toml::from_str(text).map_err(|e| config::toml_error(path, text, &e))?;
        let sf = SpecFile {
            path: Some(path.to_path_buf()),
            text: text.to_string(),
            spec,
            made_from: None,
        };
        let shadow: Shadow =
            toml::from_str(text).map_err(|e| config::toml_error(path, text, &e))?;
        shadow.check(&sf)?;
        Ok(sf)
    }

    /// The spec `planck seed --stats` made (`text`), of `made.stats`:
    /// every error, from its checks here to the planner's, names the
    /// statistics file and the table and column.
    pub fn parse_made(text: &str, made: MadeFrom) -> Result<SpecFile> {
        let path = PathBuf::from(format!("{} (as a spec)", made.stats.display()));
        let spec: Spec = toml::from_str(text).map_err(|e| config::toml_error(&path, text, &e))?;
        let sf = SpecFile {
            path: Some(path.clone()),
            text: text.to_string(),
            spec,
            made_from: Some(made),
        };
        let shadow: Shadow =
            toml::from_str(text).map_err(|e| config::toml_error(&path, text, &e))?;
        shadow.check(&sf)?;
        Ok(sf)
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
        if let Some(m) = &self.made_from {
            return m.error(&self.text, span.start, message.into(), hint);
        }
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

impl MadeFrom {
    /// An error at byte `at` of the made spec's `text`: it names the
    /// statistics file and the table and column whose entry `at` is in
    /// (from the file, or from the user's spec laid over it), as the user
    /// knows them, rather than a line of the made text.
    fn error(&self, text: &str, at: usize, message: String, hint: Option<String>) -> Error {
        let (table, column) = entry_at(text, at);
        let from_user = self.user.as_ref().filter(|(_, t)| {
            table.as_ref().is_some_and(|table| {
                let (ut, uc) = user_entries(t);
                match &column {
                    Some(c) => uc.iter().any(|(tt, cc)| same_table(tt, table) && cc == c),
                    None => ut.iter().any(|tt| same_table(tt, table)),
                }
            })
        });
        let what = match (&table, &column) {
            (Some(t), Some(c)) => format!("table {t}, column {c}"),
            (Some(t), None) => format!("table {t}"),
            (None, _) if in_tenant(text, at) => {
                "the tenant column's most common values".to_string()
            }
            (None, _) => "the spec made".to_string(),
        };
        let (path, whence) = match from_user {
            Some((p, _)) => (
                p.clone(),
                format!(
                    "{what}, laid over the statistics of {}",
                    self.stats.display()
                ),
            ),
            None => (self.stats.clone(), format!("{what} of the statistics file")),
        };
        Error::Config {
            path,
            line: None,
            column: None,
            message: format!("{message} ({whence})"),
            hint: Some(match hint {
                Some(h) => format!(
                    "{h}; or, for a table or column this database lacks, exclude it (or \
                     give the column an entry) in a spec laid over the file"
                ),
                None => "a spec laid over the file (`--spec`) can exclude the table or give \
                         the column an entry of its own"
                    .to_string(),
            }),
        }
    }
}

/// Whether byte `at` of a made spec's text is in its `[tenant]` part.
fn in_tenant(text: &str, at: usize) -> bool {
    text[..at.min(text.len())]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .is_some_and(|h| h.trim_start_matches('[').starts_with("tenant"))
}

/// `a` and `b` name the same table (a spec may write `public.` or not).
fn same_table(a: &str, b: &str) -> bool {
    a.strip_prefix("public.").unwrap_or(a) == b.strip_prefix("public.").unwrap_or(b)
}

/// The tables and (table, column) pairs a user's spec names.
fn user_entries(text: &str) -> (Vec<String>, Vec<(String, String)>) {
    let Ok(v) = toml::from_str::<toml::Table>(text) else {
        return (Vec::new(), Vec::new());
    };
    let mut tables = Vec::new();
    let mut columns = Vec::new();
    if let Some(toml::Value::Table(ts)) = v.get("tables") {
        for (t, tv) in ts {
            tables.push(t.clone());
            if let Some(toml::Value::Table(cs)) = tv.get("columns") {
                columns.extend(cs.keys().map(|c| (t.clone(), c.clone())));
            }
        }
    }
    (tables, columns)
}

/// The table and column whose entry byte `at` of a made spec's text is in:
/// the last `[tables.T...]` header at or before it, and the column its
/// `columns` part (or the key of the line, in `[tables.T.columns]`) names.
/// (None, None) in `[tenant]`.
fn entry_at(text: &str, at: usize) -> (Option<String>, Option<String>) {
    let upto = &text[..at.min(text.len())];
    let line_start = upto.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let line = text[line_start..line_end].trim();
    let header = if line.starts_with('[') {
        Some(line)
    } else {
        upto[..line_start]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('['))
    };
    let Some(header) = header else {
        return (None, None);
    };
    let path = header_path(header.trim_matches(['[', ']']));
    if path.first().map(String::as_str) != Some("tables") || path.len() < 2 {
        return (None, None);
    }
    let table = Some(path[1].clone());
    let column = match path.get(2).map(String::as_str) {
        Some("columns") => match path.get(3) {
            Some(c) => Some(c.clone()),
            // `[tables.T.columns]`: the column is the line's key.
            None if !line.starts_with('[') => line
                .split('=')
                .next()
                .map(|k| header_path(k.trim()).remove(0)),
            None => None,
        },
        _ => None,
    };
    (table, column)
}

/// The keys of a TOML header or dotted key: `tables."a.b".columns` ->
/// [tables, a.b, columns] (basic and literal strings, `\"` within them).
fn header_path(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (None, '.') => out.push(String::new()),
            (None, c) if c.is_whitespace() => {}
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("one key").push(n);
                }
            }
            (Some(q), c) if c == q => quote = None,
            (_, c) => out.last_mut().expect("one key").push(c),
        }
    }
    out
}

/// The spec's values again, each with its position, read only to reject
/// what parses but means nothing (a reversed `[min, max]`, a negative
/// weight): [`Spec`]'s own fields stay plain for the code that uses them.
#[derive(Debug, Default, Deserialize)]
struct Shadow {
    tenant: Option<ShadowTenant>,
    #[serde(default)]
    tables: BTreeMap<String, ShadowTable>,
}

#[derive(Debug, Deserialize)]
struct ShadowTenant {
    distribution: Option<Spanned<Dist>>,
}

#[derive(Debug, Deserialize)]
struct ShadowTable {
    count: Option<Spanned<Count>>,
    #[serde(default)]
    columns: BTreeMap<String, ShadowColumn>,
}

#[derive(Debug, Deserialize)]
struct ShadowColumn {
    values: Option<Spanned<Values>>,
    range: Option<Spanned<[Scalar; 2]>>,
    null: Option<Spanned<f64>>,
    words: Option<Spanned<[u32; 2]>>,
    len: Option<Spanned<[u32; 2]>>,
    bias: Option<Spanned<f64>>,
    gap: Option<Spanned<[i64; 2]>>,
    json: Option<BTreeMap<String, ShadowColumn>>,
    element: Option<Box<ShadowColumn>>,
    bins: Option<Spanned<Vec<Scalar>>>,
    distinct: Option<Spanned<f64>>,
}

/// The longest `gap` in seconds: its microseconds must fit 64 bits.
const MAX_GAP_SECONDS: i64 = i64::MAX / 1_000_000;

impl Shadow {
    fn check(&self, sf: &SpecFile) -> Result<()> {
        if let Some(d) = self.tenant.as_ref().and_then(|t| t.distribution.as_ref()) {
            match d.get_ref() {
                Dist::Zipf { zipf } if !(zipf.is_finite() && *zipf > 0.0) => {
                    return Err(sf.error(
                        d.span(),
                        format!("`zipf = {zipf}`: the exponent must be positive"),
                        Some("1.1 is a typical skew; larger is more skewed".into()),
                    ));
                }
                Dist::Lognormal { lognormal } if !(lognormal.is_finite() && *lognormal >= 0.0) => {
                    return Err(sf.error(
                        d.span(),
                        format!("`lognormal = {lognormal}`: sigma must be zero or positive"),
                        Some("1.0 is a typical spread".into()),
                    ));
                }
                _ => {}
            }
        }
        for t in self.tables.values() {
            if let Some(c) = &t.count {
                check_count(sf, c)?;
            }
            for col in t.columns.values() {
                col.check(sf)?;
            }
        }
        Ok(())
    }
}

fn check_count(sf: &SpecFile, c: &Spanned<Count>) -> Result<()> {
    let bad = |message: String, hint: &str| Err(sf.error(c.span(), message, Some(hint.into())));
    match c.get_ref() {
        Count::Range([a, b]) if a > b => bad(
            format!("`count = [{a}, {b}]` is reversed"),
            &format!("write [min, max]: [{b}, {a}]"),
        ),
        Count::Zipf { zipf, .. } if !(zipf.is_finite() && *zipf > 0.0) => bad(
            format!("`zipf = {zipf}`: the exponent must be positive"),
            "1.1 is a typical skew; larger is more skewed",
        ),
        Count::Zipf { max: 0, .. } => bad(
            "`max = 0`: a zipf count needs a maximum of at least 1".into(),
            "`max` is the most children one parent row gets",
        ),
        Count::Lognormal { lognormal, mean }
            if !(lognormal.is_finite()
                && *lognormal >= 0.0
                && mean.is_finite()
                && *mean >= 0.0) =>
        {
            bad(
                format!("`lognormal = {lognormal}, mean = {mean}`: both must be zero or positive"),
                "`mean` is the average count, `lognormal` its spread (sigma)",
            )
        }
        _ => Ok(()),
    }
}

/// A `[min, max]` pair written backwards.
fn reversed<T: PartialOrd + std::fmt::Display>(
    sf: &SpecFile,
    key: &str,
    v: &Spanned<[T; 2]>,
) -> Result<()> {
    let [a, b] = v.get_ref();
    if a > b {
        return Err(sf.error(
            v.span(),
            format!("`{key} = [{a}, {b}]` is reversed"),
            Some(format!("write [min, max]: [{b}, {a}]")),
        ));
    }
    Ok(())
}

impl ShadowColumn {
    fn check(&self, sf: &SpecFile) -> Result<()> {
        if let Some(w) = &self.words {
            reversed(sf, "words", w)?;
        }
        if let Some(l) = &self.len {
            reversed(sf, "len", l)?;
        }
        if let Some(g) = &self.gap {
            reversed(sf, "gap", g)?;
            if g.get_ref().iter().any(|s| s.abs() > MAX_GAP_SECONDS) {
                return Err(sf.error(
                    g.span(),
                    format!(
                        "`gap = [{}, {}]` overflows: a gap is at most {MAX_GAP_SECONDS} seconds",
                        g.get_ref()[0],
                        g.get_ref()[1]
                    ),
                    Some("a gap is in seconds: 86400 is a day".into()),
                ));
            }
        }
        if let Some(p) = &self.null {
            let p0 = *p.get_ref();
            if !(0.0..=1.0).contains(&p0) {
                return Err(sf.error(
                    p.span(),
                    format!("`null = {p0}`: the share of NULLs is between 0 and 1"),
                    Some("0.1 makes one row in ten NULL".into()),
                ));
            }
        }
        if let Some(b) = &self.bias {
            let b0 = *b.get_ref();
            if !(b0.is_finite() && b0 > 0.0) {
                return Err(sf.error(
                    b.span(),
                    format!("`bias = {b0}`: the bias must be positive"),
                    Some("1 is uniform, 3 leans towards the end of the range".into()),
                ));
            }
        }
        if let Some(r) = &self.range {
            let [a, b] = r.get_ref();
            let order = match (a, b) {
                (Scalar::Int(x), Scalar::Int(y)) => x.partial_cmp(y),
                (Scalar::Int(x), Scalar::Float(y)) => (*x as f64).partial_cmp(y),
                (Scalar::Float(x), Scalar::Int(y)) => x.partial_cmp(&(*y as f64)),
                (Scalar::Float(x), Scalar::Float(y)) => x.partial_cmp(y),
                (Scalar::Str(x), Scalar::Str(y)) => {
                    match (parse_timestamp(x), parse_timestamp(y)) {
                        (Some(x), Some(y)) => x.partial_cmp(&y),
                        _ => None,
                    }
                }
                _ => None,
            };
            if order == Some(std::cmp::Ordering::Greater) {
                return Err(sf.error(
                    r.span(),
                    "`range` is reversed: write [min, max]",
                    Some("the first value is the smallest".into()),
                ));
            }
        }
        if let Some(v) = &self.values
            && let Values::Weighted(w) = v.get_ref()
            && let Some((name, weight)) = w.iter().find(|(_, x)| !(x.is_finite() && **x > 0.0))
        {
            return Err(sf.error(
                v.span(),
                format!("the weight of `{name}` is {weight}: every weight must be positive"),
                Some("weights are relative (`{ free = 7, pro = 3 }`); leave out a value that never occurs".into()),
            ));
        }
        if let Some(d) = &self.distinct {
            let d0 = *d.get_ref();
            if !(d0.is_finite() && d0 != 0.0 && d0 >= -1.0) {
                return Err(sf.error(
                    d.span(),
                    format!("`distinct = {d0}`: a count above 0, or a share of the rows from -1 to 0"),
                    Some("as PostgreSQL's n_distinct: `200` values, or `-0.25` for a quarter of the rows".into()),
                ));
            }
        }
        if let Some(b) = &self.bins {
            let key = |s: &Scalar| match s {
                Scalar::Int(i) => Some(*i as f64),
                Scalar::Float(f) => Some(*f),
                Scalar::Str(t) => parse_timestamp(t).map(|m| m as f64),
                Scalar::Bool(_) => None,
            };
            let keys: Option<Vec<f64>> = b.get_ref().iter().map(key).collect();
            let ascending = keys
                .as_ref()
                .is_some_and(|k| k.len() >= 2 && k.windows(2).all(|w| w[0] <= w[1]));
            if !ascending {
                return Err(sf.error(
                    b.span(),
                    "`bins` must be two or more ascending numbers or timestamps",
                    Some("the bounds of an equi-depth histogram, lowest first: `bins = [1, 10, 100]`".into()),
                ));
            }
        }
        for c in self.json.iter().flat_map(|j| j.values()) {
            c.check(sf)?;
        }
        if let Some(e) = &self.element {
            e.check(sf)?;
        }
        Ok(())
    }
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

    /// A made spec's error names the table and column its span is in,
    /// whether the column has a section of its own or is a key of
    /// `[tables.T.columns]`, and the statistics file.
    #[test]
    fn a_made_specs_error_names_the_table_and_column_of_its_span() {
        let text = "# made\n[tenant]\ntable = \"a\"\n\n[tables.\"s.t\"]\nrows = 5\n\n\
                    [tables.\"s.t\".columns]\nk = { null = 0.5 }\n\n\
                    [tables.\"s.t\".columns.n.values]\n\"1\" = 0.5\n";
        let at = |s: &str| text.find(s).unwrap();
        assert_eq!(entry_at(text, at("rows")), (Some("s.t".into()), None));
        assert_eq!(
            entry_at(text, at("k = ")),
            (Some("s.t".into()), Some("k".into()))
        );
        assert_eq!(
            entry_at(text, at("\"1\" =")),
            (Some("s.t".into()), Some("n".into()))
        );
        assert_eq!(entry_at(text, at("table =")), (None, None));
        assert!(in_tenant(text, at("table =")));
        let made = MadeFrom {
            stats: "stats/prod.json".into(),
            ..MadeFrom::default()
        };
        match made.error(text, at("\"1\" ="), "bad".into(), None) {
            Error::Config {
                path,
                line,
                message,
                ..
            } => {
                assert_eq!(path, PathBuf::from("stats/prod.json"));
                assert_eq!(line, None);
                assert_eq!(message, "bad (table s.t, column n of the statistics file)");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("2000-01-01"), Some(0));
        assert_eq!(parse_timestamp("2000-01-02 00:00:01"), Some(86_401_000_000));
        assert_eq!(parse_timestamp("2000-01-01 01:00:00+01"), Some(0));
    }

    /// The position and message of the error a spec gives.
    fn rejected(text: &str) -> (usize, usize, String) {
        match SpecFile::parse(Path::new("s.toml"), text) {
            Err(Error::Config {
                line: Some(l),
                column: Some(c),
                message,
                ..
            }) => (l, c, message),
            other => panic!("expected a positioned error for {text:?}, got {other:?}"),
        }
    }

    /// Issue 9 point 10: values that parse but mean nothing are rejected at
    /// their position, each with its own message.
    #[test]
    fn nonsense_values_are_rejected_at_their_position() {
        let cases = [
            (
                "[tables.t.columns]\nbody = { gen = \"words\", words = [5, 1] }\n",
                (2, 33, "`words = [5, 1]` is reversed"),
            ),
            (
                "[tables.t]\nper = \"p\"\ncount = [5, 1]\n",
                (3, 9, "`count = [5, 1]` is reversed"),
            ),
            (
                "[tenant]\ntable = \"a\"\ndistribution = { zipf = -1 }\n",
                (3, 16, "`zipf = -1`: the exponent must be positive"),
            ),
            (
                "[tables.t]\nper = \"p\"\ncount = { zipf = -1.0, max = 4 }\n",
                (3, 9, "`zipf = -1`: the exponent must be positive"),
            ),
            (
                "[tables.t.columns]\nplan = { values = { x = 0, y = 0 } }\n",
                (
                    2,
                    19,
                    "the weight of `x` is 0: every weight must be positive",
                ),
            ),
            (
                "[tables.t.columns]\nplan = { values = { x = 3, y = -1 } }\n",
                (
                    2,
                    19,
                    "the weight of `y` is -1: every weight must be positive",
                ),
            ),
            (
                "[tables.t.columns]\nb = { after = \"a\", gap = [1, 10000000000000] }\n",
                (
                    2,
                    26,
                    "`gap = [1, 10000000000000]` overflows: a gap is at most 9223372036854 seconds",
                ),
            ),
            (
                "[tables.t.columns]\nb = { after = \"a\", gap = [60, 1] }\n",
                (2, 26, "`gap = [60, 1]` is reversed"),
            ),
            (
                "[tables.t.columns]\nn = { bins = [1, 50, 10] }\n",
                (
                    2,
                    14,
                    "`bins` must be two or more ascending numbers or timestamps",
                ),
            ),
            (
                "[tables.t.columns]\nn = { range = [1, 9], distinct = -2 }\n",
                (
                    2,
                    34,
                    "`distinct = -2`: a count above 0, or a share of the rows from -1 to 0",
                ),
            ),
            (
                "[tables.t.columns]\nn = { range = [10, 1] }\n",
                (2, 15, "`range` is reversed: write [min, max]"),
            ),
            (
                "[tables.t.columns]\nn = { null = 1.5 }\n",
                (2, 14, "`null = 1.5`: the share of NULLs is between 0 and 1"),
            ),
            (
                "[tables.t.columns]\nn = { len = [3, 1] }\n",
                (2, 13, "`len = [3, 1]` is reversed"),
            ),
            (
                "[tables.t.columns.doc.json]\nk = { gen = \"words\", words = [9, 2] }\n",
                (2, 30, "`words = [9, 2]` is reversed"),
            ),
        ];
        for (text, (line, col, message)) in cases {
            let got = rejected(text);
            assert_eq!(got, (line, col, message.to_string()), "{text}");
        }
        // The same values the right way round are fine.
        SpecFile::parse(
            Path::new("s.toml"),
            "[tables.t.columns]\nbody = { gen = \"words\", words = [1, 5] }\nplan = { values = { x = 1, y = 2 } }\n",
        )
        .unwrap();
    }
}
