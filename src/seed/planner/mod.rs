//! The planner: how many rows each table gets, which parent row every
//! child row belongs to, and the generator of every column, built once from
//! the catalog and the spec into the plan the workers read
//! ([`crate::seed::row::plan::SeedPlan`]).
//!
//! One module per decision, each over one table at a time:
//! - [`sizing`]: the rows each table gets (defaults, `per` counts, the
//!   tenant and its skew down the foreign-key tree), and a count lowered
//!   where a key has fewer values than rows;
//! - [`keys`]: unique keys and exclusions held by construction (a column
//!   that carries the key alone, or its finite columns enumerated jointly
//!   through a permutation of the row index), integer keys that fit their type;
//! - [`checks`]: what the CHECKs ask of each column: facts the generators
//!   honour ([`crate::seed::check_expr`]), CHECKs solved row by row
//!   ([`crate::seed::check_solve`]) or left to the server
//!   ([`crate::seed::server_check`]);
//! - [`fks`]: how each foreign key picks its parent row;
//! - [`partition_keys`]: values inside the partitions' bounds;
//! - [`observed`]: the recording's literals and NULL tests;
//! - [`generators`]: the spec's generators and every other column's default;
//! - [`pass`]: the assembly: tables in load order, each decision in turn,
//!   tables that cannot be planned set aside;
//! - [`context`]: what they all read (the options, the spec resolved
//!   against the catalog, the tables planned before).
//!
//! This module holds the entry points, [`build`] and [`build_skipping`],
//! which plan again without the tables a pass could not plan.

mod checks;
mod context;
mod fks;
mod generators;
mod keys;
mod observed;
mod partition_keys;
mod pass;
mod sizing;

use std::collections::BTreeMap;

use crate::catalog::schema::Schema;
use crate::error::{Error, Result};
use crate::seed::row::plan::{SeedPlan, Unseedable};
use crate::seed::spec::SpecFile;

pub use context::Options;
use context::resolve;
use pass::plan_settled;
pub use sizing::DEFAULT_ROWS;
use sizing::tenant_of;

/// The fixed seed used when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 20_260_101;

/// Plans every table; any table that cannot be seeded is an error listing
/// every such table (see [`build_skipping`]).
pub fn build(cat: &Schema, sf: &SpecFile, opts: &Options) -> Result<SeedPlan> {
    build_skipping(cat, sf, opts, false)
}

/// Plans every table. Planning never stops at the first table it cannot
/// seed: it collects each one's cause (and the tables that reference it
/// through a NOT NULL foreign key, as cascades), plans again without them,
/// and repeats until the plan holds. Then, unless `skip_unseedable` (false
/// with `--all-or-nothing`), one error lists them all; with it the plan seeds the others and
/// [`SeedPlan::skipped`] says what was left out. Errors of the spec as a whole
/// (an unknown table, a bad tenant) still stop at once.
pub fn build_skipping(
    cat: &Schema,
    sf: &SpecFile,
    opts: &Options,
    skip_unseedable: bool,
) -> Result<SeedPlan> {
    let res = resolve(cat, sf)?;
    let tenant = tenant_of(cat, sf, &res)?;
    let mut unseedable: BTreeMap<usize, Unseedable> = BTreeMap::new();
    // The first error of each table, to return as it is when it is the only one.
    let mut errors: BTreeMap<usize, Error> = BTreeMap::new();
    let mut plan = loop {
        let mut pass = res.clone();
        pass.excluded.extend(unseedable.keys().copied());
        match plan_settled(cat, sf, opts, &pass, tenant, &unseedable)? {
            Ok(plan) => break plan,
            Err(found) => {
                let before = unseedable.len();
                for (u, e) in found {
                    if let Some(e) = e {
                        errors.entry(u.cat).or_insert(e);
                    }
                    unseedable.entry(u.cat).or_insert(u);
                }
                if unseedable.len() == before {
                    return Err(Error::Internal {
                        message: "planning found the same unseedable tables twice".into(),
                    });
                }
            }
        }
    };
    if unseedable.is_empty() {
        return Ok(plan);
    }
    let list: Vec<Unseedable> = unseedable.into_values().collect();
    if !skip_unseedable {
        // One table alone keeps its own error (and its file:line:col headline).
        if let ([only], Some(e)) = (list.as_slice(), errors.pop_first())
            && only.depends_on.is_none()
        {
            return Err(e.1);
        }
        return Err(unseedable_error(&list, plan.tables.len()));
    }
    plan.excluded.extend(list.iter().map(|u| u.cat));
    plan.excluded.sort_unstable();
    plan.excluded.dedup();
    plan.skipped = list;
    Ok(plan)
}

