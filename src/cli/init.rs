//! `planck init`'s flags.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// Where to write it [default: planck.toml in the current directory]
    #[arg(long, value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// Overwrite an existing file
    #[arg(long)]
    pub force: bool,
}
