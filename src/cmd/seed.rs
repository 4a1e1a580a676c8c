//! `planck seed`: fills the database with a large, skewed, deterministic dataset.
//!
//! Glue only: merges flags with `[seed]` of planck.toml (flag > planck.toml >
//! default), reads the spec, introspects the catalog, builds the plan
//! ([`crate::seed::plan`]), runs the load ([`crate::seed::load`]) and renders
//! the summary to stdout.
#![allow(clippy::result_large_err)] // see src/seed/mod.rs

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;

use crate::error::{Error, Result};
use crate::output::{self, Format};
use crate::seed::catalog;
use crate::seed::load::{self, LoadOptions};
use crate::seed::plan::{self, Options, Plan};
use crate::seed::spec::SpecFile;
use crate::settings::Settings;

#[derive(Debug, Clone, Default, Args)]
pub struct SeedArgs {
    /// Spec file [default: `[seed] spec` of planck.toml, else the one seeds/*.toml]
    #[arg(long, value_name = "PATH", conflicts_with = "no_spec")]
    pub spec: Option<PathBuf>,
    /// Ignore spec files: seed every table from the catalog alone
    #[arg(long)]
    pub no_spec: bool,
    /// RNG seed; the same seed gives byte-identical tables [default: 20260101]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Multiply every row count of the spec (0.1 for a quick run)
    #[arg(long, value_name = "FACTOR")]
    pub scale: Option<f64>,
    /// Rows of a table nothing else sizes (children get more, by fan-out) [default: 1000]
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
    /// Worker threads and connections [default: the number of CPUs]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Load only the K-th of N disjoint slices of every table (N machines load exactly what one would)
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Replace the rows of tables that are not empty
    #[arg(long)]
    pub truncate: bool,
    /// Print the plan (rows per table) and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Generate and encode every row, send nothing, report MB/s (profiling)
    #[arg(long, hide = true)]
    pub generate_only: bool,
}

impl SeedArgs {
    /// The bundled example's spec at `scale`, replacing existing rows: what
    /// `planck demo` runs (`--scale 0.1` loads about 150 MB in a few seconds).
    pub fn bundled(scale: f64) -> SeedArgs {
        SeedArgs {
            spec: Some(
                super::demo::bundled_dir()
                    .join("seeds")
                    .join("example.toml"),
            ),
            scale: Some(scale),
            truncate: true,
            ..SeedArgs::default()
        }
    }
}

