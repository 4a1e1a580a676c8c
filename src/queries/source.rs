//! The document a queries file was read from, kept whole: a rewrite
//! ([`super::write`]) edits it, so what no command owns survives.

use std::path::Path;

use toml_edit::DocumentMut;

use super::evidence::Observed;
use super::statement::Statement;
use crate::error::{Error, Result};

/// The document a file was read from.
#[derive(Debug, Clone)]
pub(super) struct Source {
    pub(super) doc: DocumentMut,
    pub(super) version: u32,
    /// The line of each `[[statement]]` table, in file order: how a
    /// [`Statement`] (by its `line`) finds its table again.
    pub(super) lines: Vec<usize>,
    /// The `[observed]` table as read: left as written while it is unchanged.
    pub(super) observed: Observed,
}

impl Source {
    pub(super) fn parse(
        path: &Path,
        text: &str,
        version: u32,
        statements: &[Statement],
        observed: &Observed,
    ) -> Result<Source> {
        let doc: DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| Error::Config {
                path: path.to_path_buf(),
                line: None,
                column: None,
                message: e.message().to_string(),
                hint: None,
            })?;
        Ok(Source {
            doc,
            version,
            lines: statements.iter().filter_map(|s| s.line).collect(),
            observed: observed.clone(),
        })
    }
}
