//! Which index a plan lost, and where: head's new error findings matched to
//! an index a migration dropped on the same table (by the columns the
//! plan's conditions name, read from the EXPLAIN JSON), and the migration
//! statements that dropped and had created it. The gate and the diff name
//! them so a reviewer sees the line to look at.

use std::collections::BTreeSet;
use std::path::Path;

use crate::migrate;
use crate::wire::check::{JsonLostIndex, JsonObjectChange};
use crate::wire::explain::JsonReport;

/// The migration statement that created the index `dropped` drops: the
/// last creation (or rename to it) in the object map before the drop.
pub fn created_at<'a>(
    map: &'a migrate::ObjectMap,
    dropped: &JsonObjectChange,
) -> Option<&'a migrate::ObjectChange> {
    let drop_file = Path::new(&dropped.file)
        .file_name()
        .map(|f| f.to_string_lossy().to_string());
    map.changes()
        .iter()
        .take_while(|c| {
            !(c.action == migrate::Action::Dropped
                && Some(&c.migration) == drop_file.as_ref()
                && c.line == dropped.line)
        })
        .filter(|c| {
            c.name == dropped.name
                && matches!(
                    c.action,
                    migrate::Action::Created
                        | migrate::Action::Recreated
                        | migrate::Action::Renamed
                )
        })
        .last()
}

/// Head's new error findings (not in the baseline, about a statement's read
/// of a relation, naming no index) on a table one of `dropped` belonged to,
/// where the statement's plans filter, join or sort on the index's leading
/// column: the index the plan lost. Paths are the map's file names.
pub fn lost_indexes(head: &JsonReport, dropped: &[migrate::DroppedIndex]) -> Vec<JsonLostIndex> {
    let bare = |name: &str| name.rsplit('.').next().unwrap_or(name).to_string();
    let mut out = Vec::new();
    for f in head
        .findings
        .iter()
        .filter(|f| f.is_new_error() && f.index.is_none())
    {
        let (Some(id), Some(relation)) = (&f.statement_id, &f.relation) else {
            continue;
        };
        let Some(s) = head.statements.iter().find(|s| &s.id == id) else {
            continue;
        };
        let mut words = BTreeSet::new();
        for p in &s.plans {
            condition_words(&p.plan, &mut words);
        }
        let best = dropped
            .iter()
            .filter(|d| d.table.as_deref().map(bare) == Some(bare(relation)))
            .filter(|d| d.columns.first().is_some_and(|c| words.contains(c)))
            .max_by_key(|d| d.columns.iter().filter(|c| words.contains(*c)).count());
        if let Some(d) = best {
            out.push(JsonLostIndex {
                check: f.check.clone(),
                statement_id: id.clone(),
                mode: f.mode.clone(),
                relation: relation.clone(),
                columns: d.columns.clone(),
                dropped: crate::wire::diff::DroppedIndex {
                    index: d.name.clone(),
                    path: d.dropped.0.clone(),
                    line: d.dropped.1,
                    created: d
                        .created
                        .as_ref()
                        .map(|(path, line)| crate::wire::diff::SourceLine {
                            path: path.clone(),
                            line: *line,
                        }),
                },
            });
        }
    }
    out
}

/// The identifiers of a plan's conditions and sort keys (`Filter`, `Index
/// Cond`, `Hash Cond`, `Join Filter`, `Sort Key`...), in every node.
fn condition_words(node: &serde_json::Value, out: &mut BTreeSet<String>) {
    fn add(text: &str, out: &mut BTreeSet<String>) {
        for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !w.is_empty() {
                out.insert(w.to_string());
            }
        }
    }
    match node {
        serde_json::Value::Array(items) => {
            for i in items {
                condition_words(i, out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let wanted = k.ends_with("Cond") || k.ends_with("Filter") || k.ends_with("Key");
                match v {
                    serde_json::Value::String(t) if wanted => add(t, out),
                    serde_json::Value::Array(a) if wanted => {
                        for t in a.iter().filter_map(serde_json::Value::as_str) {
                            add(t, out);
                        }
                    }
                    _ => condition_words(v, out),
                }
            }
        }
        _ => {}
    }
}

/// The head migration statement that dropped `index`.
pub fn dropped_by<'a>(
    objects: &'a [JsonObjectChange],
    index: &str,
) -> Option<&'a JsonObjectChange> {
    objects
        .iter()
        .find(|o| o.action == "dropped" && o.kind == "index" && o.name == index)
}
