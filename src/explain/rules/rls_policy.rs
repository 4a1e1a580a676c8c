//! `rls-policy`: row-level security that makes plans worse. Policies that
//! call VOLATILE functions (evaluated per row, never an index condition) or
//! compare through non-LEAKPROOF operators; policy columns no index leads
//! with; and statements whose tenant plan is much costlier than the admin
//! plan, or reads no index where the admin plan does.

use std::collections::BTreeSet;

use super::{
    Check, CheckId, Ctx, Finding, Knob, KnobSpec, Severity, WithHelp, declare_check, describe,
    finding, own_help, plain_name,
};
use crate::explain::plan_tree::{Mode, PlanKind};

declare_check! {
    /// policies should compare an indexed tenant column with a STABLE expression through
    /// LEAKPROOF operators: `<tenant column> = current_setting('<setting>')::<type>`
    pub struct RlsPolicy => "rls-policy";
}

/// `[explain.checks.rls-policy] cost_ratio` (before, `[explain] rls_cost_ratio`).
const COST_RATIO: Knob<f64> = Knob::new(
    "cost_ratio",
    10.0,
    "A tenant plan this many times costlier than the admin plan is an RLS trap.",
);

impl Check for RlsPolicy {
    fn id(&self) -> CheckId {
        CheckId::RlsPolicy
    }

    fn knobs(&self) -> Vec<KnobSpec> {
        vec![COST_RATIO.spec()]
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let touched = ctx.touched();
        // A VOLATILE call or a non-LEAKPROOF operator in a policy is read
        // from the catalog, not from a plan: the data plays no part in the
        // verdict, so no table size withholds it (issue 47, 3).
        for c in &ctx.catalog.policy_calls {
            // The catalog holds every schema; judge the policies of the
            // application's own (on the search path) and of tables it touched,
            // not those of a platform's schemas (Supabase's `storage`, ...).
            if !(ctx.catalog.on_search_path(&c.table) || touched.contains(&c.table)) {
                continue;
            }
            if c.volatile {
                out.push(
                    finding(self,
                        Severity::Error,
                        format!(
                            "policy {} on {} calls VOLATILE {}: it runs for every row and can never be an index condition",
                            c.policy, c.table, c.what
                        ),
                    )
                    .relation(&c.table)
                    .mode(Mode::Tenant)
                    .with_help(comparison_help(ctx, &c.table)),
                );
            } else if !c.leakproof && c.what.starts_with("operator") {
                let mut f = finding(
                    self,
                    Severity::Warning,
                    format!(
                        "policy {} on {} compares through non-LEAKPROOF {}",
                        c.policy, c.table, c.what
                    ),
                )
                .relation(&c.table);
                f.mode = Some(Mode::Tenant);
                f.help = comparison_help(ctx, &c.table);
                out.push(f);
            }
        }
        if let Some(t) = ctx.tenancy {
            let planned = ctx.planned_tables();
            for (table, column) in &t.columns {
                if !planned.contains(table) {
                    continue;
                }
                let led = ctx.catalog.indexes.iter().any(|i| {
                    // A partial index counts: statements matching its predicate use it.
                    i.table == *table && i.columns.first() == Some(&Some(column.clone()))
                });
                // Issue 47, 3: a missing index matters where the policy's
                // filter reads the table whole, which a table below min_rows
                // (or read by statements not judged) does not show.
                if !led
                    && let Some(why) = ctx
                        .table_not_judged(table)
                        .or_else(|| ctx.table_too_small_to_read_whole(table))
                {
                    ctx.withhold(self.id(), table, None, why);
                    continue;
                }
                if !led {
                    let mut f = finding(
                        self,
                        Severity::Warning,
                        format!(
                            "no index on {table} leads with the policy column {column} ({} rows)",
                            crate::output::count(ctx.catalog.rows(table))
                        ),
                    )
                    .relation(table.clone());
                    f.mode = Some(Mode::Tenant);
                    f.help = own_help(format!(
                        "index the policy column: CREATE INDEX CONCURRENTLY ON {} ({}), so the \
                         policy's {} becomes an index condition",
                        plain_name(table),
                        plain_name(column),
                        comparison(ctx, table).unwrap_or_else(|| column.clone())
                    ));
                    out.push(f);
                }
            }
        }
        for e in ctx.explained() {
            if !e.judged.contains(&Mode::Tenant) {
                continue;
            }
            let mut seen = BTreeSet::new();
            for tp in e
                .plans_in(Mode::Tenant)
                .filter(|p| p.kind != PlanKind::Literal)
            {
                let Some(ap) = e
                    .plans_in(Mode::Admin)
                    .find(|a| a.kind == tp.kind && a.tenant == tp.tenant)
                else {
                    continue;
                };
                let big = tp
                    .nodes()
                    .iter()
                    .filter_map(|n| n.relation.clone())
                    .any(|r| ctx.catalog.rows(&r) >= ctx.min_rows);
                if ap.uses_any_index() && !tp.uses_any_index() && big {
                    if seen.insert("index") {
                        out.push(
                            finding(
                                self,
                                Severity::Error,
                                format!(
                                    "the tenant {} reads no index where the admin plan uses {}",
                                    describe(tp),
                                    ap.indexes().join(", ")
                                ),
                            )
                            .statement(&e.stmt, Mode::Tenant)
                            .with_help(statement_help(ctx, tp)),
                        );
                    }
                } else {
                    let (t, a) = (tp.total_cost(), ap.total_cost());
                    if a > 0.0 && t / a >= ctx.knob(self.id(), &COST_RATIO) && seen.insert("cost") {
                        out.push(
                            finding(
                                self,
                                Severity::Warning,
                                format!(
                                    "the tenant {} costs {:.0}x the admin plan ({t:.0} vs {a:.0})",
                                    describe(tp),
                                    t / a
                                ),
                            )
                            .statement(&e.stmt, Mode::Tenant)
                            .with_help(statement_help(ctx, tp)),
                        );
                    }
                }
            }
        }
    }
}

