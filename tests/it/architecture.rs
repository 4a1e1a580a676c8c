//! The import graph of `src/` runs one way only, and this test keeps it so.
//!
//! Several issues edit the code side by side (seed, explain, replay, record,
//! report), so the layers are a contract, not a habit. They are one table,
//! [`LAYERS`], top to bottom, and every test here reads it: a module may
//! import the modules of any row below its own, those of its own row only
//! where the row says so, never a row above. Every `crate::` path under
//! `src/` is read, the module on each side is ranked, and an edge that goes
//! up, or sideways in a row whose modules never import each other, fails
//! the test with file:line. Each module the table lists must exist, and
//! each module of `src/` must be listed, once.
//!
//! The rows:
//! - the glue, in three rows (ripgrep's low/high split): `cmd`, one file per
//!   command that takes its flags and its resolved settings and runs it;
//!   `settings`, which turns clap's raw flags, the environment and
//!   `planck.toml` into one resolved value per command; `cli`, every clap
//!   struct (the flags only: it names no command and no setting).
//! - workflow: work that spans domains (explain's report located at the
//!   migration lines), below the glue so commands share it.
//! - domains: one per subcommand's work. A domain never imports another one
//!   (what two of them need belongs in a shared layer).
//! - render: every result's stdout formats, from the wire types alone.
//! - the shared layers, used by several domains, in four rows: each imports
//!   only the rows below it (`params` binds parameters to the catalog's
//!   columns, within a tenant, reading the queries file; `tenancy` reads the
//!   catalog; the catalog and the queries file open sessions), never a
//!   module of its own row.
//! - the base: connections, the managed cluster, the config file, errors,
//!   output plumbing, stop signals; they import each other, in no cycle.
//!
//! No cycle anywhere: the top-level modules form none ([`KNOWN_CYCLE`] is
//! empty),
//! and inside each of them the files form none (issue 34): each file is a
//! module (`src/replay/run.rs` is `replay::run`, `src/explain/rules/mod.rs`
//! is `explain::rules`), and one file depends on another when its code names
//! a path into it: `crate::replay::exec::X`, `super::exec::X`,
//! `super::super::engine::X`, `self::x::Y`, a child's `x::Y` in the parent,
//! or an item of a group (`use super::{exec, run::Options}`). The rule, in
//! three parts:
//! - a path counts where the item is defined: `super::Check`, when the
//!   parent only re-exports `Check` with `pub use check::Check`, depends on
//!   `check`, not on the parent;
//! - a re-export (`pub use`, `pub(crate) use`) and a `mod x;` line are not a
//!   use: a parent may declare and re-export its children while they import
//!   from it. A parent that uses a child's item for its own code (a list of
//!   checks, a dispatch to renderers) depends on the child, and then the
//!   child must not depend on the parent's own items (move those to a module
//!   below both);
//! - test code (`#[cfg(test)]` items) and comments are not read: tests reach
//!   for fixtures anywhere in their domain, and `use super::*` in `mod tests`
//!   is the file itself.
//!
//! Every cycle is reported with its files and the lines that close it. And a
//! file of `src/cmd/` never imports another one (`cmd/mod.rs` dispatches to
//! them all): what two commands share lives below the glue.

use std::path::{Path, PathBuf};

/// Whether the modules of one row may import each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peers {
    /// They may, in no cycle.
    Acyclic,
    /// Never: each imports only the rows below its own.
    Never,
}

/// One row of [`LAYERS`].
#[derive(Debug)]
struct Row {
    name: &'static str,
    peers: Peers,
    modules: &'static [&'static str],
}

/// The layers, top to bottom: the one table of this file.
const LAYERS: &[Row] = &[
    Row {
        name: "commands",
        peers: Peers::Never,
        modules: &["cmd"],
    },
    Row {
        name: "settings",
        peers: Peers::Never,
        modules: &["settings"],
    },
    Row {
        name: "arguments",
        peers: Peers::Never,
        modules: &["cli"],
    },
    Row {
        name: "workflow",
        peers: Peers::Acyclic,
        modules: &["workflow"],
    },
    Row {
        name: "domain",
        peers: Peers::Never,
        modules: &[
            "seed", "record", "explain", "migrate", "demo", "replay", "report",
        ],
    },
    Row {
        name: "render",
        peers: Peers::Never,
        modules: &["render"],
    },
    Row {
        name: "shared 1",
        peers: Peers::Never,
        modules: &["params", "findings"],
    },
    Row {
        name: "shared 2",
        peers: Peers::Never,
        modules: &["tenancy", "stats", "planner_stats"],
    },
    Row {
        name: "shared 3",
        peers: Peers::Never,
        modules: &["catalog", "queries", "bookkeeping"],
    },
    Row {
        name: "shared 4",
        peers: Peers::Never,
        modules: &["session", "wire"],
    },
    Row {
        name: "base",
        peers: Peers::Acyclic,
        modules: &["db", "cluster", "config", "error", "output", "signal"],
    },
];

