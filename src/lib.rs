//! planck: shows, before you merge, how PostgreSQL statements behave on
//! production-sized data. The binary in `main.rs` only parses flags, calls
//! [`cmd::run`] and maps the result to an exit code; everything lives here.

pub mod bookkeeping;
pub mod catalog;
pub mod cli;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod db;
pub(crate) mod demo;
pub mod error;
pub mod explain;
pub mod findings;
pub mod migrate;
pub mod output;
pub mod params;
pub(crate) mod planner_stats;
pub mod queries;
pub mod record;
pub(crate) mod render;
pub mod replay;
pub mod report;
pub mod seed;
pub mod session;
pub mod settings;
pub mod signal;
pub mod stats;
pub(crate) mod tenancy;
pub mod wire;
pub(crate) mod workflow;

pub use error::{Error, Result};
