//! `planck check`'s settings: its flags resolved once with `[check]` of
//! `planck.toml` and the defaults into [`CheckSettings`].
//!
//! Override order, strongest first: the flag, then `planck.toml`, then the
//! built-in default. Output paths are taken from the current directory (where
//! CI runs the command), the migration command runs in the project directory.

use std::path::PathBuf;

use super::Settings;
use crate::cli::check::CheckArgs;
use crate::error::{Error, Result};
use crate::report::Output;

/// Seed scale of the check databases when a seed spec sizes the data: a
/// twentieth of the spec, enough for the planner to choose the plans it
/// chooses on production-sized tables, small enough for a CI job. Without a
/// spec the scale is 1: the rows are seed's default (or `[seed] rows`,
/// `[check] rows`), already sized for explain to judge (issue 48: 0.05 of
/// the default left every table below `min_rows`, and check passed on data
/// that could not fail).
pub const DEFAULT_SCALE: f64 = 0.05;

/// The ladder of `--replay` (client counts) and the length of each step:
/// short, for a CI job.
pub const DEFAULT_LADDER: [u32; 3] = [1, 4, 16];
pub const DEFAULT_REPLAY_DURATION: &str = "5s";

pub use crate::workflow::check::{Gate, ReplayPlan};

/// Where each report goes (paths from the current directory).
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The check result itself (`-o json=PATH`, `--json`), each file.
    pub json: Vec<PathBuf>,
    /// The report files asked for, each with its output, in the order they
    /// are written.
    pub files: Vec<(PathBuf, Output)>,
}

impl Outputs {
    /// `--output KIND=PATH` and the shorthand flags (`--json PATH` is
    /// `-o json=PATH`), resolved together: a path named twice, a kind check
    /// does not write or a bare path (check has no default kind) is an error.
    fn resolve(args: &CheckArgs, settings: &Settings) -> Result<Outputs> {
        use crate::output::target::{self, Kind};
        let mut targets = args.output.targets(
            [(&args.json, Kind::JSON)]
                .into_iter()
                .chain(args.files.flags())
                .chain([(&args.html, Kind::Html)]),
        );
        for t in &mut targets {
            t.path = settings.cwd.join(&t.path);
        }
        let writes = [
            Kind::JSON,
            Kind::MARKDOWN,
            Kind::Junit,
            Kind::Sarif,
            Kind::Gitlab,
            Kind::Html,
        ];
        let mut out = Outputs::default();
        for (kind, path) in target::resolve("check", &targets, None, &writes)? {
            match Output::of(kind) {
                Some(output) => out.files.push((path, output)),
                None => out.json.push(path),
            }
        }
        Ok(out)
    }
}

#[derive(Debug, Clone)]
pub struct CheckSettings {
    pub base: Option<String>,
    pub keep: bool,
    pub scale: f64,
    /// `--rows`, else `[check] rows`: replaces `[seed] rows` in check's seed.
    pub rows: Option<u64>,
    pub prefix: String,
    /// The project's migration command; `None` is planck migrate.
    pub migrate: Option<String>,
    pub fail_on: Vec<Gate>,
    pub cost_noise: f64,
    pub outputs: Outputs,
    /// `None`: no replay.
    pub replay: Option<ReplayPlan>,
    /// Which values came from where, one `key = value (source)` each, printed
    /// when there is no planck.toml.
    pub described: Vec<String>,
}

