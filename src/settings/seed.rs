//! `planck seed`'s settings: flags, `[seed]` of planck.toml and defaults,
//! merged and validated once, before anything touches the database.
//!
//! Override order, strongest first: the flag, then planck.toml's `[seed]`,
//! then the default. An invalid value names where it came from (`--scale`, or
//! `[seed] scale` in planck.toml), so a file's mistake is not reported as a flag's.
#![allow(clippy::result_large_err)] // see src/seed/mod.rs

use std::path::PathBuf;

use crate::cli::seed::SeedArgs;
use crate::error::{Error, Result};
use crate::output::Format;
use crate::seed::SeedOptions;
use crate::seed::planner::DEFAULT_SEED;
use crate::settings::Settings;

/// The largest `--scale` planck accepts: beyond it row counts overflow
/// long before a server could hold the rows.
pub const MAX_SCALE: f64 = 1e6;
/// The largest `--rows`.
pub const MAX_ROWS: u64 = 1_000_000_000_000;
/// The most worker threads (and connections).
pub const MAX_THREADS: usize = 64;

/// Everything `planck seed` needs, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedSettings {
    pub options: SeedOptions,
    pub format: Format,
}

/// Where a value came from, for error messages.
enum Origin<'a> {
    Flag(&'static str),
    File(&'a Settings, &'static str),
}

impl Origin<'_> {
    fn invalid(&self, value: &str, why: &str, hint: &str) -> Error {
        match self {
            Origin::Flag(flag) => Error::usage_hint(format!("invalid {flag} {value}: {why}"), hint),
            Origin::File(s, key) => Error::Config {
                path: s
                    .config_path
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("planck.toml")),
                line: None,
                column: None,
                message: format!("invalid `[seed] {key} = {value}`: {why}"),
                hint: Some(hint.to_string()),
            },
        }
    }
}

