//! `planck stats`' results on stdout: what a capture wrote, and the
//! fidelity report, as a table, JSON or Markdown.

use std::io::{self, Write};

use crate::output::{self, Render, md_cell};
use crate::wire::stats::{CaptureSummary, Deviation, FidelityReport};

impl Render for CaptureSummary {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(
            w,
            "wrote {}: {} ({} with statistics), {}, {}",
            self.file,
            output::count_of(self.tables as u64, "table"),
            self.tables - self.not_analyzed.len(),
            output::counted(self.columns_with_statistics as u64, "column", "columns"),
            output::counted(
                self.extended_statistics as u64,
                "extended statistics object",
                "extended statistics objects"
            ),
        )?;
        writeln!(
            w,
            "values: {}; read through {}",
            self.values.as_str(),
            if self.source == "functions" {
                "planck_stats' functions"
            } else {
                "pg_stats"
            }
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

/// A table as findings show it: bare in `public`, else `schema.name`.
fn shown(qualified: &str) -> String {
    match qualified.split_once('.') {
        Some((s, n)) => crate::catalog::display_name(s, n),
        None => qualified.to_string(),
    }
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
                let mut row = vec![shown(&table.table)];
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
                    md_cell(&shown(&table.table)),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;
    use crate::wire::stats::{FORMAT_VERSION, TableFidelity, ValuesMode};

    fn dev(column: Option<&str>, stat: &str, e: f64, a: f64, d: f64, tol: f64) -> Deviation {
        Deviation {
            column: column.map(str::to_string),
            statistic: stat.into(),
            expected: e,
            actual: a,
            deviation: d,
            tolerance: tol,
            within: d.abs() <= tol,
        }
    }

    fn rendered(r: &impl Render, format: Format) -> String {
        let mut out = Vec::new();
        output::render(&mut out, r, format).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_fidelity_report_reads_as_a_table_and_in_markdown() {
        let report = FidelityReport {
            format_version: FORMAT_VERSION,
            same_schema: false,
            drift: vec!["only in the database: column public.orders.note".into()],
            tables: vec![TableFidelity {
                table: "public.orders".into(),
                expected_rows: 10000.0,
                actual_rows: 9870.0,
                deviations: vec![
                    dev(Some("status"), "mcv_freq[1]", 0.95, 0.91, -0.04, 0.02),
                    dev(None, "rows", 10000.0, 9870.0, -0.013, 0.02),
                    dev(Some("created"), "correlation", 1.0, 0.97, -0.03, 0.1),
                ],
            }],
            beyond_tolerance: 1,
        };
        insta::assert_snapshot!("fidelity_table", rendered(&report, Format::Table));
        insta::assert_snapshot!("fidelity_markdown", rendered(&report, Format::Markdown));
    }

    #[test]
    fn the_capture_summary_names_the_file_and_the_tables_without_statistics() {
        let summary = CaptureSummary {
            format_version: FORMAT_VERSION,
            file: "stats/production.json".into(),
            values: ValuesMode::Shape,
            source: "functions".into(),
            tables: 3,
            columns_with_statistics: 14,
            extended_statistics: 1,
            not_analyzed: vec!["audit.events".into()],
            schema_fingerprint: "bd4642fa".into(),
        };
        insta::assert_snapshot!("capture_summary", rendered(&summary, Format::Table));
    }
}
