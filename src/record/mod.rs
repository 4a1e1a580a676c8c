//! Recording: what the application really sends, from pg_stat_statements,
//! merged into the queries file.
//!
//! The steps, in order, so that a mistake costs as little as possible: read
//! the existing queries file (a syntax error stops us before any work), check
//! the output can be written and the command exists, check pg_stat_statements
//! (loaded, extension present or creatable, tracking on), reset the target
//! database's counters and take a snapshot, run the command, take a second
//! snapshot, subtract, resolve roles and the RLS-bypass flag, drop the noise
//! ([`crate::stats::noise`]), merge into the file ([`crate::queries::QueryFile::merge`]).
//!
//! The RLS-bypass flag of a statement is true when the role that ran it is a
//! superuser, has BYPASSRLS, or has the privileges of the owner of a table
//! with row-level security (enabled, not forced) that the statement names.
//! Tables reached only through views, functions or triggers are not seen.

pub(crate) mod child;
pub(crate) mod databases;
pub(crate) mod options;
pub mod relay;
pub(crate) mod report;
pub(crate) mod transactions;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;
use crate::queries::{self, Merge, MergeStatus, QueryFile, Statement};
use crate::stats::capture;

pub use options::{MAX_TRANSACTIONS, RecordSettings};

pub use crate::stats::Reason;
pub use child::Exit;

/// What the relay saw and what became of it, for the summary.
#[derive(Debug, Clone, Default)]
pub struct RelaySummary {
    pub connections: u64,
    /// Connections whose capture is incomplete (a malformed or unknown message).
    pub incomplete: u64,
    /// Connections the command left open, closed by the relay.
    pub left_open: u64,
    pub transactions: u64,
    /// Autocommit statements.
    pub lone: u64,
    pub shapes_written: usize,
    /// Shapes beyond `--max-transactions`, and their calls.
    pub over_limit: usize,
    pub over_limit_calls: u64,
    /// Distinct relayed texts matched by queryid, by text, not at all.
    pub by_queryid: usize,
    pub by_text: usize,
    pub unmatched: usize,
    /// Distinct relayed texts left out as noise (catalog queries).
    pub noise: usize,
    /// Statements only the relay had (pg_stat_statements evicted them).
    pub relay_only: usize,
    /// The longest transaction: (ms, statements), and the one with the most
    /// statements: (statements, ms).
    pub longest_time: Option<(f64, usize)>,
    pub longest_statements: Option<(usize, f64)>,
    /// Statements (file id, else normalized text) that opened transactions
    /// that stayed open more than 100 ms, and how often.
    pub slow_openers: Vec<(String, u64)>,
    /// The databases the command's connections used, with connection counts.
    pub databases: BTreeMap<String, u64>,
    /// Exact median pause per written transaction id (ms).
    pub think_ms: BTreeMap<String, f64>,
    /// Migrations' transactions (issue 13, 6): in `transactions`, not written.
    pub migration_transactions: u64,
    /// Migrations' autocommit statements (issue 47, 5): in `lone`.
    pub migration_lone: u64,
}

/// How the capture isolated the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Counters of the database reset before the run.
    Reset,
    /// The role may not reset: a snapshot before, subtracted after.
    Snapshot,
    /// No command: what pg_stat_statements holds now.
    Current,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Reset => "reset",
            Mode::Snapshot => "snapshot",
            Mode::Current => "current",
        }
    }
}

/// One statement the run sent and the file now holds.
#[derive(Debug, Clone)]
pub struct Kept {
    /// Its id in the file.
    pub id: String,
    pub queryid: i64,
    pub role: String,
    pub bypass_rls: bool,
    pub calls: u64,
    pub rows: u64,
    pub total_ms: f64,
    pub query: String,
    /// Why it is noise, when kept with `--keep-all`.
    pub noise: Option<Reason>,
    pub status: MergeStatus,
    /// Where it ran, as the file keeps it (empty: as the client sent it).
    pub contexts: Vec<queries::Context>,
    /// Taken from the capture relay: pg_stat_statements no longer had it
    /// (evicted) or keeps it under a text the relay's did not match; no
    /// timings.
    pub from_relay: bool,
}

