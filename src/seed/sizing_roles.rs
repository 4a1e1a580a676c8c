//! Which tables of a schema are large and which are small, read from the
//! shape of its foreign-key graph rather than from the rows it happens to
//! hold (issue 47): a zero-spec seed sizes the schema's core with `--rows`
//! and keeps what nothing in the core points at small.
//!
//! Real applications' migrations write a few rows into the parents of their
//! core tables (a forum's 3 categories, 2 ranks, 4 groups), and they carry
//! many small configuration tables nothing references (menu items, icons,
//! providers). Sizing each table from its parents' rows made users 8 rows
//! (twice the 4 groups) and every menu item table 50,000. Here each seeded
//! table gets a [`Role`] from the graph alone:
//! - **reference**: rows already there (the migrations' or ones rows left
//!   alone point at), kept as they are; they never size their children;
//! - **core**: a table of a connected part of the schema that holds a hub
//!   (a table at least two tables reference, or one when no table has two),
//!   the tenant table or a table the spec sizes; `--rows` applies to its
//!   roots and rows grow down its NOT NULL foreign keys;
//! - **configuration**: a table of a part of the schema with no hub, such
//!   as a table nothing references and that references nothing generated:
//!   10 to 50 rows ([`configuration_rows`]);
//! - **spec** and **tenant**: the spec (or the tenant inference) sizes it;
//! - **grown**: a core table the migrations wrote a few rows into whose
//!   shape is a core entity's ([`crate::seed::reference::core_entity`]):
//!   its rows are kept and the seed adds more past their keys, sized as
//!   core.
//!
//! A table nothing references is not small for that alone ([`big_leaf`]):
//! one whose rows hang off every object of the core (a generic relation,
//! `content_type_id` and `object_id`, as a search index or an audit log) or
//! that grows with use (a key, a payload and a timestamp: sessions, tokens,
//! caches) is a root of the core.
//!
//! A schema with no foreign key between its generated tables has no core to
//! tell apart: every table is a root of the core, as before. The functions
//! here are pure (the graph in, a role per table out); the planner
//! ([`crate::seed::planner`]) turns a role into a count, and `--dry-run`
//! shows each role with its reason ([`describe`]).

use std::collections::BTreeSet;

use crate::catalog::schema::Schema;
use crate::seed::row::plan::SeedPlan;
use crate::seed::spec::SpecFile;

/// Rows of a configuration table at most, before `--rows` and `--scale`
/// shrink them: a few dozen, as the menus, icons and providers of real
/// applications hold.
pub const CONFIGURATION_MAX: u64 = 50;
/// Rows of a configuration table at least (while `--rows` allows them).
pub const CONFIGURATION_MIN: u64 = 10;

/// How a table is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Rows already there, kept as they are.
    Reference,
    /// The spec says its rows (`rows` or `per`).
    Spec,
    /// The tenant table: `--rows` tenants.
    Tenant,
    /// Part of the schema's core: `--rows` at a root, grown from its core
    /// parents' rows below.
    Core,
    /// Outside the core: kept small.
    Configuration,
    /// Rows already there, kept, and more added past their keys: a core
    /// entity the migrations wrote a few rows into.
    Grown,
}

impl Role {
    /// The word `--dry-run` shows.
    pub fn label(self) -> &'static str {
        match self {
            Role::Reference => "reference",
            Role::Spec => "spec",
            Role::Tenant => "tenant",
            Role::Core => "core",
            Role::Configuration => "configuration",
            Role::Grown => "grown",
        }
    }
}

/// One table as the classification reads it.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub name: String,
    /// In the plan (not excluded, not bookkeeping, not left out).
    pub seeded: bool,
    /// Holds rows kept as they are.
    pub reference: bool,
    /// The spec sizes it: what it says (`rows = 100`, `per accounts`).
    pub spec: Option<String>,
    pub tenant: bool,
    /// Its foreign keys: the parent's index and whether the key is NOT NULL.
    pub parents: Vec<(usize, bool)>,
    /// Why a table nothing references is large all the same ([`big_leaf`]).
    pub big_leaf: Option<String>,
    /// Why a table holding rows is grown (a core entity's shape), when it is.
    pub grown: Option<String>,
    /// The parent whose key is this table's primary key (a foreign key
    /// over exactly its primary key's columns): a one-to-one subtype, as a
    /// multi-table-inheritance child (Django's `page_ptr_id`) is.
    pub extends: Option<usize>,
}

