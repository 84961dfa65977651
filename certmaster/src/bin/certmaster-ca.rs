//! `certmaster-ca`: the administrator's view of the certmaster's store —
//! list, sign and clean requests and certificates, and print the ACL keys.
//! Messages follow Func's; exit 0 on success, 1 when an argument matched
//! nothing or an operation failed, 2 on a usage error.

use std::process::ExitCode;

use anyhow::Context;
use certmaster_server::cli::CertmasterCaCli as Cli;
use certmaster_server::store::Store;
use clap::Parser;
use common::identity::PeerIdentity;
use common::paths::Root;

/// `println!` that never panics: with stdout closed early
/// (`--list-signed | head`) the rest is dropped and the work goes on.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("certmaster-ca: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Names in `names` matching `pattern` (a glob; an invalid glob matches only itself).
fn matching<'a>(names: &'a [String], pattern: &str) -> Vec<&'a String> {
    match glob::Pattern::new(pattern) {
        Ok(p) => names.iter().filter(|n| p.matches(n)).collect(),
        Err(_) => names.iter().filter(|n| *n == pattern).collect(),
    }
}

/// `names` matching any of `globs` (all of them when no glob is given).
fn filtered(names: Vec<String>, globs: &[String]) -> Vec<String> {
    if globs.is_empty() {
        return names;
    }
    names
        .iter()
        .filter(|n| {
            globs
                .iter()
                .any(|g| !matching(std::slice::from_ref(n), g).is_empty())
        })
        .cloned()
        .collect()
}

fn run(cli: Cli) -> anyhow::Result<bool> {
    let root = Root::new(&cli.root);
    anyhow::ensure!(
        root.ca_cert().exists(),
        "no certmaster below the root {}: {} does not exist. Pass the certmaster's --root DIR (or set FUNC_ROOT), or start the certmaster once to create its CA",
        root.dir().display(),
        root.ca_cert().display()
    );
    let store = Store::new(root.clone());
    let load_ca = || -> anyhow::Result<certs::Authority> {
        let cert =
            certs::files::read_text(&root.ca_cert()).context("no CA yet: start the certmaster once first")?;
        let key = certs::files::read_text(&root.ca_key())?;
        certs::Authority::load(&cert, &key).context("loading the CA")
    };
    let mut ok = true;
    if cli.list {
        list_pending(&store);
    }
    if !cli.sign.is_empty() {
        ok &= sign(&store, &load_ca()?, &cli.sign, cli.fingerprint.as_deref());
    }
    if !cli.clean.is_empty() {
        ok &= clean(&store, &load_ca()?, &cli.clean)?;
    }
    if !cli.sign.is_empty() || !cli.clean.is_empty() {
        store.share();
    }
    if let Some(globs) = &cli.list_signed {
        for name in filtered(store.signed(), globs) {
            say!("{name}");
        }
    }
    if let (Some(name), Some(dir)) = (&cli.relay, &cli.relay_root) {
        let ca = load_ca()?;
        let relay_root = Root::new(dir);
        certs::layout::provision_relay(&root, &ca, &relay_root, name, &cli.relay_names)
            .with_context(|| format!("making relay {name}"))?;
        say!(
            "relay {name}: its overlord key, certificate and func-api certificate are below {} (no CA key: copy that root to the relay's host)",
            relay_root.dir().display()
        );
    }
    if let Some(globs) = &cli.list_cert_hash {
        ok &= list_cert_hashes(&store, globs);
    }
    Ok(ok)
}

/// `--list`: the requests waiting, with their fingerprints.
fn list_pending(store: &Store) {
    let pending = store.pending();
    if pending.is_empty() {
        say!("No certificates to sign");
    }
    for name in pending {
        let fp = store
            .pending_fingerprint(&name)
            .unwrap_or_else(|| "(unreadable request)".into());
        say!("{name}  {fp}");
    }
}

/// `--sign GLOB...` (with `--fingerprint`: the one request it names); whether all went well.
fn sign(store: &Store, ca: &certs::Authority, globs: &[String], fingerprint: Option<&str>) -> bool {
    let mut ok = true;
    for arg in globs {
        let pending = store.pending();
        let hits = matching(&pending, arg);
        if hits.is_empty() {
            eprintln!("No match for {arg} to sign");
            ok = false;
        }
        if fingerprint.is_some() && hits.len() > 1 {
            eprintln!("--fingerprint names one request; {arg} matches {}", hits.len());
            ok = false;
            continue;
        }
        for name in hits {
            match store.sign_pending_checked(ca, name, fingerprint) {
                Ok((csr, cert)) => say!("{} signed - cert located at {}", csr.display(), cert.display()),
                Err(e) => {
                    eprintln!("cannot sign {name}: {e}");
                    ok = false;
                }
            }
        }
    }
    ok
}

/// `--clean GLOB...`: requests and certificates removed (and revoked).
fn clean(store: &Store, ca: &certs::Authority, globs: &[String]) -> anyhow::Result<bool> {
    let mut ok = true;
    for arg in globs {
        let mut names = store.pending();
        names.extend(store.signed());
        names.sort();
        names.dedup();
        let hits = matching(&names, arg);
        if hits.is_empty() {
            eprintln!("No match for {arg} to clean up");
            ok = false;
        }
        for name in hits {
            for file in store
                .clean(ca, name)
                .with_context(|| format!("cleaning {name}"))?
            {
                say!("Cleaning out {} for host matching {arg}", file.display());
            }
        }
    }
    Ok(ok)
}

/// `--list-cert-hash`: each signed certificate's ACL key.
fn list_cert_hashes(store: &Store, globs: &[String]) -> bool {
    let mut ok = true;
    for name in filtered(store.signed(), globs) {
        let der = store
            .cert(&name)
            .and_then(|pem| certs::authority::pem_to_der(&pem));
        match der.map(|d| PeerIdentity::from_der(&d)) {
            Some(Ok(id)) => say!("{}", id.acl_key()),
            _ => {
                eprintln!("cannot read the certificate of {name}");
                ok = false;
            }
        }
    }
    ok
}
