//! The check's run from start to verdict: both sides built (head from
//! scratch, or as a copy of the base with only its new files applied),
//! explained, replayed when asked, diffed and gated, into the check's JSON.
//! The steps themselves live in the sibling modules; this one orders them.

use std::path::Path;
use std::time::Instant;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::explain::report as explain_report;
use crate::migrate::{self, Migration};
use crate::wire::check::{
    FORMAT_VERSION, JsonCheck, JsonLostIndex, JsonMigrationStatement, JsonObjectChange,
};
use crate::wire::diff::JsonDiff;
use crate::wire::replay::ReplayReport;

use super::analyze::{reanalyze, table_shapes};
use super::base_tree::BaseTree;
use super::databases::Databases;
use super::gate::gate;
use super::incremental::{Incremental, new_files};
use super::lost_index::{created_at, dropped_by, lost_indexes};
use super::measure::measure;
use super::plan::{CheckPlan, Steps, step};
use super::steps::{self, Side};

/// A check run: its plan, the glue's settings resolver and the databases
/// it created (dropped by [`CheckRun::cleanup`], also after an error or a
/// stop signal).
pub struct CheckRun<'a> {
    plan: CheckPlan,
    steps: &'a dyn Steps,
    dbs: Databases,
}

/// Both sides built, before head is explained.
struct Built {
    /// The base explained (none without a base, or when its migrations failed).
    base_side: Option<Side>,
    base_error: Option<String>,
    head_db: ConnInfo,
    /// What head's migrations created or dropped (planck migrate only).
    objects: Vec<migrate::ObjectChange>,
    measured: Vec<JsonMigrationStatement>,
    notes: Vec<String>,
}

