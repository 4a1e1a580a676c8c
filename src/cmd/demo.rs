//! `planck demo`: the whole pipeline on the bundled example, against the
//! managed cluster (or the configured database), in a database of its own.

use std::path::PathBuf;

use crate::cli::demo::{DemoArgs, ExampleAppArgs};
use crate::cli::record::RecordArgs;
use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::explain::render::Printed;
use crate::output;
use crate::settings::Settings;
use crate::settings::explain::ExplainSettings;
use crate::settings::record::RecordSettings;
use crate::settings::replay::ReplaySettings;
use crate::settings::seed::SeedSettings;

/// Plays the bundled example's API and jobs against the target database, as
/// its test suite would (see [`crate::demo::app`]).
pub async fn example_app(args: ExampleAppArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    let summary = crate::demo::app::play(&conn.url, args.app_url.as_deref())
        .await
        .map_err(|e| {
            Error::Other(anyhow::anyhow!(
                "the example app failed against {}: {e}",
                conn.display()
            ))
        })?;
    settings.info(&summary);
    Ok(0)
}

/// The demo's replay: ladder 1, 4, 16 on its own recording, every unit
/// rolled back. Returns the lines to print (the top hotspot, the verdict)
/// and the replay's report.
async fn replay_step(
    conn: &ConnInfo,
    queries: &std::path::Path,
    seconds: f64,
    settings: &Settings,
) -> Result<Option<(Vec<String>, crate::wire::replay::ReplayReport)>> {
    if seconds <= 0.0 {
        return Ok(None);
    }
    let duration = format!("{seconds}s");
    let rs = ReplaySettings::for_ladder(queries, &[1, 4, 16], &duration, false, settings)?;
    let w = rs.workload()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = crate::replay::run::run(conn, w, &rs.options, settings.log(), stop).await?;
    let mut lines = Vec::new();
    match r.hotspots.iter().max_by_key(|h| (h.samples, h.step_index)) {
        Some(h) => lines.push(top_hotspot_line(&r, h)),
        None => lines.push("replay: no lock waits seen at 1, 4 and 16 clients".to_string()),
    }
    lines.push(format!("replay: {}", r.verdict.text));
    Ok(Some((lines, r)))
}

/// The demo's line for its top hotspot: `replay: top hotspot at 16 clients:
/// the row of accounts id = 1, locked by transaction tx-..., a transactionid
/// lock; waited on by `...`, taken by `...``.
fn top_hotspot_line(
    r: &crate::wire::replay::ReplayReport,
    h: &crate::wire::replay::HotspotJson,
) -> String {
    let statement = |q: Option<&str>| match q {
        Some(q) => format!("`{}`", output::shorten(q, 50)),
        None => "a statement planck did not run".to_string(),
    };
    format!(
        "replay: top hotspot at {}: {}, a {} lock; waited on by {}, taken by {}",
        output::count_of(u64::from(r.steps[h.step_index].concurrency), "client"),
        h.label(),
        h.lock_type,
        statement(h.waiting_statement.as_deref()),
        statement(h.blocking_statement.as_deref()),
    )
}

/// The demo's review: `.planck/demo/review.html` and its Markdown twin,
/// from explain's and replay's JSON as `planck report` would write them.
fn write_review(
    settings: &Settings,
    explain: crate::wire::explain::JsonReport,
    replay: Option<crate::wire::replay::ReplayReport>,
) -> Result<()> {
    let root = crate::findings::source::root_of(&settings.project_dir);
    let inputs = crate::report::Inputs::new(explain, replay, Some(root));
    let dir = demo_dir(settings);
    let (html, md) = (dir.join("review.html"), dir.join("review.md"));
    crate::report::write(&html, crate::report::Output::Html, &inputs)?;
    crate::report::write(&md, crate::report::Output::Markdown, &inputs)?;
    settings.info(&format!(
        "wrote the review: {} (open it in a browser) and {}",
        html.display(),
        md.display()
    ));
    Ok(())
}

/// The bundled example's test run as the demo runs it (it plays the
/// example's API and jobs, see the script): quiet when the demo is.
fn example_app_command(settings: &Settings) -> Vec<String> {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "planck".to_string());
    let mut command = vec![exe, "example-app".to_string()];
    if settings.quiet {
        command.push("--quiet".to_string());
    }
    command
}

/// Where the demo keeps its files: `.planck/demo/` of the project.
fn demo_dir(settings: &Settings) -> PathBuf {
    settings.project_dir.join(".planck").join("demo")
}

/// Every flag is checked before anything is dropped or written.
fn validate(args: &DemoArgs) -> Result<()> {
    if !args.scale.is_finite() || args.scale <= 0.0 {
        return Err(Error::usage_hint(
            format!(
                "invalid --scale {}: it must be a number above 0",
                args.scale
            ),
            "--scale 0.1 loads about 150 MB in a few seconds; 1 is the field report's 1.5 GB",
        ));
    }
    if args.database.is_empty() {
        return Err(Error::usage("--database must name a database"));
    }
    Ok(())
}

