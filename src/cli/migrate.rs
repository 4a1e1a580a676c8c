//! `planck migrate`'s flags.

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    /// Drop and recreate the database first (only on planck's managed cluster, unless --force);
    /// the server's roles survive it
    #[arg(long)]
    pub fresh: bool,
    /// Allow --fresh on a database planck does not manage
    #[arg(long, requires = "fresh")]
    pub force: bool,
}