/// A policy's tenant comparison on `table`, written with its own names:
/// the column and setting the policies compare (the run's tenancy, else the
/// table's own policies), the type its policy casts the setting to.
fn comparison(ctx: &Ctx, table: &str) -> Option<String> {
    let quals = || {
        ctx.catalog
            .policies
            .iter()
            .filter(move |p| p.table == table)
            .flat_map(|p| p.qual.iter().chain(p.with_check.iter()))
    };
    let (column, setting) = match ctx.tenancy {
        Some(t) if t.columns.contains_key(table) => (t.columns[table].clone(), t.setting.clone()),
        _ => quals().find_map(|q| {
            crate::catalog::expr::setting_comparisons(q)
                .into_iter()
                .next()
        })?,
    };
    let ty = quals()
        .find_map(|q| setting_cast(q, &setting))
        .unwrap_or_else(|| "<type>".to_string());
    Some(format!(
        "{} = current_setting('{}')::{ty}",
        plain_name(&column),
        setting.replace('\'', "''")
    ))
}

/// The type `current_setting('setting')` is cast to in a policy as the
/// server prints it: `(current_setting('app.org_id'::text))::bigint` -> `bigint`.
fn setting_cast(qual: &str, setting: &str) -> Option<String> {
    let call = format!("current_setting('{}'", setting.replace('\'', "''"));
    let rest = &qual[qual.find(&call)? + call.len()..];
    let rest = rest.trim_start_matches("::text");
    let rest = rest.trim_start_matches([')', ' ', ',']);
    let rest = rest.strip_prefix("::")?;
    let ty: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ' ' | '.' | '"'))
        .collect();
    let ty = ty.trim();
    (!ty.is_empty()).then(|| ty.to_string())
}

