//! Output formats and the plumbing every renderer shares.
//!
//! Results go to stdout, everything else to stderr, so `--format json | jq`
//! always works. A closed pipe (`planck ... | head`) is not an error.
//!
//! Each command's result implements [`Render`], one method per [`Format`];
//! [`render`] is the one place a format is chosen, and [`print`] writes the
//! result to stdout, or [`deliver`] to the file of `--output` (written whole,
//! see [`write_file`]). A new format is a variant and a method of the trait.
//! [`target`] reads `--output [KIND=]PATH`, the same for every command.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub mod target;

use clap::ValueEnum;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, ValueEnum)]
pub enum Format {
    /// Human-readable tables (the default).
    #[default]
    Table,
    /// Machine-readable JSON with a `format_version`.
    Json,
    /// Markdown, fit for a pull-request comment.
    Markdown,
    /// Comma-separated values, a row per item (explain: one per finding).
    Csv,
}

impl Format {
    /// What every command's result is written in.
    pub const COMMON: &'static [Format] = &[Format::Table, Format::Json, Format::Markdown];

    /// Its name on the command line (and in `--output KIND=PATH`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
        }
    }

    /// Refuses a format `formats` (a result's [`Render::FORMATS`]) does not
    /// hold, naming what `command` (`planck explain`) writes: checked before
    /// any work.
    pub fn check(self, command: &str, formats: &[Format]) -> crate::error::Result<()> {
        if formats.contains(&self) {
            return Ok(());
        }
        let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
        Err(crate::error::Error::usage(format!(
            "{command} does not write --format {}; it writes {}",
            self.name(),
            names.join(", ")
        )))
    }
}

/// A command's result, written in each [`Format`] to any writer (stdout,
/// or a `Vec<u8>` in tests).
pub trait Render {
    /// The formats this result is written in; a format outside them is a
    /// usage error before the command's work ([`Format::check`]).
    const FORMATS: &'static [Format] = Format::COMMON;
    /// Human-readable tables, for a terminal.
    fn table(&self, w: &mut impl Write) -> io::Result<()>;
    /// JSON with a `format_version`, for tools.
    fn json(&self, w: &mut impl Write) -> io::Result<()>;
    /// Markdown, for a pull-request comment.
    fn markdown(&self, w: &mut impl Write) -> io::Result<()>;
    /// Comma-separated values (RFC 4180, a header row first), for a
    /// spreadsheet; only a result whose [`Render::FORMATS`] lists it.
    fn csv(&self, _w: &mut impl Write) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this result is not written as CSV",
        ))
    }
}

/// Writes `result` to `w` in `format`: the one place a format is chosen.
pub fn render(w: &mut impl Write, result: &impl Render, format: Format) -> io::Result<()> {
    match format {
        Format::Table => result.table(w),
        Format::Json => result.json(w),
        Format::Markdown => result.markdown(w),
        Format::Csv => result.csv(w),
    }
}

/// Writes `result` in `format` to stdout, rendered whole first (see [`emit`]).
pub fn print(result: &impl Render, format: Format) -> crate::error::Result<()> {
    deliver(result, format, None)
}

/// Writes `result` in `format`, rendered whole first, to stdout ([`emit`])
/// or, given a path (`--output FILE`), to that file ([`write_file`]).
pub fn deliver(
    result: &impl Render,
    format: Format,
    to: Option<&Path>,
) -> crate::error::Result<()> {
    let mut out = Vec::new();
    render(&mut out, result, format).map_err(|e| crate::error::Error::Other(e.into()))?;
    match to {
        None => emit(&out),
        Some(path) => write_file(path, &out),
    }
}

/// The temporary file [`write_file`] fills before renaming it over `path`:
/// in the same folder (a rename across file systems would copy), hidden,
/// and named for this process so two runs never share one.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.planck-tmp", std::process::id()))
}