/// The cycles between top-level modules the tests allow, each as an edge
/// (`from`, `to`) left out of the cycle check; the test fails on an edge
/// listed here that no file makes any more. The last one (`cli` -> `cmd`:
/// `cli`'s `Command` named clap structs defined in `cmd/` and `settings/`
/// while `cmd` dispatched on it) went when every clap struct moved under
/// `cli/` (issue 50, 3): keep the list empty.
const KNOWN_CYCLE: &[(&str, &str)] = &[];

/// The cycles between the files of one module found when the check grew
/// from the domains to every module (issue 50, 5), each with what would
/// break it; left out of the check until then. A parent file defines a type
/// and calls into a child that uses the type; the fix is the type in a file
/// of its own below both. The test fails on one that no longer exists. The
/// four found (db mod<->connect, tls<->tls/verify, cluster mod<->citus,
/// queries mod/transaction/write) are gone: keep the list empty.
const KNOWN_FILE_CYCLES: &[(&[&str], &str)] = &[];

/// A module's row: its index in [`LAYERS`] (0 on top) and the row.
fn layer(module: &str) -> Option<(usize, &'static Row)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, row)| row.modules.contains(&module))
}

/// Why `from` may not import `to`, by the table; `None` when it may.
fn layer_problem(from: &str, to: &str) -> Option<String> {
    let (f, from_row) = layer(from)?;
    let Some((t, to_row)) = layer(to) else {
        return Some(format!("`crate::{to}` names a module with no layer"));
    };
    let upward = t < f;
    let sideways = t == f && from_row.peers == Peers::Never;
    (upward || sideways)
        .then(|| format!("{from} ({}) imports {to} ({})", from_row.name, to_row.name))
}

