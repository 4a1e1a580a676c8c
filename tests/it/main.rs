//! planck's integration tests, one binary (linking planck's 130 MB debug
//! build once instead of once per file): a module per command and concern,
//! each against real PostgreSQL servers started through planck's own
//! cluster code (`common`), one database per test.
//!
//! Run one module with a filter: `cargo test --test it explain_rls::`.

#[macro_use]
mod common;

// src/report/fixture.rs, which report_files.rs includes by path, names
// what it builds through `crate::wire` and `crate::report`.
use planck::{report, wire};

mod architecture;
mod check;
mod check_ci;
mod check_init;
mod citus;
mod cluster;
mod connect;
mod demo;
mod docs;
mod explain;
mod explain_advice;
mod explain_csv;
mod explain_findings_contract;
mod explain_functions;
mod explain_graphile;
mod explain_identities_exact;
mod explain_not_judged;
mod explain_precision;
mod explain_recorded_workloads;
mod explain_rls;
mod explain_schema_advice;
mod explain_settings;
mod explain_tenant_params;
mod foundation;
mod migrate;
mod migrate_no_transaction;
mod record;
mod record_evidence;
mod record_migrations;
mod record_relay;
mod record_self;
mod record_servers;
mod replay;
mod replay_lean;
mod replay_stale;
mod report_environment;
mod report_files;
mod report_page;
mod seed;
mod seed_check_corpus;
mod seed_checks;
mod seed_constraints;
mod seed_determinism;
mod seed_direct;
mod seed_expression_keys;
mod seed_fixtures;
mod seed_fk_picks;
mod seed_fuzz;
mod seed_keys_time;
mod seed_load;
mod seed_observed;
mod seed_partition_keys;
mod seed_partition_values;
mod seed_plan;
mod seed_resume;
mod seed_safety;
mod seed_sizing;
mod seed_sizing_grown;
mod seed_sizing_subtypes;
mod seed_tool_metadata;
mod seed_types;
mod seed_unique_types;
mod seed_values;
mod stats_capture;
mod stats_fidelity;
mod stats_seed;
mod walkthrough;
