//! `planck seed --stats FILE` (issue 49, point 3): a statistics file turned
//! into the seed's own spec, so the seed draws production's shapes with its
//! own generators and its internals stay as they are.
//!
//! The spec is built as TOML (the format `seeds/*.toml` is written in:
//! docs/seed.md, The spec) rather than as the seed's types, because this
//! module sits below the seed and may not import it; the command parses the
//! text as it parses any spec, so every check a spec gets, this one gets.
//!
//! What the file says, and what the spec makes of it:
//! - a table's `reltuples`: its `rows` (the seed multiplies them by `--scale`);
//! - a column's `null_frac`: its `null`;
//! - most common values that cover the column: `values`, weighted by their
//!   frequencies;
//! - a histogram of numbers, dates or timestamps: `bins` (its equi-depth
//!   bounds), with `distinct` (n_distinct, its sign kept so that a share of
//!   the rows scales with `--scale` as PostgreSQL scales it) and the most
//!   common values beside it in `values` at their shares;
//! - most common values that cover the column, of any type `values` takes
//!   (booleans and floats included): `values`;
//! - a unique text column (`n_distinct = -1`): `unique = true`;
//! - the tenant column's most common values (a foreign key named
//!   `tenant_id`, `account_id`, ...): `[tenant]`, the top tenants `heavy`
//!   with their shares of the table's rows, a zipf fitted to the rest.
//!
//! The spec cannot say everything a file does: physical order, a text
//! histogram, foreign key fan-out other than the tenant's. Each such kind is one note, with
//! its count, for the seed's summary to list rather than drop silently.

use std::collections::BTreeMap;

use toml::{Table, Value};

pub use crate::wire::seed::NotFollowed;
use crate::wire::stats::{ColumnStats, StatsFile, TableStats, ValuesMode};

/// The names of a tenant column (as the seed's own zero-spec inference).
const TENANT_COLUMNS: &[&str] = &[
    "tenant_id",
    "account_id",
    "org_id",
    "organization_id",
    "workspace_id",
];

/// Most common values of the tenant column made heavy tenants, at most.
const HEAVY_TENANTS: usize = 10;

/// Most common values that cover at least this share of a column's non-NULL
/// rows are the whole column: a weighted list.
const MCV_COVERAGE: f64 = 0.995;

/// A correlation beyond this is a physical order a spec cannot give.
const ORDERED: f32 = 0.9;

/// The spec made from a file, and what it could not say.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsSpec {
    /// The spec's TOML, as a `seeds/*.toml` would hold it.
    pub spec: Table,
    /// One entry per kind of statistic the spec does not follow.
    pub notes: Vec<NotFollowed>,
}

/// What the spec cannot express, by kind: the columns (or tables) each
/// affects, reported as one line each.
#[derive(Default)]
struct Unmet(BTreeMap<&'static str, Vec<String>>);

impl Unmet {
    fn add(&mut self, kind: &'static str, what: String) {
        self.0.entry(kind).or_default().push(what);
    }

    fn lines(self) -> Vec<NotFollowed> {
        self.0
            .into_iter()
            .map(|(kind, names)| NotFollowed {
                kind: kind.to_string(),
                count: names.len(),
                names,
            })
            .collect()
    }
}

/// The kind of values a column holds, as far as the spec is concerned.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Float,
    Temporal,
    Text,
    /// An enum (values kept, a type the others are not).
    Label,
    Bool,
    Other,
}

fn kind(c: &ColumnStats) -> Kind {
    let t = c.type_name.as_str();
    if t.ends_with("[]") {
        return Kind::Other;
    }
    match t {
        "smallint" | "integer" | "bigint" => Kind::Int,
        "real" | "double precision" => Kind::Float,
        "date" => Kind::Temporal,
        "text" | "citext" | "name" => Kind::Text,
        "boolean" => Kind::Bool,
        "interval" | "money" | "uuid" | "json" | "jsonb" | "bytea" | "inet" | "cidr" | "oid" => {
            Kind::Other
        }
        _ if t.starts_with("numeric") => Kind::Float,
        _ if t.starts_with("timestamp") => Kind::Temporal,
        _ if t.starts_with("character") => Kind::Text,
        _ if t.starts_with("time") || t.starts_with("bit") => Kind::Other,
        _ if c.values_kept => Kind::Label,
        _ => Kind::Other,
    }
}

