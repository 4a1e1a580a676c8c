//! Sessions: how planck talks to the server when it works for the
//! application (explain's plans, replay's runs, record's probes).
//!
//! - [`pool`]: a deadpool of connections, each made quiet first.
//! - [`quiet_stats`]: every planck session first runs
//!   `SET pg_stat_statements.track = 'none'`, so nothing planck sends (nor
//!   what the server runs for it: foreign-key checks) lands in
//!   pg_stat_statements. A comment tag alone cannot do that:
//!   pg_stat_statements keys entries by queryid, which ignores comments, and
//!   keeps the first text it saw. The setting is a superuser's (on 15+
//!   grantable with `GRANT SET ON PARAMETER pg_stat_statements.track TO ...`);
//!   where it is refused, planck warns once and tags its statements with
//!   [`TAG`], added here only ([`tag`]).
//! - [`begin`]: a transaction with a statement_timeout and a
//!   [`TenantContext`] (role and settings), always ended by the caller's
//!   ROLLBACK or COMMIT.

use std::sync::atomic::{AtomicBool, Ordering};

use deadpool_postgres::{Hook, HookError, ManagerConfig, Pool, RecyclingMethod};
use serde::{Deserialize, Serialize};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Row};

use crate::db::{ConnInfo, quote_ident};
use crate::error::{Error, Result};
use crate::output::Log;

/// The value of one setting a transaction runs with. Both travel to the
/// server as text (`set_config` takes text); `Json` keeps a claim set
/// (`request.jwt.claims`) structured in the files that carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    Text(String),
    Json(serde_json::Value),
}

impl SettingValue {
    /// The text `set_config` gets.
    pub fn as_text(&self) -> String {
        match self {
            SettingValue::Text(s) => s.clone(),
            SettingValue::Json(v) => v.to_string(),
        }
    }
}

/// Who a transaction runs as: the contract explain, replay and record share.
///
/// `role` is applied with `SET LOCAL ROLE`; each setting with
/// `set_config(name, value, true)` (so a role may also come as a setting
/// named `role`, the way PostgREST does it). [`begin`] applies it;
/// `tenancy` re-exports it and builds it from the tenancy it works out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantContext {
    pub role: Option<String>,
    pub settings: Vec<(String, SettingValue)>,
}

impl TenantContext {
    /// The connecting role, no settings: admin mode.
    pub fn admin() -> TenantContext {
        TenantContext::default()
    }
}

/// The comment planck's statements carry where tracking cannot be switched
/// off. It follows the statement's first word: PostgreSQL 18's
/// pg_stat_statements keeps a statement's text from its first token on, so
/// a comment in front of it is not in the text it shows.
pub const TAG: &str = "/* planck */";

/// What keeps this session's statements out of pg_stat_statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsMode {
    /// `pg_stat_statements.track = 'none'` took: nothing is recorded.
    Untracked,
    /// The setting was refused: statements carry [`TAG`] (and still count).
    Tagged,
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// The statement that switches tracking off for this session.
/// Tagged: the SET itself is counted (tracking is decided as a statement
/// starts), and the tag marks that one entry as planck's own.
pub const UNTRACK: &str = "SET /* planck */ pg_stat_statements.track = 'none'";

/// Switches pg_stat_statements off for this session; where the role may not,
/// warns once per process and answers [`StatsMode::Tagged`].
pub async fn quiet_stats(client: &Client, log: Log) -> Result<StatsMode> {
    let mode = untrack(client).await?;
    if mode == StatsMode::Tagged && !WARNED.swap(true, Ordering::Relaxed) {
        log.warn(
            "this role may not SET pg_stat_statements.track, so planck's own statements \
             will show in pg_stat_statements (tagged /* planck */); a superuser can \
             GRANT SET ON PARAMETER pg_stat_statements.track TO this role",
        );
    }
    Ok(mode)
}

/// [`quiet_stats`] without the warning, for sessions whose statements are
/// dropped by the noise filter anyway when tagged (record's own probes,
/// migrate): the caller says what it means with `--verbose`.
pub async fn untrack(client: &Client) -> Result<StatsMode> {
    match client.batch_execute(UNTRACK).await {
        Ok(()) => Ok(StatsMode::Untracked),
        Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => Ok(StatsMode::Tagged),
        Err(e) => Err(Error::db("switching pg_stat_statements off for planck", e)),
    }
}

