//! The constraint fuzzer (issue 46, point 3): random schemas made of the
//! constraint forms real schemas use, each created in a fresh database,
//! seeded with zero-spec `planck seed`, and judged by the server.
//!
//! The grammar (`seed_fuzz/grammar.rs`) takes its forms from the corpus's
//! CHECKs, unique keys and foreign-key shapes (`../shared/fixtures/*`) and
//! makes up its own tables and names; every constraint is named
//! `<form>__<n>`, so a message naming a constraint names its form. A schema
//! is deterministic from its u64 seed.
//!
//! Each schema ends in one of three outcomes:
//! - **seeded**: exit 0, every table holds rows, and the server accepts
//!   every constraint: the schema's constraints and indexes are exactly as
//!   they were (definitions, `convalidated`, `indisvalid`, NOT NULLs), every
//!   CHECK and foreign key is dropped and added back (the server re-checks
//!   every row; rolled back), and every table is reindexed (a duplicate
//!   under any unique index, expression or partial, fails it);
//! - **unsupported**: exit 1, and every table planck did not seed is listed
//!   with a reason naming one of the schema's constraints or indexes (or
//!   depends on such a table); the tables it did seed pass the same checks;
//! - **FAILURE**: anything else: another exit code, a panic, a constraint
//!   the server rejects, a changed schema, an empty table, an exit 1 that
//!   names no constraint, or no result within the timeout.
//!
//! The test fails on any FAILURE. On the CI sample it also fails on an
//! unsupported outcome: the sample holds only the forms planck seeds today
//! (the `ci` flag of each form in the grammar), so there a refusal is a
//! regression.
//!
//! Settings (environment): `PLANCK_FUZZ_SCHEMAS=N` (default 30) schemas from
//! `PLANCK_FUZZ_SEED=S` (default 1), S..S+N; `PLANCK_FUZZ_ALL=1` draws from
//! every form, `PLANCK_FUZZ_FORMS=a,b` from those only (both: no CI
//! strictness, only FAILUREs fail); `PLANCK_FUZZ_ROWS` (`--rows`, default
//! 100); `PLANCK_FUZZ_JOBS` (schemas at once, default 2);
//! `PLANCK_FUZZ_BIN=<planck>` runs another planck binary (a release build
//! for long runs); `PLANCK_FUZZ_TIMEOUT` (seconds per seed, default 180);
//! `PLANCK_FUZZ_LOG=<file>` writes one TSV line per schema. One schema,
//! with its SQL: `PLANCK_FUZZ_SEED=S PLANCK_FUZZ_SCHEMAS=1 cargo test --test
//! it -- seed_fuzz:: --nocapture` (add `PLANCK_FUZZ_ALL=1` when the seed
//! came from such a run: the forms drawn depend on the forms allowed).
//!
//! The CI sample: 30 schemas, seeds 1..=30, over the 19 forms planck seeds
//! today (self_reference, two_fks_distinct, composite_fk,
//! composite_unique_fk, unique_expression, reference_rows, fk_kind_branch,
//! comparison, null_tests, is_false, column_equality, in_list, like_regex,
//! length_functions, case_switch, num_nonnulls, bool_neq,
//! function_reads_parent, nullable_fk_tied): 30 of 30 fully seeded in 24.0
//! s on a 2-core machine shared with other builds (debug build; 20.7 s for
//! the 17 forms before unique_expression and function_reads_parent joined,
//! 29.1 s for the 15 forms before fk_kind_branch and nullable_fk_tied
//! joined; 31.2 s for the 14 forms before two_fks_distinct joined, when its
//! foreign keys kept apart by `entity0 <> entity1` came to be decided
//! together). unique_expression joined when a json member a unique index
//! reads (`(data ->> 'key')`, `(data -> 'key')`) came to be drawn unique
//! (30 of 30 alone, seeds 5001..=5030); function_reads_parent when a
//! foreign key in a unique key that another column carries alone came to
//! be redrawn for the server's CHECK (30 of 30 alone, same seeds).
//! Every form, 300 schemas from seed 1301 (debug build, 2 at once, 299 s):
//! 287 fully seeded, 13 naming their form (12 two_fks_ordered at COPY, 1
//! mixed_boolean), no FAILURE; none names unique_expression or
//! function_reads_parent.
//! Out of the sample, each by one `ci: false` in `grammar::FORMS` with the
//! reason beside it (flip it when planck learns the form):
//! - two_fks_ordered: `tag1 < tag2` over two foreign keys to one parent
//!   without its pair unique: the picks ignore the order (23514 at COPY);
//! - partial_unique: several partial unique indexes over one foreign key
//!   find duplicates at the index rebuild (23505);
//! - mixed_boolean: 28 of 30 alone (seeds 5001..=5030) once `IS [NOT]
//!   TRUE/FALSE`, a CASE in any place, `num_nonnulls(...) <> k` and two
//!   counts over the same columns were read; the two left (nested
//!   `=`/`<>` between CASEs, LIKE and counts) are not yet analysed.
//!   (fk_kind_branch joined the sample when a foreign key into rows the
//!   migrations wrote came to pick only the parent keys its CHECKs admit:
//!   40 of 40 alone, seeds 5001..=5040; before, `type IN (1, 3)` failed at
//!   COPY in 12 of 200 all-form schemas.) (nullable_fk_tied joined it
//!   too: 40 of 40 alone, same seeds; none of 200 all-form schemas named
//!   it.)
//!   (length_functions, case_switch and num_nonnulls joined the sample
//!   when planck learnt `jsonb_typeof`, CASE and NULL groups over nullable
//!   foreign keys.) (bool_neq
//!   schemas hung planck: a row two server-evaluated CHECKs rejected was
//!   retried once per CHECK, doubling at every attempt; fixed, and its
//!   `(credit > 0) <> (debit > 0)` is solved as two branches.)

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common;

