//! `tenant-plan-reuse`: a prepared statement keeps the plan estimated for
//! the tenant that was set when it was made (a policy's tenant expression
//! evaluated at planning time: `current_setting()`, an inlinable SQL or a
//! STABLE function), so the drivers that keep named statements on pooled
//! connections serve later tenants an earlier tenant's plan. Measured by
//! `explain::plan_reuse`; this check reports what it found.

use super::{declare_check, Check, CheckId, Ctx, Finding, Severity, finding};
use crate::explain::plan_tree::Mode;

declare_check! {
    /// the statement has parameters: set plan_cache_mode = force_custom_plan on the login role
    /// the application connects with (ALTER ROLE ... SET; not a role reached by SET ROLE), or
    /// do not keep it prepared; a tenant-leading index helps both plans
    pub struct TenantPlanReuse => "tenant-plan-reuse";
}

/// The help for a statement without parameters: `plan_cache_mode` cannot
/// help it (its generic plan is used from the first execution).
pub const HELP_NO_PARAMS: &str = "pass the tenant as a parameter, or do not keep the statement \
     prepared (unnamed statements or the simple protocol, prepareThreshold=0), or DEALLOCATE it \
     on a tenant switch (a statement without parameters uses its generic plan from the first \
     execution, whatever the cache mode); a tenant-leading index helps both plans";

impl Check for TenantPlanReuse {
    fn id(&self) -> CheckId {
        CheckId::TenantPlanReuse
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for r in &ctx.probes.reuse {
            let Some(e) = ctx.results.iter().find(|e| e.stmt.id == r.statement) else {
                continue;
            };
            let mut f = finding(
                self,
                Severity::Warning,
                format!(
                    "prepared as the median tenant {} and executed six times, the statement keeps \
                     its generic plan for the heaviest tenant {}: {}; planned fresh for {}: {}",
                    r.median, r.heaviest, r.kept, r.heaviest, r.fresh
                ),
            )
            .statement(&e.stmt, Mode::Tenant);
            if r.params == 0 {
                f.help = HELP_NO_PARAMS;
            }
            out.push(f);
        }
    }
}
