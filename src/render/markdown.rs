//! `--format markdown`: each result fit for a pull-request comment, its
//! tables drawn as planck draws every Markdown table.

use std::io::{self, Write};

use super::text;
use crate::output;
use crate::wire::migrate::MigrateReport;

pub(super) fn migrate(w: &mut impl Write, r: &MigrateReport) -> io::Result<()> {
    writeln!(w, "### planck migrate\n")?;
    writeln!(w, "{}\n", output::md_cell(&text::migrate_headline(r)))?;
    if !r.objects.is_empty() {
        writeln!(w, "| migration | line | change | object | table |")?;
        writeln!(w, "|---|---:|---|---|---|")?;
        for c in &r.objects {
            writeln!(
                w,
                "| {} | {} | {} {} | `{}` | {} |",
                output::md_cell(&c.migration),
                c.line,
                c.action,
                c.kind,
                output::md_cell(&text::migrate_object(c)),
                output::md_cell(c.table.as_deref().unwrap_or(""))
            )?;
        }
    }
    Ok(())
}
