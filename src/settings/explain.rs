//! `planck explain`'s settings: its raw flags ([`ExplainArgs`]) resolved once
//! with `planck.toml` and the defaults into [`ExplainSettings`].
//!
//! Override order, strongest first: the flag, then `planck.toml`
//! (`[explain]`, `[tenant]`), then the built-in default. Paths are taken from
//! the project directory. Check ids in `[explain] disable` and
//! `[[explain.ignore]] check` are parsed here, and a typo, or an ignore that
//! names no check, table or statement, is an error at planck.toml:line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Settings;
use crate::cli::explain::ExplainArgs;
use crate::config::{IgnoreRule as RawIgnore, line_col};
use crate::error::{Error, Result};
pub use crate::explain::options::{
    DEFAULT_JOBS, DEFAULT_MIN_ROWS, DEFAULT_MIN_TABLE_ROWS, DEFAULT_TIMEOUT_MS, ExplainSettings,
    PlannerOptions, StatementSource,
};
use crate::explain::rules::{self, CheckKnobs, KnobValue};
use crate::findings::CheckId;
use crate::findings::ignore::IgnoreRule;
use crate::queries;
use crate::tenancy::TenantOptions;

impl ExplainSettings {
    /// What `planck check` runs on each side: `[explain]` of planck.toml,
    /// without the index advice (check compares findings, it proposes none).
    pub fn for_check(settings: &Settings) -> Result<ExplainSettings> {
        let args = ExplainArgs {
            no_advice: true,
            ..ExplainArgs::new()
        };
        ExplainSettings::resolve(&args, settings)
    }

    /// What `planck demo` runs: its own queries file and baseline.
    pub fn for_demo(
        queries: &Path,
        baseline: PathBuf,
        settings: &Settings,
    ) -> Result<ExplainSettings> {
        let mut args = ExplainArgs::with_queries(queries);
        args.baseline = Some(baseline);
        ExplainSettings::resolve(&args, settings)
    }

    /// Flags, `planck.toml` and defaults, merged once.
    pub fn resolve(args: &ExplainArgs, settings: &Settings) -> Result<ExplainSettings> {
        let cfg = &settings.config.explain;
        let tenant = &settings.config.tenant;
        let located = Located::read(settings.config_path.as_deref());

        let app_source = args.source.as_ref().map(|s| settings.project_path(s));
        if let Some(dir) = &app_source
            && !dir.is_dir()
        {
            return Err(Error::usage_hint(
                if dir.exists() {
                    format!("--source {} is not a directory", dir.display())
                } else {
                    format!("--source {} does not exist", dir.display())
                },
                "pass the directory of the application's code, or leave --source out",
            ));
        }
        if args.jobs == Some(0) {
            return Err(Error::usage("--jobs must be at least 1"));
        }
        let statements = if args.from_stats {
            StatementSource::Stats
        } else {
            StatementSource::Queries(match &args.queries {
                Some(p) => settings.project_path(p),
                None => queries::default_path(&settings.queries_dir()),
            })
        };
        let baseline = match &args.baseline {
            Some(p) => settings.project_path(p),
            None => crate::findings::baseline::default_path(&settings.queries_dir()),
        };
        let advice = advice_settings(args, settings)?;
        Ok(ExplainSettings {
            advice,
            statements,
            tenant_only: args.as_tenant,
            admin_only: args.as_admin,
            all_modes: args.all_modes,
            tenant: TenantOptions {
                role: args.tenant_role.clone().or(tenant.role.clone()),
                setting: args.tenant_setting.clone().or(tenant.setting.clone()),
                id: args.tenant_id.clone().or(tenant.id.clone()),
                id_source: Some(if args.tenant_id.is_some() {
                    "--tenant-id"
                } else {
                    "[tenant] id in planck.toml"
                }),
            },
            min_rows: args.min_rows.or(cfg.min_rows).unwrap_or(DEFAULT_MIN_ROWS),
            min_table_rows: args
                .min_table_rows
                .or(cfg.min_table_rows)
                .unwrap_or(DEFAULT_MIN_TABLE_ROWS),
            allow_unseeded: args.allow_unseeded,
            knobs: knobs(cfg, &located, settings)?,
            timeout_ms: args
                .statement_timeout_ms
                .or(cfg.statement_timeout_ms)
                .unwrap_or(DEFAULT_TIMEOUT_MS),
            analyze: args.analyze,
            app_source,
            baseline,
            write_baseline: args.write_baseline,
            jobs: args.jobs.unwrap_or(DEFAULT_JOBS),
            disabled: disabled(&cfg.disable, &located, settings)?,
            ignores: ignores(&cfg.ignore, &located, settings)?,
            fail_on_skipped: args.fail_on_skipped,
            identity_budget: identity_budget(args.identity_budget)?,
            planner: planner_options(args, &cfg.settings)?,
            generic: generic_plans(cfg.generic.as_deref(), &located, settings)?,
            source_root: Some(crate::findings::source::root_of(&settings.project_dir)),
        })
    }
}

