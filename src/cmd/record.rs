//! `planck record`: runs a test command and captures, from
//! pg_stat_statements, the statements it sent, into the queries file.
//! The work is in [`crate::record`]; this is the glue and the summary.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::db::ConnInfo;
use crate::error::{Error, Result, exit};
use crate::output::{self, Format};
use crate::queries::{self, MergeStatus};
use crate::record::{self, Outcome, Reason};
use crate::settings::Settings;

#[derive(Debug, Clone, Default, Args)]
pub struct RecordArgs {
    /// Queries file to merge into, relative to the project [default: queries/recorded.toml]
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Keep every statement, noise included (transactions, SET, catalog, DDL, ...)
    #[arg(long)]
    pub keep_all: bool,

    /// Remove recorded statements the run no longer sends (hand-added ones stay)
    #[arg(long)]
    pub prune: bool,

    /// The test command, after `--`. Without one, capture what
    /// pg_stat_statements holds now for the database.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

impl RecordArgs {
    /// Records `command` (program and arguments) into the default file.
    pub fn around<I, S>(command: I) -> RecordArgs
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RecordArgs {
            command: command.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// The same, into `path`.
    pub fn output(mut self, path: impl Into<PathBuf>) -> RecordArgs {
        self.output = Some(path.into());
        self
    }
}

/// The bundled example's test run: plays its API and jobs (see the script).
pub fn example_app_command() -> Vec<String> {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "planck".to_string());
    vec![exe, "example-app".to_string()]
}

pub async fn run(args: RecordArgs, settings: &Settings) -> Result<i32> {
    let conn = settings.conn().await?;
    run_on(&conn, args, settings).await
}

/// `planck record` against a given connection (`planck demo` records its
/// own database with this): records, prints the summary, returns the exit code.
pub async fn run_on(conn: &ConnInfo, args: RecordArgs, settings: &Settings) -> Result<i32> {
    let outcome = record_on(conn, args, settings).await?;
    for w in &outcome.warnings {
        settings.warn(w);
    }
    let mut out = Vec::new();
    render(&mut out, &outcome, settings.format, &settings.project_dir)
        .map_err(|e| Error::Other(e.into()))?;
    output::emit(&out).map_err(|e| Error::Other(e.into()))?;
    // A failing or killed test run is recorded, and reported with exit 1.
    Ok(match outcome.exit {
        Some(e) if !e.success() => exit::FINDINGS,
        _ => exit::OK,
    })
}

/// Records without printing anything but progress, for callers that render
/// the outcome themselves.
pub async fn record_on(conn: &ConnInfo, args: RecordArgs, settings: &Settings) -> Result<Outcome> {
    let output = match args
        .output
        .or_else(|| settings.config.record.output.clone())
    {
        Some(p) => settings.project_path(&p),
        None => queries::default_path(&settings.queries_dir()),
    };
    // The command runs where planck was started and finds its program on
    // PATH, as a shell would.
    let cwd = std::env::current_dir()
        .map_err(|e| Error::usage(format!("cannot read the current directory: {e}")))?;
    let opts = record::Options {
        output,
        keep_all: args.keep_all,
        prune: args.prune,
        command: args.command,
        cwd,
        path_var: std::env::var_os("PATH"),
    };
    record::record(conn, &opts, settings).await
}

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

/// Renders the summary in the chosen format.
pub fn render(
    w: &mut impl Write,
    o: &Outcome,
    format: Format,
    project: &Path,
) -> std::io::Result<()> {
    match format {
        Format::Json => {
            let v = json(o, project);
            writeln!(w, "{v:#}")
        }
        Format::Table => render_table(w, o, project),
        Format::Markdown => render_markdown(w, o, project),
    }
}

fn headline(o: &Outcome, project: &Path) -> String {
    let m = &o.merge;
    let dropped: usize = o.dropped.values().sum();
    format!(
        "{} statement(s) recorded into {} ({} added, {} updated, {} unchanged, {} hand-added), {} noise dropped, {} vanished{}",
        o.statements.len(),
        shown_path(&o.file, project),
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
    )
}

/// The command as a shell would need it typed.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn command_line(o: &Outcome) -> Option<String> {
    o.exit
        .map(|e| format!("command `{}` {}", shell_words(&o.command), e.describe()))
}

