//! SARIF 2.1.0 for code scanning: typed structs for the part of the format
//! planck writes (a tool with its rules, results with a physical location
//! and a fingerprint). Each finding points at its statement's entry in the
//! queries file, or for an index found from the schema at the migration
//! line that created it; a plan made worse by a dropped index points at the
//! dropping statement, with the line that had created the index as a
//! `relatedLocation`. `partialFingerprints["planck/v1"]` is the baseline
//! key, so code scanning follows a finding across pushes. The tests
//! validate the output against the OASIS SARIF 2.1.0 schema.

use std::collections::BTreeMap;

use serde::Serialize;

use super::inputs::{
    Inputs, check_help, finding_key, not_judged, not_judged_objects, sorted_findings,
};
use crate::findings::CheckId;

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[derive(Serialize)]
struct Log {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    tool: Tool,
    /// `%SRCROOT%`: the folder the relative `uri`s are relative to, on the
    /// machine that ran planck (code scanning resolves them against the
    /// repository's root instead).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    original_uri_base_ids: BTreeMap<&'static str, BaseUri>,
    results: Vec<SarifResult>,
    /// The statements the data could not judge (issue 48), as notes of the
    /// run: they are no result, and must not read as a clean pass.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    invocations: Vec<Invocation>,
    column_kind: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: Text,
    descriptor: Descriptor,
}

#[derive(Serialize)]
struct Descriptor {
    id: &'static str,
}

#[derive(Serialize)]
struct BaseUri {
    uri: String,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    name: String,
    short_description: Text,
    full_description: Text,
    help: Help,
    default_configuration: Configuration,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: String,
    rule_index: usize,
    level: &'static str,
    message: Text,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<RelatedLocation>,
    partial_fingerprints: BTreeMap<&'static str, String>,
    /// `unchanged` for a finding the baseline holds, `new` otherwise.
    baseline_state: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

/// A location that explains a result (where a dropped index was created).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RelatedLocation {
    id: usize,
    physical_location: PhysicalLocation,
    message: Text,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    /// [`SRCROOT`] for a path relative to the source root; absent for a file
    /// outside it (then `uri` is an absolute `file://` URI).
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

/// The base id of paths relative to the source root (the name SARIF's
/// producers and code scanning use for a repository's root).
const SRCROOT: &str = "%SRCROOT%";

/// What a URI path may hold unencoded: RFC 3986's unreserved characters and
/// the `/` between segments.
const PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

fn encode(path: &str) -> String {
    percent_encoding::utf8_percent_encode(path, PATH).to_string()
}

/// A finding's path (relative to the source root, or absolute when the file
/// is outside it) as a SARIF artifact location.
fn artifact(path: &str) -> ArtifactLocation {
    let path = path.replace('\\', "/");
    let absolute = path.starts_with('/') || path.as_bytes().get(1) == Some(&b':');
    if absolute {
        let path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        ArtifactLocation {
            uri: format!("file://{}", encode(&path)),
            uri_base_id: None,
        }
    } else {
        ArtifactLocation {
            uri: encode(&path),
            uri_base_id: Some(SRCROOT),
        }
    }
}

/// `%SRCROOT%` as an absolute `file://` URI ending in `/`, as SARIF wants
/// for a base.
fn base_ids(root: Option<&std::path::Path>) -> BTreeMap<&'static str, BaseUri> {
    let Some(root) = root.filter(|r| r.is_absolute()) else {
        return BTreeMap::new();
    };
    let mut at = root.to_string_lossy().replace('\\', "/");
    if !at.starts_with('/') {
        at.insert(0, '/');
    }
    if !at.ends_with('/') {
        at.push('/');
    }
    [(
        SRCROOT,
        BaseUri {
            uri: format!("file://{}", encode(&at)),
        },
    )]
    .into_iter()
    .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
}

fn level(severity: &str) -> &'static str {
    match severity {
        "error" => "error",
        "warning" => "warning",
        _ => "note",
    }
}

/// A check's default severity, for the rule table.
fn default_level(check: &str) -> &'static str {
    match check {
        "seq-scan" | "rls-policy" | "stale-statement" | "rls-per-row-call" => "error",
        _ => "warning",
    }
}

