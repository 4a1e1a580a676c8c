//! The commented `planck.toml` that `planck init` writes: every key with its
//! default. Keys with a fixed default are written set to it; keys whose
//! default is inferred or absent (the database URL, the tenant role...) are
//! written commented out (`#key = example`), so uncommenting one is a valid
//! file. It lives with the settings because the defaults it writes are the
//! ones the settings resolve to, and its tests hold the two together.

/// The file `planck init` writes.
pub fn template() -> String {
    use crate::explain::options as ex;
    use crate::settings::check as ck;
    format!(
        r#"# planck.toml: planck's project configuration. Every key is optional;
# flags win over this file, and this file over the built-in defaults.
# Lines like `#key = value` are keys without a fixed default: uncomment to set.

[database]
# Connection URL of the database planck works on. Unset: planck's managed
# local PostgreSQL under .planck/ (PLANCK_DATABASE_URL, DATABASE_URL and PG*
# win over this key).
#url = "postgres://user@localhost:5432/app"

[paths]
# Folders, relative to this file.
migrations = "migrations"
seeds = "seeds"
queries = "queries"

[tenant]
# How the application runs as a tenant; each key is inferred when unset.
# The application role, subject to row-level security.
#role = "app_user"
# The setting the policies read.
#setting = "app.account_id"
# The tenant to plan as. Default: the heaviest.
#id = "1"

[seed]
# Spec file. Default: every seeds/*.toml.
#spec = "seeds/example.toml"
# The RNG seed (the same seed gives the same dataset).
seed = {seed}
# Multiplies every row count of the spec.
scale = 1.0
# Rows of a table nothing else sizes; set here, it overrides a spec's own
# top-level `rows`. Default: the spec's `rows`, else {rows}.
#rows = {rows}
# Generator threads and concurrent table loads. Default: the CPU count.
#threads = 4

[record]
# Output file. Default: queries/recorded.toml.
#output = "queries/recorded.toml"

[explain]
# Tables with fewer rows are not flagged for scans.
min_rows = {min_rows}
# A statement reading a table with fewer rows (one `planck seed` did not
# write) is not judged: such data cannot show production's plan.
min_table_rows = {min_table_rows}
# Planning timeout per statement, in milliseconds.
statement_timeout_ms = {timeout}
# Checks switched off for the whole project (`planck explain --help` lists them).
disable = []
# Production's planner settings, applied with SET LOCAL while planning.
#settings = {{ random_page_cost = 1.1, work_mem = "16MB" }}
# Findings only the generic plan shows: "judge" (as any other), "warn" (a
# warning: the application may never run the generic plan) or "ignore".
generic = "warn"
# Per-table or per-statement ignores, each with its reason:
#[[explain.ignore]]
#check = "seq-scan"
#table = "events"
#statement = "a1b2c3d4e5f60718"
#reason = "a nightly report, reads every row on purpose"
{knobs}
[replay]
# Client counts of the steps (with rate = true: units per second).
ladder = [1, 2, 4, 8, 16, 32, 64]
# Measured time of each step, and the time it runs before it is measured.
duration = "10s"
warmup = "2s"
# `calls` (as often as recorded) or `uniform`.
weights = "calls"
statement_timeout_ms = 30000
sample_ms = 20
verify_max_rows = 100000
# Replay processes. Default: the CPU count.
#workers = 2
# Open loop: the ladder lists rates over `clients` connections.
rate = false
clients = 16
# An application pool smaller than the clients. Default: none.
#pool = 8
# Runs of each step.
repeat = 1
# `heavy` (the heaviest tenant) or `spread`.
tenant_mode = "heavy"
# A latency objective. Default: none.
#slo = "p95=300ms@16"

[check]
# The project's own migration command, run in the checkout with DATABASE_URL
# and PG* set (e.g. "python manage.py migrate", "sqlx migrate run").
# Default: planck migrate.
#migrate = "bin/rails db:migrate"
# Seed scale of the check databases: multiplies every row count, the seed
# spec's and `rows`. Default: {check_scale} with a seed spec (a spec sizes
# production), 1 without (the default rows are already sized for CI).
#scale = {check_scale}
# Rows of a table nothing else sizes in the check databases, as `[seed] rows`
# locally (it leaves local seeds alone). Default: `[seed] rows`.
#rows = {rows}
# What fails the gate: "errors" (not in queries/baseline.toml), "regressions"
# (with --base: a plan costlier beyond cost_noise, or an index no longer
# used), "blocking-migration" (with --base: a statement that held a SHARE or
# stronger lock, or rewrote a table), "slo" (the replay missed [check] slo).
fail_on = ["errors"]
# Cost ratios under this (either way) count as unchanged. A write statement
# (INSERT, UPDATE, DELETE) whose plan keeps its shape is never a regression
# by cost alone: maintaining a new index costs more, and that is expected.
cost_noise = {noise:?}
# A short replay of the recorded workload on the check databases (also
# --replay), with its ladder and step length; "slo" gates on its latency.
replay = false
ladder = {ladder:?}
replay_duration = "{replay_duration}"
# A latency objective the replay must meet (it turns the replay on). Add
# "slo" to fail_on above to gate on it (it joins fail_on by itself only when
# fail_on is not set). Default: none.
#slo = "p95=300ms@4"
"#,
        seed = crate::seed::planner::DEFAULT_SEED,
        rows = crate::seed::planner::DEFAULT_ROWS,
        min_rows = ex::DEFAULT_MIN_ROWS,
        min_table_rows = ex::DEFAULT_MIN_TABLE_ROWS,
        knobs = check_knobs(),
        timeout = ex::DEFAULT_TIMEOUT_MS,
        check_scale = ck::DEFAULT_SCALE,
        noise = crate::wire::diff::DEFAULT_COST_NOISE,
        ladder = ck::DEFAULT_LADDER,
        replay_duration = ck::DEFAULT_REPLAY_DURATION,
    )
}

