//! `func` as a command-line tool people know: help, versions, suggestions
//! for typos, options wherever they stand, -v/-q, --log-level on the
//! daemons, man pages and completions generated from the clap definitions —
//! and every pinned form of Func's syntax still working.

use std::process::Command;

use func_tests::fixture::{bin, Fleet};

fn run(name: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin(name)).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_versions_and_suggestions() {
    let (code, out, _) = run("func", &["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("SPEC commands") && out.contains("job_status") && out.contains("list_minions"),
        "{out}"
    );
    for (args, wants) in [
        (&["help", "call"][..], "--batch"),
        (&["web1", "call", "--help"], "--failhard"),
        (&["help", "jobs"], "lookup"),
        (&["jobs", "list", "--help"], "--since"),
        (&["help", "copyfile"], "--remotepath"),
    ] {
        let (code, out, err) = run("func", args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains(wants), "{args:?}: {out}");
    }
    for name in ["func", "funcd", "certmaster", "certmaster-ca"] {
        let (code, out, _) = run(name, &["--version"]);
        assert_eq!(
            (code, out.trim()),
            (0, format!("{name} {}", env!("CARGO_PKG_VERSION")).as_str())
        );
    }
    for (args, wants) in [
        (&["jobs", "lst"][..], "list"),
        (&["web1", "pnig"], "ping"),
        (
            &["web1", "call", "--asynk", "test", "ping"],
            "did you mean --async?",
        ),
        (&["batch", "stauts", "x"], "status"),
    ] {
        let (code, _, err) = run("func", args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(wants), "{args:?}: {err}");
    }
    let (code, _, err) = run("funcd", &["--log-level", "loud"]);
    assert_eq!(code, 2);
    assert!(err.contains("possible values"), "{err}");
}

#[test]
fn pinned_forms_and_options_wherever_they_stand() {
    let fleet = Fleet::start(&["web1", "db1"]);
    let add = |args: &[&str]| {
        let out = fleet.func(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        out.stdout
    };
    // Options before or after MODULE METHOD; `--` ends options.
    let json: serde_json::Value =
        serde_json::from_str(&add(&["web1", "call", "test", "add", "1", "2", "--json"])).unwrap();
    assert_eq!(json["web1"], 3);
    let json: serde_json::Value =
        serde_json::from_str(&add(&["web1", "call", "--json", "test", "add", "1", "2"])).unwrap();
    assert_eq!(json["web1"], 3);
    assert!(add(&["web1", "call", "test", "echo", "--", "--json"]).contains("--json"));
    assert!(
        add(&["web1", "call", "process", "info", "-auxh"]).contains("web1:"),
        "dash words after METHOD are arguments"
    );
    // Func's `func "*" call test sleep 1 --async` and `--jobstatus`.
    let out = fleet.func(&["*", "call", "test", "sleep", "1", "--async", "--nopoll"]);
    let id = crate::helper::job_id(&out.stdout);
    let status = fleet.func(&["-t", "30", "job_status", &id, "--wait"]);
    assert_eq!(status.code, 0, "{status:?}");
    let alias = fleet.func(&["*", "call", "--jobstatus", &id]);
    assert!(alias.stdout.starts_with("JOB_STATUS: finished (1)"), "{alias:?}");
    // Global options anywhere before `--`.
    for args in [
        &["-v", "-t", "7", "web1", "ping"][..],
        &["web1", "-v", "-t", "7", "ping"],
        &["web1", "call", "-v", "test", "ping", "-t", "7"],
        &["web1", "call", "test", "ping", "-t", "7", "-v"],
    ] {
        let out = fleet.func(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        assert!(out.stderr.contains("timeout 7 s"), "{args:?}: {}", out.stderr);
    }
    // -q leaves informational lines out; errors stay.
    let loud = fleet.func(&["*", "call", "--batch", "1", "test", "ping"]);
    assert!(loud.stderr.contains("JOB_ID:"), "{loud:?}");
    let quiet = fleet.func(&["-q", "*", "call", "--batch", "1", "test", "ping"]);
    assert_eq!(quiet.code, 0);
    assert!(!quiet.stderr.contains("JOB_ID:"), "{quiet:?}");
}

#[test]
fn man_pages_render_and_completions_load() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run("func-gendocs", &[dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let man = dir.path().join("man");
    let mut pages = 0;
    for entry in std::fs::read_dir(&man).unwrap() {
        let page = entry.unwrap().path();
        let out = Command::new("groff")
            .args(["-man", "-Tutf8", "-P-cbou"])
            .arg(&page)
            .output()
            .expect("groff runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{}: {text}",
            page.display()
        );
        pages += 1;
    }
    assert!(pages >= 4, "{pages} man pages");
    for page in [
        "func.1",
        "func-call.1",
        "funcd.8",
        "certmaster-ca.8",
        "func-api.8",
        "func-transmit.1",
        "func-inventory.1",
        "func-build-map.1",
    ] {
        let out = Command::new("groff")
            .args(["-man", "-Tutf8", "-P-cbou"])
            .arg(man.join(page))
            .output()
            .expect("groff runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("EXAMPLES") && text.contains("func"),
            "{page}: {text}"
        );
    }
    for name in ["func", "funcd", "certmaster", "certmaster-ca"] {
        let script = dir.path().join(format!("completions/bash/{name}.bash"));
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("source '{}' && complete -p {name}", script.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (shell, file, check) in [
            (
                "zsh",
                format!("completions/zsh/_{name}"),
                "autoload -U compinit; compinit -u; source",
            ),
            ("fish", format!("completions/fish/{name}.fish"), "source"),
        ] {
            if Command::new(shell).arg("-c").arg("true").output().is_err() {
                eprintln!("skipped: {shell} is not installed here, its completion of {name} was not loaded");
                continue;
            }
            let out = Command::new(shell)
                .arg("-c")
                .arg(format!("{check} '{}'", dir.path().join(&file).display()))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{shell} {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
