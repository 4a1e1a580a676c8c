//! `planck check`: the pre-merge gate. Glue over the domains, as `planck
//! demo` is: on databases of its own (`<prefix>_head`, with `--base` also
//! `<prefix>_base` and `<prefix>_measure`) on the configured server or the
//! managed cluster, it migrates, seeds at the CI scale, explains the
//! recorded statements against the committed baseline, and exits 0 or 1 by
//! the gate (`[check] fail_on`). Every step prints one line with its duration.
//!
//! With `--base REF` the base is `git merge-base HEAD REF`, its migrations
//! read from a temporary `git worktree` (the user's checkout is never
//! touched). The base database is migrated, seeded and analyzed once; the
//! head database is a `TEMPLATE` copy of it (the same rows and the same
//! statistics) with only head's new migration files applied and the tables
//! they touched re-analyzed, so a plan that differs between the two differs
//! because of the change. Both are explained and diffed ([`crate::wire::diff`]),
//! and head's new files are run once more, statement by statement, on a
//! further copy while `pg_locks` is sampled ([`crate::migrate::measure`]).
//!
//! With `--replay` the recorded workload is replayed on a short ladder on
//! each side once both are explained (every unit rolled back); `--slo` gates
//! on the head's. Ctrl-C, SIGTERM and SIGHUP abandon the step under way; the
//! check databases are dropped and the base worktree removed before planck
//! exits with 128 + the signal's number.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::explain::report as explain_report;
use crate::migrate::{self, Migration};
use crate::settings::Settings;
pub use crate::settings::check::CheckArgs;
use crate::settings::check::{CheckSettings, Gate, ReplayPlan};
use crate::settings::explain::{ExplainArgs, ExplainSettings};
use crate::settings::replay::{ReplayArgs, ReplaySettings};
use crate::settings::seed::{SeedArgs, SeedSettings};
use crate::wire::check::{
    FORMAT_VERSION, JsonCheck, JsonGate, JsonGateFailure, JsonLostIndex, JsonMigrationStatement,
    JsonObjectChange,
};
use crate::wire::diff::JsonDiff;
use crate::wire::explain::JsonReport;
use crate::wire::replay::Report as ReplayReport;

pub async fn run(args: CheckArgs, settings: &Settings) -> Result<i32> {
    let cs = CheckSettings::resolve(&args, settings)?;
    // Caught from the start: a stop signal ends the run by the cleanup
    // below, never with the check databases or the worktree left behind.
    let signals = crate::signal::Signals::install()?;
    if settings.config_path.is_none() {
        settings
            .info("no planck.toml: check runs on the defaults (`planck init` writes them out):");
        for d in &cs.described {
            settings.info(&format!("  [check] {d}"));
        }
    }
    // A bad --base fails before any database work.
    let base_tree = match &cs.base {
        Some(r) => {
            let t = Instant::now();
            let tree = BaseTree::add(&settings.project_dir, r, &settings.config.paths.migrations)?;
            step(
                settings,
                t,
                &format!(
                    "base: merge base of HEAD and {r} is {}",
                    &tree.commit[..tree.commit.len().min(12)]
                ),
            );
            Some(tree)
        }
        None => None,
    };
    let t = Instant::now();
    let server = settings.conn().await?;
    step(settings, t, &format!("server: {}", server.display()));
    let mut check = Check {
        settings,
        cs,
        server,
        created: Vec::new(),
    };
    let result = tokio::select! {
        r = check.run(base_tree.as_ref()) => r,
        s = signals.wait() => Err(crate::signal::interrupted(s, "")),
    };
    let dropped = check.cleanup().await;
    let had_tree = base_tree.is_some();
    drop(base_tree);
    if let Err(Error::Interrupted { .. }) = &result
        && let Some(s) = crate::signal::received()
    {
        let mut left = Vec::new();
        if !dropped.is_empty() {
            left.push(format!(
                "{} {}",
                if check.cs.keep { "kept" } else { "dropped" },
                dropped.join(", ")
            ));
        }
        if had_tree {
            left.push("removed the base worktree".to_string());
        }
        if left.is_empty() {
            left.push("nothing was left to clean up".to_string());
        }
        return Err(crate::signal::interrupted(
            s,
            &format!("check stopped; {}", left.join("; ")),
        ));
    }
    drop(signals);
    let result = result?;
    write_json(&check.cs, &result)?;
    write_reports(&check.cs, &result, settings)?;
    print_verdict(settings, &result);
    Ok(if result.gate.passed { 0 } else { 1 })
}

