//! `planck report`: the DBA's review in one file, and the machine outputs CI
//! reads (Markdown for a PR comment, JUnit, SARIF, GitLab code quality).
//!
//! Everything here is rendered from the wire types only (explain's and
//! replay's JSON, and the diff of two explain runs), so a report can be made
//! from files written by another machine, and `planck check` renders the same
//! outputs from what it has in memory.

mod chart;
mod gitlab;
mod html;
mod inputs;
mod junit;
mod markdown;
mod plan;
mod sarif;

use std::io::{self, Write};
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::wire;
pub use crate::wire::explain::JsonReport;
pub use crate::wire::replay::ReplayReport;
pub use inputs::Inputs;

/// One of the files `planck report` and `planck check` write. Each has its
/// renderer module, `fn render(w: &mut impl Write, i: &Inputs)`; a new
/// output is a module and a variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The self-contained review page (inline CSS, JS and SVG).
    Html,
    /// The Markdown twin of the page, short enough for a PR comment. With
    /// [`Inputs::gate`], the gate's verdict opens it.
    Markdown,
    /// JUnit XML: one test case per statement and mode, one per schema
    /// object with findings; with [`Inputs::gate`], a failed case per gate
    /// reason no statement case carries.
    Junit,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitLab's code-quality report.
    Gitlab,
}

impl Output {
    /// The report output an `--output KIND=PATH` names, when it is one
    /// (`markdown` is the review's Markdown twin here).
    pub fn of(kind: crate::output::target::Kind) -> Option<Output> {
        use crate::output::target::Kind;
        match kind {
            Kind::Html => Some(Output::Html),
            Kind::MARKDOWN => Some(Output::Markdown),
            Kind::Junit => Some(Output::Junit),
            Kind::Sarif => Some(Output::Sarif),
            Kind::Gitlab => Some(Output::Gitlab),
            // The others are formats of a command's own result (`--format`).
            _ => None,
        }
    }

    /// Writes this output of `i` to `w`.
    pub fn render(self, w: &mut impl Write, i: &Inputs) -> io::Result<()> {
        match self {
            Output::Html => html::render(w, i),
            Output::Markdown => markdown::render(w, i),
            Output::Junit => junit::render(w, i),
            Output::Sarif => sarif::render(w, i),
            Output::Gitlab => gitlab::render(w, i),
        }
    }

    /// This output of `i`, whole, as the bytes a file gets.
    pub fn bytes(self, i: &Inputs) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.render(&mut out, i)
            .map_err(|e| Error::internal(format!("rendering the {self:?} report: {e}")))?;
        Ok(out)
    }
}

/// Reads `planck explain --format json` output.
pub fn read_explain(path: &Path) -> Result<JsonReport> {
    read_json(path, "explain", wire::explain::FORMAT_VERSION)
}

/// Reads `planck replay --format json` output.
pub fn read_replay(path: &Path) -> Result<ReplayReport> {
    read_json(path, "replay", wire::replay::FORMAT_VERSION)
}

fn read_json<T: DeserializeOwned>(path: &Path, what: &str, version: u32) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |e: serde_json::Error, message: String| Error::Config {
        path: path.to_path_buf(),
        line: Some(e.line()),
        column: Some(e.column()),
        message,
        hint: None,
    };
    // serde_json puts the position at the end of its message; the error
    // carries it apart, and Config prints it as path:line:col.
    let reason = |e: &serde_json::Error| {
        let s = e.to_string();
        s.split(" at line ").next().unwrap_or(&s).to_string()
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        let m = format!("not valid JSON ({}); expected {what}'s JSON", reason(&e));
        bad(e, m)
    })?;
    let found = value
        .get("format_version")
        .and_then(serde_json::Value::as_u64);
    if found != Some(u64::from(version)) {
        let found = found.map_or_else(|| "none".to_string(), |v| v.to_string());
        return Err(Error::Usage {
            message: format!(
                "{}: format_version {found}, but this planck reads {what}'s format_version {version}",
                path.display()
            ),
            hint: Some(format!(
                "write it again with this planck (`planck {what} --format json`)"
            )),
        });
    }
    serde_json::from_str(&text).map_err(|e| {
        let m = format!("not {what}'s JSON: {}", reason(&e));
        bad(e, m)
    })
}

/// Writes `output` of `i` to `path` whole, through [`crate::output::write_file`]
/// (a temporary file renamed over it, so a failure never leaves half a
/// report; its folder made when only the folder itself is missing,
/// `-o out/review.html`).
pub fn write(path: &Path, output: Output, i: &Inputs) -> Result<()> {
    let text = output.bytes(i)?;
    crate::output::write_file(path, &text)
}

#[cfg(test)]
pub(crate) mod fixture;

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn another_format_version_is_an_error_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "e.json",
            r#"{"format_version": 7, "statements": []}"#,
        );
        let e = read_explain(&p).unwrap_err().to_string();
        assert!(e.contains("format_version 7"), "{e}");
        assert!(e.contains("format_version 1"), "{e}");
        assert!(e.contains("e.json"), "{e}");
    }

    #[test]
    fn truncated_json_names_the_file_and_the_position() {
        let dir = tempfile::tempdir().unwrap();
        let full = serde_json::to_string_pretty(&fixture::explain()).unwrap();
        let p = write(dir.path(), "cut.json", &full[..full.len() / 2]);
        let e = read_explain(&p).unwrap_err();
        let Error::Config { line, column, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(line.unwrap() > 1 && column.is_some());
        let text = e.to_string();
        assert!(text.starts_with(&format!("{}:", p.display())), "{text}");
        assert!(text.contains("EOF while parsing"), "{text}");
        // The whole file reads back.
        let p = write(dir.path(), "full.json", &full);
        assert_eq!(read_explain(&p).unwrap(), fixture::explain());
    }

    #[test]
    fn a_replay_file_given_as_explain_is_refused_by_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "r.json",
            &serde_json::to_string(&fixture::replay()).unwrap(),
        );
        let e = read_explain(&p).unwrap_err().to_string();
        assert!(e.contains("not explain's JSON"), "{e}");
        assert!(read_replay(&p).is_ok());
    }
}
