//! Hardening I, an unprivileged local user on the minion host (the tests
//! drop to `nobody` with setpriv; CI runs as root): links planted for
//! copyfile's backups, and requests, results, logs and keys at rest.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::Value;
use func_tests::fixture::{wait_until, write_file, Fleet, Pki};

use crate::helper::{s, OneMinion};

const NOBODY: u32 = 65534;

/// Runs `sh -c SCRIPT sh ARGS...` as `nobody`.
fn as_nobody(script: &str, args: &[PathBuf]) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .args(args)
        .output()
        .expect("setpriv runs")
}

/// Makes `dir` and its parents up to `/` traversable, as every directory
/// above a real root is (the test's temp dirs are 0700).
fn open_up(dir: &Path) {
    for d in dir
        .ancestors()
        .filter(|d| d.starts_with(std::env::temp_dir()) && *d != std::env::temp_dir())
    {
        let mode = std::fs::metadata(d).unwrap().permissions().mode();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode | 0o755)).unwrap();
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn backup_links_planted_by_a_local_user_are_never_written_through() {
    let m = OneMinion::start("m1");
    let www = m.root.join("srv/www");
    std::fs::create_dir_all(&www).unwrap();
    open_up(&www);
    std::os::unix::fs::chown(&www, Some(NOBODY), Some(NOBODY)).unwrap();
    let outside = tempfile::tempdir().unwrap();
    open_up(outside.path());
    let dest = s("/srv/www/tool");
    let deploy = |content: &[u8]| {
        m.call(
            "copyfile.copyfile",
            vec![
                dest.clone(),
                Value::Base64(content.to_vec()),
                Value::Integer(0o4755),
            ],
        )
        .unwrap()
    };
    assert_eq!(deploy(b"v1"), Value::Integer(1));
    // The local user plants the names of this minute's (and the next
    // minute's) backup as links to a file of their choosing.
    let now = time::OffsetDateTime::now_utc();
    let names: Vec<PathBuf> = [now, now + time::Duration::minutes(1)]
        .iter()
        .map(|t| {
            www.join(format!(
                "tool.{:04}-{:02}-{:02}@{:02}:{:02}~",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute()
            ))
        })
        .collect();
    let mut args = vec![outside.path().join("evil")];
    args.extend(names);
    let planted = as_nobody(
        r#"t="$1"; shift; for n; do ln -s "$t" "$n" || exit 1; done"#,
        &args,
    );
    assert!(planted.status.success(), "{planted:?}");
    assert_eq!(deploy(b"v2"), Value::Integer(1));
    assert!(
        !outside.path().join("evil").exists(),
        "funcd wrote through the planted link"
    );
    assert_eq!(std::fs::read(www.join("tool")).unwrap(), b"v2");
    let backups: Vec<PathBuf> = std::fs::read_dir(&www)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with('~') && std::fs::symlink_metadata(p).unwrap().is_file())
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(std::fs::read(&backups[0]).unwrap(), b"v1");
    assert_eq!(mode(&backups[0]) & 0o7000, 0, "no set-id bits on a backup");
}

/// Every file below `dir` that `nobody` can open for reading.
fn readable_by_nobody(files: &[PathBuf]) -> String {
    let out = as_nobody(
        r#"for f; do if cat "$f" >/dev/null 2>&1; then echo "READ $f"; fi; done"#,
        files,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            out.extend(files_below(&p));
        } else if meta.is_file() {
            out.push(p);
        }
    }
    out
}

/// Checks the private places of a root: 0700 directories, 0600 files, and
/// none of them readable by a local user.
fn assert_private(root: &common::paths::Root, keys: &[PathBuf]) {
    let mut files = keys.to_vec();
    for dir in [root.status_dir(), root.status_dir().join("jobs"), root.log_dir()] {
        if dir.exists() {
            assert_eq!(mode(&dir), 0o700, "{}", dir.display());
            files.extend(files_below(&dir));
        }
    }
    for f in &files {
        assert_eq!(mode(f) & 0o077, 0, "{} is {:o}", f.display(), mode(f));
    }
    assert_eq!(readable_by_nobody(&files), "", "a local user read these");
}

