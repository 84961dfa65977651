//! Minions as separate hosts as far as the network is concerned: each in its
//! own network namespace with its own address, the certmaster and `func` in
//! another, joined by veth pairs (10.77.N.0/24; nothing outside the
//! namespaces sees them). Everything runs from the installed layout
//! (scripts/install.sh into a temp DESTDIR). Enrollment with fingerprints
//! checked, ping, an async job during which one minion's link is cut (it
//! becomes unreachable, the other finishes; back up, its result is
//! collected), and a batch. Where namespaces cannot be made (not root, no
//! `ip`), the test says so and skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use func_tests::fixture::{install_debug_build, wait_until, Daemon};

/// The namespaces of one run; deleting a namespace deletes the veth ends
/// in it, and `links` are deleted too in case setup stopped before moving them.
struct Namespaces {
    names: Vec<String>,
    links: Vec<String>,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.names {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        for link in &self.links {
            let _ = Command::new("ip").args(["link", "del", link]).output();
        }
    }
}

fn ip(args: &[&str]) {
    if let Err(e) = try_ip(args) {
        panic!("{e}");
    }
}

fn try_ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// `ip netns exec NS EXE ARGS` (ip execs the command: the pid is the program's).
fn in_ns(ns: &str, exe: &Path, args: &[&str]) -> Output {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(exe)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn minions_in_their_own_network_namespaces() {
    let tag = std::process::id() % 100_000;
    let cm_ns = format!("func-cm-{tag}");
    match Command::new("ip").args(["netns", "add", &cm_ns]).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!(
                "skipped: cannot create a network namespace here ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: `ip` cannot run here ({e})");
            return;
        }
    }
    let mut spaces = Namespaces {
        names: vec![cm_ns.clone()],
        links: Vec::new(),
    };
    let hosts = ["m1", "m2"];
    // The network itself; a machine that makes namespaces but not veth
    // pairs (no module, no CAP_NET_ADMIN in a container) skips, saying why.
    let mut network = || -> Result<(), String> {
        try_ip(&["-n", &cm_ns, "link", "set", "lo", "up"])?;
        for (i, name) in hosts.iter().enumerate() {
            let n = i + 1;
            let ns = format!("func-{name}-{tag}");
            try_ip(&["netns", "add", &ns])?;
            spaces.names.push(ns.clone());
            let (a, b) = (format!("fva{tag}{n}"), format!("fvb{tag}{n}"));
            try_ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
            spaces.links.push(a.clone());
            try_ip(&["link", "set", &a, "netns", &cm_ns])?;
            try_ip(&["link", "set", &b, "netns", &ns])?;
            try_ip(&["-n", &cm_ns, "addr", "add", &format!("10.77.{n}.1/24"), "dev", &a])?;
            try_ip(&["-n", &ns, "addr", "add", &format!("10.77.{n}.2/24"), "dev", &b])?;
            try_ip(&["-n", &cm_ns, "link", "set", &a, "up"])?;
            try_ip(&["-n", &ns, "link", "set", &b, "up"])?;
            try_ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    };
    if let Err(e) = network() {
        eprintln!("skipped: cannot build the namespaces' network here ({e})");
        return;
    }

    // The installed layout.
    let dir = tempfile::Builder::new()
        .prefix("func-multihost-")
        .tempdir()
        .unwrap();
    let dest = dir.path().join("dest");
    install_debug_build(&dest);
    let bin = |p: &str| -> PathBuf { dest.join("usr").join(p) };
    let cm_root = dir.path().join("cm");
    let cm_root_s = cm_root.to_str().unwrap().to_owned();
    let ip_exe = Path::new("ip");
    let spawn_in = |ns: &str, exe: PathBuf, args: &[&str]| {
        let mut all: Vec<&std::ffi::OsStr> =
            vec!["netns".as_ref(), "exec".as_ref(), ns.as_ref(), exe.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        Daemon::spawn_exe(ip_exe, &all).expect("starts")
    };
    let cm = spawn_in(
        &cm_ns,
        bin("sbin/certmaster"),
        &["--root", &cm_root_s, "--listen", "0.0.0.0:0", "--foreground"],
    );
    let cm_port = cm.addr.port();
    let mut minions = Vec::new();
    for (i, name) in hosts.iter().enumerate() {
        let n = i + 1;
        let root = dir.path().join(name);
        minions.push(spawn_in(
            &format!("func-{name}-{tag}"),
            bin("sbin/funcd"),
            &[
                "--root",
                root.to_str().unwrap(),
                "--name",
                name,
                "--listen",
                &format!("10.77.{n}.2:0"),
                "--certmaster",
                &format!("10.77.{n}.1:{cm_port}"),
                "--foreground",
            ],
        ));
    }

    // Enrollment: sign each request only with the fingerprint its minion logged.
    let ca = |args: &[&str]| {
        let out = Command::new(bin("bin/certmaster-ca"))
            .arg("--root")
            .arg(&cm_root)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "certmaster-ca {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    for (name, minion) in hosts.iter().zip(&minions) {
        // Not enrolled yet: bound, but not "listening on" (it does not serve).
        assert!(
            minion.banner.contains(" bound on ") && !minion.banner.contains("listening"),
            "{}",
            minion.banner
        );
        let mut logged = None;
        assert!(wait_until(Duration::from_secs(30), || {
            logged = minion
                .stderr_so_far()
                .split("fingerprint=")
                .nth(1)
                .map(|s| s.split_whitespace().next().unwrap().to_owned());
            logged.is_some()
                && ca(&["--list"])
                    .lines()
                    .any(|l| l.starts_with(&format!("{name} ")))
        }));
        let logged = logged.unwrap();
        let listed = ca(&["--list"]);
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == [*name, logged.as_str()]),
            "{listed}"
        );
        ca(&["--sign", name, "--fingerprint", &logged]);
    }
    let func = |args: &[&str]| {
        let mut all = vec!["--root", cm_root_s.as_str()];
        all.extend_from_slice(args);
        in_ns(&cm_ns, &bin("bin/func"), &all)
    };
    assert!(
        wait_until(Duration::from_secs(60), || func(&["*", "ping"]).status.success()),
        "{:?}",
        func(&["*", "ping"])
    );
    let ping = String::from_utf8(func(&["*", "ping"]).stdout).unwrap();
    assert!(
        ping.contains("[ ok ... ] m1") && ping.contains("[ ok ... ] m2"),
        "{ping}"
    );

    // An async job; m2's link goes down while it runs.
    let started = func(&["*", "call", "--async", "--nopoll", "test", "sleep", "3"]);
    assert!(started.status.success(), "{started:?}");
    let status = |job: &str| {
        let out = func(&["--json", "job_status", job]);
        let doc: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        (out.status.code(), doc)
    };
    assert!(wait_until(Duration::from_secs(30), || {
        let (_, doc) = status("last");
        doc["waiting"]
            .as_object()
            .is_some_and(|w| w.values().all(|why| why != "not dispatched yet"))
    }));
    let m2_ns = format!("func-m2-{tag}");
    ip(&["-n", &m2_ns, "link", "set", &format!("fvb{tag}2"), "down"]);
    // Polls `job_status last` until `done` holds; the last document seen.
    let status_until = |done: &dyn Fn(Option<i32>, &serde_json::Value) -> bool| {
        let mut last = serde_json::Value::Null;
        let reached = wait_until(Duration::from_secs(60), || {
            let (code, doc) = status("last");
            let ok = done(code, &doc);
            last = doc;
            ok
        });
        assert!(reached, "{last}");
        last
    };
    let cut = status_until(&|code, doc| code == Some(3) && doc["results"].get("m1").is_some());
    assert!(
        cut["results"].get("m2").is_none() || cut["results"]["m2"][0] == "REMOTE_ERROR",
        "{cut}"
    );
    assert_ne!(cut["state"], "finished", "{cut}");
    eprintln!("m2 cut off: {cut}");
    ip(&["-n", &m2_ns, "link", "set", &format!("fvb{tag}2"), "up"]);
    let healed = status_until(&|code, doc| code == Some(0) && doc["state"] == "finished");
    assert!(
        healed["results"].get("m2").is_some() && healed["results"]["m2"][0] != "REMOTE_ERROR",
        "{healed}"
    );

    eprintln!("m2 back: {healed}");
    // A batch, one host at a time.
    let batch = func(&["*", "call", "--batch", "1", "test", "add", "1", "2"]);
    assert!(batch.status.success(), "{batch:?}");
    let text = String::from_utf8_lossy(&batch.stdout);
    assert!(text.contains("m1") && text.contains("m2"), "{text}");
    drop(minions);
    drop(cm);
}
