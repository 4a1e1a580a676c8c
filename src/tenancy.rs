//! Tenancy: how the application runs as a tenant, inferred from the database
//! where the user did not say, and [`TenantContext`], what a session applies
//! per transaction to run as one (shared by explain, replay and record). The setting comes from `current_setting('...')`
//! in the policies, each table's tenant column from the comparison it sits
//! in, the role from the statements' recorded role, the heaviest tenant from
//! the data (the key value owning most rows across RLS-protected tables).

use std::collections::{BTreeMap, BTreeSet};

use tokio_postgres::Client;

use crate::catalog::expr::{
    BodyRead, LookupInner, body_read, body_settings, function_comparisons, setting_comparisons,
    settings_read,
};
use crate::catalog::planner::Catalog;
use crate::catalog::sql_name;
use crate::db::quote_ident;
use crate::error::{Error, Result};
use crate::session::{self, StatsMode, tag};
pub use crate::session::{SettingValue, TenantContext};

/// How a statement is planned or run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// As the application role, under row-level security, for one tenant.
    Tenant,
    /// As the connecting (owner) role: no row-level security.
    Admin,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Tenant => "tenant",
            Mode::Admin => "admin",
        }
    }
}

/// Overrides from flags and `planck.toml` (flags win).
#[derive(Debug, Clone, Default)]
pub struct TenantOptions {
    pub role: Option<String>,
    pub setting: Option<String>,
    pub id: Option<String>,
    /// Where `id` came from, for messages: `--tenant-id` (the default) or
    /// `[tenant] id in planck.toml`.
    pub id_source: Option<&'static str>,
}

#[derive(Debug, Clone)]
pub struct Tenancy {
    pub role: String,
    pub setting: String,
    /// Table -> the column its policy compares with the setting.
    pub columns: BTreeMap<String, String>,
    /// Table -> the column carrying the tenant's id, in every table that
    /// belongs to a tenant: the policies' [`Tenancy::columns`], the foreign
    /// keys to the tenant's table (a table without a policy, `users.org_id`),
    /// and, in a table with neither, a column named as the policies' one.
    /// A parameter bound to such a column gets the id of the tenant its
    /// plan is made for (the median's plan binds the median's id).
    pub keys: BTreeMap<String, String>,
    /// The tenant plans are made for (`--tenant-id`, else the heaviest).
    pub id: String,
    pub heaviest: Option<String>,
    pub median: Option<String>,
    /// The setting's value per tenant id, where it is not the id itself: a
    /// JSON claim set, or the key a lookup table resolves to the tenant
    /// (a session id for a user).
    pub values: BTreeMap<String, SettingValue>,
    /// How the policies read the tenant when it is through functions, for
    /// messages (`app_public.current_user_id() -> app_private.sessions`).
    pub read_through: Option<String>,
    /// The identities [`measure_visibility`] may measure, by the cheap proxy
    /// first (rows carrying the identity: membership rows, owned rows): the
    /// top [`PROBE_TOP`] and [`PROBE_SAMPLED`] spread over the rest.
    pub probe_ids: Vec<String>,
    /// How many identities can be planned as (reachable through the lookup).
    pub candidates: usize,
    /// What measuring visibility under RLS found (None: not measured).
    pub visibility: Option<Visibility>,
    /// Set when the proxy is already the measurement (see [`exact_tables`]):
    /// the visible rows of the identities measuring would count, from the data.
    pub exact: Option<Exact>,
    /// The heaviest tenant's rows in each table the proxy counted, and all
    /// of that table's rows: what explain's JSON reports as its share,
    /// without counting the tables a second time.
    pub heaviest_rows: Option<TenantRows>,
}

/// One tenant's rows, counted per table (see [`Tenancy::heaviest_rows`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TenantRows {
    pub id: String,
    /// Table (display name) -> (tenant column, the tenant's rows, all rows).
    pub tables: BTreeMap<String, (String, i64, i64)>,
}

/// The rows each identity sees, known without counting under row-level
/// security: every RLS table the role reads has only policies comparing its
/// tenant column with the setting directly, so an identity sees exactly the
/// rows carrying it, which the proxy counted (see [`exact_tables`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Exact {
    /// The tables counted: every RLS table the role may read.
    pub tables: Vec<String>,
    /// The rows each of [`Tenancy::probe_ids`] sees, in that order.
    pub rows: Vec<i64>,
}

impl Tenancy {
    /// The context of a transaction in `mode` as tenant `id` (admin mode and
    /// a missing id set nothing).
    pub fn context(&self, mode: Mode, id: Option<&str>) -> TenantContext {
        if mode != Mode::Tenant {
            return TenantContext::admin();
        }
        TenantContext {
            role: Some(self.role.clone()),
            settings: id
                .map(|id| {
                    let v = self
                        .values
                        .get(id)
                        .cloned()
                        .unwrap_or_else(|| SettingValue::Text(id.to_string()));
                    (self.setting.clone(), v)
                })
                .into_iter()
                .collect(),
        }
    }
}