/// A flag's value, else planck.toml's, with where it came from.
fn pick<'a, T: Copy>(
    flag: Option<T>,
    flag_name: &'static str,
    file: Option<T>,
    key: &'static str,
    s: &'a Settings,
) -> Option<(T, Origin<'a>)> {
    match (flag, file) {
        (Some(v), _) => Some((v, Origin::Flag(flag_name))),
        (None, Some(v)) => Some((v, Origin::File(s, key))),
        (None, None) => None,
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

/// The spec file to use: `--spec`, `[seed] spec`, else the one `seeds/*.toml`.
fn spec_path(args: &SeedArgs, s: &Settings) -> Result<Option<PathBuf>> {
    if args.no_spec {
        return Ok(None);
    }
    if let Some(p) = args.spec.as_ref().or(s.config.seed.spec.as_ref()) {
        return Ok(Some(s.project_path(p)));
    }
    let dir = s.seeds_dir();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    match files.len() {
        0 => Ok(None),
        1 => Ok(files.pop()),
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

/// Whether `planck seed` with no flags seeds from a spec file (`[seed] spec`
/// or the one seeds/*.toml): what `planck check`'s default scale depends on.
pub fn uses_spec(s: &Settings) -> Result<bool> {
    Ok(spec_path(&SeedArgs::default(), s)?.is_some())
}

impl SeedSettings {
    /// Merges and validates; nothing here touches a database.
    /// What `planck check` seeds each side with: `[seed]` of planck.toml at
    /// check's `scale`, the rows of an earlier run replaced.
    /// `rows` (`[check] rows`) replaces `[seed] rows` as a flag would.
    pub fn for_check(scale: f64, rows: Option<u64>, s: &Settings) -> Result<SeedSettings> {
        let args = SeedArgs {
            scale: Some(scale),
            rows,
            truncate: true,
            ..SeedArgs::default()
        };
        SeedSettings::resolve(&args, s)
    }

    /// A spec at `scale`, replacing existing rows: what `planck demo` runs on
    /// the bundled example (`--scale 0.1` loads about 150 MB in a few seconds).
    pub fn for_spec(spec: std::path::PathBuf, scale: f64, s: &Settings) -> Result<SeedSettings> {
        SeedSettings::resolve(&SeedArgs::for_spec(spec, scale), s)
    }

    pub fn resolve(args: &SeedArgs, s: &Settings) -> Result<SeedSettings> {
        let file = &s.config.seed;
        let scale = match pick(args.scale, "--scale", file.scale, "scale", s) {
            Some((v, from)) => {
                if !(v.is_finite() && v > 0.0 && v <= MAX_SCALE) {
                    return Err(from.invalid(
                        &v.to_string(),
                        &format!("the scale must be a positive factor of at most {MAX_SCALE}"),
                        "use a positive factor such as 0.1 or 2",
                    ));
                }
                v
            }
            None => 1.0,
        };
        let rows = match pick(args.rows, "--rows", file.rows, "rows", s) {
            Some((v, from)) => {
                if v == 0 || v > MAX_ROWS {
                    return Err(from.invalid(
                        &v.to_string(),
                        &format!("the row count must be between 1 and {MAX_ROWS}"),
                        "exclude a table in the spec to leave it empty",
                    ));
                }
                Some(v)
            }
            None => None,
        };
        let threads = match pick(args.threads, "--threads", file.threads, "threads", s) {
            Some((v, from)) => {
                if v == 0 || v > MAX_THREADS {
                    return Err(from.invalid(
                        &v.to_string(),
                        &format!("the thread count must be between 1 and {MAX_THREADS}"),
                        "leave it out to use one per CPU",
                    ));
                }
                v
            }
            None => std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(1, MAX_THREADS),
        };
        let shard = args.shard.as_deref().map(parse_shard).transpose()?;
        if shard.is_some() && args.truncate {
            return Err(Error::usage_hint(
                "--truncate cannot be combined with --shard",
                "shards load disjoint slices into the same tables; empty them once before loading the shards \
                 (`planck migrate --fresh` on planck's managed cluster, or TRUNCATE them)",
            ));
        }
        if !args.forget.is_empty() && !args.restore {
            return Err(Error::usage_hint(
                "--forget works with --restore only",
                "run `planck seed --restore --forget NAME`",
            ));
        }
        // Read (and check) the spec now, so a missing or broken one is
        // reported before anything starts or touches a database.
        let spec = if args.restore {
            None
        } else {
            spec_path(args, s)?
                .map(|p| crate::seed::spec::SpecFile::load(&p))
                .transpose()?
        };
        Ok(SeedSettings {
            options: SeedOptions {
                spec,
                seed: args.seed.or(file.seed).unwrap_or(DEFAULT_SEED),
                scale,
                rows,
                threads,
                shard,
                truncate: args.truncate,
                dry_run: args.dry_run,
                all_or_nothing: args.all_or_nothing,
                generate_only: args.generate_only,
                restore: args.restore,
                forget: args.forget.clone(),
                create_partitions: !args.no_create_partitions,
                observed: if args.restore {
                    Default::default()
                } else {
                    observed(s)?
                },
            },
            format: s.format,
        })
    }
}

/// The `[observed]` table of the project's queries file (`[record] output`
/// of planck.toml, else queries/recorded.toml, as `planck record` writes
/// it); empty when the file is absent. A file that does not parse is an
/// error, with its line, rather than a recording silently ignored.
fn observed(s: &Settings) -> Result<crate::queries::Observed> {
    let path = match s.config.record.output.as_ref() {
        Some(p) => s.project_path(p),
        None => crate::queries::default_path(&s.queries_dir()),
    };
    if !path.is_file() {
        return Ok(Default::default());
    }
    Ok(crate::queries::QueryFile::load(&path)?.observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings(toml: Option<&str>) -> (tempfile::TempDir, Settings) {
        let dir = tempfile::tempdir().unwrap();
        if let Some(t) = toml {
            std::fs::write(dir.path().join("planck.toml"), t).unwrap();
        }
        let global = crate::cli::Cli::parse_from(["planck", "demo"]).global;
        let s = Settings::resolve(&global, &|_| None, dir.path()).unwrap();
        (dir, s)
    }

    fn args(v: &[&str]) -> SeedArgs {
        let mut a = vec!["planck", "seed"];
        a.extend_from_slice(v);
        match crate::cli::Cli::parse_from(a).command {
            crate::cli::Command::Seed(a) => a,
            _ => unreachable!(),
        }
    }

    fn err(a: &[&str], toml: Option<&str>) -> String {
        let (_d, s) = settings(toml);
        crate::error::render(&SeedSettings::resolve(&args(a), &s).unwrap_err())
    }

    /// Issue 8 section 5: `[seed] scale = -3` was reported as `invalid --scale`.
    #[test]
    fn a_bad_value_in_planck_toml_names_planck_toml_not_the_flag() {
        let e = err(&[], Some("[seed]\nscale = -3.0\n"));
        assert!(
            e.contains("planck.toml: invalid `[seed] scale = -3`"),
            "{e}"
        );
        assert!(!e.contains("--scale"), "{e}");
        let e = err(&[], Some("[seed]\nthreads = 0\n"));
        assert!(e.contains("invalid `[seed] threads = 0`"), "{e}");
        // The flag wins, and is named when it is the bad one.
        let e = err(&["--scale", "0"], Some("[seed]\nscale = 2.0\n"));
        assert!(e.starts_with("error: invalid --scale 0:"), "{e}");
    }

    /// Issue 8 section 2.2: every flag is validated before anything runs.
    #[test]
    fn zero_negative_nan_and_absurd_flags_are_refused() {
        for bad in [
            vec!["--scale", "0"],
            vec!["--scale=-1"],
            vec!["--scale", "NaN"],
            vec!["--scale", "inf"],
            vec!["--scale", "1e300"],
            vec!["--rows", "0"],
            vec!["--rows", "99999999999999999"],
            vec!["--threads", "0"],
            vec!["--threads", "100000"],
            vec!["--shard", "3/2"],
            vec!["--forget", "x"],
        ] {
            let e = err(&bad, None);
            assert!(e.starts_with("error: "), "{bad:?}: {e}");
            assert!(
                e.contains(bad[0].split('=').next().unwrap()),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn flags_beat_planck_toml_beats_defaults() {
        let (_d, s) = settings(Some("[seed]\nrows = 30\nseed = 99\nthreads = 3\n"));
        let r = SeedSettings::resolve(&args(&["--rows", "40"]), &s).unwrap();
        assert_eq!(r.options.rows, Some(40));
        assert_eq!(r.options.seed, 99);
        assert_eq!(r.options.threads, 3);
        assert_eq!(r.options.scale, 1.0);
        let (_d, s) = settings(None);
        let r = SeedSettings::resolve(&args(&[]), &s).unwrap();
        assert_eq!(r.options.seed, DEFAULT_SEED);
        assert_eq!(r.options.rows, None);
    }
}