/// On a server planck does not manage, the demo drops --database only when it
/// does not exist yet or with --force, and only once the server is known to
/// have what the demo needs (pg_stat_statements preloaded).
async fn guard_database(base: &ConnInfo, args: &DemoArgs) -> Result<()> {
    if base.managed {
        return Ok(());
    }
    let client = base.connect().await?;
    let libs: String = client
        .query_one("SELECT current_setting('shared_preload_libraries')", &[])
        .await
        .map_err(|e| Error::db("reading shared_preload_libraries", e))?
        .get(0);
    if !crate::stats::capture::preloads_pgss(&libs) {
        return Err(Error::NotPreloaded { current: libs });
    }
    let exists = client
        .query_opt(
            "SELECT 1 FROM pg_database WHERE datname = $1",
            &[&args.database],
        )
        .await
        .map_err(|e| Error::db("looking up the demo database", e))?
        .is_some();
    if exists && !args.force {
        return Err(Error::usage_hint(
            format!(
                "refusing to drop database {} of {}: it exists and is not on planck's managed cluster",
                args.database,
                base.display()
            ),
            "pick another name with --database, or add --force if it really is a throwaway",
        ));
    }
    Ok(())
}

pub async fn run(args: DemoArgs, settings: &Settings) -> Result<i32> {
    validate(&args)?;
    let base = settings.conn().await?;
    guard_database(&base, &args).await?;
    let conn = base.with_database(&args.database);
    let example = crate::demo::extract(&demo_dir(settings).join("example"))?;
    let migrations = crate::demo::migrations_dir(&example);
    if !conn.managed {
        settings.info(&format!(
            "the demo works in database {} of {}",
            args.database,
            base.display()
        ));
    }
    // The demo database is the demo's own: always rebuilt from scratch. Each
    // step calls the library, as the commands themselves do.
    let log = settings.log();
    let outcome = crate::migrate::run(&conn, &migrations, true, true, log).await?;
    settings.info(&format!(
        "migrated the bundled example: {} migrations into {}",
        outcome.applied.len(),
        conn.display()
    ));
    // Step 2: record what the example app's test run sends, into a queries
    // file of the demo's own (the committed queries/recorded.toml stays as is).
    let queries = demo_dir(settings).join("recorded.toml");
    let _ = std::fs::remove_file(&queries);
    let record = RecordSettings::resolve(
        &RecordArgs::around(example_app_command(settings)).output(&queries),
        settings,
    )?;
    let recorded = crate::record::record(&conn, &record, log).await?;
    for w in &recorded.warnings {
        settings.warn(w);
    }
    if let Some(status) = recorded.exit
        && !status.success()
    {
        return Err(Error::internal(format!(
            "the example app {}; see its output above",
            status.describe()
        )));
    }
    settings.info(&format!(
        "recorded {} statements of the example app into {}",
        recorded.statements.len(),
        queries.display()
    ));
    // Step 3: seed the bundled spec (the example app's fixtures make way).
    let seed = SeedSettings::for_spec(crate::demo::spec_path(&example), args.scale, settings)?;
    let summary = crate::seed::run(&conn, &seed.options, log).await?;
    let mut out = Vec::new();
    summary
        .render(&mut out, settings.format)
        .map_err(|e| Error::internal(format!("rendering the seed summary: {e}")))?;
    // Step 4: plan every recorded statement as tenant and as admin.
    let baseline = demo_dir(settings).join("baseline.toml");
    let explain = ExplainSettings::for_demo(&queries, baseline, settings)?;
    let report = crate::explain::run(&conn, &explain, log).await?;
    // Its JSON without the environment (the review below has it).
    let printed = Printed {
        report: &report,
        json: None,
    };
    output::render(&mut out, &printed, settings.format)
        .map_err(|e| Error::internal(format!("rendering the explain report: {e}")))?;
    output::emit(&out)?;
    settings.info(&format!(
        "{} (the bundled example has these on purpose: in your project, exit code 1 fails CI)",
        if report.exit_code(explain.fail_on_skipped) == crate::error::exit::FINDINGS {
            "explain found problems"
        } else {
            "explain found nothing to fail on"
        }
    ));
    // Step 5: replay the recording under a short ladder; the top hotspot
    // and the verdict on stderr (stdout keeps the explain report alone).
    let replayed = replay_step(&conn, &queries, args.replay_seconds, settings).await?;
    let replay = replayed.map(|(lines, r)| {
        for line in lines {
            settings.info(&line);
        }
        r
    });
    let json = crate::explain::environment::json_with_environment(&conn, &report).await?;
    write_review(settings, json, replay)?;
    settings.info(&format!("next: `psql {}` to look around", conn.display()));
    Ok(0)
}
