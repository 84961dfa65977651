//! Hardening II, faults that heal without a restart: a corrupt job store
//! is moved aside and funcd keeps serving (jobs still in the spool are
//! taken in again); a full disk fails what it must, says so, and once
//! there is room again everything works with the same funcd.

use std::time::Duration;

use common::paths::Root;
use common::Value;
use func_tests::fixture::{wait_until, Pki};

use crate::helper::{remote_error, s, OneMinion};

const PATIENCE: Duration = Duration::from_secs(30);

fn status(m: &OneMinion, id: &str) -> (i32, Value) {
    match m
        .call("jobs.job_status", vec![s(id)])
        .expect("job_status answers")
    {
        Value::Array(a) if a.len() == 2 => match a[0] {
            Value::Integer(code) => (code, a[1].clone()),
            _ => panic!("{a:?}"),
        },
        other => panic!("{other:?}"),
    }
}

fn submit(m: &OneMinion, method: &str, args: Vec<Value>) -> Value {
    m.call(&format!("async.{method}"), args)
        .expect("async call answers")
}

fn restart(m: &mut OneMinion) {
    m.minion.start_again().expect("funcd starts again");
}

#[test]
fn a_corrupt_store_is_moved_aside_and_funcd_keeps_serving() {
    type Damage = fn(&mut Vec<u8>);
    let damages: [(&str, Damage); 3] = [
        ("garbage header", |b| {
            let n = b.len().min(512);
            b[..n].fill(0x5a)
        }),
        ("truncated", |b| b.truncate(b.len() / 3)),
        ("flipped bytes", |b| {
            b.iter_mut().step_by(61).for_each(|x| *x ^= 0xff)
        }),
    ];
    for (what, damage) in damages {
        let mut m = OneMinion::start("m1");
        let Value::String(done) = submit(&m, "test.add", vec![Value::Integer(2), Value::Integer(3)]) else {
            panic!("id")
        };
        assert!(wait_until(PATIENCE, || status(&m, &done).0 == 1));
        // A job still running while funcd is down and its store is damaged.
        let Value::String(running) = submit(&m, "test.sleep", vec![Value::Integer(2)]) else {
            panic!("id")
        };
        m.minion.stop();
        let store = m.root.status_dir().join("minion.redb");
        let mut bytes = std::fs::read(&store).unwrap();
        damage(&mut bytes);
        std::fs::write(&store, bytes).unwrap();
        m.minion
            .start_again()
            .unwrap_or_else(|e| panic!("{what}: funcd exits: {e}"));
        assert_eq!(m.call("test.ping", vec![]).unwrap(), Value::Integer(1), "{what}");
        let aside: Vec<_> = std::fs::read_dir(m.root.status_dir())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("minion.redb.corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1, "{what}: {aside:?}");
        assert!(
            wait_until(PATIENCE, || m.minion.daemon.stderr_so_far().contains("corrupt")),
            "{what}: said loudly"
        );
        // The job from the spool is taken in again and finishes.
        assert!(
            wait_until(PATIENCE, || status(&m, &running).0 == 1),
            "{what}: {:?}",
            status(&m, &running)
        );
        assert!(matches!(status(&m, &running).1, Value::Double(_)), "{what}");
        let Value::String(fresh) = submit(&m, "test.ping", vec![]) else {
            panic!("{what}: async works")
        };
        assert!(wait_until(PATIENCE, || status(&m, &fresh).0 == 1), "{what}");
        restart(&mut m);
        assert_eq!(
            status(&m, &fresh),
            (1, Value::Integer(1)),
            "{what}: the new store persists"
        );
    }
}

/// A small tmpfs mounted below a minion root, unmounted on drop.
struct SmallDisk {
    at: std::path::PathBuf,
}

impl SmallDisk {
    fn mount(at: &std::path::Path, size: &str) -> Self {
        std::fs::create_dir_all(at).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
            .arg(at)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "this test needs to mount a tmpfs (root in CI): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self { at: at.to_path_buf() }
    }

    /// Fills the disk with one file; returns its path.
    fn fill(&self) -> std::path::PathBuf {
        let filler = self.at.join("filler");
        let _ = std::process::Command::new("dd")
            .args(["if=/dev/zero", "bs=64k"])
            .arg(format!("of={}", filler.display()))
            .output();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.at)
            .status();
    }
}

