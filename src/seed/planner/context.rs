//! What every decision of the planner reads: the options of the run, the
//! spec resolved against the catalog (each table's and column's section,
//! `per` parents, the tables left out), the tables a pass planned before
//! the one it plans, and the planner's error for one table or column.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::catalog::schema::{Schema, Table};
use crate::error::{Error, Result};
use crate::seed::check_expr::ColFacts;
use crate::seed::reference::ReferenceKeys;
use crate::seed::row::plan::{TablePlan, Unseedable};
use crate::seed::spec::{self, ColumnSpec, SpecFile};

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub seed: u64,
    pub scale: f64,
    pub default_rows: Option<u64>,
    /// The keys reference tables (rows the migrations wrote) hold, by
    /// table oid and column: what foreign keys into them can take.
    pub reference_keys: ReferenceKeys,
    /// Tables kept as reference data whose keys foreign keys cannot pick
    /// among, by catalog index (see [`crate::seed::reference`]): planned as
    /// tables planck cannot seed, so the tables that reference them take
    /// NULL or are left out in turn.
    pub refused: BTreeMap<usize, Unseedable>,
    /// The queries file's `[observed]`: the literals the application
    /// compared columns with, and its NULL tests (see [`observed::observed_gen`]).
    pub observed: crate::queries::Observed,
}

/// A planning error about one table/column, with a hint.
pub(super) fn seed_err(
    table: &str,
    column: Option<&str>,
    message: impl Into<String>,
    hint: impl Into<String>,
) -> Error {
    Error::Seed {
        table: table.to_string(),
        column: column.map(str::to_string),
        message: message.into(),
        hint: Some(hint.into()),
    }
}

#[derive(Clone)]
pub(super) struct Resolved<'a> {
    /// Schema index -> table spec.
    pub(super) tables: HashMap<usize, &'a toml::Spanned<spec::TableSpec>>,
    /// (catalog table, column index) -> column spec.
    pub(super) columns: HashMap<(usize, usize), &'a toml::Spanned<ColumnSpec>>,
    pub(super) per: HashMap<usize, usize>,
    pub(super) excluded: HashSet<usize>,
}