fn title(check: &str) -> String {
    let mut t = check.replace('-', " ");
    if let Some(c) = t.get_mut(0..1) {
        c.make_ascii_uppercase();
    }
    t
}

/// Writes the log. A new error that lost an index a migration dropped
/// (`planck check`'s [`Inputs::lost_indexes`]) points at the DROP
/// statement, with the CREATE and the statement's line in the queries file
/// as related locations.
pub fn render(w: &mut impl std::io::Write, i: &Inputs) -> std::io::Result<()> {
    let r = &i.explain;
    let lost = &i.lost_indexes;
    // Every check planck has, then any other id the findings name.
    let mut ids: Vec<String> = CheckId::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    for f in &r.findings {
        if !ids.contains(&f.check) {
            ids.push(f.check.clone());
        }
    }
    let rules: Vec<Rule> = ids
        .iter()
        .map(|id| {
            let fallback = r
                .findings
                .iter()
                .find(|f| &f.check == id)
                .map_or("", |f| f.help.as_str());
            let help = check_help(id, fallback);
            // The rule's help names the manual's section on the check (no
            // helpUri: SARIF wants an absolute URI, and planck has no
            // published docs site to point at).
            let docs = id.parse::<CheckId>().map(|c| c.docs());
            let (docs_text, docs_markdown) = match &docs {
                Ok(d) => (
                    format!(" (see {d} in planck's manual)"),
                    format!(" (see `{d}` in planck's manual)"),
                ),
                Err(_) => (String::new(), String::new()),
            };
            Rule {
                id: id.clone(),
                name: title(id).replace(' ', ""),
                short_description: Text { text: title(id) },
                full_description: Text { text: help.clone() },
                help: Help {
                    markdown: format!("**{}**: {help}{docs_markdown}", title(id)),
                    text: format!("{help}{docs_text}"),
                },
                default_configuration: Configuration {
                    level: default_level(id),
                },
            }
        })
        .collect();
    let results = sorted_findings(&r.findings)
        .into_iter()
        .map(|f| {
            let mut text = f.message.clone();
            if let Some(id) = &f.statement_id {
                let mode = f
                    .mode
                    .as_deref()
                    .map(|m| format!(" as {m}"))
                    .unwrap_or_default();
                text = format!("{text} (statement {id}{mode})");
            }
            if let Some(a) = &f.advice {
                text.push_str(&format!(
                    "; fix: {} (cost {:.0} -> {:.0})",
                    a.sql, a.cost_before, a.cost_after
                ));
            }
            let at = |path: &str, line: usize| PhysicalLocation {
                artifact_location: artifact(path),
                region: Region {
                    start_line: line.max(1),
                },
            };
            let statement_at = f.location.as_ref().map(|l| at(&l.path, l.line));
            let (locations, related_locations) = match lost.iter().find(|l| l.is_for(f)) {
                None => (
                    statement_at
                        .into_iter()
                        .map(|p| Location {
                            physical_location: p,
                        })
                        .collect(),
                    Vec::new(),
                ),
                Some(l) => {
                    let d = &l.dropped;
                    let created = d.created.as_ref().map(|c| RelatedLocation {
                        id: 1,
                        physical_location: at(&c.path, c.line),
                        message: Text {
                            text: format!("{} was created here", d.index),
                        },
                    });
                    let statement = statement_at.map(|p| RelatedLocation {
                        id: 2,
                        physical_location: p,
                        message: Text {
                            text: "the statement that lost it".to_string(),
                        },
                    });
                    (
                        vec![Location {
                            physical_location: at(&d.path, d.line),
                        }],
                        created.into_iter().chain(statement).collect(),
                    )
                }
            };
            SarifResult {
                rule_index: ids.iter().position(|id| id == &f.check).unwrap_or(0),
                rule_id: f.check.clone(),
                level: level(&f.severity),
                message: Text { text },
                locations,
                related_locations,
                partial_fingerprints: [("planck/v1", finding_key(f))].into_iter().collect(),
                baseline_state: if f.baseline { "unchanged" } else { "new" },
            }
        })
        .collect();
    let (rules, results) = with_regressions(i, rules, results);
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: "planck",
                    rules,
                },
            },
            original_uri_base_ids: base_ids(i.source_root.as_deref()),
            results,
            invocations: unjudged_notes(i),
            column_kind: "unicodeCodePoints",
        }],
    };
    serde_json::to_writer_pretty(&mut *w, &log)?;
    writeln!(w)
}