impl CheckSettings {
    pub fn resolve(args: &CheckArgs, settings: &Settings) -> Result<CheckSettings> {
        let cfg = &settings.config.check;
        // Whether a seed spec sizes the data decides the default scale; a
        // broken spec or two of them fail here, as the seed step would.
        let spec = crate::settings::seed::uses_spec(settings)?;
        let default_scale = if spec { DEFAULT_SCALE } else { 1.0 };
        let scale = args.scale.or(cfg.scale).unwrap_or(default_scale);
        if !scale.is_finite() || scale <= 0.0 {
            return Err(Error::usage_hint(
                format!("invalid check scale {scale}: it must be a number above 0"),
                "0.05 seeds a twentieth of the spec's rows",
            ));
        }
        let rows = args.rows.or(cfg.rows);
        if let Some(r) = rows
            && (r == 0 || r > crate::settings::seed::MAX_ROWS)
        {
            return Err(Error::usage_hint(
                format!(
                    "invalid check rows {r}: it must be between 1 and {}",
                    crate::settings::seed::MAX_ROWS
                ),
                "leave it out to seed `[seed] rows` (else 25000) into tables nothing else sizes",
            ));
        }
        let valid_name = !args.name.is_empty()
            && args.name.len() <= 40
            && args
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_name {
            return Err(Error::usage(format!(
                "--name {:?} must be up to 40 lowercase letters, digits or underscores",
                args.name
            )));
        }
        let replay = replay_plan(args, cfg)?;
        let has_slo = replay.as_ref().is_some_and(|r| r.slo.is_some());
        let raw_gates: Vec<String> = if !args.fail_on.is_empty() {
            args.fail_on.clone()
        } else {
            cfg.fail_on.clone().unwrap_or_else(|| {
                // An objective set and no fail_on: a miss fails the gate.
                let mut g = vec!["errors".to_string()];
                if has_slo {
                    g.push("slo".to_string());
                }
                g
            })
        };
        let mut fail_on = raw_gates
            .iter()
            .map(|g| Gate::parse(g.trim()))
            .collect::<Result<Vec<_>>>()?;
        fail_on.sort();
        fail_on.dedup();
        if fail_on.contains(&Gate::Slo) && !has_slo {
            return Err(Error::usage_hint(
                "fail_on names \"slo\" but no objective is set",
                "set one with --slo p95=300ms@4 or [check] slo in planck.toml",
            ));
        }
        let cost_noise = cfg
            .cost_noise
            .unwrap_or(crate::wire::diff::DEFAULT_COST_NOISE);
        if !cost_noise.is_finite() || cost_noise < 1.0 {
            return Err(Error::usage(format!(
                "[check] cost_noise = {cost_noise}: it is a ratio, 1.0 or more (1.2 ignores changes under 20%)"
            )));
        }
        let migrate = cfg.migrate.clone().filter(|m| !m.trim().is_empty());
        let from = |flag: bool, file: bool| {
            if flag {
                "flag"
            } else if file {
                "planck.toml"
            } else {
                "default"
            }
        };
        let described = vec![
            format!(
                "migrate = {} ({})",
                migrate.as_deref().unwrap_or("planck migrate"),
                from(false, cfg.migrate.is_some())
            ),
            format!(
                "scale = {scale} ({})",
                match from(args.scale.is_some(), cfg.scale.is_some()) {
                    "default" if !spec => "default without a seed spec",
                    f => f,
                }
            ),
            match rows {
                Some(r) => format!(
                    "rows = {r} ({})",
                    from(args.rows.is_some(), cfg.rows.is_some())
                ),
                None => format!(
                    "rows = {} ({})",
                    settings
                        .config
                        .seed
                        .rows
                        .unwrap_or(crate::seed::planner::DEFAULT_ROWS),
                    if settings.config.seed.rows.is_some() {
                        "[seed] rows"
                    } else {
                        "default"
                    }
                ),
            },
            format!(
                "fail_on = [{}] ({})",
                fail_on
                    .iter()
                    .map(|g| format!("\"{}\"", g.as_str()))
                    .collect::<Vec<_>>()
                    .join(", "),
                from(!args.fail_on.is_empty(), cfg.fail_on.is_some())
            ),
            format!(
                "cost_noise = {cost_noise} ({})",
                from(false, cfg.cost_noise.is_some())
            ),
            match &replay {
                None => format!("replay = false ({})", from(false, cfg.replay.is_some())),
                Some(r) => format!(
                    "replay = true, ladder = {:?}, replay_duration = {:?} ({})",
                    r.ladder,
                    r.duration,
                    from(args.replay || args.slo.is_some(), cfg.replay.is_some())
                ),
            },
        ];
        Ok(CheckSettings {
            base: args.base.clone(),
            keep: args.keep,
            scale,
            rows,
            prefix: args.name.clone(),
            migrate,
            fail_on,
            cost_noise,
            replay,
            outputs: Outputs::resolve(args, settings)?,
            described,
        })
    }
}