/// The help of a finding on `table`'s policy: the rule's advice with the
/// policy's own comparison, or the rule's generic help.
fn comparison_help(ctx: &Ctx, table: &str) -> &'static str {
    match comparison(ctx, table) {
        Some(c) => own_help(format!(
            "policies should compare an indexed tenant column with a STABLE expression through \
             LEAKPROOF operators, as in: {c}"
        )),
        None => CheckId::RlsPolicy.help(),
    }
}

/// The help of a finding on a statement's tenant plan: the comparison of
/// the first RLS table the plan reads, and an index leading with its column.
fn statement_help(ctx: &Ctx, plan: &crate::explain::plan_tree::Plan) -> &'static str {
    let tables: BTreeSet<String> = plan
        .nodes()
        .iter()
        .filter_map(|n| n.relation.clone())
        .collect();
    let found = tables
        .iter()
        .find_map(|t| comparison(ctx, t).map(|c| (t, c)));
    match found {
        Some((t, c)) => own_help(format!(
            "the policies on {t} should compare an indexed tenant column with a STABLE expression \
             through LEAKPROOF operators ({c}), and an index on {t} should lead with that column"
        )),
        None => CheckId::RlsPolicy.help(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::catalog::planner::PolicyCall;
    use serde_json::json;

    #[test]
    fn volatile_policy_function_is_an_error() {
        let mut cat = catalog(&[("items", 50_000)], vec![]);
        cat.policy_calls = vec![
            PolicyCall {
                table: "items".into(),
                policy: "p".into(),
                what: "tenant_of()".into(),
                volatile: true,
                leakproof: false,
            },
            PolicyCall {
                table: "items".into(),
                policy: "p".into(),
                what: "current_setting()".into(),
                volatile: false,
                leakproof: false,
            },
        ];
        let mut out = Vec::new();
        RlsPolicy.run(&ctx(&cat, &[]), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].severity, Severity::Error);
        assert_eq!(out[0].mode, Some(Mode::Tenant));
        assert!(out[0].message.contains("tenant_of()"));
    }

    /// With every schema in the catalog (issue 8), a platform's policies
    /// (`storage.objects` on Supabase) are not the application's to fix.
    #[test]
    fn policies_off_the_search_path_count_only_when_a_statement_touches_them() {
        let mut cat = catalog(&[("items", 50_000)], vec![]);
        let call = |table: &str| PolicyCall {
            table: table.into(),
            policy: "p".into(),
            what: "random()".into(),
            volatile: true,
            leakproof: false,
        };
        cat.policy_calls = vec![call("storage.objects"), call("items")];
        let mut out = Vec::new();
        RlsPolicy.run(&ctx(&cat, &[]), &mut out);
        let tables: Vec<_> = out.iter().map(|f| f.relation.as_deref().unwrap()).collect();
        assert_eq!(tables, vec!["items"]);
        let touching = [explained("SELECT * FROM storage.objects", vec![])];
        cat.tables.insert(
            "storage.objects".into(),
            crate::catalog::planner::Table {
                name: "storage.objects".into(),
                ..Default::default()
            },
        );
        let mut out = Vec::new();
        RlsPolicy.run(&ctx(&cat, &touching), &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
    }

    #[test]
    fn tenant_plan_without_index_where_admin_has_one() {
        let cat = catalog(
            &[("items", 50_000)],
            vec![index("items_pkey", "items", &["id"])],
        );
        let seq = json!([{"Plan": {"Node Type": "Seq Scan", "Relation Name": "items", "Total Cost": 900.0}}]);
        let idx = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items", "Index Name": "items_pkey", "Total Cost": 8.0}}]);
        let mut e = explained(
            "SELECT * FROM items WHERE id = $1",
            vec![
                (Mode::Tenant, PlanKind::Generic, seq),
                (Mode::Admin, PlanKind::Generic, idx),
            ],
        );
        e.judged = vec![Mode::Tenant];
        let results = [e];
        let mut out = Vec::new();
        RlsPolicy.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].message.contains("items_pkey"));
        assert_eq!(out[0].statement.as_deref(), Some("s1"));
    }
}