/// `sql` as planck sends it in `mode`: tagged after its first word when
/// tracking could not be switched off (see [`TAG`]).
pub fn tag(mode: StatsMode, sql: &str) -> String {
    match mode {
        StatsMode::Untracked => sql.to_string(),
        StatsMode::Tagged => {
            let sql = sql.trim_start();
            let first = sql
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(sql.len());
            if first == 0 {
                // `(SELECT ...)`, `WITH` after a comment: the tag goes in front.
                return format!("{TAG} {sql}");
            }
            let (word, rest) = sql.split_at(first);
            format!("{word} {TAG}{rest}")
        }
    }
}

/// How planck's own scans of the application's tables run (see
/// [`query_from_first_page`]): read-only, in the backend alone, from the
/// table's first page.
const FROM_FIRST_PAGE: &str = "BEGIN READ ONLY; SET LOCAL max_parallel_workers_per_gather = 0; \
     SET LOCAL synchronize_seqscans = off";

/// Runs one of planck's own reads of the application's tables (a parameter
/// sample, the tenant count) in a read-only transaction of its own, with
/// neither parallel workers nor a synchronized scan, and rolls it back.
/// Either one makes a `LIMIT` scan's first rows change from run to run (the
/// workers' interleaving; a seq scan of a table above a quarter of
/// shared_buffers that starts where another scan of it is), and a `LIMIT`
/// scan that joins another one midway reads the whole table where it would
/// have stopped after the first pages. Workers also cost the server more
/// CPU for the same rows than the backend alone. The caller's connection
/// must not be inside a transaction.
pub async fn query_from_first_page(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> std::result::Result<Vec<Row>, tokio_postgres::Error> {
    let begun = client.batch_execute(FROM_FIRST_PAGE).await;
    let rows = match begun {
        Ok(()) => client.query(sql, params).await,
        Err(e) => Err(e),
    };
    let ended = client.batch_execute("ROLLBACK").await;
    let rows = rows?;
    ended?;
    Ok(rows)
}

/// A pool of `size` connections to `conn`, each quiet (see [`quiet_stats`])
/// before its first use.
pub fn pool(conn: &ConnInfo, size: usize, log: Log) -> Result<Pool> {
    // Connections made exactly as `ConnInfo::connect` makes them (TLS mode,
    // timeouts, keepalives, target_session_attrs).
    let mgr = conn.pool_manager(ManagerConfig {
        // Every use ends with ROLLBACK (and DEALLOCATE): nothing to clean.
        recycling_method: RecyclingMethod::Fast,
    })?;
    Pool::builder(mgr)
        .max_size(size.max(1))
        .post_create(Hook::async_fn(move |client, _| {
            Box::pin(async move {
                quiet_stats(client, log)
                    .await
                    .map(|_| ())
                    .map_err(|e| HookError::message(e.to_string()))
            })
        }))
        .build()
        .map_err(|e| Error::Other(anyhow::anyhow!("building the connection pool: {e}")))
}

/// A connection from the pool.
pub async fn get(pool: &Pool) -> Result<deadpool_postgres::Object> {
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(e) => Error::db("connecting", e),
        other => Error::Other(anyhow::anyhow!(
            "getting a connection from the pool: {other}"
        )),
    })
}

/// `BEGIN`, the timeout and the role, as one simple-protocol batch.
pub fn begin_sql(ctx: &TenantContext, timeout_ms: u64) -> String {
    let mut sql = format!("BEGIN; SET LOCAL statement_timeout = {timeout_ms}");
    if let Some(role) = &ctx.role {
        sql.push_str(&format!("; SET LOCAL ROLE {}", quote_ident(role)));
    }
    sql
}

/// `SELECT set_config($1, $2, true), ...` for `n` settings (names and values bound).
pub fn settings_sql(n: usize) -> String {
    let calls: Vec<String> = (0..n)
        .map(|i| format!("set_config(${}, ${}, true)", 2 * i + 1, 2 * i + 2))
        .collect();
    format!("SELECT {}", calls.join(", "))
}

/// Applies the context's settings inside the open transaction (nothing to
/// do without settings).
pub async fn apply_settings(
    client: &Client,
    ctx: &TenantContext,
) -> std::result::Result<(), tokio_postgres::Error> {
    if ctx.settings.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = ctx
        .settings
        .iter()
        .flat_map(|(name, v)| [name.clone(), v.as_text()])
        .collect();
    let params: Vec<(&(dyn tokio_postgres::types::ToSql + Sync), Type)> = values
        .iter()
        .map(|v| (v as &(dyn tokio_postgres::types::ToSql + Sync), Type::TEXT))
        .collect();
    // Typed: Parse, Bind and Execute leave in one write, so a statement the
    // caller pipelines behind this one reaches the server after it.
    client
        .query_typed(&settings_sql(ctx.settings.len()), &params)
        .await
        .map(|_| ())
}