/// `--no-advice`, `--advice-budget`, `--force`, `--write-advice` (taken
/// from the project directory).
fn advice_settings(
    args: &ExplainArgs,
    settings: &Settings,
) -> Result<crate::explain::options::AdviceSettings> {
    let budget_s = args
        .advice_budget
        .unwrap_or(crate::explain::options::DEFAULT_ADVICE_BUDGET_S);
    if !(budget_s.is_finite() && budget_s >= 0.0) {
        return Err(Error::usage_hint(
            format!("--advice-budget {budget_s} is not a number of seconds"),
            "pass e.g. --advice-budget 30, or --no-advice",
        ));
    }
    Ok(crate::explain::options::AdviceSettings {
        enabled: !args.no_advice,
        budget_s,
        force: args.force,
        write: args.write_advice.as_ref().map(|p| settings.project_path(p)),
    })
}

/// `--identity-budget SECS`: a finite, non-negative number of seconds.
fn identity_budget(secs: Option<f64>) -> Result<std::time::Duration> {
    match secs {
        None => Ok(crate::tenancy::DEFAULT_IDENTITY_BUDGET),
        Some(s) => std::time::Duration::try_from_secs_f64(s).map_err(|_| {
            Error::usage(format!(
                "--identity-budget must be a number of seconds, 0 or more (got {s})"
            ))
        }),
    }
}

/// `[explain] settings` (values as text: `1.1`, `"16MB"`, `false`) and `--settings-from`.
fn planner_options(args: &ExplainArgs, table: &toml::Table) -> Result<PlannerOptions> {
    let mut settings = Vec::new();
    for (name, v) in table {
        let value = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            other => {
                return Err(Error::usage_hint(
                    format!("[explain] settings: {name} = {other} is not a setting's value"),
                    "give a string, a number or a boolean: work_mem = \"16MB\", random_page_cost = 1.1",
                ));
            }
        };
        settings.push((name.clone(), value));
    }
    let settings_from = match &args.settings_from {
        Some(url) => Some(crate::db::ConnInfo::parse(url, false)?),
        None => None,
    };
    Ok(PlannerOptions {
        settings,
        settings_from,
    })
}

/// Where each `disable` entry and ignore rule sits in planck.toml (byte
/// offsets), read beside `config.rs`'s parse: serde there keeps no positions.
#[derive(Debug, Default)]
struct Located {
    path: Option<PathBuf>,
    text: String,
    disable: Vec<std::ops::Range<usize>>,
    ignore: Vec<(std::ops::Range<usize>, Option<std::ops::Range<usize>>)>,
    /// `[explain.checks.<id>]`: where each id and each knob's key sits.
    checks: Vec<(String, std::ops::Range<usize>)>,
    knobs: Vec<((String, String), std::ops::Range<usize>)>,
}

#[derive(Deserialize, Default)]
struct LocFile {
    #[serde(default)]
    explain: LocExplain,
}

#[derive(Deserialize, Default)]
struct LocExplain {
    #[serde(default)]
    disable: Vec<toml::Spanned<String>>,
    #[serde(default)]
    ignore: Vec<toml::Spanned<LocIgnore>>,
    #[serde(default)]
    checks: std::collections::BTreeMap<
        toml::Spanned<String>,
        std::collections::BTreeMap<toml::Spanned<String>, toml::Value>,
    >,
}

#[derive(Deserialize)]
struct LocIgnore {
    check: Option<toml::Spanned<String>>,
}

impl Located {
    fn read(path: Option<&Path>) -> Located {
        let Some(path) = path else {
            return Located::default();
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            return Located::default();
        };
        let file: LocFile = toml::from_str(&text).unwrap_or_default();
        let mut checks = Vec::new();
        let mut knobs = Vec::new();
        for (id, table) in &file.explain.checks {
            checks.push((id.get_ref().clone(), id.span()));
            for key in table.keys() {
                knobs.push(((id.get_ref().clone(), key.get_ref().clone()), key.span()));
            }
        }
        Located {
            checks,
            knobs,
            path: Some(path.to_path_buf()),
            disable: file.explain.disable.iter().map(|d| d.span()).collect(),
            ignore: file
                .explain
                .ignore
                .iter()
                .map(|i| (i.span(), i.get_ref().check.as_ref().map(|c| c.span())))
                .collect(),
            text,
        }
    }

