//! libpq's conventions around a connection string: the `PG*` environment
//! variables, the password file (`~/.pgpass`, `PGPASSFILE`) and the service
//! file (`~/.pg_service.conf`, `PGSERVICEFILE`, `PGSYSCONFDIR`).
//!
//! CI set-ups rely on them (a `.pgpass` written by a setup step, `PGSSLMODE`
//! exported for a managed database), so planck reads them with libpq's rules:
//! a keyword given in the connection string wins, then the service file, then
//! the environment variable, then the built-in default.
//!
//! Nothing here reads the process environment itself: [`LibpqEnv`] is a
//! snapshot the settings layer takes once and passes down.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::config::{KEYWORDS, ParseError, Spec};

/// The environment variables libpq reads, taken once (by the settings layer).
///
/// Its `Debug` never shows `PGPASSWORD`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LibpqEnv {
    vars: BTreeMap<&'static str, String>,
}

/// Variables read besides the keywords' own (`PGHOST`, ...).
const OTHER_VARS: &[&str] = &["PGSERVICEFILE", "PGSYSCONFDIR", "HOME", "USER", "LOGNAME"];

impl fmt::Debug for LibpqEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (k, v) in &self.vars {
            if *k == "PGPASSWORD" {
                m.entry(k, &"***");
            } else {
                m.entry(k, v);
            }
        }
        m.finish()
    }
}

impl LibpqEnv {
    /// Takes the variables libpq reads through `get` (empty values count as unset).
    pub fn capture(get: &dyn Fn(&str) -> Option<String>) -> LibpqEnv {
        let names = KEYWORDS
            .iter()
            .filter_map(|k| k.env)
            .chain(OTHER_VARS.iter().copied());
        let vars = names
            .filter_map(|n| get(n).filter(|v| !v.is_empty()).map(|v| (n, v)))
            .collect();
        LibpqEnv { vars }
    }

    /// An environment with nothing set (tests, and the managed cluster).
    pub fn empty() -> LibpqEnv {
        LibpqEnv::default()
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Whether any variable that names a server or login is set: what makes
    /// planck target "the PG* environment variables" rather than its own cluster.
    pub fn names_a_server(&self) -> bool {
        [
            "PGHOST",
            "PGHOSTADDR",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
            "PGPASSWORD",
            "PGSERVICE",
        ]
        .iter()
        .any(|v| self.vars.contains_key(v))
    }

    fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// libpq's `~/.postgresql/<name>`.
    pub(crate) fn postgresql_dir_file(&self, name: &str) -> Option<PathBuf> {
        self.home().map(|h| h.join(".postgresql").join(name))
    }

    /// The OS user name, libpq's default user.
    fn os_user(&self) -> Option<String> {
        self.get("USER")
            .or(self.get("LOGNAME"))
            .map(str::to_string)
            .or_else(user_from_passwd)
    }
}

/// The current user's name from /etc/passwd (when USER and LOGNAME are unset, as in cron).
fn user_from_passwd() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse::<u32>().ok() == Some(uid)).then(|| f[0].to_string())
    })
}

/// libpq's default socket directory on Debian's builds (where psql looks).
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// Fills what the connection string left unset, libpq's way: the service file,
/// then the `PG*` variables, then the defaults (OS user, host). Returns notes
/// for the user (a service file that was read).
pub(crate) fn apply_defaults(spec: &mut Spec, env: &LibpqEnv) -> Result<(), ParseError> {
    let service = spec
        .get("service")
        .map(str::to_string)
        .or_else(|| env.get("PGSERVICE").map(str::to_string));
    if let Some(name) = service {
        apply_service(spec, env, &name)?;
    }
    spec.remove("service");
    for k in KEYWORDS {
        if let Some(var) = k.env
            && k.name != "service"
            && let Some(v) = env.get(var)
        {
            spec.set_default(k.name, v);
        }
    }
    if spec.get("user").is_none()
        && let Some(u) = env.os_user()
    {
        spec.set_default("user", u);
    }
    if spec.get("host").is_none() && spec.get("hostaddr").is_none() {
        spec.set_default("host", default_host(spec.get("port")));
    }
    Ok(())
}

/// libpq's default host is its socket directory; planck takes it when the
/// server's socket is there and `localhost` otherwise.
fn default_host(port: Option<&str>) -> String {
    let port = port
        .and_then(|p| p.split(',').next())
        .filter(|p| !p.is_empty())
        .unwrap_or("5432");
    for dir in [DEFAULT_SOCKET_DIR, "/tmp"] {
        if Path::new(dir).join(format!(".s.PGSQL.{port}")).exists() {
            return dir.to_string();
        }
    }
    "localhost".to_string()
}

// ---- the service file ---------------------------------------------------------