/// The spec of `file`. `exact_tenants`: the tenant column's most common
/// values are kept as tenant numbers (an integer key numbered from 1, as
/// the seed numbers its tenants), not ranked.
pub fn spec_from(file: &StatsFile, exact_tenants: bool) -> StatsSpec {
    let mut unmet = Unmet::default();
    let mut tables = Table::new();
    let tenant = tenant_table(file);
    let fk_columns: Vec<(String, String)> = file
        .foreign_keys
        .iter()
        .flat_map(|f| f.columns.iter().map(|c| (f.table.clone(), c.clone())))
        .collect();
    for t in &file.tables {
        let full = format!("{}.{}", t.schema, t.name);
        if t.kind == "partition" {
            unmet.add("partitions sized through their partitioned table", full);
            continue;
        }
        if !t.analyzed || t.reltuples <= 0.0 {
            unmet.add("tables with no statistics (never analyzed, or empty)", full);
            continue;
        }
        let mut ts = Table::new();
        ts.insert("rows".into(), Value::Integer(t.reltuples.round() as i64));
        let mut cols = Table::new();
        for c in columns_of(t) {
            let name = format!("{full}.{}", c.name);
            if fk_columns.contains(&(full.clone(), c.name.clone())) {
                let is_tenant = tenant.as_ref().is_some_and(|(_, refs)| {
                    refs.iter().any(|(tt, cc)| *tt == full && *cc == c.name)
                });
                if !is_tenant && c.most_common_freqs.is_some() {
                    unmet.add(
                        "foreign-key fan-out (children spread over parents as the seed sizes them, not by the column's most common values)",
                        name,
                    );
                }
                continue;
            }
            if let Some(spec) = column(t, c, &name, file.values, &mut unmet) {
                cols.insert(c.name.clone(), Value::Table(spec));
            }
        }
        if !cols.is_empty() {
            ts.insert("columns".into(), Value::Table(cols));
        }
        tables.insert(spec_name(&t.schema, &t.name), Value::Table(ts));
    }
    let mut spec = Table::new();
    if let Some((tt, refs)) = &tenant {
        spec.insert(
            "tenant".into(),
            Value::Table(tenant_spec(file, tt, refs, exact_tenants, &mut unmet)),
        );
    }
    spec.insert("tables".into(), Value::Table(tables));
    StatsSpec {
        spec,
        notes: unmet.lines(),
    }
}

/// `name` in the public schema, `schema.name` elsewhere (as a spec names tables).
fn spec_name(schema: &str, name: &str) -> String {
    if schema == "public" {
        name.to_string()
    } else {
        format!("{schema}.{name}")
    }
}

/// The column rows of a table to follow: a partitioned table's are those
/// over its partitions (`inherited`), any other's its own.
fn columns_of(t: &TableStats) -> impl Iterator<Item = &ColumnStats> {
    let inherited = t.kind == "partitioned";
    t.columns
        .iter()
        .filter(move |c| c.analyzed && c.inherited == inherited)
}

