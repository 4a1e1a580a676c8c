//! `planck check`'s run: the pre-merge gate, over the migrate, seed,
//! explain, replay and report domains. On databases of its own
//! (`<prefix>_head`, with a base also `<prefix>_base` and `<prefix>_measure`)
//! it migrates, seeds at the CI scale, explains the recorded statements
//! against the committed baseline and gates the result (`[check] fail_on`).
//! Every step prints one line with its duration.
//!
//! With a base (`--base REF`) the base is `git merge-base HEAD REF`, its
//! migrations read from a temporary `git worktree` ([`base_tree`]). The base
//! database is migrated, seeded and analyzed once; the head database is a
//! `TEMPLATE` copy of it (the same rows and the same statistics) with only
//! head's new migration files applied ([`incremental`]) and the tables they
//! touched re-analyzed ([`analyze`]), so a plan that differs between the two
//! differs because of the change. Both are explained and diffed, and head's
//! new files are run once more, statement by statement, on a further copy
//! while `pg_locks` is sampled ([`measure`]). With a replay plan the
//! recorded workload is replayed on each side once both are explained.
//!
//! The glue (`cmd/check.rs`) resolves the settings into a [`CheckPlan`] and the
//! per-domain settings through [`Steps`], handles stop signals and writes
//! the reports; this module never sees `planck.toml` or the flags.

pub(crate) mod analyze;
pub(crate) mod base_tree;
pub(crate) mod databases;
pub(crate) mod gate;
pub(crate) mod incremental;
pub(crate) mod lost_index;
pub(crate) mod measure;
pub(crate) mod plan;
pub(crate) mod run;
pub(crate) mod steps;

pub use base_tree::BaseTree;
pub use plan::{CheckPlan, Gate, ReplayPlan, Steps};
pub use run::CheckRun;
