//! `planck stats`'s subcommands and their flags.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::wire::stats::ValuesMode;

#[derive(Debug, Clone, Subcommand)]
#[command(after_help = "Examples:
  planck stats capture --database-url \"$REPLICA_URL\"   # stats/production.json, text shaped
  planck stats capture --values keep -o stats/full.json # every value as production keeps it
  planck stats compare stats/production.json            # this database against the file
  planck stats setup-sql --role monitoring | psql \"$ADMIN_URL\"   # then capture with no SELECT

Exit codes: 0 done, 1 (compare) a statistic beyond its tolerance, 2 bad flags, a file that \
cannot be written or read, or no statistics this role may see, 3 database unreachable.")]
pub enum StatsCommand {
    /// Write the planner's statistics of every table (no row of any) into a file to commit
    #[command(
        long_about = "Write the planner's statistics of every table into a JSON file to commit \
and diff: per table its rows and pages (pg_class), per column the null fraction, width, distinct \
count, most common values and their frequencies, histogram bounds and correlation (pg_stats), \
extended statistics (pg_stats_ext), and the foreign keys between the tables, with a fingerprint \
of the schema. Only catalogs and statistics views are read, never a table's rows.

pg_stats shows a column only to a role that may SELECT it, whatever pg_read_all_stats says: to \
capture as a role that may not, run the SQL of `planck stats setup-sql` once as a superuser.",
        after_help = "Examples:
  planck stats capture --database-url \"$REPLICA_URL\"     # stats/production.json, values shaped
  planck stats capture --values none -o -                # counts and frequencies only, to stdout
  planck stats capture --values keep -o stats/full.json  # every value kept: keep it private

Exit codes: 0 written, 2 bad flags, a file that cannot be written, or no statistics this role \
may see (the message says why and what to grant), 3 database unreachable or missing."
    )]
    Capture(CaptureArgs),
    /// Compare this database's statistics with a file's: the largest deviations per table
    #[command(after_help = "Examples:
  planck stats compare stats/production.json               # the configured database
  planck stats compare stats/production.json --scale 0.1   # a copy seeded at a tenth of the rows
  planck stats compare stats/production.json --format json # the report as JSON

Run ANALYZE on the database first: the report compares the statistics it holds. Exit codes: 0 \
every statistic within its tolerance, 1 some beyond it, 2 a file that does not read, 3 database \
unreachable.")]
    Compare(CompareArgs),
    /// Print the SQL that lets a role read the statistics with no SELECT on any table
    #[command(after_help = "Examples:
  planck stats setup-sql --role monitoring | psql \"$ADMIN_URL\"   # once, as a superuser
  planck stats setup-sql > setup.sql                             # to read first

The SQL creates schema planck_stats with three security-definer functions returning pg_stats, \
pg_stats_ext and pg_stats_ext_exprs as their owner sees them; `planck stats capture` uses them \
when its role may call them.")]
    SetupSql(SetupArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CaptureArgs {
    /// The file to write (`-`: stdout) [default: stats/production.json in the project]
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// What the file keeps of production's values (docs/stats.md says what each reveals)
    #[arg(long, value_enum, default_value_t = ValuesMode::Shape)]
    pub values: ValuesMode,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// A file `planck stats capture` wrote
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The file's row counts times this (a copy seeded with `--scale`)
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub scale: f64,
}

#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// The role that captures: the SQL grants it the functions
    #[arg(long, value_name = "NAME")]
    pub role: Option<String>,
}
