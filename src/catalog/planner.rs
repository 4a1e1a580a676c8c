//! What the planner's choices depend on, read once from the catalogs:
//! tables with their row counts, indexes with their columns and predicates,
//! and row-level security policies, in every schema but the system's and
//! planck's own. Every relation is keyed by its display name
//! ([`super::display_name`]: bare in `public`, else `schema.name`), so two
//! schemas' same-named tables and indexes stay apart; a name as a statement
//! writes it is found with [`Catalog::resolve`] (qualified, or through the
//! search path).

use std::collections::BTreeMap;

use tokio_postgres::Client;

use crate::catalog::schema::OWN_TABLES; // planck's bookkeeping tables in `public` (never judged)
use crate::error::{Error, Result};
use crate::session::{StatsMode, tag};

/// The schemas read: not the system's, not planck's own (`col` names the
/// schema column; spliced into the queries).
fn user_schemas(col: &str) -> String {
    format!(
        "{col} NOT IN ('pg_catalog', 'information_schema', 'planck') AND {col} NOT LIKE 'pg\\_%'"
    )
}

/// `schema.name` as the queries return it -> the display name.
pub fn display(qualified: String) -> String {
    match qualified.split_once('.') {
        Some((s, n)) => super::display_name(s, n),
        None => qualified,
    }
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The display name (`events`, `audit.events`), the key in [`Catalog::tables`].
    pub name: String,
    /// Row count: `reltuples` after ANALYZE, else `count(*)`.
    pub rows: u64,
    pub rls: bool,
    pub columns: Vec<String>,
    /// For a partition, the partitioned table at the top of its tree
    /// (display name): what a statement names when a plan reads the partition.
    pub root: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Display name: the index's schema is its table's.
    pub name: String,
    /// The table's display name.
    pub table: String,
    /// Key columns in order (`None` for an expression).
    pub columns: Vec<Option<String>>,
    pub unique: bool,
    pub primary: bool,
    /// Backs a constraint (primary key, unique, exclusion).
    pub constraint: bool,
    /// Its leading columns are those of a foreign key of its table.
    pub backs_fk: bool,
    /// `WHERE` predicate of a partial index, as `pg_get_expr` prints it.
    pub predicate: Option<String>,
    pub definition: String,
}

#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub table: String,
    pub name: String,
    pub roles: Vec<String>,
    pub qual: Option<String>,
    pub with_check: Option<String>,
}

/// A function or operator a policy expression calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyCall {
    pub table: String,
    pub policy: String,
    /// `random()` or `operator ~~ on text`.
    pub what: String,
    pub volatile: bool,
    pub leakproof: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub server_version_num: i32,
    /// `current_schemas(false)`: where an unqualified name is looked up.
    pub search_path: Vec<String>,
    pub tables: BTreeMap<String, Table>,
    pub indexes: Vec<Index>,
    pub policies: Vec<Policy>,
    pub policy_calls: Vec<PolicyCall>,
}