/// One column's spec entry, or None when the spec would say nothing the
/// seed does not already do.
fn column(
    t: &TableStats,
    c: &ColumnStats,
    name: &str,
    mode: ValuesMode,
    unmet: &mut Unmet,
) -> Option<Table> {
    let mut e = Table::new();
    let null = f64::from(c.null_frac.unwrap_or(0.0));
    e.insert("null".into(), Value::Float(round(null)));
    let rows = f64::from(t.reltuples.max(0.0));
    let distinct = match c.n_distinct {
        Some(d) if d < 0.0 => f64::from(-d) * rows,
        Some(d) => f64::from(d),
        None => 0.0,
    };
    let k = kind(c);
    let unique = c.n_distinct.is_some_and(|d| d <= -0.999);
    if unique {
        // A key: the catalog's unique constraint keeps it unique (an entry
        // would replace the key's own generator); text with none is made
        // unique by the spec.
        return (k == Kind::Text).then(|| {
            let mut e = Table::new();
            e.insert("unique".into(), Value::Boolean(true));
            e
        });
    }
    let mcv: Vec<(&str, f64)> = match (&c.most_common_vals, &c.most_common_freqs) {
        (Some(v), Some(f)) => v
            .iter()
            .zip(f)
            .filter_map(|(v, f)| v.as_deref().map(|v| (v, f64::from(*f))))
            .collect(),
        _ => Vec::new(),
    };
    let hist: Vec<&str> = c
        .histogram_bounds
        .iter()
        .flatten()
        .filter_map(|v| v.as_deref())
        .collect();
    if mode == ValuesMode::None && (c.most_common_freqs.is_some() || c.histogram_len > 0) {
        unmet.add(
            "values dropped by `--values none` (NULL share only)",
            name.to_string(),
        );
        return Some(e);
    }
    let covered: f64 = mcv.iter().map(|(_, f)| f).sum::<f64>() / (1.0 - null).max(1e-9);
    let whole = !mcv.is_empty() && (covered >= MCV_COVERAGE || distinct <= mcv.len() as f64 + 0.5);
    let weighable = matches!(
        k,
        Kind::Int | Kind::Float | Kind::Bool | Kind::Text | Kind::Temporal | Kind::Label
    );
    if whole && weighable {
        e.insert("values".into(), weights(&mcv));
        ordered(c, name, unmet);
        return Some(e);
    }
    if matches!(k, Kind::Int | Kind::Float | Kind::Temporal) {
        let bounds: Vec<&str> = hist
            .iter()
            .chain(mcv.iter().map(|(v, _)| v))
            .copied()
            .collect();
        // Every non-NULL value distinct (a nullable unique column): a range,
        // which the seed's uniqueness keeps distinct; a count of points would not.
        let all_distinct = c
            .n_distinct
            .is_some_and(|d| d < 0.0 && f64::from(-d) >= (1.0 - null) - 0.001);
        let bins = (hist.len() >= 2 && !all_distinct)
            .then(|| bins_of(k, &hist))
            .flatten();
        if let Some(bins) = bins {
            // The histogram's equi-depth bins, the most common values at
            // their shares beside them, and the distinct count.
            e.insert("bins".into(), bins);
            if let Some(d) = c.n_distinct.filter(|d| *d != 0.0) {
                e.insert("distinct".into(), Value::Float(round(f64::from(d))));
            }
            if !mcv.is_empty() {
                e.insert("values".into(), weights(&mcv));
            }
            ordered(c, name, unmet);
            return Some(e);
        }
        if let Some(range) = range_of(k, &bounds) {
            e.insert("range".into(), range);
            if !all_distinct && let Some(d) = c.n_distinct.filter(|d| *d != 0.0) {
                e.insert("distinct".into(), Value::Float(round(f64::from(d))));
                if !mcv.is_empty() {
                    e.insert("values".into(), weights(&mcv));
                }
            } else if !mcv.is_empty() {
                unmet.add(
                    "most common values beside a histogram (drawn uniformly in the range instead)",
                    name.to_string(),
                );
            }
            ordered(c, name, unmet);
            return Some(e);
        }
    }
    if !mcv.is_empty() || !hist.is_empty() {
        let kind = if whole {
            "most common values of a type `values` cannot weigh"
        } else if k == Kind::Text || k == Kind::Label {
            "text distributions beyond their most common values (no spec key draws text between histogram bounds)"
        } else {
            "value distributions of types the spec draws no range of"
        };
        unmet.add(kind, name.to_string());
    }
    // A NULL share alone: said when there are NULLs. An entry of `null = 0`
    // alone would replace the generator the seed picks from the catalog
    // (a key's, a column of a composite key) for nothing.
    (null > 0.0).then_some(e)
}

/// `values = { v = share }`: each most common value at its share of the rows.
fn weights(mcv: &[(&str, f64)]) -> Value {
    let mut w = Table::new();
    for (v, f) in mcv {
        w.insert((*v).to_string(), Value::Float(round(*f)));
    }
    Value::Table(w)
}

/// `bins = [...]`: a histogram's bounds as the spec writes them, None when
/// one does not read as the column's kind.
fn bins_of(k: Kind, bounds: &[&str]) -> Option<Value> {
    let one = |s: &&str| -> Option<Value> {
        match k {
            Kind::Int => s.parse().ok().map(Value::Integer),
            Kind::Float => s
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Value::Float),
            Kind::Temporal => micros(s).map(|_| Value::String((*s).to_string())),
            _ => None,
        }
    };
    bounds
        .iter()
        .map(one)
        .collect::<Option<Vec<_>>>()
        .map(Value::Array)
}

/// A column in physical order: the spec draws in no order.
fn ordered(c: &ColumnStats, name: &str, unmet: &mut Unmet) {
    if c.correlation.is_some_and(|r| r.abs() > ORDERED) {
        unmet.add(
            "physical order (|correlation| > 0.9; the seed's values come in no order)",
            name.to_string(),
        );
    }
}

