//! Drop-in modules in any language (docs/MODULES.md): the shipped examples
//! called like built-ins (sync, async, batch, base methods, ACLs, audit),
//! every XML-RPC type through a module and back, each way a module can
//! misbehave ending as a REMOTE_ERROR that says which, hot add, change and
//! removal, unsafe files refused, a built-in never shadowed, and a module
//! deployed to a fleet with `func copyfile` and called without a restart.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::paths::Root;
use common::Value;
use func_tests::fixture::{wait_until, write_file, Fleet, Pki};
use serde_json::Value as J;

use crate::helper::{func_json, job_id, processes, remote_error, s, OneMinion};

/// A shipped example module (dist/modules).
fn example(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/modules")).join(name)
}

fn modules_dir(root: &Root) -> PathBuf {
    root.join("etc/func/modules.d")
}

/// Installs `src` as module `name` of `root`, mode 0755 (as `make install` would).
fn install(root: &Root, src: &Path, name: &str) {
    let dir = modules_dir(root);
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join(format!(".{name}.new"));
    std::fs::copy(src, &tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// Puts `text` in `dir` as executable `name` (mode 0755), written under a
/// hidden name and renamed, so funcd never sees it half-written.
fn put(dir: &Path, name: &str, text: &str) {
    let src = dir.join(format!(".{name}.src"));
    write_file(&src, text);
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&src, dir.join(name)).unwrap();
}

/// Writes a shell module `name` with one method `run` whose body is `body`.
fn sh_module(root: &Root, name: &str, body: &str) {
    let text = format!(
        "#!/bin/sh\ncase \"$1\" in\ndescribe) echo '{{\"version\": \"1\", \"methods\": {{\"run\": {{}}}}}}' ;;\n\
         call) {body} ;;\nesac\n"
    );
    put(&modules_dir(root), name, &text);
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        other => panic!("not a list: {other:?}"),
    }
}

fn status_of(m: &OneMinion) -> BTreeMap<String, Value> {
    match m.call("system.module_status", vec![]).unwrap() {
        Value::Struct(s) => s.into_iter().collect(),
        other => panic!("{other:?}"),
    }
}

fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    match v {
        Value::Struct(s) => s.get(key).unwrap_or_else(|| panic!("no {key} in {v:?}")),
        other => panic!("not a struct: {other:?}"),
    }
}

