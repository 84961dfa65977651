//! The `func` CLI against a real certmaster and real minions.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use common::paths::Root;
use func_tests::fixture::{write_file, Fleet};

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Lines of streamed output (hosts come in the order they answer), sorted.
fn sorted(mut lines: Vec<&str>) -> Vec<&str> {
    lines.sort();
    lines
}

#[test]
fn targeting_globs_lists_groups_and_exclude() {
    let fleet = Fleet::start(&["web1", "web2", "db1", "db2"]);
    assert_eq!(
        lines(&fleet.func(&["*", "list_minions"]).stdout),
        ["db1", "db2", "web1", "web2"]
    );
    assert_eq!(
        lines(&fleet.func(&["web*", "list_minions"]).stdout),
        ["web1", "web2"]
    );
    assert_eq!(
        lines(&fleet.func(&["web1;db*", "list_minions"]).stdout),
        ["db1", "db2", "web1"]
    );
    assert_eq!(
        lines(&fleet.func(&["-e", "web2;db1", "*", "list_minions"]).stdout),
        ["db2", "web1"]
    );
    write_file(
        &fleet.cm.root.groups_file(),
        "[web]\nhost = web1, web2, ghost\n[all]\nhost = *\n",
    );
    assert_eq!(
        lines(&fleet.func(&["@web", "list_minions"]).stdout),
        ["web1", "web2"]
    );
    assert_eq!(
        lines(&fleet.func(&["@all:db*", "list_minions"]).stdout),
        ["db1", "db2"]
    );
    let out = fleet.func(&["nothing*", "ping"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.trim(),
        "ERROR: can't find any minions matching \"nothing*\""
    );
    let out = fleet.func(&["@nogroup", "ping"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("unknown group"), "{}", out.stderr);

    // Blocks stream in the order hosts answer.
    let out = fleet.func(&["web*", "call", "test", "add", "1", "2"]);
    assert_eq!(out.code, 0);
    let mut blocks: Vec<&str> = out.stdout.split_inclusive("    3\n").collect();
    blocks.sort();
    assert_eq!(blocks, ["web1:\n    3\n", "web2:\n    3\n"], "{}", out.stdout);
    let out = fleet.func(&["*", "ping"]);
    assert_eq!(out.code, 0);
    assert_eq!(
        sorted(lines(&out.stdout)),
        [
            "[ ok ... ] db1",
            "[ ok ... ] db2",
            "[ ok ... ] web1",
            "[ ok ... ] web2"
        ]
    );
}

#[test]
fn forks_1_and_4_give_identical_results_and_json_parses_in_python() {
    let fleet = Fleet::start(&["m1", "m2", "m3", "m4", "m5"]);
    let one = fleet.func(&["--forks", "1", "--json", "*", "call", "test", "echo", "héllo <&>"]);
    let four = fleet.func(&["*", "call", "--forks", "4", "test", "echo", "héllo <&>", "--json"]);
    assert_eq!(one.code, 0);
    assert_eq!(one.stdout, four.stdout);
    let mut py = std::process::Command::new("python3")
        .args(["-c", "import json,sys; d=json.load(sys.stdin); assert sorted(d)==['m1','m2','m3','m4','m5'], d; assert set(d.values())=={'héllo <&>'}; print('ok')"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    py.stdin.take().unwrap().write_all(one.stdout.as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    let failing = fleet.func(&["--json", "m1", "call", "test", "explode"]);
    assert_eq!(failing.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&failing.stdout).unwrap();
    assert_eq!(doc["m1"][0], "REMOTE_ERROR");
}

#[test]
fn a_dead_minion_fails_alone_and_a_silent_one_times_out() {
    let mut fleet = Fleet::start(&["a1", "a2", "a3"]);
    fleet.minion("a2").stop();
    // A host that accepts TCP (the kernel completes the handshake) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ca = certs::Authority::load(
        &std::fs::read_to_string(fleet.cm.root.ca_cert()).unwrap(),
        &std::fs::read_to_string(fleet.cm.root.ca_key()).unwrap(),
    )
    .unwrap();
    certs::layout::enroll_locally(
        &ca,
        &fleet.cm.root,
        &Root::new(fleet.dir.path().join("silent")),
        "silent",
    )
    .unwrap();
    write_file(
        &fleet.cm.root.signed_certs_dir().join("silent.addr"),
        &silent.local_addr().unwrap().to_string(),
    );

    let out = fleet.func(&["-t", "2", "*", "call", "test", "ping"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("a1:\n    1\n") && out.stdout.contains("a3:\n    1\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("a2:\n    ERROR (socket.error)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("silent:\n    ERROR (socket.timeout)"),
        "{}",
        out.stdout
    );
    let out = fleet.func(&["-t", "2", "*", "ping"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("[ ok ... ] a1")
            && out.stdout.contains("[ FAILED ] a2")
            && out.stdout.contains("[ FAILED ] silent")
    );
    drop(silent);
}

#[test]
fn copyfile_sends_20_mib_keeping_mode_and_content() {
    let fleet = Fleet::start(&["c1", "c2"]);
    let local = fleet.dir.path().join("big.bin");
    let mut data = Vec::with_capacity(20 << 20);
    let mut x: u64 = 0x9E3779B97F4A7C15;
    while data.len() < 20 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(&local, &data).unwrap();
    std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = fleet.func(&[
        "*",
        "copyfile",
        "-f",
        local.to_str().unwrap(),
        "--remotepath",
        "/srv/data/big.bin",
    ]);
    assert_eq!(out.code, 0, "{} {}", out.stdout, out.stderr);
    for m in &fleet.minions {
        let copied = m.root.join("srv/data/big.bin");
        assert!(std::fs::read(&copied).unwrap() == data, "content of {}", m.name);
        assert_eq!(
            std::fs::metadata(&copied).unwrap().permissions().mode() & 0o7777,
            0o640
        );
    }
    let out = fleet.func(&["c1", "copyfile", "-f", "/no/such/file", "--remotepath", "/x"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("/no/such/file"));
}

#[test]
fn group_command_edits_the_groups_file() {
    let fleet = Fleet::start(&["g1", "g2"]);
    assert_eq!(fleet.func(&["*", "group", "--ag", "web"]).code, 0);
    assert_eq!(fleet.func(&["*", "group", "--ah", "@web:g1;@web:g2"]).code, 0);
    assert_eq!(lines(&fleet.func(&["*", "group", "--la"]).stdout), ["web"]);
    assert_eq!(
        lines(&fleet.func(&["*", "group", "--lh", "@web"]).stdout),
        ["g1", "g2"]
    );
    assert_eq!(fleet.func(&["*", "group", "--rh", "@web:g2"]).code, 0);
    assert_eq!(lines(&fleet.func(&["@web", "list_minions"]).stdout), ["g1"]);
    assert_eq!(fleet.func(&["*", "group", "--rh", "@web:nobody"]).code, 1);
    assert_eq!(fleet.func(&["*", "group", "--rg", "web"]).code, 0);
    assert!(fleet.func(&["*", "group", "--la"]).stdout.is_empty());
    assert_eq!(fleet.func(&["*", "group"]).code, 2);
}

#[test]
fn other_commands_and_usage_errors() {
    let fleet = Fleet::start(&["o1"]);
    let out = fleet.func(&["o1", "show", "hardware", "numCpus", "os"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("numCpus:") && !out.stdout.contains("cpuModel"),
        "{}",
        out.stdout
    );
    let out = fleet.func(&["o1", "grep", "cpu"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = fleet.func(&["o1", "call", "command", "run", "--", "echo -n hi"]);
    assert!(out.stdout.contains("hi"), "{}", out.stdout);
    for bad in [
        &["o1", "frobnicate"][..],
        &["o1", "call", "test"],
        &["o1", "call", "--batch", "0", "test", "ping"],
        &["--forks", "0", "o1", "ping"],
        &["o1"],
    ] {
        let out = fleet.func(bad);
        assert_eq!(out.code, 2, "{bad:?}: {}", out.stderr);
        assert!(!out.stderr.is_empty());
    }
}
