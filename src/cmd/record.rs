//! `planck record` (its issue has not landed yet).

use clap::Args;

use crate::error::{Error, Result};
use crate::settings::Settings;

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Accepted and ignored until the command exists
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

pub async fn run(_args: RecordArgs, _settings: &Settings) -> Result<i32> {
    Err(Error::NotBuilt { command: "record" })
}