/// `--replay`, `--ladder`, `--replay-duration`, `--slo` over `[check]`
/// replay, ladder, replay_duration, slo. An objective turns the replay on;
/// it must name a step of the ladder.
fn replay_plan(args: &CheckArgs, cfg: &crate::config::CheckSection) -> Result<Option<ReplayPlan>> {
    let slo_text = args.slo.as_deref().or(cfg.slo.as_deref());
    let on = args.replay || args.slo.is_some() || cfg.replay.unwrap_or(false);
    if !on {
        return Ok(None);
    }
    let ladder = if args.ladder.is_empty() {
        cfg.ladder
            .clone()
            .unwrap_or_else(|| DEFAULT_LADDER.to_vec())
    } else {
        args.ladder.clone()
    };
    if ladder.is_empty() || ladder.contains(&0) {
        return Err(Error::usage(
            "the check's replay ladder takes client counts above 0, e.g. 1,4,16",
        ));
    }
    let duration = args
        .replay_duration
        .clone()
        .or_else(|| cfg.replay_duration.clone())
        .unwrap_or_else(|| DEFAULT_REPLAY_DURATION.to_string());
    if super::replay::parse_duration("--replay-duration", &duration)?.is_zero() {
        return Err(Error::usage("--replay-duration must be above 0"));
    }
    let slo = slo_text
        .map(crate::replay::slo::Slo::parse)
        .transpose()
        .map_err(Error::usage)?;
    if let Some(s) = &slo
        && !ladder.contains(&s.concurrency)
    {
        return Err(Error::usage_hint(
            format!(
                "the SLO names {} clients, a step the check's replay ladder {:?} does not run",
                s.concurrency, ladder
            ),
            "add the step to --ladder ([check] ladder), or name one of its steps",
        ));
    }
    Ok(Some(ReplayPlan {
        ladder,
        duration,
        slo,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::seed::SeedSettings;
    use clap::Parser;

    fn settings_with(toml: &str) -> (tempfile::TempDir, Settings) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("planck.toml"), toml).unwrap();
        let cli =
            crate::cli::Cli::parse_from(["planck", "--database-url", "postgres://u@h/d", "demo"]);
        let s = Settings::resolve(&cli.global, &|_| None, dir.path()).unwrap();
        (dir, s)
    }

    fn args(v: &[&str]) -> CheckArgs {
        let mut all = vec!["planck", "check"];
        all.extend_from_slice(v);
        match crate::cli::Cli::parse_from(all).command {
            crate::cli::Command::Check(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn outputs_are_the_kinds_of_dash_o_and_the_shorthand_flags_together() {
        let (d, s) = settings_with("");
        let at = |n: &str| d.path().join(n).display().to_string();
        let (a, b, c) = (at("a.json"), at("out/b.sarif"), at("c.xml"));
        let r = CheckSettings::resolve(
            &args(&[
                "-o",
                &format!("json={a}"),
                "--output",
                &format!("sarif={b}"),
                "--junit",
                &c,
            ]),
            &s,
        )
        .unwrap();
        assert_eq!(r.outputs.json, vec![PathBuf::from(&a)]);
        assert_eq!(
            r.outputs.files,
            vec![
                (PathBuf::from(&b), Output::Sarif),
                (PathBuf::from(&c), Output::Junit)
            ]
        );
        // check has no default kind; a path named twice is refused.
        let err = CheckSettings::resolve(&args(&["-o", &a]), &s).unwrap_err();
        assert!(err.to_string().contains("names no kind"), "{err}");
        let err = CheckSettings::resolve(&args(&["-o", &format!("html={a}"), "--json", &a]), &s)
            .unwrap_err();
        assert!(err.to_string().contains("named by two"), "{err}");
    }

    #[test]
    fn flag_beats_file_beats_default() {
        let (_d, s) = settings_with("");
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        // No seed spec: the default rows at scale 1 (see DEFAULT_SCALE).
        assert_eq!(r.scale, 1.0);
        assert_eq!(r.rows, None);
        assert_eq!(r.fail_on, vec![Gate::Errors]);
        assert_eq!(r.migrate, None);
        assert!(r.described[0].contains("planck migrate (default)"));

        let (_d, s) = settings_with(
            "[check]\nscale = 0.2\nfail_on = [\"regressions\", \"errors\"]\nmigrate = \"sqlx migrate run\"\n",
        );
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        assert_eq!(r.scale, 0.2);
        assert_eq!(r.fail_on, vec![Gate::Errors, Gate::Regressions]);
        assert_eq!(r.migrate.as_deref(), Some("sqlx migrate run"));
        let r = CheckSettings::resolve(
            &args(&["--scale", "0.01", "--fail-on", "blocking-migration"]),
            &s,
        )
        .unwrap();
        assert_eq!(r.scale, 0.01);
        assert_eq!(r.fail_on, vec![Gate::BlockingMigration]);
        assert!(r.described[1].contains("(flag)"), "{:?}", r.described);
    }

    /// Issue 48: check's seed is sized apart from local seeds. A seed spec
    /// makes the default scale 0.05 (a spec sizes production), no spec 1;
    /// `[check] rows` and `--rows` replace `[seed] rows` for check only.
    #[test]
    fn check_rows_and_the_default_scale_follow_the_seed_spec() {
        let (d, s) = settings_with("[seed]\nrows = 1000000\n");
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        assert_eq!((r.scale, r.rows), (1.0, None));
        assert!(
            r.described
                .iter()
                .any(|l| l == "rows = 1000000 ([seed] rows)"),
            "{:?}",
            r.described
        );
        std::fs::create_dir_all(d.path().join("seeds")).unwrap();
        std::fs::write(d.path().join("seeds/app.toml"), "[tables.t]\nrows = 10\n").unwrap();
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        assert_eq!(r.scale, DEFAULT_SCALE);

        let (_d, s) = settings_with("[seed]\nrows = 1000000\n[check]\nrows = 30000\n");
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        assert_eq!(r.rows, Some(30000));
        assert!(
            r.described
                .iter()
                .any(|l| l == "rows = 30000 (planck.toml)")
        );
        let seed = SeedSettings::for_check(r.scale, r.rows, &s).unwrap();
        assert_eq!(seed.options.rows, Some(30000));
        let r = CheckSettings::resolve(&args(&["--rows", "40000"]), &s).unwrap();
        assert_eq!(r.rows, Some(40000));
        let e = CheckSettings::resolve(&args(&["--rows", "0"]), &s).unwrap_err();
        assert!(e.to_string().contains("invalid check rows 0"), "{e}");
    }

    /// issue 14: `--replay` and `[check] replay`, its ladder, and the SLO
    /// (which turns the replay on and joins the default fail_on).
    #[test]
    fn replay_and_slo_resolve_from_flags_and_file() {
        let (_d, s) = settings_with("");
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        assert!(r.replay.is_none());
        let r = CheckSettings::resolve(&args(&["--replay"]), &s).unwrap();
        let p = r.replay.unwrap();
        assert_eq!(p.ladder, DEFAULT_LADDER.to_vec());
        assert_eq!(p.duration, DEFAULT_REPLAY_DURATION);
        assert!(p.slo.is_none());
        assert_eq!(r.fail_on, vec![Gate::Errors]);

        let (_d, s) = settings_with(
            "[check]\nreplay = true\nladder = [1, 2]\nreplay_duration = \"1s\"\nslo = \"p95=40ms@2\"\n",
        );
        let r = CheckSettings::resolve(&args(&[]), &s).unwrap();
        let p = r.replay.clone().unwrap();
        assert_eq!(p.ladder, vec![1, 2]);
        assert_eq!(p.duration, "1s");
        assert_eq!(p.slo.unwrap().max_ms, 40.0);
        assert_eq!(r.fail_on, vec![Gate::Errors, Gate::Slo]);
        // Flags win; an explicit fail_on without "slo" reports the miss only.
        let r = CheckSettings::resolve(
            &args(&["--ladder", "3", "--slo", "p99=1s@3", "--fail-on", "errors"]),
            &s,
        )
        .unwrap();
        assert_eq!(r.replay.unwrap().ladder, vec![3]);
        assert_eq!(r.fail_on, vec![Gate::Errors]);

        // An SLO off the ladder, "slo" without an objective, a zero step.
        let e = CheckSettings::resolve(&args(&["--slo", "p95=1ms@8"]), &s).unwrap_err();
        assert!(e.to_string().contains("8 clients"), "{e}");
        let (_d, s) = settings_with("");
        let e = CheckSettings::resolve(&args(&["--fail-on", "slo"]), &s).unwrap_err();
        assert!(e.to_string().contains("no objective"), "{e}");
        assert!(CheckSettings::resolve(&args(&["--replay", "--ladder", "0"]), &s).is_err());
        assert!(
            CheckSettings::resolve(&args(&["--replay", "--replay-duration", "0s"]), &s).is_err()
        );
    }

    #[test]
    fn an_unknown_gate_or_a_bad_scale_is_a_usage_error() {
        let (_d, s) = settings_with("[check]\nfail_on = [\"regresions\"]\n");
        let e = CheckSettings::resolve(&args(&[]), &s).unwrap_err();
        assert!(e.to_string().contains("regresions"), "{e}");
        let (_d, s) = settings_with("");
        assert!(CheckSettings::resolve(&args(&["--scale", "0"]), &s).is_err());
        // Parsed as a value (not an unknown flag) and refused with the rule.
        let e = CheckSettings::resolve(&args(&["--scale", "-1"]), &s).unwrap_err();
        assert!(e.to_string().contains("invalid check scale -1"), "{e}");
        assert!(CheckSettings::resolve(&args(&["--name", "Bad-Name"]), &s).is_err());
    }
}
