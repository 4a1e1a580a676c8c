//! Which of head's migration files the base has not applied: with `--base`
//! head is a copy of the migrated, seeded base, and only head's new files
//! run on it. A file the base applied and head changed (or removed) makes
//! the copy wrong, so head is rebuilt from scratch instead.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, Result};
use crate::migrate::{self, Migration};

/// How head's migrations relate to the base's.
#[derive(Debug)]
pub enum Incremental {
    /// Head's files the base does not have (in order).
    New(Vec<Migration>),
    /// A file the base applied is changed or gone in head: the file.
    Rebuild(String),
}

/// Head's migration files against the base's (a base without a
/// migrations folder yet has none).
pub fn new_files(base_dir: &Path, head_dir: &Path) -> Result<Incremental> {
    let base = match migrate::discover(base_dir) {
        Ok(b) => b,
        // The base had no migrations folder yet: every head file is new.
        Err(Error::ReadFile { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    let head = migrate::discover(head_dir)?;
    Ok(incremental(&base, head))
}

fn incremental(base: &[Migration], head: Vec<Migration>) -> Incremental {
    for b in base {
        match head.iter().find(|h| h.name == b.name) {
            Some(h) if h.checksum == b.checksum => {}
            _ => return Incremental::Rebuild(b.name.clone()),
        }
    }
    let applied: BTreeSet<&str> = base.iter().map(|b| b.name.as_str()).collect();
    Incremental::New(
        head.into_iter()
            .filter(|h| !applied.contains(h.name.as_str()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, sql: &str) -> Migration {
        Migration {
            name: name.into(),
            path: name.into(),
            sql: sql.into(),
            checksum: format!(
                "{:x}",
                sql.len() * 31 + sql.bytes().map(usize::from).sum::<usize>()
            ),
        }
    }

    #[test]
    fn only_new_files_are_applied_and_a_changed_one_rebuilds() {
        let base = vec![m("0001.sql", "a"), m("0002.sql", "b")];
        let head = vec![m("0001.sql", "a"), m("0002.sql", "b"), m("0003.sql", "c")];
        match incremental(&base, head) {
            Incremental::New(f) => assert_eq!(
                f.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
                ["0003.sql"]
            ),
            other => panic!("{other:?}"),
        }
        let head = vec![m("0001.sql", "a"), m("0002.sql", "bb")];
        assert!(matches!(incremental(&base, head), Incremental::Rebuild(f) if f == "0002.sql"));
        let head = vec![m("0001.sql", "a")];
        assert!(matches!(incremental(&base, head), Incremental::Rebuild(f) if f == "0002.sql"));
    }
}
