//! `planck demo`'s flags and the hidden `planck example-app`'s.

use clap::Args;

/// Arguments of the hidden `planck example-app`.
#[derive(Debug, Clone, Default, Args)]
pub struct ExampleAppArgs {
    /// URL the API part connects with [default: the database URL with user and password app_user]
    #[arg(long, env = "APP_DATABASE_URL", value_name = "URL")]
    pub app_url: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Database the demo (re)creates and works in
    #[arg(long, default_value = "planck_demo")]
    pub database: String,
    /// Size of the dataset, as a fraction of the bundled spec (1 = the 1.5 GB of the field report)
    #[arg(
        long,
        allow_negative_numbers = true,
        default_value_t = 1.0,
        value_name = "FACTOR"
    )]
    pub scale: f64,
    /// Drop and recreate --database even on a server planck does not manage
    #[arg(long)]
    pub force: bool,
    /// Length of each step of the closing replay (ladder 1, 4, 16); 0 skips it
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS")]
    pub replay_seconds: f64,
}
