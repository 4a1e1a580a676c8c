//! Where the managed server's files live, and how planck proves a folder of
//! /tmp is its own before it uses or deletes it.
//!
//! The server's files (data, log, socket) live in `.planck/` itself, unless
//! planck runs as root and the `postgres` OS user cannot reach the project:
//! then they go to a folder planck makes, `<tmp>/planck-home-<hash>`, named in
//! `.planck/home`. A note is only text, so it proves nothing: someone may
//! write any path into it, and `cp -a` copies it into a second project. So
//! planck writes a marker file into every home it makes, recording the
//! absolute path of the project's `.planck/` folder, and trusts a note only
//! when the folder it names
//! - lies directly in the temp folder and carries planck's prefix,
//! - is a real folder (not a symlink) with a regular marker file owned by us,
//! - and its marker names this very `.planck/` (a copy or a moved project has
//!   another path, so it never shares the original's server).
//!
//! A note that fails any of these is foreign: planck neither uses nor deletes
//! what it names, and makes a fresh home instead.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The note in `.planck/` naming a home outside it.
pub(crate) const NOTE: &str = "home";
/// The prefix of every home planck makes in the temp folder.
pub(crate) const PREFIX: &str = "planck-home-";
/// The marker file inside a home.
pub(crate) const MARKER: &str = ".planck-home";
/// The marker's first bytes; the project's path follows, verbatim.
const MAGIC: &[u8] = b"planck-home 1\nproject=";

/// Where a cluster's server files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Home {
    /// In `.planck/` itself (no note).
    Inside,
    /// A folder planck made for this project (the note checked out).
    Temp(PathBuf),
    /// A note naming a folder planck cannot prove is this project's.
    Foreign { path: PathBuf, why: String },
}

/// The identity a home's marker records: the absolute path of `.planck/`,
/// with symlinks resolved when it exists.
pub(crate) fn project_id(dir: &Path) -> PathBuf {
    fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

/// Reads and checks `.planck/home`.
pub(crate) fn resolve(dir: &Path) -> Home {
    let Ok(mut text) = fs::read(dir.join(NOTE)) else {
        return Home::Inside;
    };
    while text.last().is_some_and(|b| b.is_ascii_whitespace()) {
        text.pop();
    }
    let path = PathBuf::from(OsString::from_vec(text));
    let id = project_id(dir);
    match check(&path, &id) {
        Ok(()) => Home::Temp(path),
        Err(_) if adopt_legacy(dir, &path, &id) => Home::Temp(path),
        Err(why) => Home::Foreign { path, why },
    }
}

/// Homes made by planck before markers existed were named
/// `planck-home-<hash of the .planck path>` and nothing else. A note naming
/// exactly the name this project's path gives, a folder without any marker
/// that holds a data directory, is such a home: it gets its marker now, so a
/// running cluster survives the upgrade. A copy of the project names the
/// original's hash, not its own, so it is never adopted.
fn adopt_legacy(dir: &Path, path: &Path, id: &Path) -> bool {
    use sha2::Digest;
    let h = sha2::Sha256::digest(dir.as_os_str().as_bytes());
    let tag: String = h.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let legacy = std::env::temp_dir().join(format!("{PREFIX}{tag}"));
    let is_dir = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir());
    if path != legacy
        || !is_dir
        || fs::symlink_metadata(path.join(MARKER)).is_ok()
        || !path.join("data/PG_VERSION").is_file()
    {
        return false;
    }
    let mut marker = MAGIC.to_vec();
    marker.extend_from_slice(id.as_os_str().as_bytes());
    fs::write(path.join(MARKER), marker).is_ok() && check(path, id).is_ok()
}

