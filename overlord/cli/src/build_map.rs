//! `func-build-map [-a|--append] [-o|--onlyalive] [-v|--verbose]` (Func's
//! program, DESIGN §17): asks every relay of overlord.conf's `[relays]`
//! for its map (its minions and its relays', recursively), adds this
//! overlord's own minions (`{}` each; with `--onlyalive` those answering
//! `test.ping`), and writes the map in Func's YAML to `var/lib/func/map` —
//! and, with a shared store, into the store, so every overlord of it
//! delegates the same way. `--append` merges it over the map there
//! (Func's `dict.update`). A relay that cannot be asked is said, and the
//! exit status is 1; the map is still written with what was found.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser;
use common::paths::Root;

use overlord::relay::Map;

#[derive(Parser, Debug)]
#[command(
    name = "func-build-map",
    version,
    about = "Func's func-build-map: the delegation map of this overlord's relays, written to var/lib/func/map"
)]
pub struct Cli {
    /// Read and write only below DIR (env FUNC_ROOT, default /)
    #[arg(long, value_name = "DIR", env = "FUNC_ROOT")]
    pub root: Option<PathBuf>,
    /// Merge the new map over the one there
    #[arg(short = 'a', long)]
    pub append: bool,
    /// Only minions that answer test.ping now
    #[arg(short = 'o', long = "onlyalive")]
    pub only_alive: bool,
    /// Say what is done, and print the map
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(&cli) {
        Ok(failed) => ExitCode::from(u8::from(failed)),
        Err(e) => {
            overlord::errln!("func-build-map: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<bool> {
    let root = Root::new(
        cli.root
            .as_ref()
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into()),
    );
    overlord::conf::OverlordConf::of(&root).map_err(|e| anyhow::anyhow!("{e}"))?;
    let say = |line: &str| {
        if cli.verbose {
            overlord::errln!("- {line}");
        }
    };
    if overlord::relay::map::configured(&root)?.is_empty() {
        overlord::errln!(
            "func-build-map: overlord.conf has no [relays] (NAME = HOST:PORT each, names from certmaster-ca --relay): the map holds this overlord's own minions only"
        );
    }
    say("asking every relay of [relays] for its map");
    let pool = Arc::new(
        // Its error names the credentials already.
        overlord::pool::Pool::new(overlord::settings::Calling::of_root(&root))
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let (mut map, mut unreached) = overlord::relay::block_on(async {
        overlord::relay::build::build(&root, &pool, cli.only_alive).await
    })?;
    for why in &unreached {
        overlord::errln!("func-build-map: {why}");
    }
    let path = Map::path(&root);
    if cli.append {
        let mut old = Map::load(&path)?.unwrap_or_default();
        say(&format!("appending to the map in {}", path.display()));
        old.merge(map);
        map = old;
        let refused = map.refuse_double_claims();
        for why in &refused {
            overlord::errln!("func-build-map: {why}");
        }
        unreached.extend(refused);
    }
    if cli.verbose {
        overlord::outln!("{}", map.to_yaml().trim_end());
    }
    say(&format!("writing to {}", path.display()));
    map.save(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let store = overlord::settings::store(&root);
    if store
        .save_map(&overlord::relay::signed_map::seal(&root, &map.to_yaml())?)
        .with_context(|| format!("the shared store {}", store.shown()))?
    {
        say(&format!("kept in the shared store {}", store.shown()));
    }
    let relays = overlord::relay::map::configured(&root)?.len();
    overlord::outln!(
        "func-build-map: {} minion(s), {relays} relay(s) in {}",
        map.minions().len(),
        path.display()
    );
    Ok(!unreached.is_empty())
}
