//! Reads production's planner statistics: pg_class for each table's size,
//! pg_stats (or the functions of [`super::setup`]) for its columns,
//! pg_stats_ext and pg_stats_ext_exprs for extended statistics, and
//! pg_constraint for the foreign keys between the tables. Catalogs and
//! statistics views only: no statement here reads a table's rows.
//!
//! The views differ between majors (pg_stats' range columns are 17's,
//! pg_stats_ext's `inherited` 15's): the columns a view has are read from
//! the catalog, and a column it lacks is read as NULL.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::output::Log;
use crate::wire::stats::{
    ColumnStats, ExtendedStats, FORMAT_VERSION, ForeignKeyStats, StatsFile, TableStats, ValuesMode,
};

use super::{literal, setup, values};

/// The schemas never captured: the system's and planck's own.
const SKIPPED_SCHEMAS: &str =
    "('pg_catalog', 'information_schema', 'planck', 'planck_stats', 'pg_toast')";

/// planck's bookkeeping tables in `public`, never captured.
const OWN_TABLES: &[&str] = &["planck_migrations", "planck_seed_saved"];

/// Who is reading, and where the statistics come from.
pub(crate) struct Reader {
    pub role: String,
    pub database: String,
    /// `pg_catalog.pg_stats` or `planck_stats.pg_stats()`, per view.
    sources: HashMap<&'static str, String>,
    pub functions: bool,
}

