//! What the database says about its schema, read once from `pg_catalog`,
//! every relation keyed by schema and name.
//!
//! Two readers, one naming: [`schema`] is the full column model `planck seed`
//! plans rows from (types, domains, constraints, partitions; ordinary tables
//! outside extensions); [`planner`] is what the planner's choices depend on
//! (row counts, indexes, row-level security policies, partitions included),
//! what `explain` judges plans with. They stay two passes because each would
//! make the other pay for what it does not need (explain would resolve every
//! type through domains and arrays; seed would count rows and read policies);
//! what they share is how a relation is named, here.

pub(crate) mod citus;
pub(crate) mod expr;
pub(crate) mod functions;
pub mod planner;
pub mod schema;
pub(crate) mod tenant_schemas;

use crate::db::quote_ident;

/// The name users write and findings show: bare in `public`, else `schema.name`.
pub fn display_name(schema: &str, name: &str) -> String {
    if schema == "public" {
        name.to_string()
    } else {
        format!("{schema}.{name}")
    }
}

/// A display name back to (schema, name): `audit.events` -> (`audit`, `events`).
pub fn split_name(display: &str) -> (&str, &str) {
    match display.split_once('.') {
        Some((s, n)) => (s, n),
        None => ("public", display),
    }
}

/// The quoted, schema-qualified SQL name of a display name.
pub fn sql_name(display: &str) -> String {
    let (schema, name) = split_name(display);
    format!("{}.{}", quote_ident(schema), quote_ident(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_between_display_and_sql() {
        assert_eq!(display_name("public", "events"), "events");
        assert_eq!(display_name("audit", "events"), "audit.events");
        assert_eq!(split_name("audit.events"), ("audit", "events"));
        assert_eq!(sql_name("events"), "\"public\".\"events\"");
        assert_eq!(sql_name("audit.Events"), "\"audit\".\"Events\"");
    }
}
