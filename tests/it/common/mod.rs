//! Test harness: one throwaway PostgreSQL per test run, one database per test.
//!
//! The cluster is started through planck's own managed-cluster code (the
//! same as `planck db start`), under `/tmp/planck-tests-<hash>/test-cluster-<major>/.planck`
//! (see [`tests_base`]; one per server major), and is
//! shared by every test binary (they serialize on its lock file). Each test
//! gets a fresh database named after it, dropped only when the test passed so
//! a failure can be inspected (`psql` to the URL the test printed).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use planck::cluster::Cluster;
use planck::db::ConnInfo;

pub mod skip;
pub use skip::Skip;

pub struct TestCluster {
    pub cluster: Cluster,
    pub port: u16,
    /// The server's major version (15, 18): where the server itself differs,
    /// a test asserts what the version in use does.
    pub major: u32,
}

/// The test cluster's major version.
pub fn server_major() -> u32 {
    cluster().major
}

/// Where the test cluster and the tests' project directories live:
/// `/tmp/planck-tests-<hash of this checkout>`, open to every user. Not under
/// `target/`: when the tests run as root the server runs as the `postgres` OS
/// user, which could not enter a checkout below a folder only root may enter
/// (`mktemp -d` makes those). The path is written to `target/tmp/test-base`
/// so `.ci/run` can stop the cluster.
pub fn tests_base() -> PathBuf {
    use sha2::Digest;
    use std::os::unix::fs::PermissionsExt;
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let h = sha2::Sha256::digest(env!("CARGO_MANIFEST_DIR").as_bytes());
        let tag: String = h.iter().take(6).map(|b| format!("{b:02x}")).collect();
        let base = std::env::temp_dir().join(format!("planck-tests-{tag}"));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
        let note = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(&note).unwrap();
        std::fs::write(note.join("test-base"), base.display().to_string()).unwrap();
        base
    })
    .clone()
}

/// The shared test cluster, started on first use.
pub fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let bindir = bindir();
        // One cluster per major: a data directory is bound to the major
        // that made it, and a run on 18 after one on 15 must not meet 15's.
        let major = planck::cluster::server_major(&bindir).expect("the server's version");
        let dir = tests_base().join(format!("test-cluster-{major}"));
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster::at(dir.join(".planck"), bindir);
        // The mark first: an earlier run's watcher that sees it leaves the
        // cluster up for this run.
        stop_when_the_run_ends(&dir);
        let port = cluster
            .start(None, &mut |m| eprintln!("test cluster: {m}"))
            .expect("starting the test cluster");
        TestCluster {
            cluster,
            port,
            major,
        }
    })
}

/// Stops the test cluster once the `cargo test` that runs this binary has
/// exited, so a run leaves no server behind. The first binary of a run
/// starts a watcher of its own (a small shell loop, in its own process
/// group, so a test's signals never reach it); the run's later binaries
/// find the mark it left and the cluster still up. A watcher stops the
/// cluster only when no other live run's mark is there: a `cargo test`
/// started just after another ended keeps the cluster it found.
fn stop_when_the_run_ends(dir: &Path) {
    use std::os::unix::process::CommandExt;
    let run = std::os::unix::process::parent_id();
    let mark = dir.join(format!("stop-after-{run}"));
    let first = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&mark)
        .is_ok();
    if !first {
        return;
    }
    let watch = r#"while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
rm -f "$4"
for m in "$2"/stop-after-*; do [ -e "$m" ] && kill -0 "${m##*stop-after-}" 2>/dev/null && exit 0; done
cd "$2" && "$3" -q db stop >/dev/null 2>&1"#;
    let watcher = Command::new("sh")
        .args(["-c", watch, "sh", &run.to_string()])
        .arg(dir)
        .arg(env!("CARGO_BIN_EXE_planck"))
        .arg(&mark)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
    if let Err(e) = watcher {
        eprintln!("test cluster: it will be left running (no watcher: {e})");
        let _ = std::fs::remove_file(&mark);
    }
}

/// Runs a future to completion on a runtime of its own, on another thread, so
/// it works from sync code and from inside a test's own runtime alike.
pub fn block_on<F, T>(f: F) -> T
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    })
    .join()
    .unwrap()
}

/// A fresh database for one test.
pub struct TestDb {
    pub name: String,
    pub url: String,
}