/// What a recording did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub database: String,
    pub file: PathBuf,
    pub command: Vec<String>,
    pub exit: Option<Exit>,
    pub mode: Mode,
    pub statements: Vec<Kept>,
    /// Distinct statements dropped, per reason.
    pub dropped: BTreeMap<Reason, usize>,
    pub merge: Merge,
    pub warnings: Vec<String>,
    pub created_extension: bool,
    /// `None` when the run was not relayed.
    pub relay: Option<RelaySummary>,
    /// The summary table lists every statement, not only the top ones.
    pub list_all: bool,
    /// The databases whose statements were recorded: the target, then
    /// those created during the run (a test runner's `test_<name>`).
    pub recorded_databases: Vec<String>,
    /// Statements run only by migrations (issue 13, 6), left out of the
    /// file: their texts, in the file's order. With `--keep-all` they are
    /// kept, marked `migration`, and not listed here.
    pub migration_only: Vec<String>,
}

/// Records `opts.command` (or the current contents) on `conn` into `opts.output`.
pub async fn record(conn: &ConnInfo, opts: &RecordSettings, log: Log) -> Result<Outcome> {
    // 1. The file and the command, before touching the database.
    let mut file = if opts.output.exists() {
        QueryFile::load(&opts.output)?
    } else {
        QueryFile::default()
    };
    check_writable(&opts.output)?;
    let program = match opts.command.first() {
        Some(p) => Some(child::resolve_program(
            p,
            opts.path_var.as_deref(),
            &opts.cwd,
        )?),
        None => None,
    };

    // 2. pg_stat_statements.
    let mut tagged = conn.clone();
    tagged.config.application_name("planck record");
    let client = tagged.connect().await?;
    // record's own probes stay out of what it records.
    if crate::session::untrack(&client).await? == crate::session::StatsMode::Tagged {
        log.debug(
            "this role may not set pg_stat_statements.track: record's own statements are tagged /* planck */ and dropped",
        );
    }
    let probe = capture::probe(&client).await?;
    if probe.created_extension {
        log.info(&format!(
            "created the pg_stat_statements extension in database {}",
            probe.database
        ));
    }

    // 3. The run. planck holds no connection to the target meanwhile: a
    // runner may drop and recreate it.
    let run = match &program {
        Some(program) => run_command(conn, &tagged, client, &probe, program, opts, log).await?,
        None => current_contents(client, &probe).await?,
    };
    let Run {
        mode,
        exit,
        before,
        after,
        client,
        mut relayed,
        created,
        created_raw,
        relay_created,
    } = run;
    let recorded = recorded_databases(&probe.database, &created, relay_created);
    let mut raw = capture::delta(before.as_ref(), &after);
    raw.extend(created_raw.into_iter().flat_map(|(_, r)| r));

    // 4. Truth about the capture.
    let mut warnings = capture_warnings(
        &probe,
        exit.as_ref(),
        before.as_ref(),
        &after,
        relayed.is_some(),
        &raw,
    );

    // 5. Roles, RLS, noise, grouping.
    let roles = role_facts(&client, &raw, relayed.as_ref()).await?;
    let crate::stats::Grouping {
        statements: grouped,
        dropped,
        sent,
    } = crate::stats::group(&raw, &roles, opts.keep_all);
    let mut statements: Vec<Kept> = grouped.into_iter().map(kept).collect();
    // The relay saw every statement: what pg_stat_statements evicted (or
    // keeps under a text the relay's does not match) comes from it.
    let recorded_set: BTreeSet<String> = recorded.iter().cloned().collect();
    let (matched, migration_only) = match &mut relayed {
        Some(c) => {
            let (m, only) = match_relay(
                conn,
                &probe,
                &created,
                &recorded_set,
                c,
                &raw,
                &roles,
                &mut statements,
                opts,
                log,
            )
            .await;
            (Some(m), only)
        }
        None => (None, Vec::new()),
    };
    let mut dropped = dropped;
    if !migration_only.is_empty() {
        dropped.insert(Reason::Migration, migration_only.len());
    }
    if statements.is_empty() {
        warnings.push(nothing_recorded(&recorded, sent, relayed.as_ref()));
    }

    // 6. Merge and save.
    let evidence = relay_evidence(relayed.as_ref(), matched.as_ref());
    let captured = file_statements(&statements, &evidence, &probe.database);
    let merge = file.merge(&captured, opts.prune);
    // A re-recording through the relay replaces the whole table.
    if let Some(c) = &relayed {
        file.observed = c.literals.observed();
    }
    let renamed = apply_merge(&mut statements, &merge);
    drop(client);
    let relay = match (relayed, matched) {
        (Some(c), Some(m)) => {
            let summary = relay_summary(&c, m, &renamed, &recorded_set, opts, &mut file, log);
            warnings.extend(relay_warnings(&c, &summary));
            Some(summary)
        }
        _ => None,
    };
    file.save(&opts.output)?;
    Ok(Outcome {
        database: probe.database,
        file: opts.output.clone(),
        command: opts.command.clone(),
        exit,
        mode,
        statements,
        dropped,
        merge,
        warnings,
        created_extension: probe.created_extension,
        relay,
        list_all: opts.list_all,
        recorded_databases: recorded,
        migration_only,
    })
}

