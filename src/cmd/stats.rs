//! `planck stats`: production's planner statistics, captured into a file
//! a team commits (`capture`), compared with a database's own (`compare`),
//! and the SQL that lets a role read them without SELECT on any table
//! (`setup-sql`). Glue only: the work is in [`crate::planner_stats`].

use crate::cli::stats::{CaptureArgs, CompareArgs, StatsCommand};
use crate::error::{Result, exit};
use crate::output;
use crate::planner_stats;
use crate::settings::Settings;
use crate::wire::stats::{CaptureSummary, FORMAT_VERSION, ValuesMode};

/// The default file, in the project.
pub const DEFAULT_FILE: &str = "stats/production.json";

pub async fn run(command: StatsCommand, settings: &Settings) -> Result<i32> {
    match command {
        StatsCommand::Capture(a) => capture(a, settings).await,
        StatsCommand::Compare(a) => compare(a, settings).await,
        StatsCommand::SetupSql(a) => {
            output::emit(planner_stats::setup::sql(a.role.as_deref()).as_bytes())?;
            Ok(exit::OK)
        }
    }
}

async fn capture(args: CaptureArgs, settings: &Settings) -> Result<i32> {
    let to_stdout = args.output.as_deref() == Some(std::path::Path::new("-"));
    let path = match &args.output {
        Some(p) => settings.cwd.join(p),
        None => settings.project_path(std::path::Path::new(DEFAULT_FILE)),
    };
    // A file that cannot be written fails before the database is asked.
    if !to_stdout {
        output::check_writable(&path)?;
    }
    let conn = settings.conn().await?;
    let file = planner_stats::capture(&conn, args.values, settings.log()).await?;
    let text = planner_stats::to_text(&file);
    if to_stdout {
        output::emit(text.as_bytes())?;
        return Ok(exit::OK);
    }
    output::write_file(&path, text.as_bytes())?;
    let summary = CaptureSummary {
        format_version: FORMAT_VERSION,
        file: args
            .output
            .as_deref()
            .unwrap_or(std::path::Path::new(DEFAULT_FILE))
            .display()
            .to_string(),
        values: file.values,
        source: file.source.clone(),
        tables: file.tables.len(),
        columns_with_statistics: file
            .tables
            .iter()
            .map(|t| t.columns.iter().filter(|c| c.analyzed).count())
            .sum(),
        extended_statistics: file.tables.iter().map(|t| t.extended.len()).sum(),
        not_analyzed: file
            .tables
            .iter()
            .filter(|t| !t.analyzed)
            .map(|t| format!("{}.{}", t.schema, t.name))
            .collect(),
        schema_fingerprint: file.schema_fingerprint.clone(),
    };
    output::print(&summary, settings.format)?;
    Ok(exit::OK)
}

async fn compare(args: CompareArgs, settings: &Settings) -> Result<i32> {
    if !(args.scale.is_finite() && args.scale > 0.0) {
        return Err(crate::error::Error::usage(format!(
            "--scale {}: give a positive number (0.1 for a tenth of the rows)",
            args.scale
        )));
    }
    let expected = planner_stats::read_file(&settings.cwd.join(&args.file))?;
    let conn = settings.conn().await?;
    let now = planner_stats::capture(&conn, ValuesMode::Keep, settings.log()).await?;
    let report = planner_stats::compare(&expected, &now, args.scale);
    output::print(&report, settings.format)?;
    Ok(if report.beyond_tolerance > 0 {
        exit::FINDINGS
    } else {
        exit::OK
    })
}
