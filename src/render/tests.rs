//! The results rendered here whose domain keeps no builder of its own
//! (`planck stats`' capture summary and fidelity report); the others are
//! tested beside the code that builds their wire type
//! (`migrate::report`, `record::report`, `seed::summary`).

use crate::output::{self, Format, Render};
use crate::wire::seed::ShardSpread;
use crate::wire::stats::{
    CaptureSummary, Deviation, FORMAT_VERSION, FidelityReport, TableFidelity, ValuesMode,
};

fn dev(column: Option<&str>, stat: &str, e: f64, a: f64, d: f64, tol: f64) -> Deviation {
    Deviation {
        column: column.map(str::to_string),
        statistic: stat.into(),
        expected: e,
        actual: a,
        deviation: d,
        tolerance: tol,
        within: d.abs() <= tol,
    }
}

fn rendered(r: &impl Render, format: Format) -> String {
    let mut out = Vec::new();
    output::render(&mut out, r, format).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_fidelity_report_reads_as_a_table_and_in_markdown() {
    let report = FidelityReport {
        format_version: FORMAT_VERSION,
        same_schema: false,
        drift: vec!["only in the database: column public.orders.note".into()],
        tables: vec![TableFidelity {
            table: "public.orders".into(),
            expected_rows: 10000.0,
            actual_rows: 9870.0,
            deviations: vec![
                dev(Some("status"), "mcv_freq[1]", 0.95, 0.91, -0.04, 0.02),
                dev(None, "rows", 10000.0, 9870.0, -0.013, 0.02),
                dev(Some("created"), "correlation", 1.0, 0.97, -0.03, 0.1),
            ],
        }],
        beyond_tolerance: 1,
    };
    insta::assert_snapshot!("fidelity_table", rendered(&report, Format::Table));
    insta::assert_snapshot!("fidelity_markdown", rendered(&report, Format::Markdown));
}

#[test]
fn the_capture_summary_names_the_file_and_the_tables_without_statistics() {
    let summary = CaptureSummary {
        format_version: FORMAT_VERSION,
        file: "stats/production.json".into(),
        values: ValuesMode::Shape,
        source: "functions".into(),
        tables: 3,
        columns_with_statistics: 14,
        extended_statistics: 1,
        not_analyzed: vec!["audit.events".into()],
        schema_fingerprint: "bd4642fa".into(),
    };
    insta::assert_snapshot!("capture_summary", rendered(&summary, Format::Table));
}

/// A distributed table's line names its heaviest shard and worker with
/// their shares, beside what an even spread would give.
#[test]
fn a_distributed_tables_spread_over_its_shards_is_one_line() {
    let s = ShardSpread {
        shards: 4,
        heaviest_shard: 102_008,
        heaviest_worker: "10.0.0.2:5432".into(),
        heaviest_rows: 500,
        heaviest_bytes: 40_000,
        rows: 1_000,
        bytes: 100_000,
        workers: vec![
            ("10.0.0.2:5432".into(), 60_000),
            ("10.0.0.3:5432".into(), 40_000),
        ],
    };
    assert_eq!(
        super::text::shard_line("ads", &s),
        "ads: 4 shards on 2 worker(s); the heaviest, 102008 on 10.0.0.2:5432, holds 50.0 % \
         of the rows and 40.0 % of the bytes (an even spread: 25.0 %); bytes per worker: \
         10.0.0.2:5432 60 %, 10.0.0.3:5432 40 %"
    );
}
