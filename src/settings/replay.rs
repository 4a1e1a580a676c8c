//! `planck replay`'s settings: its raw flags ([`ReplayArgs`]) resolved once
//! with the defaults into [`ReplaySettings`].
//!
//! Override order, strongest first: the flag, then `[replay]` (and
//! `[tenant]`) in planck.toml, then the built-in default.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::Settings;
use crate::error::{Error, Result};
use crate::replay::options::{Options, TenantChoice, TenantMode};
use crate::replay::slo::Slo;
use crate::replay::workload::{self, Weights, Workload};
use crate::tenancy::TenantOptions;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum WeightsArg {
    /// Each unit as often as it ran in the recording
    #[default]
    Calls,
    /// Every unit equally often
    Uniform,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum TenantModeArg {
    /// Tenant-scoped work runs as the heaviest tenant (production's worst case)
    #[default]
    Heavy,
    /// Tenants drawn with the data's own skew
    Spread,
}

#[derive(Debug, Clone, Default, Args)]
#[command(
    after_help = "Every unit runs inside BEGIN .. ROLLBACK unless --commit: the locks are \
taken and held, the data is the same afterwards. Every option but --queries, --commit, --force, \
--allow-side-effects, --include-rollbacks, --no-sampler and --output also reads from [replay] in \
planck.toml; flags win.\n\n\
Examples:\n  planck replay                                  # 1,2,4,...,64 clients, 10 s each\n  \
planck replay --ladder 1,4,16 --duration 3s   # a short ladder\n  \
planck replay --rate --ladder 100,200 --clients 16   # open loop: 100 then 200 units/s\n  \
planck replay --slo p95=300ms@16              # exit 1 when p95 at 16 clients is above 300 ms\n  \
planck replay --format json -o r.json         # the JSON `planck report --replay` reads\n\n\
Exit codes: 0 ran (and the SLO held), 1 the SLO was missed, 2 usage or configuration error \
(a transaction naming an unknown statement: file:line), 3 database unreachable, 130/143 \
interrupted (the finished steps are reported)."
)]
pub struct ReplayArgs {
    /// Queries file [default: queries/recorded.toml of the project]
    #[arg(long, value_name = "PATH")]
    pub queries: Option<PathBuf>,

    /// Client counts of the steps (with --rate: units per second) [default: 1,2,4,8,16,32,64]
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    pub ladder: Option<Vec<u32>>,

    /// Measured time of each step (e.g. 10s, 500ms) [default: 10s]
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,

    /// Time each step runs before it is measured [default: 2s]
    #[arg(long, value_name = "TIME")]
    pub warmup: Option<String>,

    /// How each unit is weighted [default: calls]
    #[arg(long, value_enum)]
    pub weights: Option<WeightsArg>,

    /// Open loop: units start at the ladder's rates (per second) over --clients
    /// connections; latency counts from each unit's intended start
    #[arg(long)]
    pub rate: bool,

    /// Connections of the open loop (--rate) [default: 16]
    #[arg(long, value_name = "N")]
    pub clients: Option<u32>,

    /// An application pool of N connections shared by the clients; the wait
    /// for one is measured apart from statement time
    #[arg(long, value_name = "N")]
    pub pool: Option<u32>,

    /// Runs of each step, merged (the noise estimate gets more seconds) [default: 1]
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,

    /// Which tenant tenant-scoped work runs as [default: heavy]
    #[arg(long, value_enum)]
    pub tenant_mode: Option<TenantModeArg>,

    /// Run tenant-scoped work as this tenant [default: [tenant] id, else by --tenant-mode]
    #[arg(long, value_name = "ID")]
    pub tenant_id: Option<String>,

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

    /// statement_timeout of every unit [default: 30000]
    #[arg(long, value_name = "MS")]
    pub statement_timeout_ms: Option<u64>,

    /// Interval of the lock sampler [default: 20]
    #[arg(long, value_name = "MS")]
    pub sample_ms: Option<u64>,

    /// Do not sample pg_stat_activity (no hotspots, no wait events)
    #[arg(long)]
    pub no_sampler: bool,

    /// Tables with more rows are not checksummed for the integrity line [default: 100000]
    #[arg(long, value_name = "N")]
    pub verify_max_rows: Option<u64>,

    /// Worker threads [default: the machine's cores]
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Seed of the parameter draws
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// A latency objective, e.g. p95=300ms@16 (exit 1 when missed)
    #[arg(long, value_name = "pNN=TIME@CLIENTS")]
    pub slo: Option<String>,

