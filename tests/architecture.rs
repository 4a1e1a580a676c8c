//! The import graph of `src/` runs one way only, and this test keeps it so.
//!
//! Several issues edit the code side by side (seed, explain, replay, record,
//! report), so the layers are a contract, not a habit. Every `crate::` path
//! under `src/` is read, the module on each side is ranked, and an edge that
//! goes up, or sideways between two domains, fails the test with file:line.
//!
//! The layers, top to bottom:
//! - glue: `cli`, `cmd`, `settings`. `settings` turns clap's raw flags, the
//!   environment and `planck.toml` into per-command settings, so it knows the
//!   flag structs that `cmd` and `cli` define: the three form one layer.
//! - workflow: work that spans domains (explain's report located at the
//!   migration lines), below the glue so commands share it.
//! - domains: one per subcommand's work. A domain never imports another one
//!   (what two of them need belongs in a shared layer).
//! - shared layers, used by several domains.
//! - the base: connections, the managed cluster, the config file, errors,
//!   output plumbing, stop signals.

use std::path::{Path, PathBuf};

const GLUE: &[&str] = &["cli", "cmd", "settings"];
const DOMAINS: &[&str] = &[
    "seed",
    "record",
    "explain",
    "migrate",
    "demo",
    "example_app",
    "replay",
    "report",
    "check",
];
const SHARED: &[&str] = &[
    "catalog",
    "tenancy",
    "params",
    "session",
    "findings",
    "queries",
    "stats",
    "bookkeeping",
    "wire",
];
const BASE: &[&str] = &["db", "cluster", "config", "error", "output", "signal"];

const WORKFLOW: &[&str] = &["workflow"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Base,
    Shared,
    Domain,
    Workflow,
    Glue,
}

fn layer(module: &str) -> Option<Layer> {
    if GLUE.contains(&module) {
        Some(Layer::Glue)
    } else if WORKFLOW.contains(&module) {
        Some(Layer::Workflow)
    } else if DOMAINS.contains(&module) {
        Some(Layer::Domain)
    } else if SHARED.contains(&module) {
        Some(Layer::Shared)
    } else if BASE.contains(&module) {
        Some(Layer::Base)
    } else {
        None
    }
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
        let Some(from_layer) = layer(&from) else {
            problems.push(format!(
                "{shown}: module `{from}` has no layer: add it to tests/architecture.rs"
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            for to in crate_paths(line) {
                let to = owner_of_root_item(&to).to_string();
                if to == from {
                    continue;
                }
                let Some(to_layer) = layer(&to) else {
                    problems.push(format!(
                        "{shown}:{}: `crate::{to}` names a module with no layer",
                        i + 1
                    ));
                    continue;
                };
                let upward = to_layer > from_layer;
                let sideways = to_layer == from_layer && from_layer == Layer::Domain;
                if upward || sideways {
                    problems.push(format!(
                        "{shown}:{}: {from} ({from_layer:?}) imports {to} ({to_layer:?})",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "imports must run glue -> workflow -> domains -> shared layers -> base, and domains \
         never import each other:\n{}",
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

/// The checker itself must be able to fail: an upward edge in a made-up file
/// is reported.
#[test]
fn an_upward_edge_is_an_error() {
    let from = layer("db").unwrap();
    let to = layer(crate_paths("use crate::explain::engine;")[0].as_str()).unwrap();
    assert!(to > from);
    assert!(layer("no_such_module").is_none());
}
