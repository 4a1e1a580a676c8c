//! What goes wrong reading the queries file, said at its line: the error
//! itself, and the check that refuses unknown keys. Read by the file's own
//! parser and by `[[transaction]]`'s.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};

/// An error at a line of the queries file.
pub(crate) fn file_error(
    path: &Path,
    line: Option<usize>,
    message: impl Into<String>,
    hint: impl Into<String>,
) -> Error {
    Error::Config {
        path: path.to_path_buf(),
        line,
        column: None,
        message: message.into(),
        hint: Some(hint.into()),
    }
}

/// Refuses keys planck does not know, unless they start with `x-` (kept,
/// never read): a typo must not silently drop a setting.
pub(crate) fn check_keys(
    path: &Path,
    line: Option<usize>,
    what: &str,
    other: &BTreeMap<String, toml::Value>,
    known: &str,
) -> Result<()> {
    match other.keys().find(|k| !k.starts_with("x-")) {
        Some(k) => {
            let meant = crate::error::suggest(k, known.split(", "))
                .map(|m| format!("did you mean `{m}`? "))
                .unwrap_or_default();
            Err(file_error(
                path,
                line,
                format!("unknown key `{k}` in {what}"),
                format!(
                    "{meant}the keys are {known}; a key starting with `x-` is kept and never read"
                ),
            ))
        }
        None => Ok(()),
    }
}
