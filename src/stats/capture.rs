//! Reading pg_stat_statements for one database, honestly.
//!
//! pg_stat_statements is cluster-wide: other databases, other test runs and
//! planck itself all write to it. So every read here filters on the target
//! database's oid, a reset is per database (`pg_stat_statements_reset(0,
//! dbid, 0)`, never the whole server), and a capture is always the
//! difference between a snapshot taken after the reset and one taken after
//! the run. When the role may not reset (only superusers may by default) the
//! same subtraction does the job on its own.

use std::collections::{BTreeMap, HashMap};

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::db::quote_ident;
use crate::error::{Error, PgError, Result};
use crate::queries::Context;

/// What the server says about pg_stat_statements, checked before a run.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Schema of the extension's view (quoted identifier).
    pub schema: String,
    pub dbid: u32,
    pub database: String,
    pub current_user: String,
    /// `pg_stat_statements.track`: `top` misses statements inside functions.
    pub track: String,
    pub max: Option<String>,
    /// `track_activity_query_size` in bytes.
    pub query_size: Option<i64>,
    /// Whether the extension was created by this run.
    pub created_extension: bool,
    /// `server_version_num`.
    pub version: i32,
}

/// Counters of one (role, queryid) pair.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub calls: i64,
    pub rows: i64,
    pub total_ms: f64,
    pub text: Option<String>,
    /// Calls run inside a function or procedure (`toplevel = false`);
    /// `None` before PostgreSQL 14, which does not say.
    pub nested_calls: Option<i64>,
}

/// One read of pg_stat_statements for the database.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub entries: HashMap<(u32, i64), Counters>,
    /// Entries whose text and queryid this role may not see.
    pub invisible: usize,
    /// `pg_stat_statements_info.dealloc` (PostgreSQL 14+).
    pub dealloc: Option<i64>,
}

/// A statement the run produced, before noise filtering.
#[derive(Debug, Clone)]
pub struct Raw {
    pub userid: u32,
    pub queryid: i64,
    /// `None` when pg_stat_statements lost the text (its text file was discarded).
    pub query: Option<String>,
    pub calls: u64,
    pub rows: u64,
    pub total_ms: f64,
    /// Where the new calls ran; empty when the server does not say.
    pub contexts: Vec<Context>,
}

/// What a role is, for the RLS-bypass flag.
#[derive(Debug, Clone)]
pub struct RoleFacts {
    pub name: String,
    pub superuser: bool,
    pub bypassrls: bool,
    /// Tables with row-level security enabled (not forced) whose owner this
    /// role has the privileges of: the owner is not filtered by its policies.
    pub owned_rls_tables: Vec<String>,
}

impl RoleFacts {
    /// Whether this role bypasses row-level security for a statement using
    /// `identifiers`: superuser, BYPASSRLS, or owner of an RLS table it names.
    pub fn bypasses_rls(&self, identifiers: &[String]) -> bool {
        self.superuser
            || self.bypassrls
            || identifiers
                .iter()
                .any(|w| self.owned_rls_tables.iter().any(|t| t == w))
    }
}

fn pg(context: &str, e: tokio_postgres::Error) -> Error {
    Error::db(context, e)
}