fn parse_shard(s: &str) -> Result<(u64, u64)> {
    let bad = || {
        Error::usage_hint(
            format!("invalid --shard `{s}`"),
            "write K/N with 1 <= K <= N, e.g. --shard 2/4",
        )
    };
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

fn spec_file(args: &SeedArgs, settings: &Settings) -> Result<SpecFile> {
    if args.no_spec {
        return Ok(SpecFile::default());
    }
    if let Some(p) = args.spec.as_ref().or(settings.config.seed.spec.as_ref()) {
        return SpecFile::load(&settings.project_path(p));
    }
    let dir = settings.seeds_dir();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    match files.len() {
        0 => Ok(SpecFile::default()),
        1 => SpecFile::load(&files[0]),
        _ => Err(Error::usage_hint(
            format!(
                "{} holds {} specs: {}",
                dir.display(),
                files.len(),
                files
                    .iter()
                    .filter_map(|f| f.file_name())
                    .map(|f| f.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "choose one with --spec PATH or `[seed] spec` in planck.toml",
        )),
    }
}

/// Runs `planck seed` on the configured database.
pub async fn run(args: SeedArgs, settings: &Settings) -> Result<i32> {
    run_on(args, None, settings).await
}

/// [`run`] against a given database instead of the configured one (`planck
/// demo` seeds its own database): `run_on(SeedArgs::bundled(0.1), Some(&conn), settings)`.
pub async fn run_on(
    args: SeedArgs,
    conn: Option<&crate::db::ConnInfo>,
    settings: &Settings,
) -> Result<i32> {
    let scale = args.scale.or(settings.config.seed.scale).unwrap_or(1.0);
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::usage_hint(
            format!("invalid --scale {scale}"),
            "use a positive factor such as 0.1 or 2",
        ));
    }
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    if shard.is_some() && args.truncate {
        return Err(Error::usage_hint(
            "--truncate cannot be combined with --shard",
            "shards load disjoint slices into the same tables; empty them once before loading the shards",
        ));
    }
    let threads = args
        .threads
        .or(settings.config.seed.threads)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, 64);
    let sf = spec_file(&args, settings)?;
    let opts = Options {
        seed: args
            .seed
            .or(settings.config.seed.seed)
            .unwrap_or(plan::DEFAULT_SEED),
        scale,
        default_rows: args.rows.or(settings.config.seed.rows),
    };
    let conn = match conn {
        Some(c) => c.clone(),
        None => settings.conn().await?,
    };
    // A dry run writes nothing, not even the clean-up of an interrupted run.
    let pending = if args.dry_run || args.generate_only {
        load::pending_fks(&conn).await?
    } else {
        load::recover(&conn, threads, shard.is_some(), settings).await?
    };
    let mut client = conn.connect().await?;
    let cat = catalog::load(&mut client, &pending).await?;
    drop(client);
    let started = Instant::now();
    let plan = Arc::new(plan::build(&cat, &sf, &opts)?);
    settings.debug(&format!(
        "plan: {} tables, {} rows{}",
        plan.tables.len(),
        output::count(plan.total_rows()),
        sf.path
            .as_ref()
            .map(|p| format!(" from {}", p.display()))
            .unwrap_or_default()
    ));
    for tp in &plan.tables {
        let fks: Vec<String> = tp
            .fks
            .iter()
            .map(|f| {
                format!(
                    "{} -> {} ({})",
                    f.name,
                    plan.tables[f.parent].display,
                    f.pick.label()
                )
            })
            .collect();
        settings.debug(&format!(
            "  {}: {} rows, {}; {}",
            tp.display,
            tp.rows,
            tp.layout_name(),
            fks.join(", ")
        ));
    }
    if args.generate_only {
        let t0 = Instant::now();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::Other(e.into()))?;
        for (t, tp) in plan.tables.iter().enumerate() {
            let t1 = Instant::now();
            let cols: Vec<usize> = (0..tp.cols.len()).filter(|c| tp.cols[*c].include).collect();
            let bytes: usize = pool.install(|| {
                use rayon::prelude::*;
                (0..tp.rows.div_ceil(4096))
                    .into_par_iter()
                    .map(|i| {
                        let r = i * 4096..((i + 1) * 4096).min(tp.rows);
                        crate::seed::copy::encode_chunk(&plan, t, &cols, r, 1 << 20).len()
                    })
                    .sum()
            });
            let secs = t1.elapsed().as_secs_f64();
            settings.info(&format!(
                "{}: {} in {secs:.2} s, {:.0} MB/s",
                tp.display,
                output::bytes(bytes as u64),
                bytes as f64 / 1e6 / secs.max(1e-9)
            ));
        }
        settings.info(&format!("generated in {:.2} s", t0.elapsed().as_secs_f64()));
        return Ok(0);
    }
    if args.dry_run {
        render(settings, &plan, None, 0.0)?;
        settings.info("dry run: nothing written");
        return Ok(0);
    }
    let report = load::run(
        &conn,
        plan.clone(),
        &LoadOptions {
            truncate: args.truncate,
            threads,
            shard,
        },
        settings,
    )
    .await?;
    render(
        settings,
        &plan,
        Some(&report),
        started.elapsed().as_secs_f64(),
    )?;
    Ok(0)
}

/// One table of the JSON summary (wire type: changes only with `format_version`).
#[derive(serde::Serialize)]
struct JsonTable<'a> {
    table: &'a str,
    rows: u64,
    /// Heap and TOAST bytes; null in a dry run.
    data_bytes: Option<u64>,
    /// With indexes; null in a dry run.
    total_bytes: Option<u64>,
    seconds: Option<f64>,
}

