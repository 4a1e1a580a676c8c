//! What a seed reports, and its three renderers (table, Markdown, JSON).
//!
//! [`Summary`] is built once from the plan and the load report; each
//! renderer writes it to any `impl Write` (stdout in the command, a
//! `Vec<u8>` in the snapshot tests). The JSON form is a wire type of its own
//! ([`JsonSummary`]) and changes only with `format_version`.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::output::{self, Render};
use crate::planner_stats::seed_spec::NotFollowed;
use crate::seed::load::{LoadNotes, LoadReport, ShardSpread};
use crate::seed::row::plan::{SeedPlan, Unseedable};
use crate::seed::sizing_roles::{Role, TableRole};
use crate::seed::spec::MadeFrom;

/// What kind of run a summary describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Rows were loaded.
    Loaded,
    /// `--dry-run`: the plan only.
    DryRun,
    /// `--generate-only` or `--restore`: progress lines said it all; nothing on stdout.
    Quiet,
}

/// One table's line.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    pub table: String,
    pub rows: u64,
    /// Heap and TOAST bytes; None in a dry run.
    pub data_bytes: Option<u64>,
    /// With indexes; None in a dry run.
    pub total_bytes: Option<u64>,
    pub seconds: Option<f64>,
    /// On Citus, a distributed table's spread over its shards.
    pub shards: Option<ShardSpread>,
    /// How zero-spec sizing read the table (`core: referenced by 5
    /// tables`); set by [`Summary::set_roles`] in a dry run.
    pub role: Option<String>,
}

/// Seconds per phase of a load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    pub load: f64,
    pub copy: f64,
    pub index: f64,
    pub vacuum: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub kind: Kind,
    pub seed: u64,
    /// Wall-clock seconds from the plan to the end.
    pub seconds: f64,
    pub tables: Vec<TableRow>,
    pub phases: Option<Phases>,
    /// Triggers disabled, keys loaded in place, tables left as they were.
    pub notes: LoadNotes,
    /// Columns whose values or NULL share followed the queries file's
    /// `[observed]` ("schema.table.column: values, NULL share 1 %").
    pub followed_recording: Vec<String>,
    /// The tables planning could not seed, left as they were (issue 30
    /// point 4): a run that leaves any is partial and exits 1.
    pub not_seeded: Vec<Unseedable>,
    /// Rows of the tables kept as reference data, by name (set with the
    /// roles): the kept note says how many each holds.
    pub kept_rows: Vec<(String, u64)>,
    /// `--stats FILE`: the file and what the spec made of it does not
    /// follow (set with [`Summary::set_stats`]).
    pub stats: Option<StatsSource>,
}

/// `planck seed --stats FILE`: the file the data was shaped by, and what
/// of it the seed could not follow (wire type: the JSON summary's `stats`,
/// changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsSource {
    /// The statistics file, as the seed read it.
    pub file: String,
    /// Each kind of statistic the spec made of the file cannot say, with
    /// the columns (or tables) it concerns; empty when it follows them all.
    pub not_followed: Vec<NotFollowed>,
}

impl Summary {
    /// The summary of a load (`report`), or of a plan alone.
    pub fn of(
        plan: &SeedPlan,
        report: Option<&LoadReport>,
        seconds: f64,
        dry_run: bool,
    ) -> Summary {
        let tables = match report {
            Some(r) => r
                .tables
                .iter()
                .map(|t| TableRow {
                    table: t.table.clone(),
                    rows: t.rows,
                    data_bytes: Some(t.data_bytes),
                    total_bytes: Some(t.bytes),
                    seconds: Some(t.seconds),
                    shards: t.shards.clone(),
                    role: None,
                })
                .collect(),
            None => plan
                .tables
                .iter()
                .map(|t| TableRow {
                    table: t.display.clone(),
                    rows: t.rows,
                    data_bytes: None,
                    total_bytes: None,
                    seconds: None,
                    shards: None,
                    role: None,
                })
                .collect(),
        };
        Summary {
            kind: match (report, dry_run) {
                (Some(_), _) => Kind::Loaded,
                (None, true) => Kind::DryRun,
                (None, false) => Kind::Quiet,
            },
            seed: plan.seed,
            seconds,
            tables,
            phases: report.map(|r| Phases {
                load: r.load_seconds,
                copy: r.copy_seconds,
                index: r.index_seconds,
                vacuum: r.vacuum_seconds,
            }),
            notes: report.map(|r| r.notes.clone()).unwrap_or_default(),
            followed_recording: plan.followed_recording.clone(),
            not_seeded: plan
                .skipped
                .iter()
                .chain(report.iter().flat_map(|r| &r.not_loaded))
                .cloned()
                .collect(),
            kept_rows: Vec::new(),
            stats: None,
        }
    }