/// The top-level module a file under `src/` belongs to (`src/seed/load.rs` is
/// `seed`); `None` for the crate roots.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a line names through `crate::`: `crate::db::x`,
/// and each item of `crate::{db, seed::y}`. Comments are not code.
fn crate_paths(line: &str) -> Vec<String> {
    let code = match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    };
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `mycrate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group only: `{a::{b, c}, d}` names a and d.
            let mut depth = 0;
            let mut item = String::new();
            let mut at_start = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        at_start = true;
                        if !item.is_empty() {
                            found.push(std::mem::take(&mut item));
                        }
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 && at_start {
                    if c.is_alphanumeric() || c == '_' {
                        item.push(c);
                    } else if !item.is_empty() || !c.is_whitespace() {
                        at_start = false;
                    }
                }
            }
            if !item.is_empty() {
                found.push(item);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

/// Items re-exported at the crate root (`pub use error::{Error, Result}` in
/// lib.rs) belong to the module they come from.
fn owner_of_root_item(name: &str) -> &str {
    match name {
        "Error" | "Result" => "error",
        other => other,
    }
}

#[test]
fn imports_run_downward_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let Some(from) = module_of(&src, file) else {
            continue;
        };
        let shown = file.strip_prefix(src.parent().unwrap()).unwrap().display();
        if layer(&from).is_none() {
            problems.push(format!(
                "{shown}: module `{from}` has no layer: add it to LAYERS in tests/it/architecture.rs"
            ));
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            for to in crate_paths(line) {
                let to = owner_of_root_item(&to).to_string();
                if to == from {
                    continue;
                }
                if let Some(why) = layer_problem(&from, &to) {
                    problems.push(format!("{shown}:{}: {why}", i + 1));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "imports must run down the rows of LAYERS (commands, settings, arguments, workflow, \
         domains, render, shared 1 to 4, base), and the modules of a domain or shared row never \
         import each other:\n{}",
        problems.join("\n")
    );
}

#[test]
fn crate_paths_reads_groups_and_skips_comments() {
    assert_eq!(
        crate_paths("use crate::db::{ConnInfo, quote_ident};"),
        ["db"]
    );
    assert_eq!(
        crate_paths("use crate::{error::{Error, Result}, seed::catalog};"),
        ["error", "seed"]
    );
    assert_eq!(
        crate_paths("let x = crate::explain::run(crate::db::x);"),
        ["explain", "db"]
    );
    assert!(crate_paths("// see crate::cmd::run").is_empty());
    assert!(crate_paths("use mycrate::seed;").is_empty());
}

/// The checker itself must be able to fail: an edge up the table (the
/// base into a domain, a lower shared row into a higher one), sideways
/// between two domains or two shared modules of one row, and to a module
/// the table does not list are each reported; down the table, or between
/// peers of the glue or the base, is not.
#[test]
fn an_upward_or_sideways_edge_is_an_error() {
    let to = crate_paths("use crate::explain::engine;")[0].clone();
    assert!(layer_problem("db", &to).is_some());
    assert_eq!(
        layer_problem("session", "catalog").as_deref(),
        Some("session (shared 4) imports catalog (shared 3)")
    );
    assert!(layer_problem("catalog", "params").is_some());
    assert!(layer_problem("replay", "seed").is_some());
    assert!(layer_problem("catalog", "queries").is_some());
    assert!(layer_problem("db", "no_such_module").is_some());
    assert_eq!(layer_problem("params", "catalog"), None);
    assert_eq!(layer_problem("replay", "wire"), None);
    // The renderers read the wire types and never a domain's own.
    assert_eq!(layer_problem("render", "wire"), None);
    assert!(layer_problem("render", "seed").is_some());
    assert!(layer_problem("wire", "render").is_some());
    assert_eq!(layer_problem("cmd", "settings"), None);
    assert_eq!(layer_problem("settings", "cli"), None);
    assert!(layer_problem("cli", "cmd").is_some());
    assert!(layer_problem("cli", "settings").is_some());
    assert!(layer_problem("settings", "cmd").is_some());
    assert!(layer_problem("workflow", "cli").is_some());
    assert_eq!(layer_problem("db", "cluster"), None);
    assert!(layer("no_such_module").is_none());
}

/// Issue 50, 5: every module the table lists is a module of `src/` (a file
/// `src/x.rs` or a folder `src/x/` with its `mod.rs`), listed once, and
/// each exception's edge names listed modules.
#[test]
fn the_layer_table_lists_modules_that_exist_once_each() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for row in LAYERS {
        for m in row.modules {
            if !seen.insert(*m) {
                problems.push(format!("`{m}` is listed twice"));
            }
            if !src.join(format!("{m}.rs")).is_file() && !src.join(m).join("mod.rs").is_file() {
                problems.push(format!(
                    "`{m}` ({}) is neither src/{m}.rs nor src/{m}/mod.rs",
                    row.name
                ));
            }
        }
    }
    for (a, b) in KNOWN_CYCLE {
        for m in [a, b] {
            if layer(m).is_none() {
                problems.push(format!("KNOWN_CYCLE names `{m}`, not in the table"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "LAYERS must list each module of src/ once, and only those:\n{}",
        problems.join("\n")
    );
}

// ---- the module graph: the top level, and inside each module -------------------

/// A module's path from the crate root: `["explain", "rules", "seq_scan"]`.
type ModPath = Vec<String>;

/// The module a file under `src/` is: `src/replay/run.rs` is `replay::run`,
/// `src/explain/rules/mod.rs` is `explain::rules`; `None` for the crate roots.
fn mod_path(src: &Path, file: &Path) -> Option<ModPath> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut path: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    if path.last().is_some_and(|l| l == "mod") {
        path.pop();
    }
    let root = path.len() == 1 && (path[0] == "lib" || path[0] == "main");
    (!path.is_empty() && !root).then_some(path)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Blanks `out[from..to]`, newlines kept so line numbers stay.
fn blank(out: &mut [u8], from: usize, to: usize) {
    let to = to.min(out.len());
    for c in &mut out[from.min(to)..to] {
        if *c != b'\n' {
            *c = b' ';
        }
    }
}

/// The source with comments (doc comments too), string and char literals
/// blanked, so neither a path in prose nor a brace in a string is read.
fn strip_comments_and_literals(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let after_ident = i > 0 && is_ident(b[i - 1]);
        // `r"`, `r#"`, `br"`: how many `#` a raw string opens with.
        let raw = (c == b'r'
            && (!after_ident || (b[i - 1] == b'b' && (i < 2 || !is_ident(b[i - 2])))))
        .then(|| b[i + 1..].iter().take_while(|&&c| c == b'#').count())
        .filter(|&hashes| b.get(i + 1 + hashes) == Some(&b'"'));
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw {
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p);
            blank(&mut out, start, end);
            i = end + close.len();
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{7b}'), else a lifetime.
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 3;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                blank(&mut out, i + 1, j);
                i = j + 1;
            } else {
                let len = match b.get(i + 1) {
                    Some(&c) if c < 0x80 => 1,
                    Some(&c) if c < 0xE0 => 2,
                    Some(&c) if c < 0xF0 => 3,
                    _ => 4,
                };
                if b.get(i + 1 + len) == Some(&b'\'') {
                    blank(&mut out, i + 1, i + 1 + len);
                    i += 2 + len;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The end of the item starting at `from`: after its first `;` outside
/// braces, or after the brace closing its first `{`.
fn item_end(b: &[u8], from: usize) -> usize {
    let mut depth = 0;
    let mut j = from;
    while j < b.len() {
        match b[j] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            b';' if depth == 0 => return j + 1,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// Blanks every `#[cfg(test)]` item (the attribute, any attributes after
/// it, and the item).
fn strip_test_items(b: &mut [u8]) {
    const ATTR: &[u8] = b"#[cfg(test)]";
    let mut i = 0;
    while let Some(p) = b[i..].windows(ATTR.len()).position(|w| w == ATTR) {
        let start = i + p;
        let mut j = start + ATTR.len();
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if !b[j..].starts_with(b"#[") {
                break;
            }
            let mut depth = 0;
            while j < b.len() {
                match b[j] {
                    b'[' => depth += 1,
                    b']' => {
                        depth -= 1;
                        if depth == 0 {
                            j += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        let end = item_end(b, j);
        blank(b, start, end);
        i = end;
    }
}

/// One path named in a file: where, the module path it names (items
/// included, `self` dropped), and whether it is a re-export.
#[derive(Debug, Clone, PartialEq)]
struct Named {
    line: usize,
    path: ModPath,
    /// The name it is known by where it is imported (`as` aliases).
    name: String,
    /// In a `use` declaration at the file's top level.
    top_use: bool,
    /// In a `pub use` / `pub(crate) use`: a re-export.
    reexport: bool,
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while pos < b.len() && b[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

fn word_at(b: &[u8], pos: usize) -> &str {
    let end = b[pos.min(b.len())..]
        .iter()
        .position(|&c| !is_ident(c))
        .map_or(b.len(), |p| pos + p);
    std::str::from_utf8(&b[pos.min(end)..end]).unwrap_or("")
}

/// Reads a path tree at `pos` below `prefix` (`a::b`, `a::{b, c::d}`,
/// `a::*`, `{self, x as y}`), pushing each leaf as (path, name); returns
/// where it ends.
fn path_tree(b: &[u8], pos: usize, prefix: &[String], out: &mut Vec<(ModPath, String)>) -> usize {
    let mut segs = prefix.to_vec();
    let mut pos = skip_ws(b, pos);
    loop {
        match b.get(pos) {
            Some(b'{') => {
                pos += 1;
                loop {
                    pos = skip_ws(b, pos);
                    match b.get(pos) {
                        None => return pos,
                        Some(b'}') => return pos + 1,
                        Some(b',') => pos += 1,
                        _ => {
                            let before = pos;
                            pos = path_tree(b, pos, &segs, out);
                            if pos == before {
                                pos += 1;
                            }
                        }
                    }
                }
            }
            Some(b'*') => {
                segs.push("*".into());
                out.push((segs, "*".into()));
                return pos + 1;
            }
            _ => {}
        }
        let word = word_at(b, pos);
        if word.is_empty() {
            // `crate::f::<T>()`: the path ends before the turbofish.
            if segs.len() > prefix.len() {
                let name = segs.last().unwrap().clone();
                out.push((segs, name));
            }
            return pos;
        }
        pos += word.len();
        if word != "self" {
            segs.push(word.to_string());
        }
        if b[pos..].starts_with(b"::") {
            pos += 2;
            continue;
        }
        let mut name = segs.last().cloned().unwrap_or_default();
        let after = skip_ws(b, pos);
        if word_at(b, after) == "as" {
            let alias = skip_ws(b, after + 2);
            name = word_at(b, alias).to_string();
            pos = alias + name.len();
        }
        out.push((segs, name));
        return pos;
    }
}

/// Whether the path starting at `head` is a `use` declaration's, and
/// whether that is a `pub use` (any `pub(..)`).
fn use_kind(b: &[u8], head: usize) -> (bool, bool) {
    let before = String::from_utf8_lossy(&b[head.saturating_sub(64)..head]);
    let before = before.trim_end();
    let Some(rest) = before.strip_suffix("use") else {
        return (false, false);
    };
    if rest.bytes().next_back().is_some_and(is_ident) {
        return (false, false);
    }
    let rest = rest.trim_end();
    let rest = match rest.strip_suffix(')') {
        Some(r) => r.rsplit_once('(').map_or(r, |(a, _)| a).trim_end(),
        None => rest,
    };
    let public = rest.ends_with("pub")
        && !rest[..rest.len() - 3]
            .bytes()
            .next_back()
            .is_some_and(is_ident);
    (true, public)
}

/// Every path a file names into the crate: through `crate::`, `super::`,
/// `self::` or one of its child modules (`children`), resolved against
/// the module the code sits in (`module`, plus any inline `mod x { }`).
/// Comments and test code are not read.
fn named_paths(text: &str, module: &[String], children: &[String]) -> Vec<Named> {
    let mut b = strip_comments_and_literals(text);
    strip_test_items(&mut b);
    // Inline modules (`pub mod wire { .. }`): (open, close, name).
    let mut inline: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"mod ") && (i == 0 || !is_ident(b[i - 1])) {
            let n = skip_ws(&b, i + 3);
            let name = word_at(&b, n).to_string();
            let open = skip_ws(&b, n + name.len());
            if !name.is_empty() && b.get(open) == Some(&b'{') {
                inline.push((open, item_end(&b, open), name));
            }
        }
        i += 1;
    }
    let mut depth = vec![0i32; b.len() + 1];
    for (j, c) in b.iter().enumerate() {
        depth[j + 1] = depth[j]
            + match c {
                b'{' => 1,
                b'}' => -1,
                _ => 0,
            };
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = is_ident(b[i]) && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let word = word_at(&b, i).to_string();
        let after = i + word.len();
        let is_head = b[after..].starts_with(b"::")
            && (word == "crate" || word == "super" || word == "self" || children.contains(&word));
        // `pub(in crate::a::b)` restricts a visibility: it names no item.
        let vis = String::from_utf8_lossy(&b[i.saturating_sub(16)..i]);
        let vis = vis.trim_end().strip_suffix("in").map(str::trim_end);
        if !is_head || vis.is_some_and(|v| v.ends_with("pub(")) {
            i = after;
            continue;
        }
        let mut here: ModPath = module.to_vec();
        here.extend(
            inline
                .iter()
                .filter(|(open, close, _)| *open < i && i < *close)
                .map(|(_, _, n)| n.clone()),
        );
        let (base, mut pos) = match word.as_str() {
            "crate" => (Vec::new(), after + 2),
            "self" => (here, after + 2),
            "super" => {
                let mut base = here;
                base.pop();
                let mut pos = after + 2;
                while b[pos..].starts_with(b"super::") {
                    base.pop();
                    pos += "super::".len();
                }
                (base, pos)
            }
            _ => (here, i),
        };
        let (is_use, reexport) = use_kind(&b, i);
        let line = b[..i].iter().filter(|&&c| c == b'\n').count() + 1;
        let mut leaves = Vec::new();
        pos = path_tree(&b, pos, &base, &mut leaves);
        for (path, name) in leaves {
            found.push(Named {
                line,
                path,
                name,
                top_use: is_use && depth[i] == 0,
                reexport,
            });
        }
        i = pos.max(after);
    }
    found
}

/// Every module of `src/` with what its file names.
struct Crate {
    src: PathBuf,
    files: std::collections::BTreeMap<ModPath, PathBuf>,
    named: std::collections::BTreeMap<ModPath, Vec<Named>>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut all = Vec::new();
        rust_files(src, &mut all);
        let files: std::collections::BTreeMap<ModPath, PathBuf> = all
            .into_iter()
            .filter_map(|f| Some((mod_path(src, &f)?, f)))
            .collect();
        let named = files
            .iter()
            .map(|(m, f)| {
                let children: Vec<String> = files
                    .keys()
                    .filter(|c| c.len() == m.len() + 1 && c.starts_with(m))
                    .map(|c| c.last().unwrap().clone())
                    .collect();
                let text = std::fs::read_to_string(f).unwrap();
                (m.clone(), named_paths(&text, m, &children))
            })
            .collect();
        Crate {
            src: src.to_path_buf(),
            files,
            named,
        }
    }

    /// The module that defines what `path` names: the longest module
    /// prefix, followed through that module's `use` of the next name.
    fn owner(&self, path: &[String], hops: usize) -> Option<ModPath> {
        let k = (1..=path.len())
            .rev()
            .find(|&k| self.files.contains_key(&path[..k]))?;
        if k < path.len() && hops < 8 {
            let imported = self.named[&path[..k]]
                .iter()
                .find(|n| n.top_use && n.name == path[k] && n.name != "*");
            if let Some(n) = imported {
                let mut next = n.path.clone();
                next.extend_from_slice(&path[k + 1..]);
                if next != path {
                    return self.owner(&next, hops + 1);
                }
            }
        }
        Some(path[..k].to_vec())
    }

    /// Module -> module dependencies, each with the first line naming it.
    fn edges(&self) -> std::collections::BTreeMap<(ModPath, ModPath), usize> {
        let mut edges = std::collections::BTreeMap::new();
        for (from, named) in &self.named {
            for n in named.iter().filter(|n| !n.reexport) {
                let Some(to) = self.owner(&n.path, 0) else {
                    continue;
                };
                if to != *from {
                    let line = edges.entry((from.clone(), to)).or_insert(n.line);
                    *line = (*line).min(n.line);
                }
            }
        }
        edges
    }

    fn shown(&self, m: &ModPath) -> String {
        let root = self.src.parent().unwrap();
        self.files[m]
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string()
    }
}

/// The strongly connected components of more than one node (Tarjan).
fn cycles(nodes: &[ModPath], edges: &[(ModPath, ModPath)]) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a [(ModPath, ModPath)],
        index: std::collections::BTreeMap<&'a ModPath, usize>,
        low: std::collections::BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        let edges = s.edges;
        for (_, w) in edges.iter().filter(|(a, _)| a == v) {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.stack.contains(&w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.found.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: Default::default(),
        low: Default::default(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}

/// Every module the table lists.
fn all_modules() -> impl Iterator<Item = &'static str> {
    LAYERS.iter().flat_map(|r| r.modules.iter().copied())
}

/// The edges between top-level modules (`from`, `to`), each with the first
/// file line that makes it.
fn top_level_edges(krate: &Crate) -> std::collections::BTreeMap<(String, String), String> {
    let mut top = std::collections::BTreeMap::new();
    for ((a, b), line) in krate.edges() {
        if a[0] != b[0] {
            top.entry((a[0].clone(), b[0].clone()))
                .or_insert_with(|| format!("{}:{line} uses {}", krate.shown(&a), krate.shown(&b)));
        }
    }
    top
}

/// The cycles between top-level modules, [`KNOWN_CYCLE`]'s edges left out:
/// each as its modules, then the lines that close it.
fn top_level_cycles(edges: &std::collections::BTreeMap<(String, String), String>) -> Vec<String> {
    let nodes: Vec<ModPath> = all_modules().map(|m| vec![m.to_string()]).collect();
    let graph: Vec<(ModPath, ModPath)> = edges
        .keys()
        .filter(|(a, b)| !KNOWN_CYCLE.contains(&(a.as_str(), b.as_str())))
        .map(|(a, b)| (vec![a.clone()], vec![b.clone()]))
        .collect();
    let mut problems = Vec::new();
    for cycle in cycles(&nodes, &graph) {
        let names: Vec<&str> = cycle.iter().map(|m| m[0].as_str()).collect();
        problems.push(format!("a cycle between {}", names.join(", ")));
        for (a, b) in &graph {
            if cycle.contains(a) && cycle.contains(b) {
                problems.push(format!("  {}", edges[&(a[0].clone(), b[0].clone())]));
            }
        }
    }
    problems
}

/// Issue 50, 5: the top-level modules import each other in no circle (the
/// glue included: [`KNOWN_CYCLE`] is empty, and an edge it lists must still
/// exist).
#[test]
fn no_cycle_at_the_top_level() {
    let krate = Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let edges = top_level_edges(&krate);
    let mut problems = top_level_cycles(&edges);
    for (a, b) in KNOWN_CYCLE {
        if !edges.contains_key(&(a.to_string(), b.to_string())) {
            problems.push(format!(
                "KNOWN_CYCLE lists {a} -> {b}, which no file makes any more: remove it"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the top-level modules must not import each other in a circle (move what both \
         sides need to a module below them):\n{}",
        problems.join("\n")
    );
}

/// The top-level check must be able to fail: a made-up circle between two
/// base modules is found, with the lines that close it, and so is one
/// through the glue (`cli` <-> `cmd`, the cycle once listed as known).
#[test]
fn a_top_level_cycle_is_found_in_the_base_and_in_the_glue() {
    let edges = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(a, b)| ((a.to_string(), b.to_string()), format!("{a} uses {b}")))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let planted = top_level_cycles(&edges(&[("db", "cluster"), ("cluster", "db")]));
    assert_eq!(
        planted,
        [
            "a cycle between cluster, db",
            "  cluster uses db",
            "  db uses cluster"
        ]
    );
    assert_eq!(
        top_level_cycles(&edges(&[("cli", "cmd"), ("cmd", "cli")])),
        [
            "a cycle between cli, cmd",
            "  cli uses cmd",
            "  cmd uses cli"
        ]
    );
    let through = edges(&[("cli", "cmd"), ("cmd", "settings"), ("settings", "cmd")]);
    assert_eq!(
        top_level_cycles(&through).first().map(String::as_str),
        Some("a cycle between cmd, settings")
    );
}

#[test]
fn no_cycle_inside_a_module() {
    let krate = Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let edges = krate.edges();
    let mut problems = Vec::new();
    let mut known_seen = Vec::new();
    for module in all_modules() {
        let inside = |m: &ModPath| m[0] == module;
        let nodes: Vec<ModPath> = krate.files.keys().filter(|m| inside(m)).cloned().collect();
        let local: Vec<(ModPath, ModPath)> = edges
            .keys()
            .filter(|(a, b)| inside(a) && inside(b))
            .cloned()
            .collect();
        for cycle in cycles(&nodes, &local) {
            let files: Vec<String> = cycle.iter().map(|m| krate.shown(m)).collect();
            let mut sorted: Vec<&str> = files.iter().map(String::as_str).collect();
            sorted.sort();
            if let Some(k) = KNOWN_FILE_CYCLES.iter().position(|(known, _)| {
                let mut known = known.to_vec();
                known.sort();
                known == sorted
            }) {
                known_seen.push(k);
                continue;
            }
            problems.push(format!("a cycle in `{module}`: {}", files.join(", ")));
            for ((a, b), line) in &edges {
                if cycle.contains(a) && cycle.contains(b) {
                    problems.push(format!(
                        "  {}:{line} uses {}",
                        krate.shown(a),
                        krate.shown(b)
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the files of a module must not import each other in a circle (move what both \
         sides need to a module below them):\n{}",
        problems.join("\n")
    );
    let gone: Vec<String> = (0..KNOWN_FILE_CYCLES.len())
        .filter(|k| !known_seen.contains(k))
        .map(|k| KNOWN_FILE_CYCLES[k].0.join(", "))
        .collect();
    assert!(
        gone.is_empty(),
        "KNOWN_FILE_CYCLES lists cycles no longer there: remove them:\n{}",
        gone.join("\n")
    );
}

#[test]
fn no_command_file_imports_another() {
    let krate = Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let dispatch: ModPath = vec!["cmd".to_string()];
    let problems: Vec<String> = krate
        .edges()
        .iter()
        .filter(|((a, b), _)| a[0] == "cmd" && b[0] == "cmd" && *a != dispatch)
        .map(|((a, b), line)| format!("{}:{line} imports {}", krate.shown(a), krate.shown(b)))
        .collect();
    assert!(
        problems.is_empty(),
        "a command file must not import another one (what two commands share lives below \
         the glue, e.g. in `workflow`):\n{}",
        problems.join("\n")
    );
}

fn strings(path: &[&str]) -> ModPath {
    path.iter().map(|s| s.to_string()).collect()
}

#[test]
fn named_paths_reads_super_self_groups_and_children() {
    // A `pub(in path)` visibility (line 12) names no item.
    let m = strings(&["replay", "exec"]);
    let text = "use super::fresh::{self, FreshKeys};\n\
                use crate::replay::{exec, run::Options as Opts};\n\
                fn f() { super::super::db::x(); self::inner::y(); child::z::<u8>(); }\n\
                // super::report::X in a comment\n\
                /// [`super::stale`] in a doc comment\n\
                const S: &str = \"super::slo::X\";\n\
                const C: char = '{';\n\
                pub(crate) use super::workload::{\n    Bind,\n    Unit,\n};\n\
                pub(in crate::replay) struct P(pub(in super::super) u8);\n";
    let got: Vec<(usize, String, String, bool, bool)> = named_paths(text, &m, &strings(&["child"]))
        .into_iter()
        .map(|n| (n.line, n.path.join("::"), n.name, n.top_use, n.reexport))
        .collect();
    let want = [
        (1, "replay::fresh", "fresh", true, false),
        (1, "replay::fresh::FreshKeys", "FreshKeys", true, false),
        (2, "replay::exec", "exec", true, false),
        (2, "replay::run::Options", "Opts", true, false),
        (3, "db::x", "x", false, false),
        (3, "replay::exec::inner::y", "y", false, false),
        (3, "replay::exec::child::z", "z", false, false),
        (8, "replay::workload::Bind", "Bind", true, true),
        (8, "replay::workload::Unit", "Unit", true, true),
    ];
    let want: Vec<(usize, String, String, bool, bool)> = want
        .iter()
        .map(|(l, p, n, u, r)| (*l, p.to_string(), n.to_string(), *u, *r))
        .collect();
    assert_eq!(got, want);
}

/// `use super::*` and `super::` in `mod tests` are the file itself, and
/// test code is not read at all; `super::` in an inline module is the file.
#[test]
fn named_paths_skips_tests_and_resolves_inline_modules() {
    let m = strings(&["record", "report"]);
    let text = "pub mod wire {\n    use super::Outcome;\n}\n\
                #[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::record::child::X;\n}\n\
                #[cfg(test)]\n#[allow(dead_code)]\nfn helper() { super::databases::y(); }\n\
                fn after() { super::transactions::t(); }\n";
    let got: Vec<(usize, String)> = named_paths(text, &m, &[])
        .into_iter()
        .map(|n| (n.line, n.path.join("::")))
        .collect();
    assert_eq!(
        got,
        [
            (2, "record::report::Outcome".to_string()),
            (12, "record::transactions::t".to_string())
        ]
    );
}

/// The checker must be able to fail: a made-up cycle is found, and a chain
/// is not one.
#[test]
fn a_cycle_is_found_and_a_chain_is_not() {
    let (a, b, c) = (
        strings(&["d", "a"]),
        strings(&["d", "b"]),
        strings(&["d", "c"]),
    );
    let nodes = [a.clone(), b.clone(), c.clone()];
    let chain = [(a.clone(), b.clone()), (b.clone(), c.clone())];
    assert!(cycles(&nodes, &chain).is_empty());
    let circle = [
        (a.clone(), b.clone()),
        (b.clone(), c.clone()),
        (c.clone(), a.clone()),
    ];
    assert_eq!(cycles(&nodes, &circle), [vec![a, b, c]]);
}

/// The names that meant several things (issue 34: four `Report`s, two
/// `Catalog`s, two `Plan`s, four `Shape`s, a `Check` trait beside a CHECK
/// constraint, a check run and TLS's verification) each name one type now;
/// a second type of one of these names fails here, naming both files.
#[test]
fn the_untangled_names_keep_one_meaning() {
    const ONE_MEANING: &[&str] = &["Catalog", "Check", "Plan", "Report", "Shape", "Schema"];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut defined: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(k) = words
                .iter()
                .position(|w| matches!(*w, "struct" | "enum" | "trait" | "type"))
            else {
                continue;
            };
            if !words[..k].iter().all(|w| w.starts_with("pub")) {
                continue;
            }
            let Some(name) = words.get(k + 1) else {
                continue;
            };
            let name = name.split(['<', '{', ':', ';', '(']).next().unwrap_or(name);
            if let Some(known) = ONE_MEANING.iter().find(|m| **m == name) {
                let at = file.strip_prefix(&src).unwrap().display().to_string();
                defined
                    .entry(known)
                    .or_default()
                    .push(format!("src/{at}:{}", n + 1));
            }
        }
    }
    let twice: Vec<String> = defined
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "one name, several types (name each by what it is):\n{}",
        twice.join("\n")
    );
}

/// The longest a file of `src/` may be, in lines: past it a file usually
/// holds more than one concept (issue 50, 6).
const MAX_LINES: usize = 1000;

/// The files still over [`MAX_LINES`], each to be split along its seams;
/// the test fails on one that is no longer over (remove it), so the list
/// only shrinks. A file of `src/seed/`, `src/catalog/` or elsewhere that
/// grows past the limit fails here until it is split or listed.
const LONG_FILES: &[&str] = &[
    "src/bookkeeping.rs",
    "src/catalog/schema.rs",
    "src/params/binding.rs",
    "src/record/mod.rs",
    "src/record/relay/session.rs",
    "src/seed/check_solve.rs",
    "src/seed/columns.rs",
    "src/seed/load.rs",
    "src/tenancy.rs",
];

#[test]
fn no_file_over_the_line_limit_but_the_listed_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut long = Vec::new();
    for file in &files {
        let lines = std::fs::read_to_string(file).unwrap().lines().count();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        if lines > MAX_LINES {
            if !LONG_FILES.contains(&shown.as_str()) {
                problems.push(format!(
                    "{shown} has {lines} lines (over {MAX_LINES}): split it along its seams"
                ));
            }
            long.push(shown);
        }
    }
    for listed in LONG_FILES {
        if !long.iter().any(|l| l == listed) {
            problems.push(format!(
                "{listed} is in LONG_FILES but is not over {MAX_LINES} lines (or is gone): remove it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
