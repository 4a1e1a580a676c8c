//! `planck replay`'s flags, as clap parses them; resolved with `[replay]`
//! of `planck.toml` into `ReplaySettings` by [`crate::settings::replay`]
//! (which also builds the short ladders `planck demo` and `planck check
//! --replay` run: `ReplayArgs::short`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

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
interrupted (the finished steps are reported).",
    mut_args(super::output::help(
        "Write a result file instead of stdout, whole or not at all; repeatable. KIND is table, \
json or markdown; a bare PATH is the result in --format"
    ))
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

    #[command(flatten)]
    pub output: super::output::OutputArgs,
}
