//! `--format markdown`: each result fit for a pull-request comment, its
//! tables drawn as planck draws every Markdown table.

use std::io::{self, Write};

use super::text;
use crate::output;
use crate::wire::migrate::MigrateReport;
use crate::wire::record::RecordReport;
use crate::wire::seed::SeedSummary;
use crate::wire::stats::FidelityReport;

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

/// `planck stats compare`: a row per deviation, then the drift and the total.
pub(super) fn fidelity(w: &mut impl Write, r: &FidelityReport) -> io::Result<()> {
    let header = text::FIDELITY_HEADER;
    writeln!(w, "| {} |", header.join(" | "))?;
    writeln!(w, "|{}", "---|".repeat(header.len()))?;
    for table in &r.tables {
        for d in &table.deviations {
            let c = text::fidelity_cells(d);
            writeln!(
                w,
                "| {} | {} |",
                output::md_cell(&text::shown_table(&table.table)),
                c.iter()
                    .map(|s| output::md_cell(s))
                    .collect::<Vec<_>>()
                    .join(" | ")
            )?;
        }
    }
    writeln!(w)?;
    for d in &r.drift {
        writeln!(w, "- drift: {}", output::md_cell(d))?;
    }
    writeln!(w, "{}", text::fidelity_total(r))
}

/// What `planck record` did, for a pull request.
pub(super) fn record(w: &mut impl Write, r: &RecordReport, list_all: bool) -> io::Result<()> {
    writeln!(w, "### planck record\n")?;
    if let Some(c) = text::record_command(r) {
        writeln!(w, "{}\n", output::md_cell(&c))?;
    }
    let [recorded, counts] = text::record_headline(r);
    writeln!(w, "{recorded}: {counts}\n")?;
    let dropped = text::dropped_lines(r);
    if !dropped.is_empty() {
        let parts: Vec<&str> = dropped.iter().map(|l| l.trim()).collect();
        writeln!(w, "{}\n", parts.join(" "))?;
    }
    let migrations = text::migration_lines(r, list_all);
    if let Some((head, rest)) = migrations.split_first() {
        writeln!(w, "{}\n", output::md_cell(head))?;
        for l in rest {
            writeln!(w, "- `{}`", output::md_cell(l.trim()).replace('`', "'"))?;
        }
        writeln!(w)?;
    }
    if let Some(l) = text::databases_line(r) {
        writeln!(w, "{}\n", output::md_cell(&l))?;
    }
    for l in text::relay_lines(r) {
        writeln!(w, "{}\n", output::md_cell(&l))?;
    }
    if !r.statements.is_empty() {
        writeln!(w, "| role | RLS | calls | mean | statement | status |")?;
        writeln!(w, "|---|---|---:|---:|---|---|")?;
        let (shown, more) = text::shown_statements(r, list_all);
        for k in shown {
            writeln!(
                w,
                "| {} | {} | {} | {} | `{}` | {} |",
                output::md_cell(&k.role),
                if k.bypass_rls { "bypass" } else { "applies" },
                output::count(k.calls),
                text::ms(k.mean_ms),
                output::md_cell(&text::one_line(&k.query, 120)).replace('`', "'"),
                k.status
            )?;
        }
        if more > 0 {
            writeln!(
                w,
                "\n... and {more} more statement(s) (`--verbose` lists every one)"
            )?;
        }
        writeln!(w)?;
    }
    for v in &r.vanished {
        writeln!(
            w,
            "- vanished: `{}` {}",
            v.id,
            output::md_cell(&text::one_line(&v.query, 80))
        )?;
    }
    for x in &r.warnings {
        writeln!(w, "> warning: {}", output::md_cell(x))?;
    }
    Ok(())
}

/// What `planck seed` loaded, or would: a row per table, then the notes
/// and the tables not seeded.
pub(super) fn seed(
    w: &mut impl Write,
    s: &SeedSummary,
    kept_rows: &[(String, u64)],
) -> io::Result<()> {
    if s.tables.iter().any(|t| t.role.is_some()) {
        writeln!(w, "| table | rows | sized as |\n|---|---:|---|")?;
        for t in &s.tables {
            writeln!(
                w,
                "| {} | {} | {} |",
                output::md_cell(&t.table),
                output::count(t.rows),
                output::md_cell(t.role.as_deref().unwrap_or("-"))
            )?;
        }
        writeln!(w, "| **total** | {} | |", output::count(s.rows))?;
    } else {
        writeln!(w, "| table | rows | size | seconds |\n|---|---:|---:|---:|")?;
        for t in &s.tables {
            writeln!(
                w,
                "| {} | {} | {} | {} |",
                output::md_cell(&t.table),
                output::count(t.rows),
                text::size(t.total_bytes),
                t.seconds.map(|x| format!("{x:.1}")).unwrap_or_default()
            )?;
        }
        writeln!(
            w,
            "| **total** | {} | {} | {:.1} |",
            output::count(s.rows),
            text::size(s.total_bytes),
            s.seconds
        )?;
    }
    let notes = text::seed_notes(s, kept_rows);
    if !notes.is_empty() {
        writeln!(w)?;
        for n in notes {
            writeln!(w, "- {}", output::md_cell(&n))?;
        }
    }
    let not_seeded = text::not_seeded_lines(s);
    if !not_seeded.is_empty() {
        writeln!(w, "\n```text")?;
        for n in not_seeded {
            writeln!(w, "{n}")?;
        }
        writeln!(w, "```")?;
    }
    Ok(())
}
