//! A seed stopped before its end (Ctrl-C, SIGTERM, SIGHUP, a kill, a lost
//! connection) is finished by the next `planck seed` to the very dataset an
//! uninterrupted run makes, whatever point it was stopped at.
//!
//! Every value is a pure function of (seed, table, column, row), and each
//! table loads in one transaction, so the dataset is decided by the plan
//! and a table is either wholly loaded or as it was. What the next run
//! must know is which rows are planck's and with which parameters they
//! were made: `planck.seed_run` ([`crate::bookkeeping::UnfinishedRun`])
//! holds, from before the first table loads until the run ends, the
//! tables the run writes, a digest of what makes its dataset ([`RunId`]),
//! the command that gives those parameters, and for each table whether
//! its load committed (marked inside that table's own transaction).
//!
//! The next run plans the recorded tables as the empty tables they were
//! (their rows are planck's, never the migrations' reference data, which
//! it still never touches), then compares its own digest:
//! - the same: it resumes. Tables marked loaded stay as they are (their
//!   foreign keys are restored and they are analyzed with the others); the
//!   others load. With or without `--truncate`: the dataset is the same.
//! - another, with `--truncate`: it replaces the recorded tables' rows with
//!   its own dataset, as `--truncate` does;
//! - another, without: a usage error (exit 2) naming the stopped run's
//!   command, to finish it, and this one's with `--truncate`, to replace it.

use sha2::{Digest, Sha256};

use crate::bookkeeping::UnfinishedRun;
use crate::error::{Error, Result};
use crate::output::Log;
use crate::seed::SeedOptions;
use crate::seed::planner::DEFAULT_SEED;
use crate::seed::row::plan::SeedPlan;

/// What identifies a run's dataset: the digest of everything that decides
/// it, and the command that gives the same parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId {
    pub fingerprint: String,
    pub command: String,
}

impl RunId {
    /// The identity of the run `opts` plans as `plan`. The digest covers
    /// the parameters (seed, scale, rows, the spec's text, the recorded
    /// `[observed]` literals), planck's version (a generator may change
    /// between versions), and the plan's tables with their row counts
    /// (which also catch a changed default or a reference table that
    /// gained rows).
    pub fn of(opts: &SeedOptions, plan: &SeedPlan) -> RunId {
        let mut text = format!(
            "planck {}\nseed {}\nscale {:?}\nrows {:?}\npartitions {}\nobserved {:?}\nspec {}\n",
            env!("CARGO_PKG_VERSION"),
            opts.seed,
            opts.scale,
            opts.rows,
            opts.create_partitions,
            opts.observed,
            opts.spec.as_ref().map_or("", |s| s.text.as_str()),
        );
        for t in &plan.tables {
            text.push_str(&format!("table {} {}\n", t.qualified, t.rows));
        }
        for u in &plan.skipped {
            text.push_str(&format!("skipped {}\n", u.table));
        }
        let digest = Sha256::digest(text.as_bytes());
        RunId {
            fingerprint: digest.iter().map(|b| format!("{b:02x}")).collect(),
            command: command(opts),
        }
    }
}

/// The `planck seed` command that gives `opts`' dataset: every parameter
/// that decides it written out (flags override planck.toml, so the command
/// means the same whatever the file says by then).
pub fn command(opts: &SeedOptions) -> String {
    let mut c = String::from("planck seed");
    match opts.spec.as_ref().and_then(|s| s.path.as_ref()) {
        Some(p) => {
            c.push_str(" --spec ");
            c.push_str(&shell_word(&p.display().to_string()));
        }
        None => c.push_str(" --no-spec"),
    }
    if opts.seed != DEFAULT_SEED {
        c.push_str(&format!(" --seed {}", opts.seed));
    }
    if opts.scale != 1.0 {
        c.push_str(&format!(" --scale {}", opts.scale));
    }
    if let Some(r) = opts.rows {
        c.push_str(&format!(" --rows {r}"));
    }
    if !opts.create_partitions {
        c.push_str(" --no-create-partitions");
    }
    c
}

/// `s` as one shell word (quoted when it holds anything but plain characters).
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What this run does about a stopped one (`unfinished`): Some(it) when
/// this run finishes it (the same dataset), None when there is none or this
/// run replaces its rows (`--truncate`); an error when its parameters
/// differ and nothing says to replace its rows.
pub fn decide<'a>(
    unfinished: Option<&'a UnfinishedRun>,
    id: &RunId,
    truncate: bool,
    log: Log,
) -> Result<Option<&'a UnfinishedRun>> {
    let Some(u) = unfinished else {
        return Ok(None);
    };
    if u.fingerprint == id.fingerprint {
        let loaded = u.loaded();
        log.info(&format!(
            "finishing the seed stopped before its end (`{}`): {} of its {} table(s) loaded already{}",
            u.command,
            loaded.len(),
            u.tables.len(),
            if loaded.is_empty() {
                String::new()
            } else {
                format!(" ({})", loaded.join(", "))
            }
        ));
        return Ok(Some(u));
    }
    if truncate {
        log.info(&format!(
            "replacing the rows of a seed stopped before its end, made with other parameters (`{}`)",
            u.command
        ));
        return Ok(None);
    }
    Err(other_parameters(u, id))
}