/// The one error that lists every table planning cannot seed.
fn unseedable_error(list: &[Unseedable], seedable: usize) -> Error {
    let direct = list.iter().filter(|u| u.depends_on.is_none()).count();
    let cascades = list.len() - direct;
    let mut message = format!("cannot seed {direct} table(s)");
    if cascades > 0 {
        message.push_str(&format!(" and {cascades} that depend on them"));
    }
    message.push_str("; nothing was written:");
    for u in list {
        match &u.depends_on {
            None => {
                message.push_str(&format!("\n  - {}", u.cause));
                for h in &u.hints {
                    message.push_str(&format!("\n    hint: {h}"));
                }
            }
            Some(p) => message.push_str(&format!(
                "\n  - {}: depends on {p} (a NOT NULL foreign key)",
                u.table
            )),
        }
    }
    Error::usage_hint(
        message,
        format!(
            "fix or exclude the tables above, or run without --all-or-nothing to seed the other {seedable} table(s) without them"
        ),
    )
}

#[cfg(test)]
mod plan_tests {
    use std::collections::HashSet;
    use std::path::Path;

    use super::keys::exclusions_supported;
    use super::*;
    use crate::catalog::schema::{CheckConstraint, Column, ForeignKey, Table, TypeKind, Unique};
    use crate::seed::reference::ReferenceKeys;
    use crate::seed::row::generate::Val;
    use crate::seed::row::plan::RowCtx;

    fn col(attnum: i16, name: &str, kind: TypeKind, seq: bool) -> Column {
        Column {
            attnum,
            name: name.into(),
            type_name: format!("{kind:?}"),
            kind,
            not_null: true,
            default: None,
            identity: seq,
            generated: false,
            max_len: None,
            numeric: None,
            domain_checks: Vec::new(),
            sequence: seq.then(|| format!("{name}_seq")),
        }
    }

    fn catalog() -> Schema {
        let parent = Table {
            oid: 1,
            schema: "public".into(),
            name: "parents".into(),
            partitioned: false,
            columns: vec![col(1, "id", TypeKind::Int8, true)],
            uniques: vec![Unique {
                name: "parents_pkey".into(),
                cols: vec![0],
                primary: true,
                escape: Vec::new(),
                exprs: Vec::new(),
            }],
            fks: Vec::new(),
            checks: Vec::new(),
            partitioning: None,
            has_rows: false,
            migration_bookkeeping: false,
            sub_partitions: Vec::new(),
            exclusions: Vec::new(),
        };
        let child = Table {
            oid: 2,
            schema: "public".into(),
            name: "children".into(),
            partitioned: false,
            columns: vec![
                col(1, "id", TypeKind::Int8, true),
                col(2, "parent_id", TypeKind::Int8, false),
                col(3, "number", TypeKind::Int4, false),
                col(4, "label", TypeKind::Text, false),
            ],
            uniques: vec![
                Unique {
                    name: "children_pkey".into(),
                    cols: vec![0],
                    primary: true,
                    escape: Vec::new(),
                    exprs: Vec::new(),
                },
                Unique {
                    name: "children_number".into(),
                    cols: vec![1, 2],
                    primary: false,
                    escape: Vec::new(),
                    exprs: Vec::new(),
                },
                Unique {
                    name: "children_label".into(),
                    cols: vec![3],
                    primary: false,
                    escape: Vec::new(),
                    exprs: Vec::new(),
                },
            ],
            fks: vec![ForeignKey {
                name: "children_parent_id_fkey".into(),
                cols: vec![1],
                parent: Some(0),
                parent_name: "parents".into(),
                parent_cols: vec![0],
            }],
            checks: vec![CheckConstraint {
                name: "children_number_check".into(),
                def: "CHECK ((number > 0))".into(),
                cols: vec![2],
            }],
            partitioning: None,
            has_rows: false,
            migration_bookkeeping: false,
            sub_partitions: Vec::new(),
            exclusions: Vec::new(),
        };
        Schema {
            tables: vec![parent, child],
        }
    }

