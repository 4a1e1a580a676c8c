//! `planck.toml`: the project's configuration file, and where it is found.
//!
//! The file is optional. Every key has a default, unknown keys are errors (a
//! typo should not silently do nothing), and errors carry file:line:col. Each
//! subcommand owns one section; adding a key means adding a field here.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

pub const FILE_NAME: &str = "planck.toml";

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub database: DatabaseSection,
    #[serde(default)]
    pub paths: PathsSection,
    #[serde(default)]
    pub tenant: TenantSection,
    #[serde(default)]
    pub seed: SeedSection,
    #[serde(default)]
    pub record: RecordSection,
    #[serde(default)]
    pub explain: ExplainSection,
    #[serde(default)]
    pub replay: ReplaySection,
    #[serde(default)]
    pub check: CheckSection,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSection {
    /// Connection URL of the database planck works on. Unset: the managed cluster.
    pub url: Option<String>,
    /// The PostgreSQL major the managed cluster runs (`postgres = "17"` or
    /// `17`), found among the server binaries on the machine. Unset: the
    /// first found (see `cluster::find_bindir`).
    pub postgres: Option<PgMajor>,
    /// Make the managed cluster a Citus coordinator with this many workers
    /// (`planck db start --citus-workers` overrides it). Unset: a plain
    /// server, or as many workers as it already has.
    pub citus_workers: Option<u16>,
}

/// A PostgreSQL major as `planck.toml` writes it: `17` or `"17"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PgMajor {
    Number(u32),
    Text(String),
}

