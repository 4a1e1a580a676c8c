//! The CI baseline: findings accepted as they are, so only new ones fail.
//!
//! `queries/baseline.toml` holds one `[[finding]]` per accepted finding,
//! keyed by check, statement identity, mode, relation and index, never by
//! costs or row counts, sorted, so it is stable and diffs well. Ignores are
//! different (see [`super::ignore`]): they carry a reason and live in planck.toml
//! (`[[explain.ignore]]`) or on the statement in the queries file (`ignore = "why"`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Finding;
use crate::error::{Error, Result};

pub const FILE: &str = "baseline.toml";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    pub check: String,
    pub statement: Option<String>,
    pub mode: Option<String>,
    pub relation: Option<String>,
    pub index: Option<String>,
    /// The start of the statement, for people reading the file (not part of the key).
    #[serde(default, skip)]
    pub note: Option<String>,
}

impl Key {
    pub fn of(f: &Finding) -> Key {
        Key {
            check: f.check.to_string(),
            statement: f.statement.clone(),
            mode: f.mode.map(|m| m.as_str().to_string()),
            relation: f.relation.clone(),
            index: f.index.clone(),
            note: f.query.as_deref().map(|q| {
                crate::queries::normalize_space(q)
                    .chars()
                    .take(70)
                    .collect()
            }),
        }
    }

    fn id(
        &self,
    ) -> (
        &str,
        &Option<String>,
        &Option<String>,
        &Option<String>,
        &Option<String>,
    ) {
        (
            &self.check,
            &self.statement,
            &self.mode,
            &self.relation,
            &self.index,
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    format_version: Option<u32>,
    #[serde(default)]
    finding: Vec<RawKey>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    check: String,
    statement: Option<String>,
    mode: Option<String>,
    relation: Option<String>,
    index: Option<String>,
    #[allow(dead_code)]
    query: Option<String>,
}

/// check, statement, mode, relation, index.
type KeyTuple = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

#[derive(Debug, Default)]
pub struct Baseline {
    keys: BTreeSet<KeyTuple>,
}

pub fn default_path(queries_dir: &Path) -> PathBuf {
    queries_dir.join(FILE)
}

impl Baseline {
    /// Loads the baseline; a missing file is an empty baseline.
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Baseline::default()),
            Err(source) => {
                return Err(Error::ReadFile {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let raw: RawFile =
            toml::from_str(&text).map_err(|e| crate::config::toml_error(path, &text, &e))?;
        if let Some(v) = raw.format_version
            && v != 1
        {
            return Err(Error::usage_hint(
                format!("{}: format_version {v} is not 1", path.display()),
                "rewrite it with `planck explain --write-baseline`",
            ));
        }
        Ok(Baseline {
            keys: raw
                .finding
                .into_iter()
                .map(|k| (k.check, k.statement, k.mode, k.relation, k.index))
                .collect(),
        })
    }

    pub fn contains(&self, f: &Finding) -> bool {
        let k = Key::of(f);
        let (c, s, m, r, i) = k.id();
        self.keys
            .contains(&(c.to_string(), s.clone(), m.clone(), r.clone(), i.clone()))
    }
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The baseline file's text for these findings (errors and warnings; info
/// findings never fail anything).
pub fn render(findings: &[&Finding]) -> String {
    let mut keys: Vec<Key> = findings.iter().map(|f| Key::of(f)).collect();
    keys.sort();
    keys.dedup_by(|a, b| a.id() == b.id());
    let mut out = String::from(
        "# Findings accepted as they are: `planck explain` fails only on new ones.\n\
         # Written by `planck explain --write-baseline`; delete entries as you fix them.\n\
         format_version = 1\n",
    );
    for k in keys {
        out.push_str("\n[[finding]]\n");
        out.push_str(&format!("check = {}\n", toml_str(&k.check)));
        for (name, v) in [
            ("statement", &k.statement),
            ("mode", &k.mode),
            ("relation", &k.relation),
            ("index", &k.index),
            ("query", &k.note),
        ] {
            if let Some(v) = v {
                out.push_str(&format!("{name} = {}\n", toml_str(v)));
            }
        }
    }
    out
}

pub fn write(path: &Path, findings: &[&Finding]) -> Result<()> {
    let err = |source| Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(err)?;
    }
    crate::output::write_file(path, render(findings).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{CheckId, Severity};

    fn finding(stmt: &str, rel: &str) -> Finding {
        let mut f = Finding::new(CheckId::SeqScan, Severity::Error, format!("{rel} 123 rows"));
        f.statement = Some(stmt.into());
        f.relation = Some(rel.into());
        f.mode = Some(crate::tenancy::Mode::Tenant);
        f.query = Some("SELECT \"x\" FROM t".into());
        f
    }

    #[test]
    fn baseline_round_trips_and_is_sorted() {
        let a = finding("bbb", "events");
        let b = finding("aaa", "devices");
        let text = render(&[&a, &b]);
        assert!(
            text.find("aaa").unwrap() < text.find("bbb").unwrap(),
            "{text}"
        );
        assert!(!text.contains("123"), "no counts in the key: {text}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q/baseline.toml");
        write(&p, &[&a, &b]).unwrap();
        let base = Baseline::load(&p).unwrap();
        assert!(base.contains(&a) && base.contains(&b));
        assert!(!base.contains(&finding("ccc", "events")));
        assert_eq!(render(&[&b, &a]), text, "stable");
    }
}