/// The databases whose statements were recorded: the target, then those
/// the run created (by pg_stat_statements' entries, then the relay's).
fn recorded_databases(
    target: &str,
    created: &[databases::Created],
    relay_created: Vec<String>,
) -> Vec<String> {
    let mut recorded: Vec<String> = vec![target.to_string()];
    for label in created
        .iter()
        .map(databases::Created::label)
        .chain(relay_created)
    {
        if !recorded.contains(&label) {
            recorded.push(label);
        }
    }
    recorded
}

/// Matches what the relay saw to the kept statements (adding those only
/// it saw) and leaves out the migrations' statements: the matching, and
/// the texts left out.
#[allow(clippy::too_many_arguments)]
async fn match_relay(
    conn: &ConnInfo,
    probe: &capture::Probe,
    created: &[databases::Created],
    recorded_set: &BTreeSet<String>,
    c: &mut relay::Capture,
    raw: &[capture::Raw],
    roles: &HashMap<u32, capture::RoleFacts>,
    statements: &mut Vec<Kept>,
    opts: &RecordSettings,
    log: Log,
) -> (Matched, Vec<String>) {
    let existing: BTreeSet<String> = std::iter::once(probe.database.clone())
        .chain(
            created
                .iter()
                .filter(|d| d.exists)
                .filter_map(|d| d.name.clone()),
        )
        .collect();
    let mut m = relay_statements(
        conn,
        recorded_set,
        &existing,
        c,
        raw,
        roles,
        statements,
        opts,
        log,
    )
    .await;
    let relay_only_before = statements.iter().filter(|k| k.from_relay).count();
    let migration_only = leave_out_migrations(c, &mut m.matching, statements, opts.keep_all);
    // Those left out are not counted as the relay's own either.
    m.relay_only -= relay_only_before - statements.iter().filter(|k| k.from_relay).count();
    (m, migration_only)
}

/// The relay's summary once the file is merged: the matching follows the
/// merge's renames, and the transactions seen are written to `file`.
fn relay_summary(
    c: &relay::Capture,
    mut m: Matched,
    renamed: &HashMap<String, String>,
    recorded_set: &BTreeSet<String>,
    opts: &RecordSettings,
    file: &mut QueryFile,
    log: Log,
) -> RelaySummary {
    for id in m.matching.ids.iter_mut().flatten() {
        if let Some(new) = renamed.get(id) {
            *id = new.clone();
        }
    }
    let summary = relayed_transactions(c, recorded_set, &m, opts, file);
    if summary.left_open > 0 {
        log.info(&format!(
            "note: the command left {} connection(s) open (a pool?): the relay closed them after it exited",
            summary.left_open
        ));
    }
    summary
}

/// What the run left to record: how the capture was taken, the command's
/// exit, the samples before and after, a fresh connection, what the relay
/// saw, and the databases the run created (with their entries).
struct Run {
    mode: Mode,
    exit: Option<Exit>,
    before: Option<capture::Sample>,
    after: capture::Sample,
    client: tokio_postgres::Client,
    relayed: Option<relay::Capture>,
    created: Vec<databases::Created>,
    created_raw: Vec<(u32, Vec<capture::Raw>)>,
    relay_created: Vec<String>,
}

/// Without a command: what pg_stat_statements holds now.
async fn current_contents(client: tokio_postgres::Client, probe: &capture::Probe) -> Result<Run> {
    let after = capture::sample(&client, probe).await?;
    Ok(Run {
        mode: Mode::Current,
        exit: None,
        before: None,
        after,
        client,
        relayed: None,
        created: Vec::new(),
        created_raw: Vec::new(),
        relay_created: Vec::new(),
    })
}

