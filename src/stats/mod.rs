//! pg_stat_statements, read honestly, and the noise filter: the shared
//! layer under `record` (what a test run sent) and `explain --from-stats`
//! (what the server saw).
//!
//! [`capture`] reads the view for one database (probe, reset, samples and
//! their difference, the roles that ran each statement); [`noise`] says
//! which texts are not the application's: transaction control, settings,
//! catalog reads, DDL, and planck's own statements and bookkeeping, plus the
//! server's own foreign-key checks that planck's work caused, each with its
//! own [`Reason`].
//!
//! planck keeps itself out of pg_stat_statements first by running its
//! sessions with `pg_stat_statements.track = 'none'` ([`quiet`]); the noise
//! filter is the second line, for what that setting could not keep out.

pub mod capture;
pub mod noise;

pub use noise::{Reason, classify};

use tokio_postgres::Client;

use crate::error::{Error, Result};

/// Whether a session is kept out of pg_stat_statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quiet {
    /// `pg_stat_statements.track = 'none'` for the session.
    Untracked,
    /// The role may not change the setting: statements carry the
    /// `/* planck */` tag and the noise filter drops them.
    Tagged,
}

/// Stops pg_stat_statements from tracking this session's statements
/// (`SET pg_stat_statements.track = 'none'`: a superuser setting, grantable
/// on PostgreSQL 15+ with `GRANT SET ON PARAMETER pg_stat_statements.track`).
/// Where it is refused, or the extension is not loaded, the session goes on
/// tagged. The shared session layer does this for every planck session;
/// record calls it for its own probes.
pub async fn quiet(client: &Client) -> Result<Quiet> {
    match client
        .batch_execute("/* planck */ SET pg_stat_statements.track = 'none'")
        .await
    {
        Ok(()) => Ok(Quiet::Untracked),
        Err(e) if e.as_db_error().is_some() => Ok(Quiet::Tagged),
        Err(e) => Err(Error::db("keeping planck out of pg_stat_statements", e)),
    }
}
