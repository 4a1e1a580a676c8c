//! Moved to [`crate::catalog::schema`]; this shim keeps `crate::seed::catalog::*` paths
//! compiling until every caller imports the shared layer (the lead removes it).
pub use crate::catalog::schema::*;
