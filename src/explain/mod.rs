//! `planck explain`'s machinery: [`run`] (the phases, from statements to the
//! report), its settings ([`options`]), the statements pg_stat_statements
//! holds ([`stats_source`]), the planning engine ([`engine`]), whether the
//! data can show a production plan ([`data`]), the plan model
//! ([`plan_tree`]: EXPLAIN's JSON and a flat view of its nodes), the plan
//! checks ([`rules`], over what the probe phases measured: [`probes`]), the
//! report and its renderers ([`report`], with the JSON wire types in
//! [`json`], each format picked in [`render`]). What replay and report share with it lives
//! in the shared layers: `catalog`, `tenancy`, `params`, `session`, `findings`.

pub mod advice;
pub(crate) mod citus;
pub(crate) mod data;
pub(crate) mod engine;
pub mod environment;
pub(crate) mod in_function;
pub(crate) mod json;
pub(crate) mod options;
pub(crate) mod per_row_call;
pub(crate) mod plan_tree;
pub(crate) mod policy_groups;
pub(crate) mod probes;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod rules;
pub(crate) mod run;
pub(crate) mod stats_source;

pub use options::ExplainSettings;
pub use run::run;