/// Gives the kept statements the ids and statuses the merge gave them:
/// the ids renamed, old to new.
fn apply_merge(statements: &mut [Kept], merge: &Merge) -> HashMap<String, String> {
    let mut renamed: HashMap<String, String> = HashMap::new();
    for (k, (id, status)) in statements.iter_mut().zip(&merge.outcomes) {
        renamed.insert(k.id.clone(), id.clone());
        k.id = id.clone();
        k.status = *status;
    }
    renamed
}

/// Runs the command (through the relay unless `--no-relay`) between two
/// samples of pg_stat_statements, holding no connection meanwhile.
async fn run_command(
    conn: &ConnInfo,
    tagged: &ConnInfo,
    client: tokio_postgres::Client,
    probe: &capture::Probe,
    program: &Path,
    opts: &RecordSettings,
    log: Log,
) -> Result<Run> {
    let mode = if capture::reset(&client, probe).await? {
        Mode::Reset
    } else {
        log.debug(&format!(
            "role {} may not reset pg_stat_statements: subtracting a snapshot instead",
            probe.current_user
        ));
        Mode::Snapshot
    };
    let before = capture::sample(&client, probe).await?;
    let known = databases::known(&client, &probe.schema).await?;
    drop(client);
    let relay = if opts.relay {
        Some(relay::Relay::start(conn, log).await?)
    } else {
        None
    };
    let (env, remove) = match &relay {
        Some(r) => (r.env(conn), relay::ENV_REMOVED),
        None => (child::env_for(conn), &[][..]),
    };
    log.info(&format!(
        "recording `{}` against {}{}",
        child::shell_words(&opts.command),
        conn.display(),
        if relay.is_some() {
            " (through planck's capture relay)"
        } else {
            ""
        }
    ));
    let exit = child::run(program, &opts.command[1..], &env, remove, &opts.cwd, log).await;
    let mut relayed = None;
    if let Some(r) = relay {
        relayed = Some(r.finish().await?);
    }
    let exit = exit?;
    let client = tagged.connect().await?;
    crate::session::untrack(&client).await?;
    let after = capture::sample(&client, probe).await?;
    let (created, created_raw, relay_created) =
        created_databases(&client, probe, &known, relayed.as_ref()).await?;
    Ok(Run {
        mode,
        exit: Some(exit),
        before: Some(before),
        after,
        client,
        relayed,
        created,
        created_raw,
        relay_created,
    })
}

/// The databases the run created (a test runner's `test_<name>`), dropped
/// or not: all their entries are the run's. With the relay, only those the
/// command's connections used, named from it when dropped; and the
/// databases the relay saw used that did not exist before the run.
#[allow(clippy::type_complexity)]
async fn created_databases(
    client: &tokio_postgres::Client,
    probe: &capture::Probe,
    known: &databases::Known,
    relayed: Option<&relay::Capture>,
) -> Result<(
    Vec<databases::Created>,
    Vec<(u32, Vec<capture::Raw>)>,
    Vec<String>,
)> {
    let mut created_raw = Vec::new();
    let mut relay_created: Vec<String> = Vec::new();
    let mut created = databases::created(client, &probe.schema, known).await?;
    let mut entry_keys = HashMap::new();
    for c in &created {
        let s = capture::sample_of(client, &probe.schema, c.oid, probe.version).await?;
        let raw = capture::delta(None, &s);
        entry_keys.insert(
            c.oid,
            databases::keys(raw.iter().filter_map(|r| r.query.as_deref())),
        );
        created_raw.push((c.oid, raw));
    }
    if let Some(c) = relayed {
        // A database the relayed connections used that did not exist
        // before the run: created by it (and maybe dropped already).
        let mut texts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for t in c
            .texts
            .iter()
            .filter(|t| !known.names.contains(&t.database))
        {
            texts
                .entry(t.database.clone())
                .or_default()
                .insert(queries::text_key(&t.text));
        }
        databases::name_dropped(&mut created, &entry_keys, &texts);
        // Only what the command's connections used: on a shared
        // server, other clients create databases meanwhile too.
        created.retain(|d| {
            d.name
                .as_ref()
                .is_some_and(|n| texts.contains_key(n) || c.databases.contains_key(n))
        });
        let kept: BTreeSet<u32> = created.iter().map(|d| d.oid).collect();
        created_raw.retain(|(oid, _)| kept.contains(oid));
        relay_created = texts.into_keys().collect();
    }
    Ok((created, created_raw, relay_created))
}