/// One invocation whose notifications name the statements the data could
/// not judge; none when every statement was judged.
fn unjudged_notes(i: &Inputs) -> Vec<Invocation> {
    let note = |text: String| Notification {
        level: "note",
        message: Text { text },
        descriptor: Descriptor { id: "not-judged" },
    };
    let mut notes: Vec<Notification> = not_judged(i)
        .into_iter()
        .map(|n| {
            note(format!(
                "not judged: statement {} (`{}`): {}",
                n.statement_id,
                crate::output::shorten(&n.query, 60),
                n.reason
            ))
        })
        .collect();
    // The indexes and tables no check judged (issue 47, 3): no result says
    // "unused" of them, and the run says why.
    notes.extend(
        not_judged_objects(i)
            .iter()
            .map(|o| note(format!("not judged: {}: {}", o.subject(), o.reason))),
    );
    if notes.is_empty() {
        return vec![];
    }
    vec![Invocation {
        execution_successful: true,
        tool_execution_notifications: notes,
    }]
}

/// The rule of a plan a change made worse (`planck check --base`).
const REGRESSION: &str = "plan-regression";

/// With a diff, each plan the change made worse is a result of its own, at
/// the migration line that dropped the index the plan lost when one did.
fn with_regressions(
    i: &Inputs,
    mut rules: Vec<Rule>,
    mut results: Vec<SarifResult>,
) -> (Vec<Rule>, Vec<SarifResult>) {
    let Some(d) = &i.diff else {
        return (rules, results);
    };
    let regressions: Vec<_> = d.regressions().collect();
    if regressions.is_empty() {
        return (rules, results);
    }
    let help = "The change makes this statement's plan worse than on the base: \
                read the plan change, and keep (or recreate) the index it lost.";
    rules.push(Rule {
        id: REGRESSION.to_string(),
        name: "PlanRegression".to_string(),
        short_description: Text {
            text: "Plan regression".to_string(),
        },
        full_description: Text { text: help.into() },
        help: Help {
            text: help.into(),
            markdown: format!("**Plan regression**: {help}"),
        },
        default_configuration: Configuration { level: "error" },
    });
    let rule_index = rules.len() - 1;
    for c in regressions {
        results.push(SarifResult {
            rule_id: REGRESSION.to_string(),
            rule_index,
            level: "error",
            message: Text {
                text: format!(
                    "`{}` (statement {} as {}, {} plan): {}",
                    crate::queries::normalize_space(&c.query),
                    c.statement_id,
                    c.mode,
                    c.kind,
                    c.summary()
                ),
            },
            locations: c
                .dropped
                .iter()
                .take(1)
                .map(|d| Location {
                    physical_location: PhysicalLocation {
                        artifact_location: artifact(&d.path),
                        region: Region {
                            start_line: d.line.max(1),
                        },
                    },
                })
                .collect(),
            related_locations: c
                .dropped
                .iter()
                .take(1)
                .filter_map(|d| d.created.as_ref().map(|at| (d, at)))
                .map(|(d, at)| RelatedLocation {
                    id: 1,
                    physical_location: PhysicalLocation {
                        artifact_location: artifact(&at.path),
                        region: Region {
                            start_line: at.line.max(1),
                        },
                    },
                    message: Text {
                        text: format!("{} was created here", d.index),
                    },
                })
                .collect(),
            partial_fingerprints: [(
                "planck/v1",
                format!("{REGRESSION}/{}/{}/{}", c.statement_id, c.mode, c.kind),
            )]
            .into_iter()
            .collect(),
            baseline_state: "new",
        });
    }
    (rules, results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The output as text, written through the module's renderer.
    fn render(i: &Inputs) -> String {
        fixture::text(crate::report::Output::Sarif, i)
    }

    /// A statement the data could not judge is a note of the run, valid
    /// SARIF; none when every statement was judged.
    #[test]
    fn unjudged_statements_are_notes_of_the_run() {
        let v: serde_json::Value =
            serde_json::from_str(&render(&crate::report::inputs::inputs_with_unjudged())).unwrap();
        let errors = schema_errors(&v);
        assert!(errors.is_empty(), "{errors:#?}");
        let notes = &v["runs"][0]["invocations"][0]["toolExecutionNotifications"];
        assert_eq!(notes.as_array().map(Vec::len), Some(1), "{v:#}");
        assert_eq!(notes[0]["descriptor"]["id"], "not-judged");
        let text = notes[0]["message"]["text"].as_str().unwrap();
        assert!(
            text.contains("s9") && text.contains("cards 4,000 rows"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&render(&fixture::inputs())).unwrap();
        assert!(v["runs"][0].get("invocations").is_none(), "{v:#}");
    }

    /// Issue 47, 3: an index or table no check judged is a note of the run,
    /// schema-valid, naming it and why; never a result.
    #[test]
    fn unjudged_indexes_and_tables_are_notes_of_the_run() {
        let i = crate::report::inputs::inputs_with_unjudged_objects();
        let v: serde_json::Value = serde_json::from_str(&render(&i)).unwrap();
        let errors = schema_errors(&v);
        assert!(errors.is_empty(), "{errors:#?}");
        let notes = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
            .as_array()
            .unwrap();
        let texts: Vec<&str> = notes
            .iter()
            .map(|n| n["message"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            texts,
            vec![
                "not judged: index menu_items_label_idx on menu_items (unused-index): \
                 menu_items holds 6 rows, below min_table_rows (100)",
                "not judged: table menu_items (missing-fk-index): menu_items holds 6 rows, \
                 below min_table_rows (100)"
            ]
        );
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert!(
            results
                .iter()
                .all(|r| !r.to_string().contains("menu_items")),
            "{v:#}"
        );
    }

    /// The OASIS SARIF 2.1.0 schema, vendored (see the NOTICE beside it).
    const SARIF_SCHEMA: &str = include_str!("../../tests/fixtures/sarif/sarif-schema-2.1.0.json");

    /// The schema as the validator reads it. The OASIS file's pattern for
    /// `run.language` ends in an unescaped `]` (`...-[a-zA-Z]{2}]?$`), which
    /// ECMA-262's unicode mode (the `regex` format the meta-schema checks)
    /// rejects; that one character is escaped here, the file is left as
    /// published. Nothing planck writes has a `language`.
    pub(crate) fn readable_schema() -> String {
        let bad = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
        assert!(
            SARIF_SCHEMA.contains(bad),
            "the schema changed: revisit this"
        );
        SARIF_SCHEMA.replace(bad, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#)
    }

    fn schema_errors(instance: &serde_json::Value) -> Vec<String> {
        let schema: serde_json::Value = serde_json::from_str(&readable_schema()).unwrap();
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap();
        validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    /// issue 14: the snapshot is valid SARIF 2.1.0; the plan a dropped index
    /// made worse points at the DROP INDEX with the CREATE INDEX related.
    #[test]
    fn snapshot() {
        let text = render(&fixture::inputs());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors = schema_errors(&v);
        assert!(errors.is_empty(), "{errors:#?}");
        let regression = v["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ruleId"] == REGRESSION)
            .expect("the fixture's diff has a regression");
        assert_eq!(
            regression["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            fixture::DROP_FILE
        );
        let related = &regression["relatedLocations"][0]["physicalLocation"];
        assert_eq!(related["artifactLocation"]["uri"], fixture::CREATE_FILE);
        assert_eq!(related["region"]["startLine"], fixture::CREATE_LINE);
        insta::assert_snapshot!(text);
    }

    /// The validator is not lenient: what the schema forbids fails it.
    #[test]
    fn the_schema_check_catches_a_broken_log() {
        let mut v: serde_json::Value = serde_json::from_str(&render(&fixture::inputs())).unwrap();
        assert!(schema_errors(&v).is_empty());
        v["runs"][0]["results"][0]["level"] = "fatal".into();
        v["runs"][0]["columnKind"] = "bytes".into();
        v["version"] = "2.0.0".into();
        assert_eq!(schema_errors(&v).len(), 3, "{:#?}", schema_errors(&v));
    }
}
