//! Running the command `record` wraps: the test suite, pointed at the target.
//!
//! The child gets `DATABASE_URL` and the libpq variables (`PGHOST`, `PGPORT`,
//! `PGUSER`, `PGDATABASE`, and `PGPASSWORD` when the URL has one), so both
//! URL-reading suites and libpq clients such as psql talk to the database
//! being recorded (`PGHOSTADDR` and `PGSERVICE`, which would override them,
//! are removed). Its stdout goes to planck's stderr: planck's stdout carries
//! the summary, so `planck record --format json | jq` keeps working.

use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio_postgres::config::Host;

use crate::db::ConnInfo;
use crate::error::{Error, Result};
use crate::output::Log;
use crate::signal::Stop;

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }

    pub fn describe(self) -> String {
        match self {
            Exit::Code(c) => format!("exited with status {c}"),
            Exit::Signal(s) => format!("was killed by signal {s} ({})", signal_name(s)),
        }
    }
}

/// Linux signal names, for messages.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => "unknown signal",
    }
}

pub use crate::output::shell_words;

/// Finds the program before anything is reset, so a typo costs nothing.
pub fn resolve_program(
    program: &str,
    path_var: Option<&std::ffi::OsStr>,
    cwd: &Path,
) -> Result<PathBuf> {
    let not_found = |message: &str, hint: &str| Error::Command {
        program: program.to_string(),
        message: message.to_string(),
        hint: Some(hint.to_string()),
    };
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return Err(not_found(
            "the command is empty",
            "put the command after `--`",
        ));
    }
    if program.contains('/') {
        let p = cwd.join(program);
        if !p.exists() {
            return Err(not_found(
                "command not found (no such file)",
                "check the path; it is taken from the current directory",
            ));
        }
        if !executable(&p) {
            return Err(not_found(
                "not an executable file",
                &format!(
                    "make it executable (`chmod +x {program}`) or run it through its interpreter"
                ),
            ));
        }
        return Ok(p);
    }
    if let Some(path) = path_var {
        for dir in std::env::split_paths(path) {
            let p = dir.join(program);
            if executable(&p) {
                return Ok(p);
            }
        }
    }
    Err(not_found(
        "command not found in PATH",
        "check the spelling, or give a path (`./run-tests.sh`) for a script in the current directory",
    ))
}

/// The environment that points a child at `conn`.
pub fn env_for(conn: &ConnInfo) -> Vec<(String, String)> {
    let c = &conn.config;
    let url = database_url(conn);
    // PLANCK_DATABASE_URL too: a suite that runs `planck migrate` must
    // migrate the database being recorded.
    let mut env = vec![
        ("DATABASE_URL".to_string(), url.clone()),
        ("PLANCK_DATABASE_URL".to_string(), url),
    ];
    if let Some(h) = c.get_hosts().first() {
        let host = match h {
            Host::Tcp(h) => h.clone(),
            Host::Unix(p) => p.display().to_string(),
        };
        env.push(("PGHOST".into(), host));
    }
    if let Some(p) = c.get_ports().first() {
        env.push(("PGPORT".into(), p.to_string()));
    }
    if let Some(u) = c.get_user() {
        env.push(("PGUSER".into(), u.to_string()));
    }
    env.push(("PGDATABASE".into(), conn.dbname()));
    if let Some(pw) = c.get_password() {
        env.push((
            "PGPASSWORD".into(),
            String::from_utf8_lossy(pw).into_owned(),
        ));
    }
    env
}