fn dropped_line(o: &Outcome) -> Option<String> {
    (!o.dropped.is_empty()).then(|| {
        let parts: Vec<String> = o
            .dropped
            .iter()
            .map(|(r, n)| format!("{} {n}", r.name()))
            .collect();
        format!("dropped: {}", parts.join(", "))
    })
}

fn render_table(w: &mut impl Write, o: &Outcome, project: &Path) -> std::io::Result<()> {
    if let Some(c) = command_line(o) {
        writeln!(w, "{c}")?;
    }
    if !o.statements.is_empty() {
        let mut t = output::table(&["role", "rls", "calls", "mean", "statement"]);
        for k in &o.statements {
            t.add_row(vec![
                k.role.clone(),
                if k.bypass_rls { "bypass" } else { "applies" }.to_string(),
                output::count(k.calls),
                ms(k.total_ms / k.calls.max(1) as f64),
                one_line(&k.query, 200),
            ]);
        }
        writeln!(w, "{t}")?;
    }
    writeln!(w, "{}", headline(o, project))?;
    if let Some(d) = dropped_line(o) {
        writeln!(w, "{d}")?;
    }
    for v in &o.merge.vanished {
        writeln!(
            w,
            "vanished: {} [{}] {}",
            v.id,
            v.role.as_deref().unwrap_or("-"),
            one_line(&v.query, 60)
        )?;
    }
    Ok(())
}