/// Why table `t` is large even when nothing references it, or None: its
/// rows hang off the objects of the core (a generic relation: a foreign key
/// named `content_type...` beside an `object_id`/`object_pk` column, one row
/// per object indexed, logged or tagged), or grow with use (a narrow table,
/// at most 5 columns, of a primary key, a timestamp and a payload: text,
/// bytea or json; sessions, tokens, caches).
pub fn big_leaf(t: &crate::catalog::schema::Table) -> Option<String> {
    use crate::catalog::schema::TypeKind;
    // A tool's few keys (Rails' `ar_internal_metadata`), not a session store.
    if crate::catalog::schema::is_tool_metadata(&t.name) {
        return None;
    }
    let fk_cols: BTreeSet<usize> = t.fks.iter().flat_map(|f| f.cols.iter().copied()).collect();
    let content_type = t
        .fks
        .iter()
        .find(|f| f.cols.len() == 1 && t.columns[f.cols[0]].name.contains("content_type"));
    let object = t.columns.iter().enumerate().find(|(c, col)| {
        !fk_cols.contains(c)
            && (col.name == "object_id"
                || col.name == "object_pk"
                || col.name.ends_with("_object_id"))
    });
    if let (Some(f), Some((_, o))) = (content_type, object) {
        return Some(format!(
            "a generic relation ({}, {}): a row per object of the core",
            t.columns[f.cols[0]].name, o.name
        ));
    }
    let pk: BTreeSet<usize> = t
        .uniques
        .iter()
        .find(|u| u.primary)?
        .cols
        .iter()
        .copied()
        .collect();
    let cols: Vec<(usize, &crate::catalog::schema::Column)> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.generated)
        .collect();
    if cols.len() > 5 {
        return None;
    }
    let rest = || {
        cols.iter()
            .filter(|(c, _)| !pk.contains(c))
            .map(|(_, col)| col)
    };
    let timestamp = rest().find(|c| {
        matches!(
            c.kind,
            TypeKind::Timestamp | TypeKind::Timestamptz | TypeKind::Date
        )
    })?;
    let payload = rest().find(|c| {
        matches!(c.kind, TypeKind::Bytea | TypeKind::Json | TypeKind::Jsonb)
            || (matches!(c.kind, TypeKind::Text) && c.max_len.is_none())
    })?;
    Some(format!(
        "a key, a payload ({}) and a timestamp ({}): rows that grow with use",
        payload.name, timestamp.name
    ))
}

/// A table's role and why, for the planner and `--dry-run`.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub role: Role,
    /// The reason `--dry-run` prints after the role.
    pub why: String,
    /// The core tables a NOT NULL foreign key of this one references: its
    /// rows grow from theirs (empty for a root of the core, and for every
    /// other role).
    pub grows_from: Vec<usize>,
    /// A subtype of a core table (see [`Node::extends`]) and how many
    /// subtypes that parent has: they split its rows, each a share, rather
    /// than each taking them all (Wagtail's page types).
    pub shares: Option<(usize, u64)>,
}

impl Shape {
    /// `core: referenced by 5 tables`.
    pub fn line(&self) -> String {
        format!("{}: {}", self.role.label(), self.why)
    }
}

/// The graph of a catalog: `seeded`, `reference` and `spec` say, by catalog
/// index, which tables the plan holds, which keep their rows, and what the
/// spec says of a table's size.
pub fn nodes(
    cat: &Schema,
    seeded: impl Fn(usize) -> bool,
    reference: impl Fn(usize) -> bool,
    spec: impl Fn(usize) -> Option<String>,
    tenant: Option<usize>,
) -> Vec<Node> {
    cat.tables
        .iter()
        .enumerate()
        .map(|(i, t)| Node {
            name: t.display(),
            seeded: seeded(i),
            reference: reference(i),
            spec: spec(i),
            tenant: tenant == Some(i),
            parents: t
                .fks
                .iter()
                .filter_map(|f| {
                    let p = f.parent?;
                    Some((p, f.cols.iter().all(|c| t.columns[*c].not_null)))
                })
                .collect(),
            big_leaf: big_leaf(t),
            grown: None,
            extends: extends(i, t),
        })
        .collect()
}

/// The parent table `t` (catalog index `i`) extends by its key: one of its
/// foreign keys is over exactly its primary key's columns.
fn extends(i: usize, t: &crate::catalog::schema::Table) -> Option<usize> {
    let pk = t.uniques.iter().find(|u| u.primary)?;
    let same =
        |cols: &[usize]| cols.len() == pk.cols.len() && cols.iter().all(|c| pk.cols.contains(c));
    t.fks
        .iter()
        .find(|f| f.parent.is_some_and(|p| p != i) && same(&f.cols))
        .and_then(|f| f.parent)
}

