//! `stale-statement`: a recorded statement names a table, column or function
//! that no longer exists (a migration dropped or renamed it).

use super::{declare_check, Check, CheckId, Ctx, Finding, Severity, finding};

declare_check! {
    /// the schema changed under this statement: fix the code that sends it, or re-record the
    /// queries file (`planck record`)
    pub struct StaleStatement => "stale-statement";
}

impl Check for StaleStatement {
    fn id(&self) -> CheckId {
        CheckId::StaleStatement
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for e in ctx.results {
            let Some(pg) = &e.stale else { continue };
            let mode = e
                .judged
                .first()
                .copied()
                .unwrap_or(crate::explain::plan_tree::Mode::Admin);
            let mut f = finding(
                self,
                Severity::Error,
                format!(
                    "the statement no longer plans: {} (SQLSTATE {})",
                    pg.message, pg.code
                ),
            )
            .statement(&e.stmt, mode);
            // A table the statement names that the catalog lacks.
            if let Some(t) = e
                .analysis
                .tables
                .iter()
                .find(|t| ctx.catalog.resolve(t).is_none())
            {
                f = f.relation(t.clone());
            }
            out.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::error::PgError;

    #[test]
    fn names_the_missing_table() {
        let cat = catalog(&[("items", 10)], vec![]);
        let mut e = explained("SELECT * FROM gone JOIN items USING (id)", vec![]);
        e.stale = Some(PgError {
            code: "42P01".into(),
            message: "relation \"gone\" does not exist".into(),
            detail: None,
            hint: None,
            position: None,
        });
        let results = [e];
        let mut out = Vec::new();
        StaleStatement.run(&ctx(&cat, &results), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].relation.as_deref(), Some("gone"));
        assert_eq!(out[0].severity, Severity::Error);
    }
}
