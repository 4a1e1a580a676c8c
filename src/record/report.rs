//! What a recording did, rendered: a table, Markdown for a pull request,
//! or JSON ([`wire`]) for tools.

use std::io::Write;
use std::path::Path;

use crate::output::{self, Render};
use crate::queries::{self, MergeStatus};
use crate::record::{Exit, Outcome, Reason};

fn shown_path(path: &Path, project: &Path) -> String {
    path.strip_prefix(project)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn one_line(q: &str, max: usize) -> String {
    let s = queries::normalize_space(q);
    if s.chars().count() <= max {
        s
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else {
        format!("{v:.2} ms")
    }
}

/// What `planck record` prints: the outcome, its paths shown relative to
/// `project`.
pub struct Printed<'a> {
    pub outcome: &'a Outcome,
    pub project: &'a Path,
}

impl Render for Printed<'_> {
    fn table(&self, w: &mut impl Write) -> std::io::Result<()> {
        render_table(w, self.outcome, self.project)
    }

    fn json(&self, w: &mut impl Write) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&to_wire(self.outcome, self.project))
            .map_err(std::io::Error::other)?;
        writeln!(w, "{text}")
    }

    fn markdown(&self, w: &mut impl Write) -> std::io::Result<()> {
        render_markdown(w, self.outcome, self.project)
    }
}

/// The summary, in lines that fit an 80-column terminal (a long path aside).
fn headline(o: &Outcome, project: &Path) -> [String; 2] {
    let m = &o.merge;
    let dropped: usize = o.dropped.values().sum();
    [
        format!(
            "{} statement(s) recorded into {}",
            o.statements.len(),
            shown_path(&o.file, project)
        ),
        format!(
            "{} added, {} updated, {} unchanged, {} hand-added; {} noise dropped, {} vanished{}",
            m.count(MergeStatus::Added),
            m.count(MergeStatus::Updated),
            m.count(MergeStatus::Unchanged),
            m.count(MergeStatus::Manual),
            dropped,
            m.vanished.len(),
            if m.pruned && !m.vanished.is_empty() {
                " (pruned)"
            } else {
                ""
            }
        ),
    ]
}

fn command_line(o: &Outcome) -> Option<String> {
    o.exit.map(|e| {
        format!(
            "command `{}` {}",
            crate::record::child::shell_words(&o.command),
            e.describe()
        )
    })
}

