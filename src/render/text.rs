//! What the table and the Markdown forms of a result both say: its
//! sentences and cells, built once from the wire type, laid out by
//! `table.rs` and `markdown.rs`.

use crate::output;
use crate::wire::migrate::{MigrateReport, Object};
use crate::wire::record::{Exit, RecordReport, Relay, Statement};
use crate::wire::seed::{SeedSummary, ShardSpread};
use crate::wire::stats::{Deviation, FidelityReport};

/// `db: applied 2 migration(s): a.sql, b.sql`, or `db: up to date (...)`.
pub(super) fn migrate_headline(r: &MigrateReport) -> String {
    if r.applied.is_empty() {
        format!(
            "{}: up to date ({} migrations applied earlier)",
            r.database, r.already_applied
        )
    } else {
        format!(
            "{}: applied {} migration(s): {}",
            r.database,
            r.applied.len(),
            r.applied.join(", ")
        )
    }
}

/// `public.items_slug (was items_s)`.
pub(super) fn migrate_object(c: &Object) -> String {
    let mut s = format!("{}.{}", c.schema, c.name);
    if let Some(from) = &c.renamed_from {
        s.push_str(&format!(" (was {from})"));
    }
    s
}

/// The fidelity report's columns.
pub(super) const FIDELITY_HEADER: [&str; 7] = [
    "table",
    "column",
    "statistic",
    "file",
    "now",
    "deviation",
    "judged",
];

/// A deviation's cells after its table's.
pub(super) fn fidelity_cells(d: &Deviation) -> [String; 6] {
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
pub(super) fn shown_table(qualified: &str) -> String {
    match qualified.split_once('.') {
        Some((s, n)) => crate::catalog::display_name(s, n),
        None => qualified.to_string(),
    }
}

/// `1 statistic beyond tolerance over 2 tables`, and whether the schema
/// differs from the file's.
pub(super) fn fidelity_total(r: &FidelityReport) -> String {
    format!(
        "{} beyond tolerance over {}{}",
        output::counted(r.beyond_tolerance as u64, "statistic", "statistics"),
        output::count_of(r.tables.len() as u64, "table"),
        if r.same_schema {
            ""
        } else {
            " (the schema differs from the file's)"
        }
    )
}

/// A statement's text on one line, at most `max` characters.
pub(super) fn one_line(q: &str, max: usize) -> String {
    let s = crate::queries::normalize_space(q);
    if s.chars().count() <= max {
        s
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Milliseconds, or seconds from one second on.
pub(super) fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else {
        format!("{v:.2} ms")
    }
}

/// The summary, in lines that fit an 80-column terminal (a long path aside).
pub(super) fn record_headline(r: &RecordReport) -> [String; 2] {
    let dropped: usize = r.dropped.values().sum();
    [
        format!("{} statement(s) recorded into {}", r.kept, r.file),
        format!(
            "{} added, {} updated, {} unchanged, {} hand-added; {} noise dropped, {} vanished{}",
            r.added,
            r.updated,
            r.unchanged,
            r.manual,
            dropped,
            r.vanished.len(),
            if r.pruned && !r.vanished.is_empty() {
                " (pruned)"
            } else {
                ""
            }
        ),
    ]
}

/// `exited with status 1`, `was killed by signal 9 (SIGKILL)`.
fn exit_words(e: &Exit) -> String {
    match (e.code, e.signal) {
        (_, Some(s)) => format!(
            "was killed by signal {s} ({})",
            e.signal_name.as_deref().unwrap_or("unknown signal")
        ),
        (c, None) => format!("exited with status {}", c.unwrap_or_default()),
    }
}

/// `command `npm test` exited with status 0`, when there was a command.
pub(super) fn record_command(r: &RecordReport) -> Option<String> {
    r.exit.as_ref().map(|e| {
        format!(
            "command `{}` {}",
            output::shell_words(&r.command),
            exit_words(e)
        )
    })
}

/// `dropped: transaction 4, setting 2, ...`, wrapped at 80 columns: the
/// reasons that dropped any, in the order the noise rules list them.
pub(super) fn dropped_lines(r: &RecordReport) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from("dropped:");
    let parts: Vec<String> = crate::stats::noise::Reason::ALL
        .iter()
        .filter_map(|reason| {
            let n = r.dropped.get(reason.name()).copied().unwrap_or(0);
            (n > 0).then(|| format!("{} {n}", reason.name()))
        })
        .collect();
    for (i, p) in parts.iter().enumerate() {
        let piece = if i + 1 < parts.len() {
            format!(" {p},")
        } else {
            format!(" {p}")
        };
        if line.chars().count() + piece.chars().count() > 80 {
            lines.push(std::mem::replace(&mut line, "        ".to_string()));
        }
        line.push_str(&piece);
    }
    if !parts.is_empty() {
        lines.push(line);
    }
    lines
}

/// The statements left out as migrations' own (issue 13, 6), so a
/// reviewer of the queries file sees what is missing and why: a count, then
/// the texts (the first [`MIGRATION_SHOWN`], every one with `list_all`).
pub(super) fn migration_lines(r: &RecordReport, list_all: bool) -> Vec<String> {
    let n = r.migration_only.len();
    if n == 0 {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "{n} statement(s) run only by migrations left out (every call was in a transaction that changed the schema or wrote a migration tool's bookkeeping, or ran on its connection before the tool recorded the migration there):"
    )];
    let shown = if list_all { n } else { n.min(MIGRATION_SHOWN) };
    for q in &r.migration_only[..shown] {
        lines.push(format!("  {}", one_line(q, 76)));
    }
    if shown < n {
        lines.push(format!(
            "  ... and {} more (--verbose lists every one)",
            n - shown
        ));
    }
    lines
}

