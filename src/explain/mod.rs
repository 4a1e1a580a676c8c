//! `planck explain`'s machinery: statement text ([`sql`]), the schema facts
//! ([`catalog`]), tenancy ([`tenant`]), the planning engine ([`engine`]), the
//! plan model ([`plan`]), the checks ([`checks`]), the report and its
//! renderers ([`report`]) and the CI baseline ([`baseline`]).

pub mod baseline;
pub mod catalog;
pub mod checks;
pub mod engine;
pub mod plan;
pub mod report;
pub mod sql;
pub mod tenant;
pub mod values;