    /// A configuration error at `span` of planck.toml (or without a position).
    fn error(
        &self,
        settings: &Settings,
        span: Option<&std::ops::Range<usize>>,
        message: String,
        hint: String,
    ) -> Error {
        let (line, column) = match span {
            Some(s) if self.path.is_some() => {
                let (l, c) = line_col(&self.text, s.start);
                (Some(l), Some(c))
            }
            _ => (None, None),
        };
        Error::Config {
            path: self
                .path
                .clone()
                .or(settings.config_path.clone())
                .unwrap_or_else(|| PathBuf::from(crate::config::FILE_NAME)),
            line,
            column,
            message,
            hint: Some(hint),
        }
    }

    fn origin(&self, i: usize) -> Option<String> {
        let path = self.path.as_ref()?;
        let (span, _) = self.ignore.get(i)?;
        let (line, _) = line_col(&self.text, span.start);
        Some(format!("{}:{line}", path.display()))
    }
}

/// `[explain] generic = "judge" | "warn" | "ignore"` (default `warn`).
fn generic_plans(
    raw: Option<&str>,
    at: &Located,
    settings: &Settings,
) -> Result<crate::explain::options::GenericPlans> {
    use crate::explain::options::GenericPlans;
    match raw {
        None => Ok(GenericPlans::default()),
        Some(v) => GenericPlans::parse(v).ok_or_else(|| {
            at.error(
                settings,
                None,
                format!("[explain] generic = {v:?} is not judge, warn or ignore"),
                "judge: generic-only findings count as any other; warn (the default): \
                 they are warnings; ignore: they are dropped"
                    .to_string(),
            )
        }),
    }
}

/// `[explain.checks.<id>]`: each check's own knobs, checked against what
/// the check declares ([`rules::Check::knobs`]): an unknown check, a check
/// without that knob, or a value of the wrong kind is an error at its line.
/// `[explain] rls_cost_ratio`, the name `rls-policy`'s `cost_ratio` had
/// before, is still read; the new key wins when both are set.
fn knobs(
    cfg: &crate::config::ExplainSection,
    at: &Located,
    settings: &Settings,
) -> Result<CheckKnobs> {
    let mut out = CheckKnobs::new();
    for (id, table) in &cfg.checks {
        let id_at = at.checks.iter().find(|(i, _)| i == id).map(|(_, s)| s);
        let check: CheckId = id.parse().map_err(|_| {
            at.error(
                settings,
                id_at,
                format!("[explain.checks.{id}] names an unknown check {id:?}"),
                CheckId::known(),
            )
        })?;
        let declared = rules::ALL
            .iter()
            .find(|c| c.id() == check)
            .map(|c| c.knobs())
            .unwrap_or_default();
        for (key, value) in table {
            let key_at = at
                .knobs
                .iter()
                .find(|((i, k), _)| i == id && k == key)
                .map(|(_, s)| s);
            let Some(spec) = declared.iter().find(|k| k.name == key) else {
                return Err(at.error(
                    settings,
                    key_at.or(id_at),
                    format!("[explain.checks.{id}] has no knob {key:?}"),
                    knobs_hint(check),
                ));
            };
            let Some(v) = spec.default.like(value) else {
                return Err(at.error(
                    settings,
                    key_at.or(id_at),
                    format!(
                        "[explain.checks.{id}] {key} = {value} is not {}",
                        spec.default.kind()
                    ),
                    format!(
                        "{}; its default is {} = {}",
                        spec.doc.trim_end_matches('.'),
                        spec.name,
                        spec.default.toml()
                    ),
                ));
            };
            out.set(check, spec.name, v);
        }
    }
    // The keys knobs had in `[explain]` before: (value, check, knob).
    let legacy = [(
        cfg.rls_cost_ratio.map(KnobValue::Number),
        CheckId::RlsPolicy,
        "cost_ratio",
    )];
    for (value, check, name) in legacy {
        let Some(v) = value else { continue };
        let spec = rules::ALL
            .iter()
            .filter(|c| c.id() == check)
            .flat_map(|c| c.knobs())
            .find(|k| k.name == name);
        if let Some(spec) = spec
            && out.get(check, name).is_none()
        {
            out.set(check, spec.name, v);
        }
    }
    Ok(out)
}

