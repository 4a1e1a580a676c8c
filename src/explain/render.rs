//! The report in each output format ([`crate::output::Render`]): tables and
//! Markdown from [`super::report`], JSON from [`super::json`]. Its own
//! module, above both, since the JSON is built from the report.

use std::io::{self, Write};

use super::json::render_json;
use super::report::{ExplainReport, render_markdown, render_table};
use crate::output::Render;
use crate::wire::explain::JsonReport;

/// What `planck explain` and `planck demo` print.
pub struct Printed<'a> {
    pub report: &'a ExplainReport,
    /// The report's JSON with the server's environment attached
    /// (`planck explain --format json`); without it, JSON is built from the
    /// report alone.
    pub json: Option<JsonReport>,
}

impl Render for Printed<'_> {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        render_table(w, self.report)
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        match &self.json {
            Some(json) => {
                serde_json::to_writer_pretty(&mut *w, json)?;
                writeln!(w)
            }
            None => render_json(w, self.report),
        }
    }

    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        render_markdown(w, self.report)
    }
}
