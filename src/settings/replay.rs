//! `planck replay`'s settings: its raw flags ([`ReplayArgs`]) resolved once
//! with the defaults into [`ReplaySettings`].
//!
//! Override order: the flag, then the built-in default. (`[replay] slo` in
//! planck.toml needs a `[replay]` table in the config file's schema, which is
//! not there yet.)

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::Settings;
use crate::error::{Error, Result};
use crate::replay::run::Options;
use crate::replay::slo::Slo;
use crate::replay::workload::Weights;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum WeightsArg {
    /// Each unit as often as it ran in the recording
    #[default]
    Calls,
    /// Every unit equally often
    Uniform,
}

#[derive(Debug, Clone, Default, Args)]
#[command(
    after_help = "Every unit runs inside BEGIN .. ROLLBACK unless --commit: the locks are \
taken and held, the data is the same afterwards.\n\n\
Examples:\n  planck replay                                  # 1,2,4,...,64 clients, 10 s each\n  \
planck replay --ladder 1,4,16 --duration 3s   # a short ladder\n  \
planck replay --slo p95=300ms@16              # exit 1 when p95 at 16 clients is above 300 ms\n\n\
Exit codes: 0 ran (and the SLO held), 1 the SLO was missed, 2 usage or configuration error \
(a transaction naming an unknown statement: file:line), 3 database unreachable, 130/143 \
interrupted (the finished steps are reported)."
)]
pub struct ReplayArgs {
    /// Queries file [default: queries/recorded.toml of the project]
    #[arg(long, value_name = "PATH")]
    pub queries: Option<PathBuf>,

    /// Client counts of the steps
    #[arg(
        long,
        value_name = "N,N,..",
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64"
    )]
    pub ladder: Vec<u32>,

    /// Measured time of each step (e.g. 10s, 500ms)
    #[arg(long, value_name = "TIME", default_value = "10s")]
    pub duration: String,

    /// Time each step runs before it is measured
    #[arg(long, value_name = "TIME", default_value = "2s")]
    pub warmup: String,

    /// How each unit is weighted
    #[arg(long, value_enum, default_value_t = WeightsArg::Calls)]
    pub weights: WeightsArg,

    /// Also replay transactions recorded as rolled back
    #[arg(long)]
    pub include_rollbacks: bool,

    /// Commit instead of rolling back (refused on a database planck does not manage, unless --force)
    #[arg(long)]
    pub commit: bool,

    /// With --commit: write to a database planck does not manage
    #[arg(long)]
    pub force: bool,

    /// Replay statements whose effects a rollback does not undo (dblink, NOTIFY, ...)
    #[arg(long)]
    pub allow_side_effects: bool,

    /// statement_timeout of every unit
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub statement_timeout_ms: u64,

    /// Interval of the lock sampler
    #[arg(long, value_name = "MS", default_value_t = 20)]
    pub sample_ms: u64,

    /// Do not sample pg_stat_activity (no hotspots, no wait events)
    #[arg(long)]
    pub no_sampler: bool,

    /// Tables with more rows are not checksummed for the integrity line
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub verify_max_rows: u64,

    /// Worker threads [default: the machine's cores]
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Seed of the parameter draws
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// A latency objective, e.g. p95=300ms@16 (exit 1 when missed)
    #[arg(long, value_name = "pNN=TIME@CLIENTS")]
    pub slo: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ReplaySettings {
    pub queries: PathBuf,
    pub options: Options,
    pub weights: Weights,
    pub include_rollbacks: bool,
    pub slo: Option<Slo>,
}

/// `10s`, `500ms`, `2m`, or a bare number of seconds.
pub fn parse_duration(flag: &str, text: &str) -> Result<Duration> {
    let t = text.trim();
    let bad = || {
        Error::usage(format!(
            "{flag} {text}: expected a time such as 10s, 500ms or 2m"
        ))
    };
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !v.is_finite() || v < 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v * scale))
}

impl ReplaySettings {
    pub fn resolve(args: &ReplayArgs, settings: &Settings) -> Result<ReplaySettings> {
        let queries = match &args.queries {
            Some(p) => settings.project_path(p),
            None => crate::queries::default_path(&settings.queries_dir()),
        };
        let duration = parse_duration("--duration", &args.duration)?;
        if duration.is_zero() {
            return Err(Error::usage("--duration must be above 0"));
        }
        let slo = args
            .slo
            .as_deref()
            .map(Slo::parse)
            .transpose()
            .map_err(Error::usage)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(ReplaySettings {
            queries,
            options: Options {
                ladder: args.ladder.clone(),
                duration,
                warmup: parse_duration("--warmup", &args.warmup)?,
                statement_timeout_ms: args.statement_timeout_ms,
                sample_ms: args.sample_ms.max(1),
                sampler: !args.no_sampler,
                commit: args.commit,
                force: args.force,
                allow_side_effects: args.allow_side_effects,
                verify_max_rows: args.verify_max_rows,
                workers: args.workers.unwrap_or(cores).max(1),
                seed: args.seed,
                pool_rows: 1000,
            },
            weights: match args.weights {
                WeightsArg::Calls => Weights::Calls,
                WeightsArg::Uniform => Weights::Uniform,
            },
            include_rollbacks: args.include_rollbacks,
            slo,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("--d", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_duration("--d", "2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_duration("--d", "1m").unwrap(),
            Duration::from_secs(60)
        );
        assert!(parse_duration("--d", "-1s").is_err());
        assert!(parse_duration("--d", "soon").is_err());
    }
}
