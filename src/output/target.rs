//! `--output [KIND=]PATH`: the one way every command that writes result
//! files names them (issue 50, 1). Repeatable, so one run writes what CI
//! reads (`-o json=explain.json -o sarif=planck.sarif -o junit=junit.xml`);
//! a path without a kind is the command's own default kind, as `-o FILE`
//! always was (explain's and replay's `--format`, report's HTML page).
//!
//! Resolved once, before any work: a kind the command does not write, a
//! path given twice or one that cannot be written is an error naming it,
//! and nothing has been touched.

use std::path::PathBuf;
use std::str::FromStr;

use clap::ValueEnum;

use super::Format;

use crate::error::{Error, Result};

/// A kind of result file: a format of the command's own result (its
/// `--format`s, so a new [`Format`] is a kind with no change here), or one
/// of the review's and CI's files. Which kinds a command writes is its own
/// list (see [`resolve`]); `markdown` is explain's and replay's `--format
/// markdown`, and the review's Markdown twin for report and check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The command's result in this format.
    Format(Format),
    /// The self-contained review page.
    Html,
    /// JUnit XML, one test case per statement and mode.
    Junit,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitLab's code-quality JSON.
    Gitlab,
}

impl Kind {
    /// The human-readable tables.
    pub const TABLE: Kind = Kind::Format(Format::Table);
    /// The JSON result, with its `format_version`.
    pub const JSON: Kind = Kind::Format(Format::Json);
    /// Markdown, for a pull-request comment.
    pub const MARKDOWN: Kind = Kind::Format(Format::Markdown);

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Format(f) => f.name(),
            Kind::Html => "html",
            Kind::Junit => "junit",
            Kind::Sarif => "sarif",
            Kind::Gitlab => "gitlab",
        }
    }

    /// Every kind: the formats, then the files.
    pub fn all() -> Vec<Kind> {
        Format::value_variants()
            .iter()
            .map(|&f| Kind::Format(f))
            .chain([Kind::Html, Kind::Junit, Kind::Sarif, Kind::Gitlab])
            .collect()
    }

    /// The kind named `name`, in any case.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::all()
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// The `--format` this kind is, when it is one.
    pub fn format(self) -> Option<Format> {
        match self {
            Kind::Format(f) => Some(f),
            Kind::Html | Kind::Junit | Kind::Sarif | Kind::Gitlab => None,
        }
    }
}

impl From<Format> for Kind {
    fn from(f: Format) -> Kind {
        Kind::Format(f)
    }
}

/// One `--output` as written: a kind when it starts with one and `=`,
/// and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: Option<Kind>,
    pub path: PathBuf,
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Target, String> {
        if let Some((head, path)) = s.split_once('=')
            && let Some(kind) = Kind::parse(head)
        {
            if path.is_empty() {
                return Err(format!("`{s}` names no file after `{head}=`"));
            }
            return Ok(Target {
                kind: Some(kind),
                path: path.into(),
            });
        }
        if s.is_empty() {
            return Err("an empty path".into());
        }
        // A word before `=` that is no kind is a mistyped one (`sarfi=`),
        // not a file to write HTML into; a file whose name holds `=` is
        // written with a folder (`./run=3.json`).
        if let Some((head, _)) = s.split_once('=')
            && !head.is_empty()
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            let kinds: Vec<&str> = Kind::all().iter().map(|k| k.name()).collect();
            return Err(format!(
                "`{head}` is not a kind of output; the kinds are {} (a file named `{s}`: write `./{s}`)",
                kinds.join(", ")
            ));
        }
        Ok(Target {
            kind: None,
            path: s.into(),
        })
    }
}

