//! One side's steps, each a call into its domain's public entry point with
//! one progress line: migrate (planck migrate, or the `[check] migrate`
//! command with DATABASE_URL and PG* set), seed, explain (located at the
//! migration lines) and the short replay.

use std::path::Path;
use std::time::Instant;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::explain::report as explain_report;
use crate::migrate;
use crate::wire::explain::JsonReport;
use crate::wire::replay::ReplayReport;

use super::plan::{CheckPlan, ReplayPlan, Steps, step};

/// What one side's build left: its database, explained.
pub struct Side {
    pub report: JsonReport,
    pub text_report: explain_report::ExplainReport,
}

/// Runs the project's migrations on `db`: planck migrate, or the
/// `[check] migrate` command in `project` with DATABASE_URL and PG* set.
/// Returns the objects planck migrate saw change.
pub async fn migrate(
    plan: &CheckPlan,
    db: &ConnInfo,
    project: &Path,
    migrations: &Path,
) -> Result<Option<Vec<migrate::ObjectChange>>> {
    let t = Instant::now();
    match &plan.migrate {
        None => {
            let outcome = migrate::run(db, migrations, false, false, plan.domain_log()).await?;
            step(
                plan.log,
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
                plan.log,
                t,
                &format!("migrate: `{command}` on {}", db.dbname()),
            );
            Ok(None)
        }
    }
}

pub async fn seed(plan: &CheckPlan, steps: &dyn Steps, db: &ConnInfo) -> Result<()> {
    let t = Instant::now();
    let options = steps.seed();
    let summary = crate::seed::run(db, &options, plan.domain_log()).await?;
    let rows: u64 = summary.tables.iter().map(|t| t.rows).sum();
    step(
        plan.log,
        t,
        &format!(
            "seed: {rows} rows in {} tables of {} at scale {}",
            summary.tables.len(),
            db.dbname(),
            plan.scale
        ),
    );
    Ok(())
}

pub async fn explain(
    plan: &CheckPlan,
    steps: &dyn Steps,
    db: &ConnInfo,
    side: &str,
) -> Result<Side> {
    let t = Instant::now();
    let es = steps.explain();
    let report = crate::workflow::explain::run_located(
        db,
        &es,
        plan.log,
        &plan.migrations_dir,
        &plan.project_dir,
    )
    .await?;
    step(
        plan.log,
        t,
        &format!(
            "explain ({side}): {} statement(s), {} finding(s), {} new error(s){}",
            report.explained(),
            report.findings.len(),
            report.new_errors(),
            // Issue 48: "against queries/baseline.toml" named a file that
            // was not there; without one every error is new.
            if es.baseline.is_file() {
                format!(" against {}", plan.relative(&es.baseline))
            } else {
                " (no baseline)".to_string()
            }
        ),
    );
    let json = crate::explain::environment::json_with_environment(db, &report).await?;
    Ok(Side {
        report: json,
        text_report: report,
    })
}

/// The short replay of `--replay` on `db`: the recorded workload on the
/// plan's ladder, every unit rolled back. The database is the check's
/// own, so statements whose effects a rollback does not undo (a
/// sequence's next value) are allowed.
pub async fn replay(
    plan: &CheckPlan,
    steps: &dyn Steps,
    db: &ConnInfo,
    side: &str,
    replay: &ReplayPlan,
) -> Result<ReplayReport> {
    let t = Instant::now();
    let (w, options) = steps.replay()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = crate::replay::run::run(db, w, &options, plan.domain_log(), stop).await?;
    let p95: Vec<String> = r
        .steps
        .iter()
        .map(|s| format!("{:.1} ms at {}", s.p95_ms, s.concurrency))
        .collect();
    step(
        plan.log,
        t,
        &format!(
            "replay ({side}): ladder {} at {} each, p95 {} clients",
            crate::replay::ladder::ladder_text(&replay.ladder),
            replay.duration,
            p95.join(", ")
        ),
    );
    Ok(r)
}

/// Runs `[check] migrate` through `sh -c` in `project`, pointed at `db`;
/// its output goes to stderr.
pub async fn run_command(command: &str, db: &ConnInfo, project: &Path) -> Result<()> {
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