pub(super) fn resolve<'a>(cat: &Schema, sf: &'a SpecFile) -> Result<Resolved<'a>> {
    let names = || cat.tables.iter().map(|t| t.name.as_str());
    let unknown_table = |name: &toml::Spanned<String>, what: &str| {
        let hint = match crate::error::suggest(name.get_ref(), names()) {
            Some(s) => {
                format!("did you mean `{s}`? planck seeds the tables of the migrated database")
            }
            None => "the table must exist in the database (run `planck migrate` first?); \
                     write `schema.table` outside the public schema"
                .to_string(),
        };
        sf.error(
            name.span(),
            format!("unknown table `{}` in {what}", name.get_ref()),
            Some(hint),
        )
    };
    let mut r = Resolved {
        tables: HashMap::new(),
        columns: HashMap::new(),
        per: HashMap::new(),
        excluded: HashSet::new(),
    };
    // planck's own bookkeeping (left by an interrupted run) is never seeded.
    for (i, t) in cat.tables.iter().enumerate() {
        if format!("{}.{}", t.schema, t.name) == crate::bookkeeping::TABLE {
            r.excluded.insert(i);
        }
    }
    for e in &sf.spec.exclude {
        let Some(i) = cat.find(e.get_ref()) else {
            return Err(unknown_table(e, "exclude"));
        };
        r.excluded.insert(i);
    }
    for (name, ts) in &sf.spec.tables {
        let Some(ti) = cat.find(name.get_ref()) else {
            return Err(unknown_table(name, "[tables]"));
        };
        if r.excluded.contains(&ti) {
            return Err(sf.error(
                name.span(),
                format!("table `{}` is both excluded and specified", name.get_ref()),
                Some("remove it from `exclude` or remove its [tables] section".into()),
            ));
        }
        let table = &cat.tables[ti];
        let tsr = ts.get_ref();
        if tsr.rows.is_some() && tsr.per.is_some() {
            return Err(sf.error(
                ts.span(),
                format!("table `{}` has both `rows` and `per`", name.get_ref()),
                Some("give a total (`rows = N`) or a count per parent (`per = \"parent\"`, `count = ...`), not both".into()),
            ));
        }
        if tsr.count.is_some() && tsr.per.is_none() {
            return Err(sf.error(
                ts.span(),
                format!("table `{}` has `count` without `per`", name.get_ref()),
                Some("`count` is the number of rows per row of the `per` table".into()),
            ));
        }
        if let Some(per) = &tsr.per {
            let Some(pi) = cat.find(per.get_ref()) else {
                return Err(unknown_table(per, "`per`"));
            };
            let ok = table.fks.iter().any(|f| {
                f.parent == Some(pi)
                    && pi != ti
                    && f.cols.iter().all(|c| table.columns[*c].not_null)
            });
            if !ok {
                return Err(sf.error(
                    per.span(),
                    format!("`{}` has no NOT NULL foreign key to `{}`", name.get_ref(), per.get_ref()),
                    Some("`per` names a parent table the rows reference through a NOT NULL foreign key".into()),
                ));
            }
            r.per.insert(ti, pi);
        }
        r.tables.insert(ti, ts);
        for (cname, cs) in &tsr.columns {
            let Some(ci) = table.column(cname.get_ref()) else {
                let hint = match crate::error::suggest(
                    cname.get_ref(),
                    table.columns.iter().map(|c| c.name.as_str()),
                ) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!(
                        "columns of {}: {}",
                        table.display(),
                        table
                            .columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                return Err(sf.error(
                    cname.span(),
                    format!(
                        "unknown column `{}` of table `{}`",
                        cname.get_ref(),
                        table.display()
                    ),
                    Some(hint),
                ));
            };
            if table.columns[ci].generated {
                return Err(sf.error(
                    cname.span(),
                    format!(
                        "column `{}.{}` is generated by the server",
                        table.display(),
                        cname.get_ref()
                    ),
                    Some(
                        "remove it from the spec: planck leaves generated columns to PostgreSQL"
                            .into(),
                    ),
                ));
            }
            r.columns.insert((ti, ci), cs);
        }
    }
    Ok(r)
}

/// What a planning pass holds while it plans one table: its inputs, and the
/// tables it planned before (in load order, parents first).
pub(super) struct Pass<'a> {
    pub(super) cat: &'a Schema,
    pub(super) sf: &'a SpecFile,
    pub(super) opts: &'a Options,
    pub(super) res: &'a Resolved<'a>,
    pub(super) tenant: Option<usize>,
    /// Load order: catalog indices, parents first.
    pub(super) order: &'a [usize],
    /// Schema index -> position in `order`.
    pub(super) pos: &'a HashMap<usize, usize>,
    /// Rows of a table nothing sizes, scaled.
    pub(super) base_rows: f64,
    /// The tables planned so far, whether each is in the tenant tree, and
    /// its depth under its parents.
    pub(super) tables: &'a [TablePlan],
    pub(super) in_tree: &'a [bool],
    pub(super) depth: &'a [usize],
    /// By position in `order`: the rows the previous round of this pass
    /// settled for each table (None in the first round), which is what a
    /// table planned before its parent (a back edge of a cycle) reads of
    /// that parent's rows.
    pub(super) later: &'a [Option<u64>],
}

impl Pass<'_> {
    /// The tenant table's rows, once it is planned.
    pub(super) fn tenant_rows(&self) -> Option<u64> {
        self.tenant
            .and_then(|t| self.pos.get(&t))
            .and_then(|p| self.tables.get(*p))
            .map(|t| t.rows)
    }
}

/// Adds `add` to the columns a table's attempts redraw (a CHECK the server
/// decides reads them); those that nothing makes NOT NULL and no fact gives
/// a NULL share may also be redrawn as NULL, the last resort.
pub(super) fn redraw_columns(
    tp: &mut TablePlan,
    table: &Table,
    facts: &[ColFacts],
    add: Vec<usize>,
) {
    if add.is_empty() {
        return;
    }
    let nullable: Vec<usize> = add
        .iter()
        .copied()
        .filter(|c| !table.columns[*c].not_null && !facts[*c].not_null && facts[*c].nulls.is_none())
        .collect();
    tp.checked.redraw_also(add, nullable);
}
