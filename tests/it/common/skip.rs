//! Skips that show and are counted (issue 52). A test that cannot do what its
//! name promises here returns through [`skip!`](crate::skip), which says why on
//! stderr and appends one line to [`skips_file`]: `.ci/run` reads that file
//! after each PostgreSQL major's run and reports those tests as skipped, not
//! passed, each by name and reason. libtest itself has no outcome between
//! passed and failed, and a passing test's stderr is never shown, so without
//! the file a skip would read as a pass.
//!
//! Three kinds, because they mean different things:
//! - [`Skip::NotApplicable`]: the test is about something this server does not
//!   have (a PostgreSQL 18 feature on 15, Citus on 18). Never a failure.
//! - [`Skip::Missing`]: a prerequisite `.ci/run` installs (Citus, another
//!   PostgreSQL major, chromium, man, the `../shared` fixtures) is not here.
//!   Under CI that is a failure: the test panics with the reason.
//! - [`Skip::CouldNotRun`]: the machine prevents it in a way CI does not
//!   control (port 80 is not privileged, PGPORT is set). A skip everywhere.

use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    NotApplicable,
    Missing,
    CouldNotRun,
}

impl Skip {
    /// How `.ci/run` lists it.
    fn label(self) -> &'static str {
        match self {
            Skip::NotApplicable => "not applicable",
            Skip::Missing | Skip::CouldNotRun => "could not run",
        }
    }
}

/// Where the run's skips are written, one line each:
/// `<module>::<test>\t<kind>\t<reason>` (`target/tmp/skips.tsv`). `.ci/run`
/// empties it before each major's run.
pub fn skips_file() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skips.tsv")
}

/// Whether this run is CI's (`CI` set, as `.ci/run` and CI services set it,
/// and not to `false` or `0`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Records that `test` skips (see the module's note); panics instead for a
/// [`Skip::Missing`] prerequisite under CI. The caller returns.
pub fn skip(kind: Skip, test: &str, reason: &str) {
    if kind == Skip::Missing && in_ci() {
        panic!(
            "{test}: {reason}\n(CI installs this prerequisite, so under CI=true a missing one is a failure, not a skip)"
        );
    }
    let reason = reason.replace(['\t', '\n'], " ");
    eprintln!("skipped ({}): {test}: {reason}", kind.label());
    let line = format!("{test}\t{}\t{reason}\n", kind.label());
    let path = skips_file();
    let written = std::fs::create_dir_all(path.parent().unwrap()).and_then(|()| {
        // One write of one short line in append mode: lines from tests running
        // at once (threads, or several test binaries) do not interleave.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?
            .write_all(line.as_bytes())
    });
    if let Err(e) = written {
        panic!(
            "{test}: could not record its skip in {}: {e}",
            path.display()
        );
    }
}

/// Skips the calling test and returns from it:
/// `skip!(NotApplicable, "virtual generated columns are PostgreSQL 18+ (this is {major})")`,
/// `skip!(Missing, "...")`, `skip!(CouldNotRun, "...")`; or, with a kind
/// computed elsewhere, `skip!(kind = k, "...")`. The test is named as libtest
/// names it ([`current_test`](crate::common::current_test)).
#[macro_export]
macro_rules! skip {
    (kind = $kind:expr, $($reason:tt)+) => {{
        $crate::common::skip::skip(
            $kind,
            &$crate::common::current_test(),
            &format!($($reason)+),
        );
        return;
    }};
    ($kind:ident, $($reason:tt)+) => {
        $crate::skip!(kind = $crate::common::skip::Skip::$kind, $($reason)+)
    };
}