impl Built {
    fn head(head_db: ConnInfo, objects: Vec<migrate::ObjectChange>) -> Built {
        Built {
            base_side: None,
            base_error: None,
            head_db,
            objects,
            measured: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// The base's and the head's replays, when asked for.
type Replays = (Option<ReplayReport>, Option<ReplayReport>);

impl<'a> CheckRun<'a> {
    /// A run on `server` (CREATE and DROP DATABASE are sent through it;
    /// nothing else touches it).
    pub fn new(plan: CheckPlan, steps: &'a dyn Steps, server: ConnInfo) -> CheckRun<'a> {
        let dbs = Databases::new(server, plan.log);
        CheckRun { plan, steps, dbs }
    }

    pub fn plan(&self) -> &CheckPlan {
        &self.plan
    }

    /// Drops the databases this run created, unless --keep; returns their names.
    pub async fn cleanup(&mut self) -> Vec<String> {
        self.dbs.cleanup(self.plan.keep).await
    }

    pub async fn run(&mut self, base: Option<&BaseTree>) -> Result<JsonCheck> {
        let head_dir = self.plan.migrations_dir.clone();
        let built = self.build(base, &head_dir).await?;
        let mut head_side = steps::explain(&self.plan, self.steps, &built.head_db, "head").await?;
        // The migration object map of head (planck migrate only): where each
        // index a plan lost had been created.
        let map = match self.plan.migrate {
            None => {
                let client = built.head_db.connect().await?;
                migrate::ObjectMap::load(&client, &head_dir).await?
            }
            Some(_) => migrate::ObjectMap::default(),
        };
        let lost_indexes = self.lost(&mut head_side, &map, &head_dir);
        let replays = self
            .replays(built.base_side.is_some(), &built.head_db)
            .await?;
        let mut out = Vec::new();
        explain_report::render_table(&mut out, &head_side.text_report)
            .map_err(|e| Error::internal(format!("rendering the explain report: {e}")))?;
        crate::output::emit(&out)?;
        let objects: Vec<JsonObjectChange> = built
            .objects
            .iter()
            .map(|o| JsonObjectChange {
                file: self.plan.relative(&head_dir.join(&o.migration)),
                line: o.line,
                action: o.action.name().to_string(),
                kind: o.kind.name().to_string(),
                name: o.name.clone(),
                table: o.table.clone(),
            })
            .collect();
        let diff = built
            .base_side
            .as_ref()
            .map(|b| self.diff(b, &head_side, &objects, &map, &head_dir, &replays));
        let (base_replay, head_replay) = replays;
        let mut gate = gate(
            &self.plan,
            &head_side.report,
            diff.as_ref(),
            &objects,
            &lost_indexes,
            &built.measured,
            head_replay.as_ref(),
        );
        for f in &mut gate.failures {
            if let Some(file) = &f.file {
                f.file = Some(self.plan.relative(Path::new(file)));
            }
        }
        Ok(JsonCheck {
            format_version: FORMAT_VERSION,
            base_ref: base.map(|b| b.reference.clone()),
            base_commit: base.map(|b| b.commit.clone()),
            head: head_side.report,
            base: built.base_side.map(|b| b.report),
            base_error: built.base_error,
            diff,
            migration: built.measured,
            objects,
            notes: built.notes,
            gate,
            replay: head_replay,
            base_replay,
            lost_indexes,
        })
    }

    /// Both sides' databases: head alone without a base; with one, the
    /// base migrated, seeded and explained, and head as a copy of it with
    /// only its new files (or from scratch when a file the base applied
    /// changed, or with no diff when the base's migrations failed).
    async fn build(&mut self, base: Option<&BaseTree>, head_dir: &Path) -> Result<Built> {
        let head_name = self.plan.db_name("head");
        let Some(tree) = base else {
            return self.build_head(&head_name, head_dir).await;
        };
        let base_db = self.dbs.fresh(&self.plan.db_name("base")).await?;
        let migrated = steps::migrate(
            &self.plan,
            &base_db,
            &tree.project_dir,
            &tree.migrations_dir,
        )
        .await;
        if let Err(e) = migrated {
            let message = format!("the base's migrations failed: {e}");
            self.plan.log.warn(&format!(
                "{message}; the head side still runs, without a diff"
            ));
            let mut head = self.build_head(&head_name, head_dir).await?;
            head.base_error = Some(message);
            return Ok(head);
        }
        steps::seed(&self.plan, self.steps, &base_db).await?;
        let base_side = steps::explain(&self.plan, self.steps, &base_db, "base").await?;
        let mut head = match new_files(&tree.migrations_dir, head_dir)? {
            Incremental::Rebuild(changed) => {
                let note = format!(
                    "{changed} changed after the base applied it: head is rebuilt from scratch \
                     (its rows and statistics are not the base's)"
                );
                self.plan.log.warn(&note);
                let mut head = self.build_head(&head_name, head_dir).await?;
                head.notes.push(note);
                head
            }
            Incremental::New(files) => {
                self.build_incremental(&base_db, &head_name, head_dir, &files)
                    .await?
            }
        };
        head.base_side = Some(base_side);
        Ok(head)
    }

    /// Head built from scratch: a fresh database, every migration of the
    /// checkout, the seed.
    async fn build_head(&mut self, name: &str, head_dir: &Path) -> Result<Built> {
        let head = self.dbs.fresh(name).await?;
        let objects = steps::migrate(&self.plan, &head, &self.plan.project_dir, head_dir)
            .await?
            .unwrap_or_default();
        steps::seed(&self.plan, self.steps, &head).await?;
        Ok(Built::head(head, objects))
    }

    /// Head as a copy of the seeded base with only its new `files` applied
    /// (measured first on a further copy), the tables they touched
    /// re-analyzed.
    async fn build_incremental(
        &mut self,
        base_db: &ConnInfo,
        head_name: &str,
        head_dir: &Path,
        files: &[Migration],
    ) -> Result<Built> {
        let mut measured = Vec::new();
        if self.plan.migrate.is_none() && !files.is_empty() {
            measured = measure(&self.plan, &mut self.dbs, base_db, files).await?;
        }
        let head = self.dbs.copy(base_db, head_name).await?;
        let before = table_shapes(&head).await?;
        let objects = steps::migrate(&self.plan, &head, &self.plan.project_dir, head_dir)
            .await?
            .unwrap_or_default();
        reanalyze(self.plan.log, &head, &before, &objects).await?;
        let mut built = Built::head(head, objects);
        built.measured = measured;
        Ok(built)
    }

    /// New errors on a table whose index a migration dropped: name the
    /// index and its DROP, with or without a base to diff against.
    fn lost(
        &self,
        head_side: &mut Side,
        map: &migrate::ObjectMap,
        head_dir: &Path,
    ) -> Vec<JsonLostIndex> {
        let lost_indexes: Vec<JsonLostIndex> =
            lost_indexes(&head_side.report, &map.dropped_indexes())
                .into_iter()
                .map(|mut l| {
                    l.dropped.path = self.plan.relative(&head_dir.join(&l.dropped.path));
                    if let Some(c) = &mut l.dropped.created {
                        c.path = self.plan.relative(&head_dir.join(&c.path));
                    }
                    l
                })
                .collect();
        for l in &lost_indexes {
            self.plan.log.info(&format!(
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
        lost_indexes
    }

    /// The replays of `--replay`: head's, and the base's when it was built.
    async fn replays(&self, with_base: bool, head_db: &ConnInfo) -> Result<Replays> {
        let Some(plan) = self.plan.replay.clone() else {
            return Ok((None, None));
        };
        let base_replay = if with_base {
            let base_db = self.dbs.on(&self.plan.db_name("base"));
            Some(steps::replay(&self.plan, self.steps, &base_db, "base", &plan).await?)
        } else {
            None
        };
        let head_replay = steps::replay(&self.plan, self.steps, head_db, "head", &plan).await?;
        Ok((base_replay, Some(head_replay)))
    }

    /// The base's report against head's, each lost index named by the
    /// migration statement that dropped it, with the replays' steps.
    fn diff(
        &self,
        b: &Side,
        head: &Side,
        objects: &[JsonObjectChange],
        map: &migrate::ObjectMap,
        head_dir: &Path,
        replays: &Replays,
    ) -> JsonDiff {
        let t = Instant::now();
        let mut d = crate::wire::diff::diff(&b.report, &head.report, self.plan.cost_noise);
        // Name the migration statement that dropped each index a plan lost.
        for c in &mut d.plan_changes {
            c.dropped = c
                .indexes_no_longer_used
                .iter()
                .filter_map(|i| dropped_by(objects, i))
                .map(|o| crate::wire::diff::DroppedIndex {
                    index: o.name.clone(),
                    path: self.plan.relative(Path::new(&o.file)),
                    line: o.line,
                    created: created_at(map, o).map(|c| crate::wire::diff::SourceLine {
                        path: self.plan.relative(&head_dir.join(&c.migration)),
                        line: c.line,
                    }),
                })
                .collect();
        }
        if let (Some(b), Some(h)) = replays {
            d.replay_steps = crate::wire::diff::replay_steps(b, h);
            for s in &d.replay_steps {
                self.plan.log.info(&format!(
                    "  replay at {}: p95 {:.1} -> {:.1} ms (x{})",
                    crate::output::count_of(u64::from(s.concurrency), "client"),
                    s.base_p95_ms,
                    s.head_p95_ms,
                    s.p95_ratio
                ));
            }
        }
        step(
            self.plan.log,
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
                self.plan.log.info(&format!(
                    "  {} ({}, {}): {line}, cost x{}",
                    crate::output::shorten(&c.query, 50),
                    c.mode,
                    c.kind,
                    c.cost_ratio
                ));
            }
        }
        d
    }
}