/// Every table's role (None for a table not seeded).
pub fn classify(nodes: &[Node]) -> Vec<Option<Shape>> {
    let n = nodes.len();
    // Generated: the tables whose rows planck writes.
    let generated = |i: usize| nodes[i].seeded && !nodes[i].reference;
    // The edges between two distinct generated tables, child -> parent.
    let edge = |c: usize, p: usize| p < n && p != c && generated(c) && generated(p);
    let mut referrers: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (c, node) in nodes.iter().enumerate() {
        for &(p, _) in &node.parents {
            if edge(c, p) {
                referrers[p].insert(c);
                neighbours[p].push(c);
                neighbours[c].push(p);
            }
        }
    }
    let any_edge = referrers.iter().any(|r| !r.is_empty());
    // The generated subtypes of each generated table.
    let mut subtypes = vec![0u64; n];
    for (c, node) in nodes.iter().enumerate() {
        if let Some(p) = node.extends.filter(|p| edge(c, *p)) {
            subtypes[p] += 1;
        }
    }
    // Hubs: the tables at least two tables reference, or one when no table
    // has two (a parent and its child are a schema's core too).
    let most = referrers.iter().map(BTreeSet::len).max().unwrap_or(0);
    let hub_at = if most >= 2 { 2 } else { 1 };
    let mut core = vec![!any_edge; n];
    let mut stack: Vec<usize> = (0..n)
        .filter(|&i| generated(i))
        .filter(|&i| {
            referrers[i].len() >= hub_at
                || nodes[i].tenant
                || nodes[i].spec.is_some()
                || nodes[i].grown.is_some()
        })
        .collect();
    if any_edge {
        // The connected parts that hold a hub are the core.
        while let Some(i) = stack.pop() {
            if core[i] {
                continue;
            }
            core[i] = true;
            stack.extend(neighbours[i].iter().copied().filter(|j| !core[*j]));
        }
    }
    (0..n)
        .map(|i| {
            let node = &nodes[i];
            if !node.seeded {
                return None;
            }
            if node.reference {
                return Some(Shape {
                    role: Role::Reference,
                    why: "rows already there, kept as they are".into(),
                    grows_from: Vec::new(),
                    shares: None,
                });
            }
            let referenced = match referrers[i].len() {
                0 => String::new(),
                1 => "referenced by 1 table".to_string(),
                k => format!("referenced by {k} tables"),
            };
            if let Some(s) = &node.spec {
                return Some(shape(Role::Spec, s.clone()));
            }
            if node.tenant {
                return Some(shape(
                    Role::Tenant,
                    "--rows tenants, the tables under it skewed by tenant".into(),
                ));
            }
            if !core[i]
                && let Some(why) = &node.big_leaf
            {
                let why = if referenced.is_empty() {
                    format!("nothing references it, but {why}")
                } else {
                    format!("{referenced}, apart from the core, but {why}")
                };
                return Some(shape(Role::Core, why));
            }
            if !core[i] {
                let why = if !referenced.is_empty() {
                    format!("{referenced}, apart from the core")
                } else if neighbours[i].is_empty() {
                    "nothing references it".into()
                } else {
                    "nothing references it, and it references no core table".into()
                };
                return Some(shape(Role::Configuration, why));
            }
            let mut grows_from: Vec<usize> = node
                .parents
                .iter()
                .filter(|(p, not_null)| *not_null && edge(i, *p) && core[*p])
                .map(|(p, _)| *p)
                .collect();
            grows_from.sort_unstable();
            grows_from.dedup();
            let why = if !any_edge {
                "no foreign key joins the schema's tables: each is a root".into()
            } else if grows_from.is_empty() {
                if referenced.is_empty() {
                    "a root of the core (its foreign keys may be NULL)".into()
                } else {
                    referenced
                }
            } else {
                let mut names: Vec<&str> = grows_from
                    .iter()
                    .take(3)
                    .map(|p| nodes[*p].name.as_str())
                    .collect();
                let more = grows_from.len().saturating_sub(3);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                names.sort_unstable();
                let child = format!("child of {}{more}", names.join(", "));
                if referenced.is_empty() {
                    child
                } else {
                    format!("{child}; {referenced}")
                }
            };
            let shares = node
                .extends
                .filter(|p| edge(i, *p) && core[*p])
                .map(|p| (p, subtypes[p].max(1)));
            let why = match shares {
                Some((p, k)) => format!(
                    "{why}; one of {k} table(s) extending {} by its key: a share of its rows",
                    nodes[p].name
                ),
                None => why,
            };
            let (role, why) = match &node.grown {
                Some(g) if !g.is_empty() => (Role::Grown, format!("{g}; {why}")),
                _ => (Role::Core, why),
            };
            Some(Shape {
                role,
                why,
                grows_from,
                shares,
            })
        })
        .collect()
}

