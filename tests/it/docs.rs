//! The manual (README.md and docs/) against the code (issue 33): every check
//! id has its section in docs/checks.md, every relative link lands on a file
//! and heading that exist, every `planck ...` command line in a code block
//! parses with planck's own clap definitions, and the examples run (trycmd),
//! so a renamed flag or subcommand, or changed output, fails here.
//!
//! The convention for an example in the docs, by its block's info string:
//!
//! - ```` ```console ````: `$ planck ...` lines and their output (stdout and
//!   stderr together), run as they are by `console_examples_run`, in the
//!   repository's root, with no server: `--help`, `--version`, `init`.
//! - ```` ```sh-session ```` (GitHub shows it as it shows `console`): the
//!   same form, for examples that need a server. `server_examples_run` runs
//!   them, a page at a time, in a copy of the bundled example on a managed
//!   cluster of its own (see there); a page with such blocks is listed in
//!   `SERVER_PAGES`.
//! - ```` ```sh ````, ```` ```text ````, other: not run; a `planck ...`
//!   line in an `sh` block is still parsed
//!   (`every_planck_command_in_the_docs_parses`).
//!
//! In expected output, trycmd's `[..]` stands for the rest of a line or a
//! part of it, a line `...` for any number of lines, and `? N` after the
//! command for an exit code other than 0; `[CWD]` is the folder the command
//! ran in. Times, ports, sizes and counts that vary are `[..]`. trycmd drops
//! the newline before the next `$` line or the closing fence, so a step
//! whose last line is literal text ends with an empty line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use planck::cli::Cli;
use planck::findings::CheckId;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() > 10, "docs/ has {} pages", docs.len());
    out.extend(docs);
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A Markdown file's lines, each with whether it sits inside a fenced code
/// block and that block's info string.
fn lines_with_fence(text: &str) -> Vec<(usize, &str, Option<&str>)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(info) = t.strip_prefix("```") {
            fence = match fence {
                None => Some(info.trim()),
                Some(_) => None,
            };
            continue;
        }
        out.push((i + 1, line, fence));
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces as `-`; a repeated heading gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line, fence) in lines_with_fence(text) {
        if fence.is_some() || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while out.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        out.insert(candidate);
    }
    out
}

/// Issue 33, 4: an error of a kind the manual explains ends with a `docs:`
/// line; every such link names a page and heading that exist.
#[test]
fn every_errors_docs_link_resolves() {
    for link in planck::error::docs::ALL {
        let (file, anchor) = match link.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (*link, None),
        };
        let path = root().join(file);
        assert!(path.is_file(), "{link}: no such file");
        if let Some(anchor) = anchor {
            assert!(
                anchors(&read(&path)).contains(anchor),
                "{link}: no such anchor"
            );
        }
    }
    let e = planck::error::Error::Connect {
        url: "postgres://h/db".into(),
        message: "refused".into(),
        hint: Some("start it".into()),
    };
    assert_eq!(
        planck::error::render(&e),
        format!(
            "error: cannot connect to postgres://h/db: refused\n  hint: start it\n  docs: {} in planck's manual",
            planck::error::docs::CONNECTING
        )
    );
}

#[test]
fn every_check_id_has_its_section_in_docs_checks() {
    let checks = read(&root().join("docs/checks.md"));
    let have = anchors(&checks);
    for c in CheckId::ALL {
        assert!(
            checks.contains(&format!("\n## {}\n", c.as_str())),
            "docs/checks.md has no `## {}` section",
            c.as_str()
        );
        // The link the SARIF rule help gives resolves to that section.
        let docs = c.docs();
        let (file, anchor) = docs.split_once('#').unwrap();
        assert!(root().join(file).is_file(), "{docs}: no such file");
        assert!(have.contains(anchor), "{docs}: no such anchor");
        for part in ["**What it means.**", "**Example finding.**", "**The fix.**"] {
            let section = checks
                .split(&format!("\n## {}\n", c.as_str()))
                .nth(1)
                .unwrap()
                .split("\n## ")
                .next()
                .unwrap();
            assert!(
                section.contains(part),
                "docs/checks.md#{c}: no {part} paragraph"
            );
        }
    }
}

#[test]
fn relative_links_point_at_existing_files_and_headings() {
    let link = regex::Regex::new(r"\[[^\]]*\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let text = read(&page);
        for (n, line, fence) in lines_with_fence(&text) {
            if fence.is_some() {
                continue;
            }
            for cap in link.captures_iter(line) {
                let target = &cap[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                seen += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target, None),
                };
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let at = format!("{}:{n}: {target}", page.display());
                if !path.exists() {
                    broken.push(format!("{at}: no such file"));
                    continue;
                }
                if let Some(anchor) = anchor
                    && !anchors(&read(&path)).contains(anchor)
                {
                    broken.push(format!("{at}: no such heading"));
                }
            }
        }
    }
    assert!(seen > 30, "only {seen} relative links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `word 'two words' "$(x)"` -> its words, quotes removed; `None` at a
/// quote left open.
fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        q if q == c => break,
                        other => cur.push(other),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Some(out)
}