/// Opens a transaction with `statement_timeout`, the context's role and its
/// settings, pipelined in one round trip. The caller ends it.
pub async fn begin(
    client: &Client,
    ctx: &TenantContext,
    timeout_ms: u64,
) -> std::result::Result<(), tokio_postgres::Error> {
    let batch = begin_sql(ctx, timeout_ms);
    // Polled in order, so the server receives BEGIN before the settings.
    let (b, s) = tokio::join!(client.batch_execute(&batch), apply_settings(client, ctx));
    b?;
    s
}

/// A planner setting a planning transaction applies with `SET LOCAL`
/// (`set_config(name, value, true)`), and where its value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannerSetting {
    pub name: String,
    pub value: String,
    /// `ALTER ROLE app SET`, `[explain] settings`, `production's pg_settings`.
    pub source: String,
}

impl PlannerSetting {
    /// `work_mem = 64MB (ALTER ROLE app SET)`
    pub fn describe(&self) -> String {
        format!("{} = {} ({})", self.name, self.value, self.source)
    }
}

/// Settings the planner's choices depend on beyond pg_settings' "Query
/// Tuning" categories (`enable_*`, costs, `jit`, `plan_cache_mode`, geqo...).
pub const PLANNER_EXTRA: [&str; 6] = [
    "work_mem",
    "hash_mem_multiplier",
    "search_path",
    "effective_io_concurrency",
    "max_parallel_workers_per_gather",
    "max_parallel_workers",
];

/// The SQL condition on `pg_settings` (aliased `p`) that picks the planner's
/// settings a role may set itself; `$extra` binds [`PLANNER_EXTRA`].
fn planner_condition(extra: &str) -> String {
    format!(
        "p.context = 'user' AND (p.category LIKE 'Query Tuning%' OR p.name = ANY({extra}::text[]))"
    )
}

/// The `ALTER ROLE role SET` and `ALTER DATABASE SET` entries of the
/// current database (pg_db_role_setting) that the planner reads, in the
/// order the server applies them at login (database, role, role in this
/// database: later wins). `SET ROLE` applies none of them, so a planning
/// transaction that switches to `role` sets them itself.
pub async fn role_settings(
    client: &Client,
    stats: StatsMode,
    role: &str,
) -> Result<Vec<PlannerSetting>> {
    let sql = format!(
        "SELECT s.name, s.value,
                CASE WHEN d.setrole = 0 THEN 'ALTER DATABASE ' || quote_ident(current_database()) || ' SET'
                     WHEN d.setdatabase = 0 THEN 'ALTER ROLE ' || quote_ident($1) || ' SET'
                     ELSE 'ALTER ROLE ' || quote_ident($1) || ' IN DATABASE '
                          || quote_ident(current_database()) || ' SET' END
           FROM pg_db_role_setting d
          CROSS JOIN LATERAL unnest(d.setconfig) WITH ORDINALITY c(kv, i)
          CROSS JOIN LATERAL (SELECT split_part(c.kv, '=', 1) AS name,
                                     substr(c.kv, strpos(c.kv, '=') + 1) AS value) s
           JOIN pg_settings p ON p.name = s.name
          WHERE {}
            AND (d.setdatabase = 0
                 OR d.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))
            AND ((d.setrole = 0 AND d.setdatabase <> 0)
                 OR d.setrole = (SELECT oid FROM pg_roles WHERE rolname = $1))
          ORDER BY (d.setrole <> 0)::int + (d.setrole <> 0 AND d.setdatabase <> 0)::int, c.i",
        planner_condition("$2")
    );
    let extra: Vec<String> = PLANNER_EXTRA.iter().map(|s| s.to_string()).collect();
    let rows = client
        .query(&tag(stats, &sql), &[&role, &extra])
        .await
        .map_err(|e| {
            Error::db(
                "reading ALTER ROLE/DATABASE settings (pg_db_role_setting)",
                e,
            )
        })?;
    Ok(rows
        .iter()
        .map(|r| PlannerSetting {
            name: r.get(0),
            value: r.get(1),
            source: r.get(2),
        })
        .collect())
}