/// `[min, max]` over the values, as the spec writes a range.
fn range_of(k: Kind, values: &[&str]) -> Option<Value> {
    let pair = |a: Value, b: Value| Some(Value::Array(vec![a, b]));
    match k {
        Kind::Int => {
            let v: Vec<i64> = values.iter().filter_map(|s| s.parse().ok()).collect();
            pair(
                Value::Integer(*v.iter().min()?),
                Value::Integer(*v.iter().max()?),
            )
        }
        Kind::Float => {
            let v: Vec<f64> = values
                .iter()
                .filter_map(|s| s.parse().ok())
                .filter(|x: &f64| x.is_finite())
                .collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if lo > hi {
                return None;
            }
            pair(Value::Float(lo), Value::Float(hi))
        }
        Kind::Temporal => {
            let mut v: Vec<(i64, &str)> = values
                .iter()
                .filter_map(|s| micros(s).map(|m| (m, *s)))
                .collect();
            v.sort();
            let (lo, hi) = (v.first()?, v.last()?);
            pair(Value::String(lo.1.into()), Value::String(hi.1.into()))
        }
        _ => None,
    }
}

/// A date or timestamp's seconds since 1970-01-01 (PostgreSQL's ISO text,
/// `2024-01-31`, `2024-01-31 12:00:00.5+01`), for ordering and bin widths;
/// the seed reads the text itself.
fn micros(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, ""));
    let mut d = date.splitn(3, '-');
    let (y, m, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let (clock, offset) = match time.rfind(['+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => (time, ""),
    };
    let mut secs = 0.0;
    for (part, unit) in clock
        .split(':')
        .filter(|p| !p.is_empty())
        .zip([3600.0, 60.0, 1.0])
    {
        secs += part.parse::<f64>().ok()? * unit;
    }
    if !offset.is_empty() {
        let sign = if offset.starts_with('-') { 1.0 } else { -1.0 };
        for (part, unit) in offset[1..].split(':').zip([3600.0, 60.0, 1.0]) {
            secs += sign * part.parse::<f64>().ok()? * unit;
        }
    }
    Some(days * 86_400_000_000 + (secs * 1e6) as i64)
}

/// A fraction rounded to six decimals (the file's `real`s hold about seven digits).
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The tenant table: the table that single-column foreign keys named like
/// a tenant column reference most, with those references.
fn tenant_table(file: &StatsFile) -> Option<(String, Vec<(String, String)>)> {
    let mut by_parent: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
    for f in &file.foreign_keys {
        if f.columns.len() == 1 && TENANT_COLUMNS.contains(&f.columns[0].as_str()) {
            by_parent
                .entry(f.references.as_str())
                .or_default()
                .push((f.table.clone(), f.columns[0].clone()));
        }
    }
    by_parent
        .into_iter()
        .max_by_key(|(_, refs)| refs.len())
        .map(|(p, refs)| (p.to_string(), refs))
}

/// `[tenant]`: the table, a zipf fitted to the tenant columns' most common
/// values, and the top tenants of each table heavy with their shares.
fn tenant_spec(
    file: &StatsFile,
    tenant: &str,
    refs: &[(String, String)],
    exact: bool,
    unmet: &mut Unmet,
) -> Table {
    let find = |full: &str| {
        file.tables
            .iter()
            .find(|t| format!("{}.{}", t.schema, t.name) == full)
    };
    let mut spec = Table::new();
    let (ts, tn) = tenant.split_once('.').unwrap_or(("public", tenant));
    spec.insert("table".into(), Value::String(spec_name(ts, tn)));
    let tenants = find(tenant).map_or(0.0, |t| f64::from(t.reltuples.max(0.0)));
    let mut heavy = Vec::new();
    let mut fits = Vec::new();
    for (table, col) in refs {
        let Some(t) = find(table) else { continue };
        let Some(c) = columns_of(t).find(|c| c.name == *col) else {
            continue;
        };
        let Some(freqs) = &c.most_common_freqs else {
            continue;
        };
        let nonnull = 1.0 - f64::from(c.null_frac.unwrap_or(0.0));
        let shares: Vec<f64> = freqs
            .iter()
            .map(|f| f64::from(*f) / nonnull.max(1e-9))
            .collect();
        if let Some(s) = zipf_fit(&shares) {
            fits.push(s);
        }
        let ids: Option<Vec<i64>> = c
            .most_common_vals
            .as_ref()
            .filter(|_| exact)
            .and_then(|v| v.iter().map(|x| x.as_deref()?.parse().ok()).collect());
        if exact && ids.is_none() {
            unmet.add(
                "tenant ids `--exact-tenants` cannot keep (not integers, or values not kept)",
                format!("{table}.{col}"),
            );
        }
        let limit = if ids.is_some() {
            shares.len()
        } else {
            HEAVY_TENANTS
        };
        for (rank, share) in shares.iter().enumerate().take(limit) {
            let number = match &ids {
                Some(ids) => ids[rank],
                None => rank as i64 + 1,
            };
            if number < 1 || (tenants > 0.0 && number as f64 > tenants) {
                continue;
            }
            let mut h = Table::new();
            h.insert("tenant".into(), Value::Integer(number));
            h.insert("table".into(), {
                let (s, n) = table.split_once('.').unwrap_or(("public", table));
                Value::String(spec_name(s, n))
            });
            h.insert("share".into(), Value::Float(round(share.min(1.0))));
            heavy.push(Value::Table(h));
        }
    }
    let s = if fits.is_empty() {
        None
    } else {
        Some(fits.iter().sum::<f64>() / fits.len() as f64)
    };
    let dist = match s {
        Some(s) => {
            let mut d = Table::new();
            d.insert("zipf".into(), Value::Float((s * 1000.0).round() / 1000.0));
            Value::Table(d)
        }
        None => Value::String("uniform".into()),
    };
    spec.insert("distribution".into(), dist);
    if !heavy.is_empty() {
        spec.insert("heavy".into(), Value::Array(heavy));
    }
    spec
}

/// The zipf exponent of ranked shares: the slope of log share over log
/// rank, by least squares; None with fewer than two.
fn zipf_fit(shares: &[f64]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = shares
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, s)| (((i + 1) as f64).ln(), s.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| (-sxy / sxx).clamp(0.05, 5.0))
}

