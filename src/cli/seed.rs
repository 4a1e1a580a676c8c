//! `planck seed`'s flags, as clap parses them; resolved with `[seed]` of
//! `planck.toml` into `SeedSettings` by [`crate::settings::seed`].

use std::path::PathBuf;

use clap::Args;

/// `planck seed`'s raw flags, as clap parses them (the lower half of
/// `SeedSettings`: [`crate::settings::seed`] resolves them).
#[derive(Debug, Clone, Default, Args)]
pub struct SeedArgs {
    /// Spec file [default: `[seed] spec` of planck.toml, else the one seeds/*.toml]
    #[arg(long, value_name = "PATH", conflicts_with = "no_spec")]
    pub spec: Option<PathBuf>,
    /// Ignore spec files: seed every table from the catalog alone
    #[arg(long)]
    pub no_spec: bool,
    /// RNG seed; the same seed gives byte-identical tables [default: 20260101]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Multiply every row count of the spec (0.1 for a quick run)
    #[arg(long, allow_negative_numbers = true, value_name = "FACTOR")]
    pub scale: Option<f64>,
    /// Rows of a table nothing else sizes (children get more, by fan-out) [default: 25000]
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
    /// Worker threads and connections [default: the number of CPUs]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Load only the K-th of N disjoint slices of every table (N machines load exactly what one would)
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Replace the rows of tables that are not empty
    #[arg(long)]
    pub truncate: bool,
    /// Print the plan (rows per table) and write nothing; refuse what the real run would refuse
    #[arg(long)]
    pub dry_run: bool,
    /// Refuse the whole run when one table cannot be seeded (for CI); by default planck seeds
    /// the others, reports it and exits 1
    #[arg(long)]
    pub all_or_nothing: bool,
    /// What planck does by default now (kept so scripts that pass it still run)
    #[arg(long, hide = true, conflicts_with = "all_or_nothing")]
    pub skip_unseedable: bool,
    /// Generate and encode every row, send nothing, report MB/s on stderr (profiling the generator)
    #[arg(long, conflicts_with_all = ["truncate", "dry_run"])]
    pub generate_only: bool,
    /// Restore and validate the foreign keys an interrupted seed left saved; load nothing
    #[arg(long, conflicts_with_all = ["truncate", "dry_run", "generate_only", "shard", "spec", "no_spec"])]
    pub restore: bool,
    /// With --restore: drop planck's saved copy of the named constraint (one that no longer
    /// applies), or the partitions planck created for the named table
    #[arg(long, value_name = "NAME")]
    pub forget: Vec<String>,
    /// Seed from a file `planck stats capture` wrote: its row counts (times --scale) and each
    /// column's NULL share and values; a spec still wins where it says something
    #[arg(long, value_name = "FILE", conflicts_with = "restore")]
    pub stats: Option<PathBuf>,
    /// With --stats: the tenant column's most common values are tenant numbers, kept with
    /// their row shares (an integer tenant key numbered from 1)
    #[arg(long, requires = "stats")]
    pub exact_tenants: bool,
    /// Leave partitioned tables that have no partition as they are (by default planck creates
    /// partitions covering the rows it generates)
    #[arg(long)]
    pub no_create_partitions: bool,
}

impl SeedArgs {
    /// The flags of [`SeedSettings::for_spec`] (a library caller running
    /// `cmd::seed::run_on` on a spec).
    pub fn for_spec(spec: std::path::PathBuf, scale: f64) -> SeedArgs {
        SeedArgs {
            spec: Some(spec),
            scale: Some(scale),
            truncate: true,
            ..SeedArgs::default()
        }
    }
}