    /// Gives each table its sizing role ([`crate::seed::sizing_roles::describe`]):
    /// a listed table's line shows it, a reference table (kept, so not
    /// listed in a dry run) its rows in the kept note.
    pub fn set_roles(&mut self, roles: &[TableRole]) {
        for r in roles {
            match self.tables.iter_mut().find(|t| t.table == r.table) {
                Some(t) => t.role = Some(r.line.clone()),
                None if r.role == Role::Reference && r.rows > 0 => {
                    self.kept_rows.push((r.table.clone(), r.rows));
                }
                None => {}
            }
        }
    }

    /// Records that the data was shaped by a statistics file (`made`: the
    /// spec `--stats` made; nothing for another spec).
    pub fn set_stats(&mut self, made: Option<&MadeFrom>) {
        self.stats = made.map(|m| StatsSource {
            file: m.stats.display().to_string(),
            not_followed: m.notes.clone(),
        });
    }

    /// Whether some table could not be seeded (the run exits 1).
    pub fn partial(&self) -> bool {
        !self.not_seeded.is_empty()
    }

    /// The tables not seeded, one paragraph each: the cause, its hints and
    /// the spec lines that fix it (a cascade names the table it depends on).
    fn not_seeded_lines(&self) -> Vec<String> {
        if self.not_seeded.is_empty() {
            return Vec::new();
        }
        let mut out = vec![format!(
            "partial seed: {} table(s) not seeded, left as they were \
             (--all-or-nothing refuses the whole run instead):",
            self.not_seeded.len()
        )];
        for u in &self.not_seeded {
            match &u.depends_on {
                Some(p) => out.push(format!(
                    "- {}: not seeded because {p} is not (a NOT NULL foreign key)",
                    u.table
                )),
                None => {
                    // A server error's DETAIL on the same line.
                    let cause: Vec<&str> = u
                        .cause
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .collect();
                    out.push(format!("- {}", cause.join(" ")));
                    out.extend(u.hints.iter().map(|h| format!("  hint: {h}")));
                    out.push(format!("  spec: {}", u.spec_fix()));
                }
            }
        }
        out
    }

