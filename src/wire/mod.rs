//! The JSON formats planck writes and reads back: explain's and replay's
//! reports, and the diff of two explain reports. A shared layer, so that the commands that read them (`report`,
//! `check`) and the ones that write them never import each other; each
//! domain converts its internal results into these types.

pub(crate) mod check;
pub mod diff;
pub mod explain;
pub mod replay;
pub mod stats;