use common::TestDb;

mod grammar;

use grammar::{FORMS, Form};

/// How a run is set up (see the `//!` note for the variables).
struct Settings {
    first: u64,
    count: usize,
    forms: Vec<&'static Form>,
    /// The CI sample: every schema must seed fully.
    strict: bool,
    label: String,
    rows: u64,
    jobs: usize,
    bin: Option<PathBuf>,
    timeout: Duration,
    log: Option<PathBuf>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    env(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    })
}

fn settings() -> Settings {
    let all = env("PLANCK_FUZZ_ALL").is_some_and(|v| v != "0");
    let (forms, label, strict): (Vec<&'static Form>, String, bool) =
        if let Some(list) = env("PLANCK_FUZZ_FORMS") {
            let forms = list
                .split(',')
                .map(|n| {
                    grammar::form(n.trim()).unwrap_or_else(|| {
                        panic!(
                            "PLANCK_FUZZ_FORMS: no form {n:?}; the forms: {}",
                            FORMS.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
                        )
                    })
                })
                .collect();
            (forms, format!("forms {list}"), false)
        } else if all {
            (FORMS.iter().collect(), "every form".into(), false)
        } else {
            let ci: Vec<&Form> = FORMS.iter().filter(|f| f.ci).collect();
            let label = format!("CI sample: {} of {} forms", ci.len(), FORMS.len());
            (ci, label, true)
        };
    Settings {
        first: env_num("PLANCK_FUZZ_SEED", 1),
        count: env_num("PLANCK_FUZZ_SCHEMAS", 30),
        forms,
        strict,
        label,
        rows: env_num("PLANCK_FUZZ_ROWS", 100),
        jobs: env_num("PLANCK_FUZZ_JOBS", 2usize).max(1),
        bin: env("PLANCK_FUZZ_BIN").map(PathBuf::from),
        timeout: Duration::from_secs(env_num("PLANCK_FUZZ_TIMEOUT", 180)),
        log: env("PLANCK_FUZZ_LOG").map(PathBuf::from),
    }
}

#[derive(Debug)]
enum Outcome {
    Seeded,
    /// Exit 1 with every table not seeded explained: the constraints and
    /// indexes its reasons name, and the first such reason.
    Unsupported {
        named: BTreeSet<String>,
        reason: String,
        /// Refused by the server at load time (SQLSTATE class 22 or 23: a
        /// row planck generated broke the constraint), not by planck's plan.
        at_load: bool,
    },
    Failure(String),
}

struct Run {
    seed: u64,
    sql: String,
    forms: BTreeSet<&'static str>,
    outcome: Outcome,
    /// The forms whose constraints the outcome's text names.
    blamed: BTreeSet<String>,
    secs: f64,
    kept: Option<String>,
}

/// The random schemas of the settings pass the server's judgement.
#[test]
fn random_schemas_seed_fully_or_name_what_planck_does_not_support() {
    let s = settings();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let kept = AtomicUsize::new(0);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..s.jobs.min(s.count.max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= s.count {
                        break;
                    }
                    let run = run_one(&s, s.first + i as u64, &kept);
                    eprintln!("{}", line(&run));
                    runs.lock().unwrap().push(run);
                }
            });
        }
    });
    let mut runs = runs.into_inner().unwrap();
    runs.sort_by_key(|r| r.seed);
    let secs = started.elapsed().as_secs_f64();
    let text = report(&s, &runs, secs);
    eprintln!("{text}");
    if let Some(path) = &s.log {
        write_log(path, &runs);
    }
    let failed = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failure(_)))
        .count();
    let refused = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Unsupported { .. }))
        .count();
    assert!(
        failed == 0,
        "{failed} of {} random schemas FAILED (seeds and SQL above):\n{text}",
        runs.len()
    );
    assert!(
        !s.strict || refused == 0,
        "{refused} schema(s) of the CI sample were not fully seeded: its forms are those planck seeds, so this is a regression (or a form to take out of the sample, with its reason):\n{text}"
    );
}

