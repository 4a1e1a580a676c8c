//! The row model: everything a worker thread reads to produce one row, and
//! nothing else.
//!
//! Rows are generated on rayon workers, any row alone, in any order, from
//! the plan the planner built once: the plan's types (tables, columns, foreign
//! keys, the layout of rows over parents and tenants), the values and their
//! generators, the pinned RNG, the shapes and solved CHECKs a column's value
//! is turned by, and the attempts of a row the server checks. This module
//! imports no other module of `seed` (the planner, the solver and the loader
//! import it), and its own modules import each other one way only:
//!
//! - [`rng`], [`attempt`]: no import;
//! - [`generate`]: values and generators (rng);
//! - [`solved`]: solved CHECKs (rng, generate, attempt);
//! - [`shape`]: what CHECKs ask of a value (rng, generate, solved);
//! - [`plan`]: the plan and a row's place in it (rng, generate, shape, solved);
//! - [`eval`]: one row's values, evaluated from all of the above.

pub(crate) mod attempt;
pub(crate) mod eval;
pub(crate) mod generate;
pub mod plan;
pub(crate) mod rng;
pub(crate) mod shape;
pub(crate) mod solved;
