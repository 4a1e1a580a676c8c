//! `planck seed --stats FILE`'s spec (issue 49, point 3): the statistics
//! file made a spec by [`crate::planner_stats::seed_spec`], the spec the
//! seed would use otherwise laid over it, parsed as any spec is. Part of
//! resolving `planck seed`'s settings: it reads two files and no database.
#![allow(clippy::result_large_err)] // see src/seed/mod.rs

use std::path::PathBuf;

use crate::error::Result;
use crate::planner_stats;
use crate::seed::spec::{MadeFrom, SpecFile};

/// `planck seed --stats FILE`: the spec the file makes, with `user` (the
/// spec the seed would use otherwise) laid over it table by table and
/// column by column, and the lines to print: where it came from, then
/// one per kind of statistic the spec does not follow, with its count.
pub fn spec(
    path: &std::path::Path,
    user: Option<&SpecFile>,
    exact_tenants: bool,
    log: crate::output::Log,
) -> Result<(SpecFile, Vec<String>)> {
    let file = planner_stats::read_file(path)?;
    let mut made = planner_stats::seed_spec::spec_from(&file, exact_tenants);
    let mut lines = vec![format!(
        "seeding from {} (PostgreSQL {}, values {}){}",
        path.display(),
        file.server_version_num / 10000,
        file.values.as_str(),
        user.and_then(|u| u.path.as_ref())
            .map_or(String::new(), |p| format!(", {} laid over it", p.display()))
    )];
    if let Some(u) = user {
        // The user's spec parsed once already; this reads it as plain TOML.
        let table: toml::Table = toml::from_str(&u.text).map_err(|e| {
            crate::config::toml_error(u.path.as_deref().unwrap_or(path), &u.text, &e)
        })?;
        planner_stats::seed_spec::overlay(&mut made.spec, &table);
    }
    let source = path.display().to_string();
    let text = planner_stats::seed_spec::to_text(&made.spec, &source);
    // An error names the file and the table and column; --verbose shows the text.
    log.debug(&format!("the spec made of {source}:\n{text}"));
    lines.push(if made.notes.is_empty() {
        "  the spec follows every statistic of the file".into()
    } else {
        format!(
            "  {} kind(s) of statistic not followed (the spec cannot say them): listed in the summary",
            made.notes.len()
        )
    });
    let spec = SpecFile::parse_made(
        &text,
        MadeFrom {
            stats: path.to_path_buf(),
            exact_tenants,
            user: user.map(|u| {
                (
                    u.path.clone().unwrap_or_else(|| PathBuf::from("<spec>")),
                    u.text.clone(),
                )
            }),
            notes: made.notes,
        },
    )?;
    Ok((spec, lines))
}