/// The reports other than `--json`, from the check's result: `planck
/// report`'s renderers over the head's explain report and the diff.
fn write_reports(cs: &CheckSettings, result: &JsonCheck, settings: &Settings) -> Result<()> {
    let inputs = crate::report::Inputs {
        explain: result.head.clone(),
        replay: result.replay.clone(),
        diff: result.diff.clone(),
        base_label: result.base_ref.clone(),
        source_root: Some(crate::findings::source::root_of(&settings.project_dir)),
    };
    type Render = fn(&crate::report::Inputs) -> String;
    if let Some(path) = &cs.outputs.markdown {
        let text = crate::report::markdown_with_gate(&inputs, &result.gate);
        std::fs::write(path, text).map_err(|source| Error::WriteFile {
            path: path.clone(),
            source,
        })?;
    }
    if let Some(path) = &cs.outputs.junit {
        let text = crate::report::junit_with_gate(&inputs, &result.gate);
        std::fs::write(path, text).map_err(|source| Error::WriteFile {
            path: path.clone(),
            source,
        })?;
    }
    if let Some(path) = &cs.outputs.sarif {
        let text = crate::report::sarif_with_lost(&inputs, &result.lost_indexes);
        std::fs::write(path, text).map_err(|source| Error::WriteFile {
            path: path.clone(),
            source,
        })?;
    }
    let outputs: [(&Option<PathBuf>, Render); 2] = [
        (&cs.outputs.gitlab, crate::report::gitlab),
        (&cs.outputs.html, crate::report::html),
    ];
    for (path, render) in outputs {
        if let Some(path) = path {
            std::fs::write(path, render(&inputs)).map_err(|source| Error::WriteFile {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

fn write_json(cs: &CheckSettings, result: &JsonCheck) -> Result<()> {
    let Some(path) = &cs.outputs.json else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(result)
        .map_err(|e| Error::internal(format!("serializing the check result: {e}")))?;
    std::fs::write(path, text + "\n").map_err(|source| Error::WriteFile {
        path: path.clone(),
        source,
    })
}

/// One line per step: what it did and how long it took.
fn step(settings: &Settings, started: Instant, what: &str) {
    settings.info(&format!(
        "{what} ({:.1} s)",
        started.elapsed().as_secs_f64()
    ));
}

fn print_verdict(settings: &Settings, r: &JsonCheck) {
    if r.gate.passed {
        settings.info(&format!(
            "check passed (fail_on = [{}])",
            r.gate.fail_on.join(", ")
        ));
        return;
    }
    settings.warn(&format!(
        "check failed: {} reason(s) (fail_on = [{}])",
        r.gate.failures.len(),
        r.gate.fail_on.join(", ")
    ));
    for f in &r.gate.failures {
        let at = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" ({file}:{line})"),
            _ => String::new(),
        };
        settings.warn(&format!("  {}: {}{at}", f.gate, f.message));
    }
}

struct Check<'a> {
    settings: &'a Settings,
    cs: CheckSettings,
    /// The configured database (or the managed cluster's): CREATE and DROP
    /// DATABASE are sent through it; nothing else touches it.
    server: ConnInfo,
    /// The databases this run created, dropped at the end unless --keep.
    created: Vec<String>,
}

/// What one side's build left: its database, explained.
struct Side {
    report: JsonReport,
    text_report: explain_report::Report,
}

impl Check<'_> {
    /// The domains' own progress lines are shown with --verbose only: check
    /// prints one line per step (their warnings always show).
    fn log(&self) -> crate::output::Log {
        crate::output::Log {
            quiet: !self.settings.verbose,
            verbose: self.settings.verbose,
        }
    }

    fn db_name(&self, side: &str) -> String {
        format!("{}_{side}", self.cs.prefix)
    }

    async fn run(&mut self, base: Option<&BaseTree>) -> Result<JsonCheck> {
        let head_dir = self.settings.migrations_dir();
        let mut notes = Vec::new();
        let mut objects = Vec::new();
        let mut measured = Vec::new();
        let head_name = self.db_name("head");
        let (base_side, base_error, head_db) = match base {
            None => {
                let head = self.build_head(&head_name, &head_dir, &mut objects).await?;
                (None, None, head)
            }
            Some(tree) => {
                let base_db = self.fresh(&self.db_name("base")).await?;
                let built = self
                    .migrate(&base_db, &tree.project_dir, &tree.migrations_dir)
                    .await;
                match built {
                    Err(e) => {
                        let message = format!("the base's migrations failed: {e}");
                        self.settings.warn(&format!(
                            "{message}; the head side still runs, without a diff"
                        ));
                        let head = self.build_head(&head_name, &head_dir, &mut objects).await?;
                        (None, Some(message), head)
                    }
                    Ok(_) => {
                        self.seed(&base_db).await?;
                        let base_side = self.explain(&base_db, "base").await?;
                        let plan = new_files(&tree.migrations_dir, &head_dir)?;
                        let head = match &plan {
                            Incremental::Rebuild(changed) => {
                                let note = format!(
                                    "{changed} changed after the base applied it: head is rebuilt from scratch \
                                     (its rows and statistics are not the base's)"
                                );
                                self.settings.warn(&note);
                                notes.push(note);
                                self.build_head(&head_name, &head_dir, &mut objects).await?
                            }
                            Incremental::New(files) => {
                                if self.cs.migrate.is_none() && !files.is_empty() {
                                    measured = self.measure(&base_db, files).await?;
                                }
                                let head = self.copy(&base_db, &head_name).await?;
                                let before = table_shapes(&head).await?;
                                if let Some(o) = self
                                    .migrate(&head, &self.settings.project_dir, &head_dir)
                                    .await?
                                {
                                    objects = o;
                                }
                                self.reanalyze(&head, &before, &objects).await?;
                                head
                            }
                        };
                        (Some(base_side), None, head)
                    }
                }
            }
        };
        let mut head_side = self.explain(&head_db, "head").await?;
        // The migration object map of head (planck migrate only): where each
        // index a plan lost had been created.
        let map = match self.cs.migrate {
            None => {
                let client = head_db.connect().await?;
                migrate::ObjectMap::load(&client, &head_dir).await?
            }
            Some(_) => migrate::ObjectMap::default(),
        };
        // New errors on a table whose index a migration dropped: name the
        // index and its DROP, with or without a base to diff against.
        let lost_indexes: Vec<JsonLostIndex> =
            lost_indexes(&head_side.report, &map.dropped_indexes())
                .into_iter()
                .map(|mut l| {
                    l.dropped.path = self.relative(&head_dir.join(&l.dropped.path));
                    if let Some(c) = &mut l.dropped.created {
                        c.path = self.relative(&head_dir.join(&c.path));
                    }
                    l
                })
                .collect();
        for l in &lost_indexes {
            self.settings.info(&format!(
                "  {} ({}): reads {} without {}, dropped at {}:{}",
                l.statement_id,
                l.mode.as_deref().unwrap_or("-"),
                l.relation,
                l.dropped.index,
                l.dropped.path,
                l.dropped.line
            ));
            if let Some(f) = head_side.report.findings.iter_mut().find(|f| l.is_for(f)) {
                f.message.push_str(&format!(
                    "; the index {} ({}) that served it was dropped at {}:{}",
                    l.dropped.index,
                    l.columns.join(", "),
                    l.dropped.path,
                    l.dropped.line
                ));
            }
        }
        let (base_replay, head_replay) = match self.cs.replay.clone() {
            None => (None, None),
            Some(plan) => {
                let base_replay = match (&base_side, base) {
                    (Some(_), Some(_)) => Some(
                        self.replay(
                            &self.server.with_database(&self.db_name("base")),
                            "base",
                            &plan,
                        )
                        .await?,
                    ),
                    _ => None,
                };
                let head_replay = self.replay(&head_db, "head", &plan).await?;
                (base_replay, Some(head_replay))
            }
        };
        let mut out = Vec::new();
        explain_report::render_table(&mut out, &head_side.text_report)
            .map_err(|e| Error::internal(format!("rendering the explain report: {e}")))?;
        crate::output::emit(&out)
            .map_err(|e| Error::internal(format!("writing to stdout: {e}")))?;
        let objects: Vec<JsonObjectChange> = objects
            .iter()
            .map(|o| JsonObjectChange {
                file: self.relative(&head_dir.join(&o.migration)),
                line: o.line,
                action: o.action.name().to_string(),
                kind: o.kind.name().to_string(),
                name: o.name.clone(),
                table: o.table.clone(),
            })
            .collect();
        let diff = base_side.as_ref().map(|b| {
            let t = Instant::now();
            let mut d = crate::wire::diff::diff(&b.report, &head_side.report, self.cs.cost_noise);
            // Name the migration statement that dropped each index a plan lost.
            for c in &mut d.plan_changes {
                c.dropped = c
                    .indexes_no_longer_used
                    .iter()
                    .filter_map(|i| dropped_by(&objects, i))
                    .map(|o| crate::wire::diff::DroppedIndex {
                        index: o.name.clone(),
                        path: self.relative(Path::new(&o.file)),
                        line: o.line,
                        created: created_at(&map, o).map(|c| crate::wire::diff::SourceLine {
                            path: self.relative(&head_dir.join(&c.migration)),
                            line: c.line,
                        }),
                    })
                    .collect();
            }
            if let (Some(b), Some(h)) = (&base_replay, &head_replay) {
                d.replay_steps = crate::wire::diff::replay_steps(b, h);
                for s in &d.replay_steps {
                    self.settings.info(&format!(
                        "  replay at {}: p95 {:.1} -> {:.1} ms (x{})",
                        crate::output::count_of(u64::from(s.concurrency), "client"),
                        s.base_p95_ms,
                        s.head_p95_ms,
                        s.p95_ratio
                    ));
                }
            }
            step(
                self.settings,
                t,
                &format!(
                    "diff: {} new finding(s), {} fixed, {} plan change(s)",
                    d.new_findings.len(),
                    d.fixed_findings.len(),
                    d.plan_changes.len()
                ),
            );
            for c in &d.plan_changes {
                for line in &c.changes {
                    self.settings.info(&format!(
                        "  {} ({}, {}): {line}, cost x{}",
                        crate::output::shorten(&c.query, 50),
                        c.mode,
                        c.kind,
                        c.cost_ratio
                    ));
                }
            }
            d
        });
        let mut gate = gate(
            &self.cs,
            &head_side.report,
            diff.as_ref(),
            &objects,
            &lost_indexes,
            &measured,
            head_replay.as_ref(),
        );
        for f in &mut gate.failures {
            if let Some(file) = &f.file {
                f.file = Some(self.relative(Path::new(file)));
            }
        }
        Ok(JsonCheck {
            format_version: FORMAT_VERSION,
            base_ref: base.map(|b| b.reference.clone()),
            base_commit: base.map(|b| b.commit.clone()),
            head: head_side.report,
            base: base_side.map(|b| b.report),
            base_error,
            diff,
            migration: measured,
            objects,
            notes,
            gate,
            replay: head_replay,
            base_replay,
            lost_indexes,
        })
    }

    /// The short replay of `--replay` on `db`: the recorded workload on the
    /// plan's ladder, every unit rolled back. The database is the check's
    /// own, so statements whose effects a rollback does not undo (a
    /// sequence's next value) are allowed.
    async fn replay(&self, db: &ConnInfo, side: &str, plan: &ReplayPlan) -> Result<ReplayReport> {
        let t = Instant::now();
        let queries = crate::queries::default_path(&self.settings.queries_dir());
        let mut args = ReplayArgs::short(queries, &plan.ladder, &plan.duration);
        args.allow_side_effects = true;
        let rs = ReplaySettings::resolve(&args, self.settings)?;
        let w = rs.workload()?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = crate::replay::run::run(db, w, &rs.options, self.log(), stop).await?;
        let p95: Vec<String> = r
            .steps
            .iter()
            .map(|s| format!("{:.1} ms at {}", s.p95_ms, s.concurrency))
            .collect();
        step(
            self.settings,
            t,
            &format!(
                "replay ({side}): ladder {} at {} each, p95 {} clients",
                crate::replay::ladder::ladder_text(&plan.ladder),
                plan.duration,
                p95.join(", ")
            ),
        );
        Ok(r)
    }

    /// A path as the outputs write it: relative to the source root (the
    /// project's git work tree) when it is below it.
    fn relative(&self, p: &Path) -> String {
        crate::findings::source::relative_text(
            p,
            &crate::findings::source::root_of(&self.settings.project_dir),
        )
    }

    /// (Re)creates `name`, empty.
    /// Head built from scratch: a fresh database, every migration of the
    /// checkout, the seed. What its migrations created or dropped goes to
    /// `objects` (planck migrate only).
    async fn build_head(
        &mut self,
        name: &str,
        head_dir: &Path,
        objects: &mut Vec<migrate::ObjectChange>,
    ) -> Result<ConnInfo> {
        let head = self.fresh(name).await?;
        if let Some(o) = self
            .migrate(&head, &self.settings.project_dir, head_dir)
            .await?
        {
            *objects = o;
        }
        self.seed(&head).await?;
        Ok(head)
    }

    async fn fresh(&mut self, name: &str) -> Result<ConnInfo> {
        let t = Instant::now();
        self.create(name, None).await?;
        step(self.settings, t, &format!("database: created {name}"));
        Ok(self.server.with_database(name))
    }

    /// `name` as a TEMPLATE copy of `from`: the same rows and statistics.
    async fn copy(&mut self, from: &ConnInfo, name: &str) -> Result<ConnInfo> {
        let t = Instant::now();
        let from_name = from.dbname();
        self.create(name, Some(&from_name)).await?;
        step(
            self.settings,
            t,
            &format!("database: created {name} as a copy of {from_name}"),
        );
        Ok(self.server.with_database(name))
    }

    async fn create(&mut self, name: &str, template: Option<&str>) -> Result<()> {
        if name == self.server.dbname() {
            return Err(Error::usage(format!(
                "check would drop the configured database {name}: pick another --name"
            )));
        }
        let admin = self.server.connect().await?;
        let q = crate::db::quote_ident(name);
        crate::db::drop_database(&admin, name)
            .await
            .map_err(|e| Error::db(format!("dropping database {name}"), e))?;
        let sql = match template {
            Some(t) => format!("CREATE DATABASE {q} TEMPLATE {}", crate::db::quote_ident(t)),
            None => format!("CREATE DATABASE {q}"),
        };
        // A template must have no other session: the pools of the steps
        // before close their connections asynchronously.
        let mut tries = 0;
        loop {
            match admin.batch_execute(&sql).await {
                Ok(()) => break,
                Err(e)
                    if tries < 50
                        && e.code() == Some(&tokio_postgres::error::SqlState::OBJECT_IN_USE) =>
                {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => {
                    return Err(Error::db(
                        format!("creating database {name} (check needs CREATEDB)"),
                        e,
                    ));
                }
            }
        }
        self.created.push(name.to_string());
        Ok(())
    }

    /// Runs the project's migrations on `db`: planck migrate, or the
    /// `[check] migrate` command in `project` with DATABASE_URL and PG* set.
    /// Returns the objects planck migrate saw change.
    async fn migrate(
        &self,
        db: &ConnInfo,
        project: &Path,
        migrations: &Path,
    ) -> Result<Option<Vec<migrate::ObjectChange>>> {
        let t = Instant::now();
        match &self.cs.migrate {
            None => {
                let outcome = migrate::run(db, migrations, false, false, self.log()).await?;
                step(
                    self.settings,
                    t,
                    &format!(
                        "migrate: {} file(s) applied to {} ({} already)",
                        outcome.applied.len(),
                        db.dbname(),
                        outcome.already
                    ),
                );
                Ok(Some(outcome.objects))
            }
            Some(command) => {
                run_command(command, db, project).await?;
                step(
                    self.settings,
                    t,
                    &format!("migrate: `{command}` on {}", db.dbname()),
                );
                Ok(None)
            }
        }
    }

    async fn seed(&self, db: &ConnInfo) -> Result<()> {
        let t = Instant::now();
        let args = SeedArgs {
            scale: Some(self.cs.scale),
            truncate: true,
            ..SeedArgs::default()
        };
        let seed = SeedSettings::resolve(&args, self.settings)?;
        let summary = crate::seed::run(db, &seed.options, self.log()).await?;
        let rows: u64 = summary.tables.iter().map(|t| t.rows).sum();
        step(
            self.settings,
            t,
            &format!(
                "seed: {rows} rows in {} tables of {} at scale {}",
                summary.tables.len(),
                db.dbname(),
                self.cs.scale
            ),
        );
        Ok(())
    }

    async fn explain(&self, db: &ConnInfo, side: &str) -> Result<Side> {
        let t = Instant::now();
        let args = ExplainArgs {
            no_advice: true,
            ..ExplainArgs::new()
        };
        let es = ExplainSettings::resolve(&args, self.settings)?;
        let report = crate::workflow::explain::run_located(
            db,
            &es,
            self.settings.log(),
            &self.settings.migrations_dir(),
            &self.settings.project_dir,
        )
        .await?;
        step(
            self.settings,
            t,
            &format!(
                "explain ({side}): {} statement(s), {} finding(s), {} new error(s) against {}",
                report.explained(),
                report.findings.len(),
                report.new_errors(),
                self.relative(&es.baseline)
            ),
        );
        let json = crate::explain::environment::json_with_environment(db, &report).await?;
        Ok(Side {
            report: json,
            text_report: report,
        })
    }

    /// ANALYZEs the tables head's new files touched: created, rewritten,
    /// given or losing columns, with rows changed, or whose indexes changed.
    async fn reanalyze(
        &self,
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
            self.settings,
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

    /// Head's new files, one statement at a time, on a further copy of the
    /// seeded base, with the locks each took sampled.
    async fn measure(
        &mut self,
        base_db: &ConnInfo,
        files: &[Migration],
    ) -> Result<Vec<JsonMigrationStatement>> {
        let name = self.db_name("measure");
        let db = self.copy(base_db, &name).await?;
        let t = Instant::now();
        let measured = migrate::measure::run(&db, files, self.log()).await?;
        let out: Vec<JsonMigrationStatement> = measured
            .into_iter()
            .map(|m| JsonMigrationStatement {
                file: self.relative(&self.settings.migrations_dir().join(&m.file)),
                line: m.line,
                statement: crate::output::shorten(&m.statement, 120),
                seconds: m.seconds,
                blocking: m.blocking(),
                locks: m
                    .locks
                    .iter()
                    .map(|l| crate::wire::check::JsonLock {
                        relation: l.relation.clone(),
                        mode: l.mode.clone(),
                        held_seconds: l.held_seconds,
                        blocks: migrate::measure::blocks(&l.mode).to_string(),
                    })
                    .collect(),
                rewritten: m.rewritten,
                error: m.error,
            })
            .collect();
        step(
            self.settings,
            t,
            &format!(
                "measure: {} statement(s) of {} new file(s) on a copy of the base, {} blocking",
                out.len(),
                files.len(),
                out.iter().filter(|m| m.blocking).count()
            ),
        );
        for m in &out {
            if let Some(l) = m.locks.first() {
                self.settings.info(&format!(
                    "  {}:{} {}: {} on {} for {:.1} s{}",
                    m.file,
                    m.line,
                    crate::output::shorten(&m.statement, 50),
                    l.mode,
                    l.relation,
                    l.held_seconds,
                    if m.rewritten.is_empty() {
                        String::new()
                    } else {
                        format!(", rewrote {}", m.rewritten.join(", "))
                    }
                ));
            }
        }
        Ok(out)
    }

    /// Drops what this run created, unless --keep; returns their names.
    async fn cleanup(&mut self) -> Vec<String> {
        if self.created.is_empty() {
            return Vec::new();
        }
        let mut names = std::mem::take(&mut self.created);
        names.dedup();
        if self.cs.keep {
            self.settings
                .info(&format!("kept database(s) {} (--keep)", names.join(", ")));
            return names;
        }
        let t = Instant::now();
        let Ok(admin) = self.server.connect().await else {
            self.settings.warn(&format!(
                "could not drop {}: the server is not reachable",
                names.join(", ")
            ));
            return Vec::new();
        };
        for n in &names {
            if let Err(e) = crate::db::drop_database(&admin, n).await {
                self.settings.warn(&format!("could not drop {n}: {e}"));
            }
        }
        step(
            self.settings,
            t,
            &format!("cleanup: dropped {}", names.join(", ")),
        );
        names
    }
}

/// Every ordinary table's oid, relfilenode and column count: what a
/// migration changes when it creates, rewrites or alters a table (planck's
/// own schema and its migrations table left out).
async fn table_shapes(db: &ConnInfo) -> Result<Vec<(u32, u32, i64)>> {
    let client = db.connect().await?;
    Ok(crate::db::table_files(&client)
        .await?
        .into_iter()
        .filter(|t| t.schema != "planck" && t.relname != "planck_migrations")
        .map(|t| (t.oid, t.relfilenode, t.columns))
        .collect())
}

/// How head's migrations relate to the base's.
#[derive(Debug)]
enum Incremental {
    /// Head's files the base does not have (in order).
    New(Vec<Migration>),
    /// A file the base applied is changed or gone in head: the file.
    Rebuild(String),
}

fn new_files(base_dir: &Path, head_dir: &Path) -> Result<Incremental> {
    let base = match migrate::discover(base_dir) {
        Ok(b) => b,
        // The base had no migrations folder yet: every head file is new.
        Err(Error::ReadFile { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    let head = migrate::discover(head_dir)?;
    Ok(incremental(&base, head))
}

fn incremental(base: &[Migration], head: Vec<Migration>) -> Incremental {
    for b in base {
        match head.iter().find(|h| h.name == b.name) {
            Some(h) if h.checksum == b.checksum => {}
            _ => return Incremental::Rebuild(b.name.clone()),
        }
    }
    let applied: BTreeSet<&str> = base.iter().map(|b| b.name.as_str()).collect();
    Incremental::New(
        head.into_iter()
            .filter(|h| !applied.contains(h.name.as_str()))
            .collect(),
    )
}

/// The gate's verdict on the head report, the diff and the measurement.
fn gate(
    cs: &CheckSettings,
    head: &JsonReport,
    diff: Option<&JsonDiff>,
    objects: &[JsonObjectChange],
    lost: &[JsonLostIndex],
    measured: &[JsonMigrationStatement],
    replay: Option<&ReplayReport>,
) -> JsonGate {
    let mut failures = Vec::new();
    if cs.gates(Gate::Errors) {
        for f in head
            .findings
            .iter()
            .filter(|f| f.severity == "error" && !f.baseline)
        {
            let dropped = f.index.as_deref().and_then(|i| dropped_by(objects, i));
            let lost = lost.iter().find(|l| l.is_for(f)).map(|l| &l.dropped);
            failures.push(JsonGateFailure {
                gate: Gate::Errors.as_str().to_string(),
                message: format!(
                    "{}: {}{}",
                    f.check,
                    f.message,
                    f.query
                        .as_deref()
                        .map(|q| format!(" in `{}`", crate::output::shorten(q, 60)))
                        .unwrap_or_default()
                ),
                statement_id: f.statement_id.clone(),
                query: f.query.clone(),
                index: f.index.clone().or_else(|| lost.map(|d| d.index.clone())),
                file: dropped
                    .map(|o| o.file.clone())
                    .or_else(|| lost.map(|d| d.path.clone()))
                    .or_else(|| f.location.as_ref().map(|l| l.path.clone())),
                line: dropped
                    .map(|o| o.line)
                    .or_else(|| lost.map(|d| d.line))
                    .or_else(|| f.location.as_ref().map(|l| l.line)),
            });
        }
    }
    if cs.gates(Gate::Regressions)
        && let Some(d) = diff
    {
        for c in d.regressions() {
            let index = c.indexes_no_longer_used.first().cloned();
            let dropped = index.as_deref().and_then(|i| dropped_by(objects, i));
            let what = if c.changes.is_empty() {
                "the same plan".to_string()
            } else {
                c.changes.join("; ")
            };
            failures.push(JsonGateFailure {
                gate: Gate::Regressions.as_str().to_string(),
                message: format!(
                    "`{}` ({}, {}): {what}, cost x{}{}",
                    crate::output::shorten(&c.query, 60),
                    c.mode,
                    c.kind,
                    c.cost_ratio,
                    match &index {
                        Some(i) => format!(", no longer uses {i}"),
                        None => String::new(),
                    }
                ),
                statement_id: Some(c.statement_id.clone()),
                query: Some(c.query.clone()),
                index,
                file: dropped.map(|o| o.file.clone()),
                line: dropped.map(|o| o.line),
            });
        }
    }
    if cs.gates(Gate::BlockingMigration) {
        for m in measured.iter().filter(|m| m.blocking) {
            let lock = m.locks.first();
            failures.push(JsonGateFailure {
                gate: Gate::BlockingMigration.as_str().to_string(),
                message: format!(
                    "`{}` held {} for {:.1} s (blocks {}){}",
                    crate::output::shorten(&m.statement, 60),
                    lock.map(|l| format!("{} on {}", l.mode, l.relation))
                        .unwrap_or_else(|| "a lock".into()),
                    lock.map(|l| l.held_seconds).unwrap_or(m.seconds),
                    lock.map(|l| l.blocks.as_str()).unwrap_or("?"),
                    if m.rewritten.is_empty() {
                        String::new()
                    } else {
                        format!(", rewrote {}", m.rewritten.join(", "))
                    }
                ),
                statement_id: None,
                query: None,
                index: None,
                file: Some(m.file.clone()),
                line: Some(m.line),
            });
        }
    }
    if cs.gates(Gate::Slo)
        && let Some(slo) = cs.replay.as_ref().and_then(|p| p.slo)
        && let Some(r) = replay
    {
        let missed = match slo.met(r) {
            Some((true, _)) => None,
            Some((false, v)) => Some(format!(
                "p{} at {} clients is {v:.2} ms, above {:.2} ms",
                slo.percentile, slo.concurrency, slo.max_ms
            )),
            // The step did not finish (an interrupted replay).
            None => Some(format!(
                "the replay has no step at {} clients to hold p{} to",
                slo.concurrency, slo.percentile
            )),
        };
        if let Some(message) = missed {
            failures.push(JsonGateFailure {
                gate: Gate::Slo.as_str().to_string(),
                message: format!("SLO missed: {message}"),
                statement_id: None,
                query: None,
                index: None,
                file: None,
                line: None,
            });
        }
    }
    JsonGate {
        passed: failures.is_empty(),
        fail_on: cs.fail_on.iter().map(|g| g.as_str().to_string()).collect(),
        failures,
    }
}

/// The migration statement that created the index `dropped` drops: the
/// last creation (or rename to it) in the object map before the drop.
fn created_at<'a>(
    map: &'a migrate::ObjectMap,
    dropped: &JsonObjectChange,
) -> Option<&'a migrate::ObjectChange> {
    let drop_file = Path::new(&dropped.file)
        .file_name()
        .map(|f| f.to_string_lossy().to_string());
    map.changes()
        .iter()
        .take_while(|c| {
            !(c.action == migrate::Action::Dropped
                && Some(&c.migration) == drop_file.as_ref()
                && c.line == dropped.line)
        })
        .filter(|c| {
            c.name == dropped.name
                && matches!(
                    c.action,
                    migrate::Action::Created
                        | migrate::Action::Recreated
                        | migrate::Action::Renamed
                )
        })
        .last()
}

/// Head's new error findings (not in the baseline, about a statement's read
/// of a relation, naming no index) on a table one of `dropped` belonged to,
/// where the statement's plans filter, join or sort on the index's leading
/// column: the index the plan lost. Paths are the map's file names.
fn lost_indexes(head: &JsonReport, dropped: &[migrate::DroppedIndex]) -> Vec<JsonLostIndex> {
    let bare = |name: &str| name.rsplit('.').next().unwrap_or(name).to_string();
    let mut out = Vec::new();
    for f in head
        .findings
        .iter()
        .filter(|f| f.severity == "error" && !f.baseline && f.index.is_none())
    {
        let (Some(id), Some(relation)) = (&f.statement_id, &f.relation) else {
            continue;
        };
        let Some(s) = head.statements.iter().find(|s| &s.id == id) else {
            continue;
        };
        let mut words = BTreeSet::new();
        for p in &s.plans {
            condition_words(&p.plan, &mut words);
        }
        let best = dropped
            .iter()
            .filter(|d| d.table.as_deref().map(bare) == Some(bare(relation)))
            .filter(|d| d.columns.first().is_some_and(|c| words.contains(c)))
            .max_by_key(|d| d.columns.iter().filter(|c| words.contains(*c)).count());
        if let Some(d) = best {
            out.push(JsonLostIndex {
                check: f.check.clone(),
                statement_id: id.clone(),
                mode: f.mode.clone(),
                relation: relation.clone(),
                columns: d.columns.clone(),
                dropped: crate::wire::diff::DroppedIndex {
                    index: d.name.clone(),
                    path: d.dropped.0.clone(),
                    line: d.dropped.1,
                    created: d
                        .created
                        .as_ref()
                        .map(|(path, line)| crate::wire::diff::SourceLine {
                            path: path.clone(),
                            line: *line,
                        }),
                },
            });
        }
    }
    out
}

/// The identifiers of a plan's conditions and sort keys (`Filter`, `Index
/// Cond`, `Hash Cond`, `Join Filter`, `Sort Key`...), in every node.
fn condition_words(node: &serde_json::Value, out: &mut BTreeSet<String>) {
    fn add(text: &str, out: &mut BTreeSet<String>) {
        for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !w.is_empty() {
                out.insert(w.to_string());
            }
        }
    }
    match node {
        serde_json::Value::Array(items) => {
            for i in items {
                condition_words(i, out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let wanted = k.ends_with("Cond") || k.ends_with("Filter") || k.ends_with("Key");
                match v {
                    serde_json::Value::String(t) if wanted => add(t, out),
                    serde_json::Value::Array(a) if wanted => {
                        for t in a.iter().filter_map(serde_json::Value::as_str) {
                            add(t, out);
                        }
                    }
                    _ => condition_words(v, out),
                }
            }
        }
        _ => {}
    }
}

/// The head migration statement that dropped `index`.
fn dropped_by<'a>(objects: &'a [JsonObjectChange], index: &str) -> Option<&'a JsonObjectChange> {
    objects
        .iter()
        .find(|o| o.action == "dropped" && o.kind == "index" && o.name == index)
}

/// Runs `[check] migrate` through `sh -c` in `project`, pointed at `db`;
/// its output goes to stderr.
async fn run_command(command: &str, db: &ConnInfo, project: &Path) -> Result<()> {
    use std::os::fd::AsFd;
    let stdout = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(std::process::Stdio::from)
        .unwrap_or_else(|_| std::process::Stdio::inherit());
    let status = tokio::process::Command::new("sh")
        // A stop signal abandons the step: the command goes with it.
        .kill_on_drop(true)
        .arg("-c")
        .arg(command)
        .env_remove("PGHOSTADDR")
        .env_remove("PGSERVICE")
        .envs(crate::record::child::env_for(db))
        .current_dir(project)
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .status()
        .await
        .map_err(|e| Error::Command {
            program: command.to_string(),
            message: e.to_string(),
            hint: None,
        })?;
    if !status.success() {
        return Err(Error::Command {
            program: command.to_string(),
            message: format!("exited with {status} on {}", db.dbname()),
            hint: Some(
                "[check] migrate runs in the project folder with DATABASE_URL and PG* set".into(),
            ),
        });
    }
    Ok(())
}

/// The merge base's tree, checked out with `git worktree add` into a
/// temporary folder, removed again on drop.
struct BaseTree {
    reference: String,
    commit: String,
    repo: PathBuf,
    dir: PathBuf,
    /// The project folder inside it, and its migrations.
    project_dir: PathBuf,
    migrations_dir: PathBuf,
}

fn git(repo: &Path, args: &[&str]) -> std::result::Result<String, String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

const FETCH_HINT: &str = "fetch the history: `git fetch --unshallow origin` locally, \
`fetch-depth: 0` on actions/checkout in GitHub Actions, `GIT_DEPTH: 0` in GitLab CI";

impl BaseTree {
    fn add(project_dir: &Path, reference: &str, migrations: &Path) -> Result<BaseTree> {
        let top = git(project_dir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
            Error::usage_hint(
                format!(
                    "--base needs a git repository: {} is not in one ({e})",
                    project_dir.display()
                ),
                "run planck check --base from the project's checkout, or leave --base out",
            )
        })?;
        let repo = PathBuf::from(top);
        let shallow =
            git(&repo, &["rev-parse", "--is-shallow-repository"]).as_deref() == Ok("true");
        let spec = format!("{reference}^{{commit}}");
        if git(&repo, &["rev-parse", "--verify", "--quiet", &spec]).is_err() {
            return Err(Error::usage_hint(
                format!(
                    "--base {reference}: no such commit in {}{}",
                    repo.display(),
                    if shallow { " (a shallow clone)" } else { "" }
                ),
                if shallow {
                    FETCH_HINT.to_string()
                } else {
                    format!(
                        "check the name (`git branch -a`), or fetch it: `git fetch origin {}`; {FETCH_HINT}",
                        reference.trim_start_matches("origin/")
                    )
                },
            ));
        }
        let commit = git(&repo, &["merge-base", "HEAD", reference]).map_err(|e| {
            Error::usage_hint(
                format!(
                    "--base {reference}: HEAD and {reference} have no merge base{}{}",
                    if shallow {
                        " in this shallow clone"
                    } else {
                        ""
                    },
                    if e.is_empty() {
                        String::new()
                    } else {
                        format!(" ({e})")
                    }
                ),
                FETCH_HINT,
            )
        })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("planck-check-base-{}-{nanos}", std::process::id()));
        let dir_s = dir.display().to_string();
        git(
            &repo,
            &["worktree", "add", "--detach", "--quiet", &dir_s, &commit],
        )
        .map_err(|e| Error::internal(format!("git worktree add {dir_s} {commit} failed: {e}")))?;
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let rel = canon(project_dir)
            .strip_prefix(canon(&repo))
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let project = dir.join(rel);
        Ok(BaseTree {
            reference: reference.to_string(),
            commit,
            repo,
            migrations_dir: project.join(migrations),
            project_dir: project,
            dir,
        })
    }
}

