//! `planck record`'s flags (raw, as clap gives them) and its settings,
//! resolved once: [`RecordSettings::resolve`].
//!
//! Override order, strongest first: `--output`, then `[record] output` in
//! planck.toml (both relative to the project), then `queries/recorded.toml`
//! under the project's queries folder. The command runs where planck was
//! started and finds its program on `PATH`, as a shell would.

use std::ffi::OsString;
use std::path::Path;

use super::Settings;
use crate::cli::record::RecordArgs;
use crate::error::Result;
use crate::queries;

/// Defined in the domain (library code may not import settings); resolved here.
pub use crate::record::RecordSettings;

impl RecordSettings {
    /// Flags, planck.toml and the process's directory and `PATH`, merged once.
    pub fn resolve(args: &RecordArgs, settings: &Settings) -> Result<RecordSettings> {
        Ok(RecordSettings::resolve_in(
            args,
            settings,
            &settings.cwd,
            settings.path_var.clone(),
        ))
    }

    /// [`RecordSettings::resolve`] with the directory and `PATH` given.
    pub fn resolve_in(
        args: &RecordArgs,
        settings: &Settings,
        cwd: &Path,
        path_var: Option<OsString>,
    ) -> RecordSettings {
        let output = match args
            .output
            .as_ref()
            .or(settings.config.record.output.as_ref())
        {
            Some(p) => settings.project_path(p),
            None => queries::default_path(&settings.queries_dir()),
        };
        RecordSettings {
            output,
            keep_all: args.keep_all,
            prune: args.prune,
            command: args.command.clone(),
            cwd: cwd.to_path_buf(),
            path_var,
            relay: !args.no_relay && !args.command.is_empty(),
            max_transactions: args
                .max_transactions
                .unwrap_or(crate::record::MAX_TRANSACTIONS),
            list_all: settings.log().verbose,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings(dir: &Path) -> Settings {
        let cli = crate::cli::Cli::parse_from(["planck", "record"]);
        Settings::resolve(&cli.global, &|_| None, dir).unwrap()
    }

    /// Replaces `args_can_be_built_in_code`, which only read back the
    /// fields it had set: the builder's values must reach the settings,
    /// with the output taken from the project and the flag beating the file.
    #[test]
    fn flags_beat_the_file_and_paths_are_the_projects() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("planck.toml"),
            "[record]\noutput = \"from-file.toml\"\n",
        )
        .unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let s = settings(&sub);
        let path = Some(OsString::from("/bin"));
        let built = RecordArgs::around(["tools/example-app", "--all"]).output("q/out.toml");
        let r = RecordSettings::resolve_in(&built, &s, &sub, path.clone());
        assert_eq!(
            r,
            RecordSettings {
                output: dir.path().join("q/out.toml"),
                keep_all: false,
                prune: false,
                command: vec!["tools/example-app".into(), "--all".into()],
                cwd: sub.clone(),
                path_var: path.clone(),
                relay: true,
                max_transactions: 200,
                list_all: false,
            }
        );
        let r = RecordSettings::resolve_in(&RecordArgs::default(), &s, &sub, None);
        assert_eq!(r.output, dir.path().join("from-file.toml"));
        assert!(r.command.is_empty());

        let bare = tempfile::tempdir().unwrap();
        let r = RecordSettings::resolve_in(
            &RecordArgs {
                keep_all: true,
                prune: true,
                ..Default::default()
            },
            &settings(bare.path()),
            bare.path(),
            None,
        );
        assert_eq!(r.output, bare.path().join("queries/recorded.toml"));
        assert!(r.keep_all && r.prune);
        // No command: nothing to relay; --no-relay turns it off.
        assert!(!r.relay);
        let r = RecordSettings::resolve_in(
            &RecordArgs {
                no_relay: true,
                max_transactions: Some(3),
                ..RecordArgs::around(["x"])
            },
            &settings(bare.path()),
            bare.path(),
            None,
        );
        assert!(!r.relay);
        assert_eq!(r.max_transactions, 3);
    }
}
