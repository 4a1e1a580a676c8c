//! Whether the data can show a production plan (issue 35). A plan made on a
//! table that holds nothing, or a handful of rows, is the planner's answer
//! for that table, not for production's: every scan is cheap, no index is
//! worth reading, and a verdict drawn from it passes or fails a gate at
//! random. So a statement whose plans read such a table is not judged: its
//! status says which table and how many rows, it yields no finding, and the
//! indexes of the tables it reads are not called unused on its account.
//!
//! A table is too small when it holds no row, or fewer than
//! `min_table_rows` and planck's seed did not write it (a seeded table holds
//! what the spec or the seed chose for it: a small reference table is small
//! by design). Row counts are the catalog's (`reltuples` after ANALYZE, which
//! the seed runs, else `count(*)`); a partition counts as its partitioned
//! table, which is what the statement names.
//!
//! The checks about indexes and tables follow the same rule (issue 47, 3):
//! no index of a table below `min_table_rows` is judged, seeded or not (no
//! plan reads an index of a table of a few rows, whatever the workload), nor
//! of a table a statement not judged reads. What a check withheld this way
//! is listed ([`NotJudgedObjects`]), never silently dropped.

use std::collections::{BTreeSet, HashSet};

use super::engine::{Explained, Status};
use crate::catalog::planner::Catalog;
use crate::findings::CheckId;

/// The tables (display names) the plans of `e` touch: every scan node's
/// relation and a write's target (an INSERT into an empty table checks its
/// keys against empty tables too), a partition as its partitioned root.
pub fn tables_touched(e: &Explained, catalog: &Catalog) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in &e.plans {
        for n in p.nodes() {
            if let Some(r) = &n.relation {
                let root = catalog.tables.get(r).and_then(|t| t.root.clone());
                out.insert(root.unwrap_or_else(|| r.clone()));
            }
        }
    }
    out
}

/// Which tables count as too small to show a plan.
pub struct Threshold<'a> {
    /// Fewer rows than this in a table planck did not seed.
    pub min_table_rows: u64,
    /// The tables planck's seed wrote (display names).
    pub seeded: &'a HashSet<String>,
}

impl Threshold<'_> {
    /// `items holds 0 rows`, or None when `table` is big enough (or not a
    /// table the catalog knows: a system catalog, a function's result).
    fn too_small(&self, catalog: &Catalog, table: &str) -> Option<(u64, String)> {
        let rows = catalog.tables.get(table)?.rows;
        let small = rows == 0 || (rows < self.min_table_rows && !self.seeded.contains(table));
        small.then(|| {
            let mut why = format!(
                "{table} holds {}",
                crate::output::counted(rows, "row", "rows")
            );
            if rows > 0 {
                why.push_str(&format!(" (min_table_rows is {})", self.min_table_rows));
            }
            (rows, why)
        })
    }

    /// Why `e` cannot be judged on this data (its smallest tables first),
    /// or None.
    pub fn reason(&self, e: &Explained, catalog: &Catalog) -> Option<String> {
        let mut small: Vec<(u64, String)> = tables_touched(e, catalog)
            .iter()
            .filter_map(|t| self.too_small(catalog, t))
            .collect();
        if small.is_empty() {
            return None;
        }
        small.sort();
        let named: Vec<&str> = small.iter().take(3).map(|(_, w)| w.as_str()).collect();
        let more = match small.len().saturating_sub(3) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        Some(format!("not judged: {}{more}", named.join(", ")))
    }
}

/// Marks every explained statement that reads a too-small table as not
/// judged; returns how many were.
pub fn mark(results: &mut [Explained], catalog: &Catalog, threshold: &Threshold) -> usize {
    let mut marked = 0;
    for e in results.iter_mut() {
        if e.status != Status::Explained {
            continue;
        }
        if let Some(why) = threshold.reason(e, catalog) {
            e.status = Status::NotJudged(why);
            marked += 1;
        }
    }
    marked
}