    fn opts() -> Options {
        Options {
            seed: 1,
            scale: 1.0,
            default_rows: None,
            reference_keys: ReferenceKeys::new(),
            refused: Default::default(),
            observed: Default::default(),
        }
    }

    #[test]
    fn children_follow_per_parent_counts_with_ordinals_and_unique_labels() {
        let spec =
            "[tables.parents]\nrows = 50\n[tables.children]\nper = \"parents\"\ncount = [0, 7]\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let plan = build(&catalog(), &sf, &opts()).unwrap();
        let (p, c) = (0, 1);
        assert_eq!(plan.tables[p].rows, 50);
        let mut pairs = HashSet::new();
        let mut labels = HashSet::new();
        for row in 0..plan.tables[c].rows {
            let ctx = plan.ctx(c, row);
            let parent = plan.value(c, 1, &ctx).as_i64().unwrap();
            let number = plan.value(c, 2, &ctx).as_i64().unwrap();
            assert!((1..=50).contains(&parent), "row {row}: parent {parent}");
            assert!(number >= 1, "CHECK (number > 0) at row {row}");
            assert!(
                pairs.insert((parent, number)),
                "duplicate (parent, number) at row {row}"
            );
            let Val::Text(l) = plan.value(c, 3, &ctx) else {
                panic!("text")
            };
            assert!(labels.insert(l), "duplicate label at row {row}");
        }
        // Ordinals start at 1 within each parent and have no gaps.
        for parent in 1..=50 {
            let n = pairs.iter().filter(|(p, _)| *p == parent).count() as i64;
            for k in 1..=n {
                assert!(
                    pairs.contains(&(parent, k)),
                    "parent {parent} misses number {k}"
                );
            }
        }
    }

    /// `SeedPlan::ctxs`, which moves its block and parent forward row by row,
    /// places every row as `SeedPlan::ctx` does, from any first row: blocks of
    /// a tenant, parents without children (equal cumulative counts), a
    /// chunk that starts inside either.
    #[test]
    fn row_contexts_in_sequence_are_each_rows_own() {
        let same = |a: &RowCtx, b: &RowCtx| {
            (a.row, a.block, a.parent_row, a.ordinal) == (b.row, b.block, b.parent_row, b.ordinal)
        };
        for spec in [
            "[tenant]\ntable = \"parents\"\n[tables.parents]\nrows = 40\n[tables.children]\nper = \"parents\"\ncount = [0, 5]\n",
            "[tenant]\ntable = \"parents\"\ndistribution = { zipf = 1.0 }\n[tables.parents]\nrows = 40\n[tables.children]\nrows = 900\n",
            "[tables.parents]\nrows = 7\n[tables.children]\nrows = 100\n",
        ] {
            let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
            let plan = build(&catalog(), &sf, &opts()).unwrap();
            for (t, tp) in plan.tables.iter().enumerate() {
                assert!(tp.rows > 0, "{spec}");
                for start in [0, 1, tp.rows / 3, tp.rows / 2 + 1, tp.rows - 1] {
                    let seq: Vec<RowCtx> = plan.ctxs(t, start..tp.rows).collect();
                    assert_eq!(seq.len() as u64, tp.rows - start);
                    for (a, row) in seq.iter().zip(start..) {
                        let b = plan.ctx(t, row);
                        assert!(
                            same(a, &b),
                            "{} from {start}, row {row}: {a:?} vs {b:?}\n{spec}",
                            tp.display
                        );
                    }
                }
                assert_eq!(plan.ctxs(t, 5..5).count(), 0);
            }
            // The tenant specs make blocks (else the first case tests nothing new).
            if spec.contains("tenant") {
                assert!(plan.tables[1].cum.len() > 3, "{spec}");
            }
        }
    }