/// Why `path` is not a home planck made for the project `id`, if it is not.
fn check(path: &Path, id: &Path) -> std::result::Result<(), String> {
    let tmp = std::env::temp_dir();
    let named_like_ours = path.is_absolute()
        && path.parent() == Some(tmp.as_path())
        && path
            .file_name()
            .is_some_and(|n| n.as_bytes().starts_with(PREFIX.as_bytes()));
    if !named_like_ours {
        return Err(format!(
            "it is not a folder planck makes (those are {}/{PREFIX}*)",
            tmp.display()
        ));
    }
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_dir() => {}
        Ok(_) => return Err("it is not a folder".to_string()),
        Err(e) => return Err(format!("it cannot be read ({e})")),
    }
    let marker = path.join(MARKER);
    let meta = fs::symlink_metadata(&marker)
        .map_err(|_| format!("it holds no {MARKER} marker of planck's"))?;
    if !meta.file_type().is_file() || Some(meta.uid()) != own_uid() {
        return Err(format!("its {MARKER} marker is not one planck wrote"));
    }
    let bytes = fs::read(&marker).map_err(|e| format!("its marker cannot be read ({e})"))?;
    let Some(owner) = bytes.strip_prefix(MAGIC) else {
        return Err(format!("its {MARKER} marker is not one planck wrote"));
    };
    if owner != id.as_os_str().as_bytes() {
        return Err(format!(
            "it belongs to the project at {}",
            String::from_utf8_lossy(owner)
        ));
    }
    Ok(())
}

/// Makes (or finds again) this project's home in the temp folder, with its
/// marker: `<tmp>/planck-home-<hash of the project's path>`, or with a
/// `-N` suffix when that name is taken by a folder that is not ours.
pub(crate) fn make(dir: &Path) -> Result<PathBuf> {
    use sha2::Digest;
    let id = project_id(dir);
    let h = sha2::Sha256::digest(id.as_os_str().as_bytes());
    let tag: String = h.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let tmp = std::env::temp_dir();
    for n in 0..100 {
        let path = if n == 0 {
            tmp.join(format!("{PREFIX}{tag}"))
        } else {
            tmp.join(format!("{PREFIX}{tag}-{n}"))
        };
        // create_dir, not create_dir_all: a folder someone else made first
        // (another user of /tmp) is never taken over.
        match fs::create_dir(&path) {
            Ok(()) => {
                let mut marker = MAGIC.to_vec();
                marker.extend_from_slice(id.as_os_str().as_bytes());
                let file = path.join(MARKER);
                fs::write(&file, marker)
                    .map_err(|source| Error::WriteFile { path: file, source })?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if check(&path, &id).is_ok() {
                    return Ok(path);
                }
            }
            Err(source) => return Err(Error::WriteFile { path, source }),
        }
    }
    Err(Error::cluster(
        format!(
            "cannot make a folder for the managed server in {}: every {PREFIX}{tag}* name is taken",
            tmp.display()
        ),
        Some(format!(
            "remove the stale {}/{PREFIX}{tag}* folders",
            tmp.display()
        )),
    ))
}

/// The `.gitignore` planck writes into `.planck/`: everything in it is the
/// managed server's (data, log, socket, locks), none of it belongs in the
/// project's history. Inside the folder, as Python's venv does, so `git
/// status` stays clean without the user editing their own `.gitignore`.
pub(crate) const GITIGNORE: &str =
    "# written by planck: .planck/ holds the managed PostgreSQL's files\n*\n";

/// Makes `.planck/` (when it is missing) with its [`GITIGNORE`]. A
/// `.gitignore` already there is left as it is: the user may have changed it.
pub(crate) fn make_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
        path: dir.to_path_buf(),
        source,
    })?;
    let file = dir.join(".gitignore");
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
    {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(GITIGNORE.as_bytes())
                .map_err(|source| Error::WriteFile { path: file, source })
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(Error::WriteFile { path: file, source }),
    }
}

