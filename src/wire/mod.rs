//! The JSON formats planck writes and reads back: every command's result
//! (explain's and replay's reports, the diff of two explain reports,
//! seed's, migrate's, record's, db's, the statistics file and its fidelity report). A shared
//! layer, so that the commands that read them (`report`, `check`) and the
//! ones that write them never import each other; each domain converts its
//! internal results into these types, and `crate::render` writes every
//! stdout format from them alone.

pub(crate) mod check;
pub mod db;
pub mod diff;
pub mod explain;
pub mod migrate;
pub mod record;
pub mod replay;
pub mod seed;
pub mod stats;
