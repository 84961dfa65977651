//! `func SPEC copyfile -f LOCAL --remotepath PATH`: send a file to every
//! target in chunks (`copyfile.open`, `copyfile.append`), keeping its mode
//! and owner, then compare the remote checksum with the local one.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use overlord::job::Action;
use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub struct CopyFile {
    pub local: PathBuf,
    pub remote: String,
}

impl CopyFile {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let meta = std::fs::metadata(&self.local).map_err(|source| PlanError::File {
            path: self.local.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(PlanError::Config(format!(
                "{} is not a regular file",
                self.local.display()
            )));
        }
        let local = std::fs::canonicalize(&self.local).map_err(|source| PlanError::File {
            path: self.local.clone(),
            source,
        })?;
        let action = Action::CopyFile {
            sha1: sha1_file(&local).map_err(|source| PlanError::File {
                path: local.clone(),
                source,
            })?,
            local,
            remote: self.remote.clone(),
            mode: meta.mode() & 0o7777,
            uid: i64::from(meta.uid()),
            gid: i64::from(meta.gid()),
        };
        crate::display::call_and_show(
            plan,
            "copyfile.copyfile",
            action,
            crate::display::report::block,
            &|v| v,
        )
    }
}

fn sha1_file(path: &std::path::Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(ctx.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect())
}