/// The tables that statements not judged read: their indexes' use is
/// unknown, so no index on them is called unused.
pub fn unjudged_tables(results: &[Explained], catalog: &Catalog) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in results {
        if matches!(e.status, Status::NotJudged(_)) {
            out.extend(tables_touched(e, catalog));
            out.extend(
                e.analysis
                    .tables
                    .iter()
                    .filter_map(|t| catalog.resolve(t))
                    .map(str::to_string),
            );
        }
    }
    out
}

/// The statements explain judged whose plans read only tables below
/// `min_rows` (issue 48): the scan checks (`seq-scan`, the `rls-policy` index
/// test) look at no table that small, so these statements pass whatever
/// their plans, and a report that stayed silent about them would read as a
/// pass. Unlike [`mark`], they stay judged (their other findings stand): a
/// small table may be small in production too, so this is said, not
/// refused, and `planck check`'s `not-judged` gate makes it fail.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BelowMinRows {
    pub min_rows: u64,
    /// Their ids, in report order.
    pub statements: Vec<String>,
    /// The tables they read, with their rows, largest first.
    pub tables: Vec<(String, u64)>,
}

impl BelowMinRows {
    /// `3 statements read only tables below min_rows (10,000), where no
    /// scan is judged: cards 4,000 rows, people 2,000 rows`, or None.
    pub fn line(&self) -> Option<String> {
        if self.statements.is_empty() {
            return None;
        }
        let tables: Vec<String> = self
            .tables
            .iter()
            .map(|(t, n)| format!("{t} {}", crate::output::counted(*n, "row", "rows")))
            .collect();
        Some(format!(
            "{} only tables below min_rows ({}), where no scan is judged: {}",
            crate::output::counted(
                self.statements.len() as u64,
                "statement reads",
                "statements read"
            ),
            crate::output::count(self.min_rows),
            tables.join(", ")
        ))
    }
}

/// The judged statements of `results` whose plans read tables, all of them
/// below `min_rows` (see [`BelowMinRows`]). A table the catalog does not know
/// (a system catalog, a function's result) does not count either way.
pub fn below_min_rows(results: &[Explained], catalog: &Catalog, min_rows: u64) -> BelowMinRows {
    let mut out = BelowMinRows {
        min_rows,
        ..BelowMinRows::default()
    };
    let mut tables: BTreeSet<String> = BTreeSet::new();
    for e in results.iter().filter(|e| e.status == Status::Explained) {
        let read: Vec<String> = tables_touched(e, catalog)
            .into_iter()
            .filter(|t| catalog.tables.contains_key(t))
            .collect();
        if !read.is_empty() && read.iter().all(|t| catalog.rows(t) < min_rows) {
            out.statements.push(e.stmt.id.clone());
            tables.extend(read);
        }
    }
    out.tables = tables
        .into_iter()
        .map(|t| {
            let n = catalog.rows(&t);
            (t, n)
        })
        .collect();
    out.tables
        .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Why the data cannot show a verdict on a table's indexes or the table
/// itself (issue 47, 3): the object checks (`unused-index`,
/// `unused-partial-index`, `missing-fk-index`, the policy column's index of
/// `rls-policy`, ...) need the table to hold enough rows for a plan to show
/// what an index is worth; on a table of a few rows no plan reads any index,
/// whatever the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// Fewer rows than `min_table_rows`, seeded or not: unlike a statement
    /// (see [`Threshold`]), an index's use cannot be shown on a table of a
    /// few rows, whatever made it small.
    BelowMinTableRows,
    /// Fewer rows than `min_rows`: a check whose verdict is about reading
    /// the table whole (a foreign key's delete, a policy column's index)
    /// says nothing about a table the scan checks would not judge either.
    BelowMinRows,
    /// Read by statements not judged: how they would use the table's
    /// indexes is unknown.
    ReadByUnjudged,
}