/// The warnings on how complete the capture is: a failed command, evicted
/// entries, `track = top`, hidden roles, lost and truncated texts.
fn capture_warnings(
    probe: &capture::Probe,
    exit: Option<&Exit>,
    before: Option<&capture::Sample>,
    after: &capture::Sample,
    relayed: bool,
    raw: &[capture::Raw],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(exit) = exit
        && !exit.success()
    {
        warnings.push(format!(
            "the command {}; the statements it sent before that are recorded, but the run may be partial",
            exit.describe()
        ));
    }
    if let (Some(b), Some(a)) = (before.and_then(|b| b.dealloc), after.dealloc)
        && a > b
    {
        warnings.push(if relayed {
            format!(
                "pg_stat_statements evicted entries {} time(s) during the run: the statements were taken from the capture relay, so none is missing, but timings of the evicted ones are partial; raise pg_stat_statements.max (now {})",
                a - b,
                probe.max.as_deref().unwrap_or("unknown")
            )
        } else {
            format!(
                "pg_stat_statements evicted entries {} time(s) during the run, so some statements may be missing; raise pg_stat_statements.max (now {}), or record through the relay (without --no-relay)",
                a - b,
                probe.max.as_deref().unwrap_or("unknown")
            )
        });
    }
    if probe.track == "top" {
        warnings.push(
            "pg_stat_statements.track is `top`: statements run inside functions and procedures were not recorded; set it to `all`".into(),
        );
    }
    if after.invisible > 0 {
        warnings.push(format!(
            "{} statement(s) of other roles are hidden from role {}: grant it pg_read_all_stats to record them",
            after.invisible, probe.current_user
        ));
    }
    let lost = raw.iter().filter(|r| r.query.is_none()).count();
    if lost > 0 {
        warnings.push(format!(
            "pg_stat_statements lost the text of {lost} statement(s) (its query-text file was discarded); they are not recorded"
        ));
    }
    if let Some(size) = probe.query_size {
        let cut = raw
            .iter()
            .filter_map(|r| r.query.as_ref())
            .filter(|q| q.len() as i64 == size - 1)
            .count();
        if cut > 0 {
            warnings.push(format!(
                "{cut} statement text(s) are exactly track_activity_query_size - 1 ({}) bytes long and may be truncated; raise track_activity_query_size",
                size - 1
            ));
        }
    }
    warnings
}

/// The facts (name, RLS bypass) of every role that ran a captured
/// statement, pg_stat_statements' and the relay's.
async fn role_facts(
    client: &tokio_postgres::Client,
    raw: &[capture::Raw],
    relayed: Option<&relay::Capture>,
) -> Result<HashMap<u32, capture::RoleFacts>> {
    let mut userids: Vec<u32> = raw.iter().map(|r| r.userid).collect();
    if let Some(c) = relayed {
        let names: BTreeSet<&str> = c.texts.iter().map(|t| t.role.as_str()).collect();
        userids.extend(role_oids(client, &names).await?);
    }
    userids.sort_unstable();
    userids.dedup();
    capture::roles(client, &userids).await
}

/// A grouped statement as kept, added to the file unless the merge says else.
fn kept(g: crate::stats::Grouped) -> Kept {
    Kept {
        contexts: g.file_contexts(),
        id: queries::identity(&g.query, Some(&g.role)),
        queryid: g.queryid,
        role: g.role,
        bypass_rls: g.bypass_rls,
        calls: g.calls,
        rows: g.rows,
        total_ms: g.total_ms,
        query: g.query,
        noise: g.noise,
        status: MergeStatus::Added,
        from_relay: false,
    }
}

/// The warning when nothing is left to record: the run sent nothing (was
/// the connection string used?), or only noise.
fn nothing_recorded(recorded: &[String], sent: usize, relayed: Option<&relay::Capture>) -> String {
    let dbs = match recorded {
        [one] => format!("database {one}"),
        all => format!("databases {}", all.join(", ")),
    };
    if sent == 0 && relayed.is_none_or(|c| c.texts.is_empty()) {
        format!(
            "the run produced no statements at all in {dbs} (the target, and those created during the run): did the command use DATABASE_URL (or PG* variables)?"
        )
    } else {
        format!("every statement the run sent in {dbs} was noise: nothing to record")
    }
}