/// The folder `path` lands in, created when only that folder is missing
/// (`--output out/e.json`); a path whose parents do not exist either is a
/// mistyped one, and its error names it. As `planck report -o` does.
fn make_folder(path: &Path) -> crate::error::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        std::fs::create_dir(dir).map_err(|source| crate::error::Error::WriteFile {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// Fails now, naming `path`, when [`write_file`] could not write there
/// later (no such folder, no permission, a directory by that name): a
/// command whose result goes to a file checks it before its work starts.
/// Leaves no file behind.
pub fn check_writable(path: &Path) -> crate::error::Result<()> {
    let fail = |source| crate::error::Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    if path.is_dir() {
        return Err(fail(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    make_folder(path)?;
    let tmp = temp_beside(path);
    std::fs::File::create(&tmp).map_err(fail)?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// Writes `bytes` to `path` whole: into a temporary file beside it, flushed
/// to disk, then renamed over it, so a reader (or a crash) never sees half a
/// file, and a failed write leaves whatever was there before. The error
/// names `path` (exit code 2).
pub fn write_file(path: &Path, bytes: &[u8]) -> crate::error::Result<()> {
    let fail = |source| crate::error::Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    make_folder(path)?;
    let tmp = temp_beside(path);
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// What library code gets instead of the whole settings: where status lines go.
///
/// `info` is a progress or status line (hidden by `--quiet`), `debug` shows
/// with `--verbose` only, `warn` always shows. All of them go to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Log {
    pub quiet: bool,
    pub verbose: bool,
}

impl Log {
    /// A log that prints nothing but warnings (for tests and library callers).
    pub fn silent() -> Log {
        Log {
            quiet: true,
            verbose: false,
        }
    }

    /// A progress or status line on stderr, unless --quiet.
    pub fn info(&self, msg: &str) {
        if !self.quiet {
            let _ = writeln!(io::stderr(), "{msg}");
        }
    }

    /// A line on stderr with --verbose only.
    pub fn debug(&self, msg: &str) {
        if self.verbose && !self.quiet {
            let _ = writeln!(io::stderr(), "planck: {msg}");
        }
    }

    /// A warning on stderr (shown even with --quiet).
    pub fn warn(&self, msg: &str) {
        let _ = writeln!(io::stderr(), "warning: {msg}");
    }
}

/// Writes a rendered result to stdout. A broken pipe ends quietly.
pub fn emit(bytes: &[u8]) -> crate::error::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(crate::error::Error::internal(format!(
            "writing to stdout: {e}"
        ))),
        Ok(()) => Ok(()),
    }
}

/// A comfy-table sized for an 80-column terminal.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(80)
        .set_header(header.iter().copied());
    t
}

/// Bytes with a unit: `1.5 GB`, `320 kB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A number as typed when it is short (`0.00001`, `2.5`); `1e-300` or
/// `1e300`, not three hundred digits.
pub fn number(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() > 12 {
        format!("{x:e}")
    } else {
        plain
    }
}

/// A count and its noun, singular or plural: `1 statement`, `2,000 statements`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// `n` (as [`count`] writes it) and its noun, singular for one:
/// "1 row", "2,000 rows".
pub fn count_of(n: u64, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", count(n))
}

/// `v` with `decimals` places and thousands separators (`1,234,567.89`):
/// the review page's row counts, costs and rates, and its charts' labels.
pub fn thousands(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = count(int.parse::<u64>().unwrap_or(0));
    let sign = if v < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// One CSV record (RFC 4180): a field holding a comma, a quote or a line
/// break is quoted, its quotes doubled; the record ends in CRLF.
pub fn csv_record<W: Write + ?Sized>(w: &mut W, fields: &[&str]) -> io::Result<()> {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        if f.contains([',', '"', '\n', '\r']) {
            write!(w, "\"{}\"", f.replace('"', "\"\""))?;
        } else {
            w.write_all(f.as_bytes())?;
        }
    }
    w.write_all(b"\r\n")
}

/// The command as a shell would need it typed: a word a shell would split
/// or expand is single-quoted (`npm run 'test it'`).
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

/// Escapes a value for a markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// How a Markdown column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Writes one Markdown table: a header, its alignment row, and the rows, each
/// cell escaped with [`md_cell`]. The one place planck's Markdown tables are
/// drawn, so every renderer's tables read the same in a pull request.
pub fn markdown_table<W: Write + ?Sized>(
    w: &mut W,
    columns: &[(&str, Align)],
    rows: impl IntoIterator<Item = Vec<String>>,
) -> io::Result<()> {
    let header: Vec<String> = columns.iter().map(|(name, _)| md_cell(name)).collect();
    writeln!(w, "| {} |", header.join(" | "))?;
    let rule: Vec<&str> = columns
        .iter()
        .map(|(_, a)| match a {
            Align::Left => "---",
            Align::Right => "---:",
        })
        .collect();
    writeln!(w, "|{}|", rule.join("|"))?;
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        writeln!(w, "| {} |", cells.join(" | "))?;
    }
    Ok(())
}

/// Widest line planck's own status output aims for: summaries and progress
/// bars fit an 80-column terminal.
pub const WIDTH: usize = 80;

/// The one progress-bar style: a label of at most 16 characters, the bar,
/// counts, a message of at most 12 (a rate, a phase) and the time left, 76
/// columns at most, so it never wraps on an 80-column terminal.
pub fn bar_style() -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(
        "{prefix:>16!} {bar:20} {human_pos:>7}/{human_len:7} {msg:12!} {eta:>4}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
}

/// A progress bar on stderr for `len` units of work in [`bar_style`], drawn
/// only on a terminal and never with --quiet.
pub fn progress_bar(log: Log, len: u64, label: &str) -> indicatif::ProgressBar {
    use indicatif::ProgressBar;
    if log.quiet || !io::IsTerminal::is_terminal(&io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(bar_style());
    bar.set_prefix(label.to_string());
    bar
}

/// Shortens `s` to at most `max` characters, ending in `…` when cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_separators() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500_000_000), "1.5 GB");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn every_format_is_read_back_by_its_name() {
        for f in Format::value_variants() {
            assert_eq!(Format::from_str(f.name(), false), Ok(*f), "{f:?}");
        }
    }

    #[test]
    fn csv_records_quote_what_needs_it() {
        let mut out = Vec::new();
        csv_record(&mut out, &["a", "b,c", "say \"hi\"", "two\nlines", ""]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a,\"b,c\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n"
        );
        assert!(Format::Json.check("planck seed", Format::COMMON).is_ok());
        let err = Format::Csv
            .check("planck seed", Format::COMMON)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "planck seed does not write --format csv; it writes table, json, markdown"
        );
    }

    #[test]
    fn markdown_tables_escape_and_align() {
        let mut out = Vec::new();
        markdown_table(
            &mut out,
            &[("table", Align::Left), ("rows", Align::Right)],
            [
                vec!["a|b".to_string(), count(1200)],
                vec!["c".to_string(), "3".to_string()],
            ],
        )
        .unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap(), @r"
        | table | rows |
        |---|---:|
        | a\|b | 1,200 |
        | c | 3 |
        ");
    }

    struct Hello;

    impl Render for Hello {
        fn table(&self, w: &mut impl Write) -> io::Result<()> {
            writeln!(w, "hello table")
        }
        fn json(&self, w: &mut impl Write) -> io::Result<()> {
            writeln!(w, "{{\"hello\": 1}}")
        }
        fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
            writeln!(w, "# hello")
        }
    }

    #[test]
    fn deliver_writes_the_rendered_format_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.json");
        std::fs::write(&path, "the previous run").unwrap();
        check_writable(&path).unwrap();
        deliver(&Hello, Format::Json, Some(&path)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"hello\": 1}\n");
        deliver(&Hello, Format::Markdown, Some(&path)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# hello\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["e.json"]);
        // Only the last folder missing: made, as `planck report -o` does.
        let nested = dir.path().join("out/e.md");
        check_writable(&nested).unwrap();
        deliver(&Hello, Format::Markdown, Some(&nested)).unwrap();
        assert_eq!(std::fs::read_to_string(&nested).unwrap(), "# hello\n");
    }

    #[test]
    fn an_unwritable_output_is_a_usage_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/folder/e.json");
        for path in [missing, dir.path().to_path_buf()] {
            for e in [
                check_writable(&path).unwrap_err(),
                deliver(&Hello, Format::Json, Some(&path)).unwrap_err(),
            ] {
                let text = e.to_string();
                assert!(
                    text.starts_with(&format!("cannot write {}: ", path.display())),
                    "{text}"
                );
                assert_eq!(e.exit_code(), crate::error::exit::USAGE);
            }
        }
        // Nothing left behind by the failed attempts.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn shorten_cuts_at_characters() {
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("ééééé", 3), "éé…");
    }
}