/// One verdict a check withheld for want of data: an index (`index` set)
/// or a table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NotJudgedObject {
    pub table: String,
    pub index: Option<String>,
    pub check: CheckId,
    pub rows: u64,
    pub why: Why,
}

impl NotJudgedObject {
    /// `items holds 6 rows, below min_table_rows (100)`.
    pub fn reason(&self, min_table_rows: u64, min_rows: u64) -> String {
        let holds = format!(
            "{} holds {}",
            self.table,
            crate::output::counted(self.rows, "row", "rows")
        );
        match self.why {
            Why::BelowMinTableRows if self.rows == 0 => holds,
            Why::BelowMinTableRows => format!(
                "{holds}, below min_table_rows ({})",
                crate::output::count(min_table_rows)
            ),
            Why::BelowMinRows => {
                format!(
                    "{holds}, below min_rows ({})",
                    crate::output::count(min_rows)
                )
            }
            Why::ReadByUnjudged => format!(
                "{} is read by statements not judged, so how they use it is unknown",
                self.table
            ),
        }
    }
}

/// The indexes and tables no verdict was drawn on because the data cannot
/// show one (issue 47, 3), beside the statements not judged: a report that
/// stayed silent about them would read as "no unused index".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NotJudgedObjects {
    pub min_table_rows: u64,
    pub min_rows: u64,
    /// By table, then index, then check; one entry per (table, index, check).
    pub objects: Vec<NotJudgedObject>,
}

impl NotJudgedObjects {
    /// From what the checks withheld (in any order, repeats allowed).
    pub fn new(min_table_rows: u64, min_rows: u64, mut objects: Vec<NotJudgedObject>) -> Self {
        objects.sort();
        objects.dedup_by(|a, b| (&a.table, &a.index, a.check) == (&b.table, &b.index, b.check));
        NotJudgedObjects {
            min_table_rows,
            min_rows,
            objects,
        }
    }

    /// The distinct indexes not judged.
    pub fn indexes(&self) -> usize {
        let set: BTreeSet<(&str, &str)> = self
            .objects
            .iter()
            .filter_map(|o| Some((o.table.as_str(), o.index.as_deref()?)))
            .collect();
        set.len()
    }