fn render_markdown(w: &mut impl Write, o: &Outcome, project: &Path) -> std::io::Result<()> {
    writeln!(w, "### planck record\n")?;
    if let Some(c) = command_line(o) {
        writeln!(w, "{}\n", output::md_cell(&c))?;
    }
    writeln!(w, "{}\n", headline(o, project))?;
    if let Some(d) = dropped_line(o) {
        writeln!(w, "{d}\n")?;
    }
    if !o.statements.is_empty() {
        writeln!(w, "| role | RLS | calls | mean | statement | status |")?;
        writeln!(w, "|---|---|---:|---:|---|---|")?;
        for k in &o.statements {
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

/// The JSON wire format (`format_version` 1). Built here, apart from the
/// internal types, so it changes only on purpose.
fn json(o: &Outcome, project: &Path) -> serde_json::Value {
    use serde_json::json;
    let exit = o.exit.map(|e| match e {
        record::Exit::Code(c) => json!({ "code": c }),
        record::Exit::Signal(s) => {
            json!({ "signal": s, "signal_name": record::child::signal_name(s) })
        }
    });
    let dropped: serde_json::Map<String, serde_json::Value> = Reason::ALL
        .iter()
        .map(|r| {
            (
                r.name().to_string(),
                json!(o.dropped.get(r).copied().unwrap_or(0)),
            )
        })
        .collect();
    json!({
        "format_version": 1,
        "database": o.database,
        "file": shown_path(&o.file, project),
        "command": o.command,
        "exit": exit,
        "mode": o.mode.name(),
        "created_extension": o.created_extension,
        "kept": o.statements.len(),
        "dropped": dropped,
        "added": o.merge.count(MergeStatus::Added),
        "updated": o.merge.count(MergeStatus::Updated),
        "unchanged": o.merge.count(MergeStatus::Unchanged),
        "manual": o.merge.count(MergeStatus::Manual),
        "vanished": o.merge.vanished.iter().map(|v| json!({
            "id": v.id,
            "role": v.role,
            "query": v.query,
        })).collect::<Vec<_>>(),
        "pruned": o.merge.pruned,
        "warnings": o.warnings,
        "statements": o.statements.iter().map(|k| json!({
            "id": k.id,
            "queryid": k.queryid,
            "role": k.role,
            "bypass_rls": k.bypass_rls,
            "calls": k.calls,
            "rows": k.rows,
            "total_ms": k.total_ms,
            "mean_ms": k.total_ms / k.calls.max(1) as f64,
            "query": k.query,
            "noise": k.noise.map(Reason::name),
            "status": k.status.name(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::{Merge, Statement};
    use crate::record::{Exit, Kept, Mode};

    fn outcome() -> Outcome {
        let mut dropped = std::collections::BTreeMap::new();
        dropped.insert(Reason::Transaction, 4);
        dropped.insert(Reason::Setting, 2);
        Outcome {
            database: "shop".into(),
            file: "/p/queries/recorded.toml".into(),
            command: vec!["npm".into(), "run".into(), "test it".into()],
            exit: Some(Exit::Signal(9)),
            mode: Mode::Reset,
            statements: vec![Kept {
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
            }],
            dropped,
            merge: Merge {
                outcomes: vec![("abc".into(), MergeStatus::Added)],
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
        }
    }

    #[test]
    fn json_summary_is_the_documented_wire_format() {
        let mut out = Vec::new();
        render(&mut out, &outcome(), Format::Json, Path::new("/p")).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["format_version"], 1);
        assert_eq!(v["file"], "queries/recorded.toml");
        assert_eq!(v["exit"]["signal"], 9);
        assert_eq!(v["exit"]["signal_name"], "SIGKILL");
        assert_eq!(v["mode"], "reset");
        assert_eq!(v["created_extension"], false);
        assert_eq!(v["kept"], 1);
        assert_eq!(v["dropped"]["transaction"], 4);
        assert_eq!(v["dropped"]["ddl"], 0, "every reason is present");
        assert_eq!(v["added"], 1);
        assert_eq!(v["vanished"][0]["id"], "old");
        assert_eq!(v["statements"][0]["queryid"], 42);
        assert_eq!(v["statements"][0]["mean_ms"], 0.002);
        assert_eq!(v["statements"][0]["status"], "added");
        assert_eq!(v["warnings"][0], "the command was killed");
    }

    #[test]
    fn table_and_markdown_summaries() {
        let mut out = Vec::new();
        render(&mut out, &outcome(), Format::Table, Path::new("/p")).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.starts_with("command `npm run 'test it'` was killed by signal 9 (SIGKILL)\n"),
            "{t}"
        );
        assert!(t.contains("SELECT a FROM t WHERE id = $1"), "{t}");
        assert!(t.contains("1,500"), "{t}");
        assert!(t.contains(
            "1 statement(s) recorded into queries/recorded.toml (1 added, 0 updated, 0 unchanged, 0 hand-added), 6 noise dropped, 1 vanished\n"
        ), "{t}");
        assert!(t.contains("dropped: transaction 4, setting 2\n"), "{t}");
        assert!(t.contains("vanished: old [app_user] SELECT gone"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 160), "{t}");

        let mut out = Vec::new();
        render(&mut out, &outcome(), Format::Markdown, Path::new("/p")).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(
            md.contains(
                "| app_user | applies | 1,500 | 0.00 ms | `SELECT a FROM t WHERE id = $1` | added |"
            ),
            "{md}"
        );
        assert!(md.contains("> warning: the command was killed"), "{md}");
    }

    #[test]
    fn args_can_be_built_in_code() {
        let a = RecordArgs::around(["tools/example-app"]).output("/tmp/q.toml");
        assert_eq!(a.command, ["tools/example-app"]);
        assert_eq!(a.output.as_deref(), Some(Path::new("/tmp/q.toml")));
        assert!(!a.keep_all && !a.prune);
        assert_eq!(example_app_command()[1], "example-app");
    }
}
