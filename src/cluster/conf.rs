//! The managed server's configuration files: the settings planck appends to
//! `postgresql.conf` at initdb, and `postgresql.planck.conf`, rewritten at
//! every start with where the server listens.
//!
//! Port, socket directory and listen address used to travel in `pg_ctl -o`,
//! which pg_ctl pastes into a `/bin/sh` command line: a project in
//! `my project/` was split at the space. In a configuration file a path is a
//! quoted string, whatever characters it holds.

use std::path::Path;

use crate::error::{Error, Result};

/// The include file in the data directory, rewritten at every start.
pub(crate) const LISTEN_FILE: &str = "postgresql.planck.conf";

/// Settings for a throwaway dev/CI server, appended to postgresql.conf.
pub(crate) const SERVER_SETTINGS: &str = "\
# Added by planck: a throwaway dev/CI server, fast rather than durable.
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 20000
track_activity_query_size = 8192
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 256MB
maintenance_work_mem = 256MB
max_wal_size = 4GB
# Nothing replicates from it: a COPY into a table truncated in the same
# transaction (planck seed, pgbench -i) and its index builds write no WAL.
wal_level = minimal
max_wal_senders = 0
checkpoint_timeout = 30min
autovacuum = on
log_min_messages = warning
";

/// The line that makes postgresql.conf read [`LISTEN_FILE`] (a relative
/// include is found next to postgresql.conf).
pub(crate) fn include_line() -> String {
    format!("include = '{LISTEN_FILE}'\n")
}

/// postgresql.conf with the include added, if it lacks it (clusters made by
/// an older planck, which passed these settings with `-o`).
pub(crate) fn with_include(conf: &str) -> Option<String> {
    let line = include_line();
    if conf.lines().any(|l| l.trim() == line.trim()) {
        return None;
    }
    let mut text = conf.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(
        "# Added by planck: port, socket directory and listen address, set at each start.\n",
    );
    text.push_str(&line);
    Some(text)
}

/// The text of [`LISTEN_FILE`].
pub(crate) fn listen_settings(port: u16, socket_dir: &Path) -> Result<String> {
    let dir = socket_dir.to_str().ok_or_else(|| {
        Error::usage(format!(
            "the socket directory {} is not valid UTF-8, which postgresql.conf needs",
            socket_dir.display()
        ))
    })?;
    Ok(format!(
        "# Written by planck at each start of the managed server: where it listens.\n\
         listen_addresses = '127.0.0.1'\n\
         port = {port}\n\
         unix_socket_directories = {}\n",
        conf_string(&list_item(dir))
    ))
}

/// A postgresql.conf string literal: single quotes, with `'` doubled and `\`
/// escaped (the file's parser reads backslash escapes).
fn conf_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// One element of a directory list such as `unix_socket_directories`:
/// double-quoted (so commas and spaces stay in the name), `"` doubled.
fn list_item(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_paths_are_quoted_for_postgresql_conf() {
        let text = listen_settings(5433, Path::new("/tmp/my pro'ject \"x\",y\\z/run")).unwrap();
        assert!(text.contains("port = 5433\n"), "{text}");
        assert!(
            text.contains(
                "unix_socket_directories = '\"/tmp/my pro''ject \"\"x\"\",y\\\\z/run\"'\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_include_is_added_once() {
        let once = with_include("a = 1").unwrap();
        assert!(once.starts_with("a = 1\n"));
        assert!(once.ends_with("include = 'postgresql.planck.conf'\n"));
        assert_eq!(with_include(&once), None);
    }
}
