//! The command line, as clap sees it: raw flags, no validation beyond syntax.
//! One file per command holds its clap struct; this one the top level
//! ([`Cli`], the global flags, the [`Command`] enum). Nothing here imports
//! the commands: [`crate::settings`] turns these into validated settings,
//! and [`crate::cmd`] runs each command with them.

pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod db;
pub(crate) mod demo;
pub(crate) mod explain;
pub(crate) mod init;
pub(crate) mod man;
pub(crate) mod migrate;
pub(crate) mod output;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod report;
pub mod seed;
pub(crate) mod stats;

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::output::Format;

/// planck: shows, before you merge, how your PostgreSQL statements behave on
/// production-sized data.
///
/// The usual loop, on a migrated database: `planck seed` fills it with a large
/// skewed dataset, `planck record -- <tests>` captures what your test suite
/// sends, `planck explain` plans every statement as a tenant under row-level
/// security and as admin, and fails CI on whole-table scans, unused indexes and
/// RLS traps. With no database configured, planck runs its own local
/// PostgreSQL under .planck/ (see `planck db`).
#[derive(Debug, Parser)]
#[command(
    name = "planck",
    version,
    long_version = LONG_VERSION,
    propagate_version = true,
    max_term_width = 100
)]
#[command(
    after_help = "Exit codes: 0 ok, 1 findings or regressions, 2 usage or configuration error, \
3 database unreachable or refused.\n\nTry `planck demo` for the whole pipeline on the bundled example."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// `planck --version`: the crate it was installed as (`cargo install
/// planck-pg`: the binary's name is not the crate's), then the PostgreSQL
/// majors planck runs on, from [`crate::cluster::MIN_MAJOR`] up to the newest
/// CI runs (the whole suite on 15 and 18, the end-to-end tests on 14, 16 and
/// 17). `main` adds [`found_postgres`] under it.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (crate ",
    env!("CARGO_PKG_NAME"),
    ")\nPostgreSQL servers 14, 15, 16, 17 and 18 (the managed cluster uses the server binaries it \
finds on PATH, in /usr/lib/postgresql, or in PLANCK_PG_BINDIR)"
);

/// The line `planck --version` ends with: the server binaries the managed
/// cluster would run on this machine, as [`crate::cluster::find_bindir`]
/// picks them (`pg_bindir`: PLANCK_PG_BINDIR), with their version, or why
/// there are none. Found when `--version` is asked for, not at every start
/// (it runs `postgres --version`), so it is not part of clap's fixed text.
pub fn found_postgres(pg_bindir: Option<&Path>) -> String {
    let found = crate::cluster::find_bindir(pg_bindir)
        .and_then(|dir| crate::cluster::server_version(&dir).map(|version| (version, dir)));
    match found {
        Ok((version, dir)) => format!(
            "PostgreSQL found: {version} in {}{}",
            dir.display(),
            if pg_bindir.is_some() {
                " (PLANCK_PG_BINDIR)"
            } else {
                ""
            }
        ),
        Err(e) => format!("PostgreSQL found: none ({e})"),
    }
}

/// The heading global flags are listed under in every `--help`.
const GLOBAL: &str = "Global options";

