//! A schema per tenant (django-tenants, Apartment: one schema per customer,
//! chosen with `search_path`): many schemas holding the same tables. planck
//! does not support that layout yet; `explain` says so instead of planning
//! one schema's tables as if they were the whole database.

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::session::{StatsMode, tag};

/// How many schemas with one table set make it a layout, not a coincidence.
pub const MIN_SCHEMAS: i64 = 3;

/// Groups of at least [`MIN_SCHEMAS`] schemas whose (ordinary or
/// partitioned) table names are the same set, each group sorted.
pub async fn groups(client: &Client, stats: StatsMode) -> Result<Vec<Vec<String>>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT array_agg(nspname::text ORDER BY nspname) FROM (
                   SELECT n.nspname, string_agg(c.relname, ',' ORDER BY c.relname) AS tables
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
                      AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                      AND n.nspname NOT LIKE 'pg\\_%'
                    GROUP BY n.nspname) s
                  GROUP BY tables HAVING count(*) >= $1 ORDER BY 1",
            ),
            &[&MIN_SCHEMAS],
        )
        .await
        .map_err(|e| Error::db("looking for a schema per tenant", e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
