//! `planck completions`'s argument.

use clap::Args;
use clap_complete::Shell;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to write the script for
    #[arg(value_enum)]
    pub shell: Shell,
}
