//! Fixtures that start the real binaries: a PKI in a temp dir, `funcd`
//! processes on ephemeral ports, and an overlord-side TLS client. Every guard
//! ends the processes it started (by pid) and removes its files on drop.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::paths::Root;
use common::tls::Credentials;

/// A built binary of this workspace (`target/<profile>/<name>`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let mut dir = exe.parent().expect("exe dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built; run `cargo build --workspace` first",
        path.display()
    );
    path
}

/// A CA (certmaster root) in a temp dir, able to enroll minions locally.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca_root: Root,
    pub ca: certs::Authority,
}

impl Pki {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("func-test-")
            .tempdir()
            .expect("temp dir");
        let ca_root = Root::new(dir.path().join("certmaster"));
        let (ca, _) = certs::layout::ensure_ca(&ca_root, "test-CA").expect("CA");
        Self { dir, ca_root, ca }
    }

    /// A fresh root for `name` below the temp dir, with its certificate installed.
    pub fn minion_root(&self, name: &str) -> Root {
        let root = Root::new(self.dir.path().join(name));
        certs::layout::enroll_locally(&self.ca, &self.ca_root, &root, name).expect("enroll");
        root
    }

    /// The overlord's credentials.
    pub fn overlord(&self) -> Credentials {
        Credentials {
            key: self.ca_root.overlord_key(),
            cert: self.ca_root.overlord_cert(),
            ca: self.ca_root.ca_cert(),
        }
    }

    /// A minion's credentials used as a client (minion-to-minion calls).
    pub fn minion_creds(&self, root: &Root, name: &str) -> Credentials {
        Credentials {
            key: root.minion_key(name),
            cert: root.minion_cert(name),
            ca: root.minion_ca_cert(),
        }
    }

    pub fn client_tls(creds: &Credentials) -> Arc<rustls::ClientConfig> {
        Arc::new(common::tls::client_config(creds).expect("client TLS config"))
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

/// A running `funcd`, ended on drop.
pub struct FuncdProcess {
    pub name: String,
    pub addr: SocketAddr,
    pub root: Root,
    child: Child,
}

impl FuncdProcess {
    /// Starts `funcd --root ROOT --name NAME --listen 127.0.0.1:0` and reads
    /// the bound address from its first stdout line.
    pub fn start(root: &Root, name: &str) -> Result<Self, String> {
        let mut child = Command::new(bin("funcd"))
            .arg("--root")
            .arg(root.dir())
            .args(["--name", name, "--listen", "127.0.0.1:0", "--foreground"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawning funcd: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut reader = BufReader::new(stdout);
        let read = reader.read_line(&mut line);
        let addr = line
            .trim()
            .rsplit(' ')
            .next()
            .and_then(|a| a.parse::<SocketAddr>().ok());
        match (read, addr) {
            (Ok(_), Some(addr)) => Ok(Self {
                name: name.into(),
                addr,
                root: root.clone(),
                child,
            }),
            _ => {
                let _ = child.wait();
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                Err(format!("funcd did not start: {}", err.trim()))
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM and waits (SIGKILL after 10 s).
    pub fn stop(&mut self) {
        if !self.alive() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        if !wait_until(Duration::from_secs(10), || {
            !matches!(self.child.try_wait(), Ok(None))
        }) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for FuncdProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Polls `cond` every 20 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Writes `text` to `path`, creating parent directories.
pub fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}
