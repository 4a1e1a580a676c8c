//! Tables `planck seed` leaves as they are (issue 9 point 11): a migration
//! tool's bookkeeping, never touched whatever the flags (random rows in
//! `django_migrations` make the next `migrate` replay everything), and,
//! without `--truncate`, tables that already hold rows: rows the migrations
//! wrote (Django's content types and permissions, a schema's reference
//! rows) are fixed reference data, not truncated and not added to.
//!
//! A reference table stays in the plan, sized to the keys it holds, and the
//! columns other tables' foreign keys reference get [`Gen::Listed`] with
//! those keys: a foreign key's pick (arithmetic on the parent's row range,
//! whatever its kind) then lands on a key that exists. The load skips it.
//!
//! A table the migrations filled with a few rows is not always reference
//! data (issue 47): Wagtail's migrations write the root and home pages into
//! `wagtailcore_page`, which a production site holds thousands of. A kept
//! table whose shape says it is a core entity ([`core_entity`]: a serial or
//! identity key, a wide row, and one-to-one children, a reference to itself
//! or many tables referencing it) is **grown** instead: its rows stay as
//! they are, the seed adds rows whose keys start past the largest one there
//! (the sequence is moved past them after the load), and the tables under
//! it pick among the new rows. Narrow lookup tables (content types,
//! locales, a forum's 3 categories) stay reference data.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio_postgres::Client;
use toml::Spanned;

use crate::catalog::schema::{self as catalog, Schema, TypeKind};
use crate::error::{Error, Result};
use crate::seed::row::generate::{Gen, Val};
use crate::seed::row::plan::{SeedPlan, Unseedable};
use crate::seed::spec::{SpecFile, TableSpec};

/// Table oid -> column -> the keys it holds.
pub type ReferenceKeys = HashMap<u32, HashMap<usize, Arc<Vec<Val>>>>;

/// Most keys read from one reference table: the plan holds them in memory.
const MAX_KEYS: i64 = 1_000_000;

/// What a run leaves alone, as catalog indices.
#[derive(Debug, Default)]
pub struct Kept {
    /// Migration tools' bookkeeping: excluded from the plan.
    pub bookkeeping: Vec<usize>,
    /// Tables that hold rows, kept as reference data, each with the columns
    /// foreign keys into it reference and the key tuples it holds there.
    pub reference: Vec<(usize, Vec<usize>, Vec<Vec<String>>)>,
    /// Those of [`Kept::reference`] kept only because rows of a table left
    /// alone reference them (`--truncate` would have replaced them), each
    /// with that table's name.
    pub held: Vec<(usize, String)>,
    /// Tables holding rows whose shape says they are core entities: their
    /// rows stay and the seed adds more past them (see [`Grown`]).
    pub grown: Vec<Grown>,
}

/// A table the migrations filled with a few rows that the seed grows: the
/// kept rows stay as they are, new rows get keys past `last`.
#[derive(Debug, Clone, PartialEq)]
pub struct Grown {
    /// Catalog index.
    pub table: usize,
    /// The serial or identity key column.
    pub key: usize,
    /// The largest key the table holds (new keys start at `last + 1`).
    pub last: i64,
    /// Rows it held before the seed.
    pub kept: u64,
    /// Why its shape is a core entity's (`29 columns, 14 one-to-one children`).
    pub why: String,
}

/// Most rows a table may hold and still be grown: more than this, and the
/// rows are not a migration's few but data of their own, kept as they are.
pub const MAX_GROWN_KEPT: i64 = 1_000;

/// Columns a core entity has at least: lookup tables are narrow (a key, a
/// code, a name, a parent), the rows an application is about are not.
pub const CORE_ENTITY_COLUMNS: usize = 8;

/// Tables referencing a wide table that make it a core entity without
/// one-to-one children or a reference to itself.
pub const CORE_ENTITY_REFERRERS: usize = 3;