/// Works out the tenancy, or explains why it cannot.
pub async fn resolve(
    client: &Client,
    catalog: &Catalog,
    opts: &TenantOptions,
    recorded_roles: &[String],
    stats: StatsMode,
) -> Result<Tenancy> {
    if catalog.policies.is_empty() {
        return Err(Error::usage_hint(
            "--as-tenant needs row-level security, but this database has no RLS policies",
            "plan as admin only (--as-admin), or create the policies (CREATE POLICY ...) first",
        ));
    }
    let found = comparisons(client, catalog, stats).await?;
    let setting = choose_setting(catalog, opts, &found)?;
    let Comparisons {
        by_table, through, ..
    } = found;
    let columns: BTreeMap<String, String> = by_table
        .into_iter()
        .filter_map(|(t, v)| {
            v.into_iter()
                .find(|(_, s)| *s == setting)
                .map(|(c, _)| (t, c))
        })
        .collect();
    if columns.is_empty() {
        return Err(Error::usage_hint(
            format!("no row-level security policy compares a column with {setting}"),
            "planck finds each table's tenant key in policies of the form \
             `column = current_setting('...')::type`",
        ));
    }

    let role = choose_role(client, catalog, opts, recorded_roles, stats).await?;

    let via = through.get(&setting).cloned();
    // The proxy: rows carrying each identity in the tables the policies
    // compare with it, and in every table with a foreign key to the same
    // identity (its fan-out: memberships, owned rows).
    let mut proxy: Vec<(String, String)> = columns.clone().into_iter().collect();
    for fk in fan_out(client, &columns, stats).await? {
        if !proxy.contains(&fk) {
            proxy.push(fk);
        }
    }
    let key_columns = tenant_keys(catalog, &columns, &proxy);
    let (sized, per_table) = tenant_sizes(client, &proxy, stats).await?;
    let ranked: Vec<String> = sized.iter().map(|(k, _)| k.clone()).collect();
    // Through a lookup, a tenant is only reachable with a key that resolves
    // to it (a user with a session).
    let keys = match via.as_ref().and_then(|v| v.lookup.as_ref()) {
        Some(lookup) => Some(lookup_keys(client, lookup, stats).await?),
        None => None,
    };
    let reachable: Vec<&String> = ranked
        .iter()
        .filter(|k| keys.as_ref().is_none_or(|m| m.contains_key(*k)))
        .collect();
    let heaviest = reachable.first().map(|s| s.to_string());
    let heaviest_rows = heaviest.as_ref().map(|id| per_table.rows_of(id, &proxy));
    let median = reachable.get(reachable.len() / 2).map(|s| s.to_string());
    let probe_ids = probe_sample(&reachable);
    let values = through_values(
        via.as_ref(),
        keys.as_ref(),
        [&heaviest, &median, &opts.id],
        &probe_ids,
        &role,
    );
    // Only a direct comparison in every policy, and a proxy that counted
    // exactly those tables, makes the proxy's counts the visible rows.
    let exact = match (&via, proxy.len() == columns.len()) {
        (None, true) => exact_tables(client, catalog, &role, &setting, &columns, stats).await?,
        _ => None,
    };
    let exact = exact.and_then(|tables| {
        let sizes: BTreeMap<&String, i64> = sized.iter().map(|(k, n)| (k, *n)).collect();
        let rows: Option<Vec<i64>> = probe_ids.iter().map(|id| sizes.get(id).copied()).collect();
        Some(Exact {
            tables,
            rows: rows?,
        })
    });
    let id = match (&opts.id, &heaviest) {
        (Some(id), _) => {
            let flag = opts.id_source.unwrap_or("--tenant-id");
            check_id(
                client,
                &setting,
                &columns,
                id,
                flag,
                heaviest.as_deref(),
                stats,
            )
            .await?;
            id.clone()
        }
        (None, Some(h)) => h.clone(),
        (None, None) => {
            return Err(Error::usage_hint(
                "no tenant to plan as: the RLS-protected tables are empty",
                "seed the database first (`planck seed`), or pass --tenant-id",
            ));
        }
    };
    Ok(Tenancy {
        role,
        setting,
        columns,
        keys: key_columns,
        id,
        heaviest,
        median,
        values,
        read_through: via.map(|v| v.path),
        probe_ids,
        candidates: reachable.len(),
        visibility: None,
        exact,
        heaviest_rows,
    })
}

/// Each table's tenant key (see [`Tenancy::keys`]) from the proxy's
/// (table, column) pairs, the policies' first: a table a foreign key joins
/// twice to the tenant's table keeps the first; a table with neither gets
/// a column of the name every policy compares, when they all use one.
fn tenant_keys(
    catalog: &Catalog,
    columns: &BTreeMap<String, String>,
    proxy: &[(String, String)],
) -> BTreeMap<String, String> {
    let mut keys = columns.clone();
    for (t, c) in proxy {
        keys.entry(t.clone()).or_insert_with(|| c.clone());
    }
    let names: BTreeSet<&String> = columns.values().collect();
    if let [name] = names.into_iter().collect::<Vec<_>>()[..] {
        for (t, table) in &catalog.tables {
            if !keys.contains_key(t) && table.columns.iter().any(|c| c == name) {
                keys.insert(t.clone(), name.clone());
            }
        }
    }
    keys
}

/// The setting's value for each named tenant (`heaviest`, `median`, the
/// asked-for id, the probes) when the policies read it through a function:
/// its lookup key, or a JSON claim with the role.
fn through_values(
    via: Option<&Via>,
    keys: Option<&BTreeMap<String, String>>,
    named: [&Option<String>; 3],
    probe_ids: &[String],
    role: &str,
) -> BTreeMap<String, SettingValue> {
    let mut values = BTreeMap::new();
    if let Some(via) = via {
        let named = named.into_iter().flatten();
        for id in named.chain(probe_ids.iter()) {
            let key = match keys {
                Some(m) => match m.get(id) {
                    Some(k) => k.clone(),
                    None => continue,
                },
                None => id.clone(),
            };
            let v = match &via.claim {
                Some(c) => SettingValue::Json(serde_json::json!({ c: key, "role": role })),
                None => SettingValue::Text(key),
            };
            values.insert(id.clone(), v);
        }
    }
    values
}