/// The `--output`s of one command, each with its kind: a bare path gets
/// `default` (with none, a bare path is an error asking for its kind); a
/// kind not in `writes` is a usage error listing those the command writes;
/// a path named twice is one. Every path is checked writable
/// ([`super::check_writable`]) before the command does its work.
pub fn resolve(
    command: &str,
    targets: &[Target],
    default: Option<Kind>,
    writes: &[Kind],
) -> Result<Vec<(Kind, PathBuf)>> {
    let names: Vec<&str> = writes.iter().map(|k| k.name()).collect();
    let mut out: Vec<(Kind, PathBuf)> = Vec::with_capacity(targets.len());
    for t in targets {
        let Some(kind) = t.kind.or(default) else {
            return Err(Error::usage_hint(
                format!(
                    "`--output {}` names no kind, and planck {command} has no default one",
                    t.path.display()
                ),
                format!(
                    "write it as KIND=PATH, KIND one of {}: `--output {}={}`",
                    names.join(", "),
                    writes.first().map_or("json", |k| k.name()),
                    t.path.display()
                ),
            ));
        };
        if !writes.contains(&kind) {
            let bare = default.map_or_else(
                || "a bare PATH needs its kind".to_string(),
                |d| format!("a bare PATH is {}", d.name()),
            );
            return Err(Error::usage_hint(
                format!(
                    "planck {command} does not write {} (`--output {}={}`)",
                    kind.name(),
                    kind.name(),
                    t.path.display()
                ),
                format!(
                    "it writes {}: `--output KIND=PATH`; {bare}",
                    names.join(", ")
                ),
            ));
        }
        if let Some((k, _)) = out.iter().find(|(_, p)| *p == t.path) {
            return Err(Error::usage_hint(
                format!(
                    "{} is named by two --output arguments ({} and {})",
                    t.path.display(),
                    k.name(),
                    kind.name()
                ),
                "give each output a file of its own",
            ));
        }
        out.push((kind, t.path.clone()));
    }
    for (_, path) in &out {
        super::check_writable(path)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Target {
        s.parse().unwrap()
    }

    #[test]
    fn a_kind_before_the_equals_sign_is_read_and_anything_else_is_a_path() {
        assert_eq!(
            parse("sarif=out/planck.sarif"),
            Target {
                kind: Some(Kind::Sarif),
                path: "out/planck.sarif".into()
            }
        );
        assert_eq!(parse("JSON=e.json").kind, Some(Kind::JSON));
        assert_eq!(
            parse("review.html"),
            Target {
                kind: None,
                path: "review.html".into()
            }
        );
        // A mistyped kind is an error; a file whose name holds `=` is one
        // when it is written with its folder.
        let err = "sarfi=p.sarif".parse::<Target>().unwrap_err();
        assert!(err.contains("`sarfi` is not a kind"), "{err}");
        assert_eq!(
            parse("./run=3.json"),
            Target {
                kind: None,
                path: "./run=3.json".into()
            }
        );
        assert!(
            "json="
                .parse::<Target>()
                .unwrap_err()
                .contains("names no file")
        );
        assert!("".parse::<Target>().is_err());
    }

    #[test]
    fn every_kind_is_read_back_by_its_name() {
        for k in &Kind::all() {
            assert_eq!(Kind::parse(k.name()), Some(*k), "{k:?}");
            let t: Target = format!("{}=x", k.name()).parse().unwrap();
            assert_eq!(t.kind, Some(*k));
        }
    }

    #[test]
    fn resolve_gives_bare_paths_the_default_and_refuses_what_the_command_does_not_write() {
        let dir = std::env::temp_dir().join(format!("planck-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.out");
        let b = dir.join("b.out");
        let targets = [
            Target {
                kind: None,
                path: a.clone(),
            },
            Target {
                kind: Some(Kind::Junit),
                path: b.clone(),
            },
        ];
        let both = [Kind::JSON, Kind::Junit];
        let got = resolve("explain", &targets, Some(Kind::JSON), &both).unwrap();
        assert_eq!(got, vec![(Kind::JSON, a.clone()), (Kind::Junit, b.clone())]);

        let err = resolve("replay", &targets, Some(Kind::JSON), &[Kind::JSON]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("does not write junit"), "{text}");

        let err = resolve("check", &targets, None, &both).unwrap_err();
        assert!(err.to_string().contains("names no kind"), "{err}");

        let twice = [targets[0].clone(), targets[0].clone()];
        let err = resolve("explain", &twice, Some(Kind::JSON), &[Kind::JSON]).unwrap_err();
        assert!(err.to_string().contains("named by two"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
