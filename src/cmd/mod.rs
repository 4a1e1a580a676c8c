//! One module per subcommand. Each takes its clap args and the validated
//! [`Settings`] and returns the exit code it wants (0 ok, 1 findings); errors
//! travel as [`crate::error::Error`] and are mapped to exit codes in `main`.

pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod db;
pub(crate) mod demo;
pub(crate) mod explain;
pub(crate) mod init;
pub(crate) mod man;
pub(crate) mod migrate;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod report;
pub mod seed;
pub(crate) mod stats;

use crate::cli::Command;
use crate::error::Result;
use crate::settings::Settings;

pub async fn run(command: Command, settings: &Settings) -> Result<i32> {
    // A --format the command's result is not written in fails before any work.
    let (name, formats) = formats(&command);
    settings.format.check(name, formats)?;
    match command {
        Command::Db(c) => db::run(c, settings).await,
        Command::Migrate(a) => migrate::run(a, settings).await,
        Command::Seed(a) => seed::run(a, settings).await,
        Command::Record(a) => record::run(a, settings).await,
        Command::Explain(a) => explain::run(a, settings).await,
        Command::Replay(a) => replay::run(a, settings).await,
        Command::Stats(c) => stats::run(c, settings).await,
        Command::Report(a) => report::run(a, settings).await,
        Command::Demo(a) => demo::run(a, settings).await,
        Command::Check(a) => check::run(a, settings).await,
        Command::Init(a) => init::run(a, settings).await,
        Command::ExampleApp(a) => demo::example_app(a, settings).await,
        Command::Completions(a) => completions::run(&a),
        Command::Man(a) => man::run(&a),
    }
}

/// The commands that need no settings (no planck.toml, no database): run
/// before anything is resolved, so a broken planck.toml cannot stop them.
pub fn standalone(command: &Command) -> Option<Result<i32>> {
    match command {
        Command::Completions(a) => Some(completions::run(a)),
        Command::Man(a) => Some(man::run(a)),
        _ => None,
    }
}

/// The command's name and the formats its result is written in (its
/// `Render::FORMATS`); a command that prints no result takes the common ones.
fn formats(command: &Command) -> (&'static str, &'static [crate::output::Format]) {
    use crate::output::{Format, Render};
    match command {
        Command::Explain(_) => (
            "planck explain",
            <crate::explain::render::Printed as Render>::FORMATS,
        ),
        Command::Replay(_) => (
            "planck replay",
            <crate::wire::replay::ReplayReport as Render>::FORMATS,
        ),
        _ => ("this command", Format::COMMON),
    }
}