#[test]
fn the_examples_answer_like_built_ins_and_every_type_round_trips() {
    let m = OneMinion::start("d1");
    // Added after funcd started: no restart.
    install(&m.root, &example("example_py"), "example_py");
    install(&m.root, &example("example_sh"), "example_sh");

    assert_eq!(
        m.call("example_py.hello", vec![s("admin")]).unwrap(),
        s("hello, admin (from overlord)")
    );
    let kernel = m.call("example_sh.kernel", vec![]).unwrap();
    assert!(
        matches!(&kernel, Value::String(k) if k.starts_with("Linux")),
        "{kernel:?}"
    );
    assert!(matches!(
        m.call("example_sh.uptime", vec![]).unwrap(),
        Value::Double(_)
    ));

    let modules = strings(&m.call("system.list_modules", vec![]).unwrap());
    assert!(modules.contains(&"example_py".into()) && modules.contains(&"example_sh".into()));
    assert!(modules.contains(&"test".into()), "built-ins still listed");
    let methods = strings(&m.call("system.listMethods", vec![]).unwrap());
    for name in [
        "example_py.hello",
        "example_py.module_version",
        "example_sh.load",
        "test.ping",
    ] {
        assert!(methods.contains(&name.into()), "{name} in {methods:?}");
    }
    let mut sorted = methods.clone();
    sorted.sort();
    assert_eq!(methods, sorted);
    assert_eq!(m.call("example_py.module_version", vec![]).unwrap(), s("1.0"));
    assert_eq!(m.call("example_py.module_api_version", vec![]).unwrap(), s("1"));
    assert_eq!(
        m.call("example_py.module_description", vec![]).unwrap(),
        s("An example drop-in module in Python.")
    );
    let own = strings(&m.call("example_py.list_methods", vec![]).unwrap());
    // Listed sorted (JSON objects have no order), then the five base methods.
    assert_eq!(&own[..5], ["disk_usage", "echo", "encode", "fail", "hello"]);
    assert!(own.contains(&"get_method_args".into()));
    let args = m.call("example_py.get_method_args", vec![]).unwrap();
    let name_arg = field(field(field(&args, "hello"), "args"), "name");
    assert_eq!(field(name_arg, "type"), &s("string"));
    assert_eq!(field(name_arg, "optional"), &Value::Boolean(true));
    assert_eq!(field(name_arg, "order"), &Value::Integer(0));
    let inventory = m.call("system.inventory", vec![]).unwrap();
    assert!(strings(field(&inventory, "example_sh")).contains(&"kernel".into()));

    // Every XML-RPC type, through JSON and a Python process, and back.
    let mut st = BTreeMap::new();
    st.insert(
        "nested".to_string(),
        Value::Array(vec![Value::Nil, Value::Struct(BTreeMap::new())]),
    );
    let every = vec![
        Value::Integer(-2_147_483_648),
        Value::Integer(2_147_483_647),
        Value::Long(1 << 40),
        Value::Long(-(1 << 62)),
        Value::Double(0.1),
        Value::Double(2.0),
        Value::Double(-1.5e300),
        Value::Boolean(true),
        Value::Boolean(false),
        s("tab\t<&>\"' unicode é✓ 漢字 \\ \n"),
        s(""),
        Value::Nil,
        Value::Base64((0..=255u8).collect()),
        Value::Base64(vec![]),
        Value::DateTime("19740105T11:59:00".parse().unwrap()),
        Value::Array(vec![]),
        Value::Array(vec![Value::Integer(1), s("two"), Value::Array(vec![Value::Nil])]),
        Value::Struct(st),
        Value::Struct(BTreeMap::new()),
    ];
    for v in &every {
        let back = m.call("example_py.echo", vec![v.clone()]).unwrap();
        assert_eq!(back, Value::Array(vec![v.clone()]), "{v:?}");
    }
    let all = m.call("example_py.echo", every.clone()).unwrap();
    assert_eq!(all, Value::Array(every));
    assert_eq!(
        m.call("example_py.encode", vec![s("hi")]).unwrap(),
        Value::Base64(b"hi".to_vec())
    );

    // A module's own error is Func's REMOTE_ERROR list, traceback as detail.
    let err = m.call("example_py.fail", vec![s("disk on fire")]).unwrap();
    assert_eq!(
        remote_error(&err),
        Some(("ValueError".into(), "disk on fire".into()))
    );
    let unknown = m.call("example_py.nope", vec![]).unwrap();
    assert_eq!(
        remote_error(&unknown).unwrap().0,
        "func.minion.codes.InvalidMethodException"
    );
    let status = status_of(&m);
    let py = &status["/etc/func/modules.d/example_py"];
    assert_eq!(field(py, "state"), &s("loaded"));
    assert_eq!(field(py, "module"), &s("example_py"));
    // The audit log records drop-in calls like any other.
    let audit = std::fs::read_to_string(m.root.audit_log()).unwrap();
    assert!(audit.contains("example_py.fail"), "{audit}");
}

#[test]
fn acls_apply_per_method_and_the_caller_is_passed_on() {
    let m = OneMinion::start_with("d2", "", "op-* = example_py.hello, example_py.list_methods\n");
    install(&m.root, &example("example_py"), "example_py");
    let op = m.other_caller("op");
    assert_eq!(
        m.call_as(&op, "example_py.hello", vec![]).unwrap(),
        s("hello, world (from op)"),
        "the caller's <cn>-<hash> reaches the module"
    );
    let denied = m
        .call_as(&op, "example_py.echo", vec![s("x")])
        .unwrap_err()
        .to_string();
    assert!(denied.contains("AccessToMethodDenied"), "{denied}");
    let denied = m
        .call_as(&op, "async.example_py.echo", vec![])
        .unwrap_err()
        .to_string();
    assert!(denied.contains("AccessToMethodDenied"), "{denied}");
    assert!(m.call_as(&op, "example_py.list_methods", vec![]).is_ok());
}