/// The refusal to mix a stopped seed's rows with another dataset.
fn other_parameters(u: &UnfinishedRun, id: &RunId) -> Error {
    let same_command = u.command == id.command;
    Error::usage_hint(
        format!(
            "a seed stopped before its end (`{}`) left {} of its {} table(s) loaded, and this \
             run's dataset differs from it{}",
            u.command,
            u.loaded().len(),
            u.tables.len(),
            if same_command {
                " (the spec, the schema or planck changed since)"
            } else {
                ""
            }
        ),
        if same_command {
            format!("run `{} --truncate` to replace its rows", id.command)
        } else {
            format!(
                "run `{}` to finish it, or `{} --truncate` to replace its rows with this run's dataset",
                u.command, id.command
            )
        },
    )
}

/// The oids of the tables of `writing` (`schema.table`, oid) the stopped
/// run loaded: this run keeps them as they are.
pub fn done(u: &UnfinishedRun, writing: &[(String, u32)], log: Log) -> Vec<u32> {
    let done: Vec<u32> = u
        .tables
        .iter()
        .filter(|(name, oid, loaded)| {
            *loaded && writing.iter().any(|w| w.0 == *name && w.1 == *oid)
        })
        .map(|t| t.1)
        .collect();
    log.debug(&format!(
        "{} table(s) kept from the stopped seed",
        done.len()
    ));
    done
}

/// A stop signal's error, completed with what to run next: the same
/// command finishes the seed (`recorded`), else only `--truncate` starts
/// it over.
pub fn next_step(e: Error, id: &RunId, recorded: bool) -> Error {
    match e {
        Error::Interrupted { message, signal } => Error::Interrupted {
            message: format!("{message}; {}", next_command(id, recorded)),
            signal,
        },
        other => other,
    }
}

/// What to run after a stop, as the interrupt message says it.
pub fn next_command(id: &RunId, recorded: bool) -> String {
    if recorded {
        format!(
            "to finish this seed, run `{}` (with or without --truncate, it keeps the tables \
             loaded so far and loads the others, to the same dataset)",
            id.command
        )
    } else {
        format!("to seed again, run `{} --truncate`", id.command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> SeedOptions {
        SeedOptions {
            spec: None,
            seed: DEFAULT_SEED,
            scale: 1.0,
            rows: Some(1_000_000),
            threads: 2,
            shard: None,
            truncate: false,
            dry_run: false,
            all_or_nothing: false,
            generate_only: false,
            restore: false,
            forget: Vec::new(),
            observed: Default::default(),
            create_partitions: true,
        }
    }

    #[test]
    fn the_command_writes_out_every_parameter_of_the_dataset() {
        assert_eq!(command(&opts()), "planck seed --no-spec --rows 1000000");
        let o = SeedOptions {
            seed: 7,
            scale: 0.5,
            rows: None,
            spec: Some(crate::seed::spec::SpecFile {
                path: Some("/p/my seeds/a.toml".into()),
                text: String::new(),
                spec: Default::default(),
            }),
            ..opts()
        };
        assert_eq!(
            command(&o),
            "planck seed --spec '/p/my seeds/a.toml' --seed 7 --scale 0.5"
        );
    }

    #[test]
    fn another_dataset_after_a_stop_is_refused_with_both_ways_out() {
        let u = UnfinishedRun {
            fingerprint: "a".into(),
            command: "planck seed --no-spec --rows 1000000".into(),
            tables: vec![
                ("public.users".into(), 1, true),
                ("public.tasks".into(), 2, false),
            ],
        };
        let id = RunId {
            fingerprint: "b".into(),
            command: "planck seed --no-spec --rows 1000".into(),
        };
        let e = decide(Some(&u), &id, false, Log::default()).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        insta::assert_snapshot!(crate::error::render(&e));
        assert_eq!(decide(Some(&u), &id, true, Log::default()).unwrap(), None);
        let same = RunId {
            fingerprint: "a".into(),
            ..id
        };
        assert_eq!(
            decide(Some(&u), &same, false, Log::default()).unwrap(),
            Some(&u)
        );
    }
}
