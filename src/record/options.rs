//! What one `planck record` does, resolved: [`RecordSettings`], which
//! `settings::record` builds from flags, `planck.toml` and the process's
//! directory and `PATH`, and [`super::record`] takes.

use std::ffi::OsString;
use std::path::PathBuf;

/// What to record and where: everything [`super::record`] needs, resolved once by
/// `RecordSettings::resolve` (in settings/record.rs, from flags,
/// planck.toml and the process's directory and `PATH`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordSettings {
    /// The queries file to merge into.
    pub output: PathBuf,
    /// Keep the noise too.
    pub keep_all: bool,
    /// Remove recorded statements the run no longer sends.
    pub prune: bool,
    /// The command and its arguments; empty: capture what is there now.
    pub command: Vec<String>,
    /// Where the command runs.
    pub cwd: PathBuf,
    /// `PATH`, to find the command.
    pub path_var: Option<OsString>,
    /// Run the command's connections through the capture relay (to write
    /// transactions); off with `--no-relay`, and without a command.
    pub relay: bool,
    /// At most this many `[[transaction]]` shapes, the most frequent.
    pub max_transactions: usize,
    /// The summary lists every statement (`--verbose`), not only the top ones.
    pub list_all: bool,
}

/// The default of `--max-transactions`.
pub const MAX_TRANSACTIONS: usize = 200;