/// `[explain.checks.<id>]` of every check that declares knobs, each knob
/// with its doc and its default, read from the checks themselves.
fn check_knobs() -> String {
    let mut out = String::new();
    for c in crate::explain::rules::ALL {
        let knobs = c.knobs();
        if knobs.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push_str(
                "# Each check's own knobs, under [explain.checks.<check id>] (docs/checks.md\n\
                 # describes the checks).\n",
            );
        } else {
            out.push('\n');
        }
        out.push_str(&format!("[explain.checks.{}]\n", c.id()));
        for k in knobs {
            for line in comment_lines(k.doc, 78) {
                out.push_str(&format!("# {line}\n"));
            }
            out.push_str(&format!("{} = {}\n", k.name, k.default.toml()));
        }
    }
    if !out.is_empty() {
        out.insert(0, '\n');
    }
    out
}

/// `text` in lines of at most `width - 2` characters (words kept whole).
fn comment_lines(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.len() + 1 + word.len() <= width - 2 => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn the_template_parses_and_holds_the_defaults() {
        let c = crate::config::parse(Path::new("planck.toml"), &template()).unwrap();
        assert_eq!(c.paths.migrations, PathBuf::from("migrations"));
        assert_eq!(c.seed.seed, Some(crate::seed::planner::DEFAULT_SEED));
        assert_eq!(
            c.explain.min_rows,
            Some(crate::explain::options::DEFAULT_MIN_ROWS)
        );
        // Inferred (from whether a seed spec sizes the data): commented out.
        assert_eq!(c.check.scale, None);
        // Commented out: set, it would override a seed spec's own `rows`.
        assert_eq!(c.seed.rows, None);
        assert_eq!(c.check.fail_on, Some(vec!["errors".to_string()]));
        assert!(c.database.url.is_none());
    }

    /// Uncommenting every `#key = value` line still parses, and then every
    /// key of every section is set: the file names them all.
    #[test]
    fn every_key_is_in_the_template() {
        let text: String = template()
            .lines()
            .map(|l| match l.strip_prefix('#') {
                Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '[') => {
                    rest.to_string()
                }
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let c = crate::config::parse(Path::new("planck.toml"), &text).unwrap();
        // Destructured without `..`: a key added to config.rs and not here
        // does not compile.
        let crate::config::ConfigFile {
            database,
            paths: _,
            tenant,
            seed,
            record,
            explain,
            replay,
            check,
        } = c;
        assert!(database.url.is_some());
        let crate::config::TenantSection { role, setting, id } = tenant;
        assert!(role.is_some() && setting.is_some() && id.is_some());
        let crate::config::SeedSection {
            spec,
            seed,
            scale,
            rows,
            threads,
        } = seed;
        assert!(spec.is_some() && seed.is_some() && scale.is_some());
        assert!(rows.is_some() && threads.is_some());
        assert!(record.output.is_some());
        let crate::config::ExplainSection {
            min_rows,
            min_table_rows,
            // The old name of `[explain.checks.rls-policy] cost_ratio`:
            // read, no longer written.
            rls_cost_ratio: _,
            statement_timeout_ms,
            disable: _,
            ignore,
            settings,
            generic,
            checks,
        } = explain;
        assert!(min_rows.is_some() && generic.is_some());
        // Every knob of every check, with its default.
        for c in crate::explain::rules::ALL {
            for k in c.knobs() {
                let set = checks.get(c.id().as_str()).and_then(|t| t.get(k.name));
                assert_eq!(
                    set.and_then(|v| k.default.like(v)),
                    Some(k.default),
                    "{} {}",
                    c.id(),
                    k.name
                );
            }
        }
        assert!(min_table_rows.is_some());
        assert!(statement_timeout_ms.is_some() && !settings.is_empty());
        assert_eq!(ignore.len(), 1);
        let crate::config::ReplaySection {
            ladder,
            duration,
            warmup,
            weights,
            statement_timeout_ms,
            sample_ms,
            verify_max_rows,
            workers,
            rate,
            clients,
            pool,
            repeat,
            tenant_mode,
            slo,
        } = replay;
        for set in [
            ladder.is_some(),
            duration.is_some(),
            warmup.is_some(),
            weights.is_some(),
            statement_timeout_ms.is_some(),
            sample_ms.is_some(),
            verify_max_rows.is_some(),
            workers.is_some(),
            rate.is_some(),
            clients.is_some(),
            pool.is_some(),
            repeat.is_some(),
            tenant_mode.is_some(),
            slo.is_some(),
        ] {
            assert!(set);
        }
        let crate::config::CheckSection {
            migrate,
            scale,
            rows: check_rows,
            fail_on,
            cost_noise,
            replay: check_replay,
            ladder: check_ladder,
            replay_duration,
            slo: check_slo,
        } = check;
        assert!(migrate.is_some() && scale.is_some() && check_rows.is_some());
        assert!(fail_on.is_some() && cost_noise.is_some());
        assert!(check_replay.is_some() && check_ladder.is_some());
        assert!(replay_duration.is_some() && check_slo.is_some());
    }
}
