//! Replay as the tenant: units recorded as the application role run under
//! row-level security with the tenant setting set per transaction, the way
//! explain plans them (the shared `tenancy` layer works the tenancy out; the
//! shared `session` layer applies its [`TenantContext`]).
//!
//! `heavy` (the default) runs them as one tenant, `--tenant-id` (or
//! `[tenant] id`) else the heaviest: production's worst case. `spread` draws
//! the tenant per execution from the sampled rows themselves, so tenants come
//! with the data's own skew, and every other tenant-scoped table's row is
//! drawn from the same tenant (a row of another tenant is invisible under
//! RLS: it would match nothing and take no lock).

use std::collections::BTreeMap;

use tokio_postgres::Client;

use super::options::{TenantChoice, TenantMode};
use super::workload::{Unit, Workload};
use crate::catalog::planner::Catalog;
use crate::error::{Error, Result};
use crate::output::Log;
use crate::session::{self, StatsMode};
use crate::tenancy::{self, SettingValue, TenantContext};

/// How tenant-scoped units run, worked out once before the ladder.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRun {
    pub role: String,
    pub setting: String,
    /// Table (as catalog displays it: `items`, `audit.events`) -> its tenant column.
    pub columns: BTreeMap<String, String>,
    pub mode: TenantMode,
    /// The tenant of `heavy` (and of `spread` when a unit draws no tenant row).
    pub id: String,
    /// The setting's value per tenant where it is not the id itself.
    pub values: BTreeMap<String, SettingValue>,
}

impl TenantRun {
    /// The tenant column of a table as a bind names it (`public.` optional).
    pub fn column_of(&self, table: &str) -> Option<&String> {
        let t = table.strip_prefix("public.").unwrap_or(table);
        self.columns.get(t)
    }

    /// Whether a unit runs as the tenant: it was recorded as the application role.
    pub fn scopes(&self, w: &Workload, unit: Unit) -> bool {
        unit_role(w, unit).is_some_and(|r| r == self.role)
    }

    /// The context of one execution as `tenant`, with the unit's own settings
    /// (the tenant setting wins over a recorded one: the rows were drawn for it).
    pub fn context(&self, tenant: &str, own: &[(String, String)]) -> TenantContext {
        let value = self
            .values
            .get(tenant)
            .cloned()
            .unwrap_or_else(|| SettingValue::Text(tenant.to_string()));
        let mut settings: Vec<(String, SettingValue)> = own
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case(&self.setting))
            .map(|(k, v)| (k.clone(), SettingValue::Text(v.clone())))
            .collect();
        settings.push((self.setting.clone(), value));
        TenantContext {
            role: Some(self.role.clone()),
            settings,
        }
    }
}

/// The role a unit was recorded as.
pub fn unit_role(w: &Workload, unit: Unit) -> Option<&str> {
    match unit {
        Unit::Transaction(t) => {
            let t = &w.transactions[t];
            t.role
                .as_deref()
                .or_else(|| w.statements[*t.statements.first()?].role.as_deref())
        }
        Unit::Lone(s) => w.statements[s].role.as_deref(),
    }
}

/// Works out the tenancy when the database has RLS policies and the
/// workload was recorded as a role. `None`: everything runs as recorded.
pub async fn resolve(
    client: &Client,
    w: &Workload,
    choice: &TenantChoice,
    stats: StatsMode,
    log: Log,
) -> Result<Option<TenantRun>> {
    let mut roles: Vec<String> = w
        .units
        .iter()
        .filter_map(|(u, _)| unit_role(w, *u).map(str::to_string))
        .collect();
    roles.sort();
    roles.dedup();
    let asked = choice.options.id.is_some();
    if roles.is_empty() && choice.options.role.is_none() {
        if asked {
            return Err(Error::usage_hint(
                "a tenant was named, but no statement of the workload was recorded as a role",
                "record the statements as the application role, or leave the tenant out",
            ));
        }
        return Ok(None);
    }
    let catalog = Catalog::load(client, stats).await?;
    if catalog.policies.is_empty() {
        if asked {
            return Err(Error::usage(
                "a tenant was named, but this database has no row-level security policies",
            ));
        }
        return Ok(None);
    }
    let t = tenancy::resolve(client, &catalog, &choice.options, &roles, stats).await?;
    let mut mode = choice.mode;
    if asked {
        // A tenant named runs alone, whatever the mode.
        mode = TenantMode::Heavy;
    } else if mode == TenantMode::Spread && t.read_through.is_some() && !t.values.is_empty() {
        log.warn(&format!(
            "--tenant-mode spread: the policies read the tenant through {}, known here for a few \
             tenants only: running as tenant {} (heavy)",
            t.read_through.as_deref().unwrap_or("a lookup"),
            t.id
        ));
        mode = TenantMode::Heavy;
    }
    log.info(&format!(
        "tenant-scoped work runs as role {}, {} = {}{}",
        t.role,
        t.setting,
        t.id,
        match mode {
            TenantMode::Spread => " and other tenants with the data's skew (spread)",
            TenantMode::Heavy if t.heaviest.as_deref() == Some(t.id.as_str()) =>
                " (heaviest tenant)",
            TenantMode::Heavy => "",
        }
    ));
    Ok(Some(TenantRun {
        role: t.role,
        setting: t.setting,
        columns: t.columns,
        mode,
        id: t.id,
        values: t.values,
    }))
}

