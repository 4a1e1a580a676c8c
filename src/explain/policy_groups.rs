//! The measurement of `multiple-permissive-policies` (run by the check's
//! `measure`): for each table,
//! role and command, the permissive policies that apply (a FOR ALL policy
//! applies to every command). The server evaluates each of them and ORs
//! the results, for every row.

use tokio_postgres::Client;

use super::probes::{Evidence, Measure};
use crate::error::{Error, Result};
use crate::session::{StatsMode, tag};

/// Several permissive policies one role meets for one command on one table.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissiveGroup {
    pub table: String,
    pub role: String,
    pub command: String,
    pub policies: Vec<String>,
}

/// The measurement of `multiple-permissive-policies`: its evidence is a
/// `Vec<PermissiveGroup>`.
pub async fn measure(on: &Measure<'_>) -> Result<Option<Evidence>> {
    Ok(Some(Evidence::new(load(on.client, on.stats).await?)))
}

async fn load(client: &Client, stats: StatsMode) -> Result<Vec<PermissiveGroup>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT p.schemaname::text, p.tablename::text, r.role::text, c.cmd,
                        array_agg(p.policyname::text ORDER BY p.policyname)
                   FROM pg_policies p
                   CROSS JOIN unnest(p.roles) AS r(role)
                   JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE')) AS c(cmd)
                     ON p.cmd IN (c.cmd, 'ALL')
                  WHERE p.permissive = 'PERMISSIVE'
                  GROUP BY 1, 2, 3, 4 HAVING count(*) > 1
                  ORDER BY 1, 2, 3, 4",
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the permissive policies", e))?;
    Ok(rows
        .iter()
        .map(|r| PermissiveGroup {
            table: crate::catalog::display_name(r.get(0), r.get(1)),
            role: r.get(2),
            command: r.get(3),
            policies: r.get(4),
        })
        .collect())
}