/// Whether table `i`'s shape is a core entity's, whatever rows it holds:
/// its key column and why, or None for reference data. A core entity has a
/// one-column serial or identity primary key, the only column foreign keys
/// into it reference (new keys past the kept ones are then all a pick
/// needs); at least [`CORE_ENTITY_COLUMNS`] columns; and one-to-one
/// children (tables whose key is a foreign key to it: multi-table
/// inheritance, as Wagtail's page types), a foreign key to itself (a tree),
/// or at least [`CORE_ENTITY_REFERRERS`] tables referencing it.
pub fn core_entity(cat: &Schema, i: usize) -> Option<(usize, String)> {
    let t = &cat.tables[i];
    let pk = t.uniques.iter().find(|u| u.primary)?;
    let [key] = pk.cols[..] else { return None };
    let col = &t.columns[key];
    if !col.kind.is_int() || (col.sequence.is_none() && !col.identity) {
        return None;
    }
    if referenced_columns(cat, i).iter().any(|c| *c != key) {
        return None;
    }
    let width = t.columns.iter().filter(|c| !c.generated).count();
    if width < CORE_ENTITY_COLUMNS {
        return None;
    }
    let mut one_to_one = std::collections::BTreeSet::new();
    let mut referrers = std::collections::BTreeSet::new();
    for (c, child) in cat.tables.iter().enumerate() {
        if c == i {
            continue;
        }
        for f in child.fks.iter().filter(|f| f.parent == Some(i)) {
            referrers.insert(c);
            let mut cols = f.cols.clone();
            cols.sort_unstable();
            if child.uniques.iter().any(|u| {
                let mut k = u.cols.clone();
                k.sort_unstable();
                k == cols
            }) {
                one_to_one.insert(c);
            }
        }
    }
    let tree = t.fks.iter().any(|f| f.parent == Some(i));
    if one_to_one.is_empty() && !tree && referrers.len() < CORE_ENTITY_REFERRERS {
        return None;
    }
    let mut why = vec![format!("{width} columns")];
    match one_to_one.len() {
        0 => {}
        1 => why.push("1 one-to-one child".into()),
        k => why.push(format!("{k} one-to-one children")),
    }
    if tree {
        why.push("references itself".into());
    }
    match referrers.len() {
        0 => {}
        1 => why.push("referenced by 1 table".into()),
        k => why.push(format!("referenced by {k} tables")),
    }
    Some((key, why.join(", ")))
}

