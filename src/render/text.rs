//! What the table and the Markdown forms of a result both say: its
//! sentences and cells, built once from the wire type, laid out by
//! `table.rs` and `markdown.rs`.

use crate::wire::migrate::{MigrateReport, Object};

/// `db: applied 2 migration(s): a.sql, b.sql`, or `db: up to date (...)`.
pub(super) fn migrate_headline(r: &MigrateReport) -> String {
    if r.applied.is_empty() {
        format!(
            "{}: up to date ({} migrations applied earlier)",
            r.database, r.already_applied
        )
    } else {
        format!(
            "{}: applied {} migration(s): {}",
            r.database,
            r.applied.len(),
            r.applied.join(", ")
        )
    }
}

/// `public.items_slug (was items_s)`.
pub(super) fn migrate_object(c: &Object) -> String {
    let mut s = format!("{}.{}", c.schema, c.name);
    if let Some(from) = &c.renamed_from {
        s.push_str(&format!(" (was {from})"));
    }
    s
}