fn service_files(env: &LibpqEnv) -> Vec<PathBuf> {
    let mut files = Vec::new();
    match env.get("PGSERVICEFILE") {
        Some(f) => files.push(PathBuf::from(f)),
        None => {
            if let Some(h) = env.home() {
                files.push(h.join(".pg_service.conf"));
            }
        }
    }
    let sysconf = env
        .get("PGSYSCONFDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/postgresql-common"));
    files.push(sysconf.join("pg_service.conf"));
    files
}

fn apply_service(spec: &mut Spec, env: &LibpqEnv, name: &str) -> Result<(), ParseError> {
    for file in service_files(env) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Some(values) = parse_service_file(&text, name).map_err(|(line, m)| ParseError {
            message: format!("{}:{line}: {m}", file.display()),
        })? {
            for (k, v) in values {
                spec.set_default(&k, v);
            }
            return Ok(());
        }
    }
    Err(ParseError {
        message: format!(
            "definition of service \"{name}\" not found (looked in {})",
            service_files(env)
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// A line number and what is wrong on it.
pub(crate) type ServiceFileError = (usize, String);

/// The keywords of service `name` in a pg_service.conf text, or `None` when it
/// has no such section. Errors carry the line number.
pub(crate) fn parse_service_file(
    text: &str,
    name: &str,
) -> Result<Option<Vec<(String, String)>>, ServiceFileError> {
    let mut found: Option<Vec<(String, String)>> = None;
    let mut in_section = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let section = section
                .strip_suffix(']')
                .ok_or((i + 1, "syntax error: missing \"]\"".to_string()))?;
            if found.is_some() {
                // The section is complete.
                break;
            }
            in_section = section == name;
            if in_section {
                found = Some(Vec::new());
            }
            continue;
        }
        if !in_section {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or((i + 1, "syntax error: expected keyword=value".to_string()))?;
        let (k, v) = (k.trim(), v.trim());
        if k == "service" {
            return Err((
                i + 1,
                "nested service specifications not supported".to_string(),
            ));
        }
        if !KEYWORDS.iter().any(|kw| kw.name == k) {
            return Err((i + 1, format!("syntax error: unknown keyword \"{k}\"")));
        }
        if let Some(f) = found.as_mut() {
            f.push((k.to_string(), v.to_string()));
        }
    }
    Ok(found)
}

// ---- the password file --------------------------------------------------------

/// A loaded password file. Its `Debug` shows only where it came from.
#[derive(Clone)]
pub struct Passfile {
    pub path: PathBuf,
    entries: Vec<[String; 5]>,
}

impl fmt::Debug for Passfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Passfile({}, {} entries)",
            self.path.display(),
            self.entries.len()
        )
    }
}

/// Where libpq would read passwords: `passfile`, `PGPASSFILE`, `~/.pgpass`.
pub(crate) fn passfile_path(spec: &Spec, env: &LibpqEnv) -> Option<PathBuf> {
    spec.get("passfile")
        .map(PathBuf::from)
        .or_else(|| env.home().map(|h| h.join(".pgpass")))
}

impl Passfile {
    /// Reads a password file, libpq's way: a missing file is no file; one
    /// that is not a plain file or that group or others may read is ignored
    /// with a warning (the returned `Err` text).
    pub fn load(path: &Path) -> Result<Option<Passfile>, String> {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None);
        };
        if !meta.is_file() {
            return Err(format!(
                "password file \"{}\" is not a plain file",
                path.display()
            ));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "password file \"{}\" has group or world access; permissions should be \
                 u=rw (0600) or less",
                path.display()
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read password file \"{}\": {e}", path.display()))?;
        Ok(Some(Passfile::parse(path, &text)))
    }

    pub fn parse(path: &Path, text: &str) -> Passfile {
        let entries = text
            .lines()
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(split_pgpass_line)
            .collect();
        Passfile {
            path: path.to_path_buf(),
            entries,
        }
    }

    /// The password for a host, port, database and user: the first matching
    /// line wins; `*` matches anything; a socket in libpq's default directory
    /// (or no host) matches `localhost`.
    pub fn lookup(&self, host: &str, port: u16, dbname: &str, user: &str) -> Option<&str> {
        let host = if host.is_empty() || host == DEFAULT_SOCKET_DIR {
            "localhost"
        } else {
            host
        };
        let port = port.to_string();
        let wanted = [host, port.as_str(), dbname, user];
        self.entries
            .iter()
            .find(|e| {
                e.iter()
                    .zip(wanted)
                    .all(|(field, want)| field == "*" || field == want)
            })
            .map(|e| e[4].as_str())
    }
}

