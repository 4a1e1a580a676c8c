//! `planck record`'s flags, as clap parses them; resolved into
//! `RecordSettings` by [`crate::settings::record`].

use std::path::PathBuf;

use clap::Args;

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

    /// Do not run the command's connections through the capture relay:
    /// statements only, no [[transaction]] entries (as without a command)
    #[arg(long)]
    pub no_relay: bool,

    /// At most this many recorded [[transaction]] shapes, the most frequent [default: 200]
    #[arg(long, value_name = "N")]
    pub max_transactions: Option<usize>,

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
