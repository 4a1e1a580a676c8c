//! `planck replay`: resolves its settings, reads the workload, runs
//! [`crate::replay::run::run`] with Ctrl-C and SIGTERM ending it after the
//! finished steps, renders the report (to stdout, or whole to each file of
//! `--output`) and returns the exit code (0 ran, 1 the SLO was missed,
//! 130/143 interrupted: the report is still written; 2 when a file of
//! `--output` cannot be).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::cli::replay::ReplayArgs;
use crate::error::{Result, exit};
use crate::output::target::{self, Kind};
use crate::settings::{Settings, replay::ReplaySettings};

pub async fn run(args: ReplayArgs, settings: &Settings) -> Result<i32> {
    let rs = ReplaySettings::resolve(&args, settings)?;
    let w = rs.workload()?;
    // An --output that cannot be written fails before the ladder, not after.
    let outputs = target::resolve(
        "replay",
        &args.output.output,
        Some(settings.format.into()),
        &<crate::wire::replay::ReplayReport as crate::output::Render>::FORMATS
            .iter()
            .map(|&f| Kind::from(f))
            .collect::<Vec<_>>(),
    )?;
    let conn = settings.conn().await?;
    let stop = Arc::new(AtomicBool::new(false));
    let signal = Arc::new(AtomicI32::new(0));
    let signals = crate::signal::Signals::install()?;
    let listener = {
        let (stop, signal) = (stop.clone(), signal.clone());
        tokio::spawn(async move {
            let s = signals.wait().await;
            signal.store(s.exit_code(), Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
        })
    };
    let result = crate::replay::run::run(&conn, w, &rs.options, settings.log(), stop).await;
    listener.abort();
    let report = result?;
    if outputs.is_empty() {
        crate::output::print(&report, settings.format)?;
    }
    for (kind, path) in &outputs {
        let format = kind.format().ok_or_else(|| {
            crate::error::Error::internal(format!("replay has no --output {}", kind.name()))
        })?;
        crate::output::deliver(&report, format, Some(path))?;
    }
    let sig = signal.load(Ordering::Relaxed);
    if sig != 0 {
        return Ok(sig);
    }
    if let Some(slo) = &rs.slo {
        match slo.met(&report) {
            None => {
                settings.warn(&format!(
                    "--slo names {} clients, a step the ladder did not run",
                    slo.concurrency
                ));
                return Ok(exit::USAGE);
            }
            Some(Err(why)) => {
                settings.warn(&format!("SLO missed: {why}"));
                return Ok(exit::FINDINGS);
            }
            Some(Ok(())) => {}
        }
    }
    Ok(exit::OK)
}