#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Database to work on [env: PLANCK_DATABASE_URL, DATABASE_URL, PGHOST...]
    ///
    /// A postgres:// URL or a libpq key=value string. Without one (and without
    /// `[database] url` in planck.toml) planck uses its managed local cluster.
    #[arg(long, global = true, value_name = "URL", help_heading = GLOBAL)]
    pub database_url: Option<String>,

    /// Config file [default: planck.toml, searched from the current directory up]
    #[arg(long, global = true, value_name = "PATH", help_heading = GLOBAL)]
    pub config: Option<PathBuf>,

    /// Output format of results (stdout)
    #[arg(long, global = true, value_enum, default_value_t = Format::Table, help_heading = GLOBAL)]
    pub format: Format,

    /// Print nothing but results and errors
    #[arg(short, long, global = true, conflicts_with = "verbose", help_heading = GLOBAL)]
    pub quiet: bool,

    /// Say what planck does, step by step (on stderr)
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage the local PostgreSQL planck runs under .planck/
    #[command(subcommand)]
    #[command(
        long_about = "Manage the local PostgreSQL planck runs under .planck/ of the project \
(the folder of planck.toml, else the current directory). Every other command starts it on demand \
when no database is configured. These commands act on that local server only: --database-url \
and DATABASE_URL do not apply to them."
    )]
    Db(db::DbCommand),
    /// Apply migrations/*.sql in file-name order, each in its own transaction
    #[command(after_help = "Examples:
  planck migrate                  # apply the files of migrations/ not applied yet
  planck migrate --fresh          # drop every object and apply them all again (a dev database)
  planck migrate --format json    # what each file created, as JSON")]
    Migrate(migrate::MigrateArgs),
    /// Fill the database with a large, skewed, deterministic dataset
    #[command(after_help = "Examples:
  planck migrate && planck seed          # the one seeds/*.toml spec, else the schema alone
  planck seed --scale 0.1                # a tenth of every row count of the spec
  planck seed --no-spec --rows 500       # ignore specs; 500 rows per root table
  planck seed --truncate --seed 7        # replace existing rows, another deterministic dataset
  planck seed --shard 2/4                # the 2nd of 4 disjoint slices (4 machines, one load)

Exit codes: 0 loaded, 2 bad spec or flags (file:line:col), 3 database unreachable or connection \
lost, 130 interrupted (every table left fully loaded or as it was, every index restored).")]
    Seed(seed::SeedArgs),
    /// Capture the statements a test command sends, into queries/
    #[command(
        after_help = "The command runs with DATABASE_URL, PLANCK_DATABASE_URL and \
PGHOST/PGPORT/PGUSER/PGDATABASE (and PGPASSWORD) pointing at the target database, so your \
test suite talks to it; its output goes to stderr.

Examples:
  planck record -- npm test               # record what the suite sends
  planck record -- tools/example-app      # the bundled example's test run
  planck record                           # no command: what pg_stat_statements holds now
  planck record --prune -- cargo test     # also drop statements the suite no longer sends

Exit codes: 0 recorded, 1 recorded but the command failed or was killed, 2 bad input \
(command not found, pg_stat_statements missing, broken queries file), 3 database unreachable."
    )]
    Record(record::RecordArgs),
    /// Plan every recorded statement as tenant and as admin; flag bad plans
    Explain(explain::ExplainArgs),
    /// Replay the recorded mix under a concurrency ladder; name the lock hotspots
    Replay(replay::ReplayArgs),
    /// Capture production's planner statistics (not a row) into a file; compare with it
    #[command(subcommand)]
    Stats(stats::StatsCommand),
    /// Write the DBA's review (self-contained HTML) and CI outputs from explain's and replay's JSON
    Report(report::ReportArgs),
    /// Run the whole pipeline on the bundled example
    #[command(after_help = "Examples:
  planck demo                     # migrate, record, seed, explain, replay and review the example
  planck demo --scale 0.1         # a tenth of the example's rows: a quicker run
  planck demo --replay-seconds 0  # everything but the replay")]
    Demo(demo::DemoArgs),
    /// The pre-merge gate: migrate, seed and explain on databases of its own; exit 1 on what [check] fail_on names
    Check(check::CheckArgs),
    /// Write a commented planck.toml with every key and its default
    #[command(after_help = "Examples:
  planck init                     # planck.toml in the current directory
  planck init --path ci/planck.toml --force   # another place, replacing what is there")]
    Init(init::InitArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish)
    #[command(after_help = "Examples:
  planck completions bash > ~/.local/share/bash-completion/completions/planck
  planck completions zsh > ~/.zfunc/_planck     # with fpath+=(~/.zfunc) before compinit in ~/.zshrc
  planck completions fish > ~/.config/fish/completions/planck.fish")]
    Completions(completions::CompletionsArgs),
    /// Print planck's man page, or write one per command into a folder
    #[command(after_help = "Examples:
  planck man | man -l -                            # read it now
  planck man --out-dir ~/.local/share/man/man1     # planck.1 and planck-<command>.1, for `man planck-seed`")]
    Man(man::ManArgs),
    /// The bundled example's test run (record it with `planck record -- planck example-app`)
    #[command(hide = true)]
    ExampleApp(demo::ExampleAppArgs),
}
