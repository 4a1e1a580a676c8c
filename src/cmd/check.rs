//! `planck check`: the pre-merge gate, as the command line sees it. The
//! flags and `planck.toml` are resolved into the workflow's plan and each
//! domain's settings; [`crate::workflow::check`] runs it (migrate, seed,
//! explain, with `--base` the merge base's side, the diff and the migration
//! measurement, with `--replay` a short replay) and this file writes the
//! reports, prints the verdict and exits 0 or 1 by the gate
//! (`[check] fail_on`).
//!
//! Ctrl-C, SIGTERM and SIGHUP abandon the step under way; the check
//! databases are dropped and the base worktree removed before planck exits
//! with 128 + the signal's number.

use std::time::Instant;

use crate::cli::check::CheckArgs;
use crate::error::{Error, Result};
use crate::explain::ExplainSettings;
use crate::replay::options::Options as ReplayOptions;
use crate::replay::workload::Workload;
use crate::seed::SeedOptions;
use crate::settings::Settings;
use crate::settings::check::CheckSettings;
use crate::settings::replay::ReplaySettings;
use crate::settings::seed::SeedSettings;
use crate::wire::check::JsonCheck;
use crate::workflow::check::plan::step;
use crate::workflow::check::{BaseTree, CheckPlan, CheckRun, Steps};

pub async fn run(args: CheckArgs, settings: &Settings) -> Result<i32> {
    let cs = CheckSettings::resolve(&args, settings)?;
    // Every section of planck.toml a step reads is resolved now, once, so a
    // bad key in `[seed]`, `[explain]` or `[replay]` fails with its file and
    // line before any database is created or any worktree added (issue 34).
    let resolved = Resolved::new(&cs, settings)?;
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
                settings.log(),
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
    step(settings.log(), t, &format!("server: {}", server.display()));
    let mut check = CheckRun::new(plan(&cs, settings), &resolved, server);
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
                if check.plan().keep { "kept" } else { "dropped" },
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
    write_json(&cs, &result, settings)?;
    write_reports(&cs, &result, settings)?;
    print_verdict(settings, &result);
    Ok(if result.gate.passed { 0 } else { 1 })
}

/// The workflow's plan from the resolved settings.
fn plan(cs: &CheckSettings, settings: &Settings) -> CheckPlan {
    CheckPlan {
        prefix: cs.prefix.clone(),
        keep: cs.keep,
        scale: cs.scale,
        migrate: cs.migrate.clone(),
        fail_on: cs.fail_on.clone(),
        cost_noise: cs.cost_noise,
        replay: cs.replay.clone(),
        project_dir: settings.project_dir.clone(),
        migrations_dir: settings.migrations_dir(),
        log: settings.log(),
        verbose: settings.verbose,
    }
}

/// Each step's settings as check runs it (`settings::*::for_check`: what
/// check fixes, `planck.toml` for the rest), resolved once before any
/// database work.
struct Resolved {
    seed: SeedOptions,
    explain: ExplainSettings,
    replay: Option<ReplaySettings>,
}

impl Resolved {
    fn new(cs: &CheckSettings, settings: &Settings) -> Result<Resolved> {
        let replay = match &cs.replay {
            Some(plan) => {
                let queries = crate::queries::default_path(&settings.queries_dir());
                let (ladder, duration) = (&plan.ladder, &plan.duration);
                Some(ReplaySettings::for_ladder(
                    queries, ladder, duration, true, settings,
                )?)
            }
            None => None,
        };
        Ok(Resolved {
            seed: SeedSettings::for_check(cs.scale, cs.rows, settings)?.options,
            explain: ExplainSettings::for_check(settings)?,
            replay,
        })
    }
}

impl Steps for Resolved {
    fn seed(&self) -> SeedOptions {
        self.seed.clone()
    }

    fn explain(&self) -> ExplainSettings {
        self.explain.clone()
    }

    fn replay(&self) -> Result<(Workload, ReplayOptions)> {
        let rs = self
            .replay
            .as_ref()
            .ok_or_else(|| Error::internal("check's replay step ran without [check] replay"))?;
        Ok((rs.workload()?, rs.options.clone()))
    }
}

fn write_reports(cs: &CheckSettings, result: &JsonCheck, settings: &Settings) -> Result<()> {
    let inputs = crate::report::Inputs {
        explain: result.head.clone(),
        replay: result.replay.clone(),
        diff: result.diff.clone(),
        base_label: result.base_ref.clone(),
        source_root: Some(crate::findings::source::root_of(&settings.project_dir)),
        gate: Some(result.gate.clone()),
        lost_indexes: result.lost_indexes.clone(),
    };
    // Written in place, as they always were (not through a temporary file
    // like `planck report`'s), so `--markdown /dev/stdout` still works.
    for (path, output) in &cs.outputs.files {
        std::fs::write(path, output.bytes(&inputs)?).map_err(|source| Error::WriteFile {
            path: path.clone(),
            source,
        })?;
        // As `planck report` says it (issue 48 point 6).
        settings.info(&format!("wrote {}", shown(path, settings)));
    }
    Ok(())
}

/// `path` relative to the current directory when it is under it (as given
/// on the command line), else as it is.
fn shown(path: &std::path::Path, settings: &Settings) -> String {
    path.strip_prefix(&settings.cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn write_json(cs: &CheckSettings, result: &JsonCheck, settings: &Settings) -> Result<()> {
    if cs.outputs.json.is_empty() {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(result)
        .map_err(|e| Error::internal(format!("serializing the check result: {e}")))?
        + "\n";
    for path in &cs.outputs.json {
        std::fs::write(path, &text).map_err(|source| Error::WriteFile {
            path: path.clone(),
            source,
        })?;
        settings.info(&format!("wrote {}", shown(path, settings)));
    }
    Ok(())
}

fn print_verdict(settings: &Settings, r: &JsonCheck) {
    let g = &r.gate;
    if g.passed && g.not_judged.is_empty() {
        settings.info(&format!(
            "check passed (fail_on = [{}])",
            g.fail_on.join(", ")
        ));
        return;
    }
    if g.passed {
        // Issue 48: never a bare "passed" over statements the data could
        // not judge; `fail_on = ["not-judged"]` makes them fail it.
        settings.warn(&format!(
            "check passed for {} of {} statements; {} not judged (fail_on = [{}]; add \"not-judged\" to fail on them):",
            g.judged(),
            g.statements,
            g.not_judged.len(),
            g.fail_on.join(", ")
        ));
        for n in g.not_judged.iter().take(10) {
            settings.warn(&format!(
                "  `{}`: {}",
                crate::output::shorten(&n.query, 60),
                n.reason
            ));
        }
        if g.not_judged.len() > 10 {
            settings.warn(&format!("  and {} more", g.not_judged.len() - 10));
        }
        settings.warn(
            "  hint: seed more rows in check (`[check] rows`, `--rows`) or lower [explain] min_rows",
        );
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
