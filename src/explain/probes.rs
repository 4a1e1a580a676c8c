//! What explain measured on the server for the checks, by check: the rows
//! of each check's declared SELECT ([`super::rules::Check::probe`]) and the
//! evidence of each check's own measurement step
//! ([`super::rules::Check::measure`]), whose type is the check's own.
//! [`Probes`] is a map the checks declare into: a check that measures adds
//! no field here and no phase to `run`; the engine runs every measurement
//! in one phase, after planning (so a measurement has the plans) and before
//! the checks. The types live here, below both the engine's phases and the
//! checks (`rules`), so neither imports the other's.

use std::any::Any;
use std::collections::BTreeMap;

use tokio_postgres::Client;

use super::engine::Explained;
use crate::catalog::planner::Catalog;
use crate::db::ConnInfo;
use crate::error::Result;
use crate::findings::CheckId;
use crate::output::Log;
use crate::session::StatsMode;
use crate::tenancy::Tenancy;

/// What the probes and the measurements found, by check.
#[derive(Debug, Default)]
pub struct Probes {
    /// The rows of each check's own SELECT (`Check::probe`), by check.
    pub declared: BTreeMap<CheckId, Vec<serde_json::Value>>,
    /// What each check's own measurement (`Check::measure`) found.
    pub measured: BTreeMap<CheckId, Evidence>,
}

impl Probes {
    /// No probe answered, nothing measured.
    pub const fn new() -> Probes {
        Probes {
            declared: BTreeMap::new(),
            measured: BTreeMap::new(),
        }
    }

    /// `check`'s evidence, when its measurement ran and its type is `T`.
    pub fn evidence<T: Any>(&self, check: CheckId) -> Option<&T> {
        self.measured.get(&check)?.0.downcast_ref()
    }
}

/// What one check's measurement found, of the check's own type (read back
/// with [`Probes::evidence`] of that type).
pub struct Evidence(Box<dyn Any + Send + Sync>);

impl Evidence {
    pub fn new<T: Any + Send + Sync>(found: T) -> Evidence {
        Evidence(Box::new(found))
    }
}

impl std::fmt::Debug for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Evidence(..)")
    }
}

/// What a check's measurement runs with: the connection (the admin role,
/// outside any transaction; a measurement rolls back what it does), the
/// connection string for more connections, the catalog, the tenancy
/// (None: admin mode only), the planned statements, and the run's settings
/// a measurement needs.
pub struct Measure<'a> {
    pub client: &'a Client,
    pub conn: &'a ConnInfo,
    pub catalog: &'a Catalog,
    pub tenancy: Option<&'a Tenancy>,
    pub results: &'a [Explained],
    /// Connections the run may use (`--jobs`).
    pub jobs: usize,
    pub timeout_ms: u64,
    /// `--analyze`: the statements may be executed (always rolled back).
    pub analyze: bool,
    pub stats: StatsMode,
    pub log: Log,
}

/// A check's measurement under way: its evidence, or None when it had
/// nothing to measure.
pub type Measuring<'a> = futures_util::future::BoxFuture<'a, Result<Option<Evidence>>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A check's evidence is read back as its own type, and only so.
    #[test]
    fn evidence_is_read_back_by_its_own_type_and_check() {
        let mut p = Probes::new();
        p.measured
            .insert(CheckId::TenantPlanReuse, Evidence::new(vec![7_u32]));
        assert_eq!(
            p.evidence::<Vec<u32>>(CheckId::TenantPlanReuse),
            Some(&vec![7])
        );
        assert_eq!(p.evidence::<Vec<u64>>(CheckId::TenantPlanReuse), None);
        assert_eq!(p.evidence::<Vec<u32>>(CheckId::RlsPerRowCall), None);
    }
}
