//! `planck replay`'s settings: its raw flags ([`ReplayArgs`]) resolved once
//! with the defaults into [`ReplaySettings`].
//!
//! Override order, strongest first: the flag, then `[replay]` (and
//! `[tenant]`) in planck.toml, then the built-in default.

use std::path::PathBuf;
use std::time::Duration;

use super::Settings;
use crate::cli::replay::{ReplayArgs, TenantModeArg, WeightsArg};
use crate::error::{Error, Result};
use crate::replay::options::{Options, TenantChoice, TenantMode};
use crate::replay::slo::Slo;
use crate::replay::workload::{self, Weights, Workload};
use crate::tenancy::TenantOptions;

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
