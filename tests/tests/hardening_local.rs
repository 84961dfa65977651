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
