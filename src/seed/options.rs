//! What one `planck seed` does, resolved: [`SeedOptions`], which
//! `settings::seed` builds from flags, `planck.toml` and defaults, and
//! [`super::run`] takes.

use super::spec::SpecFile;

/// What one `planck seed` does, every value resolved and validated (by
/// `settings::seed`, from flags, planck.toml and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SeedOptions {
    /// The spec, read and checked once (before anything connects); None:
    /// seed every table from the catalog alone.
    pub spec: Option<SpecFile>,
    pub seed: u64,
    pub scale: f64,
    pub rows: Option<u64>,
    pub threads: usize,
    /// (k, n): load only the k-th of n slices (1-based).
    pub shard: Option<(u64, u64)>,
    pub truncate: bool,
    pub dry_run: bool,
    /// `--all-or-nothing`: a table planck cannot seed stops the whole run
    /// (for CI); without it planck seeds the others, reports it and exits 1.
    pub all_or_nothing: bool,
    pub generate_only: bool,
    /// `--restore`: restore what an interrupted run left saved, load nothing.
    pub restore: bool,
    /// `--forget NAME` (with `--restore`): drop planck's copy of a saved constraint.
    pub forget: Vec<String>,
    /// The queries file's `[observed]` (empty without one): free columns
    /// take the recorded literals, IS NULL-tested ones a rare NULL share.
    pub observed: crate::queries::Observed,
    /// Create partitions for partitioned tables that have none (the
    /// default; `--no-create-partitions` turns it off), see [`super::partitions`].
    pub create_partitions: bool,
}
