//! `planck replay`: the recorded mix under a concurrency ladder, with honest
//! percentiles and the lock hotspots named down to the statement that took
//! the lock (issue 11).
//!
//! - [`hist`]: HdrHistogram latencies, merged per step, serialised for the JSON.
//! - [`verdict`]: growing / plateau / backwards / client-bound, and the USL fit.
//! - [`attribution`]: root holders of lock waits and the lock-taking statement.
//! - [`citus`]: the waits of a Citus coordinator's distributed transactions,
//!   read on the workers holding the shards (issue 36).
//! - [`stale`]: statements a migration made stale, skipped with a warning.
//! - [`tenant`]: tenant-scoped units as the tenant role under RLS (heavy, spread).
//! - [`options`] and [`rng`]: the resolved settings and the seeded generator,
//!   below every module that reads them (no module cycle, issue 34).

pub(crate) mod attribution;
pub(crate) mod citus;
pub(crate) mod exec;
pub(crate) mod fresh;
pub(crate) mod hist;
pub(crate) mod ladder;
pub mod lean;
pub(crate) mod options;
pub mod report;
pub(crate) mod rng;
pub(crate) mod run;
pub(crate) mod sampler;
pub(crate) mod slo;
pub(crate) mod stale;
pub(crate) mod tenant;
pub(crate) mod verdict;
pub(crate) mod workload;