#[test]
fn every_misbehaviour_is_a_remote_error_that_says_which_and_funcd_carries_on() {
    let pki = Pki::new();
    let root = pki.minion_root("d3");
    write_file(
        &root.minion_conf(),
        "[modules]\ntimeout = 20\ntimeout.hang = 1.5\nmax_output = 100000\nmax_stderr = 50000\nmax_values = 1000\n\
         describe_timeout = 1\n",
    );
    let m = OneMinion::start_prepared(pki, root, "d3");
    let pidfile = m.root.join("tmp/hang-child");
    std::fs::create_dir_all(pidfile.parent().unwrap()).unwrap();
    sh_module(
        &m.root,
        "hang",
        &format!("sleep 300 & echo $! > {}; wait", pidfile.display()),
    );
    sh_module(&m.root, "crash", "kill -SEGV $$");
    sh_module(&m.root, "garbage", "echo 'this is not json'");
    sh_module(&m.root, "noresult", "echo '{\"answer\": 42}'");
    sh_module(&m.root, "badvalue", "echo '{\"result\": 18446744073709551615}'");
    sh_module(&m.root, "big", "head -c 200000 /dev/zero | tr '\\\\0' x; echo");
    sh_module(&m.root, "exits", "echo 'boom: the widget is gone' >&2; exit 3");
    sh_module(&m.root, "flood", "yes 'a line of noise' >&2");
    sh_module(&m.root, "ok", "cat >/dev/null; echo '{\"result\": \"fine\"}'");
    sh_module(
        &m.root,
        "many",
        "printf '{\"result\": ['; seq -s, 1 2000 | tr -d '\\n'; echo ']}'",
    );
    sh_module(
        &m.root,
        "deep",
        "printf '{\"result\": '; for i in $(seq 70); do printf '['; done; printf 1; \
         for i in $(seq 70); do printf ']'; done; echo '}'",
    );
    let cases = [
        (
            "hang",
            "func.minion.ModuleTimeout",
            "did not finish run within 1.5 s",
        ),
        (
            "crash",
            "func.minion.ModuleCrashed",
            "killed by signal 11, SIGSEGV",
        ),
        (
            "garbage",
            "func.minion.ModuleOutputInvalid",
            "output that is not JSON (",
        ),
        (
            "many",
            "func.minion.ModuleOutputTooLarge",
            "more than 1000 values",
        ),
        (
            "deep",
            "func.minion.ModuleOutputInvalid",
            "nests deeper than 64 levels",
        ),
        (
            "noresult",
            "func.minion.ModuleOutputInvalid",
            "neither \"result\" nor \"error\"",
        ),
        (
            "badvalue",
            "func.minion.ModuleOutputInvalid",
            "XML-RPC cannot carry",
        ),
        (
            "big",
            "func.minion.ModuleOutputTooLarge",
            "printed more than 100000 bytes",
        ),
        ("exits", "func.minion.ModuleExitStatus", "exited with status 3"),
        (
            "flood",
            "func.minion.ModuleStderrFlood",
            "more than 50000 bytes to stderr",
        ),
    ];
    for (module, kind, says) in cases {
        let v = m.call(&format!("{module}.run"), vec![]).unwrap();
        let (t, msg) = remote_error(&v).unwrap_or_else(|| panic!("{module}: {v:?}"));
        assert_eq!(t, kind, "{module}: {msg}");
        assert!(msg.contains(says), "{module}: {msg}");
        assert!(
            msg.contains(&format!("module {module} (/etc/func/modules.d/{module})")),
            "{msg}"
        );
    }
    let v = m.call("exits.run", vec![]).unwrap();
    let Value::Array(parts) = &v else { panic!() };
    assert_eq!(
        parts[3],
        s("boom: the widget is gone"),
        "stderr's end is the detail"
    );
    // The hung module's child went with it (its process group was killed).
    let child: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !alive(child)),
        "the child {child} of the hung module is gone"
    );
    assert_eq!(m.call("ok.run", vec![]).unwrap(), s("fine"));
    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));

    // A describe that hangs, reached from an async listing (a built-in
    // method run as a job): the job's leftovers are killed with it.
    put(
        &modules_dir(&m.root),
        "slowdesc",
        "#!/bin/sh\nsleep 289 & sleep 289\n",
    );
    let Value::String(id) = m.call("async.system.list_modules", vec![]).unwrap() else {
        panic!()
    };
    let mut status = Value::Nil;
    assert!(wait_until(Duration::from_secs(30), || {
        status = m.call("jobs.job_status", vec![s(&id)]).unwrap();
        matches!(&status, Value::Array(a) if a[0] == Value::Integer(1))
    }));
    let Value::Array(st) = &status else { panic!() };
    assert!(strings(&st[1]).contains(&"ok".to_string()), "{status:?}");
    assert!(
        wait_until(Duration::from_secs(10), || processes(&["sleep", "289"]) == 0),
        "the hung describe's children went with the job"
    );
    let detail = field(&status_of(&m)["/etc/func/modules.d/slowdesc"], "detail").clone();
    assert!(
        matches!(&detail, Value::String(d) if d.contains("did not finish within")),
        "{detail:?}"
    );
}

