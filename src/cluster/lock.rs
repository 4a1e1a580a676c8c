//! The two file locks of `.planck/`: who may change the managed cluster, and
//! who is using it.
//!
//! - `.planck/in-use`: every planck command that works on the managed cluster
//!   holds it *shared* for its whole run; `planck db destroy` takes it
//!   *exclusively*, so it never deletes a server another command is using.
//! - `.planck/lock`: held exclusively, briefly, while a process starts,
//!   stops or destroys the server or creates a database in it.
//!
//! When a process needs both, it takes `in-use` first, so two processes never
//! deadlock. Both are flock(2) locks (std's `File::lock` family, stable since
//! Rust 1.89, so no crate is needed): the kernel releases them when the
//! process ends, however it ends, so a killed planck never leaves a lock
//! behind. A lock on a file that `db destroy` unlinked meanwhile protects
//! nothing, so after locking we check the path still names the locked file,
//! and lock the new one otherwise.
//!
//! flock does not say who holds a lock; `/proc/locks` does (by inode), so a
//! refusal can name the process that holds the cluster.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Shared,
    Exclusive,
}

/// How long to wait for a lock another process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    Forever,
    Up(Duration),
}

/// A held lock, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct Held {
    _file: File,
    path: PathBuf,
}

impl Held {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A process holding a lock, as `/proc/locks` and `/proc/<pid>/cmdline` tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// Its command line, arguments joined by spaces (empty when unreadable).
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.command.is_empty() {
            write!(f, "pid {}", self.pid)
        } else {
            write!(f, "pid {} (`{}`)", self.pid, self.command)
        }
    }
}

