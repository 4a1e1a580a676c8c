//! The plan checks. Each lives in its own file with its tests, has a
//! kebab-case id and a help text (declared in the file, see
//! [`check::declare_check`]); adding a check means adding a file and one
//! line in `checks!` below. A check's knobs are declared in its file
//! ([`knob`]); a check that measures something on the server beyond one
//! SELECT is a folder, `<check>/mod.rs` and its `measure.rs`
//! ([`Check::measure`], `tenant_plan_reuse/` is the example).

pub use crate::findings::{CheckId, Finding, Severity};

pub(crate) mod check;
pub(crate) mod citus;
pub(crate) mod knob;

pub(crate) use check::declare_check;
use check::on_bookkeeping;
pub use check::{
    Check, Ctx, Probe, WithHelp, describe, finding, generic_only, judged_plans, modes_phrase,
    node_json, own_help, plain_name, plan_index, reads_all_by_design, rows_read_in,
    sort_for_report,
};
pub use citus::{CITUS_GUARD, DISTRIBUTION_PROBE, Distribution, distributions};
pub use knob::{CheckKnobs, Knob, KnobSpec, KnobValue};

/// `checks! { module::Check, ... }`: declares each check's module and
/// lists the checks in [`ALL`]. build.rs reads the same list (with each
/// file's `declare_check!`) to write `CheckId`, in this order.
macro_rules! checks {
    ($($module:ident::$check:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every check, in report order.
        pub const ALL: &[&dyn Check] = &[$(&$module::$check),*];
    };
}

// Adding a check: its file, and one line here.
checks! {
    seq_scan::SeqScan,
    full_index_scan::FullIndexScan,
    existence_check_scan::ExistenceCheckScan,
    unused_index::UnusedIndex,
    unused_partial_index::UnusedPartialIndex,
    rls_policy::RlsPolicy,
    stale_statement::StaleStatement,
    filter_removes_most_rows::FilterRemovesMostRows,
    rls_per_row_call::RlsPerRowCall,
    tenant_plan_reuse::TenantPlanReuse,
    tenant_misestimate::TenantMisestimate,
    multiple_permissive_policies::MultiplePermissivePolicies,
    duplicate_index::DuplicateIndex,
    missing_fk_index::MissingFkIndex,
    multi_shard::MultiShard,
    repartition_join::RepartitionJoin,
    tenant_shard_skew::TenantShardSkew,
}

/// Runs every check not disabled; a disabled id also drops the findings a
/// check emits under another id (`partial-index-needs-literal`).
///
/// Findings on migration bookkeeping (`django_migrations`,
/// `schema_migrations`, planck's own tables: see
/// `catalog::schema::is_migration_bookkeeping`) are dropped: those tables
/// are not the application's data (issue 13 §6).
///
/// What the checks withheld for want of data stays in `ctx.withheld`, under
/// the same two rules (a disabled check's, or on bookkeeping, is dropped).
pub fn run_all(ctx: &Ctx, disabled: &[CheckId]) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in ALL {
        c.run(ctx, &mut out);
    }
    out.retain(|f| !disabled.contains(&f.check) && !on_bookkeeping(f, ctx.results));
    ctx.withheld
        .borrow_mut()
        .retain(|o| !disabled.contains(&o.check) && !check::is_bookkeeping(&o.table));
    out
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builders for check tests: a catalog and explained statements by hand.
    use super::*;
    use crate::catalog::planner::{Catalog, Index, Table};
    use crate::explain::engine::{Explained, Status};
    use crate::explain::options::GenericPlans;
    use crate::explain::plan_tree::{Mode, Plan, PlanKind};
    use crate::explain::probes::Probes;
    use crate::params::binding;
    use crate::queries::Statement;
    use serde_json::Value;

    pub fn catalog(tables: &[(&str, u64)], indexes: Vec<Index>) -> Catalog {
        Catalog {
            server_version_num: 150000,
            search_path: vec!["public".into()],
            tables: tables
                .iter()
                .map(|(n, rows)| {
                    (
                        n.to_string(),
                        Table {
                            name: n.to_string(),
                            rows: *rows,
                            rls: true,
                            columns: vec!["id".into(), "account_id".into(), "status".into()],
                            root: None,
                        },
                    )
                })
                .collect(),
            indexes,
            policies: vec![],
            policy_calls: vec![],
        }
    }

    pub fn index(name: &str, table: &str, cols: &[&str]) -> Index {
        Index {
            name: name.into(),
            table: table.into(),
            columns: cols.iter().map(|c| Some(c.to_string())).collect(),
            definition: format!("CREATE INDEX {name} ON {table}"),
            ..Default::default()
        }
    }

    pub fn explained(query: &str, plans: Vec<(Mode, PlanKind, Value)>) -> Explained {
        Explained {
            stmt: Statement {
                id: "s1".into(),
                query: query.into(),
                ..Default::default()
            },
            text: query.into(),
            repairs: vec![],
            analysis: binding::analyze(query),
            judged: vec![Mode::Tenant, Mode::Admin],
            status: Status::Explained,
            param_types: vec![],
            plans: plans
                .into_iter()
                .map(|(mode, kind, json)| Plan {
                    mode,
                    kind,
                    tenant: Some("heaviest".into()),
                    tenant_id: None,
                    params: vec![],
                    json,
                    flat: Default::default(),
                })
                .collect(),
            stale: None,
            guesses: Vec::new(),
            notes: vec![],
        }
    }

    pub static NO_PROBES: Probes = Probes::new();

    pub static NO_KNOBS: CheckKnobs = CheckKnobs::new();

    /// Probes in which `check`'s own probe answered `rows`.
    pub fn probed(check: &dyn Check, rows: Vec<Value>) -> Probes {
        Probes {
            declared: [(check.id(), rows)].into(),
            ..Probes::new()
        }
    }

    /// What `check` finds in `ctx`.
    pub fn findings_of(check: &dyn Check, ctx: &Ctx) -> Vec<Finding> {
        let mut out = Vec::new();
        check.run(ctx, &mut out);
        out
    }

    pub fn ctx<'a>(catalog: &'a Catalog, results: &'a [Explained]) -> Ctx<'a> {
        Ctx {
            catalog,
            results,
            tenancy: None,
            min_rows: 10_000,
            min_table_rows: 100,
            unjudged: crate::explain::data::unjudged_tables(results, catalog),
            withheld: Default::default(),
            knobs: &NO_KNOBS,
            source: None,
            probes: &NO_PROBES,
            generic: GenericPlans::Judge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check::{is_bookkeeping, weight};
    use super::testing::*;
    use super::*;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use serde_json::json;

    /// A check reads its own knob through the context: `rls-policy`'s
    /// `cost_ratio` (default 10) decides whether a tenant plan 3x the admin
    /// plan's cost is a finding, with no other file naming it.
    #[test]
    fn a_checks_knob_reaches_its_run_through_the_context() {
        let cat = catalog(&[("items", 50_000)], vec![]);
        let seq = |cost: f64| json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "items", "Total Cost": cost}}]);
        let results = [explained(
            "SELECT * FROM items WHERE v = $1",
            vec![
                (Mode::Tenant, PlanKind::Generic, seq(300.0)),
                (Mode::Admin, PlanKind::Generic, seq(100.0)),
            ],
        )];
        let rls = rls_policy::RlsPolicy;
        let costs = |ctx: &Ctx| {
            findings_of(&rls, ctx)
                .into_iter()
                .filter(|f| f.message.contains("costs 3x"))
                .count()
        };
        assert_eq!(costs(&ctx(&cat, &results)), 0);
        let spec = rls.knobs();
        assert_eq!(spec[0].name, "cost_ratio");
        let mut knobs = CheckKnobs::new();
        knobs.set(CheckId::RlsPolicy, spec[0].name, KnobValue::Number(2.5));
        let with = Ctx {
            knobs: &knobs,
            ..ctx(&cat, &results)
        };
        assert_eq!(costs(&with), 1);
    }

    #[test]
    fn issue13_bookkeeping_tables_are_recognised() {
        for t in [
            "django_migrations",
            "public.schema_migrations",
            "flyway_schema_history",
            "__diesel_schema_migrations",
            "goose_db_version",
            "_sqlx_migrations",
            "knex_migrations",
            "alembic_version",
            "planck_migrations",
            "planck.seeded",
        ] {
            assert!(is_bookkeeping(t), "{t}");
        }
        assert!(!is_bookkeeping("migrations_report"));
        assert!(!is_bookkeeping("public.django_session"));
    }

    #[test]
    fn issue13_errors_are_ranked_by_cost_times_calls() {
        let plan = |cost: f64| json!([{"Plan": {"Node Type": "Seq Scan", "Total Cost": cost}}]);
        // a: cost 100 x 1,000 calls; b: cost 5,000 x 1 call; c: cost 1,000 x 10 calls.
        let mut results = Vec::new();
        for (id, cost, calls) in [("a", 100.0, 1000), ("b", 5000.0, 1), ("c", 1000.0, 10)] {
            let mut e = explained(id, vec![(Mode::Admin, PlanKind::Custom, plan(cost))]);
            e.stmt.id = id.into();
            e.stmt.calls = Some(calls);
            results.push(e);
        }
        let f = |id: &str, sev| {
            let mut f = Finding::new(CheckId::SeqScan, sev, id.to_string());
            f.statement = Some(id.to_string());
            f.mode = Some(Mode::Admin);
            f
        };
        let mut all = vec![
            f("b", Severity::Error),
            f("a", Severity::Warning),
            f("c", Severity::Error),
            f("a", Severity::Error),
        ];
        sort_for_report(&mut all, &results);
        let got: Vec<_> = all
            .iter()
            .map(|f| (f.message.as_str(), f.severity))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Severity::Error),
                ("c", Severity::Error),
                ("b", Severity::Error),
                ("a", Severity::Warning)
            ]
        );
        assert_eq!(weight(&all[0], &results), 100_000.0);
    }
}