impl TestDb {
    /// Creates database `t_<test_name>` (dropping a leftover of an earlier failed run).
    pub fn new(test_name: &str) -> TestDb {
        let c = cluster();
        let name = database_name(test_name);
        let admin_url = c.cluster.url(c.port, "postgres");
        let n = name.clone();
        block_on(async move {
            let admin = ConnInfo::parse(&admin_url, true)
                .unwrap()
                .connect()
                .await
                .unwrap();
            admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {n} WITH (FORCE)"))
                .await
                .unwrap();
            // `template1 is being accessed by other users` (55006) while
            // another test's server work still holds it: wait and retry.
            let mut tries = 0;
            loop {
                match admin.batch_execute(&format!("CREATE DATABASE {n}")).await {
                    Ok(()) => break,
                    Err(e)
                        if tries < 20
                            && e.code()
                                == Some(&tokio_postgres::error::SqlState::OBJECT_IN_USE) =>
                    {
                        tries += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                    }
                    Err(e) => panic!("CREATE DATABASE {n}: {e:?}"),
                }
            }
        });
        let url = c.cluster.url(c.port, &name);
        eprintln!("test database: {url}");
        TestDb { name, url }
    }

    /// A fresh database with the bundled example's migrations applied.
    pub fn migrated(test_name: &str) -> TestDb {
        let db = TestDb::new(test_name);
        let out = db.planck(&["migrate"], &repo_root());
        assert!(out.status.success(), "migrate failed: {}", stderr(&out));
        db
    }

    pub fn conn(&self) -> ConnInfo {
        ConnInfo::parse(&self.url, true).unwrap()
    }

    pub async fn client(&self) -> tokio_postgres::Client {
        self.conn().connect().await.unwrap()
    }

    /// Runs SQL on this database (simple protocol), panicking on error.
    pub fn exec(&self, sql: &str) {
        let conn = self.conn();
        let sql = sql.to_string();
        block_on(async move {
            conn.connect()
                .await
                .unwrap()
                .batch_execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        });
    }

    /// Runs a query returning one text column, for assertions.
    pub fn query_strings(&self, sql: &str) -> Vec<String> {
        let conn = self.conn();
        let sql = sql.to_string();
        block_on(async move {
            let c = conn.connect().await.unwrap();
            c.simple_query(&sql)
                .await
                .unwrap()
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some(r.get(0).unwrap_or("NULL").to_string())
                    }
                    _ => None,
                })
                .collect()
        })
    }

    /// Runs the planck binary against this database, in `cwd`.
    pub fn planck(&self, args: &[&str], cwd: &Path) -> Output {
        planck_cmd(cwd)
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept test database {} for inspection", self.url);
            return;
        }
        let c = cluster();
        let admin_url = c.cluster.url(c.port, "postgres");
        let n = self.name.clone();
        block_on(async move {
            if let Ok(admin) = ConnInfo::parse(&admin_url, true).unwrap().connect().await {
                let _ = admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {n} WITH (FORCE)"))
                    .await;
            }
        });
    }
}

/// The repository root (the bundled example lives there).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Removes from a command's environment every variable that names a
/// database (planck's, libpq's), so nothing leaks in from the caller's.
pub fn clear_database_env(cmd: &mut Command) {
    for k in [
        "PLANCK_DATABASE_URL",
        "DATABASE_URL",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
    ] {
        cmd.env_remove(k);
    }
}

/// A `planck` command with no database configuration leaking in from the environment.
pub fn planck_cmd(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_planck"));
    cmd.current_dir(cwd);
    // tools/example-app runs this binary rather than `cargo run`.
    cmd.env("PLANCK_BIN", env!("CARGO_BIN_EXE_planck"));
    clear_database_env(&mut cmd);
    cmd
}