/// A seed names one schema: the same SQL every time, another seed another.
#[test]
fn a_seed_always_gives_the_same_schema() {
    let all: Vec<&Form> = FORMS.iter().collect();
    for seed in 0..200 {
        assert_eq!(
            grammar::schema(seed, &all).sql(),
            grammar::schema(seed, &all).sql()
        );
    }
    let distinct: BTreeSet<String> = (0..50)
        .map(|seed| grammar::schema(seed, &all).sql())
        .collect();
    assert_eq!(distinct.len(), 50);
    // Every form is drawn somewhere in the first 200 seeds.
    let drawn: BTreeSet<&str> = (0..200)
        .flat_map(|seed| grammar::schema(seed, &all).forms)
        .collect();
    let never: Vec<&str> = FORMS
        .iter()
        .map(|f| f.name)
        .filter(|n| !drawn.contains(n))
        .collect();
    assert!(never.is_empty(), "never drawn: {never:?}");
}

/// The judge is not a rubber stamp: after a real seed, a CHECK the catalog
/// calls validated but a row breaks, and a table left empty, are each a
/// FAILURE naming them.
#[test]
fn the_judge_fails_a_seed_that_left_a_constraint_broken_or_a_table_empty() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE judge_parent (id serial PRIMARY KEY, name text NOT NULL);
         CREATE TABLE judge_child (id serial PRIMARY KEY,
             parent integer NOT NULL REFERENCES judge_parent,
             n integer NOT NULL CONSTRAINT n_positive CHECK (n > 0));
         CREATE TABLE judge_lone (id serial PRIMARY KEY, label text);",
    );
    let s = Settings {
        forms: Vec::new(),
        ..settings()
    };
    let before = Before::of(&db);
    let (code, summary) = match run_planck(&s, &db, 1) {
        Ok(x) => x,
        Err(e) => panic!("{e}"),
    };
    let outcome = judge(&db, &before, code, &summary);
    assert!(matches!(outcome, Outcome::Seeded), "{outcome:?}");
    db.exec(
        "ALTER TABLE judge_child DROP CONSTRAINT n_positive;
         INSERT INTO judge_child (parent, n) SELECT min(id), -1 FROM judge_parent;
         ALTER TABLE judge_child ADD CONSTRAINT n_positive CHECK (n > 0) NOT VALID;
         UPDATE pg_constraint SET convalidated = true WHERE conname = 'n_positive';
         TRUNCATE judge_lone;",
    );
    match judge(&db, &before, code, &summary) {
        Outcome::Failure(why) => {
            assert!(why.contains("n_positive"), "{why}");
            assert!(why.contains("judge_lone is empty"), "{why}");
        }
        o => panic!("the judge passed a broken seed: {o:?}"),
    }
}

