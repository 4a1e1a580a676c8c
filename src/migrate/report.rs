//! What `planck migrate` did, as its wire type ([`crate::wire::migrate`]),
//! which every format is rendered from (`crate::render`).

use super::Outcome;
use crate::wire::migrate as wire;

/// The wire form of an outcome, its database shown as given (password
/// hidden).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::{Action, Kind, ObjectChange};
    use crate::output::{self, Format};

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
        let printed = to_wire(&outcome(), "postgres://app:***@db/shop");
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
        let printed = to_wire(&done, "db");
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
