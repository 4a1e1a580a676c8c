//! `--format table` (the default): each result as lines and comfy-tables
//! that fit an 80-column terminal.

use std::io::{self, Write};

use super::text;
use crate::output;
use crate::wire::db::{DbStatus, DbUrl};
use crate::wire::migrate::MigrateReport;

pub(super) fn migrate(w: &mut impl Write, r: &MigrateReport) -> io::Result<()> {
    writeln!(w, "{}", text::migrate_headline(r))?;
    if !r.objects.is_empty() {
        let mut t = output::table(&["migration", "line", "change", "object", "table"]);
        for c in &r.objects {
            t.add_row(vec![
                c.migration.clone(),
                c.line.to_string(),
                format!("{} {}", c.action, c.kind),
                text::migrate_object(c),
                c.table.clone().unwrap_or_default(),
            ]);
        }
        writeln!(w, "{t}")?;
    }
    Ok(())
}

pub(super) fn db_status(w: &mut impl Write, s: &DbStatus) -> io::Result<()> {
    writeln!(w, "{}: {}", s.state, s.data_dir.display())?;
    if let Some(u) = &s.url {
        writeln!(w, "url: {u}")?;
    }
    writeln!(w, "postgres: {} ({})", s.server_version, s.bindir.display())?;
    for (i, x) in s.citus_workers.iter().enumerate() {
        write!(w, "citus worker {}: {}", i + 1, x.state)?;
        if let Some(p) = x.port {
            write!(w, " on port {p}")?;
        }
        writeln!(w, " ({})", x.data_dir.display())?;
    }
    Ok(())
}

pub(super) fn db_url(w: &mut impl Write, u: &DbUrl) -> io::Result<()> {
    writeln!(w, "{}", u.url)
}