fn run_one(s: &Settings, seed: u64, kept: &AtomicUsize) -> Run {
    let started = Instant::now();
    let schema = grammar::schema(seed, &s.forms);
    let sql = schema.sql();
    let db = TestDb::new(&format!("seed_fuzz_{seed}"));
    let outcome = match try_exec(&db, &sql) {
        Err(e) => Outcome::Failure(format!(
            "the generated schema does not load (a fuzzer bug): {e}"
        )),
        Ok(()) => {
            let before = Before::of(&db);
            match run_planck(s, &db, seed) {
                Ok((code, summary)) => judge(&db, &before, code, &summary),
                Err(why) => Outcome::Failure(why),
            }
        }
    };
    let text = match &outcome {
        Outcome::Seeded => String::new(),
        Outcome::Unsupported { named, .. } => named.iter().cloned().collect::<Vec<_>>().join(" "),
        Outcome::Failure(why) => why.clone(),
    };
    let blamed = tokens(&text)
        .filter_map(|t| t.split_once("__").map(|(f, _)| f.to_string()))
        .filter(|f| grammar::form(f).is_some())
        .collect();
    // The first few failing databases stay for inspection.
    let keep = matches!(outcome, Outcome::Failure(_)) && kept.fetch_add(1, Ordering::SeqCst) < 3;
    let kept = keep.then(|| db.url.clone());
    if keep {
        std::mem::forget(db);
    }
    Run {
        seed,
        sql,
        forms: schema.forms,
        outcome,
        blamed,
        secs: started.elapsed().as_secs_f64(),
        kept,
    }
}