#[test]
fn hot_add_change_and_removal_without_a_restart() {
    let m = OneMinion::start("d4");
    let pid = m.minion.pid();
    let unknown = |v: Value| remote_error(&v).map(|(t, _)| t);
    assert_eq!(
        unknown(m.call("hot.run", vec![]).unwrap()).as_deref(),
        Some("func.minion.codes.InvalidMethodException")
    );
    sh_module(&m.root, "hot", "echo '{\"result\": 1}'");
    assert_eq!(m.call("hot.run", vec![]).unwrap(), Value::Integer(1));
    // Changed in place (same inode): seen at the next call.
    let path = modules_dir(&m.root).join("hot");
    let text = std::fs::read_to_string(&path).unwrap().replace("1}", "22}");
    std::fs::write(&path, text).unwrap();
    assert_eq!(m.call("hot.run", vec![]).unwrap(), Value::Integer(22));
    // A new method appears with a new description.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("{\"run\": {}}", "{\"run\": {}, \"walk\": {}}");
    std::fs::write(&path, text).unwrap();
    assert!(strings(&m.call("hot.list_methods", vec![]).unwrap()).contains(&"walk".into()));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        unknown(m.call("hot.run", vec![]).unwrap()).as_deref(),
        Some("func.minion.codes.InvalidMethodException")
    );
    assert!(!strings(&m.call("system.list_modules", vec![]).unwrap()).contains(&"hot".into()));
    assert_eq!(m.minion.pid(), pid, "the same funcd throughout");
}