/// Lays `user` (a spec a user wrote) over `generated`: the user's top-level
/// keys (`rows`, `exclude`, `[tenant]`) replace the generated ones; a table
/// the user sizes (`rows` or `per`) loses the generated size; each column
/// the user writes replaces the generated column whole; an excluded table
/// loses its generated entry. Tables are matched with and without
/// `public.`.
pub fn overlay(generated: &mut Table, user: &Table) {
    let key = |n: &str| n.strip_prefix("public.").unwrap_or(n).to_string();
    for (k, v) in user {
        if k != "tables" {
            generated.insert(k.clone(), v.clone());
        }
    }
    let excluded: Vec<String> = match user.get("exclude") {
        Some(Value::Array(ex)) => ex.iter().filter_map(Value::as_str).map(key).collect(),
        _ => Vec::new(),
    };
    // The made `[tenant]` drops what the user excluded: the whole of it
    // when its table is, a heavy tenant of an excluded table.
    if !user.contains_key("tenant")
        && let Some(Value::Table(t)) = generated.get_mut("tenant")
    {
        let gone = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .is_some_and(|n| excluded.contains(&key(n)))
        };
        if let Some(Value::Array(h)) = t.get_mut("heavy") {
            h.retain(|x| !gone(x.get("table")));
        }
        if gone(t.get("table")) {
            generated.remove("tenant");
        }
    }
    let gen_tables = match generated
        .entry("tables")
        .or_insert_with(|| Value::Table(Table::new()))
    {
        Value::Table(t) => t,
        _ => unreachable!("the generated `tables` is a table"),
    };
    for e in &excluded {
        gen_tables.remove(e);
    }
    let Some(Value::Table(user_tables)) = user.get("tables") else {
        return;
    };
    for (name, ut) in user_tables {
        let Value::Table(ut) = ut else { continue };
        let gt = gen_tables.remove(&key(name));
        let mut merged = match gt {
            Some(Value::Table(g)) => g,
            _ => Table::new(),
        };
        if ut.contains_key("rows") || ut.contains_key("per") {
            merged.remove("rows");
        }
        for (k, v) in ut {
            if k == "columns"
                && let (Value::Table(uc), Some(Value::Table(gc))) = (v, merged.get_mut("columns"))
            {
                for (c, cv) in uc {
                    gc.insert(c.clone(), cv.clone());
                }
                continue;
            }
            merged.insert(k.clone(), v.clone());
        }
        gen_tables.insert(name.clone(), Value::Table(merged));
    }
}