impl Kept {
    /// Decides what to keep, reads the reference tables' keys, and writes
    /// both into the spec: bookkeeping excluded, each reference table sized
    /// to its keys. `replace`: `--truncate`, which replaces the rows of the
    /// tables an earlier seed wrote (`seeded`, as `schema.table`) and of
    /// those the spec names, and keeps the rows of the others (the
    /// migrations' reference data, and bookkeeping planck cannot name).
    /// Then one rule ends every conflict (issue 30 point 2): a table whose
    /// rows a table left alone (bookkeeping, excluded, kept) references
    /// keeps its rows too, so those references still hold, and the summary
    /// says why; no table's rows ever refuse the run. `sharded`: shards
    /// append to what other shards wrote, so only bookkeeping is kept;
    /// `loads`: false for `--generate-only`, which sends nothing, so a
    /// table the spec sizes plans as the spec says even when it holds rows.
    /// A dry run loads on paper: it refuses what the real run would refuse,
    /// with the same error.
    #[allow(clippy::too_many_arguments)] // each flag is one independent input of the decision
    pub async fn decide(
        client: &Client,
        cat: &Schema,
        sf: &mut SpecFile,
        scale: f64,
        replace: bool,
        seeded: &std::collections::HashSet<String>,
        sharded: bool,
        loads: bool,
    ) -> Result<Kept> {
        let mut kept = Kept::default();
        let excluded: Vec<usize> = sf
            .spec
            .exclude
            .iter()
            .filter_map(|e| cat.find(e.get_ref()))
            .collect();
        // Whether each table's rows stay as they are.
        let mut left = vec![false; cat.tables.len()];
        let mut keep: Vec<usize> = Vec::new();
        for (i, t) in cat.tables.iter().enumerate() {
            let named = sf
                .spec
                .tables
                .keys()
                .find(|k| cat.find(k.get_ref()) == Some(i));
            if t.migration_bookkeeping {
                if let Some(k) = named {
                    return Err(sf.error(
                        k.span(),
                        format!(
                            "table `{}` is a migration tool's bookkeeping: planck never seeds it",
                            k.get_ref()
                        ),
                        Some("remove its [tables] section".into()),
                    ));
                }
                kept.bookkeeping.push(i);
                left[i] = true;
                continue;
            }
            if excluded.contains(&i) {
                left[i] = true;
                continue;
            }
            let replaced = replace
                && (named.is_some() || seeded.contains(&format!("{}.{}", t.schema, t.name)));
            if replaced || sharded || !t.has_rows {
                continue;
            }
            if let Some(k) = named {
                if !loads {
                    continue;
                }
                // Rows planck wrote itself are no reference data: say whose they are.
                let (what, hint) = if seeded.contains(&format!("{}.{}", t.schema, t.name)) {
                    (
                        "already holds the rows of an earlier planck seed",
                        "pass --truncate to replace them with a new dataset",
                    )
                } else {
                    (
                        "already holds rows, which planck keeps as reference data",
                        "pass --truncate to replace its rows, or remove its [tables] section",
                    )
                };
                return Err(sf.error(
                    k.span(),
                    format!("table `{}` {what}", k.get_ref()),
                    Some(hint.into()),
                ));
            }
            left[i] = true;
            keep.push(i);
        }
        if !sharded {
            kept.held = held_by_references(client, cat, &mut left).await?;
            keep.extend(kept.held.iter().map(|(i, _)| *i));
        }
        for i in keep {
            let t = &cat.tables[i];
            // A core entity the migrations wrote a few rows into is grown
            // (not rows of an earlier seed: those are kept, as warned).
            let before = seeded.contains(&format!("{}.{}", t.schema, t.name));
            if loads
                && !before
                && let Some((key, why)) = core_entity(cat, i)
                && let Some((last, rows)) = catalog_last_key(client, t, key).await?
            {
                kept.grown.push(Grown {
                    table: i,
                    key,
                    last,
                    kept: rows,
                    why,
                });
                continue;
            }
            let cols = referenced_columns(cat, i);
            let keys = if cols.is_empty() {
                Vec::new()
            } else {
                catalog::existing_keys(client, t, &cols, MAX_KEYS).await?
            };
            kept.reference.push((i, cols, keys));
        }
        for &i in &kept.bookkeeping {
            sf.spec
                .exclude
                .push(Spanned::new(0..0, cat.tables[i].display()));
        }
        for (i, _, keys) in &kept.reference {
            // `rows` is scaled: ask for what rounds back to at most the
            // keys held (a pick past them would wrap onto a key twice).
            let rows = (keys.len() as f64 / scale.max(f64::MIN_POSITIVE)).floor() as u64;
            // A spec section of a table kept this way gives way (the
            // summary says why the table was kept).
            sf.spec
                .tables
                .retain(|k, _| cat.find(k.get_ref()) != Some(*i));
            sf.spec.tables.insert(
                Spanned::new(0..0, cat.tables[*i].display()),
                Spanned::new(
                    0..0,
                    TableSpec {
                        rows: Some(rows),
                        ..TableSpec::default()
                    },
                ),
            );
        }
        Ok(kept)
    }

    /// The tables kept because rows of a table left alone reference them,
    /// each as `table (rows of X reference it)`, sorted.
    pub fn held_names(&self, cat: &Schema) -> Vec<String> {
        let mut v: Vec<String> = self
            .held
            .iter()
            .map(|(i, by)| format!("{} (rows of {by} reference it)", cat.tables[*i].display()))
            .collect();
        v.sort();
        v
    }

    /// The oids of the tables the load skips (reference data; bookkeeping
    /// is not in the plan at all).
    pub fn skipped_oids(&self, cat: &Schema) -> Vec<u32> {
        self.reference
            .iter()
            .map(|(i, _, _)| cat.tables[*i].oid)
            .collect()
    }