/// Checks that pg_stat_statements is loaded and exists in the database,
/// creating the extension where this role may.
pub async fn probe(client: &Client) -> Result<Probe> {
    let row = client
        .query_one(
            "SELECT /* planck */ current_setting('server_version_num')::int, d.oid, d.datname, \
             current_user::text FROM pg_database d WHERE d.datname = current_database()",
            &[],
        )
        .await
        .map_err(|e| pg("reading the server version", e))?;
    let version: i32 = row.get(0);
    let dbid: u32 = row.get(1);
    let database: String = row.get(2);
    let current_user: String = row.get(3);
    crate::db::require_supported(version)?;
    // shared_preload_libraries is hidden from roles without
    // pg_read_all_settings: then the view itself tells (SQLSTATE 55000).
    let preload: Option<String> = client
        .query_opt(
            "SELECT /* planck */ setting FROM pg_settings WHERE name = 'shared_preload_libraries'",
            &[],
        )
        .await
        .map_err(|e| pg("reading shared_preload_libraries", e))?
        .map(|r| r.get(0));
    if let Some(libs) = &preload
        && !preloads_pgss(libs)
    {
        return Err(Error::NotPreloaded {
            current: libs.clone(),
        });
    }
    let mut created_extension = false;
    let schema = match extension_schema(client).await? {
        Some(s) => s,
        None => {
            match client
                .batch_execute("CREATE /* planck */ EXTENSION IF NOT EXISTS pg_stat_statements")
                .await
            {
                Ok(()) => created_extension = true,
                Err(e) => {
                    let Some(db) = e.as_db_error() else {
                        return Err(pg("creating the pg_stat_statements extension", e));
                    };
                    if *db.code() == SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE {
                        return Err(Error::NotPreloaded {
                            current: preload.unwrap_or_default(),
                        });
                    }
                    return Err(Error::ExtensionMissing {
                        database: database.clone(),
                        role: current_user.clone(),
                        pg: PgError::from_db(db),
                    });
                }
            }
            extension_schema(client).await?.ok_or_else(|| {
                Error::usage("pg_stat_statements was created but cannot be found in pg_extension")
            })?
        }
    };
    let schema = quote_ident(&schema);
    // The view fails with 55000 when the library is not loaded.
    if let Err(e) = client
        .query(
            &format!("SELECT /* planck */ 1 FROM {schema}.pg_stat_statements LIMIT 1"),
            &[],
        )
        .await
    {
        if e.code() == Some(&SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE) {
            return Err(Error::NotPreloaded {
                current: preload.unwrap_or_default(),
            });
        }
        return Err(pg("reading pg_stat_statements", e));
    }
    let settings = client
        .query_one(
            // reset_val: the session's own value is 'none' (see session::quiet_stats);
            // the sessions of the run get the server's, database's or role's.
            "SELECT /* planck */ (SELECT reset_val FROM pg_settings WHERE name = 'pg_stat_statements.track'), \
             current_setting('pg_stat_statements.max', true), \
             (SELECT setting::bigint FROM pg_settings WHERE name = 'track_activity_query_size')",
            &[],
        )
        .await
        .map_err(|e| pg("reading pg_stat_statements' settings", e))?;
    let track: Option<String> = settings.get(0);
    let track = track.unwrap_or_else(|| "top".into());
    if track == "none" {
        return Err(Error::usage_hint(
            "pg_stat_statements.track is `none`: the server records no statements",
            "set pg_stat_statements.track = all in postgresql.conf (or with ALTER SYSTEM) and reload",
        ));
    }
    Ok(Probe {
        schema,
        dbid,
        database,
        current_user,
        track,
        max: settings.get(1),
        query_size: settings.get(2),
        created_extension,
        version,
    })
}

pub(crate) async fn extension_schema(client: &Client) -> Result<Option<String>> {
    Ok(client
        .query_opt(
            "SELECT /* planck */ n.nspname::text FROM pg_extension e \
             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_stat_statements'",
            &[],
        )
        .await
        .map_err(|e| pg("looking for the pg_stat_statements extension", e))?
        .map(|r| r.get(0)))
}

/// Whether a `shared_preload_libraries` value loads pg_stat_statements.
pub fn preloads_pgss(libs: &str) -> bool {
    libs.split(',')
        .map(|l| l.trim().trim_matches('"'))
        .any(|l| {
            let base = l.rsplit('/').next().unwrap_or(l);
            base == "pg_stat_statements" || base == "pg_stat_statements.so"
        })
}

/// Resets the database's counters. `Ok(false)` when the role may not (only
/// superusers and roles granted EXECUTE on the function may).
pub async fn reset(client: &Client, probe: &Probe) -> Result<bool> {
    let sql = format!(
        "SELECT /* planck */ 1 FROM {}.pg_stat_statements_reset(0, $1, 0)",
        probe.schema
    );
    match client.query(&sql, &[&probe.dbid]).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => Ok(false),
        Err(e) => Err(pg("resetting pg_stat_statements for the database", e)),
    }
}

/// Reads the database's entries (and the eviction counter).
pub async fn sample(client: &Client, probe: &Probe) -> Result<Sample> {
    sample_of(client, &probe.schema, probe.dbid, probe.version).await
}