/// The spec's text, headed by where it came from.
pub fn to_text(spec: &Table, source: &str) -> String {
    format!(
        "# The spec `planck seed --stats` made of {source}.\n{}",
        toml::to_string(spec).expect("a TOML table serializes")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::stats::ForeignKeyStats;

    fn col(name: &str, type_name: &str) -> ColumnStats {
        ColumnStats {
            name: name.into(),
            type_name: type_name.into(),
            values_kept: type_name != "text",
            analyzed: true,
            null_frac: Some(0.0),
            ..ColumnStats::default()
        }
    }

    fn strings(v: &[&str]) -> Option<Vec<Option<String>>> {
        Some(v.iter().map(|s| Some(s.to_string())).collect())
    }

    fn file() -> StatsFile {
        let table = |name: &str, rows: f32, columns: Vec<ColumnStats>| TableStats {
            schema: "public".into(),
            name: name.into(),
            kind: "table".into(),
            reltuples: rows,
            relpages: 10,
            bytes: 8192,
            analyzed: true,
            columns,
            extended: vec![],
        };
        let mut id = col("id", "bigint");
        id.n_distinct = Some(-1.0);
        let mut tenant = col("tenant_id", "integer");
        tenant.most_common_vals = strings(&["7", "3", "9"]);
        tenant.most_common_freqs = Some(vec![0.4, 0.2, 0.1]);
        let mut status = col("status", "text");
        status.most_common_vals = strings(&["ok", "failed"]);
        status.most_common_freqs = Some(vec![0.9, 0.1]);
        let mut note = col("note", "text");
        note.null_frac = Some(0.3);
        note.histogram_bounds = strings(&["a", "m", "z"]);
        note.histogram_len = 3;
        let mut at = col("at", "timestamp with time zone");
        at.histogram_bounds = strings(&[
            "2024-01-01 00:00:00+00",
            "2024-01-02 00:00:00+00",
            "2024-03-01 00:00:00+00",
        ]);
        at.histogram_len = 3;
        at.correlation = Some(0.99);
        StatsFile {
            format_version: 1,
            planck_version: "0".into(),
            server_version_num: 150004,
            values: ValuesMode::Keep,
            source: "views".into(),
            schema_fingerprint: String::new(),
            tables: vec![
                table("accounts", 10.0, vec![id.clone()]),
                table("events", 1000.0, vec![id, tenant, status, note, at]),
            ],
            foreign_keys: vec![ForeignKeyStats {
                table: "public.events".into(),
                columns: vec!["tenant_id".into()],
                references: "public.accounts".into(),
                referenced_columns: vec!["id".into()],
            }],
        }
    }

    /// Each statistic the spec can say, said; each it cannot, one note.
    #[test]
    fn a_file_becomes_a_spec_and_notes_what_it_cannot_say() {
        let made = spec_from(&file(), false);
        let text = to_text(&made.spec, "f.json");
        let spec: Table = toml::from_str(&text).unwrap();
        let events = &spec["tables"]["events"];
        assert_eq!(events["rows"].as_integer(), Some(1000));
        let cols = events["columns"].as_table().unwrap();
        assert!(!cols.contains_key("id") && !cols.contains_key("tenant_id"));
        assert_eq!(cols["status"]["values"]["ok"].as_float(), Some(0.9));
        assert_eq!(cols["note"]["null"].as_float(), Some(0.3));
        assert!(cols["note"].get("values").is_none());
        assert_eq!(
            cols["at"]["bins"][2].as_str(),
            Some("2024-03-01 00:00:00+00")
        );
        let tenant = &spec["tenant"];
        assert_eq!(tenant["table"].as_str(), Some("accounts"));
        assert_eq!(tenant["heavy"][0]["tenant"].as_integer(), Some(1));
        assert_eq!(tenant["heavy"][0]["share"].as_float(), Some(0.4));
        assert!(tenant["distribution"]["zipf"].as_float().unwrap() > 1.0);
        let notes: Vec<String> = made.notes.iter().map(NotFollowed::line).collect();
        let notes = notes.join("\n");
        for kind in [
            "physical order (|correlation| > 0.9; the seed's values come in no order): 1 (public.events.at)",
            "text distributions beyond their most common values (no spec key draws text between histogram bounds): 1 (public.events.note)",
        ] {
            assert!(notes.contains(kind), "{notes}");
        }
        assert_eq!(made.notes.len(), 2, "{notes}");
        // --exact-tenants: the captured ids are the tenant numbers; beyond
        // the tenant count, none.
        let exact = spec_from(&file(), true);
        let heavy = exact.spec["tenant"]["heavy"].as_array().unwrap();
        let ids: Vec<i64> = heavy
            .iter()
            .filter_map(|h| h["tenant"].as_integer())
            .collect();
        assert_eq!(ids, vec![7, 3, 9]);
    }

    /// The user's spec wins: its column replaces the made one whole, its
    /// `rows` or `per` the made size, its exclude removes the table.
    #[test]
    fn a_users_spec_is_laid_over_table_by_table_and_column_by_column() {
        let mut made = spec_from(&file(), false).spec;
        let user: Table = toml::from_str(
            "exclude = [\"public.accounts\"]\n[tables.\"public.events\"]\nper = \"x\"\n\
             [tables.\"public.events\".columns]\nstatus = { gen = \"word\" }\n",
        )
        .unwrap();
        overlay(&mut made, &user);
        let tables = made["tables"].as_table().unwrap();
        assert!(!tables.contains_key("accounts") && !tables.contains_key("events"));
        assert!(made.get("tenant").is_none(), "the tenant table is excluded");
        let events = &tables["public.events"];
        assert!(events.get("rows").is_none());
        assert_eq!(events["per"].as_str(), Some("x"));
        let status = events["columns"]["status"].as_table().unwrap();
        assert_eq!(status.len(), 1, "{status:?}");
        assert_eq!(events["columns"]["note"]["null"].as_float(), Some(0.3));
    }

    /// Issue 49: a histogram with most common values beside it and a
    /// distinct count, and most common values of booleans and floats, are
    /// said in the spec (`bins`, `distinct`, `values`), not listed as
    /// statistics not followed.
    #[test]
    fn histograms_distinct_counts_and_boolean_and_float_weights_are_said() {
        let mut f = file();
        let mut score = col("score", "integer");
        score.n_distinct = Some(-0.2);
        score.most_common_vals = strings(&["0", "7"]);
        score.most_common_freqs = Some(vec![0.3, 0.05]);
        score.histogram_bounds = strings(&["1", "5", "900"]);
        score.histogram_len = 3;
        let mut flag = col("flag", "boolean");
        flag.most_common_vals = strings(&["false", "true"]);
        flag.most_common_freqs = Some(vec![0.8, 0.2]);
        flag.n_distinct = Some(2.0);
        let mut ratio = col("ratio", "double precision");
        ratio.most_common_vals = strings(&["0.5", "1.25"]);
        ratio.most_common_freqs = Some(vec![0.6, 0.4]);
        ratio.n_distinct = Some(2.0);
        f.tables[1].columns.extend([score, flag, ratio]);
        let made = spec_from(&f, false);
        let spec: Table = toml::from_str(&to_text(&made.spec, "f.json")).unwrap();
        let cols = spec["tables"]["events"]["columns"].as_table().unwrap();
        let score = &cols["score"];
        assert_eq!(score["bins"].as_array().unwrap().len(), 3, "{score}");
        assert_eq!(score["distinct"].as_float(), Some(-0.2));
        assert_eq!(score["values"]["0"].as_float(), Some(0.3));
        assert!(score.get("range").is_none(), "{score}");
        assert_eq!(cols["flag"]["values"]["true"].as_float(), Some(0.2));
        assert_eq!(cols["ratio"]["values"]["1.25"].as_float(), Some(0.4));
        let notes: Vec<String> = made.notes.iter().map(NotFollowed::line).collect();
        for n in &notes {
            assert!(
                !["score", "flag", "ratio"]
                    .iter()
                    .any(|c| n.contains(&format!("events.{c}"))),
                "{notes:#?}"
            );
        }
    }

    #[test]
    fn timestamps_and_zipf_fits() {
        assert_eq!(micros("1970-01-02"), Some(86_400_000_000));
        assert_eq!(micros("1970-01-01 01:00:00+01"), Some(0));
        assert_eq!(micros("1970-01-01 00:00:01.5"), Some(1_500_000));
        let s = zipf_fit(&[1.0, 0.5, 1.0 / 3.0, 0.25]).unwrap();
        assert!((s - 1.0).abs() < 1e-9, "{s}");
        assert_eq!(zipf_fit(&[0.5]), None);
    }
}