/// The kept statements as the file holds them, with the relay's evidence.
fn file_statements(
    statements: &[Kept],
    evidence: &HashMap<String, relay::evidence::Evidence>,
    database: &str,
) -> Vec<Statement> {
    statements
        .iter()
        .map(|k| Statement {
            id: k.id.clone(),
            query: k.query.clone(),
            role: Some(k.role.clone()),
            bypass_rls: Some(k.bypass_rls),
            database: Some(database.to_string()),
            // Not in the file: it changes with every new database (see text_key).
            queryid: None,
            calls: Some(k.calls),
            rows: Some(k.rows),
            contexts: k.contexts.clone(),
            sent: evidence.get(&k.id).map(|e| e.sent()),
            shapes: evidence.get(&k.id).map(|e| e.shapes()).unwrap_or_default(),
            ..Default::default()
        })
        .collect()
}

/// Leaves out the statements a migration tool ran (issue 13, 6; issue 47,
/// 5): those every call of which the relay saw as a migration's, inside a
/// migration's transaction (one with DDL or a write to a migration tool's
/// bookkeeping table: see `relay::text::migration_work`), or on a session
/// before it recorded a migration in that table (`relay::session`'s build
/// window: Django's `atomic = False` migrations, Rails'
/// `disable_ddl_transaction!`, files golang-migrate or Flyway run without a
/// transaction). A backfill (`UPDATE t SET c = $1 WHERE c IS NULL`) or a
/// data fix run there is no workload, and judging it on a seeded copy
/// reports a scan the application never runs. A statement also seen
/// elsewhere (the application's own, which a data migration happened to
/// run too), or not seen by the relay, is kept.
///
/// Left out rather than kept and marked: the file is what `explain`,
/// `seed` and `replay` read, and each would have to skip them; the summary
/// lists them instead (`--keep-all` keeps them, marked `migration`).
/// Returns the texts left out.
fn leave_out_migrations(
    c: &relay::Capture,
    matching: &mut transactions::Matching,
    statements: &mut Vec<Kept>,
    keep_all: bool,
) -> Vec<String> {
    let mut only: HashMap<String, bool> = HashMap::new();
    for (i, id) in matching.ids.iter().enumerate() {
        if let Some(id) = id {
            *only.entry(id.clone()).or_insert(true) &= c.migration_only(i as u32);
        }
    }
    let is_out = |id: &str| only.get(id).copied().unwrap_or(false);
    if keep_all {
        for k in statements.iter_mut().filter(|k| is_out(&k.id)) {
            k.noise.get_or_insert(Reason::Migration);
        }
        return Vec::new();
    }
    let mut out = Vec::new();
    statements.retain(|k| {
        let keep = k.noise.is_some() || !is_out(&k.id);
        if !keep {
            out.push(k.query.clone());
        }
        keep
    });
    for id in matching.ids.iter_mut() {
        if id.as_deref().is_some_and(is_out) {
            *id = None;
        }
    }
    out
}

/// The oids of the roles the relayed connections ran as.
async fn role_oids(client: &tokio_postgres::Client, names: &BTreeSet<&str>) -> Result<Vec<u32>> {
    let names: Vec<&str> = names.iter().copied().collect();
    let rows = client
        .query(
            "SELECT /* planck */ oid FROM pg_roles WHERE rolname = ANY($1)",
            &[&names],
        )
        .await
        .map_err(|e| Error::db("resolving the roles of the relayed connections", e))?;
    Ok(rows.into_iter().map(|r| r.get(0)).collect())
}

/// What the relay's texts became: the file's statement per text, how each
/// was matched.
struct Matched {
    matching: transactions::Matching,
    relay_only: usize,
}