    /// The notes as sentences, one a line, for the table and Markdown forms.
    fn note_lines(&self) -> Vec<String> {
        let n = &self.notes;
        let mut out = Vec::new();
        for t in &self.tables {
            if let Some(s) = &t.shards {
                out.push(shard_line(&t.table, s));
            }
        }
        if let Some(st) = &self.stats {
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
        if !self.followed_recording.is_empty() {
            out.push(format!(
                "followed the recording ([observed] of the queries file): {}",
                self.followed_recording.join("; ")
            ));
        }
        if n.triggers_disabled > 0 {
            out.push(format!(
                "triggers disabled during the load: {} on {} table(s), enabled again \
                 (what they derive, counters or search vectors, is generated, not derived)",
                n.triggers_disabled, n.trigger_tables
            ));
        }
        if !n.event_triggers.is_empty() {
            out.push(format!(
                "event triggers fired on planck's DDL (only a superuser can silence them): {}",
                n.event_triggers.join(", ")
            ));
        }
        for k in &n.kept_in_place {
            out.push(format!(
                "loaded with its key in place (slower; planck never drops a user's view): {k}"
            ));
        }
        let migrations: Vec<String> = n
            .tables_kept
            .iter()
            .filter(|t| !n.seeded_before.contains(t))
            .filter(|t| {
                !n.tables_held
                    .iter()
                    .any(|h| h.starts_with(&format!("{t} (")))
            })
            .map(|t| match self.kept_rows.iter().find(|(k, _)| k == t) {
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
        if !n.tables_held.is_empty() {
            out.push(format!(
                "kept as they were (rows left alone reference them; replacing them would break those keys): {}",
                n.tables_held.join(", ")
            ));
        }
        if !n.seeded_before.is_empty() {
            out.push(format!(
                "kept as they were (rows an earlier planck seed wrote; --truncate replaces them): {}",
                n.seeded_before.join(", ")
            ));
        }
        if !n.partitions_created.is_empty() {
            out.push(format!(
                "created partitions for tables that had none (`planck seed --restore --forget TABLE` drops them): {}",
                n.partitions_created.join(", ")
            ));
        }
        out
    }

    /// `--restore`: nothing for stdout.
    pub fn restored(_count: usize) -> Summary {
        Summary {
            kind: Kind::Quiet,
            seed: 0,
            seconds: 0.0,
            tables: Vec::new(),
            phases: None,
            notes: LoadNotes::default(),
            followed_recording: Vec::new(),
            not_seeded: Vec::new(),
            kept_rows: Vec::new(),
            stats: None,
        }
    }

    fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }

    fn data_bytes(&self) -> Option<u64> {
        self.phases
            .map(|_| self.tables.iter().filter_map(|t| t.data_bytes).sum())
    }

    fn total_bytes(&self) -> Option<u64> {
        self.phases
            .map(|_| self.tables.iter().filter_map(|t| t.total_bytes).sum())
    }
}

/// One table of the JSON summary (wire type: changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTable {
    pub table: String,
    pub rows: u64,
    /// Heap and TOAST bytes; null in a dry run.
    pub data_bytes: Option<u64>,
    /// With indexes; null in a dry run.
    pub total_bytes: Option<u64>,
    pub seconds: Option<f64>,
    /// On Citus, a distributed table's spread over its shards (added within
    /// format_version 1; left out elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardSpread>,
    /// A dry run's sizing role and why, `core: referenced by 5 tables`
    /// (added within format_version 1; left out when not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// The JSON summary (wire type: changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSummary {
    pub format_version: u32,
    pub seed: u64,
    pub dry_run: bool,
    pub seconds: f64,
    pub load_seconds: Option<f64>,
    pub copy_seconds: Option<f64>,
    pub index_seconds: Option<f64>,
    pub vacuum_seconds: Option<f64>,
    pub rows: u64,
    pub data_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    pub tables: Vec<JsonTable>,
    /// Added within format_version 1 (readers of the earlier form ignore them).
    #[serde(default)]
    pub triggers_disabled: usize,
    #[serde(default)]
    pub trigger_tables: usize,
    #[serde(default)]
    pub event_triggers: Vec<String>,
    /// `table: constraint (why)`, loaded with the constraint in place.
    #[serde(default)]
    pub kept_in_place: Vec<String>,
    /// Tables left as they were (reference data, migration bookkeeping).
    #[serde(default)]
    pub tables_kept: Vec<String>,
    /// Those of `tables_kept` an earlier planck seed wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeded_before: Vec<String>,
    /// Columns that followed the queries file's `[observed]` (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub followed_recording: Vec<String>,
    /// Those of `tables_kept` kept because rows left alone reference them,
    /// each `table (rows of X reference it)` (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables_held: Vec<String>,
    /// Partitions planck created, `table: N partition(s) (how)` (left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions_created: Vec<String>,
    /// The tables not seeded (a partial run, exit 1; left out when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_seeded: Vec<JsonNotSeeded>,
    /// `--stats FILE`: the file and what of it the seed did not follow
    /// (added within format_version 1; left out without `--stats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsSource>,
}

/// A table the run could not seed (wire type: changes only with `format_version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNotSeeded {
    pub table: String,
    /// What stops it, prefixed with the table (and column).
    pub reason: String,
    #[serde(default)]
    pub hints: Vec<String>,
    /// The spec lines that fix it (null for a table not seeded because the
    /// table it depends on is not).
    pub spec: Option<String>,
    /// The table not seeded that a NOT NULL foreign key of this one references.
    pub depends_on: Option<String>,
}

impl From<&Summary> for JsonSummary {
    fn from(s: &Summary) -> JsonSummary {
        JsonSummary {
            format_version: 1,
            seed: s.seed,
            dry_run: s.phases.is_none(),
            seconds: s.seconds,
            load_seconds: s.phases.map(|p| p.load),
            copy_seconds: s.phases.map(|p| p.copy),
            index_seconds: s.phases.map(|p| p.index),
            vacuum_seconds: s.phases.map(|p| p.vacuum),
            rows: s.rows(),
            data_bytes: s.data_bytes(),
            total_bytes: s.total_bytes(),
            tables: s
                .tables
                .iter()
                .map(|t| JsonTable {
                    table: t.table.clone(),
                    rows: t.rows,
                    data_bytes: t.data_bytes,
                    total_bytes: t.total_bytes,
                    seconds: t.seconds,
                    shards: t.shards.clone(),
                    role: t.role.clone(),
                })
                .collect(),
            triggers_disabled: s.notes.triggers_disabled,
            trigger_tables: s.notes.trigger_tables,
            event_triggers: s.notes.event_triggers.clone(),
            kept_in_place: s.notes.kept_in_place.clone(),
            tables_kept: s.notes.tables_kept.clone(),
            seeded_before: s.notes.seeded_before.clone(),
            followed_recording: s.followed_recording.clone(),
            tables_held: s.notes.tables_held.clone(),
            partitions_created: s.notes.partitions_created.clone(),
            not_seeded: s
                .not_seeded
                .iter()
                .map(|u| JsonNotSeeded {
                    table: u.table.clone(),
                    reason: u.cause.clone(),
                    hints: u.hints.clone(),
                    spec: u.depends_on.is_none().then(|| u.spec_fix()),
                    depends_on: u.depends_on.clone(),
                })
                .collect(),
            stats: s.stats.clone(),
        }
    }
}

