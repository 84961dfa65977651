//! `make install`'s layout (scripts/install.sh with the debug build):
//! binaries, man pages, completions, systemd units that `systemd-analyze
//! verify` accepts, commented sample configuration that the daemons read,
//! and a certmaster, a minion and func run from the installed files.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::paths::Root;
use func_tests::fixture::{install_debug_build, wait_until, Daemon};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn install_lays_out_everything_and_the_installed_fleet_works() {
    let dir = tempfile::Builder::new()
        .prefix("func-install-")
        .tempdir()
        .unwrap();
    let dest = dir.path().join("dest");
    install_debug_build(&dest);
    for file in [
        "usr/bin/func",
        "usr/bin/certmaster-ca",
        "usr/sbin/funcd",
        "usr/sbin/certmaster",
        "usr/share/man/man1/func.1",
        "usr/share/man/man1/func-call.1",
        "usr/share/man/man8/funcd.8",
        "usr/share/bash-completion/completions/func",
        "usr/share/zsh/site-functions/_funcd",
        "usr/share/fish/vendor_completions.d/certmaster-ca.fish",
        "usr/lib/systemd/system/funcd.service",
        "usr/lib/systemd/system/certmaster.service",
        "etc/func/minion.conf",
        "etc/func/overlord.conf",
        "etc/func/async_methods.conf",
        "etc/func/groups",
        "etc/func/minion-acl.d/example.acl.sample",
        "etc/certmaster/certmaster.conf",
        "etc/certmaster/minion.conf",
        "usr/share/doc/funcd/examples/modules/example_py",
        "usr/share/doc/funcd/examples/modules/example_sh",
    ] {
        assert!(dest.join(file).is_file(), "{file}");
    }
    // Configuration that may hold the store's password ([store] url) is
    // readable by its owner only; the rest is world-readable.
    for (conf, want) in [
        ("etc/func/overlord.conf", 0o600),
        ("etc/certmaster/certmaster.conf", 0o600),
        ("etc/func/minion.conf", 0o644),
    ] {
        let mode = std::fs::metadata(dest.join(conf)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, want, "{conf}: {mode:o}");
    }
    // The drop-in module directories funcd looks in, writable by their owner only.
    for d in ["usr/libexec/func/modules", "etc/func/modules.d"] {
        let meta = std::fs::metadata(dest.join(d)).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert!(meta.is_dir() && meta.permissions().mode() & 0o777 == 0o755, "{d}");
    }
    // The units: Type=notify, and systemd accepts them (ExecStart pointed at
    // the installed binary, since nothing is installed in /usr here).
    for (unit, bin) in [
        ("funcd.service", "sbin/funcd"),
        ("certmaster.service", "sbin/certmaster"),
    ] {
        let text = std::fs::read_to_string(dest.join("usr/lib/systemd/system").join(unit)).unwrap();
        assert!(
            text.contains("Type=notify") && text.contains(&format!("ExecStart=/usr/{bin}")),
            "{text}"
        );
        let copy = dir.path().join(unit);
        std::fs::write(
            &copy,
            text.replace(
                &format!("/usr/{bin}"),
                &dest.join("usr").join(bin).display().to_string(),
            ),
        )
        .unwrap();
        let verify = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&copy)
            .output();
        match verify {
            Ok(v) => assert!(
                v.status.success(),
                "{unit}: {}",
                String::from_utf8_lossy(&v.stderr)
            ),
            Err(e) => eprintln!("skipped: systemd-analyze cannot run here ({e}); {unit} not verified"),
        }
    }
    // Existing configuration is the administrator's: a second install keeps it.
    std::fs::write(dest.join("etc/func/minion.conf"), "[main]\nkeep_jobs = 5\n").unwrap();
    install_debug_build(&dest);
    assert_eq!(
        std::fs::read_to_string(dest.join("etc/func/minion.conf")).unwrap(),
        "[main]\nkeep_jobs = 5\n"
    );
    // A fleet from the installed binaries, reading the sample configuration.
    let bin = |p: &str| dest.join("usr").join(p);
    let cm_root = Root::new(dir.path().join("cm"));
    let m_root = Root::new(dir.path().join("m1"));
    for (sample, root, rel) in [
        (
            "etc/certmaster/certmaster.conf",
            &cm_root,
            "etc/certmaster/certmaster.conf",
        ),
        ("etc/func/overlord.conf", &cm_root, "etc/func/overlord.conf"),
        (
            "etc/certmaster/minion.conf",
            &m_root,
            "etc/certmaster/minion.conf",
        ),
    ] {
        std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(dest.join(sample), root.join(rel)).unwrap();
    }
    std::fs::create_dir_all(m_root.minion_conf().parent().unwrap()).unwrap();
    let sample = std::fs::read_to_string(repo().join("dist/config/minion.conf")).unwrap();
    std::fs::write(m_root.minion_conf(), sample).unwrap();
    let spawn = |exe: &Path, args: &[&str]| {
        let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        all.push("--foreground".as_ref());
        Daemon::spawn_exe(exe, &all).expect("starts")
    };
    let cm = spawn(
        &bin("sbin/certmaster"),
        &[
            "--root",
            cm_root.dir().to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--autosign",
        ],
    );
    let cm_addr = cm.addr.to_string();
    let _m1 = spawn(
        &bin("sbin/funcd"),
        &[
            "--root",
            m_root.dir().to_str().unwrap(),
            "--name",
            "m1",
            "--listen",
            "127.0.0.1:0",
            "--certmaster",
            &cm_addr,
        ],
    );
    assert!(wait_until(Duration::from_secs(30), || m_root
        .minion_cert("m1")
        .exists()));
    let ping = Command::new(bin("bin/func"))
        .arg("--root")
        .arg(cm_root.dir())
        .args(["m1", "ping"])
        .output()
        .unwrap();
    assert!(ping.status.success(), "{:?}", ping);
    assert!(String::from_utf8_lossy(&ping.stdout).contains("[ ok ... ] m1"));
    // An installed example module, put in place as the README says, answers.
    let modules = m_root.join("etc/func/modules.d");
    std::fs::create_dir_all(&modules).unwrap();
    let installed = Command::new("install")
        .args(["-m", "0755"])
        .arg(dest.join("usr/share/doc/funcd/examples/modules/example_sh"))
        .arg(&modules)
        .status()
        .unwrap();
    assert!(installed.success());
    let kernel = Command::new(bin("bin/func"))
        .arg("--root")
        .arg(cm_root.dir())
        .args(["m1", "call", "example_sh", "kernel"])
        .output()
        .unwrap();
    assert!(kernel.status.success(), "{kernel:?}");
    assert!(
        String::from_utf8_lossy(&kernel.stdout).contains("Linux"),
        "{kernel:?}"
    );
}

