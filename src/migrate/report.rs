//! What `planck migrate` did, rendered: a table, Markdown, or JSON
//! ([`wire`], owned types apart from the internal ones).

use std::io::Write;

use crate::output::{self, Render};

use super::{ObjectChange, Outcome};

/// The JSON wire format of `planck --format json migrate`.
pub mod wire {
    use serde::{Deserialize, Serialize};

    pub const FORMAT_VERSION: u32 = 1;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct MigrateReport {
        pub format_version: u32,
        /// The database, password hidden.
        pub database: String,
        /// Files applied by this run, in order.
        pub applied: Vec<String>,
        /// Files applied earlier.
        pub already_applied: usize,
        /// Indexes and constraints this run's statements changed.
        pub objects: Vec<Object>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Object {
        pub migration: String,
        pub line: usize,
        /// `created`, `dropped`, `recreated` or `renamed`.
        pub action: String,
        /// `index` or `constraint`.
        pub kind: String,
        pub schema: String,
        pub name: String,
        pub table: Option<String>,
        pub renamed_from: Option<String>,
    }
}

pub fn to_wire(o: &Outcome, database: &str) -> wire::MigrateReport {
    wire::MigrateReport {
        format_version: wire::FORMAT_VERSION,
        database: database.to_string(),
        applied: o.applied.clone(),
        already_applied: o.already,
        objects: o
            .objects
            .iter()
            .map(|c| wire::Object {
                migration: c.migration.clone(),
                line: c.line,
                action: c.action.name().to_string(),
                kind: c.kind.name().to_string(),
                schema: c.schema.clone(),
                name: c.name.clone(),
                table: c.table.clone(),
                renamed_from: c.renamed_from.clone(),
            })
            .collect(),
    }
}

fn headline(o: &Outcome, database: &str) -> String {
    if o.applied.is_empty() {
        format!(
            "{database}: up to date ({} migrations applied earlier)",
            o.already
        )
    } else {
        format!(
            "{database}: applied {} migration(s): {}",
            o.applied.len(),
            o.applied.join(", ")
        )
    }
}

fn object(c: &ObjectChange) -> String {
    let mut s = format!("{}.{}", c.schema, c.name);
    if let Some(from) = &c.renamed_from {
        s.push_str(&format!(" (was {from})"));
    }
    s
}

/// What `planck migrate` prints: the outcome and its database, shown as
/// given (password hidden).
pub struct Printed<'a> {
    pub outcome: &'a Outcome,
    pub database: &'a str,
}

impl Render for Printed<'_> {
    fn json(&self, w: &mut impl Write) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&to_wire(self.outcome, self.database))
            .map_err(std::io::Error::other)?;
        writeln!(w, "{text}")
    }

    fn table(&self, w: &mut impl Write) -> std::io::Result<()> {
        let (o, database) = (self.outcome, self.database);
        writeln!(w, "{}", headline(o, database))?;
        if !o.objects.is_empty() {
            let mut t = output::table(&["migration", "line", "change", "object", "table"]);
            for c in &o.objects {
                t.add_row(vec![
                    c.migration.clone(),
                    c.line.to_string(),
                    format!("{} {}", c.action.name(), c.kind.name()),
                    object(c),
                    c.table.clone().unwrap_or_default(),
                ]);
            }
            writeln!(w, "{t}")?;
        }
        Ok(())
    }

    fn markdown(&self, w: &mut impl Write) -> std::io::Result<()> {
        let (o, database) = (self.outcome, self.database);
        writeln!(w, "### planck migrate\n")?;
        writeln!(w, "{}\n", output::md_cell(&headline(o, database)))?;
        if !o.objects.is_empty() {
            writeln!(w, "| migration | line | change | object | table |")?;
            writeln!(w, "|---|---:|---|---|---|")?;
            for c in &o.objects {
                writeln!(
                    w,
                    "| {} | {} | {} {} | `{}` | {} |",
                    output::md_cell(&c.migration),
                    c.line,
                    c.action.name(),
                    c.kind.name(),
                    output::md_cell(&object(c)),
                    output::md_cell(c.table.as_deref().unwrap_or(""))
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::{Action, Kind};
    use crate::output::Format;

    fn outcome() -> Outcome {
        let change =
            |migration: &str, line, action, kind, name: &str, from: Option<&str>| ObjectChange {
                migration: migration.into(),
                line,
                action,
                kind,
                schema: "public".into(),
                name: name.into(),
                table: Some("items".into()),
                renamed_from: from.map(Into::into),
            };
        Outcome {
            applied: vec!["0001_init.sql".into(), "0002_slug.sql".into()],
            already: 0,
            objects: vec![
                change(
                    "0001_init.sql",
                    1,
                    Action::Created,
                    Kind::Constraint,
                    "items_pkey",
                    None,
                ),
                change(
                    "0001_init.sql",
                    1,
                    Action::Created,
                    Kind::Index,
                    "items_pkey",
                    None,
                ),
                change(
                    "0002_slug.sql",
                    3,
                    Action::Dropped,
                    Kind::Index,
                    "items_title",
                    None,
                ),
                change(
                    "0002_slug.sql",
                    5,
                    Action::Renamed,
                    Kind::Index,
                    "items_slug",
                    Some("items_s"),
                ),
            ],
        }
    }

    fn rendered(format: Format) -> String {
        let printed = Printed {
            outcome: &outcome(),
            database: "postgres://app:***@db/shop",
        };
        let mut out = Vec::new();
        output::render(&mut out, &printed, format).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn table_snapshot() {
        let t = rendered(Format::Table);
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        insta::assert_snapshot!(t);
        let mut out = Vec::new();
        let done = Outcome {
            already: 4,
            ..Default::default()
        };
        let printed = Printed {
            outcome: &done,
            database: "db",
        };
        output::render(&mut out, &printed, Format::Table).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "db: up to date (4 migrations applied earlier)\n"
        );
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(rendered(Format::Markdown));
    }

    #[test]
    fn json_snapshot_reads_back_as_the_wire_types() {
        let text = rendered(Format::Json);
        insta::assert_snapshot!(text);
        let v: wire::MigrateReport = serde_json::from_str(&text).unwrap();
        assert_eq!(v, to_wire(&outcome(), "postgres://app:***@db/shop"));
        assert_eq!(v.format_version, 1);
        assert_eq!(v.applied, ["0001_init.sql", "0002_slug.sql"]);
        assert_eq!(v.objects.len(), 4);
        assert_eq!(
            (
                v.objects[3].action.as_str(),
                v.objects[3].renamed_from.as_deref()
            ),
            ("renamed", Some("items_s"))
        );
    }
}