/// The sampling query: `toplevel` exists from PostgreSQL 14 on.
fn sample_sql(schema: &str, version: i32) -> String {
    let toplevel = if version >= 140000 {
        "s.toplevel"
    } else {
        "NULL::bool"
    };
    format!(
        "SELECT /* planck */ s.userid, s.queryid, s.query, s.calls, s.rows, s.total_exec_time, \
         {toplevel} FROM {schema}.pg_stat_statements s WHERE s.dbid = $1"
    )
}

/// [`sample`] given the view's (quoted) schema, the database's oid and
/// `server_version_num`.
pub(crate) async fn sample_of(
    client: &Client,
    schema: &str,
    dbid: u32,
    version: i32,
) -> Result<Sample> {
    let sql = sample_sql(schema, version);
    let rows = client
        .query(&sql, &[&dbid])
        .await
        .map_err(|e| pg("reading pg_stat_statements", e))?;
    let mut out = Sample::default();
    for r in rows {
        let userid: u32 = r.get(0);
        let Some(queryid) = r.get::<_, Option<i64>>(1) else {
            out.invisible += 1;
            continue;
        };
        let c = out.entries.entry((userid, queryid)).or_default();
        // A statement run at top level and inside a function has two rows.
        let calls = r.get::<_, i64>(3);
        c.calls += calls;
        c.rows += r.get::<_, i64>(4);
        c.total_ms += r.get::<_, f64>(5);
        if let Some(top) = r.get::<_, Option<bool>>(6) {
            *c.nested_calls.get_or_insert(0) += if top { 0 } else { calls };
        }
        if c.text.is_none() {
            c.text = r.get(2);
        }
    }
    let info = format!("SELECT /* planck */ dealloc FROM {schema}.pg_stat_statements_info");
    out.dealloc = match client.query_opt(&info, &[]).await {
        Ok(row) => row.map(|r| r.get(0)),
        // Before PostgreSQL 14 (extension 1.9) there is no info view.
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => None,
        Err(e) => return Err(pg("reading pg_stat_statements_info", e)),
    };
    Ok(out)
}

/// What ran between two samples. An entry with fewer calls after than before
/// was evicted and came back: all its calls are new.
pub fn delta(before: Option<&Sample>, after: &Sample) -> Vec<Raw> {
    let mut out: BTreeMap<(u32, i64), Raw> = BTreeMap::new();
    for (key, a) in &after.entries {
        let b = before.and_then(|s| s.entries.get(key));
        let (calls, rows, total_ms, nested) = match b {
            Some(b) if b.calls <= a.calls => (
                a.calls - b.calls,
                a.rows - b.rows,
                a.total_ms - b.total_ms,
                a.nested_calls
                    .map(|n| (n - b.nested_calls.unwrap_or(0)).max(0)),
            ),
            _ => (a.calls, a.rows, a.total_ms, a.nested_calls),
        };
        if calls <= 0 {
            continue;
        }
        let contexts = match nested {
            None => Vec::new(),
            Some(n) => {
                let mut c = Vec::new();
                if calls > n {
                    c.push(Context::Top);
                }
                if n > 0 {
                    c.push(Context::Function);
                }
                c
            }
        };
        out.insert(
            *key,
            Raw {
                userid: key.0,
                queryid: key.1,
                query: a.text.clone(),
                calls: calls as u64,
                rows: rows.max(0) as u64,
                total_ms: total_ms.max(0.0),
                contexts,
            },
        );
    }
    out.into_values().collect()
}

