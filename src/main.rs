//! The `planck` binary: parse, dispatch, exit in one place.

use clap::Parser;

use planck::cli::Cli;
use planck::error::{self, exit};
use planck::settings::Settings;

fn main() {
    // `planck record` runs its capture relay as this binary, started again.
    if let Some(code) = planck::record::relay::own_process::run_if_asked() {
        std::process::exit(code);
    }
    let cli = Cli::parse();
    let code = run(cli);
    std::process::exit(code);
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
