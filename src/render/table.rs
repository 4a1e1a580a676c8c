//! `--format table` (the default): each result as lines and comfy-tables
//! that fit an 80-column terminal.

use std::io::{self, Write};

use super::text;
use crate::output;
use crate::wire::db::{DbStatus, DbUrl};
use crate::wire::migrate::MigrateReport;
use crate::wire::record::RecordReport;
use crate::wire::seed::SeedSummary;
use crate::wire::stats::{CaptureSummary, FidelityReport};

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

/// What `planck stats capture` wrote.
pub(super) fn capture(w: &mut impl Write, s: &CaptureSummary) -> io::Result<()> {
    writeln!(
        w,
        "wrote {}: {} ({} with statistics), {}, {}",
        s.file,
        output::count_of(s.tables as u64, "table"),
        s.tables - s.not_analyzed.len(),
        output::counted(s.columns_with_statistics as u64, "column", "columns"),
        output::counted(
            s.extended_statistics as u64,
            "extended statistics object",
            "extended statistics objects"
        ),
    )?;
    writeln!(
        w,
        "values: {}; read through {}",
        s.values.as_str(),
        if s.source == "functions" {
            "planck_stats' functions"
        } else {
            "pg_stats"
        }
    )?;
    if !s.not_analyzed.is_empty() {
        writeln!(
            w,
            "no statistics (never analyzed, or hidden from this role): {}",
            s.not_analyzed.join(", ")
        )?;
    }
    writeln!(w, "schema fingerprint: {}", s.schema_fingerprint)
}

/// `planck stats compare`: a row per deviation, then the drift and the total.
pub(super) fn fidelity(w: &mut impl Write, r: &FidelityReport) -> io::Result<()> {
    let mut t = output::table(&text::FIDELITY_HEADER);
    for table in &r.tables {
        for d in &table.deviations {
            let mut row = vec![text::shown_table(&table.table)];
            row.extend(text::fidelity_cells(d));
            t.add_row(row);
        }
    }
    writeln!(w, "{t}")?;
    for d in &r.drift {
        writeln!(w, "drift: {d}")?;
    }
    writeln!(w, "{}", text::fidelity_total(r))
}

/// What `planck record` did: its top statements (every one with
/// `list_all`), then the summary lines.
pub(super) fn record(w: &mut impl Write, r: &RecordReport, list_all: bool) -> io::Result<()> {
    if let Some(c) = text::record_command(r) {
        writeln!(w, "{c}")?;
    }
    if !r.statements.is_empty() {
        let mut t = output::table(&["role", "rls", "calls", "mean", "statement"]);
        let (shown, more) = text::shown_statements(r, list_all);
        for k in shown {
            t.add_row(vec![
                k.role.clone(),
                if k.bypass_rls { "bypass" } else { "applies" }.to_string(),
                output::count(k.calls),
                if k.from_relay {
                    "-".to_string()
                } else {
                    text::ms(k.mean_ms)
                },
                text::one_line(&k.query, 200),
            ]);
        }
        writeln!(w, "{t}")?;
        if more > 0 {
            writeln!(
                w,
                "... and {more} more statement(s), fewer calls (--verbose lists every one)"
            )?;
        }
    }
    for l in text::record_headline(r) {
        writeln!(w, "{l}")?;
    }
    for l in text::dropped_lines(r) {
        writeln!(w, "{l}")?;
    }
    for l in text::migration_lines(r, list_all) {
        writeln!(w, "{l}")?;
    }
    if let Some(l) = text::databases_line(r) {
        writeln!(w, "{l}")?;
    }
    for l in text::relay_lines(r) {
        writeln!(w, "{l}")?;
    }
    for v in &r.vanished {
        let head = format!("vanished: {} [{}] ", v.id, v.role.as_deref().unwrap_or("-"));
        let room = 80usize.saturating_sub(head.chars().count()).max(20);
        writeln!(w, "{head}{}", text::one_line(&v.query, room))?;
    }
    Ok(())
}

/// What `planck seed` loaded (or would, in a dry run: each table's sizing
/// role where a load shows sizes and seconds).
pub(super) fn seed(
    w: &mut impl Write,
    s: &SeedSummary,
    kept_rows: &[(String, u64)],
) -> io::Result<()> {
    let roles = s.tables.iter().any(|t| t.role.is_some());
    let mut t = if roles {
        output::table(&["table", "rows", "sized as"])
    } else {
        output::table(&["table", "rows", "size", "seconds"])
    };
    for x in &s.tables {
        let mut row = vec![x.table.clone(), output::count(x.rows)];
        if roles {
            row.push(x.role.clone().unwrap_or_else(|| "-".into()));
        } else {
            row.push(text::size(x.total_bytes));
            row.push(
                x.seconds
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        t.add_row(row);
    }
    let mut total = vec!["total".to_string(), output::count(s.rows)];
    if roles {
        total.push(String::new());
    } else {
        total.push(text::size(s.total_bytes));
        total.push(if s.dry_run {
            "-".into()
        } else {
            format!("{:.1}", s.seconds)
        });
    }
    t.add_row(total);
    writeln!(w, "{t}")?;
    if let (Some(load), Some(copy), Some(index), Some(vacuum)) = (
        s.load_seconds,
        s.copy_seconds,
        s.index_seconds,
        s.vacuum_seconds,
    ) {
        writeln!(
            w,
            "seeded {} rows ({} of table data, {} with indexes) in {:.1} s\n  \
             load and index {:.1} s (COPY {:.1} s), foreign keys {:.1} s, vacuum {:.1} s\n  \
             seed {} (the same seed gives the same tables)",
            output::count(s.rows),
            text::size(s.data_bytes),
            text::size(s.total_bytes),
            s.seconds,
            load,
            copy,
            index,
            vacuum,
            s.seed
        )?;
    }
    for n in text::seed_notes(s, kept_rows) {
        writeln!(w, "{}", text::wrap(&n, 80))?;
    }
    // The spec lines stay whole: they are meant to be copied.
    for n in text::not_seeded_lines(s) {
        if n.starts_with("  spec: ") {
            writeln!(w, "{n}")?;
        } else if let Some(rest) = n.strip_prefix("  ") {
            for l in text::wrap(rest, 78).lines() {
                writeln!(w, "  {l}")?;
            }
        } else {
            writeln!(w, "{}", text::wrap(&n, 80))?;
        }
    }
    Ok(())
}
