//! `planck explain`: resolves its settings, calls [`crate::explain::run`],
//! renders the report and returns the exit code (0 no new errors, 1 error
//! findings the baseline does not hold, or a skipped statement with
//! `--fail-on-skipped`).

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::explain::report;
use crate::findings::Location;
use crate::output::Format;
use crate::settings::Settings;
pub use crate::settings::explain::ExplainArgs;
use crate::settings::explain::{ExplainSettings, StatementSource};

pub async fn run(args: ExplainArgs, settings: &Settings) -> Result<i32> {
    let explain = ExplainSettings::resolve(&args, settings)?;
    // Inputs first: a missing or broken queries file must not start (or
    // create) the managed cluster.
    if let StatementSource::Queries(path) = &explain.statements {
        crate::queries::QueryFile::load_required(path)?;
    }
    let conn = settings.conn().await?;
    render(&conn, &explain, settings).await
}

async fn render(conn: &ConnInfo, explain: &ExplainSettings, settings: &Settings) -> Result<i32> {
    // Plans on a database whose foreign keys an interrupted seed left
    // dropped would not be the application's: say so first.
    crate::bookkeeping::warn_pending_on(conn, settings.log()).await;
    let report = run_located(conn, explain, settings).await?;
    let mut buf = Vec::new();
    let io = |e: std::io::Error| Error::Other(e.into());
    match settings.format {
        Format::Json => {
            // The JSON carries what a report needs beyond the findings: the
            // server, its planner settings, table sizes and index use.
            let json = crate::explain::environment::json_with_environment(conn, &report).await?;
            serde_json::to_writer_pretty(&mut buf, &json).map_err(|e| Error::Other(e.into()))?;
            buf.push(b'\n');
        }
        Format::Markdown => report::render_markdown(&mut buf, &report).map_err(io)?,
        Format::Table => report::render_table(&mut buf, &report).map_err(io)?,
    }
    crate::output::emit(&buf).map_err(|e| Error::Other(e.into()))?;
    Ok(report.exit_code(explain.fail_on_skipped))
}

/// [`crate::explain::run`], then each finding about an index that has no
/// location yet points at the migration line that last made it (the object
/// map `planck migrate` keeps; nothing when another tool migrated).
pub(crate) async fn run_located(
    conn: &ConnInfo,
    explain: &ExplainSettings,
    settings: &Settings,
) -> Result<report::Report> {
    let mut report = crate::explain::run(conn, explain, settings.log()).await?;
    if !report
        .findings
        .iter()
        .any(|(f, _)| f.index.is_some() && f.location == Location::None)
    {
        return Ok(report);
    }
    // Locations are a help, not the report: a role that may not read
    // planck_migrations still gets its findings, without them.
    let map = async {
        let client = conn.connect().await?;
        crate::migrate::ObjectMap::load(&client, &settings.migrations_dir()).await
    };
    let map = match map.await {
        Ok(map) => map,
        Err(e) => {
            settings.log().debug(&format!(
                "index findings left without a migration line: {e}"
            ));
            return Ok(report);
        }
    };
    let root = crate::findings::source::root_of(&settings.project_dir);
    for (f, _) in &mut report.findings {
        if f.location != Location::None {
            continue;
        }
        let Some(index) = f.index.as_deref() else {
            continue;
        };
        // `schema.name`, or a bare name: an index on the search path
        // (public, unless the schema's own map says otherwise).
        let origin = match index.split_once('.') {
            Some((schema, name)) => map.object_origin(Some(schema), name),
            None => map
                .object_origin(Some("public"), index)
                .or_else(|| map.object_origin(None, index)),
        };
        if let Some(o) = origin {
            f.location = Location::Migration {
                path: crate::findings::source::relative(&o.path, &root),
                line: o.line,
            };
        }
    }
    Ok(report)
}
