//! The JSON formats planck writes and reads back: explain's and replay's
//! reports. A shared layer, so that the commands that read them (`report`,
//! `check`) and the ones that write them never import each other; each
//! domain converts its internal results into these types.

pub mod explain;
pub mod replay;