/// Matches what the relay saw in the recorded databases to the captured
/// statements (by queryid where the database still exists, else by text),
/// takes the calls from the relay (it saw each one), and adds, as
/// statements of their own, the texts pg_stat_statements no longer had.
#[allow(clippy::too_many_arguments)]
async fn relay_statements(
    conn: &ConnInfo,
    recorded: &BTreeSet<String>,
    existing: &BTreeSet<String>,
    c: &mut relay::Capture,
    raw: &[capture::Raw],
    roles: &HashMap<u32, capture::RoleFacts>,
    statements: &mut Vec<Kept>,
    opts: &RecordSettings,
    log: Log,
) -> Matched {
    let mut qids = HashMap::new();
    let present: BTreeSet<&str> = c.texts.iter().map(|t| t.database.as_str()).collect();
    for db in existing.iter().filter(|d| present.contains(d.as_str())) {
        qids.extend(transactions::queryids(conn, db, c, log).await);
    }
    // The raw texts were needed for EXPLAIN only.
    c.forget_samples();
    let by_text: HashMap<(String, String), String> = statements
        .iter()
        .map(|k| ((k.role.clone(), queries::text_key(&k.query)), k.id.clone()))
        .collect();
    let mut by_queryid: HashMap<(String, i64), String> = HashMap::new();
    for r in raw {
        let (Some(q), Some(role)) = (&r.query, roles.get(&r.userid)) else {
            continue;
        };
        if let Some(id) = by_text.get(&(role.name.clone(), queries::text_key(q))) {
            by_queryid.insert((role.name.clone(), r.queryid), id.clone());
        }
    }
    let mut matching = transactions::match_texts(c, recorded, &qids, &by_queryid, &by_text);
    // Calls: the relay's where it saw more (pg_stat_statements also counts
    // calls inside functions, which the relay does not see).
    let mut relay_calls: HashMap<String, u64> = HashMap::new();
    for (t, id) in c.texts.iter().zip(&matching.ids) {
        if let Some(id) = id {
            *relay_calls.entry(id.clone()).or_default() += t.calls;
        }
    }
    // Last, a looser text (NULL and booleans as parameters).
    let loose: HashMap<(String, String), String> = statements
        .iter()
        .map(|k| {
            (
                (k.role.clone(), databases::loose_key(&k.query)),
                k.id.clone(),
            )
        })
        .collect();
    for (i, t) in c.texts.iter().enumerate() {
        if matching.ids[i].is_some() || !recorded.contains(&t.database) {
            continue;
        }
        if let Some(id) = loose.get(&(t.role.clone(), databases::loose_key(&t.text))) {
            matching.ids[i] = Some(id.clone());
            matching.by_text += 1;
            *relay_calls.entry(id.clone()).or_default() += t.calls;
        }
    }
    for k in statements.iter_mut() {
        if let Some(n) = relay_calls.get(&k.id) {
            k.calls = k.calls.max(*n);
        }
    }
    let by_name: HashMap<&str, &capture::RoleFacts> =
        roles.values().map(|f| (f.name.as_str(), f)).collect();
    let mut added: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, t) in c.texts.iter().enumerate() {
        if matching.ids[i].is_some() || !recorded.contains(&t.database) {
            continue;
        }
        let key = (t.role.clone(), queries::text_key(&t.text));
        if let Some(&at) = added.get(&key) {
            statements[at].calls += t.calls;
            matching.ids[i] = Some(statements[at].id.clone());
            continue;
        }
        // Noise stays out (and uncounted: `dropped` counts
        // pg_stat_statements' entries).
        let reason = crate::stats::classify(&t.text);
        if reason.is_some_and(|r| !opts.keep_all || r.is_planck()) {
            matching.noise += 1;
            continue;
        }
        let id = queries::identity(&t.text, Some(&t.role));
        matching.ids[i] = Some(id.clone());
        added.insert(key, statements.len());
        statements.push(Kept {
            id,
            queryid: qids.get(&i).copied().unwrap_or(0),
            role: t.role.clone(),
            bypass_rls: by_name
                .get(t.role.as_str())
                .is_some_and(|f| f.bypasses_rls(&crate::stats::noise::identifiers(&t.text))),
            calls: t.calls,
            rows: 0,
            total_ms: 0.0,
            query: t.text.trim().to_string(),
            noise: reason,
            status: MergeStatus::Added,
            contexts: Vec::new(),
            from_relay: true,
        });
    }
    // What is neither in the file nor left out as noise (none, as texts
    // pg_stat_statements lacks are added above).
    matching.unmatched = c
        .texts
        .iter()
        .zip(&matching.ids)
        .filter(|(t, id)| id.is_none() && recorded.contains(&t.database))
        .count()
        - matching.noise;
    statements.sort_by(|a, b| {
        (a.role.as_str(), queries::text_key(&a.query))
            .cmp(&(b.role.as_str(), queries::text_key(&b.query)))
    });
    Matched {
        relay_only: added.len(),
        matching,
    }
}

