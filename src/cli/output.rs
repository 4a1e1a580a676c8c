//! The output arguments, declared once and flattened into every command
//! that writes result files (`explain`, `replay`, `report`, `check`):
//! `--output [KIND=]PATH`, repeatable ([`OutputArgs`]), and the review's
//! shorthand flags (`--markdown PATH` is `-o markdown=PATH`,
//! [`ReviewFileArgs`]). Each command gives `--output` its own help (the
//! kinds it writes) with `mut_arg("output", ...)`; `output::target::resolve`
//! resolves the lot once, before any work.

use std::path::PathBuf;

use clap::{Arg, Args};

use crate::output::target::{Kind, Target};

/// For a command's `#[command(mut_args(output::help("...")))]`: gives its
/// `--output` the help that lists the kinds it writes, in its place among
/// the arguments (`mut_arg` would move it last, and the completions'
/// order with it).
pub fn help(text: &'static str) -> impl FnMut(Arg) -> Arg {
    move |a| {
        if a.get_id() == "output" {
            a.help(text)
        } else {
            a
        }
    }
}

/// The same for the value's name in the help (check's `KIND=PATH`: it has
/// no default kind).
pub fn value_name(name: &'static str) -> impl FnMut(Arg) -> Arg {
    move |a| {
        if a.get_id() == "output" {
            a.value_name(name)
        } else {
            a
        }
    }
}

/// `-o, --output [KIND=]PATH`, repeatable.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// A file to write; repeatable
    #[arg(short, long, value_name = "[KIND=]PATH")]
    pub output: Vec<Target>,
}

impl OutputArgs {
    /// The `--output`s as written, then the shorthand flags' in `flags`'
    /// order: the list `output::target::resolve` takes.
    pub fn targets<'a>(
        &self,
        flags: impl IntoIterator<Item = (&'a Option<PathBuf>, Kind)>,
    ) -> Vec<Target> {
        let mut targets = self.output.clone();
        targets.extend(flags.into_iter().filter_map(|(path, kind)| {
            path.as_ref().map(|path| Target {
                kind: Some(kind),
                path: path.clone(),
            })
        }));
        targets
    }
}

/// The review's files by their own flag, as `planck report` and `planck
/// check` take them.
#[derive(Debug, Clone, Default, Args)]
pub struct ReviewFileArgs {
    /// The same as `-o markdown=PATH`
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// The same as `-o junit=PATH`
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// The same as `-o sarif=PATH`
    #[arg(long, value_name = "PATH")]
    pub sarif: Option<PathBuf>,
    /// The same as `-o gitlab=PATH`
    #[arg(long, value_name = "PATH")]
    pub gitlab: Option<PathBuf>,
}

impl ReviewFileArgs {
    /// Each flag with the kind it stands for, in the order they are declared.
    pub fn flags(&self) -> [(&Option<PathBuf>, Kind); 4] {
        [
            (&self.markdown, Kind::MARKDOWN),
            (&self.junit, Kind::Junit),
            (&self.sarif, Kind::Sarif),
            (&self.gitlab, Kind::Gitlab),
        ]
    }
}