#[test]
fn a_full_disk_fails_clearly_and_heals_without_a_restart() {
    let pki = Pki::new();
    let root: Root = pki.minion_root("m1");
    // Declared before the disk so it is dropped after it: the small disk
    // is unmounted first, then the minion's temp dir can go entirely.
    let m;
    let disk = SmallDisk::mount(&root.join("var"), "24m");
    m = OneMinion::start_prepared(pki, root, "m1");
    let Value::String(before) = submit(&m, "test.ping", vec![]) else {
        panic!("id")
    };
    assert!(wait_until(PATIENCE, || status(&m, &before).0 == 1));
    // A job that ends while the disk is full, with a result of 200 kB.
    let Value::String(victim) = submit(
        &m,
        "command.run",
        vec![s("sleep 2; head -c 200000 /dev/zero | tr '\\0' x")],
    ) else {
        panic!("id")
    };
    let filler = disk.fill();
    std::thread::sleep(Duration::from_millis(100));
    // While full: calls still answer (their audit lines no longer fit the
    // log's last page); a new job is refused with a clear error.
    for _ in 0..40 {
        assert_eq!(
            m.call("test.echo", vec![s(&"a".repeat(300))]).unwrap(),
            s(&"a".repeat(300))
        );
    }
    let refused = submit(&m, "test.ping", vec![]);
    let refused_text = format!("{refused:?}");
    assert!(
        remote_error(&refused).is_some() && refused_text.contains("No space left"),
        "{refused_text}"
    );
    // The victim ends while the disk is full.
    assert!(wait_until(PATIENCE, || {
        std::fs::read_to_string(format!("/proc/{}/stat", m.minion.pid())).is_ok()
            && !std::fs::read_dir(m.root.status_dir().join("jobs"))
                .map(|d| {
                    d.flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".pid") && pid_alive(&e.path()))
                })
                .unwrap_or(false)
    }));
    // Room again: the same funcd works, and the victim's result says why it was lost.
    std::fs::remove_file(&filler).unwrap();
    assert!(
        wait_until(PATIENCE, || status(&m, &victim).0 == 1),
        "{:?}",
        status(&m, &victim)
    );
    let (kind, message) = remote_error(&status(&m, &victim).1).expect("an error result");
    assert_eq!(kind, "func.minion.JobError", "{message}");
    assert!(message.contains("No space left"), "{message}");
    let Value::String(after) = submit(&m, "test.add", vec![Value::Integer(1), Value::Integer(1)]) else {
        panic!("async works again without a restart")
    };
    assert!(wait_until(PATIENCE, || status(&m, &after) == (1, Value::Integer(2))));
    // The audit log missed nothing silently: its failure was reported, and
    // it writes again.
    let log = std::fs::read_to_string(m.root.audit_log()).unwrap();
    assert_eq!(
        log.matches("test.echo called").count(),
        40,
        "kept lines written once there was room"
    );
    assert!(
        log.lines().last().unwrap_or("").contains("jobs.job_status"),
        "{log:?}"
    );
    let stderr = m.minion.daemon.stderr_so_far();
    assert!(stderr.contains("audit log write failed"), "{stderr}");
    assert!(
        stderr.matches("job sweep failed").count() <= 1,
        "logged once per outage: {stderr}"
    );
}

/// Whether the process a spool `.pid` file names still runs.
fn pid_alive(pid_file: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(pid_file) else {
        return false;
    };
    let mut words = text.split_whitespace();
    match (
        words.next().and_then(|w| w.parse().ok()),
        words.next().and_then(|w| w.parse().ok()),
    ) {
        (Some(pid), Some(start)) => common::process::alive(pid, start),
        _ => false,
    }
}