/// What the policies compare a column with: how often each setting is
/// compared, each table's (column, setting) pairs, and the settings read
/// through functions (`user_id = app.current_user_id()`).
struct Comparisons {
    counts: BTreeMap<String, usize>,
    by_table: BTreeMap<String, Vec<(String, String)>>,
    through: BTreeMap<String, Via>,
}

/// Finds the setting each table's tenant column is compared with in the
/// policies, directly or through a function.
async fn comparisons(client: &Client, catalog: &Catalog, stats: StatsMode) -> Result<Comparisons> {
    // The setting and each table's tenant column.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_table: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for p in &catalog.policies {
        for q in [&p.qual, &p.with_check].into_iter().flatten() {
            for (col, setting) in setting_comparisons(q) {
                *counts.entry(setting.clone()).or_default() += 1;
                by_table
                    .entry(p.table.clone())
                    .or_default()
                    .push((col, setting));
            }
        }
    }
    // The tenant read through functions: `user_id = app.current_user_id()`.
    let mut through: BTreeMap<String, Via> = BTreeMap::new();
    for p in &catalog.policies {
        for q in [&p.qual, &p.with_check].into_iter().flatten() {
            for (col, f) in function_comparisons(q) {
                // A column of a subquery's table (`EXISTS (... user_id = f())`)
                // is not this table's tenant key.
                let has = catalog
                    .tables
                    .get(&p.table)
                    .is_some_and(|t| t.columns.contains(&col));
                if !has {
                    continue;
                }
                let Some(via) = follow(client, &f, stats, 0).await? else {
                    continue;
                };
                *counts.entry(via.setting.clone()).or_default() += 1;
                by_table
                    .entry(p.table.clone())
                    .or_default()
                    .push((col, via.setting.clone()));
                through.entry(via.setting.clone()).or_insert(via);
            }
        }
    }
    Ok(Comparisons {
        counts,
        by_table,
        through,
    })
}

/// The tenant setting: the one asked for (spelled as the policies do), or
/// the one the policies compare most often.
fn choose_setting(catalog: &Catalog, opts: &TenantOptions, found: &Comparisons) -> Result<String> {
    let mut read: Vec<String> = catalog
        .policies
        .iter()
        .flat_map(|p| [&p.qual, &p.with_check])
        .flatten()
        .flat_map(|q| settings_read(q))
        .collect();
    read.extend(found.through.keys().cloned());
    read.sort();
    read.dedup();
    Ok(match &opts.setting {
        // Setting names are case-insensitive; the policies' spelling wins.
        Some(s) => match read.iter().find(|r| r.eq_ignore_ascii_case(s)) {
            Some(r) => r.clone(),
            None => {
                return Err(Error::usage_hint(
                    format!("no row-level security policy reads {s}"),
                    if read.is_empty() {
                        "no policy calls current_setting('...'); planck plans as a tenant \
                         through the setting the policies compare the tenant key with"
                            .to_string()
                    } else {
                        format!(
                            "the policies read {}; pass one with --tenant-setting \
                             (or [tenant] setting in planck.toml), or leave it out",
                            read.join(", ")
                        )
                    },
                ));
            }
        },
        None => found
            .counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(s, _)| s.clone())
            .ok_or_else(|| {
                Error::usage_hint(
                    "cannot tell which setting the RLS policies read: none calls current_setting('...')",
                    "pass --tenant-setting NAME or set [tenant] setting in planck.toml",
                )
            })?,
    })
}