/// Everything the capture reads, every value kept: [`values::apply`]
/// then keeps what `--values` says.
pub(crate) async fn read(client: &Client, log: Log) -> Result<(StatsFile, Reader)> {
    let row = client
        .query_one(
            "SELECT current_setting('server_version_num')::int4, current_user::text, \
             current_database()::text",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the server's version", e))?;
    let server_version_num: i32 = row.get(0);
    let reader = reader(client, row.get(1), row.get(2)).await?;
    log.debug(&format!(
        "reading statistics through {}",
        if reader.functions {
            "planck_stats' functions"
        } else {
            "pg_stats"
        }
    ));
    let lacking = lacking(client).await?;
    if !lacking.is_empty() {
        log.info(&format!(
            "this server (PostgreSQL {}) has no {}: not captured (a later major's statistics)",
            server_version_num / 10_000,
            lacking.join(", ")
        ));
    }
    let mut tables = read_tables(client).await?;
    let oids: Vec<u32> = tables.keys().copied().collect();
    let facts = read_columns(client, &oids, &mut tables).await?;
    read_pg_stats(client, &reader, &facts, &mut tables).await?;
    read_extended(client, &reader, &mut tables).await?;
    let foreign_keys = read_foreign_keys(client, &oids).await?;
    let mut tables: Vec<TableStats> = tables.into_values().collect();
    for t in &mut tables {
        t.analyzed = t.columns.iter().any(|c| c.analyzed);
    }
    let file = StatsFile {
        format_version: FORMAT_VERSION,
        planck_version: env!("CARGO_PKG_VERSION").to_string(),
        server_version_num,
        values: ValuesMode::Keep,
        source: if reader.functions {
            "functions"
        } else {
            "views"
        }
        .to_string(),
        schema_fingerprint: fingerprint(&tables),
        tables,
        foreign_keys,
    };
    Ok((file, reader))
}

/// The schema's fingerprint: sha256 of one line per column.
pub(crate) fn fingerprint(tables: &[TableStats]) -> String {
    use sha2::Digest;
    let mut lines: Vec<String> = tables
        .iter()
        .flat_map(|t| {
            t.columns
                .iter()
                .map(move |c| format!("{}.{}\t{}\t{}\n", t.schema, t.name, c.name, c.type_name))
        })
        .collect();
    lines.sort();
    let digest = sha2::Sha256::digest(lines.concat().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

async fn reader(client: &Client, role: String, database: String) -> Result<Reader> {
    let callable: BTreeSet<String> = client
        .query(
            "SELECT p.proname::text FROM pg_catalog.pg_proc p \
               JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace \
              WHERE n.nspname = $1 AND has_schema_privilege(n.oid, 'USAGE') \
                AND has_function_privilege(p.oid, 'EXECUTE')",
            &[&setup::SCHEMA],
        )
        .await
        .map_err(|e| Error::db("looking for planck_stats' functions", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut sources = HashMap::new();
    for view in setup::VIEWS {
        let from = if callable.contains(*view) {
            format!("{}.{view}()", setup::SCHEMA)
        } else {
            format!("pg_catalog.{view}")
        };
        sources.insert(*view, from);
    }
    Ok(Reader {
        role,
        database,
        functions: callable.contains("pg_stats"),
        sources,
    })
}

async fn read_tables(client: &Client) -> Result<BTreeMap<u32, TableStats>> {
    let rows = client
        .query(
            &format!(
                "SELECT c.oid, n.nspname::text, c.relname::text, \
                        CASE WHEN c.relkind = 'p' THEN 'partitioned' \
                             WHEN c.relispartition THEN 'partition' ELSE 'table' END, \
                        c.reltuples, c.relpages, pg_catalog.pg_table_size(c.oid) \
                   FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                  WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN {SKIPPED_SCHEMAS} \
                    AND n.nspname NOT LIKE 'pg\\_%' \
                  ORDER BY 2, 3"
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the tables from pg_class", e))?;
    let mut out = BTreeMap::new();
    for r in rows {
        let (schema, name): (String, String) = (r.get(1), r.get(2));
        if schema == "public" && OWN_TABLES.contains(&name.as_str()) {
            continue;
        }
        out.insert(
            r.get(0),
            TableStats {
                schema,
                name,
                kind: r.get(3),
                reltuples: r.get(4),
                relpages: r.get(5),
                bytes: r.get::<_, Option<i64>>(6).unwrap_or(0),
                analyzed: false,
                columns: Vec::new(),
                extended: Vec::new(),
            },
        );
    }
    Ok(out)
}

/// What reading a column's value lists needs to know of its type.
struct TypeFacts {
    /// The array delimiter of the column's type, and of its elements.
    delim: char,
    elem_delim: char,
}

/// Fills every table's columns (names, types, whether values are kept);
/// returns each column's [`TypeFacts`], keyed by `(schema, table, column)`.
async fn read_columns(
    client: &Client,
    oids: &[u32],
    tables: &mut BTreeMap<u32, TableStats>,
) -> Result<HashMap<(String, String, String), TypeFacts>> {
    let rows = client
        .query(
            "SELECT a.attrelid, a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), \
                    coalesce(e.typcategory, rs.typcategory, b.typcategory)::text, \
                    b.typdelim::text, coalesce(e.typdelim, b.typdelim)::text \
               FROM pg_catalog.pg_attribute a \
               JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
               JOIN pg_catalog.pg_type b \
                 ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END \
               LEFT JOIN pg_catalog.pg_type e ON e.oid = b.typelem AND b.typcategory = 'A' \
               LEFT JOIN pg_catalog.pg_range r ON r.rngtypid = b.oid \
               LEFT JOIN pg_catalog.pg_type rs ON rs.oid = r.rngsubtype \
              WHERE a.attrelid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped \
              ORDER BY a.attrelid, a.attnum",
            &[&oids],
        )
        .await
        .map_err(|e| Error::db("reading the columns from pg_attribute", e))?;
    let mut facts = HashMap::new();
    for r in rows {
        let oid: u32 = r.get(0);
        let Some(t) = tables.get_mut(&oid) else {
            continue;
        };
        let name: String = r.get(1);
        let category: String = r.get(3);
        let first = |s: String| s.chars().next().unwrap_or(',');
        facts.insert(
            (t.schema.clone(), t.name.clone(), name.clone()),
            TypeFacts {
                delim: first(r.get(4)),
                elem_delim: first(r.get(5)),
            },
        );
        t.columns.push(ColumnStats {
            name,
            type_name: r.get(2),
            values_kept: values::kept_category(&category),
            ..ColumnStats::default()
        });
    }
    Ok(facts)
}

/// The statistics views' columns a capture reads that this server's
/// views lack (pg_stats' range columns before 17, pg_stats_ext's and
/// pg_stats_ext_exprs' `inherited` before 15), as `view.column`.
async fn lacking(client: &Client) -> Result<Vec<String>> {
    let wanted: [(&str, &[&str]); 3] = [
        (
            "pg_stats",
            &[
                "null_frac",
                "avg_width",
                "n_distinct",
                "most_common_vals",
                "most_common_freqs",
                "histogram_bounds",
                "correlation",
                "most_common_elems",
                "most_common_elem_freqs",
                "elem_count_histogram",
                "range_length_histogram",
                "range_empty_frac",
                "range_bounds_histogram",
            ],
        ),
        ("pg_stats_ext", &["inherited", "exprs"]),
        ("pg_stats_ext_exprs", &["inherited"]),
    ];
    let mut out = Vec::new();
    for (view, cols) in wanted {
        let have = view_columns(client, view).await?;
        if have.is_empty() {
            out.push(view.to_string());
            continue;
        }
        out.extend(
            cols.iter()
                .filter(|c| !have.contains(**c))
                .map(|c| format!("{view}.{c}")),
        );
    }
    Ok(out)
}

/// The columns a view has, so a column of another major is read as NULL.
async fn view_columns(client: &Client, view: &str) -> Result<BTreeSet<String>> {
    let rows = client
        .query(
            "SELECT a.attname::text FROM pg_catalog.pg_attribute a \
              WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
            &[&format!("pg_catalog.{view}")],
        )
        .await
        .map_err(|e| Error::db(format!("reading the columns of {view}"), e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// `s.<column>` cast as given when the view has it, else a typed NULL.
fn col(have: &BTreeSet<String>, name: &str, cast: &str, null_type: &str) -> String {
    if have.contains(name) {
        format!("s.{name}{cast}")
    } else {
        format!("NULL::{null_type}")
    }
}

/// The statistic columns pg_stats and pg_stats_ext_exprs share, in the
/// order [`column_stats`] reads them from `first`.
fn stat_columns(have: &BTreeSet<String>) -> String {
    [
        col(have, "null_frac", "", "real"),
        col(have, "avg_width", "", "int4"),
        col(have, "n_distinct", "", "real"),
        col(have, "most_common_vals", "::text", "text"),
        col(have, "most_common_freqs", "", "real[]"),
        col(have, "histogram_bounds", "::text", "text"),
        col(have, "correlation", "", "real"),
        col(have, "most_common_elems", "::text", "text"),
        col(have, "most_common_elem_freqs", "", "real[]"),
        col(have, "elem_count_histogram", "", "real[]"),
        col(have, "range_length_histogram", "::text", "text"),
        col(have, "range_empty_frac", "", "real"),
        col(have, "range_bounds_histogram", "::text", "text"),
    ]
    .join(", ")
}

/// Fills `c` from a row whose statistic columns start at `first`.
fn column_stats(
    r: &tokio_postgres::Row,
    first: usize,
    c: &mut ColumnStats,
    facts: Option<&TypeFacts>,
    at: &str,
) -> Result<()> {
    let (delim, elem_delim) = facts.map_or((',', ','), |f| (f.delim, f.elem_delim));
    let list = |i: usize, d: char| -> Result<Option<Vec<Option<String>>>> {
        match r.get::<_, Option<String>>(first + i) {
            None => Ok(None),
            Some(text) => literal::parse(&text, d).map(Some).map_err(|why| {
                Error::internal(format!("the statistics of {at} do not read: {why}"))
            }),
        }
    };
    c.analyzed = true;
    c.null_frac = r.get(first);
    c.avg_width = r.get(first + 1);
    c.n_distinct = r.get(first + 2);
    c.most_common_vals = list(3, delim)?;
    c.most_common_freqs = r.get(first + 4);
    c.histogram_bounds = list(5, delim)?;
    c.histogram_len = c.histogram_bounds.as_ref().map_or(0, Vec::len);
    c.correlation = r.get(first + 6);
    c.most_common_elems = list(7, elem_delim)?;
    c.most_common_elem_freqs = r.get(first + 8);
    c.elem_count_histogram = r.get(first + 9);
    c.range_length_histogram = list(10, ',')?;
    c.range_empty_frac = r.get(first + 11);
    c.range_bounds_histogram = list(12, ',')?;
    Ok(())
}

async fn read_pg_stats(
    client: &Client,
    reader: &Reader,
    facts: &HashMap<(String, String, String), TypeFacts>,
    tables: &mut BTreeMap<u32, TableStats>,
) -> Result<()> {
    let have = view_columns(client, "pg_stats").await?;
    let sql = format!(
        "SELECT s.schemaname::text, s.tablename::text, s.attname::text, s.inherited, {} \
           FROM {} s WHERE s.schemaname NOT IN {SKIPPED_SCHEMAS} \
          ORDER BY 1, 2, 3, s.inherited",
        stat_columns(&have),
        reader.sources["pg_stats"]
    );
    let rows = client
        .query(&sql, &[])
        .await
        .map_err(|e| Error::db("reading pg_stats", e))?;
    let mut by_name: HashMap<(String, String), &mut TableStats> = tables
        .values_mut()
        .map(|t| ((t.schema.clone(), t.name.clone()), t))
        .collect();
    for r in rows {
        let key: (String, String) = (r.get(0), r.get(1));
        let attname: String = r.get(2);
        let Some(t) = by_name.get_mut(&key) else {
            continue;
        };
        let Some(c) = t.columns.iter_mut().find(|c| c.name == attname) else {
            continue;
        };
        if c.analyzed {
            // The `inherited = false` row came first and is the table's own.
            continue;
        }
        c.inherited = r.get(3);
        let at = format!("{}.{}.{}", key.0, key.1, attname);
        let f = facts.get(&(key.0.clone(), key.1.clone(), attname.clone()));
        column_stats(&r, 4, c, f, &at)?;
    }
    Ok(())
}

async fn read_extended(
    client: &Client,
    reader: &Reader,
    tables: &mut BTreeMap<u32, TableStats>,
) -> Result<()> {
    let have = view_columns(client, "pg_stats_ext").await?;
    if have.is_empty() {
        return Ok(());
    }
    let inherited = if have.contains("inherited") {
        ", s.inherited"
    } else {
        ""
    };
    let sql = format!(
        "SELECT s.schemaname::text, s.tablename::text, s.statistics_schemaname::text, \
                s.statistics_name::text, s.attnames::text[], {}, s.kinds::text[], \
                s.n_distinct::text, s.dependencies::text, \
                array_to_json(s.most_common_vals)::text, s.most_common_freqs, \
                s.most_common_base_freqs \
           FROM {} s WHERE s.schemaname NOT IN {SKIPPED_SCHEMAS} \
          ORDER BY 1, 2, 3, 4{inherited}",
        col(&have, "exprs", "", "text[]"),
        reader.sources["pg_stats_ext"]
    );
    let rows = client
        .query(&sql, &[])
        .await
        .map_err(|e| Error::db("reading pg_stats_ext", e))?;
    let mut by_name: HashMap<(String, String), &mut TableStats> = tables
        .values_mut()
        .map(|t| ((t.schema.clone(), t.name.clone()), t))
        .collect();
    for r in rows {
        let key: (String, String) = (r.get(0), r.get(1));
        let Some(t) = by_name.get_mut(&key) else {
            continue;
        };
        let (schema, name): (String, String) = (r.get(2), r.get(3));
        if t.extended
            .iter()
            .any(|e| e.schema == schema && e.name == name)
        {
            continue;
        }
        let mcv: Option<String> = r.get(9);
        let most_common_vals = match mcv {
            None => None,
            Some(json) => Some(serde_json::from_str(&json).map_err(|e| {
                Error::internal(format!(
                    "the most common values of statistics {schema}.{name} do not read: {e}"
                ))
            })?),
        };
        t.extended.push(ExtendedStats {
            schema,
            name,
            columns: r.get::<_, Option<Vec<String>>>(4).unwrap_or_default(),
            expressions: r.get::<_, Option<Vec<String>>>(5).unwrap_or_default(),
            kinds: r.get::<_, Option<Vec<String>>>(6).unwrap_or_default(),
            n_distinct: r.get(7),
            dependencies: r.get(8),
            most_common_vals,
            most_common_freqs: r.get(10),
            most_common_base_freqs: r.get(11),
            expression_stats: Vec::new(),
        });
    }
    drop(by_name);
    read_expression_stats(client, reader, tables).await
}

async fn read_expression_stats(
    client: &Client,
    reader: &Reader,
    tables: &mut BTreeMap<u32, TableStats>,
) -> Result<()> {
    let have = view_columns(client, "pg_stats_ext_exprs").await?;
    if have.is_empty() {
        return Ok(());
    }
    let inherited = if have.contains("inherited") {
        ", s.inherited"
    } else {
        ""
    };
    let sql = format!(
        "SELECT s.schemaname::text, s.tablename::text, s.statistics_schemaname::text, \
                s.statistics_name::text, s.expr, {} \
           FROM {} s WHERE s.schemaname NOT IN {SKIPPED_SCHEMAS} \
          ORDER BY 1, 2, 3, 4{inherited}",
        stat_columns(&have),
        reader.sources["pg_stats_ext_exprs"]
    );
    let rows = client
        .query(&sql, &[])
        .await
        .map_err(|e| Error::db("reading pg_stats_ext_exprs", e))?;
    for r in rows {
        let key: (String, String) = (r.get(0), r.get(1));
        let Some(t) = tables
            .values_mut()
            .find(|t| t.schema == key.0 && t.name == key.1)
        else {
            continue;
        };
        let (schema, name): (String, String) = (r.get(2), r.get(3));
        let Some(e) = t
            .extended
            .iter_mut()
            .find(|e| e.schema == schema && e.name == name)
        else {
            continue;
        };
        let expr: String = r.get::<_, Option<String>>(4).unwrap_or_default();
        if e.expression_stats.iter().any(|c| c.name == expr) {
            continue;
        }
        let mut c = ColumnStats {
            name: expr.clone(),
            type_name: String::new(),
            values_kept: false,
            ..ColumnStats::default()
        };
        let at = format!("statistics {schema}.{name}, expression {expr}");
        column_stats(&r, 5, &mut c, None, &at)?;
        e.expression_stats.push(c);
    }
    Ok(())
}

async fn read_foreign_keys(client: &Client, oids: &[u32]) -> Result<Vec<ForeignKeyStats>> {
    let cols = |rel: &str, keys: &str| {
        format!(
            "ARRAY(SELECT a.attname::text FROM unnest(c.{keys}) WITH ORDINALITY k(n, i) \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = c.{rel} AND a.attnum = k.n ORDER BY k.i)"
        )
    };
    let sql = format!(
        "SELECT n.nspname || '.' || t.relname, {}, rn.nspname || '.' || r.relname, {} \
           FROM pg_catalog.pg_constraint c \
           JOIN pg_catalog.pg_class t ON t.oid = c.conrelid \
           JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace \
           JOIN pg_catalog.pg_class r ON r.oid = c.confrelid \
           JOIN pg_catalog.pg_namespace rn ON rn.oid = r.relnamespace \
          WHERE c.contype = 'f' AND c.conparentid = 0 \
            AND c.conrelid = ANY($1) AND c.confrelid = ANY($1) \
          ORDER BY 1, 2, 3, 4",
        cols("conrelid", "conkey"),
        cols("confrelid", "confkey")
    );
    let rows = client
        .query(&sql, &[&oids])
        .await
        .map_err(|e| Error::db("reading the foreign keys from pg_constraint", e))?;
    Ok(rows
        .iter()
        .map(|r| ForeignKeyStats {
            table: r.get(0),
            columns: r.get(1),
            references: r.get(2),
            referenced_columns: r.get(3),
        })
        .collect())
}
