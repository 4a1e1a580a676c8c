//! `planck seed`'s machinery, one module per concern: the catalog it reads,
//! the spec users write, the checks it understands, the column generators it
//! picks, the plan it derives, the value generators and pinned RNG, the
//! binary COPY encoder and the load choreography (indexes, transactions,
//! progress, recovery).

// The foundation's `Error` carries a large `Migration` variant; boxing it is
// a crate-wide decision, so seed code follows `Result<T, Error>` as it is.
#![allow(clippy::result_large_err)]

pub mod catalog;
pub mod checks;
pub mod columns;
pub mod copy;
pub mod generate;
pub mod load;
pub mod plan;
pub mod rng;
pub mod spec;
