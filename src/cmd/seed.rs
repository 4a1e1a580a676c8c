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

/// Runs `planck seed`. From `planck demo`:
/// `cmd::seed::run(SeedArgs { spec: Some(path), scale: Some(0.05), truncate: true, ..Default::default() }, &settings)`.
pub async fn run(args: SeedArgs, settings: &Settings) -> Result<i32> {
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
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, 64);
    let sf = spec_file(&args, settings)?;
    let opts = Options {
        seed: args
            .seed
            .or(settings.config.seed.seed)
            .unwrap_or(plan::DEFAULT_SEED),
        scale,
        default_rows: args.rows,
    };
    let conn = settings.conn().await?;
    let pending = load::recover(&conn, threads, settings).await?;
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
            .map(|f| format!("{}->{} {:?}", f.name, plan.tables[f.parent].display, f.pick))
            .collect();
        settings.debug(&format!(
            "  {}: {} rows, {:?}; {}",
            tp.display,
            tp.rows,
            tp.layout_name(),
            fks.join(", ")
        ));
    }
    if args.dry_run {
        render(settings, &plan, None, 0.0)?;
        return Ok(0);
    }
    let reports = load::run(
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
        Some(&reports),
        started.elapsed().as_secs_f64(),
    )?;
    Ok(0)
}

fn render(
    settings: &Settings,
    plan: &Plan,
    reports: Option<&[load::TableReport]>,
    secs: f64,
) -> Result<()> {
    let rows: Vec<(String, u64, Option<u64>)> = match reports {
        Some(r) => r
            .iter()
            .map(|t| (t.table.clone(), t.rows, Some(t.bytes)))
            .collect(),
        None => plan
            .tables
            .iter()
            .map(|t| (t.display.clone(), t.rows, None))
            .collect(),
    };
    let total_rows: u64 = rows.iter().map(|r| r.1).sum();
    let total_bytes: u64 = rows.iter().filter_map(|r| r.2).sum();
    let text = match settings.format {
        Format::Json => {
            let v = serde_json::json!({
                "format_version": 1,
                "seed": plan.seed,
                "dry_run": reports.is_none(),
                "seconds": secs,
                "tables": rows.iter().map(|(t, r, b)| serde_json::json!({"table": t, "rows": r, "bytes": b})).collect::<Vec<_>>(),
                "total_rows": total_rows,
                "total_bytes": total_bytes,
            });
            format!("{v:#}\n")
        }
        Format::Markdown => {
            let mut s = String::from("| table | rows | size |\n|---|---:|---:|\n");
            for (t, r, b) in &rows {
                s.push_str(&format!(
                    "| {} | {} | {} |\n",
                    output::md_cell(t),
                    output::count(*r),
                    b.map(output::bytes).unwrap_or_default()
                ));
            }
            s.push_str(&format!(
                "| **total** | {} | {} |\n",
                output::count(total_rows),
                output::bytes(total_bytes)
            ));
            s
        }
        Format::Table => {
            let mut t = output::table(&["table", "rows", "size"]);
            for (n, r, b) in &rows {
                t.add_row(vec![
                    n.clone(),
                    output::count(*r),
                    b.map(output::bytes).unwrap_or_else(|| "-".into()),
                ]);
            }
            t.add_row(vec![
                "total".to_string(),
                output::count(total_rows),
                if reports.is_some() {
                    output::bytes(total_bytes)
                } else {
                    "-".into()
                },
            ]);
            let mut s = format!("{t}\n");
            if reports.is_some() {
                s.push_str(&format!(
                    "seeded {} rows ({}) in {:.1} s, seed {}\n",
                    output::count(total_rows),
                    output::bytes(total_bytes),
                    secs,
                    plan.seed
                ));
            }
            s
        }
    };
    output::emit(text.as_bytes()).map_err(|e| Error::Other(e.into()))
}
