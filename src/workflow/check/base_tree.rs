//! The merge base's checkout for `--base`: a temporary `git worktree` (the
//! user's checkout is never touched), removed again on drop, even when a
//! stop signal ends the run. Its own module because it is git, not
//! PostgreSQL: the errors it words are about refs and shallow clones.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The merge base's tree, checked out with `git worktree add` into a
/// temporary folder, removed again on drop.
pub struct BaseTree {
    /// The `--base` reference, and its merge base with HEAD.
    pub reference: String,
    pub commit: String,
    repo: PathBuf,
    dir: PathBuf,
    /// The project folder inside it, and its migrations.
    pub project_dir: PathBuf,
    pub migrations_dir: PathBuf,
}

fn git(repo: &Path, args: &[&str]) -> std::result::Result<String, String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

const FETCH_HINT: &str = "fetch the history: `git fetch --unshallow origin` locally, \
`fetch-depth: 0` on actions/checkout in GitHub Actions, `GIT_DEPTH: 0` in GitLab CI";

impl BaseTree {
    /// The merge base of HEAD and `reference`, checked out; a usage error
    /// names what is missing (no repository, no such commit, a shallow clone).
    pub fn add(project_dir: &Path, reference: &str, migrations: &Path) -> Result<BaseTree> {
        let top = git(project_dir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
            Error::usage_hint(
                format!(
                    "--base needs a git repository: {} is not in one ({e})",
                    project_dir.display()
                ),
                "run planck check --base from the project's checkout, or leave --base out",
            )
        })?;
        let repo = PathBuf::from(top);
        let shallow =
            git(&repo, &["rev-parse", "--is-shallow-repository"]).as_deref() == Ok("true");
        let spec = format!("{reference}^{{commit}}");
        if git(&repo, &["rev-parse", "--verify", "--quiet", &spec]).is_err() {
            return Err(Error::usage_hint(
                format!(
                    "--base {reference}: no such commit in {}{}",
                    repo.display(),
                    if shallow { " (a shallow clone)" } else { "" }
                ),
                if shallow {
                    FETCH_HINT.to_string()
                } else {
                    format!(
                        "check the name (`git branch -a`), or fetch it: `git fetch origin {}`; {FETCH_HINT}",
                        reference.trim_start_matches("origin/")
                    )
                },
            ));
        }
        let commit = git(&repo, &["merge-base", "HEAD", reference]).map_err(|e| {
            Error::usage_hint(
                format!(
                    "--base {reference}: HEAD and {reference} have no merge base{}{}",
                    if shallow {
                        " in this shallow clone"
                    } else {
                        ""
                    },
                    if e.is_empty() {
                        String::new()
                    } else {
                        format!(" ({e})")
                    }
                ),
                FETCH_HINT,
            )
        })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("planck-check-base-{}-{nanos}", std::process::id()));
        let dir_s = dir.display().to_string();
        git(
            &repo,
            &["worktree", "add", "--detach", "--quiet", &dir_s, &commit],
        )
        .map_err(|e| Error::internal(format!("git worktree add {dir_s} {commit} failed: {e}")))?;
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let rel = canon(project_dir)
            .strip_prefix(canon(&repo))
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let project = dir.join(rel);
        Ok(BaseTree {
            reference: reference.to_string(),
            commit,
            repo,
            migrations_dir: project.join(migrations),
            project_dir: project,
            dir,
        })
    }
}

impl Drop for BaseTree {
    fn drop(&mut self) {
        let dir = self.dir.display().to_string();
        if git(&self.repo, &["worktree", "remove", "--force", &dir]).is_err() {
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = git(&self.repo, &["worktree", "prune"]);
        }
    }
}