fn shape(role: Role, why: String) -> Shape {
    Shape {
        role,
        why,
        grows_from: Vec::new(),
        shares: None,
    }
}

/// Rows of a configuration table from the rows of a root of the core
/// (`base`, scaled): a hundredth of them, at most [`CONFIGURATION_MAX`],
/// at least [`CONFIGURATION_MIN`] (a self-referencing tree of categories
/// still has branches), and never more than `base`.
pub fn configuration_rows(base: f64) -> u64 {
    let base = base.round() as u64;
    base.div_ceil(100)
        .clamp(CONFIGURATION_MIN, CONFIGURATION_MAX)
        .min(base)
}

/// Cumulative counts of `rows` child rows over `parents` reference rows,
/// skewed as production data is (zipf, s = 1: the first row holds the most):
/// `pcum[q]..pcum[q + 1]` are parent q's children.
pub fn skewed_pcum(rows: u64, parents: u64) -> Vec<u64> {
    let mut pcum = Vec::with_capacity(parents as usize + 1);
    pcum.push(0);
    if parents == 0 {
        return pcum;
    }
    let h: f64 = (1..=parents).map(|k| 1.0 / k as f64).sum();
    let mut acc = 0.0;
    for k in 1..=parents {
        acc += 1.0 / k as f64;
        let at = if k == parents {
            rows
        } else {
            ((rows as f64) * acc / h).floor().min(rows as f64) as u64
        };
        let prev = *pcum.last().unwrap_or(&0);
        pcum.push(at.max(prev));
    }
    pcum
}

/// Under `--truncate` after a completed seed: marks the tables whose rows
/// that seed wrote (`seeded_earlier`, from `planck.seeded`, as
/// `schema.table`) and this run replaces as empty. Their rows are no
/// migrations' reference data, so neither the planner nor `--dry-run`
/// reads them as a part of the core the migrations wrote into: a
/// configuration table the earlier seed gave 10 rows is sized as
/// configuration again, not as the core (the base `--rows`). The tables
/// `kept` keeps (held by rows left alone) or grows past the migrations'
/// rows keep theirs.
pub fn forget_replaced(
    cat: &mut Schema,
    kept: &crate::seed::reference::Kept,
    seeded_earlier: &std::collections::HashSet<String>,
) {
    for (i, t) in cat.tables.iter_mut().enumerate() {
        if seeded_earlier.contains(&format!("{}.{}", t.schema, t.name))
            && !kept.reference.iter().any(|r| r.0 == i)
            && !kept.grown.iter().any(|g| g.table == i)
        {
            t.has_rows = false;
        }
    }
}

/// A table's role as `--dry-run` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRole {
    pub table: String,
    pub role: Role,
    /// `core: referenced by 5 tables`.
    pub line: String,
    /// The rows the plan gives it (a reference table: the rows it keeps).
    pub rows: u64,
}

