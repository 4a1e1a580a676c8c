//! pg_stat_statements, read honestly, and the noise filter: the shared
//! layer under `record` (what a test run sent) and `explain --from-stats`
//! (what the server saw).
//!
//! [`capture`] reads the view for one database (probe, reset, samples and
//! their difference, the roles that ran each statement); [`noise`] says
//! which texts are not the application's: transaction control, settings,
//! catalog reads, DDL, and planck's own statements and bookkeeping, plus the
//! server's own foreign-key checks that planck's work caused, each with its
//! own [`Reason`].
//!
//! planck keeps itself out of pg_stat_statements first by running its
//! sessions with `pg_stat_statements.track = 'none'` ([`quiet_stats`](crate::session::quiet_stats)); the noise
//! filter is the second line, for what that setting could not keep out.

pub(crate) mod capture;
pub(crate) mod noise;

pub use noise::{Reason, classify};

use std::collections::{BTreeMap, HashMap};

use tokio_postgres::Client;

use crate::db::quote_ident;
use crate::error::{Error, Result};
use crate::queries::{self, Statement};

/// Whether a session is kept out of pg_stat_statements.
/// One statement of a capture: the pg_stat_statements entries of one role
/// and one text ([`crate::queries::text_key`]) added up.
#[derive(Debug, Clone, PartialEq)]
pub struct Grouped {
    pub role: String,
    /// The text, trimmed (the first one seen).
    pub query: String,
    /// pg_stat_statements' queryid of the first entry.
    pub queryid: i64,
    pub bypass_rls: bool,
    pub calls: u64,
    pub rows: u64,
    pub total_ms: f64,
    /// Why it is noise, when noise is kept.
    pub noise: Option<Reason>,
    /// Where its calls ran, sorted; empty when the server does not say.
    pub contexts: Vec<queries::Context>,
}

impl Grouped {
    /// `contexts` as the queries file keeps them: left out when the
    /// statement ran only as the client sent it (the common case).
    pub fn file_contexts(&self) -> Vec<queries::Context> {
        if self.contexts == [queries::Context::Top] {
            Vec::new()
        } else {
            self.contexts.clone()
        }
    }
}

/// A capture sorted into the application's statements and the noise.
#[derive(Debug, Clone, Default)]
pub struct Grouping {
    /// Sorted by role, then text.
    pub statements: Vec<Grouped>,
    /// Distinct statements dropped, per reason.
    pub dropped: BTreeMap<Reason, usize>,
    /// Entries that were not planck's own: zero means the run talked to
    /// another database.
    pub sent: usize,
}

/// Groups captured entries by role and text and drops the noise (kept,
/// marked, with `keep_noise`, except planck's own statements, which are
/// never the application's).
pub fn group(
    raw: &[capture::Raw],
    roles: &HashMap<u32, capture::RoleFacts>,
    keep_noise: bool,
) -> Grouping {
    let mut out = Grouping::default();
    let mut groups: BTreeMap<(String, String), Grouped> = BTreeMap::new();
    let mut dropped_keys: HashMap<(String, String), Reason> = HashMap::new();
    for r in raw {
        let Some(query) = &r.query else {
            out.sent += 1;
            continue;
        };
        let facts = roles.get(&r.userid);
        let role = facts
            .map(|f| f.name.clone())
            .unwrap_or_else(|| format!("oid {}", r.userid));
        let key = (role.clone(), queries::text_key(query));
        let reason = classify(query);
        if !reason.is_some_and(Reason::is_planck) {
            out.sent += 1;
        }
        if let Some(reason) = reason
            && (!keep_noise || reason.is_planck())
        {
            dropped_keys.insert(key, reason);
            continue;
        }
        let g = groups.entry(key).or_insert_with(|| Grouped {
            bypass_rls: facts.is_some_and(|f| f.bypasses_rls(&noise::identifiers(query))),
            role,
            query: query.trim().to_string(),
            queryid: r.queryid,
            calls: 0,
            rows: 0,
            total_ms: 0.0,
            noise: reason,
            contexts: Vec::new(),
        });
        for c in &r.contexts {
            if !g.contexts.contains(c) {
                g.contexts.push(*c);
                g.contexts.sort();
            }
        }
        g.calls += r.calls;
        g.rows += r.rows;
        g.total_ms += r.total_ms;
    }
    for reason in dropped_keys.into_values() {
        *out.dropped.entry(reason).or_default() += 1;
    }
    out.statements = groups.into_values().collect();
    out
}

/// What pg_stat_statements holds for a database, the noise left out.
#[derive(Debug, Clone, Default)]
pub struct Current {
    /// One per (role, text), most called first.
    pub statements: Vec<Statement>,
    /// Distinct statements dropped, per reason.
    pub dropped: BTreeMap<Reason, usize>,
}

/// The application's statements pg_stat_statements holds now for the
/// database `client` is connected to, for `explain --from-stats`: read
/// only (the extension is never created), planck's session untracked,
/// roles and the RLS-bypass flag resolved as `record` does, noise dropped
/// with the same rules.
pub async fn current_statements(client: &Client) -> Result<Current> {
    crate::session::untrack(client).await?;
    let Some(schema) = capture::extension_schema(client).await? else {
        return Err(Error::usage_hint(
            "pg_stat_statements is not available in this database",
            "CREATE EXTENSION pg_stat_statements (with shared_preload_libraries), or use --queries",
        ));
    };
    let row = client
        .query_one(
            "SELECT /* planck */ oid, datname::text, current_setting('server_version_num')::int \
             FROM pg_database WHERE datname = current_database()",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the database's oid", e))?;
    let (dbid, database, version): (u32, String, i32) = (row.get(0), row.get(1), row.get(2));
    let sample = match capture::sample_of(client, &quote_ident(&schema), dbid, version).await {
        // 55000: the extension exists but the library is not loaded.
        Err(e) if e.sqlstate() == Some("55000") => {
            return Err(Error::usage_hint(
                "pg_stat_statements is not loaded on this server",
                "add it to shared_preload_libraries and restart, or use --queries",
            ));
        }
        other => other?,
    };
    let raw = capture::delta(None, &sample);
    let mut userids: Vec<u32> = raw.iter().map(|r| r.userid).collect();
    userids.sort_unstable();
    userids.dedup();
    let roles = capture::roles(client, &userids).await?;
    let grouping = group(&raw, &roles, false);
    let mut out = Current {
        statements: grouping
            .statements
            .into_iter()
            .map(|g| Statement {
                contexts: g.file_contexts(),
                id: queries::identity(&g.query, Some(&g.role)),
                query: g.query,
                role: Some(g.role),
                bypass_rls: Some(g.bypass_rls),
                database: Some(database.clone()),
                queryid: Some(g.queryid),
                calls: Some(g.calls),
                rows: Some(g.rows),
                ..Default::default()
            })
            .collect(),
        dropped: grouping.dropped,
    };
    out.statements
        .sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.query.cmp(&b.query)));
    Ok(out)
}