/// The knobs `check` has, for an error naming one it has not.
fn knobs_hint(check: CheckId) -> String {
    let own: Vec<String> = rules::ALL
        .iter()
        .filter(|c| c.id() == check)
        .flat_map(|c| c.knobs())
        .map(|k| format!("{} = {}", k.name, k.default.toml()))
        .collect();
    let with: Vec<&str> = rules::ALL
        .iter()
        .filter(|c| !c.knobs().is_empty())
        .map(|c| c.id().as_str())
        .collect();
    if own.is_empty() {
        format!(
            "check {check} has no knobs; the checks with knobs: {} (`planck init` writes              each with its default)",
            with.join(", ")
        )
    } else {
        format!(
            "check {check}'s knobs: {} (`planck init` writes each with its default)",
            own.join(", ")
        )
    }
}

fn disabled(raw: &[String], at: &Located, settings: &Settings) -> Result<Vec<CheckId>> {
    raw.iter()
        .enumerate()
        .map(|(i, d)| {
            d.parse::<CheckId>().map_err(|e| {
                at.error(
                    settings,
                    at.disable.get(i),
                    format!("[explain] disable names an unknown check {:?}", e.0),
                    CheckId::known(),
                )
            })
        })
        .collect()
}

fn ignores(raw: &[RawIgnore], at: &Located, settings: &Settings) -> Result<Vec<IgnoreRule>> {
    let mut out = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let (entry, check_span) = match at.ignore.get(i) {
            Some((e, c)) => (Some(e), c.as_ref()),
            None => (None, None),
        };
        let check = match &r.check {
            Some(c) => Some(c.parse::<CheckId>().map_err(|e| {
                at.error(
                    settings,
                    check_span.or(entry),
                    format!("[[explain.ignore]] check names an unknown check {:?}", e.0),
                    CheckId::known(),
                )
            })?),
            None => None,
        };
        let rule = IgnoreRule {
            check,
            relation: r.table.clone(),
            statement: r.statement.clone(),
            reason: r.reason.clone(),
            origin: at.origin(i),
        };
        if !rule.names_something() {
            return Err(at.error(
                settings,
                entry,
                "[[explain.ignore]] names no check, table or statement, so it would \
                 silence every finding"
                    .to_string(),
                "give it a check = \"...\", table = \"...\" or statement = \"...\"".to_string(),
            ));
        }
        out.push(rule);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings_with(toml: &str) -> (tempfile::TempDir, Settings) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("planck.toml"), toml).unwrap();
        let cli =
            crate::cli::Cli::parse_from(["planck", "--database-url", "postgres://u@h/d", "demo"]);
        let s = Settings::resolve(&cli.global, &|_| None, dir.path()).unwrap();
        (dir, s)
    }

    fn line_of(e: &Error) -> Option<usize> {
        match e {
            Error::Config { line, .. } => *line,
            _ => None,
        }
    }

    #[test]
    fn flag_beats_file_beats_default() {
        let (_d, s) = settings_with("[explain]\nmin_rows = 5\nstatement_timeout_ms = 99\n");
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!((r.min_rows, r.timeout_ms, r.jobs), (5, 99, DEFAULT_JOBS));
        let args = ExplainArgs {
            min_rows: Some(7),
            ..ExplainArgs::new()
        };
        let r = ExplainSettings::resolve(&args, &s).unwrap();
        assert_eq!(r.min_rows, 7);
        assert_eq!(r.knobs, CheckKnobs::new());
        assert_eq!(
            r.statements,
            StatementSource::Queries(s.project_dir.join("queries/recorded.toml"))
        );
    }

    /// A check's knob is set under `[explain.checks.<id>]`; the old
    /// top-level `rls_cost_ratio` still sets `rls-policy`'s, the new key
    /// winning over it.
    #[test]
    fn a_checks_knob_is_read_from_its_table_and_the_old_key_still_sets_it() {
        let cost = |r: &ExplainSettings| r.knobs.get(CheckId::RlsPolicy, "cost_ratio");
        let (_d, s) = settings_with("[explain.checks.rls-policy]\ncost_ratio = 3\n");
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!(cost(&r), Some(KnobValue::Number(3.0)));
        let (_d, s) = settings_with("[explain]\nrls_cost_ratio = 4.5\n");
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!(cost(&r), Some(KnobValue::Number(4.5)));
        let (_d, s) = settings_with(
            "[explain]\nrls_cost_ratio = 4.5\n\n[explain.checks.rls-policy]\ncost_ratio = 2.0\n",
        );
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!(cost(&r), Some(KnobValue::Number(2.0)));
    }

    /// An unknown check, a knob the check lacks and a value of the wrong
    /// kind are errors at their planck.toml line, naming what is known.
    #[test]
    fn a_knob_typo_an_unknown_check_and_a_wrong_type_are_errors_at_their_line() {
        let (_d, s) = settings_with("[explain]\n\n[explain.checks.rls-polcy]\ncost_ratio = 3\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(3), "{e}");
        assert!(e.to_string().contains("rls-polcy"), "{e}");

        let (_d, s) = settings_with("[explain.checks.rls-policy]\n\ncost_ration = 3\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(3), "{e}");
        match &e {
            Error::Config { message, hint, .. } => {
                assert!(message.contains("no knob \"cost_ration\""), "{message}");
                assert!(
                    hint.as_deref().unwrap().contains("cost_ratio = 10.0"),
                    "{hint:?}"
                );
            }
            other => panic!("{other:?}"),
        }

        let (_d, s) = settings_with("[explain.checks.seq-scan]\nratio = 3\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(2), "{e}");
        assert!(format!("{e:?}").contains("has no knobs"), "{e:?}");

        let (_d, s) = settings_with("[explain.checks.rls-policy]\ncost_ratio = \"ten\"\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(2), "{e}");
        assert!(e.to_string().contains("is not a number"), "{e}");
    }

    /// Issue 8: `disable = ["partial-index-needs-literal"]` was refused (not a check's own id).
    #[test]
    fn issue8_disable_takes_every_emitted_id_and_a_typo_is_an_error_at_its_line() {
        let (_d, s) = settings_with("[explain]\ndisable = [\"partial-index-needs-literal\"]\n");
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!(r.disabled, vec![CheckId::PartialIndexNeedsLiteral]);
        let (_d, s) = settings_with("[explain]\ndisable = [\n  \"seq-scan\",\n  \"seq-scn\",\n]\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(4), "{e}");
        assert!(e.to_string().contains("seq-scn"), "{e}");
    }

    /// Issue 13 §1: `[explain] generic`, warn by default, a typo refused.
    #[test]
    fn issue13_generic_key_defaults_to_warn_and_refuses_a_typo() {
        use crate::explain::options::GenericPlans;
        let (_d, s) = settings_with("[explain]\n");
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!(r.generic, GenericPlans::Warn);
        for (v, want) in [
            ("judge", GenericPlans::Judge),
            ("warn", GenericPlans::Warn),
            ("ignore", GenericPlans::Ignore),
        ] {
            let (_d, s) = settings_with(&format!("[explain]\ngeneric = \"{v}\"\n"));
            let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
            assert_eq!(r.generic, want);
        }
        let (_d, s) = settings_with("[explain]\ngeneric = \"judged\"\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert!(e.to_string().contains("\"judged\""), "{e}");
    }

    /// Issue 8: a typo in `[[explain.ignore]] check` silently ignored nothing,
    /// and an ignore naming nothing silenced everything.
    #[test]
    fn issue8_ignore_check_typo_and_empty_ignore_are_errors_at_their_line() {
        let (_d, s) = settings_with(
            "[explain]\n\n[[explain.ignore]]\ncheck = \"seq-scan\"\nreason = \"ok\"\n\n\
             [[explain.ignore]]\ntable = \"events\"\ncheck = \"sequential\"\nreason = \"typo\"\n",
        );
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(9), "{e}");
        assert!(e.to_string().contains("sequential"), "{e}");

        let (_d, s) = settings_with("[[explain.ignore]]\nreason = \"everything\"\n");
        let e = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap_err();
        assert_eq!(line_of(&e), Some(1), "{e}");
        assert!(e.to_string().contains("names no check"), "{e}");

        let (_d, s) = settings_with(
            "[[explain.ignore]]\ntable = \"events\"\ncheck = \"seq-scan\"\nreason = \"small\"\n",
        );
        let r = ExplainSettings::resolve(&ExplainArgs::new(), &s).unwrap();
        assert_eq!(r.ignores[0].check, Some(CheckId::SeqScan));
        assert_eq!(r.ignores[0].relation.as_deref(), Some("events"));
        assert!(
            r.ignores[0]
                .origin
                .as_deref()
                .unwrap()
                .ends_with("planck.toml:1")
        );
    }
}