impl Drop for BaseTree {
    fn drop(&mut self) {
        let dir = self.dir.display().to_string();
        if git(&self.repo, &["worktree", "remove", "--force", &dir]).is_err() {
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = git(&self.repo, &["worktree", "prune"]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, sql: &str) -> Migration {
        Migration {
            name: name.into(),
            path: name.into(),
            sql: sql.into(),
            checksum: format!(
                "{:x}",
                sql.len() * 31 + sql.bytes().map(usize::from).sum::<usize>()
            ),
        }
    }

    #[test]
    fn only_new_files_are_applied_and_a_changed_one_rebuilds() {
        let base = vec![m("0001.sql", "a"), m("0002.sql", "b")];
        let head = vec![m("0001.sql", "a"), m("0002.sql", "b"), m("0003.sql", "c")];
        match incremental(&base, head) {
            Incremental::New(f) => assert_eq!(
                f.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
                ["0003.sql"]
            ),
            other => panic!("{other:?}"),
        }
        let head = vec![m("0001.sql", "a"), m("0002.sql", "bb")];
        assert!(matches!(incremental(&base, head), Incremental::Rebuild(f) if f == "0002.sql"));
        let head = vec![m("0001.sql", "a")];
        assert!(matches!(incremental(&base, head), Incremental::Rebuild(f) if f == "0002.sql"));
    }
}
