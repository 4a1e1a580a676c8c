//! `planck db status` and `planck db url` / `db start` with `--format json`
//! (`format_version` 1): the managed server's state and where it lives, and
//! a connection URL. Built in `cmd/db.rs`; rendered by `crate::render`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

/// The managed server, and each Citus worker's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbStatus {
    pub format_version: u32,
    /// `absent`, `stopped` or `running`.
    pub state: String,
    pub port: Option<u16>,
    pub url: Option<String>,
    pub data_dir: PathBuf,
    /// The OS user the server runs as, when planck runs as root.
    pub run_as: Option<String>,
    pub server_version: String,
    pub bindir: PathBuf,
    /// A Citus coordinator's workers (left out when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citus_workers: Vec<DbWorker>,
}

/// One Citus worker, a server of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbWorker {
    pub state: String,
    pub port: Option<u16>,
    pub data_dir: PathBuf,
}

/// A connection URL: the bare line, or `{"format_version":1,"url":...}` on
/// one line with `--format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbUrl {
    pub format_version: u32,
    pub url: String,
}