/// The `planck ...` commands of one shell line: `&&`, `;` and `|` split it,
/// `$(...)` is a command of its own, a comment or redirection ends it.
fn planck_commands(line: &str) -> Vec<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    let subst = regex::Regex::new(r"\$\(([^()]*)\)").unwrap();
    let mut out = Vec::new();
    for cap in subst.captures_iter(line) {
        out.extend(planck_commands(&cap[1]));
    }
    let line = subst.replace_all(line, "X");
    // A synopsis's optional part, `planck db start [--port N]`, is left out.
    let optional = regex::Regex::new(r" \[[^\]]*\]").unwrap();
    let line = optional.replace_all(&line, "");
    let line = match line.find(" #") {
        Some(i) => &line[..i],
        None => &line[..],
    };
    for part in line
        .split("&&")
        .flat_map(|p| p.split(';'))
        .flat_map(|p| p.split('|'))
    {
        let Some(mut w) = words(part) else { continue };
        if w.first().map(String::as_str) != Some("planck") {
            continue;
        }
        if let Some(i) = w.iter().position(|x| {
            x.starts_with('>') || x.starts_with("2>") || x.starts_with('<') || x == "1>"
        }) {
            w.truncate(i);
        }
        out.push(w);
    }
    out
}

#[test]
fn every_planck_command_in_the_docs_parses() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let text = read(&page);
        for (n, line, fence) in lines_with_fence(&text) {
            let Some(info) = fence else { continue };
            let lang = info.split(',').next().unwrap_or("");
            if !matches!(lang, "sh" | "console" | "sh-session" | "") {
                continue;
            }
            // A console block's output lines are not commands.
            if matches!(lang, "console" | "sh-session") && !line.starts_with("$ ") {
                continue;
            }
            for cmd in planck_commands(line) {
                seen += 1;
                if let Err(e) = Cli::try_parse_from(&cmd) {
                    use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                    if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                        let first = e.to_string().lines().next().unwrap_or("").to_string();
                        bad.push(format!(
                            "{}:{n}: {}\n  {first}",
                            page.display(),
                            cmd.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(seen > 60, "only {seen} planck commands found");
    assert!(
        bad.is_empty(),
        "commands that do not parse:\n{}",
        bad.join("\n")
    );
}

/// The `console` blocks run against the real binary; `[..]` and `...` stand
/// for what varies. Blocks that need a server are `sh-session` blocks
/// (`server_examples_run`), which trycmd leaves out here.
#[test]
fn console_examples_run() {
    trycmd::TestCases::new()
        .register_bin("planck", PathBuf::from(env!("CARGO_BIN_EXE_planck")))
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .case("README.md")
        .case("docs/*.md");
}

/// docs/ci.md shows the CI files whole; they must be the files themselves.
#[test]
fn the_ci_page_shows_the_ci_files_as_they_are() {
    let page = read(&root().join("docs/ci.md"));
    for file in ["tools/ci/github-actions.yml", "tools/ci/gitlab-ci.yml"] {
        let text = read(&root().join(file));
        assert!(
            page.contains(&format!("```yaml\n{text}```\n")),
            "docs/ci.md does not show {file} as it is"
        );
    }
}

/// The README stays a five-minute read; the reference belongs in docs/.
#[test]
fn the_readme_stays_short() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(lines <= 250, "README.md has {lines} lines (at most 250)");
}

/// The pages whose `sh-session` blocks run against a server.
const SERVER_PAGES: &[&str] = &[
    "README.md",
    "docs/cluster.md",
    "docs/migrate.md",
    "docs/seed.md",
    "docs/explain.md",
    "docs/replay.md",
    "docs/record.md",
    "docs/report.md",
    "docs/check.md",
    // At --scale 0.01: the full-size `planck demo` (1.5 GB, a minute or
    // more) stays an `sh` block, run by CI's installed-demo step.
    "docs/demo.md",
    // Skipped, saying why, when Citus is not installed (as tests/it/citus.rs).
    "docs/citus.md",
];

/// The pages of `SERVER_PAGES` whose examples need Citus installed for the
/// server binaries in use.
const CITUS_PAGES: &[&str] = &["docs/citus.md"];

/// The `sh-session` blocks run against a real server, as a reader would run
/// them: each page in a project folder of its own holding a copy of the
/// bundled example (`migrations/`, `seeds/`; a git repository whose
/// `origin/main` is that first commit), with no database configured,
/// so planck starts its managed cluster under the folder's `.planck/`
/// (destroyed at the end). The folder's `planck.toml` seeds at scale 0.05
/// (flags win over it), so `planck seed` takes seconds; `npm test` is the
/// bundled example's test run (`planck example-app`, what
/// `tools/example-app` runs). trycmd runs a copy of the page in which the
/// `sh-session` blocks are `console` blocks and every other block is text,
/// line for line, so a failure's line number is the page's.
/// `PLANCK_DOCS_PAGE=report` runs only the pages whose path contains
/// `report` (while writing one); each page says how long it took.
#[test]
fn server_examples_run() {
    // trycmd can set a variable but not remove one, and a PGPORT would
    // point planck at that server instead of its managed cluster.
    if std::env::var_os("PGPORT").is_some_and(|p| !p.is_empty()) {
        assert!(
            !crate::common::skip::in_ci(),
            "PGPORT is set: the docs' examples run on a managed cluster"
        );
        crate::skip!(
            CouldNotRun,
            "PGPORT is set, and the docs' examples run on a managed cluster"
        );
    }
    let work = crate::common::project_dir();
    let bin = work.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let npm = bin.join("npm");
    std::fs::write(
        &npm,
        "#!/bin/sh\n# The docs' `npm test`: the bundled example's test run.\n\
         [ \"$1\" = test ] || { echo \"npm (docs test): only npm test\" >&2; exit 2; }\n\
         exec \"$PLANCK_BIN\" example-app\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bindir = crate::common::bindir();
    let only = std::env::var("PLANCK_DOCS_PAGE").unwrap_or_default();
    for page in SERVER_PAGES.iter().filter(|p| p.contains(only.as_str())) {
        // The Citus page where Citus is not here: the test is recorded as
        // skipped (its other pages still run), so it is not counted a pass.
        if CITUS_PAGES.contains(page)
            && let Some((kind, why)) = crate::common::citus_unavailable()
        {
            crate::common::skip::skip(
                kind,
                &crate::common::current_test(),
                &format!("{page} not run: {why}"),
            );
            continue;
        }
        let started = std::time::Instant::now();
        let stem = page.trim_end_matches(".md").replace('/', "-");
        let case = work.path().join(format!("{stem}.md"));
        std::fs::write(&case, server_blocks_only(&read(&root().join(page)))).unwrap();
        // trycmd runs a case `x.md` in the folder `x.in` beside it.
        let project = work.path().join(format!("{stem}.in"));
        for dir in ["migrations", "seeds"] {
            copy_dir(&root().join(dir), &project.join(dir));
        }
        std::fs::create_dir_all(project.join("queries")).unwrap();
        std::fs::write(project.join("planck.toml"), "[seed]\nscale = 0.05\n").unwrap();
        // A git repository whose `origin/main` is the example as copied,
        // for `planck check --base origin/main`.
        std::fs::write(project.join(".gitignore"), ".planck/\n").unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "."],
            &["commit", "-q", "-m", "the bundled example"],
            &["update-ref", "refs/remotes/origin/main", "HEAD"],
        ] {
            crate::common::git(&project, args);
        }
        let _destroy = crate::common::Destroy(project.clone());
        eprintln!("{page}: its sh-session blocks run as {}", case.display());
        let cases = trycmd::TestCases::new();
        cases
            // A guard against a hung step, not a time limit on the examples.
            .timeout(std::time::Duration::from_secs(300))
            .register_bin("planck", PathBuf::from(env!("CARGO_BIN_EXE_planck")))
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100")
            .env("PATH", &path)
            .env("PLANCK_BIN", env!("CARGO_BIN_EXE_planck"))
            .env("PLANCK_PG_BINDIR", bindir.display().to_string());
        // No database from the environment: planck reads an empty one as
        // unset. Not PGPORT: the managed server reads it too, and refuses "".
        for k in [
            "PLANCK_DATABASE_URL",
            "DATABASE_URL",
            "PGHOST",
            "PGHOSTADDR",
            "PGUSER",
            "PGDATABASE",
            "PGPASSWORD",
            "PGSERVICE",
        ] {
            cases.env(k, "");
        }
        cases.case(&case).run();
        eprintln!("{page}: ran in {:.0?}", started.elapsed());
    }
}

/// A page with its `sh-session` blocks as `console` blocks and every other
/// block ignored by trycmd; the lines stay where they were.
fn server_blocks_only(text: &str) -> String {
    let mut out = String::new();
    let mut open = false;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(info) = t.strip_prefix("```") {
            if open {
                open = false;
                out.push_str(line);
            } else {
                open = true;
                let lang = info.split(',').next().unwrap_or("").trim();
                out.push_str(if lang == "sh-session" {
                    "```console"
                } else {
                    "```text"
                });
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}
