//! Where a finding's file paths are relative to: the project's source root.
//!
//! A finding points at a line of the queries file or of a migration. The
//! machine outputs (explain's JSON, SARIF, JUnit, GitLab, the PR comment) are
//! read on another machine (code scanning, a merge request), where the
//! absolute path of the checkout that ran planck means nothing. So paths are
//! written relative to the source root: the git work tree that holds the
//! project (code scanning resolves a relative path against the repository's
//! root, which is not the project's folder when planck.toml sits in a
//! subfolder), else the project's folder. A file outside the root (a
//! `--queries /tmp/x.toml`) keeps its absolute path.

use std::path::{Path, PathBuf};

/// The nearest folder from `project_dir` up that holds `.git` (a folder, or
/// the file of a linked worktree or submodule), else `project_dir` itself.
pub fn root_of(project_dir: &Path) -> PathBuf {
    project_dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(project_dir)
        .to_path_buf()
}

/// `path` relative to `root` when it is below it, else `path` as given.
pub fn relative(path: &Path, root: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

/// [`relative`] as text, with `/` between parts on every platform (how the
/// outputs write paths).
pub fn relative_text(path: &Path, root: &Path) -> String {
    relative(path, root).to_string_lossy().replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_work_tree_above_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let project = repo.join("services/api");
        std::fs::create_dir_all(&project).unwrap();
        // No .git anywhere: the project's folder.
        assert_eq!(root_of(&project), project);
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(root_of(&project), repo);
        // A linked worktree has a .git file.
        std::fs::write(project.join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(root_of(&project), project);
    }

    #[test]
    fn paths_below_the_root_become_relative_others_stay() {
        let root = Path::new("/work/repo");
        assert_eq!(
            relative_text(Path::new("/work/repo/queries/recorded.toml"), root),
            "queries/recorded.toml"
        );
        assert_eq!(relative_text(Path::new("/tmp/x.toml"), root), "/tmp/x.toml");
        // Already relative: kept.
        assert_eq!(
            relative_text(Path::new("migrations/0001.sql"), root),
            "migrations/0001.sql"
        );
    }
}
