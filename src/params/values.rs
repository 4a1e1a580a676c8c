//! Parameter values: what custom plans are planned with.
//!
//! Each `$n` bound to a column (see [`super::binding`]) gets that column's most
//! common value among the tenant's rows (sampled once per table, column and
//! tenant, as the connecting role, outside any transaction); `LIMIT $n` a
//! page size, `OFFSET $n` 0; anything else a value of the type the server
//! reports. Values travel as text, so one type fits every parameter.
//!
//! Where the text tells a parameter's shape ([`ParamShape`], issue 13 §2), the
//! value has that shape: a LIKE pattern is a real value's prefix and `%`
//! (not the value itself, which would plan a prefix lookup as equality); a
//! range bound is a selective quantile of the column (the planner's own
//! histogram: the 99th percentile for `col > $n`, the 1st for `col < $n`),
//! not its most common value, which for unique timestamps is the smallest
//! and selects every row; the LIMIT of an existence test is 1.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use tokio_postgres::Client;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};

use crate::catalog::planner::Catalog;
use crate::db::quote_ident;
use crate::error::{Error, Result};
use crate::params::binding::{self, Analysis, Binding, ParamShape};
use crate::queries::ValueShape;
use crate::session::{self, StatsMode};
use crate::tenancy::Tenancy;

/// A realistic page size for `LIMIT $n` (what list views and ORMs send:
/// Django's paginators and `.get()` send 20 to 25).
pub const PAGE_SIZE: &str = "20";

/// `LIMIT $n` of a statement that asks whether a row exists.
pub const EXISTS_LIMIT: &str = "1";

/// The share of a column's rows a range bound selects when nothing recorded
/// says otherwise: 1 %.
pub const RANGE_SHARE: f64 = 0.01;

/// The rows of a table (of a tenant's rows) a column's sample counts.
const SAMPLE_ROWS: i64 = 5000;

/// Characters of a real value a LIKE prefix keeps (fewer for shorter values).
pub const PREFIX_CHARS: usize = 3;