    /// Every table kept as it was, as the summary names them.
    pub fn names(&self, cat: &Schema) -> Vec<String> {
        let mut v: Vec<String> = self
            .reference
            .iter()
            .map(|(i, _, _)| *i)
            .chain(self.bookkeeping.iter().copied())
            .map(|i| cat.tables[i].display())
            .collect();
        v.sort();
        v
    }

    /// The oids of the tables the load grows: written without `TRUNCATE`.
    pub fn grown_oids(&self, cat: &Schema) -> Vec<u32> {
        self.grown.iter().map(|g| cat.tables[g.table].oid).collect()
    }

    /// Each grown table's oid and the statement deleting its rows past
    /// the migrations' last key: rows an earlier seed grew it by, which a
    /// run growing it again replaces (none on a first seed).
    pub fn trims(&self, cat: &Schema) -> Vec<(u32, String)> {
        self.grown
            .iter()
            .map(|g| {
                let t = &cat.tables[g.table];
                let only = if t.partitioned { "" } else { "ONLY " };
                let sql = format!(
                    "DELETE FROM {only}{} WHERE {} > {}",
                    t.qualified(),
                    crate::db::quote_ident(&t.columns[g.key].name),
                    g.last
                );
                (t.oid, sql)
            })
            .collect()
    }

    /// The kept tables (by display name, sorted) an earlier seed wrote
    /// (`seeded`, as `schema.table`), rather than the migrations.
    pub fn seeded_before(
        &self,
        cat: &Schema,
        seeded: &std::collections::HashSet<String>,
    ) -> Vec<String> {
        let mut v: Vec<String> = self
            .reference
            .iter()
            .map(|(i, _, _)| &cat.tables[*i])
            .filter(|t| seeded.contains(&format!("{}.{}", t.schema, t.name)))
            .map(|t| t.display())
            .collect();
        v.sort();
        v
    }

    /// Gives each referenced column of a reference table its existing keys,
    /// and each grown table's key a sequence past the keys it holds.
    pub fn wire(&self, cat: &Schema, plan: &mut SeedPlan) {
        for g in &self.grown {
            let oid = cat.tables[g.table].oid;
            let Some(tp) = plan.tables.iter_mut().find(|tp| tp.oid == oid) else {
                continue;
            };
            let past = g.last.saturating_add(1);
            tp.cols[g.key].generator = match tp.cols[g.key].generator {
                Gen::Sequence { start, step } if step > 0 => Gen::Sequence {
                    start: start.max(past),
                    step,
                },
                _ => Gen::Sequence {
                    start: past,
                    step: 1,
                },
            };
        }
        for (oid, cols) in self.keys(cat).0 {
            let Some(tp) = plan.tables.iter_mut().find(|tp| tp.oid == oid) else {
                continue;
            };
            for (c, vals) in cols {
                tp.cols[c].generator = Gen::Listed(vals);
            }
        }
    }

    /// The existing keys of each referenced column of each reference table,
    /// by table oid and column, and the reference tables whose keys planck
    /// cannot pick among (by catalog index: planning leaves out, or gives
    /// NULL to, the foreign keys into them).
    pub fn keys(&self, cat: &Schema) -> (ReferenceKeys, BTreeMap<usize, Unseedable>) {
        let mut out = ReferenceKeys::new();
        let mut refused = BTreeMap::new();
        for (i, cols, keys) in &self.reference {
            let table = &cat.tables[*i];
            let mut of_table = HashMap::new();
            for (part, &c) in cols.iter().enumerate() {
                let col = &table.columns[c];
                let Some(vals) = keys
                    .iter()
                    .map(|k| parse(&col.kind, &k[part]))
                    .collect::<Option<Vec<Val>>>()
                else {
                    let e = Error::Seed {
                        table: table.display(),
                        column: Some(col.name.clone()),
                        message: format!(
                            "foreign keys reference this column of a table kept as reference \
                             data, and planck picks existing keys of integer, text, enum and \
                             uuid columns only (this one is {})",
                            col.type_name
                        ),
                        hint: Some(format!(
                            "to replace the table's rows, name it in the spec ([tables.{}] with \
                             rows = N) and pass --truncate; or exclude the tables that reference it",
                            table.name
                        )),
                    };
                    refused.insert(*i, Unseedable::of(*i, &table.display(), &e));
                    break;
                };
                of_table.insert(c, Arc::new(vals));
            }
            if !refused.contains_key(i) {
                out.insert(table.oid, of_table);
            }
        }
        (out, refused)
    }
}

