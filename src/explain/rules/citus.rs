//! What the Citus checks (`multi-shard`, `repartition-join`,
//! `tenant-shard-skew`) share: the guard of a probe of Citus's catalog and
//! the probe of how each table is distributed, read back as
//! [`Distribution`]s. Each check declares its probe in its own file
//! ([`super::Check::probe`]); only these shared parts live here, apart from
//! `check.rs`, which knows no one check.

use super::check::{Ctx, Probe};
use crate::findings::CheckId;

/// The guard of a probe reading Citus's catalog: Citus is installed in the
/// database (`pg_dist_partition` exists only there).
pub const CITUS_GUARD: &str = "SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL";

/// The probe of the Citus checks that name distribution columns: each
/// distributed table with its distribution column (NULL for a reference
/// table) and its method (`h` hash, `n` reference, ...).
pub const DISTRIBUTION_PROBE: Probe = Probe {
    sql: "SELECT n.nspname::text AS schema, c.relname::text AS table,
                 p.partmethod::text AS method,
                 CASE WHEN p.partkey IS NOT NULL
                      THEN column_to_column_name(p.logicalrelid, p.partkey)::text END AS column
            FROM pg_dist_partition p
            JOIN pg_class c ON c.oid = p.logicalrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
           ORDER BY 1, 2",
    guard: Some(CITUS_GUARD),
    tenant: false,
};

/// How a Citus table is distributed, as [`DISTRIBUTION_PROBE`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Distribution {
    /// Hash-distributed (or by range/append) by this column.
    By(String),
    /// A reference table: a copy on every node.
    Reference,
}

impl Distribution {
    /// `ads (distributed by company_id)` / `countries (a reference table)`.
    pub fn describe(&self, table: &str) -> String {
        match self {
            Distribution::By(c) => format!("{table} (distributed by {c})"),
            Distribution::Reference => format!("{table} (a reference table)"),
        }
    }
}

/// The Citus tables of check `check`'s [`DISTRIBUTION_PROBE`] rows, by the
/// catalog's name of each (as [`crate::catalog::planner::Catalog::resolve`] gives it); empty without
/// Citus.
pub fn distributions(
    ctx: &Ctx,
    check: CheckId,
) -> std::collections::BTreeMap<String, Distribution> {
    let text = |r: &serde_json::Value, k: &str| {
        r.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    ctx.probed(check)
        .iter()
        .filter_map(|r| {
            let table = text(r, "table")?;
            let qualified = format!("{}.{table}", text(r, "schema")?);
            let name = ctx
                .catalog
                .resolve(&qualified)
                .unwrap_or(&table)
                .to_string();
            let d = match (text(r, "method").as_deref(), text(r, "column")) {
                (Some("n"), _) | (_, None) => Distribution::Reference,
                (_, Some(c)) => Distribution::By(c),
            };
            Some((name, d))
        })
        .collect()
}
