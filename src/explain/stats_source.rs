//! `--from-stats`: the statements of this database in pg_stat_statements,
//! without planck's own and without what the server ran for planck.
//!
//! Every planck session switches tracking off first (`session::quiet_stats`),
//! so a second `planck explain --from-stats` finds nothing of the first. What
//! is left to drop comes from elsewhere: entries an older planck or a role
//! that may not switch tracking off left (tagged `/* planck */`, or in the
//! fixed forms planck sends), `pg_stat_statements_reset()`, and the
//! statements the server itself runs with `track = all`: the referential
//! integrity checks of foreign keys (`SELECT 1 FROM ONLY ... FOR KEY SHARE OF x`,
//! the validation join of `ADD CONSTRAINT ... FOREIGN KEY`, the cascades).
//!
//! `crate::stats` (record's reader and noise filter, being built beside this)
//! will take over [`noise`]; until then this small filter keeps explain honest.

use std::collections::BTreeMap;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::error::{Error, Result};
use crate::queries::{self, Statement};
use crate::session::{StatsMode, TAG, tag};

/// Why a pg_stat_statements entry is not planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Noise {
    /// planck's own: tagged, or a form only planck sends (its EXPLAINs, the
    /// generic-plan PREPARE, set_config, value probes, the tracking switch).
    Planck,
    /// A referential-integrity query the server ran for a foreign key.
    ForeignKeyCheck,
    /// `pg_stat_statements_reset()`.
    StatsReset,
}

impl Noise {
    pub fn describe(self) -> &'static str {
        match self {
            Noise::Planck => "of planck's own",
            Noise::ForeignKeyCheck => "server FK checks",
            Noise::StatsReset => "stats resets",
        }
    }
}

/// Whether an entry is noise, and which.
pub fn noise(query: &str) -> Option<Noise> {
    let q = query.trim_start();
    let lower = q.to_ascii_lowercase();
    if q.contains(TAG) {
        return Some(Noise::Planck);
    }
    // What the engine, the sampler and the session send (constants normalized to $n).
    const PLANCK_FORMS: &[&str] = &[
        "explain (format json)",
        "explain (verbose, format json)",
        "explain (analyze, buffers, format json)",
        "explain (analyze, buffers, verbose, format json)",
        "explain (generic_plan, format json)",
        "explain (generic_plan, verbose, format json)",
        "prepare planck_generic",
        "execute planck_generic",
        "deallocate planck_generic",
        "set pg_stat_statements.track",
        "set local statement_timeout",
        "set local plan_cache_mode",
        "select set_config($1, $2, true)",
    ];
    if PLANCK_FORMS.iter().any(|f| lower.starts_with(f)) {
        return Some(Noise::Planck);
    }
    if lower.starts_with("select v from (select ") && lower.contains("::text as v from ") {
        return Some(Noise::Planck);
    }
    if lower.contains("pg_stat_statements_reset") {
        return Some(Noise::StatsReset);
    }
    // ri_triggers.c spells every operator OPERATOR(pg_catalog.=) and reads ONLY.
    let ri_operator = lower.contains("operator(pg_catalog.");
    if ri_operator
        && (lower.contains(" for key share of ")
            || lower.starts_with("select fk.")
            || lower.contains(" only "))
    {
        return Some(Noise::ForeignKeyCheck);
    }
    None
}

/// The statements of this database in pg_stat_statements, noise dropped
/// (counted by kind in the second value).
pub async fn read(
    client: &Client,
    stats: StatsMode,
) -> Result<(Vec<Statement>, BTreeMap<Noise, usize>)> {
    let rows = client
        .query(&tag(stats, "SELECT s.query, r.rolname::text, (r.rolsuper OR r.rolbypassrls)
                    OR EXISTS (SELECT 1 FROM pg_class c WHERE c.relowner = r.oid AND c.relrowsecurity),
                    s.queryid, s.calls, s.rows
               FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
              WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              ORDER BY s.calls DESC, s.query"),
            &[],
        )
        .await
        .map_err(|e| {
            let missing = e.code() == Some(&SqlState::UNDEFINED_TABLE)
                || e.code() == Some(&SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
            if missing {
                Error::usage_hint(
                    "pg_stat_statements is not available in this database",
                    "CREATE EXTENSION pg_stat_statements (with shared_preload_libraries), or use --queries",
                )
            } else {
                Error::db("reading pg_stat_statements", e)
            }
        })?;
    let mut seen = std::collections::BTreeSet::new();
    let mut dropped = BTreeMap::new();
    let mut out = Vec::new();
    for r in rows {
        let query: String = r.get(0);
        if let Some(n) = noise(&query) {
            *dropped.entry(n).or_default() += 1;
            continue;
        }
        let role: String = r.get(1);
        let id = queries::identity(&query, Some(&role));
        if !seen.insert(id.clone()) {
            continue;
        }
        out.push(Statement {
            id,
            query,
            role: Some(role),
            bypass_rls: r.get(2),
            queryid: r.get(3),
            calls: Some(r.get::<_, i64>(4).max(0) as u64),
            rows: Some(r.get::<_, i64>(5).max(0) as u64),
            ..Default::default()
        });
    }
    Ok((out, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 8 section 4: planck's own statements, the server's FK checks and
    /// the reset were planned by the next `--from-stats`.
    #[test]
    fn issue8_planck_fk_checks_and_reset_are_noise_by_their_fixed_forms() {
        for (q, want) in [
            ("SELECT /* planck */ v FROM t", Noise::Planck),
            (
                "EXPLAIN (FORMAT JSON) SELECT * FROM items WHERE id = $1",
                Noise::Planck,
            ),
            ("PREPARE planck_generic AS SELECT $1", Noise::Planck),
            ("SELECT set_config($1, $2, true)", Noise::Planck),
            ("SET pg_stat_statements.track = 'none'", Noise::Planck),
            (
                "SELECT v FROM (SELECT \"kind\"::text AS v FROM \"public\".\"events\" WHERE \"kind\" IS NOT NULL  LIMIT $1) s GROUP BY v ORDER BY count(*) DESC, v LIMIT $2",
                Noise::Planck,
            ),
            ("SELECT pg_stat_statements_reset()", Noise::StatsReset),
            (
                "SELECT 1 FROM ONLY \"public\".\"users\" x WHERE \"id\" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x",
                Noise::ForeignKeyCheck,
            ),
            (
                "SELECT fk.\"user_id\" FROM ONLY \"public\".\"devices\" fk LEFT OUTER JOIN ONLY \"public\".\"users\" pk ON ( pk.\"id\" OPERATOR(pg_catalog.=) fk.\"user_id\") WHERE pk.\"id\" IS NULL AND (fk.\"user_id\" IS NOT NULL)",
                Noise::ForeignKeyCheck,
            ),
        ] {
            assert_eq!(noise(q), Some(want), "{q}");
        }
        for app in [
            "SELECT id, name FROM devices WHERE user_id = $1",
            "SELECT * FROM events WHERE kind = $1 FOR UPDATE",
            "EXPLAIN SELECT 1",
            "UPDATE items SET title = $1 WHERE id = $2",
        ] {
            assert_eq!(noise(app), None, "{app}");
        }
    }
}