fn size(b: Option<u64>) -> String {
    b.map(output::bytes).unwrap_or_else(|| "-".into())
}

/// The summary in each format; nothing for [`Kind::Quiet`].
impl Render for Summary {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        if self.kind == Kind::Quiet {
            return Ok(());
        }
        render_table(w, self)
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        if self.kind == Kind::Quiet {
            return Ok(());
        }
        render_json(w, self)
    }

    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        if self.kind == Kind::Quiet {
            return Ok(());
        }
        render_markdown(w, self)
    }
}

pub fn render_json(w: &mut impl Write, s: &Summary) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, &JsonSummary::from(s))?;
    writeln!(w)
}

pub fn render_markdown(w: &mut impl Write, s: &Summary) -> io::Result<()> {
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
        writeln!(w, "| **total** | {} | |", output::count(s.rows()))?;
    } else {
        writeln!(w, "| table | rows | size | seconds |\n|---|---:|---:|---:|")?;
        for t in &s.tables {
            writeln!(
                w,
                "| {} | {} | {} | {} |",
                output::md_cell(&t.table),
                output::count(t.rows),
                size(t.total_bytes),
                t.seconds.map(|x| format!("{x:.1}")).unwrap_or_default()
            )?;
        }
        writeln!(
            w,
            "| **total** | {} | {} | {:.1} |",
            output::count(s.rows()),
            size(s.total_bytes()),
            s.seconds
        )?;
    }
    let notes = s.note_lines();
    if !notes.is_empty() {
        writeln!(w)?;
        for n in notes {
            writeln!(w, "- {}", output::md_cell(&n))?;
        }
    }
    let not_seeded = s.not_seeded_lines();
    if !not_seeded.is_empty() {
        writeln!(w, "\n```text")?;
        for n in not_seeded {
            writeln!(w, "{n}")?;
        }
        writeln!(w, "```")?;
    }
    Ok(())
}

