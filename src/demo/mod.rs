//! The bundled example: a small multi-tenant application (its migrations, its
//! seed spec, its recorded statements and a test run that plays its API), so
//! `planck demo` shows the whole pipeline on a fresh machine.
//!
//! The files are compiled into the binary, so `cargo install --path .` and
//! then `planck demo` works outside a checkout: [`extract`] writes them into a
//! folder the demo owns, where the ordinary file-based commands read them.

pub(crate) mod app;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One file of the bundle: its path inside the example, and its text.
pub struct BundledFile {
    pub path: &'static str,
    pub text: &'static str,
}

macro_rules! bundled {
    ($($path:literal),* $(,)?) => {
        &[$(BundledFile { path: $path, text: include_str!(concat!("../../", $path)) }),*]
    };
}

/// Every file of the example. The test
/// `bundle_lists_every_example_file` (below) fails when a migration is added to
/// `migrations/` but not here.
pub const FILES: &[BundledFile] = bundled![
    "migrations/0001_roles_and_accounts.sql",
    "migrations/0002_content.sql",
    "migrations/0003_app_tables.sql",
    "migrations/0004_grants_and_rls.sql",
    "migrations/0005_item_seq.sql",
    "seeds/example.toml",
    "queries/baseline.toml",
    "queries/recorded.toml",
];

/// Where the example's migrations are, below an extracted bundle.
pub fn migrations_dir(root: &Path) -> PathBuf {
    root.join("migrations")
}

/// Where the example's seed spec is, below an extracted bundle.
pub fn spec_path(root: &Path) -> PathBuf {
    root.join("seeds").join("example.toml")
}

/// Writes the bundle below `root` (replacing what an older planck wrote there)
/// and returns `root`. Files that already hold the same bytes are left alone.
pub fn extract(root: &Path) -> Result<PathBuf> {
    for file in FILES {
        let path = root.join(file.path);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == file.text) {
            continue;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&path, file.text).map_err(|source| Error::WriteFile {
            path: path.clone(),
            source,
        })?;
    }
    Ok(root.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundle must hold every file of the example that ships in the
    /// repository: a migration added to `migrations/` and forgotten here
    /// would make the installed demo differ from the checkout's.
    #[test]
    fn bundle_lists_every_example_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk = Vec::new();
        for dir in ["migrations", "seeds", "queries"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                on_disk.push(format!("{dir}/{name}"));
            }
        }
        on_disk.sort();
        let mut bundled: Vec<String> = FILES.iter().map(|f| f.path.to_string()).collect();
        bundled.sort();
        assert_eq!(bundled, on_disk);
    }

    #[test]
    fn extract_writes_the_files_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let root = extract(&dir.path().join("example")).unwrap();
        let spec = std::fs::read_to_string(spec_path(&root)).unwrap();
        assert_eq!(spec, FILES[5].text);
        assert_eq!(std::fs::read_dir(migrations_dir(&root)).unwrap().count(), 5);
        // A file changed by hand is put back; a second run changes nothing else.
        std::fs::write(spec_path(&root), "x").unwrap();
        extract(&root).unwrap();
        assert_eq!(
            std::fs::read_to_string(spec_path(&root)).unwrap(),
            FILES[5].text
        );
    }
}