    #[test]
    fn the_same_row_gives_the_same_values_in_any_order() {
        let spec = "[tables.parents]\nrows = 20\n[tables.children]\nrows = 300\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let plan = build(&catalog(), &sf, &opts()).unwrap();
        let forward: Vec<Vec<Val>> = (0..300)
            .map(|r| (0..4).map(|k| plan.value(1, k, &plan.ctx(1, r))).collect())
            .collect();
        for r in (0..300).rev() {
            let again: Vec<Val> = (0..4).map(|k| plan.value(1, k, &plan.ctx(1, r))).collect();
            assert_eq!(again, forward[r as usize]);
        }
        // Children are spread evenly: 15 per parent.
        let firsts: Vec<i64> = forward.iter().map(|v| v[1].as_i64().unwrap()).collect();
        assert_eq!(firsts.iter().filter(|p| **p == 1).count(), 15);
    }

    #[test]
    fn impossible_uniqueness_names_the_spec_position() {
        let spec = "[tables.parents]\nrows = 5\n[tables.children]\nrows = 10\n[tables.children.columns]\nlabel = { values = [\"a\", \"b\"] }\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let err = build(&catalog(), &sf, &opts()).unwrap_err();
        let msg = crate::error::render(&err);
        assert!(
            msg.contains("s.toml:6:9: impossible uniqueness: children_label (label)"),
            "{msg}"
        );
    }

    #[test]
    fn a_smallint_key_cannot_hold_more_rows_than_it_counts() {
        let mut cat = catalog();
        cat.tables[0].columns[0].kind = TypeKind::Int2;
        cat.tables[0].columns[0].type_name = "smallint".into();
        let sf = SpecFile::parse(Path::new("s.toml"), "[tables.parents]\nrows = 40000\n").unwrap();
        let msg = crate::error::render(&build(&cat, &sf, &opts()).unwrap_err());
        assert!(
            msg.contains("  - parents.id: 40000 rows need values up to 40000, beyond smallint"),
            "{msg}"
        );
        // Its child goes with it, reported as a cascade.
        assert!(
            msg.contains("  - children: depends on parents (a NOT NULL foreign key)"),
            "{msg}"
        );
    }

    fn things() -> Schema {
        Schema {
            tables: vec![Table {
                oid: 1,
                schema: "public".into(),
                name: "things".into(),
                partitioned: false,
                columns: vec![
                    col(1, "id", TypeKind::Int8, true),
                    col(2, "code", TypeKind::Int8, false),
                ],
                uniques: vec![Unique {
                    name: "things_pkey".into(),
                    cols: vec![0],
                    primary: true,
                    escape: Vec::new(),
                    exprs: Vec::new(),
                }],
                fks: Vec::new(),
                checks: Vec::new(),
                partitioning: None,
                sub_partitions: Vec::new(),
                exclusions: Vec::new(),
                has_rows: false,
                migration_bookkeeping: false,
            }],
        }
    }

    /// Issue 9 point 3: `unique = true` on an integer was a permutation of a
    /// million values, so row 1,000,001 repeated row 1.
    #[test]
    fn spec_unique_integers_stay_unique_beyond_a_million_rows() {
        let spec =
            "[tables.things]\nrows = 1200000\n[tables.things.columns]\ncode = { unique = true }\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let plan = build(&things(), &sf, &opts()).unwrap();
        let mut seen = HashSet::new();
        for row in 0..plan.tables[0].rows {
            let v = plan.value(0, 1, &plan.ctx(0, row)).as_i64().unwrap();
            assert!(seen.insert(v), "row {row} repeats {v}");
        }
        assert_eq!(seen.len(), 1_200_000);
    }