/// `value`'s first characters (up to [`PREFIX_CHARS`], at most half of it,
/// at least one) with LIKE's wildcards escaped, then `%`.
pub fn prefix_pattern(value: &str) -> String {
    let n = value.chars().count();
    let keep = (n / 2).clamp(1, PREFIX_CHARS).min(n);
    let mut out = String::new();
    for c in value.chars().take(keep) {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// The LIKE pattern of a recorded shape (issue 13 §2) made from a real
/// `value`: `prefix%`, `%middle%` (a piece from its middle), `%suffix`, or
/// the value itself with its wildcards escaped (`exact`); None for a shape
/// that is no pattern (`limit N`).
pub fn shaped_pattern(shape: ValueShape, value: &str) -> Option<String> {
    let chars: Vec<char> = value.chars().collect();
    let n = chars.len();
    let keep = (n / 2).clamp(1, PREFIX_CHARS).min(n);
    let piece = |from: usize, len: usize| -> String {
        let mut out = String::new();
        for &c in chars.iter().skip(from).take(len) {
            if matches!(c, '%' | '_' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    Some(match shape {
        ValueShape::Prefix => prefix_pattern(value),
        ValueShape::Infix => format!("%{}%", piece(n.saturating_sub(keep) / 2, keep)),
        ValueShape::Suffix => format!("%{}", piece(n - keep, keep)),
        ValueShape::Exact => piece(0, n),
        ValueShape::Limit(_) => return None,
    })
}

/// A value sent in text form, whatever the parameter's type: the server
/// parses it as it would a literal.
#[derive(Debug)]
pub struct TextParam(pub Option<String>);

impl ToSql for TextParam {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            None => Ok(IsNull::Yes),
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// A value for a parameter nothing tells about, from its type.
pub fn default_value(ty: &Type) -> Option<String> {
    let v = match ty.name() {
        "int2" | "int4" | "int8" | "numeric" | "float4" | "float8" | "oid" => "1",
        "bool" => "false",
        "text" | "varchar" | "bpchar" | "name" | "citext" => "x",
        "timestamptz" | "timestamp" | "date" => "now",
        "interval" => "1 day",
        "time" | "timetz" => "12:00",
        "uuid" => "00000000-0000-0000-0000-000000000001",
        "json" | "jsonb" => "{}",
        "bytea" => "\\x00",
        n if n.starts_with('_') => "{}",
        _ => return None,
    };
    Some(v.to_string())
}

/// `values` padded to the parameter count, NULLs replaced by type defaults.
pub fn fill_defaults(mut values: Vec<Option<String>>, types: &[Type]) -> Vec<Option<String>> {
    values.resize(types.len(), None);
    for (v, ty) in values.iter_mut().zip(types) {
        if v.is_none() {
            *v = default_value(ty);
        }
    }
    values
}

/// Samples realistic parameter values, once per (table, column, tenant).
pub struct Sampler {
    catalog: Arc<Catalog>,
    /// Table -> the column carrying the tenant's id ([`Tenancy::keys`]):
    /// a policy's column, and a table's without a policy (`users.org_id`),
    /// so each tenant's plan binds its own id there and samples its rows.
    tenant_columns: BTreeMap<String, String>,
    /// One cell per key: the statements planned at once on several
    /// connections that need the same value wait for one query (a sample
    /// of a big table scans it: four at once cost four scans).
    cache: Mutex<HashMap<SampleKey, Arc<tokio::sync::OnceCell<Option<String>>>>>,
    stats: StatsMode,
}

/// (table, column, tenant).
type SampleKey = (String, String, Option<String>);

impl Sampler {
    /// `stats`: how the probes stay out of pg_stat_statements (see `session`).
    pub fn new(catalog: Arc<Catalog>, tenancy: Option<&Tenancy>, stats: StatsMode) -> Sampler {
        Sampler {
            catalog,
            tenant_columns: tenancy.map(|t| t.keys.clone()).unwrap_or_default(),
            cache: Mutex::new(HashMap::new()),
            stats,
        }
    }

    /// The value cached under `key`, or `read`'s (once per key, however
    /// many callers ask at the same time).
    async fn once<F>(&self, key: SampleKey, read: F) -> Result<Option<String>>
    where
        F: std::future::Future<Output = Result<Option<String>>>,
    {
        let cell = self
            .cache
            .lock()
            .ok()
            .map(|mut m| m.entry(key).or_default().clone());
        match cell {
            Some(cell) => cell.get_or_try_init(|| read).await.cloned(),
            None => read.await,
        }
    }

    /// Values for `$1..$n` from the data: each bound column's most common value
    /// among the tenant's rows, a page size for LIMIT, 0 for OFFSET.
    pub async fn values(
        &self,
        client: &Client,
        text: &str,
        analysis: &Analysis,
        tenant: Option<&str>,
    ) -> Result<Vec<Option<String>>> {
        self.values_shaped(client, text, analysis, tenant, &BTreeMap::new())
            .await
    }

    /// [`Sampler::values`], with the shapes the recording saw the
    /// application send (`shapes = { n = "prefix" }`, issue 13 §2) in place
    /// of what the text tells: a LIKE pattern of that shape made from a real
    /// value, the recorded LIMIT. Parameters without a recorded shape get
    /// the defaults.
    pub async fn values_shaped(
        &self,
        client: &Client,
        text: &str,
        analysis: &Analysis,
        tenant: Option<&str>,
        recorded: &BTreeMap<u32, ValueShape>,
    ) -> Result<Vec<Option<String>>> {
        let max = binding::params(text).into_iter().max().unwrap_or(0) as usize;
        let mut out = vec![None; max];
        for (&n, b) in &analysis.bindings {
            let Some(slot) = out.get_mut((n as usize).wrapping_sub(1)) else {
                continue;
            };
            let recorded = recorded.get(&n).copied();
            *slot = match b {
                Binding::Limit => match recorded {
                    Some(ValueShape::Limit(l)) => Some(l.to_string()),
                    _ if analysis.shapes.get(&n) == Some(&ParamShape::ExistsLimit) => {
                        Some(EXISTS_LIMIT.to_string())
                    }
                    _ => Some(PAGE_SIZE.to_string()),
                },
                Binding::Offset => Some("0".to_string()),
                Binding::Column {
                    table,
                    column,
                    array,
                } => {
                    let Some(table) = self.table_of(analysis, table.as_deref(), column) else {
                        continue;
                    };
                    let pattern = recorded.filter(|r| !matches!(r, ValueShape::Limit(_)));
                    let v = match (pattern, analysis.shapes.get(&n)) {
                        (Some(shape), _) => self
                            .sample(client, &table, column, tenant)
                            .await?
                            .and_then(|v| shaped_pattern(shape, &v)),
                        (None, Some(ParamShape::Range { lower })) => {
                            let share = if *lower {
                                1.0 - RANGE_SHARE
                            } else {
                                RANGE_SHARE
                            };
                            match self.quantile(client, &table, column, share).await? {
                                Some(q) => Some(q),
                                None => self.sample(client, &table, column, tenant).await?,
                            }
                        }
                        (None, Some(ParamShape::Pattern)) => self
                            .sample(client, &table, column, tenant)
                            .await?
                            .map(|v| prefix_pattern(&v)),
                        _ => self.sample(client, &table, column, tenant).await?,
                    };
                    match (v, array) {
                        (Some(v), true) => Some(format!(
                            "{{\"{}\"}}",
                            v.replace('\\', "\\\\").replace('"', "\\\"")
                        )),
                        (v, _) => v,
                    }
                }
            };
        }
        Ok(out)
    }

    /// The table a parameter bound to `column` (of `table` when the text
    /// names one) samples.
    fn table_of(&self, analysis: &Analysis, table: Option<&str>, column: &str) -> Option<String> {
        match table.and_then(|t| self.catalog.resolve(t)) {
            Some(t) => Some(t.to_string()),
            None => self.catalog.table_with_column(&analysis.tables, column),
        }
    }

    /// The (table, column) pairs whose values [`Sampler::values_shaped`]
    /// may sample for a statement of this `analysis`.
    pub fn wanted(&self, analysis: &Analysis) -> Vec<(String, String)> {
        analysis
            .bindings
            .values()
            .filter_map(|b| match b {
                Binding::Column { table, column, .. } => self
                    .table_of(analysis, table.as_deref(), column)
                    .map(|t| (t, column.clone())),
                _ => None,
            })
            .collect()
    }

    /// Reads ahead the samples of all of `columns` of `table` for `tenant`
    /// in one scan (issue 35): a statement's sample of a big table cost a
    /// scan of it, and the bench's statements sampled two columns each of
    /// `files` and `revisions` for two tenants, eight scans of 140-210 ms
    /// where four do. The rows are the same the one-column read takes (up
    /// to 5,000 of the tenant's where it is not NULL, from the table's first
    /// page (see [`session::query_from_first_page`]), its most common value
    /// with ties broken in the server's collation):
    /// the scan keeps the rows where any column is not NULL, and a column
    /// is taken from it only when that gives the rows its own read would,
    /// that is when the scan ended below 5,000 rows (it saw all of them) or
    /// the column has no NULL among the 5,000. Any other column, and one
    /// with no value there (the tenant has no such rows: any tenant's value
    /// is taken), is left to its own read when a statement asks. An error
    /// leaves every column to its own read.
    pub async fn prefetch(
        &self,
        client: &Client,
        table: &str,
        columns: &[String],
        tenant: Option<&str>,
    ) -> Result<()> {
        let tcol = self.tenant_columns.get(table).cloned();
        let tenant = tcol.as_ref().and(tenant);
        let mut cols: Vec<&String> = columns
            .iter()
            .filter(|c| !(tenant.is_some() && tcol.as_ref() == Some(*c)))
            .collect();
        cols.sort();
        cols.dedup();
        if cols.is_empty() {
            return Ok(());
        }
        let t = crate::catalog::sql_name(table);
        let select: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}::text AS c{i}", quote_ident(c)))
            .collect();
        let any: Vec<String> = cols
            .iter()
            .map(|c| format!("{} IS NOT NULL", quote_ident(c)))
            .collect();
        let filter = match (&tcol, tenant) {
            (Some(tc), Some(_)) => format!(" AND {} = $1", quote_ident(tc)),
            _ => String::new(),
        };
        let most: Vec<String> = (0..cols.len())
            .map(|i| {
                format!(
                    "(SELECT c{i} FROM s WHERE c{i} IS NOT NULL GROUP BY c{i} \
                      ORDER BY count(*) DESC, c{i} LIMIT 1)"
                )
            })
            .collect();
        let counts: Vec<String> = (0..cols.len()).map(|i| format!("count(c{i})")).collect();
        let sql = session::tag(
            self.stats,
            &format!(
                "WITH s AS MATERIALIZED (SELECT {} FROM {t} WHERE ({}){filter} LIMIT {SAMPLE_ROWS}) \
                 SELECT n.*, {} FROM (SELECT count(*), {} FROM s) n",
                select.join(", "),
                any.join(" OR "),
                most.join(", "),
                counts.join(", ")
            ),
        );
        let p = TextParam(tenant.map(str::to_string));
        let params: Vec<&(dyn ToSql + Sync)> = if filter.is_empty() { vec![] } else { vec![&p] };
        let row = match session::query_from_first_page(client, &sql, &params).await {
            Ok(rows) => match rows.into_iter().next() {
                Some(row) => row,
                None => return Ok(()),
            },
            Err(err) if err.as_db_error().is_some() => return Ok(()),
            Err(err) => return Err(Error::db("sampling values", err)),
        };
        let Ok(mut cache) = self.cache.lock() else {
            return Ok(());
        };
        let k = cols.len();
        let scanned: i64 = row.get(0);
        for (i, c) in cols.iter().enumerate() {
            let seen: i64 = row.get(1 + i);
            if scanned >= SAMPLE_ROWS && seen < scanned {
                continue;
            }
            if let Some(v) = row.get::<_, Option<String>>(1 + k + i) {
                let key = (table.to_string(), c.to_string(), tenant.map(str::to_string));
                let _ = cache.entry(key).or_default().set(Some(v));
            }
        }
        Ok(())
    }

    /// The value below which `share` of `column`'s rows lie, read from the
    /// planner's histogram (pg_stats), so the plan sees the selectivity the
    /// value was chosen for; None without a histogram (never analyzed, or a
    /// column of few distinct values).
    async fn quantile(
        &self,
        client: &Client,
        table: &str,
        column: &str,
        share: f64,
    ) -> Result<Option<String>> {
        let key = (
            table.to_string(),
            format!("{column}\u{0}quantile {share}"),
            None,
        );
        self.once(key, self.read_quantile(client, table, column, share))
            .await
    }

    async fn read_quantile(
        &self,
        client: &Client,
        table: &str,
        column: &str,
        share: f64,
    ) -> Result<Option<String>> {
        let sql = session::tag(
            self.stats,
            "SELECT h[1 + round((array_length(h, 1) - 1) * $3::float8)::int] \
               FROM (SELECT histogram_bounds::text::text[] AS h FROM pg_stats s \
                      WHERE format('%I.%I', s.schemaname, s.tablename)::regclass = to_regclass($1) \
                        AND s.attname = $2 AND NOT s.inherited) b",
        );
        let t = crate::catalog::sql_name(table);
        let p = [
            TextParam(Some(t)),
            TextParam(Some(column.to_string())),
            TextParam(Some(share.to_string())),
        ];
        let params: Vec<&(dyn ToSql + Sync)> = p.iter().map(|x| x as &(dyn ToSql + Sync)).collect();
        let v = match client.query_opt(&sql, &params).await {
            Ok(row) => row.and_then(|r| r.get::<_, Option<String>>(0)),
            Err(err) if err.as_db_error().is_some() => None,
            Err(err) => return Err(Error::db("reading a column's histogram", err)),
        };
        Ok(v)
    }

    async fn sample(
        &self,
        client: &Client,
        table: &str,
        column: &str,
        tenant: Option<&str>,
    ) -> Result<Option<String>> {
        let tcol = self.tenant_columns.get(table).cloned();
        if let (Some(tc), Some(id)) = (&tcol, tenant)
            && tc == column
        {
            return Ok(Some(id.to_string()));
        }
        let tenant = tcol.as_ref().and(tenant);
        let key = (
            table.to_string(),
            column.to_string(),
            tenant.map(str::to_string),
        );
        self.once(
            key,
            self.read_sample(client, table, column, tcol.as_deref(), tenant),
        )
        .await
    }

    /// The most common value of `column` among (up to 5,000 of) the
    /// tenant's rows, else any tenant's.
    async fn read_sample(
        &self,
        client: &Client,
        table: &str,
        column: &str,
        tcol: Option<&str>,
        tenant: Option<&str>,
    ) -> Result<Option<String>> {
        let c = quote_ident(column);
        let t = crate::catalog::sql_name(table);
        let filter = match tcol {
            Some(tc) if tenant.is_some() => format!("AND {} = $1", quote_ident(tc)),
            _ => String::new(),
        };
        let sql = session::tag(
            self.stats,
            &format!(
                "SELECT v FROM (SELECT {c}::text AS v FROM {t} WHERE {c} IS NOT NULL {filter} LIMIT {SAMPLE_ROWS}) s \
         GROUP BY v ORDER BY count(*) DESC, v LIMIT 1"
            ),
        );
        let p = TextParam(tenant.map(str::to_string));
        let params: Vec<&(dyn ToSql + Sync)> = if tenant.is_some() && tcol.is_some() {
            vec![&p]
        } else {
            vec![]
        };
        let mut v = match session::query_from_first_page(client, &sql, &params).await {
            Ok(rows) => rows.first().map(|r| r.get::<_, String>(0)),
            Err(err) if err.as_db_error().is_some() => None,
            Err(err) => return Err(Error::db("sampling values", err)),
        };
        if v.is_none() && tenant.is_some() {
            // The tenant has no such rows: any tenant's value will do.
            v = Box::pin(self.sample(client, table, column, None)).await?;
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_by_type_fill_only_the_gaps() {
        assert_eq!(default_value(&Type::INT8).as_deref(), Some("1"));
        assert_eq!(default_value(&Type::TIMESTAMPTZ).as_deref(), Some("now"));
        assert_eq!(default_value(&Type::TEXT_ARRAY).as_deref(), Some("{}"));
        assert_eq!(default_value(&Type::POINT), None);
        let v = fill_defaults(
            vec![Some("7".into())],
            &[Type::INT8, Type::BOOL, Type::INTERVAL],
        );
        assert_eq!(
            v,
            vec![Some("7".into()), Some("false".into()), Some("1 day".into())]
        );
    }

    /// Issue 13 §2: `tags LIKE $1` was planned with a whole value (`'et'`).
    #[test]
    fn issue13_like_patterns_are_a_real_prefix_and_a_wildcard() {
        assert_eq!(prefix_pattern("u1@example.com"), "u1@%");
        assert_eq!(prefix_pattern("et"), "e%");
        assert_eq!(prefix_pattern("x"), "x%");
        assert_eq!(prefix_pattern("a_%b"), "a\\_%");
        assert_eq!(prefix_pattern("é日本語"), "é日%");
    }

    #[test]
    fn issue13_recorded_shapes_make_patterns_of_that_shape() {
        let v = "u1@example.com";
        assert_eq!(shaped_pattern(ValueShape::Prefix, v).unwrap(), "u1@%");
        assert_eq!(shaped_pattern(ValueShape::Infix, v).unwrap(), "%amp%");
        assert_eq!(shaped_pattern(ValueShape::Suffix, v).unwrap(), "%com");
        assert_eq!(
            shaped_pattern(ValueShape::Exact, "a_%b").unwrap(),
            "a\\_\\%b"
        );
        assert_eq!(shaped_pattern(ValueShape::Infix, "x").unwrap(), "%x%");
        assert_eq!(shaped_pattern(ValueShape::Suffix, "日本語").unwrap(), "%語");
        assert_eq!(shaped_pattern(ValueShape::Limit(1), v), None);
    }

    /// Four statements planned at once that need the same sample wait for
    /// one query (each was a scan of a big table: the bench's samples of
    /// `files` ran four times over, 0.6 s each); another key is its own.
    #[test]
    fn a_sample_is_read_once_however_many_ask_at_once() {
        let sampler = Sampler::new(Arc::new(Catalog::default()), None, StatsMode::Untracked);
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let key = |t: &str| (t.to_string(), "c".to_string(), Some("1".to_string()));
        let read = |v: &'static str| {
            let reads = &reads;
            async move {
                reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                Ok(Some(v.to_string()))
            }
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let got = rt.block_on(futures_util::future::join_all([
            sampler.once(key("files"), read("a")),
            sampler.once(key("files"), read("b")),
            sampler.once(key("files"), read("c")),
            sampler.once(key("events"), read("d")),
        ]));
        let got: Vec<Option<String>> = got.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 2);
        let a = Some("a".to_string());
        assert_eq!(got, vec![a.clone(), a.clone(), a, Some("d".to_string())]);
    }

    #[test]
    fn text_parameters_are_sent_as_text() {
        let mut buf = BytesMut::new();
        let p = TextParam(Some("42".into()));
        assert!(matches!(p.to_sql(&Type::INT8, &mut buf), Ok(IsNull::No)));
        assert_eq!(&buf[..], b"42");
        assert!(matches!(p.encode_format(&Type::INT8), Format::Text));
        assert!(matches!(
            TextParam(None).to_sql(&Type::INT8, &mut buf),
            Ok(IsNull::Yes)
        ));
    }
}