/// Migration-only statements the compact summary lists.
const MIGRATION_SHOWN: usize = 5;

/// What the capture relay saw (issue 12, 5): connections, transactions,
/// shapes, the longest, and the statements that opened long ones.
pub(super) fn relay_lines(r: &RecordReport) -> Vec<String> {
    let Some(r) = &r.relay else {
        return Vec::new();
    };
    let mut lines = vec![relay_head(r)];
    if let (Some(t), Some(tn), Some(n), Some(nt)) = (
        r.longest_ms,
        r.longest_statements,
        r.most_statements,
        r.most_statements_ms,
    ) {
        lines.push(format!(
            "longest transaction: {} ({tn} statement(s)); most statements: {n} ({})",
            ms(t),
            ms(nt)
        ));
    }
    if !r.slow_openers.is_empty() {
        let parts: Vec<String> = r
            .slow_openers
            .iter()
            .map(|(s, n)| format!("{} ({n})", one_line(s, 40)))
            .collect();
        lines.push(format!(
            "opened transactions open over 100 ms: {}",
            parts.join(", ")
        ));
    }
    if r.databases.len() > 1 || r.unmatched > 0 || r.relay_only > 0 {
        let dbs: Vec<&str> = r.databases.keys().map(String::as_str).collect();
        lines.push(format!(
            "databases used: {}; texts matched by queryid {}, by text {}, left out as noise {}, unmatched {}{}",
            dbs.join(", "),
            r.matched_by_queryid,
            r.matched_by_text,
            r.noise,
            r.unmatched,
            if r.relay_only > 0 {
                format!(
                    "; {} statement(s) from the relay only (not in pg_stat_statements: evicted, or kept under another text)",
                    r.relay_only
                )
            } else {
                String::new()
            }
        ));
    }
    lines
}

/// `relay: 3 connection(s), 40 transaction(s), ...`.
fn relay_head(r: &Relay) -> String {
    format!(
        "relay: {} connection(s), {} transaction(s){}, {} shape(s) written{}, {} autocommit statement(s){}",
        r.connections,
        r.transactions,
        if r.migration_transactions > 0 {
            format!(
                " ({} of them migrations', not written)",
                r.migration_transactions
            )
        } else {
            String::new()
        },
        r.shapes_written,
        if r.shapes_over_limit > 0 {
            format!(
                " ({} more beyond --max-transactions, {} calls)",
                r.shapes_over_limit, r.calls_over_limit
            )
        } else {
            String::new()
        },
        r.autocommit_statements,
        if r.migration_autocommit_statements > 0 {
            format!(
                " ({} of them migrations')",
                r.migration_autocommit_statements
            )
        } else {
            String::new()
        }
    )
}

/// The databases recorded, when the run used more than the target (issue 12, 4).
pub(super) fn databases_line(r: &RecordReport) -> Option<String> {
    (r.recorded_databases.len() > 1)
        .then(|| format!("databases recorded: {}", r.recorded_databases.join(", ")))
}

/// Statements shown in the summary: every one with `list_all`, else the
/// [`TOP`] most called (in the file's order), and how many are left out.
pub(super) fn shown_statements(r: &RecordReport, list_all: bool) -> (Vec<&Statement>, usize) {
    if list_all || r.statements.len() <= TOP {
        return (r.statements.iter().collect(), 0);
    }
    let mut by_calls: Vec<(usize, &Statement)> = r.statements.iter().enumerate().collect();
    by_calls.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(&b.0)));
    let mut top: Vec<(usize, &Statement)> = by_calls.into_iter().take(TOP).collect();
    top.sort_by_key(|(i, _)| *i);
    (
        top.into_iter().map(|(_, k)| k).collect(),
        r.statements.len() - TOP,
    )
}

/// Statements the compact summary shows (issue 12, 4).
const TOP: usize = 20;

/// Bytes with a unit, `-` when not measured (a dry run).
pub(super) fn size(b: Option<u64>) -> String {
    b.map(output::bytes).unwrap_or_else(|| "-".into())
}

