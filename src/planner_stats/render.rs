//! `planck stats`' results on stdout: what a capture wrote, and the
//! fidelity report, as a table, JSON or Markdown.

use std::io::{self, Write};

use crate::output::{self, Render, md_cell};
use crate::wire::stats::{CaptureSummary, Deviation, FidelityReport};

impl Render for CaptureSummary {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(
            w,
            "captured {} ({} with statistics), {} and {} into {} (values: {}, read through {})",
            output::count_of(self.tables as u64, "table"),
            self.tables - self.not_analyzed.len(),
            output::counted(self.columns_with_statistics as u64, "column", "columns"),
            output::counted(
                self.extended_statistics as u64,
                "extended statistics object",
                "extended statistics objects"
            ),
            self.file,
            self.values.as_str(),
            self.source
        )?;
        if !self.not_analyzed.is_empty() {
            writeln!(
                w,
                "no statistics (never analyzed, or hidden from this role): {}",
                self.not_analyzed.join(", ")
            )?;
        }
        writeln!(w, "schema fingerprint: {}", self.schema_fingerprint)
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, self)?;
        writeln!(w)
    }

    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        self.table(w)
    }
}

fn cells(d: &Deviation) -> [String; 6] {
    let num = |x: f64| {
        if x.abs() >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.3}")
        }
    };
    let dev = if matches!(d.statistic.as_str(), "rows" | "n_distinct") {
        format!("{:+.1} %", d.deviation * 100.0)
    } else {
        format!("{:+.3}", d.deviation)
    };
    [
        d.column.clone().unwrap_or_else(|| "(table)".to_string()),
        d.statistic.clone(),
        num(d.expected),
        num(d.actual),
        dev,
        if d.within { "ok" } else { "BEYOND" }.to_string(),
    ]
}

const HEADER: [&str; 7] = [
    "table",
    "column",
    "statistic",
    "file",
    "now",
    "deviation",
    "judged",
];

impl Render for FidelityReport {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        let mut t = output::table(&HEADER);
        for table in &self.tables {
            for d in &table.deviations {
                let mut row = vec![table.table.clone()];
                row.extend(cells(d));
                t.add_row(row);
            }
        }
        writeln!(w, "{t}")?;
        for d in &self.drift {
            writeln!(w, "drift: {d}")?;
        }
        writeln!(
            w,
            "{} beyond tolerance over {}{}",
            output::counted(self.beyond_tolerance as u64, "statistic", "statistics"),
            output::count_of(self.tables.len() as u64, "table"),
            if self.same_schema {
                ""
            } else {
                " (the schema differs from the file's)"
            }
        )
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, self)?;
        writeln!(w)
    }

    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(w, "| {} |", HEADER.join(" | "))?;
        writeln!(w, "|{}", "---|".repeat(HEADER.len()))?;
        for table in &self.tables {
            for d in &table.deviations {
                let c = cells(d);
                writeln!(
                    w,
                    "| {} | {} |",
                    md_cell(&table.table),
                    c.iter().map(|s| md_cell(s)).collect::<Vec<_>>().join(" | ")
                )?;
            }
        }
        writeln!(w)?;
        for d in &self.drift {
            writeln!(w, "- drift: {}", md_cell(d))?;
        }
        writeln!(
            w,
            "{} beyond tolerance over {}",
            output::counted(self.beyond_tolerance as u64, "statistic", "statistics"),
            output::count_of(self.tables.len() as u64, "table")
        )
    }
}