/// Marks `left` (the tables whose rows stay) every table that rows of a
/// table left alone reference through a foreign key, until nothing more
/// is: those rows keep what they reference (replacing it would break the
/// key, which no one asked for). Returns the tables it marked, each with
/// the first table found referencing it.
async fn held_by_references(
    client: &Client,
    cat: &Schema,
    left: &mut [bool],
) -> Result<Vec<(usize, String)>> {
    let mut held = Vec::new();
    loop {
        let mut more = Vec::new();
        for (c, t) in cat.tables.iter().enumerate() {
            if !left[c] || !t.has_rows {
                continue;
            }
            for f in &t.fks {
                let Some(p) = f.parent.filter(|p| *p != c && !left[*p]) else {
                    continue;
                };
                if more.iter().any(|(q, _)| *q == p) {
                    continue;
                }
                if catalog::references_any(client, t, &f.cols).await? {
                    more.push((p, t.display()));
                }
            }
        }
        if more.is_empty() {
            return Ok(held);
        }
        for (p, _) in &more {
            left[*p] = true;
        }
        held.extend(more);
    }
}

/// The largest key of a table a core entity's shape may grow, and its rows:
/// None when it holds more than [`MAX_GROWN_KEPT`] rows (data of its own).
async fn catalog_last_key(
    client: &Client,
    t: &catalog::Table,
    key: usize,
) -> Result<Option<(i64, u64)>> {
    let only = if t.partitioned { "" } else { "ONLY " };
    let sql = format!(
        "SELECT coalesce(max({k})::bigint, 0), count(*) FROM (SELECT {k} FROM {only}{} LIMIT {}) s",
        t.qualified(),
        MAX_GROWN_KEPT + 1,
        k = crate::db::quote_ident(&t.columns[key].name),
    );
    let row = client
        .query_one(&sql, &[])
        .await
        .map_err(|e| Error::db(format!("reading the keys {} holds", t.display()), e))?;
    let (last, rows): (i64, i64) = (row.get(0), row.get(1));
    Ok((rows <= MAX_GROWN_KEPT).then_some((last, rows as u64)))
}

/// The columns of table `i` that foreign keys of other tables reference, in
/// column order.
fn referenced_columns(cat: &Schema, i: usize) -> Vec<usize> {
    let mut cols: Vec<usize> = cat
        .tables
        .iter()
        .flat_map(|t| t.fks.iter())
        .filter(|f| f.parent == Some(i))
        .flat_map(|f| f.parent_cols.iter().copied())
        .collect();
    cols.sort_unstable();
    cols.dedup();
    cols
}

/// A key as the server printed it, as the generator's value for `kind`.
fn parse(kind: &TypeKind, text: &str) -> Option<Val> {
    match kind {
        TypeKind::Int2 | TypeKind::Int4 | TypeKind::Int8 => text.parse().ok().map(Val::Int),
        TypeKind::Text | TypeKind::Enum(_) => Some(Val::Text(text.to_string())),
        TypeKind::Uuid => u128::from_str_radix(&text.replace('-', ""), 16)
            .ok()
            .map(Val::Uuid),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_by_kind() {
        assert_eq!(parse(&TypeKind::Int4, "42"), Some(Val::Int(42)));
        assert_eq!(
            parse(&TypeKind::Text, "auth.user"),
            Some(Val::Text("auth.user".into()))
        );
        assert_eq!(
            parse(&TypeKind::Uuid, "00000000-0000-0000-0000-00000000000a"),
            Some(Val::Uuid(10))
        );
        assert_eq!(
            parse(&TypeKind::Enum(vec!["a".into()]), "a"),
            Some(Val::Text("a".into()))
        );
        assert_eq!(parse(&TypeKind::Int8, "x"), None);
        assert_eq!(parse(&TypeKind::Bytea, "\\x00"), None);
    }
}
