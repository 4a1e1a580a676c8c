//! The connections the load and the restore open, and the user triggers
//! they silence around planck's own writes.
//!
//! Every connection says it is planck's (`application_name`, which the seed
//! lock and the tests look for), stays out of `pg_stat_statements`, and runs
//! in replica mode as superuser so event triggers and rules stay quiet. A
//! table's user triggers are disabled inside the transaction that writes it,
//! so its rollback enables them again.

use tokio_postgres::Client;

use crate::db::{ConnInfo, quote_ident};
use crate::error::{Error, Result};

pub const APP_NAME: &str = "planck seed";

/// A connection for the load or the restore (see the module docs).
pub(crate) async fn connect(conn: &ConnInfo) -> Result<Client> {
    let c = conn.connect().await?;
    // Seeding is planck's work, never the application's: out of
    // pg_stat_statements (a role that may not untrack is warned once).
    crate::session::quiet_stats(&c, crate::output::Log::default()).await?;
    c.batch_execute(&format!(
        "SET application_name = '{APP_NAME}'; SET maintenance_work_mem = '256MB'"
    ))
    .await
    .map_err(|e| Error::db("configuring a connection", e))?;
    // As superuser, replica mode silences what `DISABLE TRIGGER USER` cannot
    // reach: event triggers (Supabase-style databases have them on DDL) and
    // rules, for everything planck does on its connections. Only this
    // session's setting: the application's sessions are untouched.
    c.batch_execute(
        "DO $$BEGIN IF current_setting('is_superuser') = 'on' THEN
             SET session_replication_role = replica; END IF; END$$",
    )
    .await
    .map_err(|e| Error::db("configuring a connection", e))?;
    Ok(c)
}

/// A user trigger planck disabled for a table's load, and how it was
/// enabled before (`O`: origin and local, `A`: always, `R`: replica only), so
/// it comes back exactly as it was.
#[derive(Debug, Clone)]
pub(crate) struct Trigger {
    /// The relation, schema-qualified and quoted.
    table: String,
    name: String,
    enabled: i8,
}

/// Disables the user triggers (not the internal ones behind foreign keys) of
/// the table and its partitions, inside the table's transaction: its
/// rollback (a failure, a signal, a SIGKILL, a lost connection) enables them
/// again with nothing left to restore. Triggers already disabled are left
/// out (they stay disabled). `ALTER TABLE ONLY` per relation: a partition's
/// clone of its parent's trigger is one of the relations listed.
pub(crate) async fn disable_triggers(
    tx: &tokio_postgres::Transaction<'_>,
    oid: u32,
) -> Result<Vec<Trigger>> {
    let err = |e| Error::db("disabling user triggers", e);
    let rows = tx
        .query(
            "SELECT t.tgrelid::regclass::text, t.tgname::text, t.tgenabled::\"char\"
               FROM pg_trigger t
              WHERE t.tgrelid IN (SELECT $1::oid UNION SELECT relid FROM pg_partition_tree($1::oid))
                AND NOT t.tgisinternal AND t.tgenabled <> 'D'
              ORDER BY 1, 2",
            &[&oid],
        )
        .await
        .map_err(err)?;
    let mut out = Vec::new();
    for r in rows {
        let t = Trigger {
            table: r.get(0),
            name: r.get(1),
            enabled: r.get(2),
        };
        tx.batch_execute(&format!(
            "ALTER TABLE ONLY {} DISABLE TRIGGER {}",
            t.table,
            quote_ident(&t.name)
        ))
        .await
        .map_err(err)?;
        out.push(t);
    }
    Ok(out)
}

/// Enables what [`disable_triggers`] disabled, each as it was, before the
/// table's transaction commits.
pub(crate) async fn enable_triggers(
    tx: &tokio_postgres::Transaction<'_>,
    triggers: &[Trigger],
) -> Result<()> {
    for t in triggers {
        let how = match t.enabled as u8 {
            b'A' => "ALWAYS ",
            b'R' => "REPLICA ",
            _ => "",
        };
        tx.batch_execute(&format!(
            "ALTER TABLE ONLY {} ENABLE {how}TRIGGER {}",
            t.table,
            quote_ident(&t.name)
        ))
        .await
        .map_err(|e| Error::db("enabling user triggers again", e))?;
    }
    Ok(())
}

/// The event triggers that fire on the DDL a seed runs (ALTER TABLE, CREATE
/// and DROP INDEX, its bookkeeping's CREATE and DROP), as `name (event)`: none as superuser (replica mode
/// silences those not enabled ALWAYS), else every enabled one.
pub(crate) async fn firing_event_triggers(c: &Client) -> Result<Vec<String>> {
    let rows = c
        .query(
            "SELECT evtname || ' (' || evtevent || ')' FROM pg_event_trigger
              WHERE evtenabled <> 'D'
                AND CASE WHEN current_setting('session_replication_role') = 'replica'
                         THEN evtenabled IN ('A', 'R') ELSE evtenabled IN ('O', 'A') END
                AND (evttags IS NULL OR evttags && ARRAY['ALTER TABLE', 'CREATE INDEX', 'DROP INDEX', 'CREATE SCHEMA',
                                                'CREATE TABLE', 'DROP TABLE', 'DROP SCHEMA', 'COMMENT'])
              ORDER BY 1",
            &[],
        )
        .await
        .map_err(|e| Error::db("listing event triggers", e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
