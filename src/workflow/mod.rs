//! Work that spans domains, below the command glue and above the domains:
//! a domain never imports another one, and a command file never imports
//! another command's, so what two commands share and two domains take part
//! in lives here, calling each domain through its public entry points.
//!
//! - [`check`]: `planck check`'s run, the pre-merge gate (migrate, seed,
//!   explain, replay, the diff and the gate).
//! - [`explain`]: explain's report with index findings located at their
//!   migration line (explain and migrate).

pub(crate) mod check;
pub(crate) mod explain;