/// Role names and RLS facts for the roles that ran the statements.
pub async fn roles(client: &Client, userids: &[u32]) -> Result<HashMap<u32, RoleFacts>> {
    let rows = client
        .query(
            "SELECT /* planck */ r.oid, r.rolname::text, r.rolsuper, r.rolbypassrls, \
               ARRAY(SELECT c.relname::text FROM pg_class c \
                      WHERE c.relrowsecurity AND NOT c.relforcerowsecurity \
                        AND c.relkind IN ('r', 'p') \
                        AND pg_has_role(r.oid, c.relowner, 'USAGE') ORDER BY 1) \
             FROM pg_roles r WHERE r.oid = ANY($1)",
            &[&userids],
        )
        .await
        .map_err(|e| pg("resolving the roles that ran the statements", e))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.get::<_, u32>(0),
                RoleFacts {
                    name: r.get(1),
                    superuser: r.get(2),
                    bypassrls: r.get(3),
                    owned_rls_tables: r.get(4),
                },
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(entries: &[((u32, i64), i64)]) -> Sample {
        Sample {
            entries: entries
                .iter()
                .map(|(k, calls)| {
                    (
                        *k,
                        Counters {
                            calls: *calls,
                            rows: *calls * 2,
                            total_ms: *calls as f64,
                            text: Some(format!("q{}", k.1)),
                            nested_calls: None,
                        },
                    )
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn delta_subtracts_and_survives_evictions() {
        let before = sample(&[((10, 1), 5), ((10, 2), 3), ((10, 3), 9)]);
        // 1 ran twice more, 2 did not run, 3 was evicted and ran once since, 4 is new.
        let after = sample(&[((10, 1), 7), ((10, 2), 3), ((10, 3), 1), ((11, 4), 2)]);
        let got: Vec<(i64, u64, u64)> = delta(Some(&before), &after)
            .iter()
            .map(|r| (r.queryid, r.calls, r.rows))
            .collect();
        assert_eq!(got, [(1, 2, 4), (3, 1, 2), (4, 2, 4)]);
        assert_eq!(delta(None, &after).len(), 4);
    }

    #[test]
    fn toplevel_is_read_from_postgresql_14_on() {
        assert!(
            sample_sql("public", 150004).contains(", s.toplevel FROM public.pg_stat_statements")
        );
        assert!(sample_sql("public", 140000).contains("s.toplevel"));
        assert!(sample_sql("\"x\"", 130011).contains(", NULL::bool FROM \"x\".pg_stat_statements"));
    }

    #[test]
    fn contexts_come_from_the_nested_calls_of_the_run() {
        let counters = |calls, nested| Counters {
            calls,
            rows: 0,
            total_ms: 0.0,
            text: Some("q".into()),
            nested_calls: nested,
        };
        let one = |c: Counters| Sample {
            entries: [((1, 1), c)].into_iter().collect(),
            ..Default::default()
        };
        let got = |before: Option<Counters>, after| {
            delta(before.map(one).as_ref(), &one(after))[0]
                .contexts
                .clone()
        };
        assert_eq!(got(None, counters(3, Some(0))), [Context::Top]);
        assert_eq!(got(None, counters(3, Some(3))), [Context::Function]);
        assert_eq!(
            got(None, counters(3, Some(1))),
            [Context::Top, Context::Function]
        );
        // Only the run's calls count: before it, the calls were nested.
        assert_eq!(
            got(Some(counters(2, Some(2))), counters(5, Some(2))),
            [Context::Top]
        );
        assert!(
            got(None, counters(3, None)).is_empty(),
            "PostgreSQL 13 does not say"
        );
    }

    #[test]
    fn preload_list_is_parsed() {
        assert!(preloads_pgss("pg_stat_statements"));
        assert!(preloads_pgss("auto_explain, \"pg_stat_statements\""));
        assert!(preloads_pgss("$libdir/pg_stat_statements.so"));
        assert!(!preloads_pgss(""));
        assert!(!preloads_pgss("pg_stat_statements_extra,auto_explain"));
    }

    #[test]
    fn owner_of_a_named_rls_table_bypasses() {
        let owner = RoleFacts {
            name: "owner".into(),
            superuser: false,
            bypassrls: false,
            owned_rls_tables: vec!["items".into()],
        };
        let ids = |q: &str| crate::stats::noise::identifiers(q);
        assert!(owner.bypasses_rls(&ids("SELECT count(*) FROM public.items")));
        assert!(!owner.bypasses_rls(&ids("DELETE FROM dpop_replays WHERE jti = $1")));
        let su = RoleFacts {
            superuser: true,
            ..owner.clone()
        };
        assert!(su.bypasses_rls(&ids("DELETE FROM dpop_replays")));
    }
}