/// The role: flag/config, else the one that recorded the statements, else
/// the policies'; checked to be subject to the policies.
async fn choose_role(
    client: &Client,
    catalog: &Catalog,
    opts: &TenantOptions,
    recorded_roles: &[String],
    stats: StatsMode,
) -> Result<String> {
    if let Some(r) = &opts.role {
        check_role(client, catalog, r, stats).await?;
        return Ok(r.clone());
    }
    let mut freq: BTreeMap<&str, usize> = BTreeMap::new();
    for r in recorded_roles {
        *freq.entry(r.as_str()).or_default() += 1;
    }
    let from_policies = catalog
        .policies
        .iter()
        .flat_map(|p| p.roles.iter())
        .find(|r| r.as_str() != "public")
        .cloned();
    // Most recorded first; a recorded role that bypasses RLS (the
    // owner running jobs, whose statements touch no RLS table) is
    // passed over for one that is subject to it.
    let mut ranked: Vec<(&str, usize)> = freq.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut candidates: Vec<String> = ranked.iter().map(|(r, _)| r.to_string()).collect();
    candidates.extend(from_policies);
    if candidates.is_empty() {
        return Err(Error::usage_hint(
            "cannot tell which role the application runs as",
            "pass --tenant-role ROLE or set [tenant] role in planck.toml",
        ));
    }
    let mut first_err = None;
    for c in candidates {
        match check_role(client, catalog, &c, stats).await {
            Ok(()) => return Ok(c),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => unreachable!("at least one candidate was checked"),
    }
}

/// How many identities are measured from the head of the proxy ranking,
/// and how many more are sampled from the rest.
pub const PROBE_TOP: usize = 20;
pub const PROBE_SAMPLED: usize = 20;
/// How many of the biggest RLS tables an identity's visible rows are counted in.
pub const VISIBLE_TABLES: usize = 8;
/// The default of `--identity-budget`.
pub const DEFAULT_IDENTITY_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// The top [`PROBE_TOP`] of `ranked`, then [`PROBE_SAMPLED`] spread evenly
/// over the rest (deterministic: the same data measures the same identities).
fn probe_sample(ranked: &[&String]) -> Vec<String> {
    let mut out: Vec<String> = ranked
        .iter()
        .take(PROBE_TOP)
        .map(|s| s.to_string())
        .collect();
    let rest = ranked.get(PROBE_TOP..).unwrap_or_default();
    let mut picked = std::collections::BTreeSet::new();
    for i in 0..PROBE_SAMPLED.min(rest.len()) {
        picked.insert(i * rest.len() / PROBE_SAMPLED.min(rest.len()));
    }
    out.extend(picked.into_iter().map(|i| rest[i].to_string()));
    out
}

/// Identities measured by the rows they see under row-level security.
#[derive(Debug, Clone, PartialEq)]
pub struct Visibility {
    /// The tables counted (the biggest RLS tables the role may read).
    pub tables: Vec<String>,
    pub measured: usize,
    /// Identities that could be planned as.
    pub candidates: usize,
    /// Identities whose count timed out or failed.
    pub failed: usize,
    /// The budget ran out before every probe identity was measured.
    pub budget_hit: bool,
    pub heaviest: (String, i64),
    pub median: (String, i64),
    pub seconds: f64,
    /// Known from the data without counting under RLS (see [`Exact`]).
    pub exact: bool,
}

/// Runs [`resolve`], then [`measure_visibility`] within `budget`.
pub async fn resolve_measured(
    client: &Client,
    catalog: &Catalog,
    opts: &TenantOptions,
    recorded_roles: &[String],
    stats: StatsMode,
    budget: std::time::Duration,
) -> Result<Tenancy> {
    let mut t = resolve(client, catalog, opts, recorded_roles, stats).await?;
    measure_visibility(client, catalog, &mut t, opts.id.is_none(), budget, stats).await?;
    Ok(t)
}

/// The heaviest identity is the one that sees the most rows, measured on the
/// server rather than read from policy text (membership subqueries,
/// SECURITY DEFINER helpers): as each of [`Tenancy::probe_ids`], in a
/// rolled-back transaction with a timeout, count the visible rows of the
/// biggest RLS tables the role may read; stop when `budget` is spent.
/// Sets `heaviest` and `median` (and `id`, when `follow_heaviest`: no id
/// was chosen) from the counts; ties keep the proxy's order.
pub async fn measure_visibility(
    client: &Client,
    catalog: &Catalog,
    t: &mut Tenancy,
    follow_heaviest: bool,
    budget: std::time::Duration,
    stats: StatsMode,
) -> Result<()> {
    if t.probe_ids.is_empty() || budget.is_zero() {
        return Ok(());
    }
    if let Some(x) = t.exact.clone() {
        // Counting under RLS would find what the proxy counted, identity by
        // identity (about half a second each on a few million rows): the
        // same identities, their rows from the data, chosen from alike.
        let seen = t
            .probe_ids
            .iter()
            .zip(&x.rows)
            .enumerate()
            .map(|(rank, (id, n))| (rank, id.clone(), *n))
            .collect();
        choose(t, follow_heaviest, seen, x.tables, 0, false, 0.0, true);
        return Ok(());
    }
    let mut rls: Vec<&crate::catalog::planner::Table> =
        catalog.tables.values().filter(|x| x.rls).collect();
    rls.sort_by(|a, b| b.rows.cmp(&a.rows).then(a.name.cmp(&b.name)));
    let names: Vec<String> = rls.iter().map(|x| sql_name(&x.name)).collect();
    let readable: Vec<bool> = client
        .query_one(
            &tag(
                stats,
                "SELECT array_agg(has_table_privilege($1, to_regclass(n), 'SELECT') ORDER BY o)
                   FROM unnest($2::text[]) WITH ORDINALITY AS u(n, o)",
            ),
            &[&t.role, &names],
        )
        .await
        .map_err(|e| Error::db("checking which RLS tables the tenant role reads", e))?
        .get::<_, Option<Vec<bool>>>(0)
        .unwrap_or_default();
    let tables: Vec<&crate::catalog::planner::Table> = rls
        .into_iter()
        .zip(readable)
        .filter(|(_, r)| *r)
        .map(|(x, _)| x)
        .take(VISIBLE_TABLES)
        .collect();
    if tables.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "SELECT ({})::bigint",
        tables
            .iter()
            .map(|x| format!("(SELECT count(*) FROM {})", sql_name(&x.name)))
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let sql = tag(stats, &sql);
    let started = std::time::Instant::now();
    let mut seen: Vec<(usize, String, i64)> = Vec::new();
    let mut failed = 0;
    let mut budget_hit = false;
    for (rank, id) in t.probe_ids.clone().into_iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        if left.as_millis() < 1 {
            budget_hit = true;
            break;
        }
        let ctx = t.context(Mode::Tenant, Some(&id));
        let timeout = (left.as_millis() as u64).max(1);
        let counted = match crate::session::begin(client, &ctx, timeout).await {
            Ok(()) => client
                .query_one(&sql, &[])
                .await
                .map(|r| r.get::<_, i64>(0)),
            Err(e) => Err(e),
        };
        let _ = client.batch_execute("ROLLBACK").await;
        match counted {
            Ok(n) => seen.push((rank, id, n)),
            Err(e) if e.as_db_error().is_some() => failed += 1,
            Err(e) => return Err(Error::db("counting the rows an identity sees", e)),
        }
    }
    choose(
        t,
        follow_heaviest,
        seen,
        tables.iter().map(|x| x.name.clone()).collect(),
        failed,
        budget_hit,
        started.elapsed().as_secs_f64(),
        false,
    );
    Ok(())
}

