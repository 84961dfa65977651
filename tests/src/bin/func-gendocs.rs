//! `func-gendocs DIR`: man pages and shell completions (bash, zsh, fish) of
//! the six binaries, generated from their clap definitions (the same ones
//! they parse with), into `DIR/man/` and `DIR/completions/{bash,zsh,fish}/`.
//! `make docs` runs it into `target/docs`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;

fn main() -> anyhow::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "target/docs".into()));
    let commands = [
        ("1", overlord::cli::docs_command()),
        ("1", overlord::func_transmit::Cli::command()),
        ("8", overlord::api::cli::Cli::command()),
        ("8", minion::cli::Cli::command()),
        ("8", certs::cli::CertmasterCli::command()),
        ("8", certs::cli::CertmasterCaCli::command()),
    ];
    for (section, cmd) in commands {
        let cmd = cmd.version(env!("CARGO_PKG_VERSION"));
        write_man(&dir.join("man"), section, &cmd)?;
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let out = dir.join("completions").join(shell.to_string());
            std::fs::create_dir_all(&out).with_context(|| out.display().to_string())?;
            let mut cmd = cmd.clone();
            let name = cmd.get_name().to_string();
            clap_complete::generate_to(shell, &mut cmd, name, &out)
                .with_context(|| format!("{shell} completion of {}", cmd.get_name()))?;
        }
    }
    println!("man pages and completions written below {}", dir.display());
    Ok(())
}

/// `NAME.SECTION` for the command and `NAME-SUB.SECTION` for each subcommand.
fn write_man(dir: &Path, section: &str, cmd: &clap::Command) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let page = |cmd: &clap::Command, name: &str| -> anyhow::Result<()> {
        let mut out = Vec::new();
        // A one-shot tool: the leaked names live until it exits anyway.
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        clap_mangen::Man::new(cmd.clone().name(name))
            .section(section)
            .render(&mut out)?;
        let path = dir.join(format!("{name}.{section}"));
        std::fs::write(&path, out).with_context(|| path.display().to_string())
    };
    page(cmd, cmd.get_name())?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        page(sub, &format!("{}-{}", cmd.get_name(), sub.get_name()))?;
    }
    Ok(())
}
