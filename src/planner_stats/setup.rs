//! The SQL that lets a role read the planner's statistics and no row
//! (`planck stats setup-sql`).
//!
//! pg_stats and pg_stats_ext show a column only to a role that may SELECT
//! it (`has_column_privilege`), and hide a table whose row-level security
//! applies to the role; `pg_read_all_stats` does not change that, and
//! pg_statistic itself is the superuser's. So a capture without SELECT on
//! the tables goes through three security-definer functions, created once
//! by a superuser or the tables' owner, that return those views' rows as
//! their owner sees them: the statistics, never a row of a table. The
//! capture uses them when the role may call them, the views otherwise.

/// The schema the functions live in.
pub const SCHEMA: &str = "planck_stats";

/// The views each function returns, as the functions are named.
pub const VIEWS: &[&str] = &["pg_stats", "pg_stats_ext", "pg_stats_ext_exprs"];

/// The SQL to run once, as a superuser or the tables' owner; `role` is
/// granted the functions (a placeholder comment when not given).
pub fn sql(role: Option<&str>) -> String {
    let mut out = format!(
        "-- planck stats capture without SELECT on any table: the planner's statistics\n\
         -- (pg_stats, pg_stats_ext, pg_stats_ext_exprs) as this script's runner sees them.\n\
         -- Run once as a superuser (or the tables' owner: then only its tables show).\n\
         CREATE SCHEMA IF NOT EXISTS {SCHEMA};\n\
         REVOKE ALL ON SCHEMA {SCHEMA} FROM PUBLIC;\n"
    );
    for view in VIEWS {
        out.push_str(&format!(
            "CREATE OR REPLACE FUNCTION {SCHEMA}.{view}() RETURNS SETOF pg_catalog.{view}\n    \
             LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp\n    \
             AS 'SELECT * FROM pg_catalog.{view}';\n\
             REVOKE ALL ON FUNCTION {SCHEMA}.{view}() FROM PUBLIC;\n"
        ));
    }
    match role {
        Some(r) => {
            let r = crate::db::quote_ident(r);
            out.push_str(&format!(
                "GRANT USAGE ON SCHEMA {SCHEMA} TO {r};\n\
                 GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} TO {r};\n"
            ));
        }
        None => out.push_str(&format!(
            "-- then, for the role that captures (planck stats setup-sql --role NAME writes these):\n\
             -- GRANT USAGE ON SCHEMA {SCHEMA} TO capture_role;\n\
             -- GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} TO capture_role;\n"
        )),
    }
    out
}
