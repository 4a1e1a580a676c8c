//! What a seed reports: [`Summary`], built once from the plan and the load
//! report, and its wire form ([`crate::wire::seed::SeedSummary`], the JSON,
//! changed only with `format_version`), which every format is rendered
//! from (`crate::render`).

use std::io::{self, Write};

use crate::output::{self, Format};
use crate::render::Seeded;
use crate::seed::load::{LoadNotes, LoadReport, ShardSpread};
use crate::seed::row::plan::{SeedPlan, Unseedable};
use crate::seed::sizing_roles::{Role, TableRole};
use crate::seed::spec::MadeFrom;
pub use crate::wire::seed::StatsSource;
/// The names `tests/it` reads the wire types by.
pub use crate::wire::seed::{NotSeeded as JsonNotSeeded, SeedSummary as JsonSummary};
use crate::wire::seed::{NotSeeded, SeedSummary, SeedTable};

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

impl From<&Summary> for SeedSummary {
    fn from(s: &Summary) -> SeedSummary {
        SeedSummary {
            format_version: crate::wire::seed::FORMAT_VERSION,
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
                .map(|t| SeedTable {
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
                .map(|u| NotSeeded {
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

impl Summary {
    /// This summary in `format`, as `planck seed` prints it (rendered from
    /// its wire form, [`SeedSummary`]); nothing for [`Kind::Quiet`].
    pub fn render(&self, w: &mut impl Write, format: Format) -> io::Result<()> {
        if self.kind == Kind::Quiet {
            return Ok(());
        }
        let summary = SeedSummary::from(self);
        let printed = Seeded {
            summary: &summary,
            kept_rows: &self.kept_rows,
        };
        output::render(w, &printed, format)
    }

    /// Writes this summary in `format` to stdout; nothing for [`Kind::Quiet`].
    pub fn print(&self, format: Format) -> crate::error::Result<()> {
        if self.kind == Kind::Quiet {
            return Ok(());
        }
        let summary = SeedSummary::from(self);
        let printed = Seeded {
            summary: &summary,
            kept_rows: &self.kept_rows,
        };
        output::print(&printed, format)
    }
}

/// The table form of `s` (what `planck seed` prints by default).
pub fn render_table(w: &mut impl Write, s: &Summary) -> io::Result<()> {
    s.render(w, Format::Table)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        s.render(&mut v, f).unwrap();
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