    /// Write a result file instead of stdout, whole or not at all; repeatable. KIND is table,
    /// json or markdown; a bare PATH is the result in --format
    #[arg(short, long, value_name = "[KIND=]PATH")]
    pub output: Vec<crate::output::target::Target>,
}

impl ReplayArgs {
    /// What `planck demo` runs: a short ladder on its own queries file. A
    /// statement is cut at the step's length (5 s at least), so a bulk job
    /// of the recording (the example's `UPDATE items SET status ...` over
    /// the whole table, 20 s under load) counts as a statement timeout
    /// instead of holding the demo for half a minute per step.
    pub fn short(queries: impl Into<PathBuf>, ladder: &[u32], duration: &str) -> ReplayArgs {
        let step_ms = parse_duration("--duration", duration)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        ReplayArgs {
            queries: Some(queries.into()),
            ladder: Some(ladder.to_vec()),
            duration: Some(duration.to_string()),
            statement_timeout_ms: Some(step_ms.max(5000)),
            warmup: Some("0".into()),
            seed: 1,
            ..Default::default()
        }
    }
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
    // Past what a Duration holds (`1e30s`) is as wrong as a word.
    Duration::try_from_secs_f64(v * scale).map_err(|_| bad())
}

impl ReplaySettings {
    /// The workload these settings name: the queries file read, with its
    /// weights and whether rolled-back transactions run.
    pub fn workload(&self) -> Result<Workload> {
        crate::queries::QueryFile::load_required(&self.queries)?;
        let (statements, transactions) = workload::load(&self.queries)?;
        Ok(Workload::new(
            statements,
            transactions,
            self.weights,
            self.include_rollbacks,
        ))
    }

    /// Override order, strongest first: the flag, `[replay]` (and `[tenant]
    /// id`) in planck.toml, the built-in default.
    /// A short ladder on `queries` ([`ReplayArgs::short`]), `[replay]` of
    /// planck.toml for the rest: what `planck demo` runs, and `planck check
    /// --replay` (which also lets the recorded writes run: they are rolled
    /// back on the check's own databases).
    pub fn for_ladder(
        queries: impl Into<PathBuf>,
        ladder: &[u32],
        duration: &str,
        allow_side_effects: bool,
        settings: &Settings,
    ) -> Result<ReplaySettings> {
        let mut args = ReplayArgs::short(queries, ladder, duration);
        args.allow_side_effects = allow_side_effects;
        ReplaySettings::resolve(&args, settings)
    }

