//! `func-testpki`: places test and demo credentials below roots, the way the
//! certmaster will: a CA with the overlord's marked client certificate, minion
//! certificates signed by it, and (for refusal tests) a foreign CA with a
//! client certificate the minions must not accept.
//!
//! ```text
//! func-testpki ca CA_ROOT
//! func-testpki minion CA_ROOT MINION_ROOT NAME
//! func-testpki foreign DIR            # DIR/ca.crt, DIR/client.pem, DIR/client.cert
//! ```

// A test and benchmark tool whose report is read by a script or a person.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use anyhow::Context;
use certs::files::{write_atomic, PRIVATE, PUBLIC};
use clap::{Parser, Subcommand};
use common::paths::Root;

#[derive(Parser)]
#[command(about = "Place Func test/demo credentials below roots")]
struct Cli {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Create the CA and overlord credentials below CA_ROOT (kept if present).
    Ca { ca_root: PathBuf },
    /// Enroll minion NAME: key and certificate below MINION_ROOT, signed by the CA below CA_ROOT.
    Minion {
        ca_root: PathBuf,
        minion_root: PathBuf,
        name: String,
    },
    /// A CA unknown to the minions, with a client certificate it signed.
    Foreign { dir: PathBuf },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().what {
        What::Ca { ca_root } => {
            let (_, created) =
                certs::layout::ensure_ca(&Root::new(ca_root), "func-CA").context("creating the CA")?;
            println!("{}", if created { "CA created" } else { "CA present" });
        }
        What::Minion {
            ca_root,
            minion_root,
            name,
        } => {
            let ca_root = Root::new(ca_root);
            let (ca, _) = certs::layout::ensure_ca(&ca_root, "func-CA").context("loading the CA")?;
            certs::layout::enroll_locally(&ca, &ca_root, &Root::new(minion_root), &name)
                .with_context(|| format!("enrolling {name}"))?;
            println!("{name} enrolled");
        }
        What::Foreign { dir } => {
            let (ca, _) = certs::Authority::create("foreign-CA")?;
            let key = certs::request::new_key()?;
            let signed = ca.issue_overlord("intruder", &key)?;
            write_atomic(&dir.join("ca.crt"), ca.cert_pem().as_bytes(), PUBLIC)?;
            write_atomic(&dir.join("client.pem"), key.serialize_pem().as_bytes(), PRIVATE)?;
            write_atomic(&dir.join("client.cert"), signed.cert_pem.as_bytes(), PUBLIC)?;
            println!("foreign CA written");
        }
    }
    Ok(())
}
