//! `unused-index`: an index no plan of the corpus uses, in any mode. Indexes
//! that back a primary key, a unique or exclusion constraint, enforce
//! uniqueness or serve a foreign key are reported as informational, with a
//! help that says to keep them (issue 48 §5: the rule's "drop it" was
//! printed under "it backs the primary key"): they serve integrity, not
//! these statements, and a constraint's index goes only with the
//! constraint. Only tables some statement touches are judged, and only
//! those holding at least `min_table_rows` that no statement not judged
//! reads (issue 47, 3): on the others the index is listed as not judged
//! ([`Ctx::withhold`]). Partial indexes have their own check
//! (`unused-partial-index`).

use super::{
    Check, CheckId, Ctx, Finding, Severity, WithHelp, declare_check, finding, modes_phrase,
    own_help, plain_name,
};
use crate::catalog::planner::Index;
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
        let planned = ctx.planned_tables();
        for ix in &ctx.catalog.indexes {
            if ix.predicate.is_some() || !planned.contains(&ix.table) || used.contains_key(&ix.name)
            {
                continue;
            }
            // Issue 47, 3: no plan reads an index of a table of a few rows,
            // so "used by no plan" there says nothing about the index.
            if let Some(why) = ctx.table_not_judged(&ix.table) {
                ctx.withhold(self.id(), &ix.table, Some(&ix.name), why);
                continue;
            }
            let f = match kept_for(ix) {
                Some((why, help)) => finding(
                    self,
                    Severity::Info,
                    format!("{} on {} is used by no plan, but {why}", ix.name, ix.table),
                )
                .with_help(own_help(help)),
                None => finding(
                    self,
                    Severity::Warning,
                    format!(
                        "{} on {} is used by no plan, {}",
                        ix.name,
                        ix.table,
                        modes_phrase(ctx)
                    ),
                )
                .with_help(own_help(format!(
                    "no recorded statement reads this index; drop it (DROP INDEX CONCURRENTLY \
                     {}: every write maintains it) unless something outside the recorded \
                     statements needs it",
                    plain_name(&ix.name)
                ))),
            };
            out.push(f.relation(&ix.table).index(&ix.name));
        }
    }
}

/// Why an unused index stays, and the help that says so: it backs a
/// constraint (dropped only with it: `DROP INDEX` refuses), enforces
/// uniqueness, or serves a foreign key's deletes. None: nothing but reads
/// needs it.
fn kept_for(ix: &Index) -> Option<(&'static str, String)> {
    let constraint = |kind: &str| {
        format!(
            "keep it: it is the index of the {kind} constraint {} on {}, which goes only with \
             the constraint (ALTER TABLE ... DROP CONSTRAINT); no statement needs to read it",
            ix.name, ix.table
        )
    };
    if ix.primary {
        Some(("it backs the primary key", constraint("primary-key")))
    } else if ix.constraint && ix.unique {
        Some(("it backs a unique constraint", constraint("unique")))
    } else if ix.constraint {
        Some(("it backs an exclusion constraint", constraint("exclusion")))
    } else if ix.unique {
        Some((
            "it enforces uniqueness",
            format!(
                "keep it: {} makes {} unique; drop it only if nothing relies on that guarantee",
                ix.name, ix.table
            ),
        ))
    } else if ix.backs_fk {
        Some((
            "it serves a foreign key",
            format!(
                "keep it: a delete or key update on the table {}'s foreign key references reads \
                 it (see missing-fk-index); the recorded statements made none",
                ix.table
            ),
        ))
    } else {
        None
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
        // Issue 48 §5: the primary key's help keeps it; the plain index's
        // help drops that index by its name.
        assert!(!out[0].help.contains("drop it"), "{}", out[0].help);
        assert!(
            out[0].help.contains("primary-key constraint items_pkey"),
            "{}",
            out[0].help
        );
        assert!(
            out[1].help.contains("DROP INDEX CONCURRENTLY items_title"),
            "{}",
            out[1].help
        );
    }

    /// Issue 47, 3: an index on a table below min_table_rows, or on one a
    /// statement not judged reads, is no finding: it is withheld, with why;
    /// the same index on a table with rows is a warning.
    #[test]
    fn indexes_of_tables_the_data_cannot_judge_are_withheld_not_reported() {
        use crate::explain::data::Why;
        use crate::explain::engine::Status;
        let cat = catalog(
            &[
                ("big", 50_000),
                ("tiny", 6),
                ("joined", 50_000),
                ("empty", 0),
            ],
            vec![
                index("big_x", "big", &["status"]),
                index("tiny_x", "tiny", &["status"]),
                index("joined_x", "joined", &["status"]),
                index("empty_x", "empty", &["status"]),
            ],
        );
        let scan = |t: &str| json!({"Node Type": "Seq Scan", "Relation Name": t});
        let mut judged = explained(
            "SELECT * FROM big, tiny, empty",
            vec![(
                Mode::Admin,
                PlanKind::Generic,
                json!([{"Plan": {"Node Type": "Nested Loop",
                    "Plans": [scan("big"), scan("tiny"), scan("empty")]}}]),
            )],
        );
        judged.stmt.id = "s1".into();
        let mut unjudged = explained(
            "SELECT * FROM joined",
            vec![(
                Mode::Admin,
                PlanKind::Generic,
                json!([{"Plan": scan("joined")}]),
            )],
        );
        unjudged.stmt.id = "s2".into();
        unjudged.status = Status::NotJudged("not judged: other holds 0 rows".into());
        let results = [judged, unjudged];
        let ctx = ctx(&cat, &results);
        let out = findings_of(&UnusedIndex, &ctx);
        let got: Vec<_> = out.iter().map(|f| f.index.as_deref().unwrap()).collect();
        assert_eq!(got, vec!["big_x"]);
        let mut withheld: Vec<_> = ctx
            .withheld
            .borrow()
            .iter()
            .map(|o| (o.index.clone().unwrap(), o.rows, o.why, o.check))
            .collect();
        withheld.sort();
        assert_eq!(
            withheld,
            vec![
                (
                    "empty_x".to_string(),
                    0,
                    Why::BelowMinTableRows,
                    CheckId::UnusedIndex
                ),
                (
                    "joined_x".to_string(),
                    50_000,
                    Why::ReadByUnjudged,
                    CheckId::UnusedIndex
                ),
                (
                    "tiny_x".to_string(),
                    6,
                    Why::BelowMinTableRows,
                    CheckId::UnusedIndex
                ),
            ]
        );
    }
}
