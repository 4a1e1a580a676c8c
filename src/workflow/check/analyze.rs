//! Check's own ANALYZE: head is a copy of the analyzed base, so only the
//! tables head's new migration files touched need fresh statistics (an
//! ANALYZE of everything would make the base and head differ by sampling,
//! not by the change). A table counts as touched when its relfilenode or
//! column count changed, its rows changed, or a migration named it.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::migrate;
use crate::output::Log;

use super::plan::step;

/// ANALYZEs the tables head's new files touched: created, rewritten,
/// given or losing columns, with rows changed, or whose indexes changed.
pub async fn reanalyze(
    log: Log,
    db: &ConnInfo,
    before: &[(u32, u32, i64)],
    objects: &[migrate::ObjectChange],
) -> Result<()> {
    let t = Instant::now();
    let after = table_shapes(db).await?;
    let client = db.connect().await?;
    let modified: Vec<u32> = client
        .query(
            "SELECT relid FROM pg_stat_user_tables
              WHERE n_mod_since_analyze > 0 AND relname <> 'planck_migrations'",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading pg_stat_user_tables", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut oids: BTreeSet<u32> = after
        .iter()
        .filter(|a| !before.contains(a) || modified.contains(&a.0))
        .map(|a| a.0)
        .collect();
    for o in objects {
        if let Some(table) = &o.table {
            let qualified = format!(
                "{}.{}",
                crate::db::quote_ident(&o.schema),
                crate::db::quote_ident(table)
            );
            if let Ok(row) = client
                .query_one("SELECT to_regclass($1)::oid", &[&qualified])
                .await
                && let Ok(Some(oid)) = row.try_get::<_, Option<u32>>(0)
            {
                oids.insert(oid);
            }
        }
    }
    let mut names = Vec::new();
    for oid in &oids {
        let name: String = client
            .query_one("SELECT $1::oid::regclass::text", &[oid])
            .await
            .map_err(|e| Error::db("naming a table", e))?
            .get(0);
        client
            .batch_execute(&format!("ANALYZE {name}"))
            .await
            .map_err(|e| Error::db(format!("analyzing {name}"), e))?;
        names.push(name);
    }
    step(
        log,
        t,
        &format!(
            "analyze: {} table(s) head's migrations touched{}",
            names.len(),
            if names.is_empty() {
                String::new()
            } else {
                format!(" ({})", names.join(", "))
            }
        ),
    );
    Ok(())
}

/// Every ordinary table's oid, relfilenode and column count: what a
/// migration changes when it creates, rewrites or alters a table (planck's
/// own schema and its migrations table left out).
pub async fn table_shapes(db: &ConnInfo) -> Result<Vec<(u32, u32, i64)>> {
    let client = db.connect().await?;
    Ok(crate::db::table_files(&client)
        .await?
        .into_iter()
        .filter(|t| t.schema != "planck" && t.relname != "planck_migrations")
        .map(|t| (t.oid, t.relfilenode, t.columns))
        .collect())
}