impl PgMajor {
    /// The major, 14 or later, or why not.
    pub fn major(&self) -> std::result::Result<u32, String> {
        let n = match self {
            PgMajor::Number(n) => *n,
            PgMajor::Text(t) => t.trim().parse().map_err(|_| {
                format!("[database] postgres = \"{t}\" is not a PostgreSQL major (write 14, 15, 16, 17 or 18)")
            })?,
        };
        if n < crate::cluster::MIN_MAJOR {
            return Err(format!(
                "[database] postgres = {n}: planck needs PostgreSQL {} or later",
                crate::cluster::MIN_MAJOR
            ));
        }
        Ok(n)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PathsSection {
    pub migrations: PathBuf,
    pub seeds: PathBuf,
    pub queries: PathBuf,
}

impl Default for PathsSection {
    fn default() -> Self {
        PathsSection {
            migrations: "migrations".into(),
            seeds: "seeds".into(),
            queries: "queries".into(),
        }
    }
}

/// How the application runs as a tenant; every key is inferred when unset.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantSection {
    /// The application role, subject to row-level security.
    pub role: Option<String>,
    /// The setting the policies read, e.g. `app.account_id`.
    pub setting: Option<String>,
    /// The tenant key to plan as. Default: the heaviest tenant.
    pub id: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedSection {
    /// Spec file, relative to the project. Default: every `seeds/*.toml`.
    pub spec: Option<PathBuf>,
    /// The RNG seed. Default: planck's fixed seed.
    pub seed: Option<u64>,
    /// Multiplies every row count of the spec.
    pub scale: Option<f64>,
    /// Rows of a table nothing else sizes.
    pub rows: Option<u64>,
    /// Generator threads and concurrent table loads.
    pub threads: Option<usize>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSection {
    /// Output file, relative to the project.
    pub output: Option<PathBuf>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainSection {
    /// Tables with fewer rows than this are not flagged for scans.
    pub min_rows: Option<u64>,
    /// A statement reading a table with fewer rows than this (planck's seed
    /// aside) is not judged: the data cannot show production's plan.
    pub min_table_rows: Option<u64>,
    /// The name `[explain.checks.rls-policy] cost_ratio` had before the
    /// checks' own knobs: still read (a planck.toml may have it), the new
    /// key winning when both are set.
    pub rls_cost_ratio: Option<f64>,
    /// Planning timeout per statement, in milliseconds.
    pub statement_timeout_ms: Option<u64>,
    /// Checks switched off for the whole project.
    #[serde(default)]
    pub disable: Vec<String>,
    /// Per-table ignores: `{ table = "events", check = "seq-scan", reason = "..." }`.
    #[serde(default)]
    pub ignore: Vec<IgnoreRule>,
    /// Production's planner settings, applied with SET LOCAL while planning:
    /// `settings = { random_page_cost = 1.1, work_mem = "16MB", jit = "off" }`.
    #[serde(default)]
    pub settings: toml::Table,
    /// How findings only the generic plan shows count: `judge`, `warn`
    /// (the default) or `ignore` (issue 13 §1).
    pub generic: Option<String>,
    /// Each check's own knobs, `[explain.checks.<id>]`: declared in the
    /// check's file, so read here as tables and checked against the
    /// declarations by `settings::explain`.
    #[serde(default)]
    pub checks: std::collections::BTreeMap<String, toml::Table>,
}

/// `planck replay`'s defaults; its flags win over every key.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySection {
    /// Client counts of the steps (with `rate = true`: units per second).
    pub ladder: Option<Vec<u32>>,
    /// Measured time of each step, e.g. `"10s"`.
    pub duration: Option<String>,
    /// Time each step runs before it is measured.
    pub warmup: Option<String>,
    /// `calls` or `uniform`.
    pub weights: Option<String>,
    pub statement_timeout_ms: Option<u64>,
    pub sample_ms: Option<u64>,
    pub verify_max_rows: Option<u64>,
    pub workers: Option<usize>,
    /// Open loop: the ladder lists rates over `clients` connections.
    pub rate: Option<bool>,
    pub clients: Option<u32>,
    /// An application pool smaller than the clients.
    pub pool: Option<u32>,
    /// Runs of each step.
    pub repeat: Option<u32>,
    /// `heavy` or `spread`.
    pub tenant_mode: Option<String>,
    /// A latency objective, e.g. `"p95=300ms@16"`.
    pub slo: Option<String>,
}

/// `planck check`'s defaults (the pre-merge gate); its flags win over every key.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSection {
    /// The project's own migration command (run in the checkout with
    /// DATABASE_URL and PG* set). Default: planck migrate.
    pub migrate: Option<String>,
    /// Seed scale of the check databases (a fraction of the spec's row
    /// counts). Default: 0.05 with a seed spec, 1 without.
    pub scale: Option<f64>,
    /// Rows of a table nothing else sizes in the check databases (what
    /// `[seed] rows` is to a local seed; `scale` multiplies it too).
    pub rows: Option<u64>,
    /// What fails the gate: `errors`, `regressions`, `blocking-migration`.
    pub fail_on: Option<Vec<String>>,
    /// Cost ratios under this (either way) count as unchanged.
    pub cost_noise: Option<f64>,
    /// A short replay of the recorded workload on the check databases.
    pub replay: Option<bool>,
    /// Its ladder (client counts) and the length of each step.
    pub ladder: Option<Vec<u32>>,
    pub replay_duration: Option<String>,
    /// A latency objective the replay must meet, `p95=300ms@4`: the `slo` gate.
    pub slo: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreRule {
    pub check: Option<String>,
    pub table: Option<String>,
    pub statement: Option<String>,
    pub reason: String,
}

/// Walks up from `start` to find `planck.toml`.
pub fn find(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .find(|p| p.is_file())
}

pub fn load(path: &Path) -> Result<ConfigFile> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

pub fn parse(path: &Path, text: &str) -> Result<ConfigFile> {
    toml::from_str(text).map_err(|e| toml_error(path, text, &e))
}

/// Turns a toml error into one that names file:line:col, with a hint for
/// unknown keys.
pub fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> Error {
    let (line, column) = match e.span() {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    let message = plain_types(e.message().trim());
    let hint = if message.starts_with("unknown field") {
        Some("remove the key or check its spelling; `planck init` writes every key, docs/configuration.md describes them".to_string())
    } else if message.starts_with("invalid type") || message.starts_with("invalid value") {
        Some(
            "numbers are written bare (`rows = 10`, `scale = 0.5`), text in quotes, \
             true or false unquoted; docs/configuration.md gives each key's type"
                .to_string(),
        )
    } else {
        None
    };
    Error::Config {
        path: path.to_path_buf(),
        line,
        column,
        message,
        hint,
    }
}

/// serde names the Rust type it wanted (`expected u64`): say it in words.
fn plain_types(message: &str) -> String {
    let mut parts = message.split("expected ");
    let mut out = parts.next().unwrap_or_default().to_string();
    for part in parts {
        // The word after "expected", whole: `u8x` is no `u8`.
        let end = part
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(part.len());
        let words = match &part[..end] {
            "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number, 0 or more",
            "i64" | "i32" => "a whole number",
            "f64" | "f32" => "a number",
            "bool" => "true or false",
            other => other,
        };
        out.push_str("expected ");
        out.push_str(words);
        out.push_str(&part[end..]);
    }
    out
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, byte_offset: usize) -> (usize, usize) {
    let upto = &text[..byte_offset.min(text.len())];
    let line = upto.matches('\n').count() + 1;
    let col = upto.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wrong type names the type in words, with a hint.
    #[test]
    fn a_wrong_type_reads_plainly() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            rows: u64,
            scale: Option<f64>,
        }
        for (text, words) in [
            ("rows = \"ten\"\n", "expected a whole number, 0 or more"),
            ("rows = -5\n", "expected a whole number, 0 or more"),
            ("rows = 1\nscale = \"big\"\n", "expected a number"),
        ] {
            let e = toml::from_str::<T>(text).unwrap_err();
            match toml_error(Path::new("s.toml"), text, &e) {
                Error::Config { message, hint, .. } => {
                    assert!(message.contains(words), "{message}");
                    assert!(
                        !message.contains("u64") && !message.contains("f64"),
                        "{message}"
                    );
                    assert!(hint.is_some_and(|h| h.contains("bare")), "{text}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            plain_types("expected u8x, expected u8"),
            "expected u8x, expected a whole number, 0 or more"
        );
    }

    #[test]
    fn unknown_key_is_an_error_with_its_position() {
        let text = "[database]\nurl = \"postgres://x\"\n\n[tenant]\nrole = \"a\"\ncolour = 1\n";
        let err = parse(Path::new("planck.toml"), text).unwrap_err();
        match err {
            Error::Config {
                line,
                column,
                message,
                hint,
                ..
            } => {
                assert_eq!(line, Some(6));
                assert_eq!(column, Some(1));
                assert!(message.contains("colour"), "{message}");
                assert!(hint.is_some());
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn empty_file_gives_defaults() {
        let c = parse(Path::new("planck.toml"), "").unwrap();
        assert_eq!(c.paths.migrations, PathBuf::from("migrations"));
        assert!(c.database.url.is_none());
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 7), (2, 4));
        assert_eq!(line_col("x", 0), (1, 1));
    }
}