    pub fn resolve(args: &ReplayArgs, settings: &Settings) -> Result<ReplaySettings> {
        let cfg = &settings.config.replay;
        let queries = match &args.queries {
            Some(p) => settings.project_path(p),
            None => crate::queries::default_path(&settings.queries_dir()),
        };
        let text = |flag: &Option<String>, key: &Option<String>, default: &str| {
            flag.clone()
                .or_else(|| key.clone())
                .unwrap_or_else(|| default.to_string())
        };
        let duration = parse_duration("--duration", &text(&args.duration, &cfg.duration, "10s"))?;
        if duration.is_zero() {
            return Err(Error::usage("--duration must be above 0"));
        }
        let warmup = parse_duration("--warmup", &text(&args.warmup, &cfg.warmup, "2s"))?;
        let slo = args
            .slo
            .as_deref()
            .or(cfg.slo.as_deref())
            .map(Slo::parse)
            .transpose()
            .map_err(Error::usage)?;
        let weights = match (args.weights, cfg.weights.as_deref()) {
            (Some(WeightsArg::Calls), _) | (None, None | Some("calls")) => Weights::Calls,
            (Some(WeightsArg::Uniform), _) | (None, Some("uniform")) => Weights::Uniform,
            (None, Some(other)) => {
                return Err(Error::usage(format!(
                    "[replay] weights = \"{other}\" in planck.toml: expected \"calls\" or \"uniform\""
                )));
            }
        };
        let tenant_mode = match (args.tenant_mode, cfg.tenant_mode.as_deref()) {
            (Some(TenantModeArg::Heavy), _) | (None, None | Some("heavy")) => TenantMode::Heavy,
            (Some(TenantModeArg::Spread), _) | (None, Some("spread")) => TenantMode::Spread,
            (None, Some(other)) => {
                return Err(Error::usage(format!(
                    "[replay] tenant_mode = \"{other}\" in planck.toml: expected \"heavy\" or \"spread\""
                )));
            }
        };
        let (tenant_id, id_source) = match (&args.tenant_id, &settings.config.tenant.id) {
            (Some(id), _) => (Some(id.clone()), Some("--tenant-id")),
            (None, Some(id)) => (Some(id.clone()), Some("[tenant] id in planck.toml")),
            (None, None) => (None, None),
        };
        let rate = args.rate || cfg.rate.unwrap_or(false);
        let ladder = args
            .ladder
            .clone()
            .or_else(|| cfg.ladder.clone())
            .unwrap_or_else(|| vec![1, 2, 4, 8, 16, 32, 64]);
        if !rate && args.clients.is_some() {
            // A flag that would change nothing: the closed loop's clients
            // are its ladder's steps.
            return Err(Error::usage_hint(
                "--clients sets the open loop's connections and goes with --rate",
                "the closed loop runs each --ladder step with that many clients (--ladder 1,4,16); \
                 add --rate for an open loop over --clients connections",
            ));
        }
        let clients = args.clients.or(cfg.clients).unwrap_or(16);
        if rate && clients == 0 {
            return Err(Error::usage("--clients must be above 0"));
        }
        let pool = args.pool.or(cfg.pool);
        if pool == Some(0) {
            return Err(Error::usage("--pool must be above 0"));
        }
        let repeat = args.repeat.or(cfg.repeat).unwrap_or(1);
        if repeat == 0 {
            return Err(Error::usage("--repeat must be above 0"));
        }
        // Checked before anything runs: an SLO at a step the ladder lacks
        // was found only after the whole run (closed loop: the ladder is
        // client counts; with --rate every step runs --clients).
        if let Some(slo) = &slo {
            let steps: Vec<u32> = if rate { vec![clients] } else { ladder.clone() };
            if !steps.contains(&slo.concurrency) {
                return Err(Error::usage_hint(
                    format!(
                        "--slo names {} clients, a step the ladder does not have ({})",
                        slo.concurrency,
                        if rate {
                            format!("--rate runs every step at --clients {clients}")
                        } else {
                            format!("--ladder {}", crate::replay::ladder::ladder_text(&ladder))
                        }
                    ),
                    "write the SLO at a step the ladder runs, e.g. --slo p95=300ms@N with N one of its client counts",
                ));
            }
        }
        let statement_timeout_ms = args
            .statement_timeout_ms
            .or(cfg.statement_timeout_ms)
            .unwrap_or(30_000);
        // The server's statement_timeout is an int of milliseconds.
        if statement_timeout_ms > i32::MAX as u64 {
            return Err(Error::usage_hint(
                format!(
                    "--statement-timeout-ms {statement_timeout_ms} is more than the server takes (2147483647, about 24 days)"
                ),
                "the statement timeout is in milliseconds: 30 s is 30000",
            ));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(ReplaySettings {
            queries,
            options: Options {
                ladder,
                duration,
                warmup,
                statement_timeout_ms,
                sample_ms: args.sample_ms.or(cfg.sample_ms).unwrap_or(20).max(1),
                sampler: !args.no_sampler,
                commit: args.commit,
                force: args.force,
                allow_side_effects: args.allow_side_effects,
                verify_max_rows: args
                    .verify_max_rows
                    .or(cfg.verify_max_rows)
                    .unwrap_or(100_000),
                workers: args.workers.or(cfg.workers).unwrap_or(cores).max(1),
                seed: args.seed,
                pool_rows: 1000,
                rate: rate.then_some(clients),
                pool,
                repeat,
                tenant: TenantChoice {
                    mode: tenant_mode,
                    options: TenantOptions {
                        role: settings.config.tenant.role.clone(),
                        setting: settings.config.tenant.setting.clone(),
                        id: tenant_id,
                        id_source,
                    },
                },
            },
            weights,
            include_rollbacks: args.include_rollbacks,
            slo,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's short ladder cuts a statement at the step's length, 5 s at least.
    #[test]
    fn the_demos_short_ladder_times_statements_out_at_the_step() {
        let a = ReplayArgs::short("q.toml", &[1, 4, 16], "3s");
        assert_eq!(a.statement_timeout_ms, Some(5000));
        let a = ReplayArgs::short("q.toml", &[1], "8s");
        assert_eq!(a.statement_timeout_ms, Some(8000));
    }

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
        // Past what a Duration can hold: an error, not a panic.
        assert!(parse_duration("--d", "1e30s").is_err());
    }
}