    /// `3 indexes and 1 table not judged, their data too small to show a
    /// verdict (min_table_rows is 100): categories 3 rows: categories_name_idx,
    /// categories_slug_idx; menu_items 6 rows: missing-fk-index`, or None.
    /// At most `tables` tables are named, the rest counted.
    pub fn line(&self, tables: usize) -> Option<String> {
        if self.objects.is_empty() {
            return None;
        }
        let mut by_table: Vec<(&str, Vec<&NotJudgedObject>)> = Vec::new();
        for o in &self.objects {
            match by_table.last_mut() {
                Some((t, v)) if *t == o.table => v.push(o),
                _ => by_table.push((&o.table, vec![o])),
            }
        }
        let table_only: BTreeSet<&str> = self
            .objects
            .iter()
            .filter(|o| o.index.is_none())
            .map(|o| o.table.as_str())
            .collect();
        let mut head = Vec::new();
        if self.indexes() > 0 {
            head.push(crate::output::counted(
                self.indexes() as u64,
                "index",
                "indexes",
            ));
        }
        if !table_only.is_empty() {
            head.push(crate::output::counted(
                table_only.len() as u64,
                "table",
                "tables",
            ));
        }
        let named: Vec<String> = by_table
            .iter()
            .take(tables)
            .map(|(t, v)| {
                let mut what: Vec<String> = Vec::new();
                for o in v {
                    let w = o.index.clone().unwrap_or_else(|| o.check.to_string());
                    if !what.contains(&w) {
                        what.push(w);
                    }
                }
                let rows = crate::output::counted(v[0].rows, "row", "rows");
                // Below min_table_rows goes without saying (the heading's).
                let whys: BTreeSet<Why> = v.iter().map(|o| o.why).collect();
                let why: String = whys
                    .iter()
                    .filter_map(|w| match w {
                        Why::BelowMinTableRows => None,
                        Why::BelowMinRows => Some(", below min_rows"),
                        Why::ReadByUnjudged => Some(", read by statements not judged"),
                    })
                    .collect();
                format!("{t} {rows}{why}: {}", what.join(", "))
            })
            .collect();
        let more = match by_table.len().saturating_sub(tables) {
            0 => String::new(),
            n => format!(
                "; and {} more {}",
                crate::output::count(n as u64),
                if n == 1 { "table" } else { "tables" }
            ),
        };
        Some(format!(
            "{} not judged, the data too small to show a verdict on them (min_table_rows is {}): {}{more}",
            head.join(" and "),
            crate::output::count(self.min_table_rows),
            named.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::planner::Table;
    use crate::explain::plan_tree::{Mode, PlanKind};
    use serde_json::json;

    fn catalog(tables: &[(&str, u64, Option<&str>)]) -> Catalog {
        Catalog {
            tables: tables
                .iter()
                .map(|(n, rows, root)| {
                    (
                        n.to_string(),
                        Table {
                            name: n.to_string(),
                            rows: *rows,
                            root: root.map(str::to_string),
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            ..Default::default()
        }
    }

    fn explained(plan: serde_json::Value) -> Explained {
        crate::explain::rules::testing::explained(
            "SELECT 1",
            vec![(Mode::Admin, PlanKind::Generic, plan)],
        )
    }

    fn scan(rel: &str) -> serde_json::Value {
        json!({"Node Type": "Seq Scan", "Relation Name": rel})
    }

    #[test]
    fn empty_and_small_unseeded_tables_are_named_smallest_first() {
        let cat = catalog(&[
            ("items", 0, None),
            ("accounts", 12, None),
            ("big", 50_000, None),
        ]);
        let e = explained(json!([{"Plan": {"Node Type": "Hash Join", "Plans": [
            scan("accounts"), scan("big"), scan("items")]}}]));
        let none = HashSet::new();
        let t = Threshold {
            min_table_rows: 100,
            seeded: &none,
        };
        assert_eq!(
            t.reason(&e, &cat).as_deref(),
            Some("not judged: items holds 0 rows, accounts holds 12 rows (min_table_rows is 100)")
        );
        // Seeded by planck: small by design, judged; empty still is not.
        let seeded: HashSet<String> = ["accounts".to_string(), "items".to_string()].into();
        let t = Threshold {
            min_table_rows: 100,
            seeded: &seeded,
        };
        assert_eq!(
            t.reason(&e, &cat).as_deref(),
            Some("not judged: items holds 0 rows")
        );
    }

    #[test]
    fn a_partition_counts_as_its_root_and_a_write_target_counts() {
        let cat = catalog(&[
            ("events", 80_000, None),
            ("events_2026_12", 0, Some("events")),
            ("log", 500, None),
        ]);
        let e = explained(
            json!([{"Plan": {"Node Type": "ModifyTable", "Relation Name": "log",
            "Plans": [scan("events_2026_12")]}}]),
        );
        assert_eq!(
            tables_touched(&e, &cat),
            ["events".to_string(), "log".to_string()].into()
        );
        let none = HashSet::new();
        let t = Threshold {
            min_table_rows: 100,
            seeded: &none,
        };
        assert_eq!(t.reason(&e, &cat), None);
        // A table the catalog does not know (pg_class) is not judged on.
        let e = explained(json!([{"Plan": scan("pg_class")}]));
        assert_eq!(t.reason(&e, &cat), None);
    }

    #[test]
    fn mark_leaves_skipped_statements_and_counts_the_marked() {
        let cat = catalog(&[("items", 0, None)]);
        let mut skipped = explained(json!([{"Plan": scan("items")}]));
        skipped.status = Status::Skipped("utility statement (SET)".into());
        let mut results = vec![explained(json!([{"Plan": scan("items")}])), skipped];
        let none = HashSet::new();
        let t = Threshold {
            min_table_rows: 100,
            seeded: &none,
        };
        assert_eq!(mark(&mut results, &cat, &t), 1);
        assert!(matches!(results[0].status, Status::NotJudged(_)));
        assert!(matches!(results[1].status, Status::Skipped(_)));
        assert_eq!(
            unjudged_tables(&results, &cat),
            ["items".to_string()].into()
        );
    }

    /// Issue 48: a statement whose every table is below min_rows is named
    /// with its tables; one that also reads a big table is not.
    #[test]
    fn statements_reading_only_tables_below_min_rows_are_named_with_their_tables() {
        let cat = catalog(&[
            ("cards", 4000, None),
            ("people", 2000, None),
            ("big", 50_000, None),
        ]);
        let mut small = explained(
            json!([{"Plan": {"Node Type": "Hash Join", "Plans": [scan("cards"), scan("people")]}}]),
        );
        small.stmt.id = "s1".into();
        let mut mixed = explained(
            json!([{"Plan": {"Node Type": "Hash Join", "Plans": [scan("cards"), scan("big")]}}]),
        );
        mixed.stmt.id = "s2".into();
        let mut none = explained(json!([{"Plan": {"Node Type": "Result"}}]));
        none.stmt.id = "s3".into();
        let b = below_min_rows(&[small, mixed, none], &cat, 10_000);
        assert_eq!(b.statements, vec!["s1".to_string()]);
        assert_eq!(
            b.tables,
            vec![("cards".to_string(), 4000), ("people".to_string(), 2000)]
        );
        assert_eq!(
            b.line().unwrap(),
            "1 statement reads only tables below min_rows (10,000), where no scan is judged: \
             cards 4,000 rows, people 2,000 rows"
        );
        assert_eq!(below_min_rows(&[], &cat, 10_000).line(), None);
    }

    /// Issue 47, 3: the withheld verdicts are listed by table, once each,
    /// the table's rows and why, and counted as indexes and tables.
    #[test]
    fn not_judged_objects_are_listed_by_table_once_each() {
        let o = |table: &str, index: Option<&str>, check, rows, why| NotJudgedObject {
            table: table.into(),
            index: index.map(str::to_string),
            check,
            rows,
            why,
        };
        let n = NotJudgedObjects::new(
            100,
            10_000,
            vec![
                o(
                    "menu_items",
                    Some("menu_items_b"),
                    CheckId::UnusedIndex,
                    6,
                    Why::BelowMinTableRows,
                ),
                o(
                    "menu_items",
                    None,
                    CheckId::MissingFkIndex,
                    6,
                    Why::BelowMinTableRows,
                ),
                o(
                    "big",
                    Some("big_x"),
                    CheckId::UnusedIndex,
                    50_000,
                    Why::ReadByUnjudged,
                ),
                o(
                    "menu_items",
                    Some("menu_items_a"),
                    CheckId::UnusedIndex,
                    6,
                    Why::BelowMinTableRows,
                ),
                o(
                    "menu_items",
                    Some("menu_items_a"),
                    CheckId::UnusedIndex,
                    6,
                    Why::BelowMinTableRows,
                ),
            ],
        );
        assert_eq!(n.objects.len(), 4);
        assert_eq!(n.indexes(), 3);
        assert_eq!(
            n.line(10).unwrap(),
            "3 indexes and 1 table not judged, the data too small to show a verdict on them \
             (min_table_rows is 100): big 50,000 rows, read by statements not judged: big_x; \
             menu_items 6 rows: missing-fk-index, menu_items_a, menu_items_b"
        );
        let one = n.line(1).unwrap();
        assert!(one.ends_with("big_x; and 1 more table"), "{one}");
        assert_eq!(
            n.objects[1].reason(100, 10_000),
            "menu_items holds 6 rows, below min_table_rows (100)"
        );
        assert_eq!(NotJudgedObjects::default().line(10), None);
    }
}