/// `ads: 32 shards on 2 workers; the heaviest, 102072 on host:port, holds
/// 9.8 % of the rows and 9.5 % of the bytes (even: 3.1 %); per worker: ...`
fn shard_line(table: &str, s: &ShardSpread) -> String {
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

pub fn render_table(w: &mut impl Write, s: &Summary) -> io::Result<()> {
    // A dry run that knows its sizing roles shows them where the sizes
    // and seconds a load measures would stand.
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
            row.push(size(x.total_bytes));
            row.push(
                x.seconds
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        t.add_row(row);
    }
    let mut total = vec!["total".to_string(), output::count(s.rows())];
    if roles {
        total.push(String::new());
    } else {
        total.push(size(s.total_bytes()));
        total.push(if s.phases.is_some() {
            format!("{:.1}", s.seconds)
        } else {
            "-".into()
        });
    }
    t.add_row(total);
    writeln!(w, "{t}")?;
    if let Some(p) = s.phases {
        writeln!(
            w,
            "seeded {} rows ({} of table data, {} with indexes) in {:.1} s\n  \
             load and index {:.1} s (COPY {:.1} s), foreign keys {:.1} s, vacuum {:.1} s\n  \
             seed {} (the same seed gives the same tables)",
            output::count(s.rows()),
            size(s.data_bytes()),
            size(s.total_bytes()),
            s.seconds,
            p.load,
            p.copy,
            p.index,
            p.vacuum,
            s.seed
        )?;
    }
    for n in s.note_lines() {
        writeln!(w, "{}", wrap(&n, 80))?;
    }
    // The spec lines stay whole: they are meant to be copied.
    for n in s.not_seeded_lines() {
        if n.starts_with("  spec: ") {
            writeln!(w, "{n}")?;
        } else if let Some(rest) = n.strip_prefix("  ") {
            for l in wrap(rest, 78).lines() {
                writeln!(w, "  {l}")?;
            }
        } else {
            writeln!(w, "{}", wrap(&n, 80))?;
        }
    }
    Ok(())
}

/// `text` broken at spaces into lines of at most `width` characters, the
/// lines after the first indented by two.
fn wrap(text: &str, width: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;

    /// A distributed table's line names its heaviest shard and worker with
    /// their shares, beside what an even spread would give.
    #[test]
    fn a_distributed_tables_spread_over_its_shards_is_one_line() {
        let s = ShardSpread {
            shards: 4,
            heaviest_shard: 102_008,
            heaviest_worker: "10.0.0.2:5432".into(),
            heaviest_rows: 500,
            heaviest_bytes: 40_000,
            rows: 1_000,
            bytes: 100_000,
            workers: vec![
                ("10.0.0.2:5432".into(), 60_000),
                ("10.0.0.3:5432".into(), 40_000),
            ],
        };
        assert_eq!(
            shard_line("ads", &s),
            "ads: 4 shards on 2 worker(s); the heaviest, 102008 on 10.0.0.2:5432, holds 50.0 % \
             of the rows and 40.0 % of the bytes (an even spread: 25.0 %); bytes per worker: \
             10.0.0.2:5432 60 %, 10.0.0.3:5432 40 %"
        );
    }

    /// A fixed summary: two tables, a completed load.
    fn loaded() -> Summary {
        Summary {
            kind: Kind::Loaded,
            seed: 20_260_101,
            seconds: 12.345,
            tables: vec![
                TableRow {
                    table: "accounts".into(),
                    rows: 1500,
                    data_bytes: Some(245_760),
                    total_bytes: Some(393_216),
                    seconds: Some(0.42),
                    shards: None,
                    role: None,
                },
                TableRow {
                    table: "app.items|x".into(),
                    rows: 2_000_000,
                    data_bytes: Some(412_000_000),
                    total_bytes: Some(598_000_000),
                    seconds: Some(9.87),
                    shards: None,
                    role: None,
                },
            ],
            phases: Some(Phases {
                load: 10.5,
                copy: 8.25,
                index: 1.2,
                vacuum: 0.6,
            }),
            notes: LoadNotes::default(),
            followed_recording: Vec::new(),
            not_seeded: Vec::new(),
            kept_rows: Vec::new(),
            stats: None,
        }
    }

    /// A load that disabled triggers, kept a key in place and left tables alone.
    fn with_notes() -> Summary {
        let mut s = loaded();
        s.notes = LoadNotes {
            triggers_disabled: 3,
            trigger_tables: 2,
            event_triggers: vec!["audit_ddl (ddl_command_end)".into()],
            kept_in_place: vec![
                "accounts: accounts_pkey (view account_totals depends on it)".into(),
            ],
            tables_kept: vec![
                "django_migrations".into(),
                "django_content_type".into(),
                "items".into(),
            ],
            seeded_before: vec!["items".into()],
            tables_held: Vec::new(),
            partitions_created: Vec::new(),
        };
        s
    }

    /// Issue 9 points 5, 6 and 11: the summary says what the load did to
    /// triggers and keys, and which tables it left as they were.
    #[test]
    fn summary_notes() {
        let s = with_notes();
        let table = rendered(&s, Format::Table);
        for line in table.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
        insta::assert_snapshot!(table);
        insta::assert_snapshot!("summary_notes_markdown", rendered(&s, Format::Markdown));
        let json = rendered(&s, Format::Json);
        let back: JsonSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back.triggers_disabled, 3);
        assert_eq!(back.tables_kept, s.notes.tables_kept);
        assert_eq!(back.kept_in_place, s.notes.kept_in_place);
        // A reader of the earlier form still reads.
        let old: JsonSummary = serde_json::from_str(&rendered(&loaded(), Format::Json)).unwrap();
        assert_eq!(old.triggers_disabled, 0);
    }

    /// Issue 30 point 4: a partial seed lists each table not seeded with
    /// its cause, hints and the spec line that settles it (a cascade names
    /// the table it depends on), in every form.
    #[test]
    fn a_partial_seed_names_each_table_not_seeded() {
        let mut s = loaded();
        s.not_seeded = vec![
            Unseedable {
                cat: 2,
                table: "acl".into(),
                cause: "acl.privilege: planck cannot produce values of type aclitem".into(),
                hints: vec!["exclude acl in the spec, or give the column a DEFAULT".into()],
                depends_on: None,
            },
            Unseedable {
                cat: 3,
                table: "grants".into(),
                cause: "grants: depends on acl".into(),
                hints: Vec::new(),
                depends_on: Some("acl".into()),
            },
        ];
        assert!(s.partial());
        let table = rendered(&s, Format::Table);
        for line in table.lines().filter(|l| !l.starts_with("  spec: ")) {
            assert!(line.chars().count() <= 80, "{line}");
        }
        insta::assert_snapshot!(table);
        let back: JsonSummary = serde_json::from_str(&rendered(&s, Format::Json)).unwrap();
        assert_eq!(back.not_seeded.len(), 2);
        assert_eq!(
            back.not_seeded[0].spec.as_deref(),
            Some("exclude = [\"acl\"]")
        );
        assert_eq!(back.not_seeded[1].depends_on.as_deref(), Some("acl"));
        assert_eq!(back.not_seeded[1].spec, None);
        assert!(!rendered(&loaded(), Format::Json).contains("not_seeded"));
    }

    fn dry() -> Summary {
        let mut s = loaded();
        s.kind = Kind::DryRun;
        s.phases = None;
        s.seconds = 0.0;
        for t in &mut s.tables {
            t.data_bytes = None;
            t.total_bytes = None;
            t.seconds = None;
        }
        s
    }

    fn rendered(s: &Summary, f: Format) -> String {
        let mut v = Vec::new();
        output::render(&mut v, s, f).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn table_summary() {
        insta::assert_snapshot!(rendered(&loaded(), Format::Table));
        insta::assert_snapshot!("table_summary_dry_run", rendered(&dry(), Format::Table));
    }

    /// Issue 8, section 5: the summary line was 127-154 characters.
    #[test]
    fn table_summary_fits_80_columns() {
        for s in [loaded(), dry()] {
            let text = rendered(&s, Format::Table);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 80,
                    "{} chars: {line}",
                    line.chars().count()
                );
            }
        }
    }

    #[test]
    fn markdown_summary() {
        insta::assert_snapshot!(rendered(&loaded(), Format::Markdown));
        insta::assert_snapshot!(
            "markdown_summary_dry_run",
            rendered(&dry(), Format::Markdown)
        );
    }

    #[test]
    fn json_summary() {
        let text = rendered(&loaded(), Format::Json);
        insta::assert_snapshot!(text);
        // The wire type reads back what it wrote.
        let back: JsonSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, JsonSummary::from(&loaded()));
        insta::assert_snapshot!("json_summary_dry_run", rendered(&dry(), Format::Json));
    }

    /// Issue 47: a dry run shows how zero-spec sizing read each table
    /// (its role and why) where a load shows sizes and seconds, and the
    /// rows each reference table keeps in the kept note; every format.
    #[test]
    fn a_dry_run_shows_each_tables_sizing_role() {
        let mut s = dry();
        s.tables[0].table = "users".into();
        s.tables[1].table = "menu_items".into();
        s.tables[1].rows = 50;
        s.notes.tables_kept = vec!["categories".into(), "django_migrations".into()];
        let roles = [
            TableRole {
                table: "users".into(),
                role: Role::Core,
                line: "core: referenced by 5 tables".into(),
                rows: 1500,
            },
            TableRole {
                table: "menu_items".into(),
                role: Role::Configuration,
                line: "configuration: nothing references it".into(),
                rows: 50,
            },
            TableRole {
                table: "categories".into(),
                role: Role::Reference,
                line: "reference: 3 rows written before the seed, kept".into(),
                rows: 3,
            },
        ];
        s.set_roles(&roles);
        let table = rendered(&s, Format::Table);
        for line in table.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
        insta::assert_snapshot!(table);
        insta::assert_snapshot!(
            "a_dry_run_shows_each_tables_sizing_role_markdown",
            rendered(&s, Format::Markdown)
        );
        let back: JsonSummary = serde_json::from_str(&rendered(&s, Format::Json)).unwrap();
        assert_eq!(
            back.tables[0].role.as_deref(),
            Some("core: referenced by 5 tables")
        );
        // A load's JSON has no role.
        assert!(!rendered(&loaded(), Format::Json).contains("\"role\""));
    }

    #[test]
    fn quiet_runs_render_nothing() {
        let mut s = loaded();
        s.kind = Kind::Quiet;
        assert_eq!(rendered(&s, Format::Table), "");
    }
}
