//! `tenant-plan-reuse`: a prepared statement keeps the plan estimated for
//! the tenant that was set when it was made (a policy's tenant expression
//! evaluated at planning time: `current_setting()`, an inlinable SQL or a
//! STABLE function), so the drivers that keep named statements on pooled
//! connections serve later tenants an earlier tenant's plan. Measured by
//! [`measure`], in tenant mode; this check reports what it found. A long plan
//! is abbreviated in the message to its top node and its scans (issue 48
//! §5: ten nodes squeezed into an 80-column table), the whole of both
//! plans going to the help.

pub(crate) mod measure;

use super::{Check, CheckId, Ctx, Finding, Severity, declare_check, finding, own_help};
use crate::explain::plan_tree::Mode;
use crate::explain::probes::{Evidence, Measure, Measuring};
use measure::Reuse;

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

    fn measure<'a>(&'a self, on: &'a Measure<'a>) -> Option<Measuring<'a>> {
        let tenancy = on.tenancy?;
        Some(Box::pin(async move {
            Ok(Some(Evidence::new(measure::reuse(on, tenancy).await?)))
        }))
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let found = ctx.evidence::<Vec<Reuse>>(self.id());
        for r in found.into_iter().flatten() {
            // A statement not judged yields no finding (issue 47, 3): the
            // probe measured it, but its plans were made on too few rows.
            let Some(e) = ctx.explained().find(|e| e.stmt.id == r.statement) else {
                continue;
            };
            let (kept, fresh) = (abbreviated(&r.kept), abbreviated(&r.fresh));
            let mut f = finding(
                self,
                Severity::Warning,
                format!(
                    "prepared as the median tenant {} and executed six times, the statement keeps \
                     its generic plan for the heaviest tenant {}: {kept}; planned fresh for {}: \
                     {fresh}",
                    r.median, r.heaviest, r.heaviest
                ),
            )
            .statement(&e.stmt, Mode::Tenant);
            if r.params == 0 {
                f.help = HELP_NO_PARAMS;
            }
            if kept != r.kept || fresh != r.fresh {
                f.help = own_help(format!(
                    "{}. The kept plan: {}. The fresh plan: {}",
                    f.help, r.kept, r.fresh
                ));
            }
            out.push(f);
        }
    }
}

/// The most nodes a plan shows in the message.
const SHOWN: usize = 4;

/// A plan summary (`Hash Join (60,574 rows) > Seq Scan on comments (...) >
/// Hash (...) > Seq Scan on tickets (...)`) cut to its top node and the
/// nodes that read a relation, at most [`SHOWN`], the rest counted.
fn abbreviated(chain: &str) -> String {
    let nodes: Vec<&str> = chain.split(" > ").collect();
    if nodes.len() <= SHOWN {
        return chain.to_string();
    }
    let mut kept: Vec<&str> = nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| *i == 0 || n.contains(" on "))
        .map(|(_, n)| *n)
        .collect();
    kept.truncate(SHOWN);
    let left = nodes.len() - kept.len();
    format!(
        "{} (+{left} more {})",
        kept.join(" > "),
        if left == 1 { "node" } else { "nodes" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_plan_keeps_its_top_node_and_scans_in_the_message() {
        let short = "Nested Loop (24 rows) > Index Scan using t_tenant on tickets (24 rows)";
        assert_eq!(abbreviated(short), short);
        let long = "Sort (9 rows) > Hash Join (9 rows) > Hash Join (9 rows) > Seq Scan on a \
                    (10 rows) > Hash (5 rows) > Seq Scan on b (5 rows) > Hash (3 rows) > Index \
                    Scan using c_pkey on c (3 rows) > Materialize (2 rows) > Seq Scan on d (2 rows)";
        assert_eq!(
            abbreviated(long),
            "Sort (9 rows) > Seq Scan on a (10 rows) > Seq Scan on b (5 rows) > Index Scan \
             using c_pkey on c (3 rows) (+6 more nodes)"
        );
    }
}