/// Production's planner settings (`pg_settings`), read-only: one SELECT in
/// a READ ONLY transaction, rolled back; nothing is written there. Only the
/// settings whose value differs from `local`'s are kept (`search_path` is
/// left out: production's schemas are not the seeded database's).
pub async fn production_settings(
    production: &ConnInfo,
    local: &Client,
    stats: StatsMode,
) -> Result<Vec<PlannerSetting>> {
    let sql = format!(
        "SELECT p.name, current_setting(p.name) FROM pg_settings p
          WHERE {} AND p.name <> 'search_path' ORDER BY p.name",
        planner_condition("$1")
    );
    let extra: Vec<String> = PLANNER_EXTRA.iter().map(|s| s.to_string()).collect();
    let remote = production.connect().await?;
    remote
        .batch_execute("BEGIN READ ONLY")
        .await
        .map_err(|e| Error::db("reading production's pg_settings (--settings-from)", e))?;
    let theirs = remote
        .query(&sql, &[&extra])
        .await
        .map_err(|e| Error::db("reading production's pg_settings (--settings-from)", e))?;
    let _ = remote.batch_execute("ROLLBACK").await;
    let ours = local
        .query(&tag(stats, &sql), &[&extra])
        .await
        .map_err(|e| Error::db("reading the planner's settings (pg_settings)", e))?;
    let ours: std::collections::BTreeMap<String, String> =
        ours.iter().map(|r| (r.get(0), r.get(1))).collect();
    Ok(theirs
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .filter(|(n, v)| ours.get(n).is_some_and(|o| o != v))
        .map(|(name, value)| PlannerSetting {
            name,
            value,
            source: "production's pg_settings".to_string(),
        })
        .collect())
}

/// The names among `names` the server does not know (a typo in `[explain] settings`).
pub async fn unknown_settings(
    client: &Client,
    stats: StatsMode,
    names: &[String],
) -> Result<Vec<String>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT n FROM unnest($1::text[]) n
                  WHERE NOT EXISTS (SELECT 1 FROM pg_settings p WHERE p.name = lower(n))",
            ),
            &[&names],
        )
        .await
        .map_err(|e| Error::db("checking [explain] settings against pg_settings", e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The server's version as a report shows it (`server_version`, `18.4`) and
/// as code compares it (`server_version_num`, 180004); a server older than
/// 14 is refused, naming its version. `stats`: how the read stays out of
/// pg_stat_statements (see above).
pub async fn server_version(
    client: &tokio_postgres::Client,
    stats: StatsMode,
) -> Result<(String, i32)> {
    let row = client
        .query_one(
            &tag(
                stats,
                "SELECT current_setting('server_version'), \
                 current_setting('server_version_num')::int",
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the server version", e))?;
    let num: i32 = row.get(1);
    crate::db::require_supported(num)?;
    Ok((row.get(0), num))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begin_sets_timeout_role_and_binds_every_setting() {
        let ctx = TenantContext {
            role: Some("app user".into()),
            settings: vec![
                ("app.account_id".into(), SettingValue::Text("7".into())),
                (
                    "request.jwt.claims".into(),
                    SettingValue::Json(serde_json::json!({"sub": "u1"})),
                ),
            ],
        };
        assert_eq!(
            begin_sql(&ctx, 250),
            "BEGIN; SET LOCAL statement_timeout = 250; SET LOCAL ROLE \"app user\""
        );
        assert_eq!(
            begin_sql(&TenantContext::admin(), 5),
            "BEGIN; SET LOCAL statement_timeout = 5"
        );
        assert_eq!(
            settings_sql(2),
            "SELECT set_config($1, $2, true), set_config($3, $4, true)"
        );
        assert_eq!(ctx.settings[1].1.as_text(), r#"{"sub":"u1"}"#);
        assert_eq!(tag(StatsMode::Tagged, "SELECT 1"), "SELECT /* planck */ 1");
        assert_eq!(tag(StatsMode::Untracked, "SELECT 1"), "SELECT 1");
    }

    /// The shape record and replay write in their files: text, or a JSON claim set.
    #[test]
    fn setting_values_read_as_text_or_json_from_toml() {
        #[derive(serde::Deserialize)]
        struct F {
            settings: std::collections::BTreeMap<String, SettingValue>,
        }
        let f: F = toml::from_str(
            "[settings]\n\"app.account_id\" = \"7\"\n\
             \"request.jwt.claims\" = { sub = \"u-1\", roles = [\"a\"] }\n",
        )
        .unwrap();
        assert_eq!(f.settings["app.account_id"], SettingValue::Text("7".into()));
        assert_eq!(
            f.settings["request.jwt.claims"],
            SettingValue::Json(serde_json::json!({"sub": "u-1", "roles": ["a"]}))
        );
        // The text set_config gets parses back to the same claims.
        let text = f.settings["request.jwt.claims"].as_text();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, serde_json::json!({"sub": "u-1", "roles": ["a"]}));
    }
}