/// Runs zero-spec `planck seed` (the JSON summary on stdout), bounded by
/// the timeout; the exit code and the summary, or why there is none.
fn run_planck(s: &Settings, db: &TestDb, seed: u64) -> Result<(i32, serde_json::Value), String> {
    let dir = common::project_dir();
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    let mut cmd = planck(s, dir.path());
    cmd.args([
        "--database-url",
        &db.url,
        "--format",
        "json",
        "seed",
        "--no-spec",
        "--rows",
        &s.rows.to_string(),
        "--threads",
        "1",
        "--seed",
        &seed.to_string(),
        "--verbose",
    ])
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out_path).unwrap())
    .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("planck did not start: {e}"))?;
    let deadline = Instant::now() + s.timeout;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
            return Err(format!(
                "no result after {} s (stopped); its last lines: {}",
                s.timeout.as_secs(),
                tail(&stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if let Some(l) = stderr.lines().find(|l| l.contains("panicked")) {
        return Err(format!("planck panicked: {l}"));
    }
    let code = status.code().unwrap_or(-1);
    if code != 0 && code != 1 {
        return Err(format!("planck exited {code}: {}", tail(&stderr)));
    }
    let summary = serde_json::from_str(&stdout).map_err(|e| {
        format!(
            "exit {code} without a JSON summary ({e}): {}",
            tail(&stderr)
        )
    })?;
    Ok((code, summary))
}

/// The planck command: this build's, or `PLANCK_FUZZ_BIN`'s with the same
/// environment (no database settings leaking in).
fn planck(s: &Settings, cwd: &Path) -> Command {
    let base = common::planck_cmd(cwd);
    let Some(bin) = &s.bin else {
        return base;
    };
    let mut cmd = Command::new(bin);
    cmd.current_dir(cwd);
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}

/// What the schema was before the seed: its objects, tables and names.
struct Before {
    objects: Vec<String>,
    tables: Vec<String>,
    names: BTreeSet<String>,
}

/// Every constraint (definition, validated), index (definition, valid) and
/// NOT NULL of the schema, one line each.
const OBJECTS: &str = "
SELECT format('constraint %s %s %s validated=%s', conrelid::regclass, conname, pg_get_constraintdef(oid), convalidated)
  FROM pg_constraint WHERE connamespace = 'public'::regnamespace
UNION ALL
SELECT format('index %s valid=%s', pg_get_indexdef(indexrelid), indisvalid)
  FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)
UNION ALL
SELECT format('not null %s.%s', attrelid::regclass, attname)
  FROM pg_attribute WHERE attnotnull AND attnum > 0 AND NOT attisdropped
   AND attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r')
ORDER BY 1";

impl Before {
    fn of(db: &TestDb) -> Before {
        Before {
            objects: db.query_strings(OBJECTS),
            tables: db.query_strings(
                "SELECT oid::regclass::text FROM pg_class
                  WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY 1",
            ),
            names: db
                .query_strings(
                    "SELECT conname::text FROM pg_constraint WHERE connamespace = 'public'::regnamespace
                     UNION SELECT relname::text FROM pg_class
                      WHERE relnamespace = 'public'::regnamespace AND relkind = 'i'",
                )
                .into_iter()
                .collect(),
        }
    }
}

/// The words of a message, as identifiers: `"a__3"` and `a__3,` give `a__3`.
fn tokens(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
}

/// The server's judgement of a seed that exited `code` with `summary`.
fn judge(db: &TestDb, before: &Before, code: i32, summary: &serde_json::Value) -> Outcome {
    let not_seeded: Vec<&serde_json::Value> = summary["not_seeded"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let listed: BTreeSet<&str> = not_seeded
        .iter()
        .filter_map(|n| n["table"].as_str())
        .collect();
    if code == 0 && !listed.is_empty() {
        return Outcome::Failure(format!("exit 0 with tables not seeded: {listed:?}"));
    }
    if code == 1 && listed.is_empty() {
        return Outcome::Failure("exit 1 with no table listed as not seeded".into());
    }
    let mut problems = Vec::new();
    let after = db.query_strings(OBJECTS);
    for o in before.objects.iter().filter(|o| !after.contains(o)) {
        problems.push(format!("lost or changed: {o}"));
    }
    for o in after.iter().filter(|o| !before.objects.contains(o)) {
        problems.push(format!("appeared: {o}"));
    }
    for t in &before.tables {
        let n = db.query_strings(&format!("SELECT count(*) FROM {t}"));
        if n[0] == "0" && !listed.contains(t.as_str()) {
            problems.push(format!("{t} is empty"));
        }
    }
    problems.extend(rejudge(db));
    if !problems.is_empty() {
        return Outcome::Failure(problems.join("; "));
    }
    if code == 0 {
        return Outcome::Seeded;
    }
    // Exit 1: every table not seeded names a constraint or index of the
    // schema, or depends on a table not seeded.
    let mut named = BTreeSet::new();
    let mut reason = String::new();
    let mut unexplained = Vec::new();
    for n in &not_seeded {
        let mut text = n["reason"].as_str().unwrap_or("").to_string();
        for h in n["hints"].as_array().into_iter().flatten() {
            text.push(' ');
            text.push_str(h.as_str().unwrap_or(""));
        }
        let here: Vec<String> = tokens(&text)
            .filter(|t| before.names.contains(*t))
            .map(str::to_string)
            .collect();
        if !here.is_empty() {
            if reason.is_empty() {
                reason = n["reason"].as_str().unwrap_or("").to_string();
            }
            named.extend(here);
        } else if n["depends_on"].is_null() && !text.contains("emptied after the load") {
            unexplained.push(text);
        }
    }
    if named.is_empty() || !unexplained.is_empty() {
        return Outcome::Failure(format!(
            "exit 1 naming no constraint of the schema: {}",
            if unexplained.is_empty() {
                format!("{not_seeded:?}")
            } else {
                unexplained.join(" / ")
            }
        ));
    }
    let at_load = reason.contains("(SQLSTATE 22") || reason.contains("(SQLSTATE 23");
    Outcome::Unsupported {
        named,
        reason,
        at_load,
    }
}

/// The server checks every row again: each CHECK and foreign key dropped
/// and added back (rolled back), each table reindexed.
fn rejudge(db: &TestDb) -> Vec<String> {
    let mut problems = Vec::new();
    let cons = db.query_strings(
        "SELECT conrelid::regclass::text || E'\\t' || quote_ident(conname) || E'\\t' || pg_get_constraintdef(oid)
           FROM pg_constraint WHERE contype IN ('c', 'f') AND connamespace = 'public'::regnamespace
          ORDER BY 1",
    );
    for c in &cons {
        let mut parts = c.splitn(3, '\t');
        let (t, n, def) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        if let Err(e) = try_exec(
            db,
            &format!(
                "BEGIN; ALTER TABLE {t} DROP CONSTRAINT {n}; ALTER TABLE {t} ADD CONSTRAINT {n} {def}; ROLLBACK"
            ),
        ) {
            problems.push(format!("{n} on {t} does not hold: {e}"));
        }
    }
    for t in db.query_strings(
        "SELECT oid::regclass::text FROM pg_class
          WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY 1",
    ) {
        if let Err(e) = try_exec(db, &format!("REINDEX TABLE {t}")) {
            problems.push(format!("a unique index of {t} does not hold: {e}"));
        }
    }
    problems
}

/// Runs SQL on its own connection; the server's error, rendered, on failure.
fn try_exec(db: &TestDb, sql: &str) -> Result<(), String> {
    let conn = db.conn();
    let sql = sql.to_string();
    common::block_on(async move {
        let c = conn.connect().await.map_err(|e| e.to_string())?;
        c.batch_execute(&sql)
            .await
            .map_err(|e| match e.as_db_error() {
                Some(d) => match d.detail() {
                    Some(detail) => format!("{} ({detail})", d.message()),
                    None => d.message().to_string(),
                },
                None => e.to_string(),
            })
    })
}

fn outcome_word(o: &Outcome) -> &'static str {
    match o {
        Outcome::Seeded => "seeded",
        Outcome::Unsupported { at_load: false, .. } => "unsupported",
        Outcome::Unsupported { at_load: true, .. } => "unsupported-at-load",
        Outcome::Failure(_) => "FAILURE",
    }
}

fn line(r: &Run) -> String {
    let forms = r.forms.iter().copied().collect::<Vec<_>>().join(", ");
    let what = match &r.outcome {
        Outcome::Seeded => String::new(),
        Outcome::Unsupported { reason, .. } => format!(": {}", first_line(reason)),
        Outcome::Failure(why) => format!(": {}", first_line(why)),
    };
    format!(
        "seed fuzz {}: {} in {:.1} s ({forms}){what}",
        r.seed,
        outcome_word(&r.outcome),
        r.secs
    )
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if l.chars().count() > 400 {
        format!("{}...", l.chars().take(400).collect::<String>())
    } else {
        l.to_string()
    }
}

/// Counts, a table per form, the failures with their SQL, and per form the
/// smallest schema it was named in.
fn report(s: &Settings, runs: &[Run], secs: f64) -> String {
    use std::fmt::Write as _;
    let count = |w: &str| {
        runs.iter()
            .filter(|r| outcome_word(&r.outcome) == w)
            .count()
    };
    let mut out = String::new();
    let last = s.first + runs.len().saturating_sub(1) as u64;
    writeln!(
        out,
        "\nseed fuzzer: {} schemas (seeds {}..={last}, {}), --rows {}, {} at once, {:.1} s",
        runs.len(),
        s.first,
        s.label,
        s.rows,
        s.jobs,
        secs
    )
    .unwrap();
    writeln!(
        out,
        "  fully seeded {}, unsupported (exit 1 naming the constraint) {}: refused by planck {}, \
         its rows refused by the server at load {}; FAILURE {}",
        count("seeded"),
        count("unsupported") + count("unsupported-at-load"),
        count("unsupported"),
        count("unsupported-at-load"),
        count("FAILURE")
    )
    .unwrap();
    writeln!(
        out,
        "\n  {:<22} {:>3} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6}\n  {:<22} {:>3} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6}",
        "form", "ci", "schemas", "seeded", "refused", "refused", "FAIL", "named",
        "", "", "with it", "", "(plan)", "(load)", "", "in"
    )
    .unwrap();
    for f in FORMS {
        let with: Vec<&Run> = runs.iter().filter(|r| r.forms.contains(f.name)).collect();
        if with.is_empty() {
            continue;
        }
        let of = |w: &str| {
            with.iter()
                .filter(|r| outcome_word(&r.outcome) == w)
                .count()
        };
        let named = runs.iter().filter(|r| r.blamed.contains(f.name)).count();
        writeln!(
            out,
            "  {:<22} {:>3} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6}",
            f.name,
            if f.ci { "yes" } else { "no" },
            with.len(),
            of("seeded"),
            of("unsupported"),
            of("unsupported-at-load"),
            of("FAILURE"),
            named
        )
        .unwrap();
    }
    for f in FORMS.iter().filter(|f| !f.ci) {
        writeln!(out, "  out of the CI sample: {}: {}", f.name, f.why).unwrap();
    }
    let env = if s.strict {
        String::new()
    } else if s.label == "every form" {
        "PLANCK_FUZZ_ALL=1 ".into()
    } else {
        format!(
            "PLANCK_FUZZ_FORMS={} ",
            s.label.trim_start_matches("forms ")
        )
    };
    let failures: Vec<&Run> = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failure(_)))
        .collect();
    if !failures.is_empty() {
        writeln!(
            out,
            "\n  FAILURES (seeds): {:?}",
            failures.iter().map(|r| r.seed).collect::<Vec<_>>()
        )
        .unwrap();
        for r in &failures {
            if let Outcome::Failure(why) = &r.outcome {
                writeln!(out, "  seed {}: {}", r.seed, first_line(why)).unwrap();
            }
        }
    }
    let refused: Vec<&Run> = runs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Unsupported { .. }))
        .collect();
    if !refused.is_empty() {
        writeln!(
            out,
            "\n  unsupported (seeds): {:?}",
            refused.iter().map(|r| r.seed).collect::<Vec<_>>()
        )
        .unwrap();
    }
    // The SQL: every schema of a run of at most 3, else the first 3 failures
    // (or refusals on the CI sample).
    let shown: Vec<&Run> = if runs.len() <= 3 {
        runs.iter().collect()
    } else if !failures.is_empty() {
        failures.iter().take(3).copied().collect()
    } else if s.strict {
        refused.iter().take(3).copied().collect()
    } else {
        Vec::new()
    };
    for r in shown {
        writeln!(
            out,
            "\n  --- seed {} ({}{}){}\n  reproduce: {env}PLANCK_FUZZ_SEED={} PLANCK_FUZZ_SCHEMAS=1 cargo test --test it -- seed_fuzz:: --nocapture\n{}",
            r.seed,
            outcome_word(&r.outcome),
            match &r.outcome {
                Outcome::Seeded => String::new(),
                Outcome::Unsupported { reason, .. } => format!(": {}", first_line(reason)),
                Outcome::Failure(why) => format!(": {}", first_line(why)),
            },
            r.kept.as_ref().map(|u| format!("\n  database kept: {u}")).unwrap_or_default(),
            r.seed,
            r.sql
        )
        .unwrap();
    }
    // Per form named in an outcome: its smallest schema, to start from.
    let mut smallest: BTreeMap<&str, &Run> = BTreeMap::new();
    for r in runs {
        for f in &r.blamed {
            let f = grammar::form(f).unwrap().name;
            let e = smallest.entry(f).or_insert(r);
            if r.sql.len() < e.sql.len() {
                *e = r;
            }
        }
    }
    if !smallest.is_empty() && runs.len() > 3 {
        writeln!(out, "\n  smallest schema naming each form (seed: outcome):").unwrap();
        for (f, r) in &smallest {
            writeln!(out, "  {f}: seed {} ({})", r.seed, outcome_word(&r.outcome)).unwrap();
        }
    }
    out
}

/// One TSV line per schema: seed, outcome, forms, forms named, the reason
/// (first line), the SQL with its newlines escaped.
fn write_log(path: &Path, runs: &[Run]) {
    let mut f = std::fs::File::create(path).unwrap();
    for r in runs {
        let why = match &r.outcome {
            Outcome::Seeded => String::new(),
            Outcome::Unsupported { reason, .. } => first_line(reason),
            Outcome::Failure(why) => first_line(why),
        };
        writeln!(
            f,
            "{}\t{}\t{}\t{}\t{}\t{:.1}\t{}",
            r.seed,
            outcome_word(&r.outcome),
            r.forms.iter().copied().collect::<Vec<_>>().join(","),
            r.blamed.iter().cloned().collect::<Vec<_>>().join(","),
            why.replace('\t', " "),
            r.secs,
            r.sql
                .replace('\\', "\\\\")
                .replace('\n', "\\n")
                .replace('\t', " ")
        )
        .unwrap();
    }
}