#[test]
fn requests_results_logs_and_keys_are_private_on_the_minion() {
    // An older install left its log world-readable.
    let pki = Pki::new();
    let root = pki.minion_root("m1");
    write_file(&root.audit_log(), "old line with a token\n");
    std::fs::set_permissions(root.log_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(root.audit_log(), std::fs::Permissions::from_mode(0o644)).unwrap();
    open_up(root.dir());
    let m = OneMinion::start_prepared(pki, root, "m1");
    // A request in the spool (running), a result in the store, a token in the log.
    let running = m
        .call("async.command.run", vec![s("sleep 30 # password=hunter2")])
        .unwrap();
    let Value::String(done) = m
        .call("async.command.run", vec![s("echo result-secret")])
        .unwrap()
    else {
        panic!("id")
    };
    assert!(wait_until(Duration::from_secs(20), || {
        matches!(m.call("jobs.job_status", vec![s(&done)]), Ok(Value::Array(a)) if a[0] == Value::Integer(1))
    }));
    m.call("command.run", vec![s("true # token=abc")]).unwrap();
    let spool = files_below(&m.root.status_dir().join("jobs"));
    assert!(
        spool.iter().any(|p| p.extension().is_some_and(|e| e == "job")),
        "{spool:?} {running:?}"
    );
    let keys = vec![m.root.minion_key("m1")];
    assert_private(&m.root, &keys);
    assert_eq!(mode(&m.root.minion_pki_dir()), 0o700);
    // The commands funcd runs keep the umask funcd has (the user's business).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap()
        .trim()
        .to_string();
    let Value::Array(out) = m.call("command.run", vec![s("umask")]).unwrap() else {
        panic!("run")
    };
    assert_eq!(out[1], s(&format!("{umask}\n")));
}

#[test]
fn the_overlord_store_logs_and_keys_are_private() {
    let fleet = Fleet::start(&["m1"]);
    open_up(fleet.cm.root.dir());
    let out = fleet.func(&["m1", "call", "--async", "command", "run", "echo token=abc"]);
    assert_eq!(out.code, 0, "{out:?}");
    let root = &fleet.cm.root;
    assert!(root.status_dir().join("overlord.redb").exists());
    // The certmaster's store lock too: whoever can open it can hold it.
    let lock = root.join("var/lib/certmaster/certmaster/.lock");
    assert!(lock.exists());
    let keys = vec![
        root.ca_key(),
        root.overlord_key(),
        root.ca_dir().join("certmaster-server.pem"),
        lock,
    ];
    assert_private(root, &keys);
    assert_eq!(mode(&root.ca_dir()), 0o700);
}

/// Starts `bin_name ARGS` under umask 000 (through `sh -c 'umask 000; exec'`).
fn under_umask_000(bin_name: &str, args: &[&std::ffi::OsStr]) -> func_tests::fixture::Daemon {
    let mut all: Vec<&std::ffi::OsStr> = vec!["-c".as_ref(), "umask 000; exec \"$0\" \"$@\"".as_ref()];
    let exe = func_tests::fixture::bin(bin_name);
    all.push(exe.as_os_str());
    all.extend_from_slice(args);
    func_tests::fixture::Daemon::spawn_exe(Path::new("/bin/sh"), &all).expect("starts")
}

/// Every directory and file below `dir` that its group or others may write.
fn writable_by_others(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        if mode(&d) & 0o022 != 0 {
            found.push(format!("{} {:o}", d.display(), mode(&d)));
        }
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                dirs.push(e.path());
            } else if meta.permissions().mode() & 0o022 != 0
                && !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type())
            {
                found.push(format!(
                    "{} {:o}",
                    e.path().display(),
                    meta.permissions().mode() & 0o7777
                ));
            }
        }
    }
    found
}

