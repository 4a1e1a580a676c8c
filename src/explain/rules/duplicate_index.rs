//! `duplicate-index`: two indexes of one table with the same definition
//! (method, keys, predicate, uniqueness) but their names: every write
//! maintains both, the planner uses one. Read from the catalog alone: no
//! table's size withholds it (issue 47, 3), two equal indexes are one too
//! many at any size.

use std::collections::BTreeMap;

use super::{Check, CheckId, Ctx, Finding, Severity, declare_check, finding};
use crate::explain::engine::used_indexes;

declare_check! {
    /// drop the duplicate (DROP INDEX CONCURRENTLY); every write maintains both
    pub struct DuplicateIndex => "duplicate-index";
}

impl Check for DuplicateIndex {
    fn id(&self) -> CheckId {
        CheckId::DuplicateIndex
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let mut groups: BTreeMap<(String, String), Vec<&crate::catalog::planner::Index>> =
            BTreeMap::new();
        for ix in &ctx.catalog.indexes {
            groups
                .entry((ix.table.clone(), without_name(&ix.definition)))
                .or_default()
                .push(ix);
        }
        let used = used_indexes(ctx.results);
        for ((table, shape), ixs) in groups {
            if ixs.len() < 2 {
                continue;
            }
            let names: Vec<&str> = ixs.iter().map(|i| i.name.as_str()).collect();
            // Keep one that backs a constraint, else one the plans use, else the first.
            let keep = ixs
                .iter()
                .find(|i| i.constraint)
                .or_else(|| ixs.iter().find(|i| used.contains_key(&i.name)))
                .unwrap_or(&ixs[0]);
            let drop: Vec<&str> = names.iter().copied().filter(|n| *n != keep.name).collect();
            out.push(
                finding(
                    self,
                    Severity::Warning,
                    format!(
                        "indexes {} on {table} are the same ({shape}); keep {}{}, drop {}",
                        names.join(", "),
                        keep.name,
                        if used.contains_key(&keep.name) {
                            " (the plans use it)"
                        } else {
                            ""
                        },
                        drop.join(", ")
                    ),
                )
                .relation(&table)
                .index(drop.join(", ")),
            );
        }
    }
}

/// `CREATE INDEX a ON t USING btree (x)` -> `CREATE INDEX ON t USING btree (x)`.
fn without_name(definition: &str) -> String {
    let Some(i) = definition.find(" INDEX ") else {
        return definition.to_string();
    };
    let after = i + " INDEX ".len();
    match definition[after..].find(" ON ") {
        Some(j) => format!(
            "{}{}",
            &definition[..i + " INDEX".len()],
            &definition[after + j..]
        ),
        None => definition.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::rules::testing::{catalog, ctx};

    #[test]
    fn same_definition_but_the_name_is_a_duplicate() {
        assert_eq!(
            without_name("CREATE INDEX \"a b\" ON public.t USING btree (x)"),
            "CREATE INDEX ON public.t USING btree (x)"
        );
        let ix = |name: &str, def: &str| crate::catalog::planner::Index {
            name: name.into(),
            table: "t".into(),
            definition: def.into(),
            ..Default::default()
        };
        let c = catalog(
            &[("t", 10)],
            vec![
                ix("t_x1", "CREATE INDEX t_x1 ON public.t USING btree (x)"),
                ix("t_x2", "CREATE INDEX t_x2 ON public.t USING btree (x)"),
                ix(
                    "t_xu",
                    "CREATE UNIQUE INDEX t_xu ON public.t USING btree (x)",
                ),
            ],
        );
        let mut out = Vec::new();
        DuplicateIndex.run(&ctx(&c, &[]), &mut out);
        assert_eq!(out.len(), 1, "{out:#?}");
        assert_eq!(out[0].index.as_deref(), Some("t_x2"));
        assert!(out[0].message.contains("t_x1, t_x2"), "{}", out[0].message);
    }
}
