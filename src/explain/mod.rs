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
pub mod citus;
pub mod data;
pub mod engine;
pub mod environment;
pub mod in_function;
pub mod json;
pub mod options;
pub mod per_row_call;
pub mod plan_reuse;
pub mod plan_tree;
pub mod policy_groups;
pub mod probes;
pub mod render;
pub mod report;
pub mod rules;
pub mod run;
pub mod stats_source;

pub use options::ExplainSettings;
pub use run::run;
