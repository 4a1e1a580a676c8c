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
use crate::catalog::schema::Schema;
use crate::error::{Error, Result};
use crate::output::Log;
use crate::seed::SeedOptions;
use crate::seed::planner::DEFAULT_SEED;
use crate::seed::reference::{Grown, Kept};
use crate::seed::row::plan::SeedPlan;
use crate::seed::spec::SpecFile;

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
    pub fn of(opts: &SeedOptions, plan: &SeedPlan, grown: &[GrownRecord]) -> RunId {
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
        for g in grown {
            text.push_str(&format!("grown {} {} {}\n", g.table, g.last, g.kept));
        }
        let digest = Sha256::digest(text.as_bytes());
        // The grown tables ride along in the record (read back by
        // [`grown_of`]): a run that finishes this one grows them from the
        // same key, whatever rows they hold by then.
        let mut fingerprint: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        for g in grown {
            fingerprint.push_str(&format!("\ngrown {} {} {}", g.last, g.kept, g.table));
        }
        RunId {
            fingerprint,
            command: command(opts),
        }
    }
}

/// A table a run grows past the rows the migrations wrote into it (see
/// [`crate::seed::reference::Grown`]), as the run's record keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrownRecord {
    /// `schema.table`.
    pub table: String,
    /// The largest key the migrations' rows hold: new keys start past it.
    pub last: i64,
    /// Rows it held before the seed.
    pub kept: u64,
}

impl GrownRecord {
    /// The grown tables of `kept`, as a run records them.
    pub fn of(kept: &Kept, cat: &Schema) -> Vec<GrownRecord> {
        kept.grown
            .iter()
            .map(|g| {
                let t = &cat.tables[g.table];
                GrownRecord {
                    table: format!("{}.{}", t.schema, t.name),
                    last: g.last,
                    kept: g.kept,
                }
            })
            .collect()
    }
}

/// The tables the stopped run `u` grew, read back from its record.
pub fn grown_of(u: &UnfinishedRun) -> Vec<GrownRecord> {
    u.fingerprint
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut p = l.strip_prefix("grown ")?.splitn(3, ' ');
            Some(GrownRecord {
                last: p.next()?.parse().ok()?,
                kept: p.next()?.parse().ok()?,
                table: p.next()?.to_string(),
            })
        })
        .collect()
}

/// Plans each table the stopped run grew (`records`) as it grew it: its
/// rows kept, new keys past the same `last`, however many rows its
/// committed load added since (which [`Kept::decide`] would take for
/// reference data, or for the migrations' rows). `original`: the spec
/// before `decide` sized the kept tables, whose entry such a table gets back.
pub fn regrow(
    records: &[GrownRecord],
    cat: &Schema,
    kept: &mut Kept,
    sf: &mut SpecFile,
    original: Option<&SpecFile>,
) {
    for r in records {
        let Some(i) = cat
            .tables
            .iter()
            .position(|t| format!("{}.{}", t.schema, t.name) == r.table)
        else {
            continue;
        };
        let Some((key, why)) = crate::seed::reference::core_entity(cat, i) else {
            continue;
        };
        let before = kept.reference.len();
        kept.reference.retain(|(t, _, _)| *t != i);
        if kept.reference.len() != before {
            // `decide` sized it to the keys it holds: its own entry back.
            sf.spec
                .tables
                .retain(|k, _| cat.find(k.get_ref()) != Some(i));
            if let Some((k, v)) = original.and_then(|o| {
                o.spec
                    .tables
                    .iter()
                    .find(|(k, _)| cat.find(k.get_ref()) == Some(i))
            }) {
                sf.spec.tables.insert(k.clone(), v.clone());
            }
        }
        kept.held.retain(|(t, _)| *t != i);
        kept.grown.retain(|g| g.table != i);
        kept.grown.push(Grown {
            table: i,
            key,
            last: r.last,
            kept: r.kept,
            why,
        });
    }
}

/// The tables an earlier, completed seed grew (`records`, from
/// `planck.seeded`) that this `--truncate` run would otherwise replace
/// whole, migrations' rows included: those `kept` neither keeps nor grows
/// already, and the spec (`spec`) does not name (a spec naming one
/// replaces its rows, as on a first seed). [`regrow`] grows them again
/// from the same key, and the load deletes only the rows past it.
pub fn grown_again(
    records: &[GrownRecord],
    cat: &Schema,
    kept: &Kept,
    spec: Option<&SpecFile>,
) -> Vec<GrownRecord> {
    records
        .iter()
        .filter(|r| {
            let Some(i) = cat
                .tables
                .iter()
                .position(|t| format!("{}.{}", t.schema, t.name) == r.table)
            else {
                return false;
            };
            let named = spec.is_some_and(|s| {
                s.spec
                    .tables
                    .keys()
                    .any(|k| cat.find(k.get_ref()) == Some(i))
            });
            !named
                && !kept.reference.iter().any(|(t, _, _)| *t == i)
                && !kept.grown.iter().any(|g| g.table == i)
        })
        .cloned()
        .collect()
}