/// `DATABASE_URL` must be a URL for most suites: a key=value target is
/// rewritten as one.
fn database_url(conn: &ConnInfo) -> String {
    if conn.url.starts_with("postgres://") || conn.url.starts_with("postgresql://") {
        return conn.url.clone();
    }
    let c = &conn.config;
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    let mut auth = String::new();
    if let Some(u) = c.get_user() {
        auth.push_str(&enc(u));
        if let Some(pw) = c.get_password() {
            auth.push(':');
            auth.push_str(&enc(&String::from_utf8_lossy(pw)));
        }
        auth.push('@');
    }
    let port = c.get_ports().first().copied().unwrap_or(5432);
    match c.get_hosts().first() {
        Some(Host::Unix(p)) => format!(
            "postgres://{auth}/{}?host={}&port={port}",
            enc(&conn.dbname()),
            enc(&p.display().to_string())
        ),
        Some(Host::Tcp(h)) => format!("postgres://{auth}{h}:{port}/{}", enc(&conn.dbname())),
        None => format!("postgres://{auth}localhost:{port}/{}", enc(&conn.dbname())),
    }
}

/// Runs the command to its end. Ctrl-C reaches the child through the
/// terminal; planck waits for it and records what it managed to send.
/// SIGTERM or SIGHUP ends planck's wait with `Error::Interrupted` (exit 143
/// or 129), as those signals ended it before it listened for them.
pub async fn run(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    remove: &[&str],
    cwd: &Path,
    log: Log,
) -> Result<Exit> {
    let io_err = |e: std::io::Error| Error::Command {
        program: program.display().to_string(),
        message: e.to_string(),
        hint: None,
    };
    let stdout = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::inherit());
    let mut command = tokio::process::Command::new(program);
    for k in remove {
        command.env_remove(k);
    }
    let mut child = command
        .args(args)
        // Either would send libpq clients somewhere else than PGHOST says.
        .env_remove("PGHOSTADDR")
        .env_remove("PGSERVICE")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::inherit())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(io_err)?;
    let mut signals = crate::signal::Signals::install()?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(io_err)?,
            s = signals.next() => match s {
                Stop::Interrupt => log.warn(
                    "interrupted: waiting for the command to stop, then recording what it sent",
                ),
                // Not sent to the command by a terminal: planck stops as it
                // did before it listened (the command is not waited for).
                other => {
                    return Err(crate::signal::interrupted(
                        other,
                        "nothing was recorded; the command was not waited for",
                    ));
                }
            },
        }
    };
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(s)) => Exit::Signal(s),
        (None, None) => Exit::Code(-1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_points_at_the_target() {
        let conn = ConnInfo::parse("postgres://app:s%40cret@db.example:6543/shop", false).unwrap();
        let env = env_for(&conn);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("DATABASE_URL"),
            Some("postgres://app:s%40cret@db.example:6543/shop")
        );
        assert_eq!(get("PGHOST"), Some("db.example"));
        assert_eq!(get("PGPORT"), Some("6543"));
        assert_eq!(get("PGUSER"), Some("app"));
        assert_eq!(get("PGDATABASE"), Some("shop"));
        assert_eq!(get("PGPASSWORD"), Some("s@cret"));
        let kv = ConnInfo::parse("host=h port=1 user=u dbname=d", false).unwrap();
        let env = env_for(&kv);
        assert_eq!(env[0].1, "postgres://u@h:1/d");
        assert!(!env.iter().any(|(k, _)| k == "PGPASSWORD"));
    }

    #[test]
    fn shell_words_quote_what_a_shell_would_split() {
        let w = |v: &[&str]| shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w(&["npm", "run", "test it"]), "npm run 'test it'");
        assert_eq!(w(&["echo", "it's", ""]), "echo 'it'\\''s' ''");
        assert_eq!(w(&["./t.sh", "--x=1,2"]), "./t.sh --x=1,2");
    }

    #[test]
    fn missing_programs_are_found_early() {
        let cwd = std::env::temp_dir();
        let path = std::env::var_os("PATH");
        assert!(resolve_program("sh", path.as_deref(), &cwd).is_ok());
        let e = resolve_program("no-such-planck-cmd", path.as_deref(), &cwd).unwrap_err();
        assert!(e.to_string().contains("command not found"), "{e}");
        let e = resolve_program("./nope.sh", path.as_deref(), &cwd).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
    }
}