#[derive(serde::Serialize)]
struct JsonSummary<'a> {
    format_version: u32,
    seed: u64,
    dry_run: bool,
    seconds: f64,
    load_seconds: Option<f64>,
    copy_seconds: Option<f64>,
    index_seconds: Option<f64>,
    vacuum_seconds: Option<f64>,
    rows: u64,
    data_bytes: Option<u64>,
    total_bytes: Option<u64>,
    tables: Vec<JsonTable<'a>>,
}

fn render(
    settings: &Settings,
    plan: &Plan,
    report: Option<&load::LoadReport>,
    secs: f64,
) -> Result<()> {
    let tables: Vec<JsonTable> = match report {
        Some(r) => r
            .tables
            .iter()
            .map(|t| JsonTable {
                table: &t.table,
                rows: t.rows,
                data_bytes: Some(t.data_bytes),
                total_bytes: Some(t.bytes),
                seconds: Some(t.seconds),
            })
            .collect(),
        None => plan
            .tables
            .iter()
            .map(|t| JsonTable {
                table: &t.display,
                rows: t.rows,
                data_bytes: None,
                total_bytes: None,
                seconds: None,
            })
            .collect(),
    };
    let rows: u64 = tables.iter().map(|t| t.rows).sum();
    let data: Option<u64> = report.map(|_| tables.iter().filter_map(|t| t.data_bytes).sum());
    let total: Option<u64> = report.map(|_| tables.iter().filter_map(|t| t.total_bytes).sum());
    let size = |b: Option<u64>| b.map(output::bytes).unwrap_or_else(|| "-".into());
    let text = match settings.format {
        Format::Json => {
            let v = JsonSummary {
                format_version: 1,
                seed: plan.seed,
                dry_run: report.is_none(),
                seconds: secs,
                load_seconds: report.map(|r| r.load_seconds),
                copy_seconds: report.map(|r| r.copy_seconds),
                index_seconds: report.map(|r| r.index_seconds),
                vacuum_seconds: report.map(|r| r.vacuum_seconds),
                rows,
                data_bytes: data,
                total_bytes: total,
                tables,
            };
            let mut s = serde_json::to_string_pretty(&v).map_err(|e| Error::Other(e.into()))?;
            s.push('\n');
            s
        }
        Format::Markdown => {
            let mut s = String::from("| table | rows | size | seconds |\n|---|---:|---:|---:|\n");
            for t in &tables {
                s.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    output::md_cell(t.table),
                    output::count(t.rows),
                    size(t.total_bytes),
                    t.seconds.map(|x| format!("{x:.1}")).unwrap_or_default()
                ));
            }
            s.push_str(&format!(
                "| **total** | {} | {} | {secs:.1} |\n",
                output::count(rows),
                size(total)
            ));
            s
        }
        Format::Table => {
            let mut t = output::table(&["table", "rows", "size", "seconds"]);
            for x in &tables {
                t.add_row(vec![
                    x.table.to_string(),
                    output::count(x.rows),
                    size(x.total_bytes),
                    x.seconds
                        .map(|v| format!("{v:.1}"))
                        .unwrap_or_else(|| "-".into()),
                ]);
            }
            t.add_row(vec![
                "total".to_string(),
                output::count(rows),
                size(total),
                if report.is_some() {
                    format!("{secs:.1}")
                } else {
                    "-".into()
                },
            ]);
            let mut s = format!("{t}\n");
            if let Some(r) = report {
                s.push_str(&format!(
                    "seeded {} rows ({} of table data, {} with indexes) in {secs:.1} s: \
                     load and index {:.1} s (COPY streaming {:.1} s), foreign keys {:.1} s, \
                     vacuum {:.1} s; seed {}\n",
                    output::count(rows),
                    size(data),
                    size(total),
                    r.load_seconds,
                    r.copy_seconds,
                    r.index_seconds,
                    r.vacuum_seconds,
                    plan.seed
                ));
            }
            s
        }
    };
    output::emit(text.as_bytes()).map_err(|e| Error::Other(e.into()))
}