/// `BEGIN [ISOLATION LEVEL ..] READ WRITE`: the statement timeout and the
/// role are the connection's (set once, see `exec::run_unit`), so the
/// transaction sets neither.
///
/// Always `READ WRITE`: replay's sessions default to read-only when nothing
/// may be committed (see `ladder::connect`), and a unit's own transaction,
/// rolled back at its end, must still run the application's writes.
pub fn begin_sql(isolation: Option<&str>) -> String {
    match isolation {
        Some(i) => format!("BEGIN ISOLATION LEVEL {} READ WRITE", i.to_uppercase()),
        None => "BEGIN READ WRITE".to_string(),
    }
}

/// `begin` and the transaction-level `settings` (`set_config(.., true)`),
/// pipelined: a statement the caller joins behind this future leaves in the
/// same write. The caller ends the transaction.
pub async fn begin(
    client: &Client,
    begin: &str,
    settings: &[(String, String)],
) -> std::result::Result<(), tokio_postgres::Error> {
    let (b, s) = tokio::join!(client.batch_execute(begin), async {
        if settings.is_empty() {
            return Ok(());
        }
        let flat: Vec<&str> = settings
            .iter()
            .flat_map(|(k, v)| [k.as_str(), v.as_str()])
            .collect();
        let params: Vec<(
            &(dyn tokio_postgres::types::ToSql + Sync),
            tokio_postgres::types::Type,
        )> = flat
            .iter()
            .map(|v| {
                (
                    v as &(dyn tokio_postgres::types::ToSql + Sync),
                    tokio_postgres::types::Type::TEXT,
                )
            })
            .collect();
        client
            .query_typed(&session::settings_sql(settings.len()), &params)
            .await
            .map(|_| ())
    });
    b?;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> TenantRun {
        TenantRun {
            role: "app_user".into(),
            setting: "app.account_id".into(),
            columns: BTreeMap::from([("items".to_string(), "account_id".to_string())]),
            mode: TenantMode::Heavy,
            id: "2".into(),
            values: BTreeMap::new(),
        }
    }

    #[test]
    fn the_tenant_setting_wins_over_a_recorded_one() {
        let ctx = run().context(
            "7",
            &[
                ("app.account_id".into(), "1".into()),
                ("app.locale".into(), "fr".into()),
            ],
        );
        assert_eq!(ctx.role.as_deref(), Some("app_user"));
        assert_eq!(
            ctx.settings,
            vec![
                ("app.locale".to_string(), SettingValue::Text("fr".into())),
                ("app.account_id".to_string(), SettingValue::Text("7".into())),
            ]
        );
        assert_eq!(
            run().column_of("public.items").map(String::as_str),
            Some("account_id")
        );
        assert_eq!(run().column_of("events"), None);
    }

    /// Issue 32: the role and the timeout are the connection's, set once;
    /// a transaction opens with its isolation level alone.
    #[test]
    fn begin_names_the_isolation_only() {
        assert_eq!(
            begin_sql(Some("repeatable read")),
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE"
        );
        assert_eq!(begin_sql(None), "BEGIN READ WRITE");
    }
}
