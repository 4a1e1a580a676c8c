//! The `planck` binary: parse, dispatch, exit in one place.

use std::io::Write;
use std::path::Path;

use clap::Parser;
use clap::error::ErrorKind;

use planck::cli::Cli;
use planck::error::{self, exit};
use planck::settings::Settings;

fn main() {
    // `planck record` runs its capture relay as this binary, started again.
    if let Some(code) = planck::record::relay::own_process::run_if_asked() {
        std::process::exit(code);
    }
    let code = match Cli::try_parse() {
        Ok(cli) => run(cli),
        Err(e) => clap_exit(&e),
    };
    std::process::exit(code);
}

/// What clap stops at (`--help`, `--version`, a usage error): printed as
/// clap prints it, with its exit code. `--version` (not `-V`) also names the
/// PostgreSQL this machine has, which clap's fixed text cannot.
fn clap_exit(e: &clap::Error) -> i32 {
    let text = e.render().to_string();
    if e.kind() == ErrorKind::DisplayVersion && text.contains(planck::cli::LONG_VERSION) {
        let bindir = std::env::var_os("PLANCK_PG_BINDIR").filter(|v| !v.is_empty());
        let found = planck::cli::found_postgres(bindir.as_deref().map(Path::new));
        // A closed stdout (`planck --version | head -1`) is not an error.
        let _ = writeln!(std::io::stdout().lock(), "{}\n{found}", text.trim_end());
        return 0;
    }
    // clap's own rendering (colours on a terminal, stderr for errors).
    let _ = e.print();
    let _ = std::io::stdout().flush();
    e.exit_code()
}

fn run(cli: Cli) -> i32 {
    let env = |k: &str| std::env::var(k).ok();
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot read the current directory: {e}");
            return exit::USAGE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: internal error: cannot start the async runtime: {e}");
            return exit::INTERNAL;
        }
    };
    let result = match planck::cmd::standalone(&cli.command) {
        Some(result) => result,
        None => Settings::resolve(&cli.global, &env, &cwd).and_then(|settings| {
            runtime.block_on(async {
                // A stop signal no command is listening for ends the
                // process as its default action would (see planck::signal).
                tokio::select! {
                    result = planck::cmd::run(cli.command, &settings) => result,
                    s = planck::signal::unheard() => Ok(s.exit_code()),
                }
            })
        }),
    };
    // Work nobody awaits any more (a replay worker still running its unit
    // when a signal ended the run) gets two seconds, not as long as it
    // takes: dropping the runtime would wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", error::render(&e));
            e.exit_code()
        }
    }
}
