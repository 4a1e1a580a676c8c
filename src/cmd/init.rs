//! `planck init`: writes a commented `planck.toml` with every key and its
//! default. Keys with a fixed default are written set to it; keys whose
//! default is inferred or absent (the database URL, the tenant role...) are
//! written commented out (`#key = example`), so uncommenting one is a valid file.

use std::path::PathBuf;

use crate::cli::init::InitArgs;
use crate::error::{Error, Result};
use crate::settings::Settings;

pub async fn run(args: InitArgs, settings: &Settings) -> Result<i32> {
    let path = settings.cwd.join(
        args.path
            .unwrap_or_else(|| PathBuf::from(crate::config::FILE_NAME)),
    );
    if path.exists() && !args.force {
        return Err(Error::usage_hint(
            format!("{} exists: planck init leaves it as it is", path.display()),
            "add --force to overwrite it",
        ));
    }
    std::fs::write(&path, crate::settings::template::template()).map_err(|source| {
        Error::WriteFile {
            path: path.clone(),
            source,
        }
    })?;
    settings.info(&format!(
        "wrote {}: every key with its default (commented keys are inferred or unset)",
        path.display()
    ));
    Ok(0)
}