/// The heaviest and the median of the identities `seen` (rank in the
/// proxy's order, id, rows it sees) into `t`, and what was found.
#[allow(clippy::too_many_arguments)]
fn choose(
    t: &mut Tenancy,
    follow_heaviest: bool,
    seen: Vec<(usize, String, i64)>,
    tables: Vec<String>,
    failed: usize,
    budget_hit: bool,
    seconds: f64,
    exact: bool,
) {
    if seen.is_empty() {
        return;
    }
    // Most rows first; ties keep the proxy's order.
    let heaviest = seen
        .iter()
        .min_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)))
        .map(|(_, id, n)| (id.clone(), *n))
        .expect("seen is not empty");
    // The median of the others, so a median plan is made beside the heaviest's.
    let mut by_rows: Vec<&(usize, String, i64)> = seen
        .iter()
        .filter(|s| seen.len() == 1 || s.1 != heaviest.0)
        .collect();
    by_rows.sort_by(|a, b| a.2.cmp(&b.2).then(a.0.cmp(&b.0)));
    let m = by_rows[(by_rows.len() - 1) / 2];
    let median = (m.1.clone(), m.2);
    if follow_heaviest && t.heaviest.as_deref() == Some(t.id.as_str()) {
        t.id = heaviest.0.clone();
    }
    t.heaviest = Some(heaviest.0.clone());
    t.median = Some(median.0.clone());
    t.visibility = Some(Visibility {
        tables,
        measured: seen.len(),
        candidates: t.candidates,
        failed,
        budget_hit,
        heaviest,
        median,
        seconds,
        exact,
    });
}

/// How a policy's function reads the tenant, followed through the bodies.
#[derive(Debug, Clone, PartialEq)]
struct Via {
    setting: String,
    /// The JSON key (`sub`) when the setting is a claim set.
    claim: Option<String>,
    /// (table, tenant column, key column): the setting holds the key of a
    /// row whose tenant column is the tenant (a session id for a user).
    lookup: Option<(String, String, String)>,
    /// The functions followed, for messages.
    path: String,
}

/// How deep function bodies are followed.
const MAX_DEPTH: usize = 4;

/// Follows `name`'s body (`pg_proc.prosrc`, SQL or plpgsql) to the setting
/// it reads, through lookups and calls of other functions.
fn follow<'a>(
    client: &'a Client,
    name: &'a str,
    stats: StatsMode,
    depth: usize,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Option<Via>>> + Send + 'a>> {
    Box::pin(async move {
        if depth >= MAX_DEPTH {
            return Ok(None);
        }
        let (schema, bare) = match name.rsplit_once('.') {
            Some((s, b)) => (s.to_string(), b.to_string()),
            None => (String::new(), name.to_string()),
        };
        let row = client
            .query_opt(
                &tag(
                    stats,
                    "SELECT p.prosrc, l.lanname::text FROM pg_proc p
                       JOIN pg_namespace n ON n.oid = p.pronamespace
                       JOIN pg_language l ON l.oid = p.prolang
                      WHERE p.proname = $1 AND ($2 = '' OR n.nspname = $2) AND p.pronargs = 0
                      ORDER BY n.nspname = ANY (current_schemas(true)) DESC LIMIT 1",
                ),
                &[&bare, &schema],
            )
            .await
            .map_err(|e| Error::db("reading a policy function's body", e))?;
        let Some(row) = row else { return Ok(None) };
        let (body, lang): (String, String) = (row.get(0), row.get(1));
        let here = format!("{name}()");
        let read = if lang == "sql" {
            body_read(&body)
        } else {
            body_settings(&body)
                .into_iter()
                .next()
                .map(|(name, claim)| BodyRead::Setting { name, claim })
        };
        Ok(match read {
            None => None,
            Some(BodyRead::Setting { name, claim }) => Some(Via {
                setting: name,
                claim,
                lookup: None,
                path: here,
            }),
            Some(BodyRead::Calls(f)) => follow(client, &f, stats, depth + 1).await?.map(|v| Via {
                path: format!("{here} -> {}", v.path),
                ..v
            }),
            Some(BodyRead::Lookup {
                table,
                out_col,
                key_col,
                inner,
            }) => {
                let inner = match inner {
                    LookupInner::Setting { name, claim } => Some(Via {
                        setting: name,
                        claim,
                        lookup: None,
                        path: String::new(),
                    }),
                    LookupInner::Function(f) => follow(client, &f, stats, depth + 1).await?,
                };
                inner.filter(|v| v.lookup.is_none()).map(|v| Via {
                    path: format!(
                        "{here} -> {table}.{out_col} by {key_col}{}",
                        if v.path.is_empty() {
                            String::new()
                        } else {
                            format!(" = {}", v.path)
                        }
                    ),
                    lookup: Some((table, out_col, key_col)),
                    ..v
                })
            }
        })
    })
}