/// The daemons and func started under umask 000 leave nothing another user
/// can write, so a local user can neither swap the minion's state directory
/// nor plant or swap a spool file (a forged request there ran as root).
#[test]
fn under_umask_000_a_local_user_cannot_swap_state_or_plant_spool_files() {
    let base = tempfile::Builder::new().prefix("func-umask-").tempdir().unwrap();
    open_up(base.path());
    let cm_root = common::paths::Root::new(base.path().join("cm"));
    let m1_root = common::paths::Root::new(base.path().join("m1"));
    let cm = under_umask_000(
        "certmaster",
        &[
            "--root".as_ref(),
            cm_root.dir().as_os_str(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--autosign".as_ref(),
            "--foreground".as_ref(),
        ],
    );
    let cm_addr = cm.addr.to_string();
    let m1 = under_umask_000(
        "funcd",
        &[
            "--root".as_ref(),
            m1_root.dir().as_os_str(),
            "--name".as_ref(),
            "m1".as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--certmaster".as_ref(),
            cm_addr.as_ref(),
            "--foreground".as_ref(),
        ],
    );
    assert!(
        wait_until(Duration::from_secs(30), || m1_root.minion_cert("m1").exists()),
        "m1 enrolls"
    );
    let func = |args: &[&str]| {
        Command::new("sh")
            .args(["-c", "umask 000; exec \"$0\" \"$@\""])
            .arg(func_tests::fixture::bin("func"))
            .arg("--root")
            .arg(cm_root.dir())
            .args(args)
            .output()
            .unwrap()
    };
    assert!(func(&["m1", "ping"]).status.success());
    assert!(
        func(&["m1", "call", "--async", "--nopoll", "test", "sleep", "30"])
            .status
            .success()
    );
    let spool = m1_root.status_dir().join("jobs");
    assert!(wait_until(Duration::from_secs(20), || files_below(&spool)
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "job"))));
    let wide = writable_by_others(base.path());
    assert!(
        wide.is_empty(),
        "writable by others after a start under umask 000: {wide:?}"
    );
    // The attacks, as a local user: each line printed is one that worked.
    let out = as_nobody(
        r#"d=$1
mv "$d/var/lib/func" "$d/var/lib/func.away" 2>/dev/null && echo "SWAPPED state"
mkdir "$d/var/lib/evil" 2>/dev/null && echo "MKDIR in var/lib"
mv "$d/var" "$d/var.away" 2>/dev/null && echo "SWAPPED var"
for f in "$d"/var/lib/func/jobs/*.job; do echo '{}' > "$f.x" 2>/dev/null && echo "PLANTED"; mv "$f.x" "$f" 2>/dev/null && echo "SWAPPED $f"; done
echo x > "$d/var/lib/func/jobs/1.5-minion.done" 2>/dev/null && echo "PLANTED done"
true"#,
        &[m1_root.dir().to_path_buf()],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "a local user changed the minion's state"
    );
    drop(m1);
    drop(cm);
    func_tests::fixture::kill_jobs(&m1_root);
}

/// State below a directory another user owns or can write is refused with
/// what to fix; a directory of ours that others can write is repaired.
#[test]
fn state_below_a_directory_others_control_is_repaired_or_refused() {
    let pki = Pki::new();
    let root = pki.minion_root("m1");
    let var_lib = root.dir().join("var/lib");
    std::fs::create_dir_all(&var_lib).unwrap();
    std::fs::set_permissions(&var_lib, std::fs::Permissions::from_mode(0o777)).unwrap();
    open_up(root.dir());
    let mut m = OneMinion::start_prepared(pki, root.clone(), "m1");
    m.call("test.ping", vec![]).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || mode(&var_lib) == 0o755),
        "ours, so repaired: {:o}",
        mode(&var_lib)
    );
    m.minion.stop();
    if !nix::unistd::getuid().is_root() {
        eprintln!("skipped the foreign-owner half: chown needs root");
        return;
    }
    std::os::unix::fs::chown(&var_lib, Some(NOBODY), Some(NOBODY)).unwrap();
    let mut again = func_tests::fixture::FuncdProcess::start(&root, "m1");
    let err = match &mut again {
        Ok(m) => m
            .daemon
            .exit_within(Duration::from_secs(10))
            .map(|(_, e)| e)
            .unwrap_or_default(),
        Err(e) => e.clone(),
    };
    assert!(
        err.contains("belongs to uid 65534"),
        "funcd refuses, naming the directory: {err}"
    );
}

/// Issue 47: funcd as an unprivileged user without --root said
/// "Permission denied" twice with no hint.
#[test]
fn funcd_as_a_user_without_a_root_says_what_to_do() {
    let funcd = func_tests::fixture::bin("funcd");
    let out = as_nobody(
        "\"$1\" --listen 127.0.0.1:0 --certmaster 127.0.0.1:9 --foreground",
        &[funcd],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("Permission denied").count(), 1, "said once: {err}");
    assert!(
        err.contains("run it as root") && err.contains("--root DIR"),
        "{err}"
    );
}