#[test]
fn a_daemonised_funcd_keeps_logging_to_a_private_file() {
    let pki = func_tests::fixture::Pki::new();
    let root = pki.minion_root("m1");
    let out = Command::new(func_tests::fixture::bin("funcd"))
        .arg("--root")
        .arg(root.dir())
        .args(["--name", "m1", "--listen", "127.0.0.1:0", "--daemon"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let pid_file = root.run_dir().join("funcd.pid");
    assert!(wait_until(Duration::from_secs(20), || pid_file.exists()));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let log = root.log_dir().join("funcd.log");
    let served = wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("enrolled; serving"))
    });
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
    assert!(served, "{:?}", std::fs::read_to_string(&log));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains('\x1b'), "no colour codes in a file");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&log).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert!(wait_until(Duration::from_secs(20), || !std::path::Path::new(
        &format!("/proc/{pid}")
    )
    .exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.contains(") Z "))));
}

/// `make package` (scripts/package.sh on the debug build): two .debs whose
/// contents and conffiles are right, that dpkg installs into an empty root
/// and removes again, leaving the administrator's configuration; and the
/// same two as RPMs (`rpm_packages_install_and_remove`), built in the same
/// run.
#[test]
fn package_builds_debs_and_rpms_that_install_and_remove() {
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        panic!("dpkg-deb is missing: `make deps` installs it");
    }
    let dir = tempfile::Builder::new()
        .prefix("func-package-")
        .tempdir()
        .unwrap();
    let out_dir = dir.path().join("debs");
    let out = Command::new("bash")
        .arg(repo().join("scripts/package.sh"))
        .env("OUT", &out_dir)
        .env("PROFILE", "debug")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let built: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let (debs, rpms): (Vec<String>, Vec<String>) = built.into_iter().partition(|p| p.ends_with(".deb"));
    assert_eq!(debs.len(), 2, "{debs:?}");
    assert_eq!(rpms.len(), 2, "{rpms:?}");
    rpm_packages_install_and_remove(&rpms, dir.path());
    let (minion, overlord) = (&debs[0], &debs[1]);
    assert!(
        minion.contains("/funcd_") && overlord.contains("/func_"),
        "{debs:?}"
    );

    let listing = |deb: &str| {
        let out = Command::new("dpkg-deb").args(["-c", deb]).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let minion_files = listing(minion);
    for f in [
        "./usr/sbin/funcd",
        "./usr/share/man/man8/funcd.8.gz",
        "./usr/lib/systemd/system/funcd.service",
        "./etc/func/minion.conf",
    ] {
        assert!(minion_files.contains(f), "{f} missing from {minion_files}");
    }
    assert!(
        !minion_files.contains("./usr/bin/func "),
        "the minion package carries no overlord"
    );
    let overlord_files = listing(overlord);
    for f in [
        "./usr/bin/func",
        "./usr/bin/func-transmit",
        "./usr/bin/func-inventory",
        "./usr/share/man/man1/func-inventory.1.gz",
        "./usr/bin/func-build-map",
        "./usr/share/man/man1/func-build-map.1.gz",
        "./usr/sbin/func-api",
        "./usr/lib/systemd/system/func-api.service",
        "./usr/share/man/man8/func-api.8.gz",
        "./usr/lib/python3/dist-packages/func/overlord/client.py",
        "./usr/sbin/certmaster",
        "./usr/bin/certmaster-ca",
        "./usr/share/man/man1/func-call.1.gz",
        "./etc/func/overlord.conf",
    ] {
        assert!(overlord_files.contains(f), "{f} missing from {overlord_files}");
    }
    let field = |deb: &str, name: &str| {
        let out = Command::new("dpkg-deb").args(["-f", deb, name]).output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    assert_eq!(field(minion, "Package"), "funcd");
    assert_eq!(field(overlord, "Package"), "func");
    let conffiles = Command::new("dpkg-deb")
        .args(["-I", minion, "conffiles"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&conffiles.stdout).contains("/etc/func/minion.conf"));

    // lintian (installed by `make deps`): no errors.
    let lintian = Command::new("lintian")
        .args(&debs)
        .output()
        .expect("lintian is missing: `make deps` installs it");
    let report = String::from_utf8_lossy(&lintian.stdout);
    assert!(
        !report.lines().any(|l| l.starts_with("E:") || l.starts_with("W:")),
        "lintian errors or warnings:\n{report}"
    );
    // Real metadata: no placeholders, the programs named, the README shipped.
    for deb in [minion, overlord] {
        let control = Command::new("dpkg-deb").args(["-f", deb]).output().unwrap();
        let control = String::from_utf8_lossy(&control.stdout).to_string();
        assert!(
            !control.contains("example.org") && !control.contains("Homepage"),
            "{control}"
        );
        let files = Command::new("dpkg-deb").args(["-c", deb]).output().unwrap();
        let files = String::from_utf8_lossy(&files.stdout).to_string();
        assert!(files.contains("README.md.gz"), "{deb}: no README");
        assert!(
            files.contains("docs/INSTALL.md.gz") && files.contains("docs/SECURITY.md.gz"),
            "{deb}: the pages the README links"
        );
    }
    assert!(field(overlord, "Description").contains("func-api"));
    assert!(field(overlord, "Description").contains("func-transmit"));
    assert!(field(overlord, "Description").contains("Python"));

    // Install both into an empty root, check the binary runs, remove.
    let root = dir.path().join("root");
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    let dpkg = |args: &[&str]| {
        let out = Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args([
                "--force-script-chrootless",
                "--force-depends",
                "--force-not-root",
                "--log=/dev/null",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "dpkg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    dpkg(&["-i", minion, overlord]);
    let version = Command::new(root.join("usr/sbin/funcd"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success() && String::from_utf8_lossy(&version.stdout).contains("funcd"));
    for d in ["usr/libexec/func/modules", "etc/func/modules.d"] {
        assert!(root.join(d).is_dir(), "the funcd package creates {d}");
    }
    assert!(root
        .join("usr/share/doc/funcd/examples/modules/example_py")
        .is_file());
    // Both daemons running from the installed tree (started by hand with
    // --daemon: no systemd here): removal stops them before their binaries go.
    let daemons = Daemons::start(&root);
    assert_eq!(daemons.running(), [true, true], "both daemons run");
    dpkg(&["-r", "funcd", "func"]);
    assert!(!root.join("usr/sbin/funcd").exists() && !root.join("usr/bin/func").exists());
    assert!(
        daemons.all_ended(),
        "dpkg -r stopped funcd and the certmaster: {:?}",
        daemons.running()
    );
    // Removal (not purge) keeps the configuration, as for every Debian package.
    assert!(root.join("etc/func/minion.conf").is_file());
    // Purge removes the configuration and keeps the CA and the keys.
    dpkg(&["-P", "funcd", "func"]);
    assert!(
        !root.join("etc/func/minion.conf").exists() && !root.join("etc/certmaster/certmaster.conf").exists()
    );
    assert!(
        root.join("etc/pki/certmaster/ca/certmaster.key").is_file(),
        "the CA key is kept"
    );
    assert!(
        root.join("etc/pki/certmaster/m1.pem").is_file(),
        "the minion key is kept"
    );
}

/// The RPMs: the files, configuration, requirements and scriptlets of the
/// .debs (`rpm -qp`), no rpmlint error or warning (with the choices of
/// dist/rpm/rpmlint.toml), and `rpm --root` installs both into a scratch
/// root, running their scriptlets there (a /bin/sh, /proc and /dev/null
/// are given to it), and removes them again, stopping the daemons started
/// from it by hand.
fn rpm_packages_install_and_remove(rpms: &[String], dir: &Path) {
    let (minion, overlord) = (&rpms[0], &rpms[1]);
    assert!(
        minion.contains("/funcd-") && overlord.contains("/func-"),
        "{rpms:?}"
    );
    let query = |rpm: &str, what: &[&str]| {
        let out = Command::new("rpm")
            .arg("-qp")
            .args(what)
            .arg(rpm)
            .output()
            .expect("rpm is missing: `make deps` installs it");
        assert!(
            out.status.success(),
            "rpm -qp {what:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(query(minion, &["--qf", "%{NAME}"]), "funcd");
    assert_eq!(query(overlord, &["--qf", "%{NAME}"]), "func");
    let minion_files = query(minion, &["-l"]);
    for f in [
        "/usr/sbin/funcd",
        "/usr/share/man/man8/funcd.8.gz",
        "/usr/lib/systemd/system/funcd.service",
        "/etc/func/minion.conf",
        "/usr/libexec/func/modules",
        "/usr/share/doc/funcd/README.md.gz",
        "/usr/share/doc/funcd/docs/MODULES.md.gz",
    ] {
        assert!(
            minion_files.lines().any(|l| l == f),
            "{f} missing from {minion_files}"
        );
    }
    assert!(!minion_files.lines().any(|l| l == "/usr/bin/func"));
    let overlord_files = query(overlord, &["-l"]);
    for f in [
        "/usr/bin/func",
        "/usr/bin/func-transmit",
        "/usr/bin/func-inventory",
        "/usr/bin/func-build-map",
        "/usr/sbin/func-api",
        "/usr/sbin/certmaster",
        "/usr/bin/certmaster-ca",
        "/usr/lib/systemd/system/certmaster.service",
        "/usr/lib/systemd/system/func-api.service",
        "/usr/share/man/man1/func-call.1.gz",
        "/usr/share/func/python/func/overlord/client.py",
        "/etc/func/overlord.conf",
    ] {
        assert!(
            overlord_files.lines().any(|l| l == f),
            "{f} missing from {overlord_files}"
        );
    }
    // Debian's files stay Debian's.
    for files in [&minion_files, &overlord_files] {
        assert!(!files.contains("/DEBIAN") && !files.contains("lintian") && !files.contains("dist-packages"));
    }
    let config = query(minion, &["-c"]);
    assert!(config.lines().any(|l| l == "/etc/func/minion.conf"), "{config}");
    assert!(query(overlord, &["-c"])
        .lines()
        .any(|l| l == "/etc/certmaster/certmaster.conf"));
    let requires = query(overlord, &["-R"]);
    assert!(
        requires.lines().any(|l| l == "git") && requires.lines().any(|l| l == "python3"),
        "{requires}"
    );
    let scripts = query(minion, &["--scripts"]);
    for part in [
        "postinstall scriptlet",
        "preuninstall scriptlet",
        "postuninstall scriptlet",
        "funcd.service",
    ] {
        assert!(scripts.contains(part), "{part} missing from {scripts}");
    }
    assert!(query(overlord, &["--scripts"]).contains("certmaster.service"));

    let lint = Command::new("rpmlint")
        .arg("-c")
        .arg(repo().join("dist/rpm/rpmlint.toml"))
        .args(rpms)
        .output()
        .expect("rpmlint is missing: `make deps` installs it");
    let report = String::from_utf8_lossy(&lint.stdout);
    assert!(
        !report.lines().any(|l| l.contains(": E: ") || l.contains(": W: ")),
        "rpmlint errors or warnings:\n{report}"
    );
    assert!(report.contains("0 errors, 0 warnings"), "{report}");

    // A scratch root with what RPM's scriptlets run on: a shell, rm, sleep,
    // their libraries, /dev/null and /proc.
    let root = dir.join("rpm-root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("dev")).unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    let mut libraries = String::new();
    for tool in ["sh", "rm", "sleep"] {
        let path = std::fs::canonicalize(Path::new("/bin").join(tool)).unwrap();
        std::fs::copy(&path, root.join("bin").join(tool)).unwrap();
        let ldd = Command::new("ldd").arg(&path).output().unwrap();
        libraries.push_str(&String::from_utf8_lossy(&ldd.stdout));
    }
    for library in libraries.split_whitespace().filter(|w| w.starts_with('/')) {
        let target = root.join(library.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(library, &target).unwrap();
    }
    let run = |program: &str, args: &[&str]| {
        let out = Command::new(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let root_str = root.to_str().unwrap();
    run(
        "mknod",
        &["-m", "666", &format!("{root_str}/dev/null"), "c", "1", "3"],
    );
    let _proc = ProcMount::mount(&root.join("proc"));
    let rpm = |args: &[&str]| {
        let out = Command::new("rpm")
            .arg("--root")
            .arg(&root)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "rpm {args:?}: {stderr}");
        // A scriptlet that failed is reported on stderr, not in the status.
        assert!(
            !stderr.contains("scriptlet failed") && !stderr.contains("not found"),
            "rpm {args:?}: {stderr}"
        );
    };
    rpm(&["--initdb"]);
    // --nodeps: the scratch root has no glibc, python3 or git package.
    rpm(&["-i", "--nodeps", minion, overlord]);
    let version = Command::new(root.join("usr/sbin/funcd"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success() && String::from_utf8_lossy(&version.stdout).contains("funcd"));
    assert!(root.join("etc/func/minion.conf").is_file());
    assert!(root
        .join("usr/share/func/python/func/overlord/client.py")
        .is_file());
    let mode = std::fs::metadata(root.join("etc/func/overlord.conf"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the overlord's configuration is 0600");
    let daemons = Daemons::start(&root);
    assert_eq!(daemons.running(), [true, true], "both daemons run");
    rpm(&["-e", "funcd", "func"]);
    assert!(
        daemons.all_ended(),
        "rpm -e stopped funcd and the certmaster: {:?}",
        daemons.running()
    );
    assert!(!root.join("usr/sbin/funcd").exists() && !root.join("usr/bin/func").exists());
    assert!(
        !root.join("var/run/funcd.pid").exists(),
        "%preun removed the pid file"
    );
    // The CA and the minion's key stay.
    assert!(root.join("etc/pki/certmaster/ca/certmaster.key").is_file());
    assert!(root.join("etc/pki/certmaster/m1.pem").is_file());
}

/// /proc mounted in a scratch root for its scriptlets; unmounted on drop.
struct ProcMount(std::path::PathBuf);

impl ProcMount {
    fn mount(at: &Path) -> Self {
        let out = Command::new("mount")
            .args(["-t", "proc", "proc"])
            .arg(at)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount -t proc (the RPM test runs as root, as make deps does): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self(at.to_path_buf())
    }
}

impl Drop for ProcMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// funcd and the certmaster started with --daemon from an installed root;
/// killed on drop if still running.
struct Daemons {
    pids: Vec<(u32, u64)>,
}

impl Daemons {
    fn start(root: &Path) -> Self {
        let mut pids = Vec::new();
        for (exe, args, pid_file) in [
            (
                "usr/sbin/certmaster",
                vec!["--listen", "127.0.0.1:0"],
                "var/run/certmaster.pid",
            ),
            (
                "usr/sbin/funcd",
                vec![
                    "--name",
                    "m1",
                    "--listen",
                    "127.0.0.1:0",
                    "--certmaster",
                    "127.0.0.1:9",
                ],
                "var/run/funcd.pid",
            ),
        ] {
            let out = Command::new(root.join(exe))
                .arg("--root")
                .arg(root)
                .args(&args)
                .arg("--daemon")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(out.success(), "{exe} --daemon starts");
            let file = root.join(pid_file);
            let mut pid = None;
            assert!(
                func_tests::fixture::wait_until(std::time::Duration::from_secs(10), || {
                    pid = std::fs::read_to_string(&file)
                        .ok()
                        .and_then(|t| t.trim().parse::<u32>().ok());
                    pid.is_some()
                }),
                "{exe} wrote {pid_file}"
            );
            let pid = pid.unwrap();
            pids.push((pid, common::process::start_time(pid).unwrap_or(0)));
        }
        Self { pids }
    }

    /// Whether each runs now.
    fn running(&self) -> Vec<bool> {
        self.pids
            .iter()
            .map(|(pid, start)| common::process::alive(*pid, *start))
            .collect()
    }

    /// Whether all have ended within 15 s (a stopped one may take a moment).
    fn all_ended(&self) -> bool {
        func_tests::fixture::wait_until(std::time::Duration::from_secs(15), || {
            self.running().iter().all(|r| !r)
        })
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for (pid, start) in &self.pids {
            if common::process::alive(*pid, *start) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

/// A clone is self-contained: no file refers to the workplace's shared
/// reference folder beside the checkout, which a user's clone lacks.
#[test]
fn no_file_in_the_repository_refers_outside_it() {
    let top = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let needle = ["..", "shared"].join("/");
    let mut offenders = Vec::new();
    let mut dirs = vec![top.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if matches!(name.to_str(), Some("target" | ".git" | ".demo")) {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    if text.contains(&needle) {
                        offenders.push(path.display().to_string());
                    }
                }
            }
        }
    }
    assert!(offenders.is_empty(), "files refer to {needle}: {offenders:?}");
    assert!(
        top.join("bench/peers/salt/bench.sh").exists(),
        "the Salt peer scripts are here"
    );
}