/// Splits `host:port:db:user:password` with `\:` and `\\` escapes. The
/// fifth field is the rest of the line. Lines with fewer fields are skipped.
fn split_pgpass_line(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ':' if fields.len() < 5 => fields.push(String::new()),
            '\\' => {
                if let Some(n) = chars.next() {
                    fields.last_mut().expect("never empty").push(n);
                }
            }
            c => fields.last_mut().expect("never empty").push(c),
        }
    }
    fields.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> LibpqEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LibpqEnv::capture(&move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn pgpass_lines_follow_libpq() {
        let pf = Passfile::parse(
            Path::new("x"),
            "# comment\n\
             db.example:5432:shop:app:first\n\
             db.example:5432:shop:app:second\n\
             *:6543:*:app:any\\:host\n\
             localhost:5432:*:me:sock\n\
             we\\:ird:1:d:u:pa:ss\\\\word\n\
             short:line\n",
        );
        assert_eq!(pf.lookup("db.example", 5432, "shop", "app"), Some("first"));
        assert_eq!(pf.lookup("other", 6543, "x", "app"), Some("any:host"));
        assert_eq!(pf.lookup("other", 6543, "x", "bob"), None);
        assert_eq!(pf.lookup(DEFAULT_SOCKET_DIR, 5432, "d", "me"), Some("sock"));
        assert_eq!(pf.lookup("", 5432, "d", "me"), Some("sock"));
        assert_eq!(pf.lookup("/tmp", 5432, "d", "me"), None);
        assert_eq!(pf.lookup("we:ird", 1, "d", "u"), Some("pa:ss\\word"));
        assert!(!format!("{pf:?}").contains("first"));
    }

    #[test]
    fn pgpass_with_group_access_is_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pgpass");
        std::fs::write(&p, "*:*:*:*:pw\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = Passfile::load(&p).unwrap_err();
        assert!(e.contains("group or world access"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let pf = Passfile::load(&p).unwrap().unwrap();
        assert_eq!(pf.lookup("h", 1, "d", "u"), Some("pw"));
        assert!(Passfile::load(&dir.path().join("none")).unwrap().is_none());
        assert!(Passfile::load(dir.path()).is_err());
    }

    #[test]
    fn service_file_sections() {
        let text = "# services\n[other]\nhost=x\n\n[ci]\nhost = db.ci\nport=6543\n  dbname=app\n[last]\nhost=y\n";
        let v = parse_service_file(text, "ci").unwrap().unwrap();
        assert_eq!(
            v,
            vec![
                ("host".to_string(), "db.ci".to_string()),
                ("port".to_string(), "6543".to_string()),
                ("dbname".to_string(), "app".to_string()),
            ]
        );
        assert_eq!(parse_service_file(text, "none").unwrap(), None);
        assert_eq!(parse_service_file("[a]\nbogus=1\n", "a").unwrap_err().0, 2);
        assert!(parse_service_file("[a]\nservice=b\n", "a").is_err());
        assert!(parse_service_file("[a\n", "a").is_err());
    }

    #[test]
    fn service_then_env_then_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("services.conf");
        std::fs::write(&file, "[ci]\nhost=svc-host\ndbname=svc-db\n").unwrap();
        let e = env(&[
            ("PGSERVICEFILE", file.to_str().unwrap()),
            ("PGSYSCONFDIR", dir.path().to_str().unwrap()),
            ("PGDATABASE", "env-db"),
            ("PGUSER", "env-user"),
            ("PGAPPNAME", "ci-app"),
            ("PGOPTIONS", "-c work_mem=64MB"),
        ]);
        let mut spec = super::super::config::parse("service=ci port=1").unwrap();
        apply_defaults(&mut spec, &e).unwrap();
        assert_eq!(spec.get("host"), Some("svc-host"));
        assert_eq!(spec.get("dbname"), Some("svc-db"), "service beats env");
        assert_eq!(spec.get("user"), Some("env-user"));
        assert_eq!(spec.get("port"), Some("1"), "the string beats the service");
        assert_eq!(spec.get("application_name"), Some("ci-app"));
        assert_eq!(spec.get("options"), Some("-c work_mem=64MB"));
        assert_eq!(spec.get("service"), None);

        // PGSERVICE names the service when the string does not.
        let e2 = env(&[
            ("PGSERVICEFILE", file.to_str().unwrap()),
            ("PGSYSCONFDIR", dir.path().to_str().unwrap()),
            ("PGSERVICE", "ci"),
        ]);
        let mut spec = Spec::default();
        apply_defaults(&mut spec, &e2).unwrap();
        assert_eq!(spec.get("host"), Some("svc-host"));

        let mut spec = super::super::config::parse("service=nope").unwrap();
        let err = apply_defaults(&mut spec, &e).unwrap_err();
        assert!(err.message.contains("service \"nope\" not found"), "{err}");
    }

    #[test]
    fn env_debug_hides_pgpassword() {
        let e = env(&[("PGPASSWORD", "hunter2"), ("PGHOST", "h")]);
        let d = format!("{e:?}");
        assert!(!d.contains("hunter2") && d.contains("PGHOST"), "{d}");
        assert!(e.names_a_server());
        assert!(!env(&[("PGSSLMODE", "require")]).names_a_server());
    }
}
