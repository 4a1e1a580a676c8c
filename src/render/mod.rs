//! Every command's result on stdout, rendered from its wire type alone
//! (`crate::wire`): one file per format, each a function per result
//! (`table::migrate`, `markdown::migrate`, ...), and the sentences the
//! table and the Markdown forms both print in [`text`]. Here, each result's
//! [`Render`] impl: the formats it is written in and the function of each.
//!
//! A result is built by its domain (`migrate::report::to_wire`, ...) and
//! printed by its command through [`crate::output::print`]; nothing here
//! reads a domain's own types, so a result read back from its JSON renders
//! as the command printed it.

mod json;
mod markdown;
mod table;
mod text;

use std::io::{self, Write};

use crate::output::Render;
use crate::wire;

impl Render for wire::migrate::MigrateReport {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::migrate(w, self)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::pretty(w, self)
    }
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        markdown::migrate(w, self)
    }
}

impl Render for wire::db::DbStatus {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::db_status(w, self)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::pretty(w, self)
    }
    /// The same lines as the table form.
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        table::db_status(w, self)
    }
}

impl Render for wire::db::DbUrl {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::db_url(w, self)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::line(w, self)
    }
    /// The bare line, as the table form.
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        table::db_url(w, self)
    }
}

impl Render for wire::stats::CaptureSummary {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::capture(w, self)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::pretty(w, self)
    }
    /// The same lines as the table form.
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        table::capture(w, self)
    }
}

impl Render for wire::stats::FidelityReport {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::fidelity(w, self)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::pretty(w, self)
    }
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        markdown::fidelity(w, self)
    }
}

/// What `planck record` prints: its wire report, and whether the table and
/// Markdown forms list every statement (`--verbose`) or the most called
/// (the JSON always lists every one).
pub struct Recorded<'a> {
    pub report: &'a wire::record::RecordReport,
    pub list_all: bool,
}

impl Render for Recorded<'_> {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::record(w, self.report, self.list_all)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::pretty(w, self.report)
    }
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        markdown::record(w, self.report, self.list_all)
    }
}

/// What `planck seed` prints: its wire summary, and the rows each table
/// kept as reference data holds (the kept note of the table and Markdown
/// forms names them; the JSON's `tables_kept` has the names only).
pub struct Seeded<'a> {
    pub summary: &'a wire::seed::SeedSummary,
    pub kept_rows: &'a [(String, u64)],
}

impl Render for Seeded<'_> {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        table::seed(w, self.summary, self.kept_rows)
    }
    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        json::pretty(w, self.summary)
    }
    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        markdown::seed(w, self.summary, self.kept_rows)
    }
}

#[cfg(test)]
mod tests;