impl Catalog {
    /// `stats`: how the reads stay out of pg_stat_statements (see `session`).
    pub async fn load(client: &Client, stats: StatsMode) -> Result<Catalog> {
        let q = |ctx: &'static str| move |e| Error::db(ctx, e);
        let version: i32 = client
            .query_one(
                &tag(stats, "SELECT current_setting('server_version_num')::int"),
                &[],
            )
            .await
            .map_err(q("reading the server version"))?
            .get(0);
        crate::db::require_supported(version)?;
        let search_path: Vec<String> = client
            .query_one(&tag(stats, "SELECT current_schemas(false)::text[]"), &[])
            .await
            .map_err(q("reading the search path"))?
            .get(0);
        let mut tables = BTreeMap::new();
        let mut uncounted = Vec::new();
        for r in client
            .query(&tag(stats, &format!(
                    "SELECT n.nspname::text || '.' || c.relname::text, c.reltuples::float8, c.relrowsecurity,
                        coalesce(array_agg(a.attname::text ORDER BY a.attnum)
                                 FILTER (WHERE a.attnum > 0), '{{}}'),
                        (SELECT rn.nspname::text || '.' || rc.relname::text
                           FROM pg_class rc JOIN pg_namespace rn ON rn.oid = rc.relnamespace
                          WHERE c.relispartition AND rc.oid = pg_partition_root(c.oid))
                   FROM pg_class c
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                   LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                  WHERE c.relkind IN ('r', 'p') AND {}
                  GROUP BY c.oid, n.nspname, c.relname, c.reltuples, c.relrowsecurity, c.relispartition",
                    user_schemas("n.nspname")
                )),
                &[],
            )
            .await
            .map_err(q("reading the tables"))?
        {
            let name = display(r.get(0));
            if OWN_TABLES.contains(&name.as_str()) {
                continue;
            }
            let reltuples: f64 = r.get(1);
            if reltuples < 0.0 {
                uncounted.push(name.clone());
            }
            tables.insert(
                name.clone(),
                Table {
                    name,
                    rows: reltuples.max(0.0) as u64,
                    rls: r.get(2),
                    columns: r.get(3),
                    root: r.get::<_, Option<String>>(4).map(display),
                },
            );
        }
        // Never analyzed: count for real (the threshold needs a true size).
        for name in uncounted {
            let sql = format!("SELECT count(*) FROM {}", super::sql_name(&name));
            if let Ok(row) = client.query_one(&tag(stats, &sql), &[]).await
                && let Some(t) = tables.get_mut(&name)
            {
                t.rows = row.get::<_, i64>(0).max(0) as u64;
            }
        }
        let indexes = client
            .query(&tag(stats, &format!(
                    "SELECT n.nspname::text || '.' || i.relname::text, n.nspname::text || '.' || t.relname::text,
                        x.indisunique, x.indisprimary,
                        EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid
                                   AND k.contype IN ('p', 'u', 'x')),
                        EXISTS (SELECT 1 FROM pg_constraint f WHERE f.conrelid = x.indrelid
                                   AND f.contype = 'f'
                                   AND f.conkey::int2[] = (x.indkey::int2[])[0:cardinality(f.conkey) - 1]),
                        pg_get_expr(x.indpred, x.indrelid),
                        pg_get_indexdef(x.indexrelid),
                        ARRAY(SELECT a.attname::text FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
                                LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
                               WHERE k.ord <= x.indnkeyatts ORDER BY k.ord)
                   FROM pg_index x
                   JOIN pg_class i ON i.oid = x.indexrelid
                   JOIN pg_class t ON t.oid = x.indrelid
                   JOIN pg_namespace n ON n.oid = t.relnamespace
                  WHERE {}
                  ORDER BY n.nspname, t.relname, i.relname",
                    user_schemas("n.nspname")
                )),
                &[],
            )
            .await
            .map_err(q("reading the indexes"))?
            .into_iter()
            .map(|r| Index {
                name: display(r.get(0)),
                table: display(r.get(1)),
                unique: r.get(2),
                primary: r.get(3),
                constraint: r.get(4),
                backs_fk: r.get(5),
                predicate: r.get(6),
                definition: r.get(7),
                columns: r.get::<_, Vec<Option<String>>>(8),
            })
            .filter(|i: &Index| !OWN_TABLES.contains(&i.table.as_str()))
            .collect();
        let policies: Vec<Policy> = client
            .query(&tag(stats, &format!(
                    "SELECT schemaname::text || '.' || tablename::text, policyname::text, roles::text[],
                        qual, with_check
                   FROM pg_policies WHERE {}
                  ORDER BY 1, 2",
                    user_schemas("schemaname")
                )),
                &[],
            )
            .await
            .map_err(q("reading the row-level security policies"))?
            .into_iter()
            .map(|r| Policy {
                table: display(r.get(0)),
                name: r.get(1),
                roles: r.get(2),
                qual: r.get(3),
                with_check: r.get(4),
            })
            .collect();
        let policy_calls = policy_calls(client, &policies, stats).await?;
        Ok(Catalog {
            server_version_num: version,
            search_path,
            tables,
            indexes,
            policies,
            policy_calls,
        })
    }

    /// The display name of the table a statement means by `name` (as
    /// written: `events`, `audit.events`): a qualified name is looked up as
    /// it is, a bare one through the search path.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        let key = if let Some((schema, bare)) = name.split_once('.') {
            Some(super::display_name(schema, bare))
        } else {
            self.search_path
                .iter()
                .map(|s| super::display_name(s, name))
                .find(|k| self.tables.contains_key(k))
                // A catalog built by hand (tests) has no search path.
                .or_else(|| Some(name.to_string()))
        };
        self.tables.get_key_value(&key?).map(|(k, _)| k.as_str())
    }

    /// Whether a table (display name) is in a schema of the search path.
    pub fn on_search_path(&self, table: &str) -> bool {
        let (schema, _) = super::split_name(table);
        self.search_path.iter().any(|s| s == schema)
    }

    /// Rows of a table by display name.
    pub fn rows(&self, table: &str) -> u64 {
        self.tables.get(table).map_or(0, |t| t.rows)
    }

    pub fn index(&self, name: &str) -> Option<&Index> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// The display name of the first of `tables` (as a statement writes
    /// them) that has `column`.
    pub fn table_with_column(&self, tables: &[String], column: &str) -> Option<String> {
        tables
            .iter()
            .filter_map(|t| self.resolve(t))
            .find(|t| {
                self.tables
                    .get(*t)
                    .is_some_and(|t| t.columns.iter().any(|c| c == column))
            })
            .map(str::to_string)
    }
}