#[test]
fn unsafe_broken_and_clashing_files_are_refused_reported_and_harm_nothing() {
    let m = OneMinion::start("d5");
    // A packaged module, and a local one of the same name that wins.
    let packaged = m.root.join("usr/libexec/func/modules");
    std::fs::create_dir_all(&packaged).unwrap();
    for (dir, answer) in [(&packaged, "packaged"), (&modules_dir(&m.root), "local")] {
        for name in ["dup", answer] {
            put(
                dir,
                name,
                &format!(
                    "#!/bin/sh\ncase \"$1\" in\ndescribe) echo '{{\"methods\": {{\"run\": {{}}}}}}' ;;\n\
                     call) echo '{{\"result\": \"{answer}\"}}' ;;\nesac\n"
                ),
            );
        }
    }
    assert_eq!(m.call("dup.run", vec![]).unwrap(), s("local"));
    assert_eq!(m.call("packaged.run", vec![]).unwrap(), s("packaged"));
    let status = status_of(&m);
    let dup = &status["/usr/libexec/func/modules/dup"];
    assert_eq!(field(dup, "state"), &s("overridden"), "{dup:?}");
    assert_eq!(
        field(dup, "detail"),
        &s("/etc/func/modules.d/dup is the one called")
    );
    install(&m.root, &example("example_sh"), "example_sh");
    sh_module(&m.root, "loose", "echo '{\"result\": 1}'");
    std::fs::set_permissions(
        modules_dir(&m.root).join("loose"),
        std::fs::Permissions::from_mode(0o775),
    )
    .unwrap();
    sh_module(&m.root, "nodesc", "true");
    std::fs::write(modules_dir(&m.root).join("nodesc"), "#!/bin/sh\necho nonsense\n").unwrap();
    // A module named like a built-in: the built-in answers.
    sh_module(&m.root, "test", "echo '{\"result\": \"impostor\"}'");
    let text = std::fs::read_to_string(modules_dir(&m.root).join("test"))
        .unwrap()
        .replace("\"run\"", "\"ping\"");
    std::fs::write(modules_dir(&m.root).join("test"), text).unwrap();
    std::fs::write(modules_dir(&m.root).join("README.txt"), "notes\n").unwrap();
    let linked = modules_dir(&m.root).join("linked");
    std::os::unix::fs::symlink(modules_dir(&m.root).join("example_sh"), &linked).unwrap();
    let others = nix::unistd::geteuid().is_root();
    if others {
        sh_module(&m.root, "foreign", "echo '{\"result\": 1}'");
        std::os::unix::fs::chown(modules_dir(&m.root).join("foreign"), Some(65534), None).unwrap();
    }

    assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1));
    for refused in ["loose.run", "nodesc.run", "linked.kernel", "foreign.run"] {
        let v = m.call(refused, vec![]).unwrap();
        assert_eq!(
            remote_error(&v).map(|(t, _)| t).as_deref(),
            Some("func.minion.codes.InvalidMethodException"),
            "{refused}: {v:?}"
        );
    }
    // The caller learns why, not only that the method is missing.
    let (_, why) = remote_error(&m.call("loose.run", vec![]).unwrap()).unwrap();
    assert!(
        why.contains("/etc/func/modules.d/loose is refused: writable by group or others"),
        "{why}"
    );
    let (_, why) = remote_error(&m.call("nodesc.run", vec![]).unwrap()).unwrap();
    assert!(
        why.contains("/etc/func/modules.d/nodesc is broken: describe did not print JSON"),
        "{why}"
    );
    assert!(matches!(
        m.call("example_sh.kernel", vec![]).unwrap(),
        Value::String(_)
    ));
    let status = status_of(&m);
    let state = |file: &str| {
        let v = &status[&format!("/etc/func/modules.d/{file}")];
        match (field(v, "state"), field(v, "detail")) {
            (Value::String(st), Value::String(d)) => (st.clone(), d.clone()),
            other => panic!("{other:?}"),
        }
    };
    let (st, why) = state("loose");
    assert_eq!(st, "refused");
    assert!(why.contains("writable by group or others (mode 0775)"), "{why}");
    let (st, why) = state("nodesc");
    assert_eq!(st, "broken");
    assert!(why.contains("did not print JSON"), "{why}");
    let (st, why) = state("test");
    assert_eq!(st, "shadowed");
    assert!(why.contains("built-in module test"), "{why}");
    assert_eq!(state("README.txt").0, "refused");
    assert!(state("linked").1.contains("symbolic link"));
    assert_eq!(state("example_sh").0, "loaded");
    if others {
        assert!(
            state("foreign").1.contains("owned by uid 65534"),
            "{:?}",
            state("foreign")
        );
    } else {
        eprintln!("not root: the file owned by another user is not tried");
    }
    assert_eq!(
        m.call("system.reload_modules", vec![]).unwrap(),
        m.call("system.module_status", vec![]).unwrap()
    );
    let modules = strings(&m.call("system.list_modules", vec![]).unwrap());
    assert_eq!(modules.iter().filter(|n| *n == "test").count(), 1);
    assert!(!modules.contains(&"loose".into()) && !modules.contains(&"nodesc".into()));
    // Each problem is logged once, not at every call.
    let log = m.minion.daemon.stderr_so_far();
    assert_eq!(
        log.matches("drop-in module refused: writable by group").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("built-in module of that name").count(), 1, "{log}");

    // A modules directory others may write is refused as a whole.
    std::fs::set_permissions(modules_dir(&m.root), std::fs::Permissions::from_mode(0o777)).unwrap();
    let v = m.call("example_sh.kernel", vec![]).unwrap();
    assert!(remote_error(&v).is_some(), "{v:?}");
    let status = status_of(&m);
    let dir = field(&status["/etc/func/modules.d"], "detail");
    assert!(
        matches!(dir, Value::String(d) if d.contains("writable by group or others")),
        "{dir:?}"
    );
    std::fs::set_permissions(modules_dir(&m.root), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(matches!(
        m.call("example_sh.kernel", vec![]).unwrap(),
        Value::String(_)
    ));
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        .unwrap_or(false)
}