/// `dropped: transaction 4, setting 2, ...`, wrapped at 80 columns.
fn dropped_lines(o: &Outcome) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from("dropped:");
    let parts: Vec<String> = o
        .dropped
        .iter()
        .map(|(r, n)| format!("{} {n}", r.name()))
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
/// the texts (the first [`MIGRATION_SHOWN`], every one with `--verbose`).
fn migration_lines(o: &Outcome) -> Vec<String> {
    let n = o.migration_only.len();
    if n == 0 {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "{n} statement(s) run only by migrations left out (every call was in a transaction that changed the schema or wrote a migration tool's bookkeeping, or ran on its connection before the tool recorded the migration there):"
    )];
    let shown = if o.list_all {
        n
    } else {
        n.min(MIGRATION_SHOWN)
    };
    for q in &o.migration_only[..shown] {
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
fn relay_lines(o: &Outcome) -> Vec<String> {
    let Some(r) = &o.relay else {
        return Vec::new();
    };
    let mut lines = vec![format!(
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
        if r.over_limit > 0 {
            format!(
                " ({} more beyond --max-transactions, {} calls)",
                r.over_limit, r.over_limit_calls
            )
        } else {
            String::new()
        },
        r.lone,
        if r.migration_lone > 0 {
            format!(" ({} of them migrations')", r.migration_lone)
        } else {
            String::new()
        }
    )];
    if let (Some((t, tn)), Some((n, nt))) = (r.longest_time, r.longest_statements) {
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
            r.by_queryid,
            r.by_text,
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

/// The databases recorded, when the run used more than the target (issue 12, 4).
fn databases_line(o: &Outcome) -> Option<String> {
    (o.recorded_databases.len() > 1)
        .then(|| format!("databases recorded: {}", o.recorded_databases.join(", ")))
}

/// Statements shown in the summary: every one with `--verbose`, else the
/// [`TOP`] most called (in the file's order), and how many are left out.
fn shown_statements(o: &Outcome) -> (Vec<&crate::record::Kept>, usize) {
    if o.list_all || o.statements.len() <= TOP {
        return (o.statements.iter().collect(), 0);
    }
    let mut by_calls: Vec<(usize, &crate::record::Kept)> =
        o.statements.iter().enumerate().collect();
    by_calls.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(&b.0)));
    let mut top: Vec<(usize, &crate::record::Kept)> = by_calls.into_iter().take(TOP).collect();
    top.sort_by_key(|(i, _)| *i);
    (
        top.into_iter().map(|(_, k)| k).collect(),
        o.statements.len() - TOP,
    )
}

/// Statements the compact summary shows (issue 12, 4).
const TOP: usize = 20;

fn render_table(w: &mut impl Write, o: &Outcome, project: &Path) -> std::io::Result<()> {
    if let Some(c) = command_line(o) {
        writeln!(w, "{c}")?;
    }
    if !o.statements.is_empty() {
        let mut t = output::table(&["role", "rls", "calls", "mean", "statement"]);
        let (shown, more) = shown_statements(o);
        for k in shown {
            t.add_row(vec![
                k.role.clone(),
                if k.bypass_rls { "bypass" } else { "applies" }.to_string(),
                output::count(k.calls),
                if k.from_relay {
                    "-".to_string()
                } else {
                    ms(k.total_ms / k.calls.max(1) as f64)
                },
                one_line(&k.query, 200),
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
    for l in headline(o, project) {
        writeln!(w, "{l}")?;
    }
    for l in dropped_lines(o) {
        writeln!(w, "{l}")?;
    }
    for l in migration_lines(o) {
        writeln!(w, "{l}")?;
    }
    if let Some(l) = databases_line(o) {
        writeln!(w, "{l}")?;
    }
    for l in relay_lines(o) {
        writeln!(w, "{l}")?;
    }
    for v in &o.merge.vanished {
        let head = format!("vanished: {} [{}] ", v.id, v.role.as_deref().unwrap_or("-"));
        let room = 80usize.saturating_sub(head.chars().count()).max(20);
        writeln!(w, "{head}{}", one_line(&v.query, room))?;
    }
    Ok(())
}

fn render_markdown(w: &mut impl Write, o: &Outcome, project: &Path) -> std::io::Result<()> {
    writeln!(w, "### planck record\n")?;
    if let Some(c) = command_line(o) {
        writeln!(w, "{}\n", output::md_cell(&c))?;
    }
    let [recorded, counts] = headline(o, project);
    writeln!(w, "{recorded}: {counts}\n")?;
    let dropped = dropped_lines(o);
    if !dropped.is_empty() {
        let parts: Vec<&str> = dropped.iter().map(|l| l.trim()).collect();
        writeln!(w, "{}\n", parts.join(" "))?;
    }
    let migrations = migration_lines(o);
    if let Some((head, rest)) = migrations.split_first() {
        writeln!(w, "{}\n", output::md_cell(head))?;
        for l in rest {
            writeln!(w, "- `{}`", output::md_cell(l.trim()).replace('`', "'"))?;
        }
        writeln!(w)?;
    }
    if let Some(l) = databases_line(o) {
        writeln!(w, "{}\n", output::md_cell(&l))?;
    }
    for l in relay_lines(o) {
        writeln!(w, "{}\n", output::md_cell(&l))?;
    }
    if !o.statements.is_empty() {
        writeln!(w, "| role | RLS | calls | mean | statement | status |")?;
        writeln!(w, "|---|---|---:|---:|---|---|")?;
        let (shown, more) = shown_statements(o);
        for k in shown {
            writeln!(
                w,
                "| {} | {} | {} | {} | `{}` | {} |",
                output::md_cell(&k.role),
                if k.bypass_rls { "bypass" } else { "applies" },
                output::count(k.calls),
                ms(k.total_ms / k.calls.max(1) as f64),
                output::md_cell(&one_line(&k.query, 120)).replace('`', "'"),
                k.status.name()
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
    for v in &o.merge.vanished {
        writeln!(
            w,
            "- vanished: `{}` {}",
            v.id,
            output::md_cell(&one_line(&v.query, 80))
        )?;
    }
    for x in &o.warnings {
        writeln!(w, "> warning: {}", output::md_cell(x))?;
    }
    Ok(())
}

/// The JSON wire format of `planck --format json record`: owned types,
/// apart from the internal ones, so it changes only on purpose. Tools (and
/// the tests) read it back with these same types.
pub mod wire {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    pub const FORMAT_VERSION: u32 = 1;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct RecordReport {
        pub format_version: u32,
        pub database: String,
        /// The queries file, relative to the project when inside it.
        pub file: String,
        pub command: Vec<String>,
        /// `None` when there was no command.
        pub exit: Option<Exit>,
        /// `reset`, `snapshot` or `current`.
        pub mode: String,
        pub created_extension: bool,
        pub kept: usize,
        /// Distinct statements dropped, for every reason (0 included).
        pub dropped: BTreeMap<String, usize>,
        pub added: usize,
        pub updated: usize,
        pub unchanged: usize,
        pub manual: usize,
        pub vanished: Vec<Vanished>,
        pub pruned: bool,
        pub warnings: Vec<String>,
        pub statements: Vec<Statement>,
        /// What the capture relay saw; absent when the run was not relayed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub relay: Option<Relay>,
        /// The databases whose statements were recorded: the target, then
        /// those created during the run.
        #[serde(default)]
        pub recorded_databases: Vec<String>,
        /// Statements run only by migrations, left out of the file (issue
        /// 13, 6): their texts.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub migration_only: Vec<String>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Relay {
        pub connections: u64,
        pub incomplete_connections: u64,
        pub left_open: u64,
        pub transactions: u64,
        pub autocommit_statements: u64,
        pub shapes_written: usize,
        pub shapes_over_limit: usize,
        pub calls_over_limit: u64,
        pub matched_by_queryid: usize,
        pub matched_by_text: usize,
        pub unmatched: usize,
        /// Distinct relayed texts left out as noise (catalog queries).
        #[serde(default)]
        pub noise: usize,
        /// Statements only the relay had (not in pg_stat_statements).
        #[serde(default)]
        pub relay_only: usize,
        pub longest_ms: Option<f64>,
        pub longest_statements: Option<usize>,
        pub most_statements: Option<usize>,
        pub most_statements_ms: Option<f64>,
        /// Statement id (else normalized text) and how often it opened a
        /// transaction that stayed open over 100 ms.
        pub slow_openers: Vec<(String, u64)>,
        /// Database and connections to it.
        pub databases: BTreeMap<String, u64>,
        /// Exact median pause (ms) per written transaction id.
        pub think_ms: BTreeMap<String, f64>,
        /// Migrations' transactions: counted in `transactions`, never written.
        #[serde(default)]
        pub migration_transactions: u64,
        /// Migrations' autocommit statements (run before the tool recorded
        /// the migration): counted in `autocommit_statements`.
        #[serde(default)]
        pub migration_autocommit_statements: u64,
    }

    /// `{"code": 0}` or `{"signal": 9, "signal_name": "SIGKILL"}`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Exit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub signal: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub signal_name: Option<String>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Vanished {
        pub id: String,
        pub role: Option<String>,
        pub query: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Statement {
        pub id: String,
        pub queryid: i64,
        pub role: String,
        pub bypass_rls: bool,
        pub calls: u64,
        pub rows: u64,
        pub total_ms: f64,
        pub mean_ms: f64,
        pub query: String,
        /// Why it is noise, when kept with `--keep-all`.
        pub noise: Option<String>,
        /// `added`, `updated`, `unchanged` or `manual`.
        pub status: String,
        /// `top` and/or `function`, as the queries file keeps them (empty:
        /// as the client sent it).
        pub contexts: Vec<String>,
        /// Taken from the capture relay alone: no timings.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub from_relay: bool,
    }
}

/// The wire form of an outcome.
pub fn to_wire(o: &Outcome, project: &Path) -> wire::RecordReport {
    let exit = o.exit.map(|e| match e {
        Exit::Code(c) => wire::Exit {
            code: Some(c),
            signal: None,
            signal_name: None,
        },
        Exit::Signal(s) => wire::Exit {
            code: None,
            signal: Some(s),
            signal_name: Some(crate::record::child::signal_name(s).to_string()),
        },
    });
    wire::RecordReport {
        format_version: wire::FORMAT_VERSION,
        database: o.database.clone(),
        file: shown_path(&o.file, project),
        command: o.command.clone(),
        exit,
        mode: o.mode.name().to_string(),
        created_extension: o.created_extension,
        kept: o.statements.len(),
        dropped: Reason::ALL
            .iter()
            .map(|r| (r.name().to_string(), o.dropped.get(r).copied().unwrap_or(0)))
            .collect(),
        added: o.merge.count(MergeStatus::Added),
        updated: o.merge.count(MergeStatus::Updated),
        unchanged: o.merge.count(MergeStatus::Unchanged),
        manual: o.merge.count(MergeStatus::Manual),
        vanished: o
            .merge
            .vanished
            .iter()
            .map(|v| wire::Vanished {
                id: v.id.clone(),
                role: v.role.clone(),
                query: v.query.clone(),
            })
            .collect(),
        pruned: o.merge.pruned,
        warnings: o.warnings.clone(),
        statements: o
            .statements
            .iter()
            .map(|k| wire::Statement {
                id: k.id.clone(),
                queryid: k.queryid,
                role: k.role.clone(),
                bypass_rls: k.bypass_rls,
                calls: k.calls,
                rows: k.rows,
                total_ms: k.total_ms,
                mean_ms: k.total_ms / k.calls.max(1) as f64,
                query: k.query.clone(),
                noise: k.noise.map(|r| r.name().to_string()),
                status: k.status.name().to_string(),
                contexts: k.contexts.iter().map(|c| c.name().to_string()).collect(),
                from_relay: k.from_relay,
            })
            .collect(),
        relay: o.relay.as_ref().map(|r| wire::Relay {
            connections: r.connections,
            incomplete_connections: r.incomplete,
            left_open: r.left_open,
            transactions: r.transactions,
            autocommit_statements: r.lone,
            shapes_written: r.shapes_written,
            shapes_over_limit: r.over_limit,
            calls_over_limit: r.over_limit_calls,
            matched_by_queryid: r.by_queryid,
            matched_by_text: r.by_text,
            unmatched: r.unmatched,
            noise: r.noise,
            relay_only: r.relay_only,
            longest_ms: r.longest_time.map(|t| t.0),
            longest_statements: r.longest_time.map(|t| t.1),
            most_statements: r.longest_statements.map(|t| t.0),
            most_statements_ms: r.longest_statements.map(|t| t.1),
            slow_openers: r.slow_openers.clone(),
            databases: r.databases.clone(),
            think_ms: r.think_ms.clone(),
            migration_transactions: r.migration_transactions,
            migration_autocommit_statements: r.migration_lone,
        }),
        recorded_databases: o.recorded_databases.clone(),
        migration_only: o.migration_only.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;
    use crate::queries::{Merge, Statement};
    use crate::record::{Kept, Mode};

    fn outcome() -> Outcome {
        let mut dropped = std::collections::BTreeMap::new();
        dropped.insert(Reason::Transaction, 4);
        dropped.insert(Reason::Setting, 2);
        dropped.insert(Reason::ForeignKeyCheck, 1);
        dropped.insert(Reason::PlanckBookkeeping, 5);
        dropped.insert(Reason::StatsReset, 1);
        dropped.insert(Reason::Catalog, 12);
        dropped.insert(Reason::Utility, 3);
        dropped.insert(Reason::ForeignKeyValidation, 2);
        Outcome {
            database: "shop".into(),
            file: "/p/queries/recorded.toml".into(),
            command: vec!["npm".into(), "run".into(), "test it".into()],
            exit: Some(Exit::Signal(9)),
            mode: Mode::Reset,
            statements: vec![
                Kept {
                    id: "abc".into(),
                    queryid: 42,
                    role: "app_user".into(),
                    bypass_rls: false,
                    calls: 1500,
                    rows: 3,
                    total_ms: 3.0,
                    query: "SELECT a\n FROM t WHERE id = $1".into(),
                    noise: None,
                    status: MergeStatus::Added,
                    contexts: vec![],
                    from_relay: false,
                },
                Kept {
                    id: "def".into(),
                    queryid: -7,
                    role: "owner".into(),
                    bypass_rls: true,
                    calls: 2,
                    rows: 0,
                    total_ms: 2500.0,
                    query: "UPDATE items SET status = $1 WHERE updated_at < now() - $2::interval AND status | $3 = $4".into(),
                    noise: Some(Reason::Ddl),
                    status: MergeStatus::Unchanged,
                    contexts: vec![crate::queries::Context::Top, crate::queries::Context::Function],
                    from_relay: false,
                },
            ],
            dropped,
            merge: Merge {
                outcomes: vec![
                    ("abc".into(), MergeStatus::Added),
                    ("def".into(), MergeStatus::Unchanged),
                ],
                vanished: vec![Statement {
                    id: "old".into(),
                    query: "SELECT gone".into(),
                    role: Some("app_user".into()),
                    ..Default::default()
                }],
                pruned: false,
            },
            warnings: vec!["the command was killed".into()],
            created_extension: false,
            relay: None,
            recorded_databases: vec!["shop".into()],
            migration_only: vec![],
            list_all: true,
        }
    }

    fn rendered(format: Format) -> String {
        let printed = Printed {
            outcome: &outcome(),
            project: Path::new("/p"),
        };
        let mut out = Vec::new();
        output::render(&mut out, &printed, format).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn table_snapshot() {
        let t = rendered(Format::Table);
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        insta::assert_snapshot!(t);
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(rendered(Format::Markdown));
    }

    #[test]
    fn json_snapshot_reads_back_as_the_wire_types() {
        let text = rendered(Format::Json);
        insta::assert_snapshot!(text);
        let v: wire::RecordReport = serde_json::from_str(&text).unwrap();
        assert_eq!(v, to_wire(&outcome(), Path::new("/p")));
        assert_eq!(v.format_version, 1);
        assert_eq!(v.file, "queries/recorded.toml");
        let exit = v.exit.as_ref().unwrap();
        assert_eq!((exit.code, exit.signal), (None, Some(9)));
        assert_eq!(exit.signal_name.as_deref(), Some("SIGKILL"));
        assert_eq!(
            v.dropped.len(),
            Reason::ALL.len(),
            "every reason is present"
        );
        assert_eq!(v.dropped["transaction"], 4);
        assert_eq!(v.dropped["fk-check"], 1);
        assert_eq!(v.dropped["ddl"], 0);
        assert_eq!((v.added, v.unchanged, v.kept), (1, 1, 2));
        assert_eq!(v.statements[0].mean_ms, 0.002);
        assert_eq!(v.statements[1].noise.as_deref(), Some("ddl"));
        assert_eq!(v.vanished[0].id, "old");
    }

    /// Issue 12, 4: the summary lists the top statements by calls unless
    /// `--verbose`; the relay's line says what it saw.
    #[test]
    fn the_table_is_compact_unless_verbose() {
        let mut o = outcome();
        let k = o.statements[0].clone();
        o.statements = (0..25)
            .map(|i| crate::record::Kept {
                calls: 100 + i,
                query: format!("SELECT c{i} FROM t"),
                ..k.clone()
            })
            .collect();
        o.list_all = false;
        o.relay = Some(crate::record::RelaySummary {
            connections: 3,
            transactions: 40,
            shapes_written: 2,
            lone: 7,
            ..Default::default()
        });
        let mut out = Vec::new();
        render_table(&mut out, &o, Path::new("/p")).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("SELECT c24 FROM t"), "{text}");
        assert!(text.contains("SELECT c5 FROM t"), "{text}");
        assert!(!text.contains("SELECT c4 FROM t"), "{text}");
        assert!(text.contains("... and 5 more statement(s)"), "{text}");
        assert!(
            text.contains("relay: 3 connection(s), 40 transaction(s), 2 shape(s) written, 7 autocommit statement(s)"),
            "{text}"
        );
        o.list_all = true;
        let mut out = Vec::new();
        render_table(&mut out, &o, Path::new("/p")).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("SELECT c4 FROM t") && !text.contains("more statement"));
    }

    /// Issue 12, 4: the databases recorded are named when the run created
    /// some; a statement only the relay had shows no mean time.
    #[test]
    fn created_databases_and_relay_only_statements_are_shown() {
        let mut o = outcome();
        o.statements.truncate(1);
        o.statements[0].from_relay = true;
        o.recorded_databases = vec!["shop".into(), "test_shop".into()];
        o.relay = Some(crate::record::RelaySummary {
            relay_only: 1,
            ..Default::default()
        });
        let mut out = Vec::new();
        render_table(&mut out, &o, Path::new("/p")).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("databases recorded: shop, test_shop"),
            "{text}"
        );
        assert!(
            text.contains("1 statement(s) from the relay only"),
            "{text}"
        );
        let row = text.lines().find(|l| l.contains("SELECT a")).unwrap();
        assert!(row.contains(" - ") && !row.contains(" ms"), "{row}");
        let v = to_wire(&o, Path::new("/p"));
        assert_eq!(v.recorded_databases, ["shop", "test_shop"]);
        assert!(v.statements[0].from_relay);
        assert_eq!(v.relay.unwrap().relay_only, 1);
    }

    /// Issue 13, 6 and issue 47, 5: a reviewer sees what was left out as
    /// migrations' and why, and how many transactions and autocommit
    /// statements were the migrations'.
    #[test]
    fn issue13_statements_left_out_as_migrations_are_listed() {
        let mut o = outcome();
        o.dropped.insert(Reason::Migration, 7);
        o.migration_only = (0..7)
            .map(|i| format!("UPDATE \"api_check\" SET \"c{i}\" = $1 WHERE \"c{i}\" IS NULL"))
            .collect();
        o.relay = Some(crate::record::RelaySummary {
            transactions: 40,
            migration_transactions: 12,
            lone: 9,
            migration_lone: 4,
            ..Default::default()
        });
        o.list_all = false;
        let mut out = Vec::new();
        render_table(&mut out, &o, Path::new("/p")).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("7 statement(s) run only by migrations left out (every call was in a transaction that changed the schema"),
            "{text}"
        );
        assert!(
            text.contains("\n  UPDATE \"api_check\" SET \"c4\" = $1"),
            "{text}"
        );
        assert!(!text.contains("\"c5\""), "{text}");
        assert!(
            text.contains("  ... and 2 more (--verbose lists every one)"),
            "{text}"
        );
        assert!(text.contains("migration 7"), "{text}");
        assert!(
            text.contains("40 transaction(s) (12 of them migrations', not written)"),
            "{text}"
        );
        assert!(
            text.contains("9 autocommit statement(s) (4 of them migrations')"),
            "{text}"
        );
        assert!(
            text.contains(
                "or ran on its connection before the tool recorded the migration there):"
            ),
            "{text}"
        );
        o.list_all = true;
        let mut out = Vec::new();
        render_markdown(&mut out, &o, Path::new("/p")).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(
            md.contains("- `UPDATE \"api_check\" SET \"c6\" = $1"),
            "{md}"
        );
        let v = to_wire(&o, Path::new("/p"));
        assert_eq!(v.migration_only.len(), 7);
        assert_eq!(v.dropped["migration"], 7);
        let relay = v.relay.unwrap();
        assert_eq!(relay.migration_transactions, 12);
        assert_eq!(relay.migration_autocommit_statements, 4);
    }
}
