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

/// The temp dir holds a CA key: it goes with the fixture. A process that
/// ended a moment ago may still be writing below it (a job runner's last
/// log line), which makes one removal fail; removal is tried again until
/// the tree is gone (10 s at most, then it says so).
impl Drop for Pki {
    fn drop(&mut self) {
        remove_tree(self.dir.path());
    }
}

/// Removes `dir` and everything below it, trying again while something
/// still writes there.
pub fn remove_tree(dir: &std::path::Path) {
    let gone = wait_until(Duration::from_secs(10), || {
        let _ = std::fs::remove_dir_all(dir);
        !dir.exists()
    });
    if !gone {
        eprintln!("fixture: could not remove {}", dir.display());
    }
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
            crl: None,
        }
    }

    /// A minion's credentials used as a client (minion-to-minion calls).
    pub fn minion_creds(&self, root: &Root, name: &str) -> Credentials {
        Credentials {
            key: root.minion_key(name),
            cert: root.minion_cert(name),
            ca: root.minion_ca_cert(),
            crl: None,
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

/// A running daemon (`funcd` or `certmaster`), ended on drop. Its stderr
/// is read continuously (so a chatty daemon never blocks on a full pipe)
/// and kept for [`Daemon::stderr_so_far`].
pub struct Daemon {
    /// The address it reported on its first stdout line.
    pub addr: SocketAddr,
    /// That first line.
    pub banner: String,
    child: Child,
    stderr: Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    /// Starts `bin` with `args` and reads the bound address from its first
    /// stdout line (`... listening on ADDR ...`).
    pub fn spawn(bin_name: &str, args: &[&std::ffi::OsStr]) -> Result<Self, String> {
        Self::spawn_exe(&bin(bin_name), args)
    }

    /// As [`Daemon::spawn`], for an executable anywhere (an installed one).
    pub fn spawn_exe(exe: &Path, args: &[&std::ffi::OsStr]) -> Result<Self, String> {
        let bin_name = exe.display().to_string();
        let mut child = Command::new(exe)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawning {bin_name}: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let read = BufReader::new(stdout).read_line(&mut line);
        let addr = line
            .split_whitespace()
            .skip_while(|w| *w != "on")
            .nth(1)
            .and_then(|a| a.parse::<SocketAddr>().ok());
        match (read, addr) {
            (Ok(_), Some(addr)) => {
                let stderr = Arc::new(std::sync::Mutex::new(String::new()));
                let reader = child.stderr.take().map(|pipe| {
                    let sink = Arc::clone(&stderr);
                    std::thread::spawn(move || {
                        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                            let mut text = sink.lock().unwrap_or_else(|p| p.into_inner());
                            text.push_str(&line);
                            text.push('\n');
                        }
                    })
                });
                Ok(Self {
                    addr,
                    banner: line.trim().to_string(),
                    child,
                    stderr,
                    reader,
                })
            }
            _ => Err(format!("{bin_name} did not start: {}", Self::finish(child))),
        }
    }

    /// What the daemon wrote to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits for the process to exit; returns its stderr.
    fn finish(mut child: Child) -> String {
        let _ = child.kill();
        let _ = child.wait();
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        err
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (up to `limit`) for the process to exit by itself; returns its
    /// exit code and stderr, or `None` if it is still running.
    pub fn exit_within(&mut self, limit: Duration) -> Option<(Option<i32>, String)> {
        if !wait_until(limit, || !matches!(self.child.try_wait(), Ok(None))) {
            return None;
        }
        let code = self.child.wait().ok().and_then(|s| s.code());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        Some((code, self.stderr_so_far()))
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

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A running `funcd`, ended on drop.
pub struct FuncdProcess {
    pub name: String,
    pub addr: SocketAddr,
    pub root: Root,
    pub daemon: Daemon,
}

impl FuncdProcess {
    /// Starts `funcd --root ROOT --name NAME --listen 127.0.0.1:0`.
    pub fn start(root: &Root, name: &str) -> Result<Self, String> {
        Self::start_with(root, name, &[])
    }

    /// As [`FuncdProcess::start`], with extra arguments (e.g. `--certmaster`).
    pub fn start_with(root: &Root, name: &str, extra: &[&str]) -> Result<Self, String> {
        let daemon = Self::spawn(root, name, extra)?;
        Ok(Self {
            name: name.into(),
            addr: daemon.addr,
            root: root.clone(),
            daemon,
        })
    }

    fn spawn(root: &Root, name: &str, extra: &[&str]) -> Result<Daemon, String> {
        let mut args: Vec<&std::ffi::OsStr> = vec!["--root".as_ref(), root.dir().as_os_str()];
        args.extend(["--name", name, "--listen", "127.0.0.1:0", "--foreground"].map(std::ffi::OsStr::new));
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        Daemon::spawn("funcd", &args)
    }

    /// Starts funcd again on the same root after [`FuncdProcess::stop`]
    /// (its async jobs, which outlive it, are left running).
    pub fn start_again(&mut self) -> Result<(), String> {
        self.daemon.stop();
        self.daemon = Self::spawn(&self.root, &self.name, &[])?;
        self.addr = self.daemon.addr;
        Ok(())
    }

    pub fn pid(&self) -> u32 {
        self.daemon.pid()
    }

    pub fn alive(&mut self) -> bool {
        self.daemon.alive()
    }

    pub fn stop(&mut self) {
        self.daemon.stop();
    }

    /// Sends SIGKILL to funcd itself (its async jobs live on).
    pub fn crash(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        self.daemon.stop();
    }
}

impl Drop for FuncdProcess {
    fn drop(&mut self) {
        kill_jobs(&self.root);
    }
}

/// Ends the process groups of async jobs still running below `root`: each
/// job process leaves `var/lib/func/jobs/ID.pid` ("PID STARTTIME") while it
/// runs; the start time guards against a reused pid.
pub fn kill_jobs(root: &Root) {
    let Ok(entries) = std::fs::read_dir(root.status_dir().join("jobs")) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if entry.path().extension().is_none_or(|e| e != "pid") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let mut words = text.split_whitespace();
        let (Some(Ok(pid)), Some(Ok(start))) = (
            words.next().map(str::parse::<u32>),
            words.next().map(str::parse::<u64>),
        ) else {
            continue;
        };
        if common::process::alive(pid, start) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A running `certmaster` with its own root, ended on drop.
pub struct CertmasterProcess {
    pub root: Root,
    pub daemon: Daemon,
}

impl CertmasterProcess {
    pub fn start(root: &Root, autosign: bool) -> Result<Self, String> {
        Self::start_at(root, autosign, "127.0.0.1:0")
    }

    /// As [`CertmasterProcess::start`], listening on `listen`.
    pub fn start_at(root: &Root, autosign: bool, listen: &str) -> Result<Self, String> {
        let mut args: Vec<&std::ffi::OsStr> = vec!["--root".as_ref(), root.dir().as_os_str()];
        args.extend(["--listen", listen, "--foreground"].map(std::ffi::OsStr::new));
        if autosign {
            args.push("--autosign".as_ref());
        }
        Ok(Self {
            root: root.clone(),
            daemon: Daemon::spawn("certmaster", &args)?,
        })
    }

    /// `127.0.0.1:PORT`, for `funcd --certmaster`.
    pub fn addr(&self) -> String {
        self.daemon.addr.to_string()
    }

    /// The CA fingerprint from the start line.
    pub fn fingerprint(&self) -> String {
        self.daemon
            .banner
            .split("SHA256 ")
            .nth(1)
            .unwrap_or("")
            .split([',', ')'])
            .next()
            .unwrap_or("")
            .to_string()
    }

    /// The overlord's credentials (they live below the certmaster's root).
    pub fn overlord(&self) -> Credentials {
        Credentials {
            key: self.root.overlord_key(),
            cert: self.root.overlord_cert(),
            ca: self.root.ca_cert(),
            crl: Some(self.root.ca_crl()),
        }
    }

    /// Runs `certmaster-ca --root ROOT ARGS...`: (exit code, stdout, stderr).
    pub fn ca(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(bin("certmaster-ca"))
            .arg("--root")
            .arg(self.root.dir())
            .args(args)
            .output()
            .expect("certmaster-ca runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
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

/// A certmaster (`--autosign`) and minions enrolled with it, each with its
/// own root in one temp dir; everything ended on drop. The overlord works
/// below the certmaster's root, as on a Func certmaster host.
pub struct Fleet {
    pub minions: Vec<FuncdProcess>,
    pub cm: CertmasterProcess,
    pub dir: tempfile::TempDir,
}

/// Ends every process first (and their async jobs), then removes the temp
/// dir (it holds the CA key), trying again while a late writer finishes.
impl Drop for Fleet {
    fn drop(&mut self) {
        for m in &mut self.minions {
            m.stop();
            kill_jobs(&m.root);
        }
        self.cm.daemon.stop();
        remove_tree(self.dir.path());
    }
}

impl Fleet {
    /// Starts the certmaster and `names` minions and waits until every
    /// minion has its certificate.
    pub fn start(names: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("func-fleet-")
            .tempdir()
            .expect("temp dir");
        let cm = CertmasterProcess::start(&Root::new(dir.path().join("certmaster")), true)
            .expect("certmaster starts");
        let minions: Vec<FuncdProcess> = names
            .iter()
            .map(|name| {
                let root = Root::new(dir.path().join(name));
                FuncdProcess::start_with(&root, name, &["--certmaster", &cm.addr()]).expect("funcd starts")
            })
            .collect();
        for m in &minions {
            assert!(
                wait_until(Duration::from_secs(30), || m.root.minion_cert(&m.name).exists()),
                "{} enrolled",
                m.name
            );
        }
        Self { minions, cm, dir }
    }

    pub fn minion(&mut self, name: &str) -> &mut FuncdProcess {
        self.minions
            .iter_mut()
            .find(|m| m.name == name)
            .expect("no such minion")
    }

    /// Runs `func --root <certmaster root> ARGS...`.
    pub fn func(&self, args: &[&str]) -> FuncOutput {
        let out = Command::new(bin("func"))
            .arg("--root")
            .arg(self.cm.root.dir())
            .args(args)
            .output()
            .expect("func runs");
        FuncOutput {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// What a `func` run printed and returned.
#[derive(Debug)]
pub struct FuncOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `scripts/install.sh` with PREFIX=/usr, the debug build, into `dest`.
pub fn install_debug_build(dest: &Path) {
    let out = std::process::Command::new("bash")
        .arg(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/install.sh"
        )))
        .env("PREFIX", "/usr")
        .env("DESTDIR", dest)
        .env("PROFILE", "debug")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