/// The RLS tables the role may read, when the proxy's counts are exactly
/// the rows each identity sees there: every one of them is a tenant table
/// of `columns` (and every tenant table one of them), and each policy that
/// applies to the role for SELECT is only `column = current_setting(setting)`
/// (a cast aside). None otherwise: then visibility is measured.
async fn exact_tables(
    client: &Client,
    catalog: &Catalog,
    role: &str,
    setting: &str,
    columns: &BTreeMap<String, String>,
    stats: StatsMode,
) -> Result<Option<Vec<String>>> {
    let rls: Vec<&String> = catalog
        .tables
        .values()
        .filter(|x| x.rls)
        .map(|x| &x.name)
        .collect();
    if columns.keys().any(|t| !rls.contains(&t)) {
        return Ok(None);
    }
    let names: Vec<String> = rls.iter().map(|t| sql_name(t)).collect();
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT has_table_privilege($1, to_regclass(u.n), 'SELECT'),
                        ARRAY(SELECT coalesce(pg_get_expr(p.polqual, p.polrelid), '')
                                FROM pg_policy p
                               WHERE p.polrelid = to_regclass(u.n) AND p.polcmd IN ('r', '*')
                                 AND (0::oid = ANY (p.polroles)
                                      OR EXISTS (SELECT 1 FROM unnest(p.polroles) r
                                                  WHERE r <> 0 AND pg_has_role($1, r, 'MEMBER'))))
                   FROM unnest($2::text[]) WITH ORDINALITY AS u(n, o) ORDER BY u.o",
            ),
            &[&role, &names],
        )
        .await
        .map_err(|e| Error::db("reading the policies that apply to the tenant role", e))?;
    let mut tables = Vec::new();
    for (t, row) in rls.into_iter().zip(&rows) {
        let (readable, quals): (bool, Vec<String>) = (row.get(0), row.get(1));
        let tenant_col = columns.get(t);
        if !readable {
            // Its rows are not counted by the proxy's measurement either,
            // unless it is a tenant table the proxy counted.
            if tenant_col.is_some() {
                return Ok(None);
            }
            continue;
        }
        let direct = |q: &String| {
            direct_comparison(q).is_some_and(|(c, s)| Some(&c) == tenant_col && s == setting)
        };
        if tenant_col.is_none() || quals.is_empty() || !quals.iter().all(direct) {
            return Ok(None);
        }
        tables.push(t.clone());
    }
    Ok((!tables.is_empty()).then_some(tables))
}

/// `(account_id = (current_setting('app.account_id'))::bigint)` -> (column,
/// setting) when that comparison is the whole policy expression.
fn direct_comparison(qual: &str) -> Option<(String, String)> {
    use sqlparser::ast::{BinaryOperator, Expr, FunctionArguments};
    fn column(e: &Expr) -> Option<String> {
        match e {
            Expr::Nested(e) => column(e),
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
            _ => None,
        }
    }
    fn setting(e: &Expr) -> Option<String> {
        match e {
            Expr::Nested(e) | Expr::Cast { expr: e, .. } => setting(e),
            Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("current_setting") => {
                let FunctionArguments::List(args) = &f.args else {
                    return None;
                };
                let first = args.args.first()?.to_string();
                first.split('\'').nth(1).map(str::to_string)
            }
            _ => None,
        }
    }
    fn whole(e: &Expr) -> Option<(String, String)> {
        match e {
            Expr::Nested(e) => whole(e),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => [(left, right), (right, left)]
                .into_iter()
                .find_map(|(c, v)| Some((column(c)?, setting(v)?))),
            _ => None,
        }
    }
    whole(&crate::catalog::expr::parse_expr(qual)?)
}

