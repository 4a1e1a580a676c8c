//! `planck man`'s flags.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write planck.1 and planck-<command>.1 into this folder instead of
    /// printing planck.1
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}
