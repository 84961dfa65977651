//! The spool directory (`var/lib/func/jobs/`) through which job processes,
//! which never open the daemon's store, talk to it:
//! - `ID.job`: the request (a running [`JobRecord`]), written by the daemon
//!   before it starts the job;
//! - `ID.pid`: "PID STARTTIME", written by the job process as it starts, so a
//!   daemon that crashed before recording the pid still finds the job;
//! - `ID.done`: the final record, written by the job durably (temp file,
//!   fsync, rename, fsync of the directory) before it exits.
//!
//! The daemon ingests `.done` files on notification, on every status query,
//! on a periodic sweep and at start-up, then removes the job's files.
//!
//! The directory is checked once (0700, ours, below directories no one else
//! can write: `common::private::private_dir`) and opened once; every file is
//! then reached through that descriptor, never by path again, so a spool
//! swapped under the same name later is not the one read or written.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::store::JobRecord;
use crate::beneath::Dir;

/// The spool directory of a minion root, open.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
    fd: Arc<Dir>,
}

/// Whether `id` has the minion job id shape (`<digits>.<digits>-minion`),
/// the only strings that ever become file names here.
pub fn is_job_id(id: &str) -> bool {
    common::rpc::client::is_minion_job_id(id)
}

impl Spool {
    /// The spool at `dir`, created 0700 (an older, wider one is tightened),
    /// checked, and opened (not through a symlink).
    pub fn new(dir: PathBuf) -> std::io::Result<Self> {
        common::private::private_dir(&dir)?;
        let fd = Dir::open_dir_nofollow(&dir).map_err(std::io::Error::other)?;
        Ok(Self {
            dir,
            fd: Arc::new(fd),
        })
    }

    /// Brings files an older install left wider down to 0600 (the daemon,
    /// at start-up).
    pub fn tighten(&self) -> std::io::Result<()> {
        common::private::tighten_all(&self.dir)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn name(id: &str, ext: &str) -> String {
        format!("{id}.{ext}")
    }

    /// Writes a whole file through the descriptor: a new temporary file
    /// (0600, `O_EXCL | O_NOFOLLOW`), renamed over `name`; with `durable`,
    /// the data and the entry are fsynced.
    fn write(&self, name: &str, bytes: &[u8], durable: bool) -> std::io::Result<()> {
        let tmp = format!(".{name}.tmp{}", std::process::id());
        let tmp = OsStr::new(&tmp);
        self.fd.remove(tmp);
        let written = (|| {
            let mut file = self
                .fd
                .create_new(tmp, common::private::FILE_MODE)
                .map_err(std::io::Error::other)?
                .ok_or_else(|| std::io::Error::other("temporary file name taken"))?;
            file.write_all(bytes)?;
            if durable {
                file.sync_all()?;
            }
            self.fd
                .rename(tmp, OsStr::new(name))
                .map_err(std::io::Error::other)?;
            if durable {
                self.fd.sync().map_err(std::io::Error::other)?;
            }
            Ok(())
        })();
        if written.is_err() {
            self.fd.remove(tmp);
        }
        written
    }

    /// A whole regular file of the spool (never through a link).
    fn read(&self, name: &str) -> std::io::Result<Vec<u8>> {
        let mut file = self
            .fd
            .open_existing(OsStr::new(name), false)
            .map_err(|e| match e {
                crate::beneath::BeneathError::Io(io) => io,
                other => std::io::Error::other(other),
            })?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Writes the request a job process will read (no fsync: the store has
    /// the durable copy; this file only has to outlive the next second).
    pub fn write_request(&self, record: &JobRecord) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        self.write(&Self::name(&record.id, "job"), &bytes, false)
    }

    pub fn read_request(&self, id: &str) -> std::io::Result<JobRecord> {
        let bytes = self.read(&Self::name(id, "job"))?;
        serde_json::from_slice(&bytes).map_err(std::io::Error::other)
    }

    pub fn write_pid(&self, id: &str, pid: u32, start: u64) -> std::io::Result<()> {
        self.write(
            &Self::name(id, "pid"),
            format!("{pid} {start}\n").as_bytes(),
            false,
        )
    }

    /// The job process's pid and start time, if it recorded them.
    pub fn read_pid(&self, id: &str) -> Option<(u32, u64)> {
        let text = String::from_utf8(self.read(&Self::name(id, "pid")).ok()?).ok()?;
        let mut words = text.split_whitespace();
        Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
    }

    /// Writes the final record durably.
    pub fn write_done(&self, record: &JobRecord) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        self.write(&Self::name(&record.id, "done"), &bytes, true)
    }

    /// The final record of `id`, if its job wrote one. An unreadable file
    /// (a disk error, hand editing) counts as a result too, so the job still
    /// ends instead of running forever.
    pub fn read_done(&self, id: &str) -> Option<Result<JobRecord, String>> {
        let bytes = match self.read(&Self::name(id, "done")) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(Err(e.to_string())),
        };
        Some(
            serde_json::from_slice::<JobRecord>(&bytes)
                .map_err(|e| format!("unreadable result file: {e}"))
                .and_then(|r| match r.id == id {
                    true => Ok(r),
                    false => Err("result file names another job".into()),
                }),
        )
    }

    /// Ids with a `.done` file waiting.
    pub fn done_ids(&self) -> Vec<String> {
        self.ids_with(".done")
    }

    /// Ids with a request (`.job`) file: jobs started and not yet taken in.
    pub fn request_ids(&self) -> Vec<String> {
        self.ids_with(".job")
    }

    fn ids_with(&self, suffix: &str) -> Vec<String> {
        // The directory this spool holds open, not whatever has its name now.
        let held = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        let Ok(entries) = std::fs::read_dir(held) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(suffix).map(str::to_string))
            .filter(|id| is_job_id(id))
            .collect()
    }

    /// Removes every file of `id` (after its result is in the store).
    pub fn remove(&self, id: &str) {
        for ext in ["job", "pid", "done"] {
            self.fd.remove(OsStr::new(&Self::name(id, ext)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_job_ids_become_file_names() {
        assert!(is_job_id("1763712345.123456-minion"));
        assert!(is_job_id("17-minion"));
        for bad in [
            "",
            "-minion",
            "../x-minion",
            "1.2.3-minion",
            "1/2-minion",
            "1763712345.1",
            "*-test-ping-1.0",
            "1-minion\n",
        ] {
            assert!(!is_job_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn done_files_round_trip_and_bad_ones_still_end_the_job() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("jobs")).unwrap();
        let id = "5.25-minion";
        assert!(spool.read_done(id).is_none());
        std::fs::write(spool.dir().join(Spool::name(id, "done")), b"{ not json").unwrap();
        assert!(spool.read_done(id).unwrap().is_err());
        assert_eq!(spool.done_ids(), vec![id.to_string()]);
        spool.remove(id);
        assert!(spool.done_ids().is_empty());
        spool.write_pid(id, 12, 34).unwrap();
        assert_eq!(spool.read_pid(id), Some((12, 34)));
    }
}
