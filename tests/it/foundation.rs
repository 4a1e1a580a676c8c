//! The foundation (issue 2): the CLI, the managed cluster, migrations, and
//! every bad-input case with its exit code and message.

use crate::common;

use std::path::Path;

use common::{assert_exit, planck_cmd, project_dir, stderr, stdout};

/// A managed cluster in a temp project, destroyed at the end of the test.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        Project { dir: project_dir() }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn planck(&self, args: &[&str]) -> std::process::Output {
        planck_cmd(self.path()).args(args).output().unwrap()
    }
    fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.path().join(".planck/data/postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.planck(&["db", "destroy"]);
    }
}

/// A live process: present in /proc and not a zombie waiting to be reaped.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

fn psql_select_one(url: &str) -> String {
    let out = std::process::Command::new("psql")
        .arg(url)
        .args(["-tA", "-c", "SELECT 40 + 2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "psql failed: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

#[test]
fn help_lists_every_subcommand() {
    let out = planck_cmd(Path::new(".")).arg("--help").output().unwrap();
    assert_exit(&out, 0);
    let text = stdout(&out);
    for cmd in [
        "db", "migrate", "seed", "record", "explain", "replay", "stats", "report", "demo",
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("{cmd} "))),
            "{cmd} missing from --help:\n{text}"
        );
    }
}