    #[test]
    fn spec_unique_integers_beyond_their_range_are_an_error_with_the_arithmetic() {
        let spec = "[tables.things]\nrows = 1200000\n[tables.things.columns]\ncode = { unique = true, range = [1, 1100000] }\n";
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        let msg = crate::error::render(&build(&things(), &sf, &opts()).unwrap_err());
        assert!(
            msg.contains("s.toml:4:33: `unique = true` on things.code needs 1200000 distinct values for 1200000 rows, but [1, 1100000] holds only 1100000"),
            "{msg}"
        );
    }

    fn rejected(cat: &Schema, spec: &str, opts: &Options) -> String {
        let sf = SpecFile::parse(Path::new("s.toml"), spec).unwrap();
        crate::error::render(&build(cat, &sf, opts).unwrap_err())
    }

    /// Issue 9 point 10: `range = [0, 100000]` on a smallint wrapped in the encoder.
    #[test]
    fn a_range_beyond_the_column_type_is_an_error_at_its_position() {
        let mut cat = catalog();
        cat.tables[1].columns[2].kind = TypeKind::Int2;
        cat.tables[1].columns[2].type_name = "smallint".into();
        let msg = rejected(
            &cat,
            "[tables.children.columns]\nnumber = { range = [1, 100000] }\n",
            &opts(),
        );
        assert!(
            msg.contains("s.toml:2:20: `range` of children.number: 100000 is beyond smallint (-32768 to 32767)"),
            "{msg}"
        );
    }

    /// Issue 9 point 10: `after` on a column of another type.
    #[test]
    fn after_a_column_of_another_type_is_an_error_at_its_position() {
        let msg = rejected(
            &catalog(),
            "[tables.children.columns]\nlabel = { after = \"number\" }\n",
            &opts(),
        );
        assert!(
            msg.contains(
                "s.toml:2:19: `after = \"number\"`: children.label is Text and number is Int4"
            ),
            "{msg}"
        );
    }

    /// Issue 9 point 10: a scale that plans more rows than planck can hold
    /// names the flag instead of panicking on allocation.
    #[test]
    fn a_scale_beyond_what_planck_holds_names_the_flag() {
        let o = Options {
            scale: 1e6,
            ..opts()
        };
        let msg = rejected(
            &catalog(),
            "[tables.parents]\nrows = 1000000000\n[tables.children]\nper = \"parents\"\ncount = 1\n",
            &o,
        );
        assert!(
            msg.contains(
                "error: parents would get 1000000000000000 rows with --scale 1000000: too many"
            ),
            "{msg}"
        );
        assert!(msg.contains("hint: lower --scale or --rows"), "{msg}");
        // A per-parent table over a parent too large to count in memory.
        let msg = rejected(
            &catalog(),
            "[tables.parents]\nrows = 300000000\n[tables.children]\nper = \"parents\"\ncount = 1\n",
            &opts(),
        );
        assert!(
            msg.contains(
                "error: parents (parent of the `per` table children) would get 300000000 rows: too many"
            ),
            "{msg}"
        );
    }

    /// Issue 9 point 8: which exclusion forms planning lets through.
    #[test]
    fn exclusion_forms_beyond_equality_and_one_overlap_are_refused() {
        use crate::catalog::schema::Exclusion;
        let mut t = things().tables.remove(0);
        let x = |ops: &[&str]| Exclusion {
            name: "things_excl".into(),
            def: "EXCLUDE ...".into(),
            method: "gist".into(),
            elems: ops.iter().map(|o| (Some(1), o.to_string())).collect(),
        };
        for (ops, ok) in [
            (&["="][..], true),
            (&["=", "&&"][..], true),
            (&["&&", "&&"][..], false),
            (&["=", "<<"][..], false),
            (&["-|-"][..], false),
        ] {
            t.exclusions = vec![x(ops)];
            let r = exclusions_supported(&t, "things");
            assert_eq!(r.is_ok(), ok, "{ops:?}");
            if let Err(e) = r {
                assert!(
                    crate::error::render(&e).contains("exclusion constraint things_excl"),
                    "{ops:?}"
                );
            }
        }
    }
}
