//! What a check run is given: the [`CheckPlan`] the glue resolved from the flags
//! and `planck.toml`, the [`Steps`] that resolve each domain's own settings
//! when the step starts (so a bad `[seed]` section fails where it did, after
//! the databases before it were built), and the gates. It sits below every
//! other module of the check so they all read it and none of them cycles.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::explain::ExplainSettings;
use crate::output::Log;
use crate::replay::options::Options as ReplayOptions;
use crate::replay::workload::Workload;
use crate::seed::SeedOptions;

/// What fails the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gate {
    /// Error findings the baseline does not hold.
    Errors,
    /// With `--base`: a plan that got costlier beyond the noise, or lost an index.
    Regressions,
    /// A migration statement that held an ACCESS EXCLUSIVE or SHARE lock, or rewrote a table.
    BlockingMigration,
    /// With `--replay`: the head's replay missed `[check] slo`.
    Slo,
    /// A statement the data could not judge (its tables below `min_rows`
    /// or `min_table_rows`).
    NotJudged,
}

impl Gate {
    pub const ALL: [Gate; 5] = [
        Gate::Errors,
        Gate::Regressions,
        Gate::BlockingMigration,
        Gate::Slo,
        Gate::NotJudged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Errors => "errors",
            Gate::Regressions => "regressions",
            Gate::BlockingMigration => "blocking-migration",
            Gate::Slo => "slo",
            Gate::NotJudged => "not-judged",
        }
    }

    pub fn parse(s: &str) -> Result<Gate> {
        Gate::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| {
                Error::usage_hint(
                    format!("[check] fail_on names an unknown gate {s:?}"),
                    "use any of \"errors\", \"regressions\", \"blocking-migration\", \"slo\", \"not-judged\"",
                )
            })
    }
}

/// The short replay of `--replay`.
#[derive(Debug, Clone)]
pub struct ReplayPlan {
    pub ladder: Vec<u32>,
    /// As `planck replay --duration` takes it (`5s`).
    pub duration: String,
    pub slo: Option<crate::replay::slo::Slo>,
}

/// A check run's settings, resolved.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    /// The databases' prefix (`<prefix>_head`).
    pub prefix: String,
    /// Keep the databases at the end.
    pub keep: bool,
    /// The seed's scale.
    pub scale: f64,
    /// `[check] migrate`: a command instead of planck migrate.
    pub migrate: Option<String>,
    pub fail_on: Vec<Gate>,
    pub cost_noise: f64,
    pub replay: Option<ReplayPlan>,
    /// The project folder and its migrations (head's checkout).
    pub project_dir: PathBuf,
    pub migrations_dir: PathBuf,
    /// Where check's own step lines go.
    pub log: Log,
    /// --verbose: the domains' own progress lines show too.
    pub verbose: bool,
}

impl CheckPlan {
    pub fn gates(&self, gate: Gate) -> bool {
        self.fail_on.contains(&gate)
    }

    /// The domains' own progress lines are shown with --verbose only: check
    /// prints one line per step (their warnings always show).
    pub fn domain_log(&self) -> Log {
        Log {
            quiet: !self.verbose,
            verbose: self.verbose,
        }
    }

    pub fn db_name(&self, side: &str) -> String {
        format!("{}_{side}", self.prefix)
    }

    /// A path as the outputs write it: relative to the source root (the
    /// project's git work tree) when it is below it.
    pub fn relative(&self, p: &Path) -> String {
        crate::findings::source::relative_text(
            p,
            &crate::findings::source::root_of(&self.project_dir),
        )
    }
}

/// Each domain's settings, resolved by the glue before any database work;
/// the recorded workload is read when the replay step needs it.
pub trait Steps {
    /// The seed's options at the check's scale, the tables truncated first.
    fn seed(&self) -> SeedOptions;
    /// Explain's settings, without advice.
    fn explain(&self) -> ExplainSettings;
    /// The recorded workload and the replay's options for the check's
    /// replay, with side effects allowed (the database is the check's own).
    fn replay(&self) -> Result<(Workload, ReplayOptions)>;
}

/// One line per step: what it did and how long it took.
pub fn step(log: Log, started: Instant, what: &str) {
    log.info(&format!(
        "{what} ({:.1} s)",
        started.elapsed().as_secs_f64()
    ));
}
