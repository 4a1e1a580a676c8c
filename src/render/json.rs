//! `--format json`: a result's wire type as serde writes it, so the JSON is
//! the contract itself (`format_version` first, fields in their declared
//! order), one newline after it.

use std::io::{self, Write};

use serde::Serialize;

/// Indented, two spaces a level: what every result but a URL prints.
pub(super) fn pretty(w: &mut impl Write, result: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, result)?;
    writeln!(w)
}

/// On one line (`planck db url --format json`, read by scripts).
pub(super) fn line(w: &mut impl Write, result: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *w, result)?;
    writeln!(w)
}