/// Each seeded table's role as `--dry-run` shows it, in the plan's order:
/// the classification [`crate::seed::planner`] sized the plan with (same
/// tables, same reference set, same spec), a reference table's line with
/// the rows it keeps. `reference` holds the catalog indices of the tables
/// kept as they are.
pub fn describe(
    cat: &Schema,
    plan: &SeedPlan,
    sf: &SpecFile,
    reference: &[usize],
    grown: &[crate::seed::reference::Grown],
) -> Vec<TableRole> {
    let seeded: BTreeSet<usize> = plan.tables.iter().map(|t| t.cat).collect();
    let tenant = plan.tenant.and_then(|p| plan.tables.get(p)).map(|t| t.cat);
    let spec = |i: usize| {
        let (_, ts) = sf
            .spec
            .tables
            .iter()
            .find(|(k, _)| cat.find(k.get_ref()) == Some(i))?;
        let ts = ts.get_ref();
        match (&ts.per, ts.rows) {
            (Some(p), _) => Some(format!("per row of {}", p.get_ref())),
            (None, Some(r)) => Some(format!("rows = {r}")),
            (None, None) => None,
        }
    };
    let mut nodes = nodes(
        cat,
        |i| seeded.contains(&i),
        |i| reference.contains(&i),
        spec,
        tenant,
    );
    // As the planner read them: a table holding rows that is not kept is a
    // part of the core (see `planner::sizing`), its line said when grown.
    for (i, n) in nodes.iter_mut().enumerate() {
        if n.seeded && !n.reference && cat.tables[i].has_rows {
            n.grown = Some(String::new());
        }
    }
    for g in grown {
        if let Some(n) = nodes.get_mut(g.table) {
            let first = plan
                .tables
                .iter()
                .find(|tp| tp.cat == g.table)
                .and_then(|tp| match tp.cols.get(g.key).map(|c| &c.generator) {
                    Some(crate::seed::row::generate::Gen::Sequence { start, .. }) => Some(*start),
                    _ => None,
                })
                .unwrap_or(g.last.saturating_add(1));
            n.grown = Some(format!(
                "{} written before the seed kept, new keys from {first} ({})",
                crate::output::count_of(g.kept, "row"),
                g.why
            ));
        }
    }
    let shapes = classify(&nodes);
    plan.tables
        .iter()
        .filter_map(|tp| {
            let s = shapes.get(tp.cat)?.as_ref()?;
            let line = match s.role {
                Role::Reference if tp.rows > 0 => format!(
                    "reference: {} written before the seed, kept",
                    crate::output::count_of(tp.rows, "row")
                ),
                _ => s.line(),
            };
            Some(TableRole {
                table: tp.display.clone(),
                role: s.role,
                line,
                rows: tp.rows,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, parents: &[(usize, bool)]) -> Node {
        Node {
            name: name.into(),
            seeded: true,
            parents: parents.to_vec(),
            ..Node::default()
        }
    }

    /// A forum: reference parents the migrations filled, a core hanging off
    /// them, and configuration tables nothing references.
    fn forum() -> Vec<Node> {
        let mut v = vec![
            node("categories", &[]),                            // 0
            node("ranks", &[]),                                 // 1
            node("groups", &[]),                                // 2
            node("users", &[(1, true), (2, true)]),             // 3
            node("threads", &[(0, true), (3, false)]),          // 4
            node("posts", &[(4, true), (3, false), (0, true)]), // 5
            node("likes", &[(5, true), (3, true)]),             // 6
            node("menu_items", &[]),                            // 7
            node("icons", &[]),                                 // 8
            node("providers", &[(0, false)]),                   // 9
        ];
        for r in &mut v[..3] {
            r.reference = true;
        }
        v
    }

    fn roles(v: &[Node]) -> Vec<(String, Option<Role>)> {
        classify(v)
            .into_iter()
            .zip(v)
            .map(|(s, n)| (n.name.clone(), s.map(|s| s.role)))
            .collect()
    }

    #[test]
    fn the_core_is_the_part_of_the_schema_its_hubs_are_in() {
        let v = forum();
        let s = classify(&v);
        for (i, (shape, node)) in s.iter().zip(&v).enumerate() {
            let want = match i {
                0..3 => Role::Reference,
                3..7 => Role::Core,
                _ => Role::Configuration,
            };
            assert_eq!(shape.as_ref().unwrap().role, want, "{}", node.name);
        }
        // Users is a root of the core: its parents are reference data.
        assert!(s[3].as_ref().unwrap().grows_from.is_empty());
        assert_eq!(
            s[3].as_ref().unwrap().line(),
            "core: referenced by 3 tables"
        );
        // Threads' user may be NULL: a root too.
        assert!(s[4].as_ref().unwrap().grows_from.is_empty());
        assert_eq!(s[5].as_ref().unwrap().grows_from, vec![4]);
        assert_eq!(s[6].as_ref().unwrap().grows_from, vec![3, 5]);
        assert_eq!(s[6].as_ref().unwrap().line(), "core: child of posts, users");
        assert_eq!(
            s[7].as_ref().unwrap().line(),
            "configuration: nothing references it"
        );
    }

    #[test]
    fn a_schema_without_foreign_keys_is_all_core() {
        let v = vec![node("a", &[]), node("b", &[])];
        assert_eq!(
            roles(&v),
            vec![
                ("a".into(), Some(Role::Core)),
                ("b".into(), Some(Role::Core))
            ]
        );
    }

    #[test]
    fn a_parent_and_its_child_are_a_core_beside_a_lone_table() {
        let v = vec![
            node("authors", &[]),
            node("books", &[(0, true)]),
            node("settings", &[]),
        ];
        assert_eq!(
            roles(&v),
            vec![
                ("authors".into(), Some(Role::Core)),
                ("books".into(), Some(Role::Core)),
                ("settings".into(), Some(Role::Configuration)),
            ]
        );
    }

    #[test]
    fn a_small_cluster_apart_from_the_core_is_configuration() {
        let v = vec![
            node("users", &[]),
            node("posts", &[(0, true)]),
            node("likes", &[(0, true), (1, true)]),
            node("icons", &[]),
            node("menu_items", &[(3, true)]),
        ];
        let s = classify(&v);
        assert_eq!(s[3].as_ref().unwrap().role, Role::Configuration);
        assert_eq!(
            s[3].as_ref().unwrap().line(),
            "configuration: referenced by 1 table, apart from the core"
        );
        assert_eq!(s[4].as_ref().unwrap().role, Role::Configuration);
    }

    #[test]
    fn the_spec_and_the_tenant_size_their_own_and_seed_a_core() {
        let mut v = vec![
            node("accounts", &[]),
            node("users", &[(0, true)]),
            node("audit", &[]),
            node("lonely", &[]),
            node("gone", &[]),
        ];
        v[0].tenant = true;
        v[2].spec = Some("rows = 9".into());
        v[4].seeded = false;
        assert_eq!(
            roles(&v),
            vec![
                ("accounts".into(), Some(Role::Tenant)),
                ("users".into(), Some(Role::Core)),
                ("audit".into(), Some(Role::Spec)),
                ("lonely".into(), Some(Role::Configuration)),
                ("gone".into(), None),
            ]
        );
    }

    #[test]
    fn a_leaf_that_grows_with_use_or_hangs_off_the_core_is_a_root_of_the_core() {
        let mut v = vec![
            node("users", &[]),
            node("posts", &[(0, true)]),
            node("likes", &[(0, true), (1, true)]),
            node("sessions", &[]),
            node("search_index", &[]),
            node("menu_items", &[]),
        ];
        v[3].big_leaf = Some("a key, a payload and a timestamp".into());
        v[4].big_leaf = Some("a generic relation".into());
        let s = classify(&v);
        assert_eq!(
            s[3].as_ref().unwrap().line(),
            "core: nothing references it, but a key, a payload and a timestamp"
        );
        assert!(s[3].as_ref().unwrap().grows_from.is_empty());
        assert_eq!(s[4].as_ref().unwrap().role, Role::Core);
        assert_eq!(s[5].as_ref().unwrap().role, Role::Configuration);
    }

    #[test]
    fn a_grown_table_seeds_the_core_and_says_so() {
        // Pages hold rows the seed grows; their one child alone is no hub
        // when a table elsewhere has two referrers.
        let mut v = vec![
            node("pages", &[]),
            node("blog_pages", &[(0, true)]),
            node("users", &[]),
            node("a", &[(2, true)]),
            node("b", &[(2, true)]),
        ];
        v[0].grown = Some("2 rows kept".into());
        let s = classify(&v);
        assert_eq!(s[0].as_ref().unwrap().role, Role::Grown);
        assert_eq!(
            s[0].as_ref().unwrap().line(),
            "grown: 2 rows kept; referenced by 1 table"
        );
        assert_eq!(s[1].as_ref().unwrap().role, Role::Core);
        assert_eq!(s[1].as_ref().unwrap().grows_from, vec![0]);
        // Without it, pages and their child are apart from the core.
        v[0].grown = None;
        assert_eq!(classify(&v)[0].as_ref().unwrap().role, Role::Configuration);
    }

    #[test]
    fn configuration_rows_are_a_hundredth_of_a_root_at_most_a_few_dozen() {
        assert_eq!(configuration_rows(25_000.0), CONFIGURATION_MAX);
        assert_eq!(configuration_rows(2_000.0), 20);
        assert_eq!(configuration_rows(50.0), CONFIGURATION_MIN);
        assert_eq!(configuration_rows(4.0), 4);
        assert_eq!(configuration_rows(0.0), 0);
    }

    #[test]
    fn skewed_counts_cover_every_row_and_favour_the_first_parent() {
        let pcum = skewed_pcum(1_100, 3);
        assert_eq!(pcum.len(), 4);
        assert_eq!(*pcum.last().unwrap(), 1_100);
        let counts: Vec<u64> = pcum.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(counts, vec![600, 300, 200]);
        assert_eq!(skewed_pcum(5, 0), vec![0]);
    }
}
