//! `planck db`'s subcommands and their flags.

use clap::Subcommand;

use crate::cluster;

#[derive(Debug, Clone, Subcommand)]
#[command(after_help = "Examples:
  planck db start                    # start the local server (created on first use); prints its URL
  planck db start --citus-workers 2  # a Citus coordinator and two workers (docs/citus.md)
  psql \"$(planck db url)\"            # a psql shell on it
  planck db destroy                  # stop it and delete .planck/ with its data")]
pub enum DbCommand {
    /// Initialize (once) and start the local server; prints its URL
    Start {
        /// TCP port on 127.0.0.1 [default: the last one used, else any free port]
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        port: Option<u16>,
        /// Make it a Citus coordinator with N worker servers (needs Citus
        /// installed) [default: `[database] citus_workers`, else as many as it has]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=i64::from(cluster::citus::MAX_WORKERS)))]
        citus_workers: Option<u16>,
    },
    /// Stop the local server
    Stop,
    /// Say whether the local server exists and runs, and where
    Status,
    /// Print a connection URL for psql or your test suite (starts the server if needed)
    Url {
        /// Database name in the URL
        #[arg(long, default_value = cluster::DEFAULT_DATABASE)]
        database: String,
    },
    /// Stop the local server and delete .planck/ with all its data
    /// (waits for other planck commands using it, then refuses)
    Destroy {
        /// Seconds to wait for other planck commands using the server to finish
        #[arg(long, value_name = "SECONDS", default_value_t = cluster::DESTROY_WAIT.as_secs())]
        wait: u64,
    },
}