/// The relay's evidence per statement of the file (several texts can
/// match one statement).
fn relay_evidence(
    c: Option<&relay::Capture>,
    m: Option<&Matched>,
) -> HashMap<String, relay::evidence::Evidence> {
    let mut out: HashMap<String, relay::evidence::Evidence> = HashMap::new();
    let (Some(c), Some(m)) = (c, m) else {
        return out;
    };
    for (i, id) in m.matching.ids.iter().enumerate() {
        if let (Some(id), Some(ev)) = (id, c.evidence.get(&(i as u32))) {
            out.entry(id.clone()).or_default().absorb(ev);
        }
    }
    out
}

/// Puts the relay's transactions in the file (replacing those of the last
/// recording), with the file's ids.
fn relayed_transactions(
    c: &relay::Capture,
    recorded: &BTreeSet<String>,
    m: &Matched,
    opts: &RecordSettings,
    file: &mut QueryFile,
) -> RelaySummary {
    let matching = &m.matching;
    let written = transactions::build(c, recorded, matching, opts.max_transactions);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let mut slow: Vec<(String, u64)> = c
        .slow_openers
        .iter()
        .map(|(i, n)| {
            let name = matching
                .ids
                .get(*i as usize)
                .cloned()
                .flatten()
                .unwrap_or_else(|| c.texts[*i as usize].text.clone());
            (name, *n)
        })
        .collect();
    slow.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    slow.truncate(5);
    let summary = RelaySummary {
        connections: c.connections,
        incomplete: c.incomplete,
        left_open: c.left_open,
        transactions: c.transactions,
        lone: c.lone,
        shapes_written: written.transactions.len(),
        over_limit: written.over_limit,
        over_limit_calls: written.over_limit_calls,
        by_queryid: matching.by_queryid,
        by_text: matching.by_text,
        unmatched: matching.unmatched,
        noise: matching.noise,
        relay_only: m.relay_only,
        longest_time: c.longest_time.map(|(d, n)| (ms(d), n)),
        longest_statements: c.longest_statements.map(|(n, d)| (n, ms(d))),
        slow_openers: slow,
        databases: c.databases.clone(),
        think_ms: written.think_ms.clone(),
        migration_transactions: c.migration_transactions,
        migration_lone: c.migration_lone,
    };
    file.replace_recorded_transactions(written.transactions);
    summary
}

/// What the user must hear about the relay.
fn relay_warnings(c: &relay::Capture, s: &RelaySummary) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(n) = c.refused.get(relay::REFUSED_TLS) {
        w.push(format!(
            "{n} connection(s) asked the capture relay for TLS and left when it said no: the client requires TLS (sslmode=require or stricter, or channel_binding=require); \
             let it use the sslmode=disable planck gives it in DATABASE_URL and PGSSLMODE, or record with --no-relay"
        ));
    }
    if let Some(n) = c.refused.get(relay::REFUSED_DIRECT_TLS) {
        w.push(format!(
            "{n} connection(s) began TLS directly (sslnegotiation=direct), which the capture relay cannot carry: use sslnegotiation=postgres with sslmode=disable, or record with --no-relay"
        ));
    }
    // Issue 31: a client on another protocol, or a broken startup packet.
    for (reason, n) in &c.startup_reasons {
        w.push(format!(
            "{n} connection(s) were refused by the capture relay: the client sent {reason}; it was answered with SQLSTATE 08P01; record with --no-relay to let it reach the server directly"
        ));
    }
    let unnamed = c.startups_refused - c.startup_reasons.values().sum::<u64>();
    if unnamed > 0 {
        w.push(format!(
            "{unnamed} more connection(s) were refused by the capture relay for other startup packets it cannot read"
        ));
    }
    if s.incomplete > 0 {
        w.push(format!(
            "{} relayed connection(s) sent messages the relay could not read: their bytes were forwarded unchanged, but their transactions may be missing",
            s.incomplete
        ));
    }
    w
}

/// Fails early when the queries file cannot be written: a test suite may
/// run for minutes before the capture.
fn check_writable(path: &Path) -> Result<()> {
    let err = |source| Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    if path.is_dir() {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // A file where a folder should be: say so, rather than "File exists".
    if let Some(blocker) = dir.ancestors().find(|a| a.exists())
        && !blocker.is_dir()
    {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is a file, not a directory", blocker.display()),
        )));
    }
    std::fs::create_dir_all(&dir).map_err(err)?;
    let probe = dir.join(format!(
        ".{}.planck-probe",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    std::fs::write(&probe, b"").map_err(err)?;
    let _ = std::fs::remove_file(&probe);
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(err)?;
    }
    Ok(())
}
