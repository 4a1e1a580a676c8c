//! What a recording did, as its wire type ([`crate::wire::record`]), which
//! every format is rendered from (`crate::render`).

use std::path::Path;

use crate::queries::MergeStatus;
use crate::record::{Exit, Outcome, Reason};
use crate::wire::record as wire;

fn shown_path(path: &Path, project: &Path) -> String {
    path.strip_prefix(project)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The wire form of an outcome.
pub fn to_wire(o: &Outcome, project: &Path) -> wire::RecordReport {
    let exit = o.exit.map(|e| match e {
        Exit::Code(c) => wire::Exit {
            code: Some(c),
            signal: None,
            signal_name: None,
        },
        Exit::Signal(s) => wire::Exit {
            code: None,
            signal: Some(s),
            signal_name: Some(crate::record::child::signal_name(s).to_string()),
        },
    });
    wire::RecordReport {
        format_version: wire::FORMAT_VERSION,
        database: o.database.clone(),
        file: shown_path(&o.file, project),
        command: o.command.clone(),
        exit,
        mode: o.mode.name().to_string(),
        created_extension: o.created_extension,
        kept: o.statements.len(),
        dropped: Reason::ALL
            .iter()
            .map(|r| (r.name().to_string(), o.dropped.get(r).copied().unwrap_or(0)))
            .collect(),
        added: o.merge.count(MergeStatus::Added),
        updated: o.merge.count(MergeStatus::Updated),
        unchanged: o.merge.count(MergeStatus::Unchanged),
        manual: o.merge.count(MergeStatus::Manual),
        vanished: o
            .merge
            .vanished
            .iter()
            .map(|v| wire::Vanished {
                id: v.id.clone(),
                role: v.role.clone(),
                query: v.query.clone(),
            })
            .collect(),
        pruned: o.merge.pruned,
        warnings: o.warnings.clone(),
        statements: o
            .statements
            .iter()
            .map(|k| wire::Statement {
                id: k.id.clone(),
                queryid: k.queryid,
                role: k.role.clone(),
                bypass_rls: k.bypass_rls,
                calls: k.calls,
                rows: k.rows,
                total_ms: k.total_ms,
                mean_ms: k.total_ms / k.calls.max(1) as f64,
                query: k.query.clone(),
                noise: k.noise.map(|r| r.name().to_string()),
                status: k.status.name().to_string(),
                contexts: k.contexts.iter().map(|c| c.name().to_string()).collect(),
                from_relay: k.from_relay,
            })
            .collect(),
        relay: o.relay.as_ref().map(|r| wire::Relay {
            connections: r.connections,
            incomplete_connections: r.incomplete,
            left_open: r.left_open,
            transactions: r.transactions,
            autocommit_statements: r.lone,
            shapes_written: r.shapes_written,
            shapes_over_limit: r.over_limit,
            calls_over_limit: r.over_limit_calls,
            matched_by_queryid: r.by_queryid,
            matched_by_text: r.by_text,
            unmatched: r.unmatched,
            noise: r.noise,
            relay_only: r.relay_only,
            longest_ms: r.longest_time.map(|t| t.0),
            longest_statements: r.longest_time.map(|t| t.1),
            most_statements: r.longest_statements.map(|t| t.0),
            most_statements_ms: r.longest_statements.map(|t| t.1),
            slow_openers: r.slow_openers.clone(),
            databases: r.databases.clone(),
            think_ms: r.think_ms.clone(),
            migration_transactions: r.migration_transactions,
            migration_autocommit_statements: r.migration_lone,
        }),
        recorded_databases: o.recorded_databases.clone(),
        migration_only: o.migration_only.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{self, Format};
    use crate::queries::{Merge, Statement};
    use crate::record::{Kept, Mode};

    fn outcome() -> Outcome {
        let mut dropped = std::collections::BTreeMap::new();
        dropped.insert(Reason::Transaction, 4);
        dropped.insert(Reason::Setting, 2);
        dropped.insert(Reason::ForeignKeyCheck, 1);
        dropped.insert(Reason::PlanckBookkeeping, 5);
        dropped.insert(Reason::StatsReset, 1);
        dropped.insert(Reason::Catalog, 12);
        dropped.insert(Reason::Utility, 3);
        dropped.insert(Reason::ForeignKeyValidation, 2);
        Outcome {
            database: "shop".into(),
            file: "/p/queries/recorded.toml".into(),
            command: vec!["npm".into(), "run".into(), "test it".into()],
            exit: Some(Exit::Signal(9)),
            mode: Mode::Reset,
            statements: vec![
                Kept {
                    id: "abc".into(),
                    queryid: 42,
                    role: "app_user".into(),
                    bypass_rls: false,
                    calls: 1500,
                    rows: 3,
                    total_ms: 3.0,
                    query: "SELECT a\n FROM t WHERE id = $1".into(),
                    noise: None,
                    status: MergeStatus::Added,
                    contexts: vec![],
                    from_relay: false,
                },
                Kept {
                    id: "def".into(),
                    queryid: -7,
                    role: "owner".into(),
                    bypass_rls: true,
                    calls: 2,
                    rows: 0,
                    total_ms: 2500.0,
                    query: "UPDATE items SET status = $1 WHERE updated_at < now() - $2::interval AND status | $3 = $4".into(),
                    noise: Some(Reason::Ddl),
                    status: MergeStatus::Unchanged,
                    contexts: vec![crate::queries::Context::Top, crate::queries::Context::Function],
                    from_relay: false,
                },
            ],
            dropped,
            merge: Merge {
                outcomes: vec![
                    ("abc".into(), MergeStatus::Added),
                    ("def".into(), MergeStatus::Unchanged),
                ],
                vanished: vec![Statement {
                    id: "old".into(),
                    query: "SELECT gone".into(),
                    role: Some("app_user".into()),
                    ..Default::default()
                }],
                pruned: false,
            },
            warnings: vec!["the command was killed".into()],
            created_extension: false,
            relay: None,
            recorded_databases: vec!["shop".into()],
            migration_only: vec![],
            list_all: true,
        }
    }

    fn rendered(format: Format) -> String {
        render(&outcome(), format)
    }

    /// `o` in `format`, as `planck record` prints it.
    fn render(o: &Outcome, format: Format) -> String {
        let report = to_wire(o, Path::new("/p"));
        let printed = crate::render::Recorded {
            report: &report,
            list_all: o.list_all,
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
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(rendered(Format::Markdown));
    }

    #[test]
    fn json_snapshot_reads_back_as_the_wire_types() {
        let text = rendered(Format::Json);
        insta::assert_snapshot!(text);
        let v: wire::RecordReport = serde_json::from_str(&text).unwrap();
        assert_eq!(v, to_wire(&outcome(), Path::new("/p")));
        assert_eq!(v.format_version, 1);
        assert_eq!(v.file, "queries/recorded.toml");
        let exit = v.exit.as_ref().unwrap();
        assert_eq!((exit.code, exit.signal), (None, Some(9)));
        assert_eq!(exit.signal_name.as_deref(), Some("SIGKILL"));
        assert_eq!(
            v.dropped.len(),
            Reason::ALL.len(),
            "every reason is present"
        );
        assert_eq!(v.dropped["transaction"], 4);
        assert_eq!(v.dropped["fk-check"], 1);
        assert_eq!(v.dropped["ddl"], 0);
        assert_eq!((v.added, v.unchanged, v.kept), (1, 1, 2));
        assert_eq!(v.statements[0].mean_ms, 0.002);
        assert_eq!(v.statements[1].noise.as_deref(), Some("ddl"));
        assert_eq!(v.vanished[0].id, "old");
    }

    /// Issue 12, 4: the summary lists the top statements by calls unless
    /// `--verbose`; the relay's line says what it saw.
    #[test]
    fn the_table_is_compact_unless_verbose() {
        let mut o = outcome();
        let k = o.statements[0].clone();
        o.statements = (0..25)
            .map(|i| crate::record::Kept {
                calls: 100 + i,
                query: format!("SELECT c{i} FROM t"),
                ..k.clone()
            })
            .collect();
        o.list_all = false;
        o.relay = Some(crate::record::RelaySummary {
            connections: 3,
            transactions: 40,
            shapes_written: 2,
            lone: 7,
            ..Default::default()
        });
        let text = render(&o, Format::Table);
        assert!(text.contains("SELECT c24 FROM t"), "{text}");
        assert!(text.contains("SELECT c5 FROM t"), "{text}");
        assert!(!text.contains("SELECT c4 FROM t"), "{text}");
        assert!(text.contains("... and 5 more statement(s)"), "{text}");
        assert!(
            text.contains("relay: 3 connection(s), 40 transaction(s), 2 shape(s) written, 7 autocommit statement(s)"),
            "{text}"
        );
        o.list_all = true;
        let text = render(&o, Format::Table);
        assert!(text.contains("SELECT c4 FROM t") && !text.contains("more statement"));
    }

    /// Issue 12, 4: the databases recorded are named when the run created
    /// some; a statement only the relay had shows no mean time.
    #[test]
    fn created_databases_and_relay_only_statements_are_shown() {
        let mut o = outcome();
        o.statements.truncate(1);
        o.statements[0].from_relay = true;
        o.recorded_databases = vec!["shop".into(), "test_shop".into()];
        o.relay = Some(crate::record::RelaySummary {
            relay_only: 1,
            ..Default::default()
        });
        let text = render(&o, Format::Table);
        assert!(
            text.contains("databases recorded: shop, test_shop"),
            "{text}"
        );
        assert!(
            text.contains("1 statement(s) from the relay only"),
            "{text}"
        );
        let row = text.lines().find(|l| l.contains("SELECT a")).unwrap();
        assert!(row.contains(" - ") && !row.contains(" ms"), "{row}");
        let v = to_wire(&o, Path::new("/p"));
        assert_eq!(v.recorded_databases, ["shop", "test_shop"]);
        assert!(v.statements[0].from_relay);
        assert_eq!(v.relay.unwrap().relay_only, 1);
    }

    /// Issue 13, 6 and issue 47, 5: a reviewer sees what was left out as
    /// migrations' and why, and how many transactions and autocommit
    /// statements were the migrations'.
    #[test]
    fn issue13_statements_left_out_as_migrations_are_listed() {
        let mut o = outcome();
        o.dropped.insert(Reason::Migration, 7);
        o.migration_only = (0..7)
            .map(|i| format!("UPDATE \"api_check\" SET \"c{i}\" = $1 WHERE \"c{i}\" IS NULL"))
            .collect();
        o.relay = Some(crate::record::RelaySummary {
            transactions: 40,
            migration_transactions: 12,
            lone: 9,
            migration_lone: 4,
            ..Default::default()
        });
        o.list_all = false;
        let text = render(&o, Format::Table);
        assert!(
            text.contains("7 statement(s) run only by migrations left out (every call was in a transaction that changed the schema"),
            "{text}"
        );
        assert!(
            text.contains("\n  UPDATE \"api_check\" SET \"c4\" = $1"),
            "{text}"
        );
        assert!(!text.contains("\"c5\""), "{text}");
        assert!(
            text.contains("  ... and 2 more (--verbose lists every one)"),
            "{text}"
        );
        assert!(text.contains("migration 7"), "{text}");
        assert!(
            text.contains("40 transaction(s) (12 of them migrations', not written)"),
            "{text}"
        );
        assert!(
            text.contains("9 autocommit statement(s) (4 of them migrations')"),
            "{text}"
        );
        assert!(
            text.contains(
                "or ran on its connection before the tool recorded the migration there):"
            ),
            "{text}"
        );
        o.list_all = true;
        let md = render(&o, Format::Markdown);
        assert!(
            md.contains("- `UPDATE \"api_check\" SET \"c6\" = $1"),
            "{md}"
        );
        let v = to_wire(&o, Path::new("/p"));
        assert_eq!(v.migration_only.len(), 7);
        assert_eq!(v.dropped["migration"], 7);
        let relay = v.relay.unwrap();
        assert_eq!(relay.migration_transactions, 12);
        assert_eq!(relay.migration_autocommit_statements, 4);
    }
}