/// Tenant -> the (smallest) key that resolves to it through the lookup table.
async fn lookup_keys(
    client: &Client,
    (table, out_col, key_col): &(String, String, String),
    stats: StatsMode,
) -> Result<BTreeMap<String, String>> {
    let sql = format!(
        "SELECT {o}::text, min({k}::text) FROM {t} WHERE {o} IS NOT NULL GROUP BY 1",
        k = quote_ident(key_col),
        o = quote_ident(out_col),
        t = table
            .split('.')
            .map(quote_ident)
            .collect::<Vec<_>>()
            .join("."),
    );
    let rows = client
        .query(&tag(stats, &sql), &[])
        .await
        .map_err(|e| Error::db("resolving the tenants through their lookup table", e))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The role must exist, obey row-level security and own none of the tables.
async fn check_role(
    client: &Client,
    catalog: &Catalog,
    role: &str,
    stats: StatsMode,
) -> Result<()> {
    let row = client
        .query_opt(
            &tag(
                stats,
                "SELECT rolsuper, rolbypassrls, pg_has_role(current_user, r.oid, 'MEMBER'),
                    ARRAY(SELECT c.relname::text FROM pg_class c
                           WHERE pg_has_role(r.oid, c.relowner, 'USAGE')
                             AND c.relrowsecurity AND NOT c.relforcerowsecurity
                           ORDER BY 1),
                    CASE WHEN current_setting('server_version_num')::int >= 160000
                         THEN pg_has_role(current_user, r.oid, 'SET')
                         ELSE pg_has_role(current_user, r.oid, 'MEMBER') END,
                    current_user::text
               FROM pg_roles r WHERE rolname = $1",
            ),
            &[&role],
        )
        .await
        .map_err(|e| Error::db("looking up the tenant role", e))?;
    let Some(row) = row else {
        let mut roles: Vec<&str> = catalog
            .policies
            .iter()
            .flat_map(|p| p.roles.iter().map(String::as_str))
            .filter(|r| *r != "public")
            .collect();
        roles.sort();
        roles.dedup();
        return Err(Error::usage_hint(
            format!("tenant role {role} does not exist"),
            if roles.is_empty() {
                "pass --tenant-role with the role the application connects as".to_string()
            } else {
                format!(
                    "the policies name: {}; pass one with --tenant-role",
                    roles.join(", ")
                )
            },
        ));
    };
    let (sup, bypass, member, owned): (bool, bool, bool, Vec<String>) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    let (may_set, user): (bool, String) = (row.get(4), row.get(5));
    if sup || bypass {
        return Err(Error::usage_hint(
            format!(
                "tenant role {role} bypasses row-level security ({}): its plans would not show the policies",
                if sup { "superuser" } else { "BYPASSRLS" }
            ),
            "pass --tenant-role with the role the application connects as (NOSUPERUSER NOBYPASSRLS)",
        ));
    }
    if !member {
        return Err(Error::usage_hint(
            format!("the connecting user {user} cannot SET ROLE {role}: it is not a member"),
            format!(
                "GRANT {} TO {}, or connect as a superuser",
                quote_ident(role),
                quote_ident(&user)
            ),
        ));
    }
    // PostgreSQL 16 splits membership into options: SET ROLE needs the SET
    // one. A role made by a non-superuser admin (CREATEROLE, as on hosted
    // services) gives its maker ADMIN only, by default.
    if !may_set {
        return Err(Error::usage_hint(
            format!(
                "the connecting user {user} cannot SET ROLE {role}: its membership lacks the SET option"
            ),
            format!(
                "GRANT {} TO {} WITH SET TRUE (PostgreSQL 16+), or connect as a superuser",
                quote_ident(role),
                quote_ident(&user)
            ),
        ));
    }
    if !owned.is_empty() {
        return Err(Error::usage_hint(
            format!(
                "tenant role {role} owns {} (or is an INHERIT member of the owner's role) and \
                 so bypasses their row-level security",
                owned.join(", ")
            ),
            "use a role that owns nothing and inherits no owner's privileges (a NOINHERIT \
             member is subject to RLS), or ALTER TABLE ... FORCE ROW LEVEL SECURITY",
        ));
    }
    Ok(())
}

/// A chosen tenant id must cast to every tenant key's type and own rows in
/// at least one RLS-protected table: otherwise every statement would be
/// skipped ("invalid input syntax"), or planned against an empty tenant,
/// and the CI gate would pass without judging anything.
async fn check_id(
    client: &Client,
    setting: &str,
    columns: &BTreeMap<String, String>,
    id: &str,
    flag: &str,
    heaviest: Option<&str>,
    stats: StatsMode,
) -> Result<()> {
    let hint = match heaviest {
        Some(h) => format!("the heaviest tenant is {h}; leave {flag} out to use it"),
        None => "the RLS-protected tables are empty: seed the database first (`planck seed`)"
            .to_string(),
    };
    // Each table's key type, as the server spells it (so safe to splice).
    let mut keys = Vec::new();
    for (t, c) in columns {
        let row = client
            .query_opt(
                &tag(
                    stats,
                    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                  WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped",
                ),
                &[&sql_name(t), c],
            )
            .await
            .map_err(|e| Error::db("looking up the tenant key's type", e))?;
        if let Some(row) = row {
            keys.push((t.as_str(), c.as_str(), row.get::<_, String>(0)));
        }
    }
    // The id is bound, never spliced: only the type name is.
    let mut rejected: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (t, _, ty) in &keys {
        let cast = client
            .query_one(
                &tag(stats, &format!("SELECT $1::text::{ty} IS NOT NULL")),
                &[&id],
            )
            .await;
        match cast {
            Ok(_) => {}
            Err(e) if e.code().is_some_and(|c| c.code().starts_with("22")) => {
                rejected.entry(ty.as_str()).or_default().push(t);
            }
            Err(e) => return Err(Error::db("checking the tenant id", e)),
        }
    }
    if !rejected.is_empty() {
        let what = rejected
            .iter()
            .map(|(ty, tables)| format!("{ty} in {}", tables.join(", ")))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Error::usage_hint(
            format!(
                "tenant id {id} ({flag}) does not cast to the type of the tenant key \
                 {setting} guards: {what}"
            ),
            hint,
        ));
    }
    for (t, c, ty) in &keys {
        let owns: bool = client
            .query_one(
                &tag(
                    stats,
                    &format!(
                        "SELECT EXISTS (SELECT 1 FROM {} WHERE {} = $1::text::{ty})",
                        sql_name(t),
                        quote_ident(c)
                    ),
                ),
                &[&id],
            )
            .await
            .map_err(|e| Error::db("checking the tenant id", e))?
            .get(0);
        if owns {
            return Ok(());
        }
    }
    let tables: Vec<&str> = keys.iter().map(|(t, _, _)| *t).collect();
    Err(Error::usage_hint(
        format!(
            "tenant id {id} ({flag}) owns no rows in the tables {setting} guards: {}",
            tables.join(", ")
        ),
        hint,
    ))
}

