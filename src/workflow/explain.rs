//! `planck explain`'s run as the commands use it: the explain domain's
//! report, then each index finding without a location pointed at the
//! migration line that made the index, from the migrate domain's object
//! map. It spans two domains, so it lives here rather than in either, and
//! both `cmd::explain` and `cmd::check` call it (a command never calls
//! another command's file).

use std::path::Path;

use crate::db::ConnInfo;
use crate::error::Result;
use crate::explain::ExplainSettings;
use crate::explain::report::ExplainReport;
use crate::findings::Location;
use crate::output::Log;

/// [`crate::explain::run()`], then each finding about an index that has no
/// location yet points at the migration line that last made it (the object
/// map `planck migrate` keeps; nothing when another tool migrated).
pub async fn run_located(
    conn: &ConnInfo,
    explain: &ExplainSettings,
    log: Log,
    migrations_dir: &Path,
    project_dir: &Path,
) -> Result<ExplainReport> {
    let mut report = crate::explain::run(conn, explain, log).await?;
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
        crate::migrate::ObjectMap::load(&client, migrations_dir).await
    };
    let map = match map.await {
        Ok(map) => map,
        Err(e) => {
            log.debug(&format!(
                "index findings left without a migration line: {e}"
            ));
            return Ok(report);
        }
    };
    let root = crate::findings::source::root_of(project_dir);
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