#[test]
fn from_func_sync_async_batch_killed_and_deployed_with_copyfile() {
    let fleet = Fleet::start(&["f1", "f2", "f3"]);
    // Deployed the way an administrator would: copyfile, then a call, no restart.
    let out = fleet.func(&[
        "*",
        "copyfile",
        "-f",
        example("example_py").to_str().unwrap(),
        "--remotepath",
        "/etc/func/modules.d/example_py",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc = func_json(&fleet, &["*", "call", "example_py", "hello", "fleet"]);
    for host in ["f1", "f2", "f3"] {
        assert_eq!(doc[host], "hello, fleet (from overlord)", "{doc}");
    }
    let out = fleet.func(&[
        "-t",
        "60",
        "*",
        "call",
        "--async",
        "example_py",
        "echo",
        "--json-args",
        "[1, \"two\"]",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = job_id(&out.stderr);
    let doc = func_json(&fleet, &["job_status", &id]);
    assert_eq!(doc["status"], 1, "{doc}");
    for host in ["f1", "f2", "f3"] {
        assert_eq!(doc["results"][host], serde_json::json!([1, "two"]), "{doc}");
    }
    let doc = func_json(
        &fleet,
        &["*", "call", "--batch", "1", "example_py", "fail", "nope"],
    );
    let text = doc.to_string();
    assert!(text.contains("ValueError") && text.contains("nope"), "{text}");
    let out = fleet.func(&["*", "call", "--batch", "2", "example_py", "fail"]);
    assert_eq!(out.code, 1, "a module's error is a failure: {out:?}");

    // An async drop-in is killable, children included.
    for m in &fleet.minions {
        put(
            &modules_dir(&m.root),
            "slow",
            "#!/bin/sh\ncase \"$1\" in\ndescribe) echo '{\"methods\": {\"run\": {}}}' ;;\n\
             call) sleep 187 & sleep 187 ;;\nesac\n",
        );
    }
    let out = fleet.func(&["*", "call", "--async", "--nopoll", "slow", "run"]);
    let id = job_id(&out.stdout);
    assert!(
        wait_until(Duration::from_secs(30), || processes(&["sleep", "187"]) == 6),
        "two sleeps per host, got {}",
        processes(&["sleep", "187"])
    );
    let out = fleet.func(&["--json", "jobs", "kill", &id]);
    let doc: J = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(doc["results"]["f1"][1], "func.minion.JobDied", "{doc}");
    assert!(
        wait_until(Duration::from_secs(10), || processes(&["sleep", "187"]) == 0),
        "no sleep left behind"
    );
}

/// A module is told whether its caller is the overlord (`"overlord"` in
/// the call request), so a minion named `overlord-1`, whose key starts with
/// `overlord-`, is not mistaken for it.
#[test]
fn the_call_request_says_whether_the_caller_is_the_overlord() {
    let m = OneMinion::start_with("d4", "", "overlord-1-* = whoami.run\n");
    let request = |v: Value| -> J {
        match v {
            Value::String(text) => serde_json::from_str(&text).unwrap_or(J::Null),
            other => panic!("{other:?}"),
        }
    };
    // The module answers with the request it read, as a JSON string.
    sh_module(
        &m.root,
        "whoami",
        "printf '{\"result\": %s}' \"$(cat | sed 's/\\\\/\\\\\\\\/g; s/\"/\\\\\"/g; s/^/\"/; s/$/\"/')\"",
    );
    let me = request(m.call("whoami.run", vec![]).unwrap());
    assert_eq!(me["overlord"], true, "{me}");
    assert!(me["caller"].as_str().unwrap().starts_with("overlord-"), "{me}");
    let impostor = m.other_caller("overlord-1");
    let them = request(m.call_as(&impostor, "whoami.run", vec![]).unwrap());
    assert_eq!(
        them["overlord"], false,
        "a minion named overlord-1 is not the overlord: {them}"
    );
    assert!(
        them["caller"].as_str().unwrap().starts_with("overlord-1-"),
        "{them}"
    );
}