/// Starts `planck seed --spec SPEC --scale 0.3 --threads N` and does not wait:
/// at that scale the COPY into items lasts long enough to be caught, even on
/// a busy 2-core machine (at 0.05 it sometimes finished first).
pub fn spawn_seed(db: &TestDb, dir: &Path, spec: &Path, threads: &str) -> std::process::Child {
    planck_cmd(dir)
        .args([
            "--database-url",
            &db.url,
            "seed",
            "--spec",
            spec.to_str().unwrap(),
            "--scale",
            "0.3",
            "--threads",
            threads,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Polls (every 20 ms, at most `tries` times) for a seed's COPY into items,
/// selecting `select` over its backends (`count(*)` to see it,
/// `count(pg_terminate_backend(pid))` to end it the moment it shows);
/// whether it showed.
pub fn on_items_copy(db: &TestDb, select: &str, tries: u32) -> bool {
    for _ in 0..tries {
        let n = db.query_strings(&format!(
            "SELECT {select} FROM pg_stat_activity
              WHERE datname = '{}' AND application_name = 'planck seed' AND query LIKE 'COPY \"public\".\"items\"%'",
            db.name
        ));
        if n[0] != "0" {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// A temporary project directory that the `postgres` OS user can enter
/// (tests run as root in CI; the managed server then runs as `postgres`).
pub fn project_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("proj-")
        .tempdir_in(tests_base())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts an exit code, showing stderr when it differs.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

/// The name of the test function this is called in (ripgrep's `rgtest!`
/// idea): `fn seed_keeps_rows() { let db = test_db!(); }` gets database
/// `t_seed_keeps_rows`, so a kept database always names its test.
#[macro_export]
macro_rules! test_name {
    () => {{
        fn here() {}
        fn name_of<T>(_: T) -> &'static str {
            std::any::type_name::<T>()
        }
        let path = name_of(here);
        let mut path = path.strip_suffix("::here").unwrap_or(path);
        // Called in a closure or an async block: the function around it.
        while let Some(outer) = path.strip_suffix("::{{closure}}") {
            path = outer;
        }
        path.rsplit("::").next().unwrap_or(path)
    }};
}

/// A fresh database named after the calling test function:
/// `test_db!()`, `test_db!(migrated)` (the bundled example's migrations
/// applied), and `test_db!("part")` / `test_db!(migrated, "part")` for a
/// test that needs several (`t_<test>_<part>`).
#[macro_export]
macro_rules! test_db {
    () => {
        $crate::common::TestDb::new($crate::test_name!())
    };
    (migrated) => {
        $crate::common::TestDb::migrated($crate::test_name!())
    };
    ($part:literal) => {
        $crate::common::TestDb::new(&format!("{}_{}", $crate::test_name!(), $part))
    };
    (migrated, $part:literal) => {
        $crate::common::TestDb::migrated(&format!("{}_{}", $crate::test_name!(), $part))
    };
}

/// `t_<test name>`, lowercased, in at most 40 bytes (what `planck check
/// --name` takes, and room for the roles tests name after their database
/// within PostgreSQL's 63): a longer name keeps its first 31 bytes and adds
/// 8 hex digits of a hash of the whole (test names are long sentences; two
/// that share a beginning still get databases of their own).
fn database_name(test_name: &str) -> String {
    let name = format!(
        "t_{}",
        test_name.to_lowercase().replace(['-', ':', ' '], "_")
    );
    if name.len() <= 40 {
        return name;
    }
    // FNV-1a: stable across runs and platforms (std's hasher is not).
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{}_{:08x}", name[..31].trim_end_matches('_'), hash as u32)
}

/// A fixture vendored under `tests/fixtures/` (see its README for licences).
pub fn fixture(rel: &str) -> PathBuf {
    let path = repo_root().join("tests/fixtures").join(rel);
    assert!(path.exists(), "missing vendored fixture {}", path.display());
    path
}

/// A fixture that may not be vendored (its licence does not allow it), read
/// from `../shared/fixtures` beside the checkout. `None` means the calling
/// test skips (recorded as [`Skip::Missing`]: in CI, where `../shared` is
/// always beside the checkout, a missing folder fails instead); the caller
/// returns.
pub fn shared_fixture(rel: &str) -> Option<PathBuf> {
    let path = repo_root().join("../shared/fixtures").join(rel);
    if path.exists() {
        return Some(path);
    }
    skip::skip(
        Skip::Missing,
        &current_test(),
        &format!(
            "{} is not here (it is not vendored; see tests/fixtures/README.md)",
            path.display()
        ),
    );
    None
}

/// The running test's name as libtest prints it (`seed_load::a_test`):
/// libtest runs each test on a thread named after it.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("(a test run outside libtest's thread)")
        .to_string()
}

/// `planck explain --format json` as a test reads it: typed mirror structs
/// of the wire format (format_version 1) that refuse unknown fields, kept
/// here, apart from the crate's own types, so a change to the output shows
/// up as a failing test and not as a silently different report.
pub mod explain_json {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Report {
        pub format_version: u32,
        pub statements: Vec<Statement>,
        pub findings: Vec<Finding>,
        pub summary: Summary,
        #[serde(default)]
        pub environment: Option<Environment>,
        #[serde(default)]
        pub indexes: Vec<Index>,
        #[serde(default)]
        pub below_min_rows: Option<BelowMinRows>,
        #[serde(default)]
        pub not_judged_objects: Option<NotJudgedObjects>,
    }

    /// The indexes and tables no check judged for want of rows (issue 47, 3).
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct NotJudgedObjects {
        pub min_table_rows: u64,
        pub indexes: usize,
        pub objects: Vec<NotJudgedObject>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct NotJudgedObject {
        pub check: String,
        pub table: String,
        pub index: Option<String>,
        pub rows: u64,
        pub reason: String,
    }

    /// Statements that read only tables below min_rows, and those tables.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct BelowMinRows {
        pub min_rows: u64,
        pub statements: Vec<String>,
        pub tables: Vec<TableRows>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct TableRows {
        pub name: String,
        pub rows: u64,
    }

    /// What the report needs beyond the findings (`planck report`).
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Environment {
        pub server_version: String,
        pub settings: std::collections::BTreeMap<String, String>,
        pub tables: Vec<Table>,
        pub tenant: Option<Tenant>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Table {
        pub name: String,
        pub rows: i64,
        pub bytes: i64,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Tenant {
        pub id: String,
        pub share: f64,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Index {
        pub name: String,
        pub table: String,
        pub used_by: Vec<IndexUse>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct IndexUse {
        pub statement_id: String,
        pub mode: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Statement {
        pub id: String,
        pub query: String,
        pub role: Option<String>,
        pub mode: Option<String>,
        pub status: String,
        pub reason: Option<String>,
        pub planned_query: Option<String>,
        pub repairs: Vec<String>,
        pub param_types: Vec<String>,
        pub notes: Vec<String>,
        pub plans: Vec<Plan>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Plan {
        pub mode: String,
        pub kind: String,
        pub tenant: Option<String>,
        pub tenant_id: Option<String>,
        pub params: Vec<Option<String>>,
        pub plan: serde_json::Value,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Finding {
        pub check: String,
        pub severity: String,
        pub mode: Option<String>,
        pub statement_id: Option<String>,
        pub query: Option<String>,
        pub relation: Option<String>,
        pub index: Option<String>,
        pub message: String,
        pub help: String,
        pub baseline: bool,
        pub location: Option<Location>,
        pub node: Option<Node>,
        #[serde(default)]
        pub advice: Option<Advice>,
    }

    /// A finding's verified index, as `explain` writes it.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Advice {
        pub sql: String,
        pub table: String,
        pub columns: Vec<String>,
        pub predicate: Option<String>,
        pub cost_before: f64,
        pub cost_after: f64,
        pub node_before: String,
        pub node_after: String,
        pub verified: bool,
        pub index: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    pub struct Location {
        pub kind: String,
        pub path: String,
        pub line: usize,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    pub struct Node {
        pub plan: usize,
        pub path: Vec<usize>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Summary {
        pub explained: usize,
        pub skipped: usize,
        pub not_judged: usize,
        pub findings: std::collections::BTreeMap<String, usize>,
        pub ignored: usize,
        pub new_errors: usize,
    }

    impl Statement {
        /// Planned: explained, or planned on data too small to judge
        /// (`not_judged`), as opposed to skipped.
        pub fn planned(&self) -> bool {
            self.status == "explained" || self.status == "not_judged"
        }
    }

    impl Report {
        pub fn findings(&self, check: &str) -> Vec<&Finding> {
            self.findings.iter().filter(|f| f.check == check).collect()
        }

        pub fn statement(&self, needle: &str) -> &Statement {
            self.statements
                .iter()
                .find(|s| s.query.contains(needle))
                .unwrap_or_else(|| panic!("no statement with {needle}: {self:#?}"))
        }
    }
}

/// Loads a fixture into `db` the way its README says: `sh load.sh <url>`
/// from the fixture's folder.
pub fn load_fixture(db: &TestDb, fixture_dir: &Path) {
    let script = fixture_dir.join("load.sh");
    let out = Command::new("sh")
        .arg(&script)
        .arg(&db.url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        stderr(&out)
    );
}

/// The Join Order Benchmark's 113 queries (`queries/*.sql` of the `job`
/// fixture), in file order, as one psql script.
pub fn job_script(job: &Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(job.join("queries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 113);
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Loads graphile-starter into `db` and records its own test run
/// (`testrun.sql` through psql, the role and JWT claims set as PostGraphile
/// sets them) into `gs.toml` in `dir`. No seeding: the test run's users,
/// sessions and emails are the data.
pub fn record_graphile_starter(db: &TestDb, dir: &Path) {
    let fx = fixture("graphile-starter");
    load_fixture(db, &fx);
    let testrun = fx.join("testrun.sql").display().to_string();
    let rec = db.planck(
        &[
            "record",
            "-o",
            "gs.toml",
            "--",
            "psql",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            &db.url,
            "-f",
            &testrun,
        ],
        dir,
    );
    assert!(rec.status.success(), "record: {}", stderr(&rec));
}

/// Runs planck in `dir` with no database configured (so: the managed cluster).
pub fn planck_in(dir: &Path, args: &[&str]) -> Output {
    planck_cmd(dir).args(args).output().unwrap()
}

/// Destroys a project's managed cluster (its Citus workers too) when the
/// test ends, passed or not.
pub struct Destroy(pub PathBuf);

impl Drop for Destroy {
    fn drop(&mut self) {
        if self.0.join(".planck").exists() {
            let _ = planck_in(&self.0, &["db", "destroy", "--wait", "0"]);
        }
    }
}

/// The server binaries the tests run (`PLANCK_PG_BINDIR`, else as planck
/// finds them).
pub fn bindir() -> PathBuf {
    planck::cluster::find_bindir(
        std::env::var_os("PLANCK_PG_BINDIR")
            .map(PathBuf::from)
            .as_deref(),
    )
    .expect("PostgreSQL server binaries are needed to run the tests")
}

/// Runs git in `dir` as a test user (the tests' repositories need an
/// author); fails the test, with git's stderr, when git fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=planck test",
            "-c",
            "user.email=test@planck",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The PostgreSQL majors Citus 13.2 (the one `../shared/citus` builds)
/// supports; `.ci/run` installs it into each of them it runs where it can
/// be built (Debian's 15, the npm 16; not the npm 17: see
/// [`citus_unavailable`]; docs/citus.md).
pub const CITUS_MAJORS: [u32; 3] = [15, 16, 17];

/// Why a test that needs Citus cannot run on the server binaries in use, as
/// the kind of skip it is: not applicable on a major Citus does not support;
/// could not run where `.ci/run` found it could not be built (it writes why
/// in `citus-not-built` beside the server's bin/: the npm build of 17 is
/// 17.10, and the only 17 headers reachable are Debian 13's 17.12, whose
/// inline functions call what 17.10 lacks); missing where it could be
/// installed but is not (a failure under CI, which installs it: Debian's 15
/// against its own pg_config, the npm builds against tools/pg-headers'
/// headers of their major; a shown skip elsewhere). `None` when Citus is
/// installed.
pub fn citus_unavailable() -> Option<(Skip, String)> {
    let bindir = bindir();
    let major = planck::cluster::server_major(&bindir).expect("the server's version");
    if !CITUS_MAJORS.contains(&major) {
        return Some((
            Skip::NotApplicable,
            format!("Citus 13.2 supports PostgreSQL 15 to 17, not {major}"),
        ));
    }
    if planck::cluster::citus::installed(&bindir) {
        return None;
    }
    if let Some(why) = bindir
        .parent()
        .and_then(|root| std::fs::read_to_string(root.join("citus-not-built")).ok())
    {
        return Some((
            Skip::CouldNotRun,
            format!(
                "Citus could not be built for the PostgreSQL {major} in {}: {}",
                bindir.display(),
                why.trim()
            ),
        ));
    }
    let pg_config = if bindir.join("pg_config").exists() {
        format!("{}/pg_config", bindir.display())
    } else {
        // The npm builds of 16 and 17 ship no pg_config nor headers.
        format!("$(tools/pg-headers {major} {})", bindir.display())
    };
    Some((
        Skip::Missing,
        format!(
            "Citus is not installed for the PostgreSQL {major} in {} (`PG_CONFIG={pg_config} bash ../shared/citus/build.sh` installs it; .ci/run does)",
            bindir.display()
        ),
    ))
}