/// The functions (with their volatility) and comparison operators (with
/// their leakproofness) the policies use.
async fn policy_calls(
    client: &Client,
    policies: &[Policy],
    stats: StatsMode,
) -> Result<Vec<PolicyCall>> {
    use super::expr::{functions, operators};
    let mut out = Vec::new();
    for p in policies {
        let exprs: Vec<&String> = [&p.qual, &p.with_check].into_iter().flatten().collect();
        let mut names: Vec<String> = exprs.iter().flat_map(|q| functions(q)).collect();
        names.sort();
        names.dedup();
        if !names.is_empty() {
            let rows = client
                .query(
                    &tag(
                        stats,
                        "SELECT proname::text, bool_or(provolatile = 'v'), bool_and(proleakproof)
                       FROM pg_proc WHERE proname = ANY ($1) GROUP BY 1 ORDER BY 1",
                    ),
                    &[&names],
                )
                .await
                .map_err(|e| Error::db("reading the policies' functions", e))?;
            for r in rows {
                out.push(PolicyCall {
                    table: p.table.clone(),
                    policy: p.name.clone(),
                    what: format!("{}()", r.get::<_, String>(0)),
                    volatile: r.get(1),
                    leakproof: r.get(2),
                });
            }
        }
        let mut ops: Vec<(String, String)> = exprs.iter().flat_map(|q| operators(q)).collect();
        ops.sort();
        ops.dedup();
        for (column, op) in ops {
            let row = client
                .query_opt(
                    &tag(
                        stats,
                        "SELECT bool_and(f.proleakproof), format_type(a.atttypid, NULL)
                       FROM pg_attribute a
                       JOIN pg_operator o ON o.oprleft = a.atttypid AND o.oprname = $3
                       JOIN pg_proc f ON f.oid = o.oprcode
                      WHERE a.attrelid = to_regclass($1) AND a.attname = $2
                      GROUP BY a.atttypid",
                    ),
                    &[&super::sql_name(&p.table), &column, &op],
                )
                .await
                .map_err(|e| Error::db("reading the policies' operators", e))?;
            if let Some(r) = row {
                let leak: Option<bool> = r.get(0);
                let ty: String = r.get(1);
                out.push(PolicyCall {
                    table: p.table.clone(),
                    policy: p.name.clone(),
                    what: format!("operator {op} on {ty} ({column})"),
                    volatile: false,
                    leakproof: leak.unwrap_or(true),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_qualified_or_through_the_search_path() {
        let table = |n: &str| {
            (
                n.to_string(),
                Table {
                    name: n.into(),
                    ..Default::default()
                },
            )
        };
        let cat = Catalog {
            search_path: vec!["app".into(), "public".into()],
            tables: [table("app.events"), table("events"), table("users")].into(),
            ..Default::default()
        };
        assert_eq!(cat.resolve("events"), Some("app.events"));
        assert_eq!(cat.resolve("public.events"), Some("events"));
        assert_eq!(cat.resolve("users"), Some("users"));
        assert_eq!(cat.resolve("audit.events"), None);
        assert_eq!(cat.resolve("gone"), None);
    }
}