#[test]
fn report_without_its_input_is_a_usage_error_naming_the_flag() {
    let out = planck_cmd(Path::new(".")).arg("report").output().unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--explain <PATH>"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn db_lifecycle_start_url_stop_reuse() {
    let p = Project::new();
    let out = p.planck(&["db", "start"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("initializing a new cluster"));
    let url = stdout(&out).trim().to_string();
    assert!(url.starts_with("postgres://planck@127.0.0.1:"), "{url}");

    // `db url` prints a URL psql connects to; `--format json` wraps it.
    let out = p.planck(&["db", "url"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), url);
    let out = p.planck(&["db", "url", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["url"], url.as_str());
    // A second start says the server already runs, and keeps its port.
    let out = p.planck(&["db", "start"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("already running"), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), url);
    assert_eq!(psql_select_one(&url), "42");
    std::process::Command::new("psql")
        .arg(&url)
        .args(["-c", "CREATE TABLE kept (x int)"])
        .output()
        .unwrap();

    let out = p.planck(&["db", "status", "--format", "json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["state"], "running");
    assert_eq!(status["url"], url.as_str());

    let pid = p.pid().expect("postmaster.pid while running");
    assert!(alive(pid));
    let out = p.planck(&["db", "stop"]);
    assert_exit(&out, 0);
    assert!(
        !alive(pid),
        "server process {pid} still alive after `db stop`"
    );
    // The postmaster's command line does not name the data directory (it is
    // passed through PGDATA), so look for a process working in it.
    let data = std::fs::canonicalize(p.path().join(".planck/data")).unwrap();
    let leftover: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == data))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(leftover.is_empty(), "leftover: {leftover:?}");
    let out = p.planck(&["db", "status", "--format", "json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["state"], "stopped");

    // A second start reuses the cluster: no initdb, the table is still there.
    let out = p.planck(&["db", "start"]);
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("initializing"), "{}", stderr(&out));
    let url = stdout(&out).trim().to_string();
    let out = std::process::Command::new("psql")
        .arg(&url)
        .args(["-tA", "-c", "SELECT count(*) FROM kept"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "0", "{}", stderr(&out));

    let out = p.planck(&["db", "destroy"]);
    assert_exit(&out, 0);
    assert!(!p.path().join(".planck").exists());
}

#[test]
fn stale_postmaster_pid_is_recovered() {
    let p = Project::new();
    assert_exit(&p.planck(&["db", "start"]), 0);
    assert_exit(&p.planck(&["db", "stop"]), 0);
    let pidfile = p.path().join(".planck/data/postmaster.pid");
    // Two kinds of crash leftovers: a pid that is gone, and a pid reused by a
    // live process that is not postgres (this test process).
    for stale_pid in [4_000_000u32, std::process::id()] {
        std::fs::write(
            &pidfile,
            format!("{stale_pid}\n/x\n1700000000\n5432\n/tmp\n127.0.0.1\n  1234  5678\nready\n"),
        )
        .unwrap();
        let out = p.planck(&["db", "start"]);
        assert_exit(&out, 0);
        assert!(stderr(&out).contains("stale"), "{}", stderr(&out));
        assert_eq!(psql_select_one(stdout(&out).trim()), "42");
        assert_exit(&p.planck(&["db", "stop"]), 0);
    }
}

#[test]
fn a_project_below_a_folder_only_its_owner_may_enter_works() {
    // `mktemp -d` folders are 0700: as root, the `postgres` OS user that runs
    // the server cannot reach a checkout inside one.
    use std::os::unix::fs::PermissionsExt;
    let outer = project_dir();
    let locked = outer.path().join("locked");
    let proj = locked.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    let run = |args: &[&str]| planck_cmd(&proj).args(args).output().unwrap();
    let out = run(&["db", "start"]);
    assert_exit(&out, 0);
    assert_eq!(psql_select_one(stdout(&out).trim()), "42");
    let note = proj.join(".planck/home");
    let root = planck::cluster::running_as_root();
    assert_eq!(
        note.exists(),
        root,
        "the server's files move out only when run as root"
    );
    let home = std::fs::read_to_string(&note).unwrap_or_default();
    assert_exit(&run(&["db", "stop"]), 0);
    assert_exit(&run(&["db", "start"]), 0);
    assert_exit(&run(&["db", "destroy"]), 0);
    assert!(!proj.join(".planck").exists());
    if root {
        assert!(!Path::new(home.trim()).exists(), "{home} left behind");
    }
}

#[test]
fn port_in_use_is_a_clear_error() {
    let p = Project::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = p.planck(&["db", "start", "--port", &port]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(&format!("port {port} is in use")), "{err}");
    assert!(err.contains("hint:"), "{err}");
    // Without --port, planck picks a free one.
    let out = p.planck(&["db", "start"]);
    assert_exit(&out, 0);
}

#[test]
fn missing_server_binaries_say_how_to_install() {
    let out = planck_cmd(Path::new("."))
        .env("PLANCK_PG_BINDIR", "/nonexistent/pg/bin")
        .args(["db", "start"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("no initdb"), "{err}");
    assert!(
        err.contains("apt-get install postgresql postgresql-contrib"),
        "{err}"
    );
    assert!(err.contains("--database-url"), "{err}");
}

#[test]
fn unreachable_server_exits_3() {
    // Port 1 on loopback: nothing listens there.
    let out = planck_cmd(Path::new("."))
        .args([
            "--database-url",
            "postgres://u:topsecret@127.0.0.1:1/x",
            "migrate",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("cannot connect to postgres://u:***@127.0.0.1:1/x"),
        "{err}"
    );
    assert!(!err.contains("topsecret"), "password leaked: {err}");
}

#[test]
fn connection_errors_name_where_the_url_came_from() {
    // A DATABASE_URL exported for the user's own app must not redirect planck silently.
    let out = planck_cmd(Path::new("."))
        .env("DATABASE_URL", "postgres://app:pw@127.0.0.1:1/app")
        .arg("migrate")
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("postgres://app:***@127.0.0.1:1/app (from DATABASE_URL)"),
        "{err}"
    );
}

#[test]
fn wrong_password_exits_3() {
    let db = test_db!();
    db.exec(
        "DO $$ BEGIN CREATE ROLE planck_pw_test LOGIN PASSWORD 'right';
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;",
    );
    let c = common::cluster();
    let url = format!(
        "postgres://planck_pw_test:wrong@127.0.0.1:{}/{}",
        c.port, db.name
    );
    let out = planck_cmd(Path::new("."))
        .args(["--database-url", &url, "migrate"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("28P01"), "{err}");
    assert!(!err.contains(":wrong@"), "password leaked: {err}");
}

#[test]
fn missing_database_exits_3() {
    let c = common::cluster();
    let url = c.cluster.url(c.port, "no_such_database_here");
    let out = planck_cmd(Path::new("."))
        .args(["--database-url", &url, "migrate"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("does not exist"), "{err}");
    assert!(err.contains("3D000"), "{err}");
}

#[test]
fn malformed_url_exits_2() {
    let out = planck_cmd(Path::new("."))
        .args([
            "--database-url",
            "postgres://u:pw@host:notaport/db",
            "migrate",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("malformed database URL"), "{err}");
    assert!(!err.contains(":pw@"), "password leaked: {err}");
}

#[test]
fn database_url_env_is_used() {
    let db = test_db!();
    let dir = project_dir();
    std::fs::create_dir(dir.path().join("migrations")).unwrap();
    std::fs::write(
        dir.path().join("migrations/0001.sql"),
        "CREATE TABLE from_env (x int);",
    )
    .unwrap();
    let out = planck_cmd(dir.path())
        .env("DATABASE_URL", &db.url)
        .arg("migrate")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_tables WHERE tablename = 'from_env'"),
        ["1"]
    );
}

#[test]
fn config_syntax_error_names_file_line_col() {
    let dir = project_dir();
    std::fs::write(
        dir.path().join("planck.toml"),
        "[database]\nurl = \"postgres://x\"\n[tenant\nrole = 1\n",
    )
    .unwrap();
    let sub = dir.path().join("deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    // Found by walking up from a subdirectory.
    let out = planck_cmd(&sub).arg("migrate").output().unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("planck.toml:3:"), "{err}");
}

#[test]
fn config_unknown_key_is_an_error() {
    let dir = project_dir();
    std::fs::write(dir.path().join("planck.toml"), "[explain]\nmin_rowz = 5\n").unwrap();
    let out = planck_cmd(dir.path()).arg("migrate").output().unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("planck.toml:2:1"), "{err}");
    assert!(err.contains("min_rowz"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn bundled_migrations_apply_and_are_recorded() {
    let db = test_db!(migrated);
    let applied = db.query_strings("SELECT name FROM planck_migrations ORDER BY name");
    assert!(applied.len() >= 4, "{applied:?}");
    // RLS on the tenant tables, an app role without BYPASSRLS, a literal partial index.
    assert_eq!(
        db.query_strings("SELECT relrowsecurity::text FROM pg_class WHERE relname = 'items'"),
        ["true"]
    );
    assert_eq!(
        db.query_strings("SELECT rolbypassrls::text FROM pg_roles WHERE rolname = 'app_user'"),
        ["false"]
    );
    let partial =
        db.query_strings("SELECT indexdef FROM pg_indexes WHERE indexdef LIKE '%WHERE%''%'");
    assert!(!partial.is_empty(), "no partial index with a literal");
    // Re-running is a no-op.
    let out = db.planck(&["migrate", "--format", "json"], &common::repo_root());
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["applied"].as_array().unwrap().len(), 0);
}

/// A project with its own migrations folder.
fn migrations_project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = project_dir();
    std::fs::create_dir(dir.path().join("migrations")).unwrap();
    for (name, sql) in files {
        std::fs::write(dir.path().join("migrations").join(name), sql).unwrap();
    }
    dir
}

#[test]
fn migration_syntax_error_names_file_line_col_and_keeps_earlier_ones() {
    let db = test_db!();
    let dir = migrations_project(&[
        ("0001_ok.sql", "CREATE TABLE first (id int);\n"),
        (
            "0002_bad.sql",
            "-- a comment\nCREATE TABLE second (\n  id int,\n  name txet\n);\n",
        ),
    ]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("0002_bad.sql:4:8"), "{err}");
    assert!(err.contains("type \"txet\" does not exist"), "{err}");
    assert!(err.contains("42704"), "{err}");
    assert_eq!(
        db.query_strings("SELECT name FROM planck_migrations"),
        ["0001_ok.sql"]
    );
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_tables WHERE tablename IN ('first', 'second')"),
        ["1"]
    );
}

#[test]
fn migration_error_shows_detail_and_hint() {
    let db = test_db!();
    let dir = migrations_project(&[(
        "0001.sql",
        "CREATE TABLE t (id int PRIMARY KEY);\nINSERT INTO t VALUES (1), (1);\n",
    )]);
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("duplicate key value"), "{err}");
    assert!(
        err.contains("DETAIL: Key (id)=(1) already exists."),
        "{err}"
    );
}

#[test]
fn modified_applied_migration_is_refused() {
    let db = test_db!();
    let dir = migrations_project(&[("0001_t.sql", "CREATE TABLE t (id int);\n")]);
    assert_exit(&db.planck(&["migrate"], dir.path()), 0);
    std::fs::write(
        dir.path().join("migrations/0001_t.sql"),
        "CREATE TABLE t (id bigint);\n",
    )
    .unwrap();
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("0001_t.sql was changed after it was applied"),
        "{err}"
    );
}

#[test]
fn fresh_is_refused_on_an_unmanaged_database_without_force() {
    let db = test_db!();
    db.exec("CREATE TABLE precious (x int)");
    let dir = migrations_project(&[("0001.sql", "CREATE TABLE t (id int);\n")]);
    let out = db.planck(&["migrate", "--fresh"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("refusing to drop"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_tables WHERE tablename = 'precious'"),
        ["1"]
    );
    let out = db.planck(&["migrate", "--fresh", "--force"], dir.path());
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings("SELECT count(*) FROM pg_tables WHERE tablename = 'precious'"),
        ["0"]
    );
}

#[test]
fn no_migrations_folder_is_a_usage_error() {
    let db = test_db!();
    let dir = project_dir();
    let out = db.planck(&["migrate"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no migrations folder"),
        "{}",
        stderr(&out)
    );
}

/// The subcommands a user sees (`--help`, completions, man pages): every one
/// but the hidden ones and clap's own `help`.
fn visible_subcommands() -> Vec<String> {
    use clap::CommandFactory;
    planck::cli::Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect()
}

/// The subcommands `--help` does not list (`example-app`).
fn hidden_subcommands() -> Vec<String> {
    use clap::CommandFactory;
    planck::cli::Cli::command()
        .get_subcommands()
        .filter(|s| s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect()
}

/// Runs `planck completions bash` sourced in bash and asks its completion
/// function for the words after `line` (the word being typed last).
fn bash_completes(script: &Path, line: &[&str]) -> Vec<String> {
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let cword = line.len() - 1;
    let prev = if cword > 0 { line[cword - 1] } else { "" };
    let body = format!(
        "source '{}'; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _planck planck '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        line.join(" "),
        line[cword]
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &body])
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(str::to_string).collect()
}

/// Issue 33, 4: `planck completions bash`, sourced in bash, completes the
/// subcommands and each one's flags; it needs no planck.toml (a broken one
/// in the folder does not stop it).
#[test]
fn bash_completion_completes_subcommands_and_flags() {
    let dir = project_dir();
    std::fs::write(dir.path().join("planck.toml"), "[seed\nbroken").unwrap();
    let out = planck_cmd(dir.path())
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let script = dir.path().join("planck.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let all = bash_completes(&script, &["planck", ""]);
    for sub in visible_subcommands() {
        assert!(all.contains(&sub), "{sub} missing from {all:?}");
    }
    // Issue 48, 6: a hidden subcommand (example-app) is not offered.
    let hidden = hidden_subcommands();
    assert!(!hidden.is_empty());
    for sub in &hidden {
        assert!(!all.contains(sub), "hidden {sub} offered: {all:?}");
    }
    assert_eq!(bash_completes(&script, &["planck", "se"]), ["seed"]);
    let flags = bash_completes(&script, &["planck", "seed", "--tr"]);
    assert_eq!(flags, ["--truncate"]);
    let flags = bash_completes(&script, &["planck", "replay", "--lad"]);
    assert_eq!(flags, ["--ladder"]);
}

/// Renders a man page with `man -l` as a user reads it (plain text).
fn man_text(page: &Path) -> String {
    let out = std::process::Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(page)
        .env("MANWIDTH", "200")
        .env("MAN_KEEP_FORMATTING", "0")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            // Counted as a skip, and a failure under CI, which installs man.
            crate::common::skip::skip(
                crate::common::Skip::Missing,
                &crate::common::current_test(),
                &format!("the man command is missing ({e}); CI installs it"),
            );
            return String::new();
        }
    };
    assert!(out.status.success(), "{}", stderr(&out));
    // Bold and underline as overstrikes, if any: keep the letters.
    let text = stdout(&out);
    let mut plain = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain
}

/// Issue 33, 4: `planck man` renders planck(1) naming every subcommand, and
/// `--out-dir` writes one page per subcommand that renders with its name,
/// its flags and its examples; neither needs a planck.toml.
#[test]
fn man_pages_render_and_cover_every_subcommand() {
    let dir = project_dir();
    std::fs::write(dir.path().join("planck.toml"), "[seed\nbroken").unwrap();
    let out = planck_cmd(dir.path()).arg("man").output().unwrap();
    assert_exit(&out, 0);
    let page = dir.path().join("planck.1");
    std::fs::write(&page, &out.stdout).unwrap();
    // Issue 48, 6: the NAME line says the name once ("planck - shows, ...").
    let roff = stdout(&out);
    let name = roff
        .split_once(".SH NAME\n")
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("no NAME section:\n{roff}"));
    assert!(name.starts_with("planck \\- shows"), "{name}");
    let text = man_text(&page);
    if text.is_empty() {
        return;
    }
    assert!(text.contains("SYNOPSIS"), "{text}");
    for sub in visible_subcommands() {
        assert!(
            text.contains(&format!("planck-{sub}(1)")),
            "planck-{sub}(1) missing:\n{text}"
        );
    }
    let mandir = dir.path().join("man1");
    let out = planck_cmd(dir.path())
        .args(["man", "--out-dir"])
        .arg(&mandir)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    for sub in visible_subcommands() {
        let text = man_text(&mandir.join(format!("planck-{sub}.1")));
        assert!(text.contains(&format!("planck-{sub}")), "{sub}:\n{text}");
        assert!(text.contains("Examples:"), "{sub} has no examples:\n{text}");
    }
    let seed = man_text(&mandir.join("planck-seed.1"));
    assert!(seed.contains("--truncate"), "{seed}");
}

/// Issue 33, 4: every subcommand's `--help` ends with two or three real
/// examples, each a command line that starts with planck (or psql on
/// planck's URL), under an `Examples:` heading.
#[test]
fn every_subcommand_help_has_examples() {
    let dir = project_dir();
    for sub in visible_subcommands() {
        let out = planck_cmd(dir.path())
            .args([sub.as_str(), "--help"])
            .output()
            .unwrap();
        assert_exit(&out, 0);
        let help = stdout(&out);
        let Some((_, examples)) = help.split_once("\nExamples:\n") else {
            panic!("planck {sub} --help has no Examples:\n{help}");
        };
        let lines: Vec<&str> = examples
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .filter(|l| l.starts_with("  planck ") || l.starts_with("  psql "))
            .collect();
        assert!(lines.len() >= 2, "planck {sub}: {lines:?}");
    }
}

/// Issue 33, 4: `planck --version` names the PostgreSQL majors it runs on,
/// from the oldest the code accepts.
#[test]
fn version_names_the_postgresql_majors() {
    let dir = project_dir();
    let out = planck_cmd(dir.path()).arg("--version").output().unwrap();
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("planck {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let majors = format!("PostgreSQL servers {}, ", planck::cluster::MIN_MAJOR);
    assert!(text.contains(&majors) && text.contains(" and 18"), "{text}");
}
