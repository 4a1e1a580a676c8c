//! A replay's settings, resolved: the ladder, the durations, the safety
//! switches and which tenant tenant-scoped work runs as. They live below
//! every module that reads them ([`super::run`], [`super::exec`],
//! [`super::tenant`]) so that none of those imports another only for a
//! type; `crate::settings::replay` builds them from flags and `planck.toml`.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Options {
    pub ladder: Vec<u32>,
    pub duration: Duration,
    pub warmup: Duration,
    pub statement_timeout_ms: u64,
    pub sample_ms: u64,
    pub sampler: bool,
    pub commit: bool,
    pub force: bool,
    pub allow_side_effects: bool,
    /// Tables with more rows are not checksummed (a note says so).
    pub verify_max_rows: u64,
    pub workers: usize,
    pub seed: u64,
    /// Rows sampled per table for `column` binds.
    pub pool_rows: usize,
    /// Open loop over this many clients: the ladder lists rates (units per
    /// second). `None`: closed loop, the ladder lists client counts.
    pub rate: Option<u32>,
    /// An application pool of this many connections shared by the clients.
    pub pool: Option<u32>,
    /// Runs of each step, merged into one.
    pub repeat: u32,
    pub tenant: TenantChoice,
}

impl Options {
    /// The clients of the top step: `--clients` in rate mode, else the
    /// ladder's largest count.
    pub fn top_clients(&self) -> u32 {
        match self.rate {
            Some(clients) => clients,
            None => self.ladder.iter().copied().max().unwrap_or(1),
        }
    }
}

/// Which tenant tenant-scoped work runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TenantMode {
    /// The heaviest tenant (production's worst case), or the one named.
    #[default]
    Heavy,
    /// Tenants drawn with the data's own skew.
    Spread,
}

#[derive(Debug, Clone, Default)]
pub struct TenantChoice {
    pub mode: TenantMode,
    /// `[tenant]` and `--tenant-id` (an id wins over the mode).
    pub options: crate::tenancy::TenantOptions,
}
