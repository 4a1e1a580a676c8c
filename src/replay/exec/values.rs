//! The values a unit binds: text parameters, the pools of real column
//! values sampled before the run ([`sample_pools`]) and the draws from them
//! ([`Picker`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::error::Error as StdError;

use bytes::BytesMut;
use tokio_postgres::Client;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::db::quote_ident;
use crate::replay::options::TenantMode;
use crate::replay::rng::Rng;
use crate::replay::tenant::TenantRun;
use crate::replay::workload::{Bind, BindSource, Unit, Workload};

/// A value sent in text form: the server parses it as it would a literal.
/// Borrowed where it comes from the run's pools, defaults and binds (no
/// allocation per execution), owned where it is made for one (fresh keys,
/// RETURNING values).
#[derive(Debug, Clone)]
pub struct TextParam<'a>(pub Option<Cow<'a, str>>);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
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

    fn encode_format(&self, _ty: &Type) -> tokio_postgres::types::Format {
        tokio_postgres::types::Format::Text
    }

    to_sql_checked!();
}

/// A result value as text, for a RETURNING value fed into a later statement.
pub(super) struct AnyText(pub(super) Option<String>);

impl<'a> FromSql<'a> for AnyText {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        let s = match *ty {
            Type::INT2 => i16::from_sql(ty, raw)?.to_string(),
            Type::INT4 => i32::from_sql(ty, raw)?.to_string(),
            Type::INT8 => i64::from_sql(ty, raw)?.to_string(),
            Type::OID => u32::from_sql(ty, raw)?.to_string(),
            Type::FLOAT4 => f32::from_sql(ty, raw)?.to_string(),
            Type::FLOAT8 => f64::from_sql(ty, raw)?.to_string(),
            Type::BOOL => bool::from_sql(ty, raw)?.to_string(),
            Type::UUID => {
                let b: [u8; 16] = raw.try_into()?;
                let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
                format!(
                    "{}-{}-{}-{}-{}",
                    &h[..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..]
                )
            }
            _ => String::from_utf8(raw.to_vec())?,
        };
        Ok(AnyText(Some(s)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(AnyText(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// Every `$n` of a statement: the highest number.
pub fn param_count(sql: &str) -> u32 {
    let b = sql.as_bytes();
    let mut max = 0;
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            in_str = c != b'\'';
        } else if c == b'\'' {
            in_str = true;
        } else if c == b'$' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > start
                && let Ok(n) = sql[start..j].parse::<u32>()
            {
                max = max.max(n);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    max
}

/// Rows sampled up front for the `column` binds of one table: drawn whole, so
/// parameters compared with columns of one table match one row.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    /// Index in `columns` of the table's tenant column (tenant mode).
    pub tenant: Option<usize>,
    /// Row indexes per tenant (`spread`: a unit's rows are one tenant's).
    pub by_tenant: HashMap<String, Vec<usize>>,
}

impl Pool {
    /// A row of `tenant` when the pool knows its tenants, else any row.
    pub fn draw(&self, tenant: Option<&str>, rng: &mut Rng) -> usize {
        match tenant.and_then(|t| self.by_tenant.get(t)) {
            Some(rows) if !rows.is_empty() => rows[rng.below(rows.len())],
            _ => rng.below(self.rows.len()),
        }
    }

    /// The tenant of a row.
    pub fn tenant_of(&self, row: usize) -> Option<&str> {
        self.rows.get(row)?.get(self.tenant?)?.as_deref()
    }
}

/// Every table's pool, keyed by the table as the bind writes it.
pub type Pools = HashMap<String, Pool>;

/// The tables and columns the binds of the units that run sample, in a
/// stable order (a unit skipped as stale samples nothing).
pub fn pool_columns(w: &Workload) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut statements: Vec<usize> = Vec::new();
    let mut own: Vec<&Bind> = Vec::new();
    for (u, _) in &w.units {
        match *u {
            Unit::Lone(s) => statements.push(s),
            Unit::Transaction(t) => {
                statements.extend(&w.transactions[t].statements);
                own.extend(&w.transactions[t].bind);
            }
        }
    }
    statements.sort_unstable();
    statements.dedup();
    let all = statements
        .iter()
        .flat_map(|&s| &w.statements[s].auto_bind)
        .chain(own);
    {
        for b in all {
            if let BindSource::Column { table, column } = &b.source {
                match out.iter_mut().find(|(t, _)| t == table) {
                    Some((_, cols)) if !cols.contains(column) => cols.push(column.clone()),
                    Some(_) => {}
                    None => out.push((table.clone(), vec![column.clone()])),
                }
            }
        }
    }
    out
}

/// Samples up to `n` rows of each pool's table (never a query per
/// execution). In tenant mode a table's tenant column is sampled with the
/// rest: `heavy` keeps the chosen tenant's rows only, `spread` every
/// tenant's, indexed by tenant.
pub async fn sample_pools(
    client: &Client,
    w: &Workload,
    n: usize,
    tenant: Option<&TenantRun>,
) -> Result<Pools, tokio_postgres::Error> {
    let mut pools = Pools::new();
    for (table, mut cols) in pool_columns(w) {
        let qualified: Vec<String> = table.split('.').map(quote_ident).collect();
        let tenant_col = tenant.and_then(|t| t.column_of(&table).cloned());
        let tenant_idx = tenant_col.as_ref().map(|c| {
            cols.iter().position(|x| x == c).unwrap_or_else(|| {
                cols.push(c.clone());
                cols.len() - 1
            })
        });
        let select: Vec<String> = cols
            .iter()
            .map(|c| format!("{}::text", quote_ident(c)))
            .collect();
        let only = match (&tenant_col, tenant) {
            (Some(c), Some(t)) if t.mode == TenantMode::Heavy => {
                format!(" WHERE {}::text = $1", quote_ident(c))
            }
            _ => String::new(),
        };
        let sql = format!(
            "SELECT {} FROM {}{only} ORDER BY random() LIMIT {n}",
            select.join(", "),
            qualified.join(".")
        );
        let rows = if only.is_empty() {
            client.query(&sql, &[]).await?
        } else {
            let id = tenant.map(|t| t.id.clone()).unwrap_or_default();
            client.query(&sql, &[&id]).await?
        };
        let rows = rows
            .iter()
            .map(|r| {
                (0..cols.len())
                    .map(|i| r.get::<_, Option<String>>(i))
                    .collect()
            })
            .collect();
        let mut pool = Pool {
            columns: cols,
            rows,
            tenant: tenant_idx,
            by_tenant: HashMap::new(),
        };
        for r in 0..pool.rows.len() {
            if let Some(t) = pool.tenant_of(r).map(str::to_string) {
                pool.by_tenant.entry(t).or_default().push(r);
            }
        }
        pools.insert(table, pool);
    }
    Ok(pools)
}

/// Picks units by weight.
#[derive(Debug, Clone)]
pub struct Picker {
    cumulative: Vec<f64>,
    units: Vec<Unit>,
}

impl Picker {
    pub fn new(units: &[(Unit, f64)]) -> Picker {
        let mut total = 0.0;
        let cumulative = units
            .iter()
            .map(|(_, w)| {
                total += w;
                total
            })
            .collect();
        Picker {
            cumulative,
            units: units.iter().map(|(u, _)| *u).collect(),
        }
    }

    pub fn pick(&self, rng: &mut Rng) -> Unit {
        let total = *self.cumulative.last().unwrap_or(&1.0);
        let x = rng.unit() * total;
        let i = self
            .cumulative
            .partition_point(|c| *c <= x)
            .min(self.units.len() - 1);
        self.units[i]
    }
}
