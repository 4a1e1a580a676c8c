//! `unused-index`: an index no plan of the corpus uses, in any mode. Indexes
//! that back a primary key, a unique constraint or a foreign key are
//! reported as informational: they serve integrity, not these statements.
//! Only tables some statement touches are judged; partial indexes have their
//! own check (`unused-partial-index`).

use super::{declare_check, Check, CheckId, Ctx, Finding, Severity, finding, modes_phrase};
use crate::explain::engine::used_indexes;

declare_check! {
    /// no recorded statement reads this index; drop it (it slows every write) unless something
    /// outside the recorded statements needs it
    pub struct UnusedIndex => "unused-index";
}

impl Check for UnusedIndex {
    fn id(&self) -> CheckId {
        CheckId::UnusedIndex
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let used = used_indexes(ctx.results);
        let touched = ctx.touched();
        for ix in &ctx.catalog.indexes {
            if ix.predicate.is_some() || !touched.contains(&ix.table) || used.contains_key(&ix.name)
            {
                continue;
            }
            let why = if ix.primary {
                Some("it backs the primary key")
            } else if ix.constraint || ix.unique {
                Some("it enforces uniqueness")
            } else if ix.backs_fk {
                Some("it serves a foreign key")
            } else {
                None
            };
            let (severity, message) = match why {
                Some(w) => (
                    Severity::Info,
                    format!("{} on {} is used by no plan, but {w}", ix.name, ix.table),
                ),
                None => (
                    Severity::Warning,
                    format!(
                        "{} on {} is used by no plan, {}",
                        ix.name,
                        ix.table,
                        modes_phrase(ctx)
                    ),
                ),
            };
            out.push(
                finding(self, severity, message)
                    .relation(&ix.table)
                    .index(&ix.name),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use serde_json::json;

    #[test]
    fn unused_plain_index_warns_constraint_index_informs() {
        let mut pk = index("items_pkey", "items", &["id"]);
        pk.primary = true;
        let mut partial = index("items_open", "items", &["status"]);
        partial.predicate = Some("(status = 'open'::text)".into());
        let cat = catalog(
            &[("items", 50_000), ("other", 5)],
            vec![
                pk,
                index("items_title", "items", &["title"]),
                index("items_used", "items", &["account_id"]),
                index("other_x", "other", &["x"]),
                partial,
            ],
        );
        let plan = json!([{"Plan": {"Node Type": "Index Scan", "Relation Name": "items", "Index Name": "items_used"}}]);
        let results = [explained(
            "SELECT * FROM items",
            vec![(Mode::Tenant, PlanKind::Generic, plan)],
        )];
        let mut out = Vec::new();
        UnusedIndex.run(&ctx(&cat, &results), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|f| (f.index.as_deref().unwrap(), f.severity))
            .collect();
        assert_eq!(
            got,
            vec![
                ("items_pkey", Severity::Info),
                ("items_title", Severity::Warning)
            ]
        );
        assert!(out.iter().all(|f| f.mode.is_none()));
    }
}
