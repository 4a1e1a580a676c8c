//! `planck man`: man pages rendered by clap_mangen from the same clap
//! definitions as `--help`: planck(1) on stdout, or with `--out-dir` one
//! page per subcommand beside it (`planck-seed.1`, ...). Needs no project,
//! configuration or database.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli::man::ManArgs;
use crate::error::{Error, Result};

pub fn run(args: &ManArgs) -> Result<i32> {
    let mut cli = Cli::command();
    // Built, so that each subcommand carries its full name (planck-seed)
    // and the global flags.
    cli.build();
    let Some(dir) = &args.out_dir else {
        let page = render(&cli)?;
        crate::output::emit(&page)?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
        path: dir.clone(),
        source,
    })?;
    write_page(dir, "planck", &cli)?;
    let mut written = 1;
    for sub in cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = sub
            .get_display_name()
            .map_or_else(|| format!("planck-{}", sub.get_name()), str::to_string);
        write_page(dir, &name, sub)?;
        written += 1;
    }
    eprintln!("wrote {written} man pages into {}", dir.display());
    Ok(0)
}

fn render(cmd: &clap::Command) -> Result<Vec<u8>> {
    let mut cmd = cmd.clone();
    // The NAME line is "<name> - <about>": an about that opens with the
    // name, as `--help`'s first line does ("planck: shows, ..."), would
    // read "planck - planck: shows, ...".
    let about = cmd.get_about().map(ToString::to_string);
    if let Some(rest) = about
        .as_deref()
        .and_then(|a| a.strip_prefix(&format!("{}: ", cmd.get_name())))
    {
        cmd = cmd.about(rest.to_string());
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .map_err(|e| {
            Error::internal(format!("rendering the man page of {}: {e}", cmd.get_name()))
        })?;
    Ok(page)
}

fn write_page(dir: &Path, name: &str, cmd: &clap::Command) -> Result<()> {
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, render(cmd)?).map_err(|source| Error::WriteFile { path, source })
}