/// A seed's notes as sentences, one a line: shards, the statistics file,
/// the recording followed, triggers, keys, the tables kept (each reference
/// table with its rows, from `kept_rows`) and the partitions created.
pub(super) fn seed_notes(s: &SeedSummary, kept_rows: &[(String, u64)]) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.tables {
        if let Some(x) = &t.shards {
            out.push(shard_line(&t.table, x));
        }
    }
    if let Some(st) = &s.stats {
        out.push(if st.not_followed.is_empty() {
            format!(
                "shaped by the statistics of {}: every statistic followed",
                st.file
            )
        } else {
            format!(
                "shaped by the statistics of {}; {} kind(s) of statistic not followed \
                 (the spec cannot say them), each below",
                st.file,
                st.not_followed.len()
            )
        });
        out.extend(
            st.not_followed
                .iter()
                .map(|n| format!("not followed: {}", n.line())),
        );
    }
    if !s.followed_recording.is_empty() {
        out.push(format!(
            "followed the recording ([observed] of the queries file): {}",
            s.followed_recording.join("; ")
        ));
    }
    if s.triggers_disabled > 0 {
        out.push(format!(
            "triggers disabled during the load: {} on {} table(s), enabled again \
             (what they derive, counters or search vectors, is generated, not derived)",
            s.triggers_disabled, s.trigger_tables
        ));
    }
    if !s.event_triggers.is_empty() {
        out.push(format!(
            "event triggers fired on planck's DDL (only a superuser can silence them): {}",
            s.event_triggers.join(", ")
        ));
    }
    for k in &s.kept_in_place {
        out.push(format!(
            "loaded with its key in place (slower; planck never drops a user's view): {k}"
        ));
    }
    let migrations: Vec<String> = s
        .tables_kept
        .iter()
        .filter(|t| !s.seeded_before.contains(t))
        .filter(|t| {
            !s.tables_held
                .iter()
                .any(|h| h.starts_with(&format!("{t} (")))
        })
        .map(|t| match kept_rows.iter().find(|(k, _)| k == t) {
            Some((_, n)) => format!("{t} ({})", output::count_of(*n, "row")),
            None => t.clone(),
        })
        .collect();
    if !migrations.is_empty() {
        out.push(format!(
            "kept as they were (rows the migrations wrote, migration bookkeeping): {}",
            migrations.join(", ")
        ));
    }
    if !s.tables_held.is_empty() {
        out.push(format!(
            "kept as they were (rows left alone reference them; replacing them would break those keys): {}",
            s.tables_held.join(", ")
        ));
    }
    if !s.seeded_before.is_empty() {
        out.push(format!(
            "kept as they were (rows an earlier planck seed wrote; --truncate replaces them): {}",
            s.seeded_before.join(", ")
        ));
    }
    if !s.partitions_created.is_empty() {
        out.push(format!(
            "created partitions for tables that had none (`planck seed --restore --forget TABLE` drops them): {}",
            s.partitions_created.join(", ")
        ));
    }
    out
}

/// The tables not seeded, one paragraph each: the cause, its hints and
/// the spec lines that fix it (a cascade names the table it depends on).
pub(super) fn not_seeded_lines(s: &SeedSummary) -> Vec<String> {
    if s.not_seeded.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "partial seed: {} table(s) not seeded, left as they were \
         (--all-or-nothing refuses the whole run instead):",
        s.not_seeded.len()
    )];
    for u in &s.not_seeded {
        match &u.depends_on {
            Some(p) => out.push(format!(
                "- {}: not seeded because {p} is not (a NOT NULL foreign key)",
                u.table
            )),
            None => {
                // A server error's DETAIL on the same line.
                let cause: Vec<&str> = u
                    .reason
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                out.push(format!("- {}", cause.join(" ")));
                out.extend(u.hints.iter().map(|h| format!("  hint: {h}")));
                out.push(format!("  spec: {}", u.spec.as_deref().unwrap_or_default()));
            }
        }
    }
    out
}

/// `ads: 32 shards on 2 workers; the heaviest, 102072 on host:port, holds
/// 9.8 % of the rows and 9.5 % of the bytes (even: 3.1 %); per worker: ...`
pub(super) fn shard_line(table: &str, s: &ShardSpread) -> String {
    let pct = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            100.0 * part as f64 / whole as f64
        }
    };
    let workers: Vec<String> = s
        .workers
        .iter()
        .map(|(w, b)| format!("{w} {:.0} %", pct(*b, s.bytes)))
        .collect();
    format!(
        "{table}: {} shards on {} worker(s); the heaviest, {} on {}, holds {:.1} % of the rows \
         and {:.1} % of the bytes (an even spread: {:.1} %); bytes per worker: {}",
        s.shards,
        s.workers.len(),
        s.heaviest_shard,
        s.heaviest_worker,
        pct(s.heaviest_rows, s.rows),
        pct(s.heaviest_bytes, s.bytes),
        100.0 / s.shards.max(1) as f64,
        workers.join(", ")
    )
}

/// `text` broken at spaces into lines of at most `width` characters, the
/// lines after the first indented by two.
pub(super) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = format!("  {word}");
        } else {
            if len > 0 {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    out.push_str(&line);
    out
}
