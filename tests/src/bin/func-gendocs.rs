//! `func-gendocs DIR`: man pages and shell completions (bash, zsh, fish) of
//! the seven binaries, generated from their clap definitions (the same ones
//! they parse with), into `DIR/man/` and `DIR/completions/{bash,zsh,fish}/`.
//! `make docs` runs it into `target/docs`.

// A test and benchmark tool whose report is read by a script or a person.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;

fn main() -> anyhow::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "target/docs".into()));
    let commands = [
        ("1", overlord_cli::cli::docs_command()),
        ("1", overlord_cli::func_transmit::Cli::command()),
        ("1", overlord_cli::inventory::Cli::command()),
        ("1", overlord_cli::build_map::Cli::command()),
        ("8", overlord_api::cli::Cli::command()),
        ("8", minion::cli::Cli::command()),
        ("8", certmaster_server::cli::CertmasterCli::command()),
        ("8", certmaster_server::cli::CertmasterCaCli::command()),
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
        if let Some(lines) = examples(name) {
            out.extend_from_slice(b".SH EXAMPLES\n");
            for (what, command) in lines {
                out.extend_from_slice(format!(".TP\n\\fB{}\\fR\n{}\n", roff(command), roff(what)).as_bytes());
            }
        }
        let path = dir.join(format!("{name}.{section}"));
        std::fs::write(&path, out).with_context(|| path.display().to_string())
    };
    page(cmd, cmd.get_name())?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        page(sub, &format!("{}-{}", cmd.get_name(), sub.get_name()))?;
    }
    Ok(())
}

/// Text safe in a roff line (a leading dot or quote, backslashes, dashes).
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    match t.starts_with(['.', '\'']) {
        true => format!("\\&{t}"),
        false => t,
    }
}

/// The EXAMPLES section of a page: (what it does, the command).
fn examples(name: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match name {
        "func" => &[
            ("Is every minion there?", "func '*' ping"),
            ("Run a command on the web servers.", "func 'web*' call command run 'uptime'"),
            ("Start a background job, then collect its results.", "func '*' call --async --nopoll test sleep 10; func job_status last --wait"),
            ("Ten percent of the hosts at a time, stopping at the first failure.", "func '*' call --batch 10% --failhard service restart nginx"),
            ("Results as JSON for a program.", "func --json 'db*' call test ping"),
            ("Recent jobs, and the batches still running.", "func jobs list --limit 20; func batch list"),
        ],
        "func-call" => &[
            ("Two numbers added on every web server.", "func 'web*' call test add 1 2"),
            ("Typed arguments.", "func db1 call --json-args '[\"ls -l /\"]' command run"),
            ("In the background, polling until every host is finished.", "func '*' call --async test sleep 5"),
        ],
        "func-inventory" => &[
            ("Every minion's hardware.info, committed to the git tree below var/lib/func/inventory.", "func-inventory"),
            ("Facts and services of the web servers, as JSON, into a tree of your own.", "func-inventory -s 'web*' -M fact,service -m items,get_running --json -t /srv/inventory"),
            ("What changed on which host since the last runs.", "git -C /var/lib/func/inventory log -p"),
        ],
        "func-build-map" => &[
            ("The map of the relays in overlord.conf's [relays], written to var/lib/func/map.", "func-build-map -v"),
            ("Only the minions that answer now, added to the map there.", "func-build-map --onlyalive --append"),
            ("Then call through the relays.", "func --delegate '*' ping"),
        ],
        "func-transmit" => &[
            ("One call, as Func's programs send it.", "echo '{\"clients\": \"web*\", \"module\": \"test\", \"method\": \"ping\"}' | func-transmit"),
            ("The minions of a group, in YAML.", "printf 'method: list_minions\\nclients: \"@web\"\\n' | func-transmit --yaml"),
        ],
        "funcd" => &[
            ("In the foreground, logging to the terminal.", "funcd --foreground --log-level debug"),
            ("A test minion with its own root and port.", "funcd --root /tmp/m1 --listen 127.0.0.1:0 --foreground"),
        ],
        "certmaster" => &[("In the foreground, for a look at the CA fingerprint.", "certmaster --foreground")],
        "certmaster-ca" => &[
            ("Requests waiting, with their fingerprints.", "certmaster-ca --list"),
            ("Sign a request only if its key is the one compared.", "certmaster-ca --sign web1 --fingerprint 3F:A2:..."),
            ("Revoke a minion (its certificate goes into the CRL).", "certmaster-ca --clean web1"),
        ],
        "func-api" => &[
            ("An admin token (printed once: keep it in a file, not on command lines).", "func-api token create ops --admin | tail -1 > ~/.func-token"),
            ("A token for test methods on the web servers only.", "func-api token create ci --allow 'web*=test.*'"),
            ("The minions, over the API.", "curl --cacert /etc/pki/certmaster/ca/certmaster.crt -H \"Authorization: Bearer $(cat ~/.func-token)\" https://localhost:51236/api/v1/minions"),
        ],
        _ => return None,
    })
}
