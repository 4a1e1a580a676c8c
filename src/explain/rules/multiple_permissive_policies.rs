//! `multiple-permissive-policies`: one role meets several permissive
//! policies for one command on a table a tenant plan reads; each is
//! evaluated for every row and the results ORed, where one policy with the
//! conditions combined is evaluated once (and can be indexed as one).

use super::{Check, CheckId, Ctx, Finding, Severity, declare_check, finding};
use crate::explain::plan_tree::Mode;
use crate::explain::policy_groups::{self, PermissiveGroup};
use crate::explain::probes::{Measure, Measuring};

declare_check! {
    /// combine the policies into one (their conditions ORed in one USING), or make the extra
    /// ones RESTRICTIVE where they are meant to narrow, not widen
    pub struct MultiplePermissivePolicies => "multiple-permissive-policies";
}

impl Check for MultiplePermissivePolicies {
    fn id(&self) -> CheckId {
        CheckId::MultiplePermissivePolicies
    }

    /// The permissive policies grouped (`explain::policy_groups`), in tenant mode.
    fn measure<'a>(&'a self, on: &'a Measure<'a>) -> Option<Measuring<'a>> {
        on.tenancy?;
        Some(Box::pin(policy_groups::measure(on)))
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        // Drawn from the policies' definitions (pg_policies), a tenant plan
        // only confirming the table is read: the verdict holds at any size,
        // so no table's rows withhold it (issue 47, 3).
        let Some(t) = ctx.tenancy else { return };
        // Judged on the plans: tables a tenant plan reads.
        let read: std::collections::BTreeSet<String> = ctx
            .explained()
            .flat_map(|e| e.plans_in(Mode::Tenant))
            .flat_map(|p| p.nodes().iter().filter_map(|n| n.relation.clone()))
            .collect();
        let groups = ctx.evidence::<Vec<PermissiveGroup>>(self.id());
        for g in groups.into_iter().flatten() {
            if !read.contains(&g.table) || !(g.role == t.role || g.role == "public") {
                continue;
            }
            out.push(
                finding(
                    self,
                    Severity::Warning,
                    format!(
                        "{} permissive policies apply to {} for {} on {} ({}): each is evaluated \
                         for every row and the results ORed",
                        g.policies.len(),
                        g.role,
                        g.command,
                        g.table,
                        g.policies.join(", ")
                    ),
                )
                .relation(&g.table)
                .mode(Mode::Tenant),
            );
        }
    }
}