/// This process's user id (the owner of /proc/self).
fn own_uid() -> Option<u32> {
    fs::metadata("/proc/self").ok().map(|m| m.uid())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(name: &str) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join(name).join(".planck");
        fs::create_dir_all(&dir).unwrap();
        (t, dir)
    }

    #[test]
    fn the_planck_folder_ignores_itself_in_git_and_keeps_a_users_edit() {
        let (_t, dir) = project("p");
        let planck = dir.join("new");
        make_dir(&planck).unwrap();
        let text = fs::read_to_string(planck.join(".gitignore")).unwrap();
        assert!(text.lines().any(|l| l == "*"), "{text}");
        fs::write(planck.join(".gitignore"), "data/\n").unwrap();
        make_dir(&planck).unwrap();
        assert_eq!(
            fs::read_to_string(planck.join(".gitignore")).unwrap(),
            "data/\n"
        );
    }

    #[test]
    fn no_note_means_inside() {
        let (_t, dir) = project("p");
        assert_eq!(resolve(&dir), Home::Inside);
    }

    #[test]
    fn a_note_naming_any_folder_is_foreign() {
        let (t, dir) = project("p");
        let victim = t.path().join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(dir.join(NOTE), victim.as_os_str().as_bytes()).unwrap();
        assert!(matches!(resolve(&dir), Home::Foreign { path, .. } if path == victim));
        // Named like planck's, but without a marker: still foreign.
        let fake = std::env::temp_dir().join(format!("{PREFIX}unit-test-{}", std::process::id()));
        fs::create_dir_all(&fake).unwrap();
        fs::write(dir.join(NOTE), fake.as_os_str().as_bytes()).unwrap();
        let got = resolve(&dir);
        fs::remove_dir_all(&fake).unwrap();
        assert!(
            matches!(&got, Home::Foreign { why, .. } if why.contains("marker")),
            "{got:?}"
        );
    }

    #[test]
    fn a_home_made_before_markers_is_adopted_by_its_own_project_only() {
        use sha2::Digest;
        let (t, dir) = project("p");
        let tag: String = sha2::Sha256::digest(dir.as_os_str().as_bytes())
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect();
        let legacy = std::env::temp_dir().join(format!("{PREFIX}{tag}"));
        fs::create_dir_all(legacy.join("data")).unwrap();
        fs::write(legacy.join("data/PG_VERSION"), "15\n").unwrap();
        // A copy naming the original's legacy home does not adopt it.
        let copy = t.path().join("p2/.planck");
        fs::create_dir_all(&copy).unwrap();
        fs::write(copy.join(NOTE), legacy.as_os_str().as_bytes()).unwrap();
        let by_copy = resolve(&copy);
        fs::write(dir.join(NOTE), legacy.as_os_str().as_bytes()).unwrap();
        let by_owner = resolve(&dir);
        let by_copy_after = resolve(&copy);
        fs::remove_dir_all(&legacy).unwrap();
        assert!(matches!(by_copy, Home::Foreign { .. }), "{by_copy:?}");
        assert_eq!(by_owner, Home::Temp(legacy));
        assert!(
            matches!(by_copy_after, Home::Foreign { .. }),
            "{by_copy_after:?}"
        );
    }

    #[test]
    fn a_home_is_ours_only_for_the_project_that_made_it() {
        let (t, dir) = project("p");
        let home = make(&dir).unwrap();
        fs::write(dir.join(NOTE), home.as_os_str().as_bytes()).unwrap();
        assert_eq!(resolve(&dir), Home::Temp(home.clone()));
        // Making it again finds the same folder.
        assert_eq!(make(&dir).unwrap(), home);
        // A copy of the project, note included, is another project.
        let copy = t.path().join("p2/.planck");
        fs::create_dir_all(&copy).unwrap();
        fs::copy(dir.join(NOTE), copy.join(NOTE)).unwrap();
        let got = resolve(&copy);
        let other = make(&copy).unwrap();
        fs::remove_dir_all(&home).unwrap();
        fs::remove_dir_all(&other).unwrap();
        assert!(
            matches!(&got, Home::Foreign { why, .. } if why.contains("belongs to the project at")),
            "{got:?}"
        );
        assert_ne!(other, home);
    }
}
