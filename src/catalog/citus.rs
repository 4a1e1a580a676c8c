//! Citus: whether the database is a Citus coordinator holding distributed
//! (or reference) tables. seed measures such a table on its shards, explain
//! plans with the setting that lets a repartition join have a plan.

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::session::{StatsMode, tag};

/// True when the database is a Citus coordinator with distributed or
/// reference tables (`pg_dist_partition` has rows).
pub async fn has_distributed_tables(client: &Client, stats: StatsMode) -> Result<bool> {
    let err = |e| Error::db("reading Citus's tables", e);
    let citus: bool = client
        .query_one(
            &tag(
                stats,
                "SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL",
            ),
            &[],
        )
        .await
        .map_err(err)?
        .get(0);
    if !citus {
        return Ok(false);
    }
    Ok(client
        .query_one(
            &tag(
                stats,
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition)",
            ),
            &[],
        )
        .await
        .map_err(err)?
        .get(0))
}
