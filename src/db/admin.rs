//! Catalog work that several commands send to a server: dropping a database
//! (check's own and `planck migrate --fresh`'s) and reading each table's
//! relfilenode (check's re-analyze and migrate's rewrite measure). One place
//! each, so the statement and the catalog filter are written once.

use tokio_postgres::Client;

use crate::error::{Error, Result};

/// Drops `name` if it exists, with FORCE (its sessions are terminated). The
/// driver's error is returned as it is: callers word their own context.
pub async fn drop_database(
    admin: &Client,
    name: &str,
) -> std::result::Result<(), tokio_postgres::Error> {
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            super::quote_ident(name)
        ))
        .await
}

/// One table (or materialized view) of the database, as its file sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFile {
    pub oid: u32,
    /// `oid::regclass::text`: qualified when off the search path.
    pub name: String,
    pub schema: String,
    pub relname: String,
    /// A new one after a statement: the table was rewritten.
    pub relfilenode: u32,
    /// Live (not dropped) columns.
    pub columns: i64,
}

/// Every ordinary table and materialized view outside the system schemas,
/// with its relfilenode and column count.
pub async fn table_files(client: &Client) -> Result<Vec<TableFile>> {
    let rows = client
        .query(
            "SELECT c.oid, c.oid::regclass::text, n.nspname::text, c.relname::text, c.relfilenode,
                    (SELECT count(*) FROM pg_attribute a
                      WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'm')
                AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                AND n.nspname NOT LIKE 'pg_toast%'",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the tables' relfilenodes", e))?;
    Ok(rows
        .iter()
        .map(|r| TableFile {
            oid: r.get(0),
            name: r.get(1),
            schema: r.get(2),
            relname: r.get(3),
            relfilenode: r.get(4),
            columns: r.get(5),
        })
        .collect())
}
