//! The report in each output format ([`crate::output::Render`]): tables and
//! Markdown from [`super::report`], JSON from [`super::json`]. Its own
//! module, above both, since the JSON is built from the report.

use std::io::{self, Write};

use super::json::render_json;
use super::report::{ExplainReport, render_markdown, render_table};
use crate::output::{Format, Render, csv_record};
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
    const FORMATS: &'static [Format] =
        &[Format::Table, Format::Json, Format::Markdown, Format::Csv];

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

    /// One row per finding, in the report's order, for a spreadsheet or a
    /// tracker's import: `baseline` is `true` for a finding the baseline
    /// holds; an empty cell is what the finding does not have.
    fn csv(&self, w: &mut impl Write) -> io::Result<()> {
        csv_record(w, &CSV_COLUMNS)?;
        for (f, baselined) in &self.report.findings {
            let location = f.location.display().unwrap_or_default();
            let advice = f.advice.as_ref().map_or("", |a| a.sql.as_str());
            csv_record(
                w,
                &[
                    f.severity.as_str(),
                    &f.check.to_string(),
                    f.mode.map_or("", |m| m.as_str()),
                    f.statement.as_deref().unwrap_or(""),
                    f.relation.as_deref().unwrap_or(""),
                    f.index.as_deref().unwrap_or(""),
                    &location,
                    &f.message,
                    advice,
                    if *baselined { "true" } else { "false" },
                ],
            )?;
        }
        Ok(())
    }
}

/// `--format csv`'s header row.
const CSV_COLUMNS: [&str; 10] = [
    "severity",
    "check",
    "mode",
    "statement",
    "relation",
    "index",
    "location",
    "message",
    "advice",
    "baseline",
];