/// A run that replaces a stopped seed's rows (`--truncate`, another
/// dataset) cannot regrow a table whose grown load committed: its rows
/// past the migrations' are the stopped run's. Refused, with the way out.
pub fn refuse_replacing_grown(u: &UnfinishedRun, records: &[GrownRecord]) -> Result<()> {
    let loaded = u.loaded();
    let committed: Vec<&str> = records
        .iter()
        .map(|r| r.table.as_str())
        .filter(|t| loaded.contains(t))
        .collect();
    if committed.is_empty() {
        return Ok(());
    }
    Err(Error::usage_hint(
        format!(
            "a seed stopped before its end (`{}`) grew {} past the rows the migrations wrote, \
             and this run's dataset differs from it",
            u.command,
            committed.join(", ")
        ),
        format!(
            "run `{}` to finish it first; or `planck migrate --fresh` to start from the migrations' rows",
            u.command
        ),
    ))
}

/// The `planck seed` command that gives `opts`' dataset: every parameter
/// that decides it written out (flags override planck.toml, so the command
/// means the same whatever the file says by then).
pub fn command(opts: &SeedOptions) -> String {
    let mut c = String::from("planck seed");
    // A spec `--stats` made is named by what the user ran: the file, the
    // spec laid over it (or none), `--exact-tenants`.
    let made = opts.spec.as_ref().and_then(|s| s.made_from.as_ref());
    let spec = match made {
        Some(m) => m.user.as_ref().map(|u| &u.0),
        None => opts.spec.as_ref().and_then(|s| s.path.as_ref()),
    };
    match spec {
        Some(p) => {
            c.push_str(" --spec ");
            c.push_str(&shell_word(&p.display().to_string()));
        }
        None => c.push_str(" --no-spec"),
    }
    if let Some(m) = made {
        c.push_str(" --stats ");
        c.push_str(&shell_word(&m.stats.display().to_string()));
        if m.exact_tenants {
            c.push_str(" --exact-tenants");
        }
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
                made_from: None,
            }),
            ..opts()
        };
        assert_eq!(
            command(&o),
            "planck seed --spec '/p/my seeds/a.toml' --seed 7 --scale 0.5"
        );
        // A spec made of a statistics file: the command names the file.
        let made = |user: Option<&str>| SeedOptions {
            scale: 0.1,
            rows: None,
            spec: Some(crate::seed::spec::SpecFile {
                path: Some("/p/stats/prod.json (as a spec)".into()),
                made_from: Some(crate::seed::spec::MadeFrom {
                    stats: "/p/stats/prod.json".into(),
                    exact_tenants: true,
                    user: user.map(|u| (u.into(), String::new())),
                    notes: Vec::new(),
                }),
                ..Default::default()
            }),
            ..opts()
        };
        assert_eq!(
            command(&made(None)),
            "planck seed --no-spec --stats /p/stats/prod.json --exact-tenants --scale 0.1"
        );
        assert_eq!(
            command(&made(Some("/p/seeds/a.toml"))),
            "planck seed --spec /p/seeds/a.toml --stats /p/stats/prod.json --exact-tenants --scale 0.1"
        );
    }

    /// The grown tables a run records come back as they went in (a table
    /// name may hold spaces); a record without any gives none.
    #[test]
    fn grown_tables_ride_in_the_record_and_come_back() {
        let u = |fingerprint: &str| UnfinishedRun {
            fingerprint: fingerprint.into(),
            command: String::new(),
            tables: vec![("public.pages".into(), 1, true)],
        };
        assert_eq!(
            grown_of(&u("ab12\ngrown 2 2 public.pages\ngrown 40 3 cms.my pages")),
            vec![
                GrownRecord {
                    table: "public.pages".into(),
                    last: 2,
                    kept: 2
                },
                GrownRecord {
                    table: "cms.my pages".into(),
                    last: 40,
                    kept: 3
                },
            ]
        );
        assert_eq!(grown_of(&u("ab12")), vec![]);
        let records = grown_of(&u("ab12\ngrown 2 2 public.pages"));
        let e = refuse_replacing_grown(&u("x"), &records).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        assert!(refuse_replacing_grown(&u("x"), &[]).is_ok());
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