/// Names a list of holders for a message: `pid 12 (`planck seed`), pid 13`.
pub(crate) fn describe(holders: &[Holder]) -> String {
    if holders.is_empty() {
        return "another planck process".to_string();
    }
    holders
        .iter()
        .map(Holder::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Takes the lock on `path` (creating the file and its folder). When another
/// process holds it, calls `on_wait` once with the holders, then waits as
/// `wait` says; `Ok(None)` when the wait ran out.
pub(crate) fn take(
    path: &Path,
    mode: Mode,
    wait: Wait,
    on_wait: &mut dyn FnMut(&[Holder]),
) -> Result<Option<Held>> {
    let deadline = match wait {
        Wait::Forever => None,
        Wait::Up(d) => Some(Instant::now() + d),
    };
    let mut told = false;
    loop {
        let file = open(path)?;
        match try_lock(&file, mode) {
            Ok(true) => {}
            Ok(false) => {
                if !told {
                    told = true;
                    on_wait(&holders(path));
                }
                let got = match deadline {
                    None => {
                        lock(&file, mode).map_err(|e| lock_error(path, e))?;
                        true
                    }
                    Some(deadline) => {
                        poll(&file, mode, deadline).map_err(|e| lock_error(path, e))?
                    }
                };
                if !got {
                    return Ok(None);
                }
            }
            Err(e) => return Err(lock_error(path, e)),
        }
        if names_file(path, &file) {
            return Ok(Some(Held {
                _file: file,
                path: path.to_path_buf(),
            }));
        }
        // `db destroy` unlinked the file while we waited: lock the new one.
    }
}

fn open(path: &Path) -> Result<File> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| Error::WriteFile {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|source| Error::WriteFile {
            path: path.to_path_buf(),
            source,
        })
}

fn lock_error(path: &Path, source: std::io::Error) -> Error {
    Error::WriteFile {
        path: path.to_path_buf(),
        source,
    }
}

/// `Ok(false)` when another process holds the lock.
fn try_lock(file: &File, mode: Mode) -> std::io::Result<bool> {
    let r = match mode {
        Mode::Shared => file.try_lock_shared(),
        Mode::Exclusive => file.try_lock(),
    };
    match r {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

fn lock(file: &File, mode: Mode) -> std::io::Result<()> {
    match mode {
        Mode::Shared => file.lock_shared(),
        Mode::Exclusive => file.lock(),
    }
}

fn poll(file: &File, mode: Mode, deadline: Instant) -> std::io::Result<bool> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
        if try_lock(file, mode)? {
            return Ok(true);
        }
    }
}

/// True when `path` still names the file we hold open.
fn names_file(path: &Path, file: &File) -> bool {
    match (fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

/// The processes holding a lock on `path`, this process left out.
pub(crate) fn holders(path: &Path) -> Vec<Holder> {
    let Ok(meta) = fs::metadata(path) else {
        return Vec::new();
    };
    let table = fs::read_to_string("/proc/locks").unwrap_or_default();
    let own = std::process::id();
    let mut pids = holder_pids(&table, meta.ino());
    pids.retain(|p| *p != own);
    pids.into_iter()
        .map(|pid| Holder {
            pid,
            command: command_line(pid),
        })
        .collect()
}

/// The pids in a `/proc/locks` table holding (not waiting for) a lock on
/// inode `ino`. A line reads `1: FLOCK  ADVISORY  READ 1234 08:01:5678 0 EOF`;
/// waiters' lines have `->` after the number. Only the inode is compared:
/// the device numbers /proc/locks prints differ from stat's on overlayfs.
fn holder_pids(table: &str, ino: u64) -> Vec<u32> {
    let mut pids = Vec::new();
    for line in table.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") || fields.len() < 6 {
            continue;
        }
        let Ok(pid) = fields[4].parse::<u32>() else {
            continue;
        };
        let Some(inode) = fields[5]
            .rsplit(':')
            .next()
            .and_then(|i| i.parse::<u64>().ok())
        else {
            continue;
        };
        if inode == ino && !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    pids
}

fn command_line(pid: u32) -> String {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    // The program by its name, not its full path.
    if let Some(first) = args.first_mut()
        && let Some(name) = Path::new(first.as_str()).file_name()
    {
        *first = name.to_string_lossy().into_owned();
    }
    let line = args.join(" ");
    if line.chars().count() > 60 {
        let cut: String = line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_name_holders_not_waiters() {
        let table = "\
1: FLOCK  ADVISORY  READ  4242 08:01:777 0 EOF
1: -> FLOCK  ADVISORY  WRITE 5151 08:01:777 0 EOF
2: FLOCK  ADVISORY  READ  4343 00:2f:777 0 EOF
3: POSIX  ADVISORY  WRITE 99 08:01:1234 0 EOF
4: FLOCK  ADVISORY  READ  4242 08:01:777 0 EOF
";
        assert_eq!(holder_pids(table, 777), vec![4242, 4343]);
        assert_eq!(holder_pids(table, 1234), vec![99]);
        assert!(holder_pids(table, 5).is_empty());
    }

    #[test]
    fn a_lock_held_elsewhere_times_out_and_names_no_one_but_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = take(&path, Mode::Shared, Wait::Forever, &mut |_| {})
            .unwrap()
            .unwrap();
        // A second shared lock (another open file) is granted at once.
        let mut waited = false;
        let second = take(&path, Mode::Shared, Wait::Up(Duration::ZERO), &mut |_| {
            waited = true
        })
        .unwrap();
        assert!(second.is_some() && !waited);
        drop(second);
        // An exclusive one is not; the holder is this process, left out.
        let mut seen = None;
        let start = Instant::now();
        let ex = take(
            &path,
            Mode::Exclusive,
            Wait::Up(Duration::from_millis(200)),
            &mut |h| seen = Some(h.to_vec()),
        )
        .unwrap();
        assert!(ex.is_none());
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert_eq!(seen, Some(Vec::new()));
        drop(held);
        assert!(
            take(
                &path,
                Mode::Exclusive,
                Wait::Up(Duration::ZERO),
                &mut |_| {}
            )
            .unwrap()
            .is_some()
        );
    }

    #[test]
    fn a_lock_on_an_unlinked_file_is_taken_again_on_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/lock");
        let first = take(&path, Mode::Exclusive, Wait::Forever, &mut |_| {})
            .unwrap()
            .unwrap();
        let p = path.clone();
        let waiter = std::thread::spawn(move || {
            take(&p, Mode::Shared, Wait::Forever, &mut |_| {})
                .unwrap()
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(100));
        // What `db destroy` does while holding the lock.
        fs::remove_dir_all(dir.path().join("sub")).unwrap();
        drop(first);
        let second = waiter.join().unwrap();
        assert!(
            names_file(second.path(), &second._file),
            "the lock is on the new file"
        );
    }

    #[test]
    fn holders_are_described_by_pid_and_command() {
        let h = [
            Holder {
                pid: 12,
                command: "planck seed".into(),
            },
            Holder {
                pid: 13,
                command: String::new(),
            },
        ];
        assert_eq!(describe(&h), "pid 12 (`planck seed`), pid 13");
        assert_eq!(describe(&[]), "another planck process");
        assert!(!command_line(std::process::id()).is_empty());
    }
}