/// Single-column foreign keys to the table each tenant column identifies
/// (the one its own foreign key references, or its table when it is the
/// primary key): (table, column), display names.
async fn fan_out(
    client: &Client,
    columns: &BTreeMap<String, String>,
    stats: StatsMode,
) -> Result<Vec<(String, String)>> {
    let tables: Vec<String> = columns.keys().map(|t| sql_name(t)).collect();
    let cols: Vec<String> = columns.values().cloned().collect();
    let rows = client
        .query(
            &tag(
                stats,
                "WITH keys AS (
                   SELECT a.attrelid AS rel, a.attnum
                     FROM unnest($1::text[], $2::text[]) AS k(t, c)
                     JOIN pg_attribute a ON a.attrelid = to_regclass(k.t) AND a.attname = k.c),
                 targets AS (
                   SELECT f.confrelid AS target FROM pg_constraint f
                     JOIN keys ON f.conrelid = keys.rel AND f.conkey = ARRAY[keys.attnum]
                    WHERE f.contype = 'f'
                   UNION
                   SELECT p.conrelid FROM pg_constraint p
                     JOIN keys ON p.conrelid = keys.rel AND p.conkey = ARRAY[keys.attnum]
                    WHERE p.contype = 'p')
                 SELECT DISTINCT n.nspname::text, c.relname::text, a.attname::text
                   FROM pg_constraint f
                   JOIN targets ON f.confrelid = targets.target
                   JOIN pg_class c ON c.oid = f.conrelid
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                   JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = f.conkey[1]
                  WHERE f.contype = 'f' AND cardinality(f.conkey) = 1
                  ORDER BY 1, 2, 3",
            ),
            &[&tables, &cols],
        )
        .await
        .map_err(|e| Error::db("reading the foreign keys to the tenant's table", e))?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                crate::catalog::display_name(r.get(0), r.get(1)),
                r.get::<_, String>(2),
            )
        })
        .collect())
}

/// Each table's rows per tenant, as [`tenant_sizes`] counted them.
struct PerTable {
    /// Tenant -> its rows in each table (by the table's index in the columns).
    rows: BTreeMap<String, Vec<i64>>,
    /// All rows of each table, those without a tenant too.
    all: Vec<i64>,
}

impl PerTable {
    fn rows_of(&self, id: &str, columns: &[(String, String)]) -> TenantRows {
        let mine = self.rows.get(id);
        TenantRows {
            id: id.to_string(),
            tables: columns
                .iter()
                .enumerate()
                .map(|(i, (t, c))| {
                    let n = mine.and_then(|m| m.get(i)).copied().unwrap_or(0);
                    (
                        t.clone(),
                        (c.clone(), n, self.all.get(i).copied().unwrap_or(0)),
                    )
                })
                .collect(),
        }
    }
}

/// The tenants, heaviest first, by rows owned across the RLS-protected
/// tables, with those rows; and each table's rows per tenant (one count of
/// each table serves the ranking and explain's JSON).
async fn tenant_sizes(
    client: &Client,
    columns: &[(String, String)],
    stats: StatsMode,
) -> Result<(Vec<(String, i64)>, PerTable)> {
    let mut per = PerTable {
        rows: BTreeMap::new(),
        all: vec![0; columns.len()],
    };
    if columns.is_empty() {
        return Ok((Vec::new(), per));
    }
    // Grouping by the column's own type is much faster than by its text;
    // text is the fallback when the tables' key types differ. The rows
    // without a tenant form the NULL group: counted in the tables' totals,
    // never ranked.
    let query = |cast: &str| {
        let parts: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (t, c))| {
                format!(
                    "SELECT {i} AS i, {c}{cast} AS k, count(*) AS n FROM {t} GROUP BY 2",
                    c = quote_ident(c),
                    t = sql_name(t)
                )
            })
            .collect();
        format!(
            "SELECT k::text, sum(n)::bigint, array_agg(i ORDER BY i), array_agg(n ORDER BY i) \
               FROM ({}) s GROUP BY k ORDER BY k IS NULL, sum(n) DESC, k",
            parts.join(" UNION ALL ")
        )
    };
    // In the backend alone: parallel workers count the same rows for more
    // of the server's CPU (see `session::query_from_first_page`).
    let rows = match session::query_from_first_page(client, &tag(stats, &query("")), &[]).await {
        Ok(rows) => rows,
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::DATATYPE_MISMATCH) => {
            session::query_from_first_page(client, &tag(stats, &query("::text")), &[])
                .await
                .map_err(|e| Error::db("finding the heaviest tenant", e))?
        }
        Err(e) => return Err(Error::db("finding the heaviest tenant", e)),
    };
    let mut ranked = Vec::new();
    for r in &rows {
        let key: Option<String> = r.get(0);
        let tables: Vec<i32> = r.get(2);
        let counts: Vec<i64> = r.get(3);
        let mut mine = vec![0; columns.len()];
        for (&i, &n) in tables.iter().zip(&counts) {
            if let Some(slot) = mine.get_mut(i as usize) {
                *slot += n;
            }
            if let Some(slot) = per.all.get_mut(i as usize) {
                *slot += n;
            }
        }
        if let Some(key) = key {
            ranked.push((key.clone(), r.get(1)));
            per.rows.insert(key, mine);
        }
    }
    Ok((ranked, per))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_comparison_is_only_the_whole_policy_expression() {
        let direct = |q: &str| direct_comparison(q);
        let want = Some(("account_id".to_string(), "app.account_id".to_string()));
        assert_eq!(
            direct("(account_id = (current_setting('app.account_id'::text))::bigint)"),
            want
        );
        assert_eq!(
            direct("((current_setting('app.account_id'::text, true))::bigint = t.account_id)"),
            want
        );
        // Anything beside the comparison changes which rows are visible.
        assert_eq!(
            direct(
                "((account_id = (current_setting('app.account_id'::text))::bigint) \
                 AND (deleted_at IS NULL))"
            ),
            None
        );
        assert_eq!(
            direct("((account_id = (current_setting('app.account_id'::text))::bigint) OR public)"),
            None
        );
        assert_eq!(
            direct("(account_id IN ( SELECT m.account_id FROM memberships m))"),
            None
        );
        assert_eq!(direct("(user_id = auth.uid())"), None);
        assert_eq!(
            direct("((account_id)::text = current_setting('app.account_id'::text))"),
            None
        );
    }
}
