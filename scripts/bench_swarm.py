#!/usr/bin/env python3
"""`make bench-scale`, the swarm part (DESIGN §17, issues 39 and 49):
simulated minions (func-swarm) enrolled through the real certmaster, and then

- 10,000 minions without relays: sync ping, async test.ping collapsed
  (job_status --wait), and the batch overhead at K=1,000 (test.sleep 1 in
  batches of 25%: the ideal is 4 waves of 1 s);
- a warm func at K=1,000: a func-api serving the top's root, `func '*'
  ping` handed to it on a root of those 1,000 (the others set aside), and
  `func 'kk*' ping` among them all (func + func-api CPU per host), the same
  batch with its waves handed to it, and an async job dispatched through it;
- SWARM_N (default 100,000) minions behind as many relays (func-api, each
  with its own root and segment, and its own func-swarm) as the open-files
  limit needs for every relay to keep a connection to each of its minions:
  func-build-map, `func --delegate '*' ping` cold and warm (wall, and the
  top overlord's CPU per host), async test.ping collapsed, each relay's
  memory per kept connection, and whether it stays flat over SWARM_MEM_RUNS
  (20) more runs after the third, and once settled.

Every row states its goal in its last column, and whether it was met.

Release binaries (BENCH_BIN, default the release build). Everything runs below a temp dir and is
ended (by pid) at exit. Prints a Markdown report and writes it to
bench/results/<stamp>-swarm.md (and LATEST-swarm.md).

Environment: SWARM_N (100000), RELAYS (default: what the open-files limit
needs), RUNS (3), SWARM_DIRECT (10000), SWARM_BATCH_K (1000),
SWARM_WARM_RUNS (10: runs per sample of a warm func's CPU),
SWARM_MEM_RUNS (20), SWARM_SETTLE_RUNS (40: runs before the settled
window of SWARM_MEM_RUNS more), SWARM_PARTS (default "direct warm relays async": the
parts to run).
"""

import json

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_DIR = os.path.dirname(HERE)
BIN = os.path.join(TOP_DIR, os.environ.get("BENCH_BIN") or os.path.join("target", "release"))
N = int(os.environ.get("SWARM_N", "100000"))
NRELAYS = int(os.environ.get("RELAYS", "0"))
MEM_RUNS = int(os.environ.get("SWARM_MEM_RUNS", "20"))
SETTLE_RUNS = int(os.environ.get("SWARM_SETTLE_RUNS", "40"))
PARTS = os.environ.get("SWARM_PARTS", "direct warm relays async").split()
# A relay's own descriptors: its listener and clients (max_connections, set
# to this in its overlord.conf) and func-api's 4,096 of headroom.
RELAY_MAX_CONNECTIONS = 64
RELAY_HEADROOM = RELAY_MAX_CONNECTIONS + 4096 + 256
RUNS = int(os.environ.get("RUNS", "3"))
DIRECT = int(os.environ.get("SWARM_DIRECT", "10000"))
BATCH_K = int(os.environ.get("SWARM_BATCH_K", "1000"))
WARM_RUNS = int(os.environ.get("SWARM_WARM_RUNS", "10"))
CERTS = "var/lib/certmaster/certmaster/certs"
PROCS = []
NOFILE = 0
ROWS = []
NOTES = []


def b(name):
    return os.path.join(BIN, name)


def row(section, metric, unit, value, goal="", met=None):
    """A row; `goal` is "≤ N unit" (or "≥"), `met` whether it was (checked
    from `value` when not given), informational rows say so."""
    if goal and met is None:
        try:
            bound = float(goal.split()[1].replace(",", ""))
            met = float(value) <= bound if goal.startswith("≤") else float(value) >= bound
        except (ValueError, IndexError):
            met = None
    goal = "goal " + goal if goal else "no goal (informational)"
    mark = "" if met is None else ("met" if met else "**missed**")
    ROWS.append((section, metric, unit, value, goal, mark))
    print("%-58s %10s %-3s %s %s" % (metric, value, unit, goal, mark), flush=True)


LOGS = []


def start(args, **kw):
    """Starts a service; its first line is read from stdout, its log goes
    to a file (a pipe nobody reads would stop it once full)."""
    log = tempfile.TemporaryFile(mode="w+")
    LOGS.append(log)
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, **kw)
    p.log = log
    PROCS.append(p)
    return p


def log_tail(p):
    p.log.seek(0)
    return p.log.read()[-2000:]


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_secs(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def timed(args, timeout=1800):
    """Runs a command; (wall s, CPU s of it and its children, exit, stdout, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode, done.stdout, done.stderr


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def swarm(root, count, prefix, cm_port):
    return start([b("func-swarm"), "--root", root, "--count", str(count), "--prefix", prefix,
                  "--certmaster", "127.0.0.1:%d" % cm_port])


def wait_serving(procs, what):
    for p in procs:
        line = p.stdout.readline()
        if "serving" not in line:
            raise SystemExit("%s: func-swarm did not start: %s %s" % (what, line, log_tail(p)))


def main():
    global NOFILE
    # Ended by a signal (also from a background job, where SIGINT is
    # ignored): the fleet is stopped and the temp dir removed all the same.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(128 + 15))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20))
    except (ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    NOFILE = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    tmp = tempfile.mkdtemp(prefix="func-swarm-bench-")
    top = os.path.join(tmp, "top")
    completed = False
    try:
        run(tmp, top)
        completed = True
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in PROCS:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        # A run cut short prints what it measured but leaves no report.
        report(write=completed)


def run(tmp, top):
    global NRELAYS
    subprocess.run([b("func-testpki"), "ca", top], check=True, stdout=subprocess.DEVNULL)
    conf = os.path.join(top, "etc/certmaster/certmaster.conf")
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    with open(conf, "w") as f:
        # One address enrolls every simulated minion (DESIGN §17).
        f.write("[main]\nmax_connections_per_address = 64\n")
    cm = start([b("certmaster"), "--root", top, "--listen", "127.0.0.1:0", "--autosign"])
    cm_port = int(cm.stdout.readline().split("listening on ")[1].split()[0].rsplit(":", 1)[1])

    # -- relays sized to keep every connection (docs/SCALING.md) -----------
    # A relay keeps one descriptor per minion of its segment besides its
    # own (RELAY_HEADROOM); so does the func-swarm serving that segment.
    keeps = NOFILE - RELAY_HEADROOM
    if NRELAYS == 0:
        NRELAYS = max(1, -(-N // keeps))
    # Segments differ by one at most, and add up to N.
    counts = [N // NRELAYS + (1 if i < N % NRELAYS else 0) for i in range(NRELAYS)]
    per = max(counts)
    if per > keeps:
        NOTES.append("RELAYS=%d: a segment of %d is above what a relay can keep under %d open files (%d): "
                     "the rest are opened anew at every call" % (NRELAYS, per, NOFILE, keeps))
    else:
        NOTES.append("%d relays of %d minions: open files are limited to %d per process here, and a relay keeps "
                     "a segment of up to %d (the limit less its own %d); each segment has its own func-swarm"
                     % (NRELAYS, per, NOFILE, keeps, RELAY_HEADROOM))

    # -- enrollment: the relays' segments, all swarms at once -------------
    prefixes = ["seg%c" % (ord("a") + i) for i in range(NRELAYS)]
    cpu0 = cpu_secs(cm.pid)
    t = time.monotonic()
    segs = [swarm(os.path.join(tmp, "swarm-" + p), n, p, cm_port) for p, n in zip(prefixes, counts)]
    wait_serving(segs, "segments")
    wall = time.monotonic() - t
    row("enroll", "%d simulated minions enrolled (%d swarms at once)" % (N, NRELAYS), "s",
        "%.1f" % wall, "≤ 200 s")
    row("enroll", "signings a second", "/s", "%.0f" % (N / wall), "≥ 500")
    row("enroll", "certmaster CPU per signing", "us", "%.0f" % ((cpu_secs(cm.pid) - cpu0) / N * 1e6))
    row("enroll", "func-swarm memory per simulated minion", "KiB",
        "%.1f" % (sum(rss_kib(p.pid) for p in segs) / N))

    # -- minions without relays -------------------------------------------
    if "direct" in PARTS or "warm" in PARTS:
        direct = swarm(os.path.join(tmp, "swarm-direct"), DIRECT, "dd", cm_port)
        batch = swarm(os.path.join(tmp, "swarm-batch"), BATCH_K, "kk", cm_port)
        wait_serving([direct, batch], "direct")
    # The segments are the relays' (moved below): the top calls only these directly.
    relay_roots = []
    for i, p in enumerate(prefixes):
        root = os.path.join(tmp, "relay%d" % (i + 1))
        # The relay's own credentials (its key is worth its segment only).
        subprocess.run([b("certmaster-ca"), "--root", top, "--relay", "relay%d" % (i + 1), "--relay-root", root],
                       check=True, stdout=subprocess.DEVNULL)
        certs = os.path.join(root, CERTS)
        os.makedirs(certs)
        src = os.path.join(top, CERTS)
        for name in os.listdir(src):
            if name.startswith(p) and name[len(p):len(p) + 1].isdigit():
                os.rename(os.path.join(src, name), os.path.join(certs, name))
        os.makedirs(os.path.join(root, "etc/func"))
        with open(os.path.join(root, "etc/func/overlord.conf"), "w") as f:
            # A swarm keeps idle connections 600 s (funcd: 30 s, hence func-api's 20 s default).
            f.write("[api]\nmax_idle_connections = %d\nkeep_idle_for = 300\nmax_body = %d\nmax_connections = %d\n"
                    % (per + 1000, 64 << 20, RELAY_MAX_CONNECTIONS))
        relay_roots.append(root)
    func = lambda *a: [b("func"), "--root", top] + list(a)
    if "direct" in PARTS:
        direct_part(func)
    if "warm" in PARTS:
        warm_part(func, top)
    if "relays" in PARTS or "async" in PARTS:
        relays_part(func, top, relay_roots, counts)


def direct_part(func):
    walls, cpus = [], []
    for _ in range(RUNS):
        wall, cpu, code, out, err = timed(func("--direct", "--json", "dd*", "ping"))
        assert code == 0 and len(json.loads(out)) == DIRECT, err[-500:]
        walls.append(wall)
        cpus.append(cpu)
    row("direct", "sync `func 'dd*' ping`, %d minions, no relays" % DIRECT, "s", "%.2f" % median(walls))
    row("direct", "  overlord CPU per host (func + workers)", "us", "%.0f" % (median(cpus) / DIRECT * 1e6))
    walls = []
    for _ in range(RUNS):
        t = time.monotonic()
        _, _, code, out, err = timed(func("dd*", "call", "test", "ping", "--async", "--nopoll"))
        job = out.split("'")[1]
        _, _, code, out, err = timed(func("--json", "job_status", job, "--wait"))
        walls.append(time.monotonic() - t)
        doc = json.loads(out)
        assert doc["state"] == "finished" and len(doc["results"]) == DIRECT, err[-500:]
    row("direct", "async test.ping on %d, submitted → collapsed (job_status --wait)" % DIRECT, "s",
        "%.2f" % median(walls), "≤ 30 s")
    batch_rows(func, "direct", "--direct", "≤ 5 %")


def batch_rows(func, section, how, goal):
    walls = []
    for _ in range(RUNS):
        wall, _, code, out, err = timed(func(how, "--json", "kk*", "call", "--batch", "25%", "test", "sleep", "1"))
        assert code == 0, err[-500:]
        walls.append(wall)
    row(section, "sync --batch 25%% test.sleep 1 on %d (ideal 4 s)" % BATCH_K, "s", "%.2f" % median(walls))
    row(section, "  batch overhead over the ideal", "%", "%.1f" % ((median(walls) - 4.0) / 4.0 * 100), goal)


def warm_part(func, top):
    """A func-api serves the top's root: `func` hands it its calls."""
    with open(mkconf(top), "a") as f:
        f.write("[api]\nmax_idle_connections = %d\n" % (DIRECT + BATCH_K + 1000))
    api = start([b("func-api"), "--root", top, "--listen", "127.0.0.1:0"], env=dict(os.environ, RUST_LOG="warn"))
    if "listening on" not in api.stdout.readline():
        raise SystemExit("func-api did not start: " + log_tail(api))
    cmd = func("-v", "--json", "kk*", "ping")
    wall, cpu, code, out, err = timed(cmd)  # its connections, opened once
    assert code == 0 and "through func-api" in err, err[-500:]

    def sampled(cmd):
        # func-api's CPU is read from /proc in clock ticks (10 ms, a third
        # of one run's): each sample sums WARM_RUNS runs, and the report
        # has the median sample. (wall, CPU func + func-api, CPU func).
        cpus, walls, funcs = [], [], []
        for _ in range(max(RUNS, 3)):
            api0, func_cpu = cpu_secs(api.pid), 0.0
            for _ in range(WARM_RUNS):
                wall, cpu, code, out, err = timed(cmd)
                assert code == 0 and len(json.loads(out)) == BATCH_K and "through func-api" in err, err[-500:]
                func_cpu += cpu
                walls.append(wall)
            cpus.append((func_cpu + cpu_secs(api.pid) - api0) / WARM_RUNS)
            funcs.append(func_cpu / WARM_RUNS)
        return median(walls), median(cpus) / BATCH_K * 1e6, median(funcs) / BATCH_K * 1e6

    # As the goal says: `func '*' ping` on a root of K minions. The others
    # (the direct part's) are set aside meanwhile, and then the same call
    # is measured among them all: `func` lists the whole certificate
    # directory to match a SPEC.
    certs = os.path.join(top, CERTS)
    aside = os.path.join(os.path.dirname(top), "aside")
    os.makedirs(aside, exist_ok=True)
    others = [n for n in os.listdir(certs) if not n.startswith("kk")]
    for n in others:
        os.rename(os.path.join(certs, n), os.path.join(aside, n))
    try:
        wall, per_host, of_func = sampled(func("-v", "--json", "*", "ping"))
    finally:
        for n in others:
            os.rename(os.path.join(aside, n), os.path.join(certs, n))
    row("warm", "sync `func '*' ping` on a root of %d minions, handed to func-api" % BATCH_K, "s", "%.3f" % wall)
    row("warm", "  overlord CPU per host (func + func-api; median of %d samples of %d runs)" % (max(RUNS, 3), WARM_RUNS),
        "us", "%.1f" % per_host, "≤ 40 us")
    row("warm", "    of which func", "us", "%.1f" % of_func)
    wall, per_host, of_func = sampled(cmd)
    row("warm", "sync `func 'kk*' ping`: the same %d among %d minions" % (BATCH_K, BATCH_K + len(others) // 2), "s",
        "%.3f" % wall)
    row("warm", "  overlord CPU per host (func + func-api)", "us", "%.1f" % per_host)
    row("warm", "    of which func", "us", "%.1f" % of_func)
    # The same batch as without func-api: each wave's starts handed to it,
    # its watcher following the hosts (no connection from the driver).
    walls = []
    for _ in range(RUNS):
        wall, _, code, out, err = timed(func("-v", "--json", "kk*", "call", "--batch", "25%", "test", "sleep", "1"))
        assert code == 0 and "through func-api" in err, err[-500:]
        walls.append(wall)
    row("warm", "sync --batch 25%% test.sleep 1 on %d (ideal 4 s), handed to func-api" % BATCH_K, "s",
        "%.2f" % median(walls))
    row("warm", "  batch overhead over the ideal", "%", "%.1f" % ((median(walls) - 4.0) / 4.0 * 100), "≤ 5 %")
    # An async job on them: dispatched through func-api, collected from the store.
    walls = []
    for _ in range(RUNS):
        t = time.monotonic()
        _, _, code, out, err = timed(func("kk*", "call", "test", "ping", "--async", "--nopoll"))
        job = out.split("JOB_ID:", 1)[1].split()[0].strip("'")
        _, _, code, out, err = timed(func("--json", "job_status", job, "--wait"))
        walls.append(time.monotonic() - t)
        doc = json.loads(out)
        assert doc["state"] == "finished" and len(doc["results"]) == BATCH_K, err[-500:]
    row("warm", "async test.ping on %d, submitted → collapsed, through func-api" % BATCH_K, "s",
        "%.2f" % median(walls))
    if os.environ.get("SWARM_WARM_HOLD"):
        print("holding: --root %s, func-api pid %d" % (top, api.pid), flush=True)
        time.sleep(float(os.environ["SWARM_WARM_HOLD"]))
    api.send_signal(signal.SIGTERM)
    api.wait(timeout=60)


def mkconf(top):
    os.makedirs(os.path.join(top, "etc/func"), exist_ok=True)
    return os.path.join(top, "etc/func/overlord.conf")


def relays_part(func, top, relay_roots, counts):
    relays = []
    # SWARM_RELAY_WRAP: a command the relays run under (a profiler, by hand).
    wrap = os.environ.get("SWARM_RELAY_WRAP", "").split()
    for root in relay_roots:
        p = start(wrap + [b("func-api"), "--root", root, "--listen", "127.0.0.1:0"], env=dict(os.environ, RUST_LOG="warn"))
        line = p.stdout.readline()
        while wrap and line and "listening on" not in line:
            line = p.stdout.readline()
        if "listening on" not in line:
            raise SystemExit("func-api did not start: " + log_tail(p))
        relays.append((p, int(line.rsplit(":", 1)[1])))
    with open(mkconf(top), "a") as f:
        f.write("[relays]\n")
        for i, (_, port) in enumerate(relays):
            f.write("relay%d = 127.0.0.1:%d\n" % (i + 1, port))
    wall, _, code, out, err = timed([b("func-build-map"), "--root", top])
    assert code == 0, out + err
    total = sum(counts)
    row("relays", "func-build-map over %d relays (%d minions)" % (NRELAYS, total), "s", "%.2f" % wall)
    rss_idle = [rss_kib(p.pid) for p, _ in relays]
    perf = os.environ.get("SWARM_PERF")

    def ping(i):
        cmd = func("--delegate", "seg*", "ping")
        if perf and i == RUNS:
            cmd = ["perf", "record", "-F", "2000", "-g", "-o", perf, "--"] + cmd
        wall, cpu, code, out, err = timed(cmd)
        ok = "%d hosts: %d ok" % (total, total) in err
        if not ok:
            NOTES.append("ping run %d: %s" % (i + 1, err.strip().splitlines()[-1] if err.strip() else code))
        print("  ping run %d: %.2f s, relay RSS %s MiB" % (i + 1, wall, " ".join(
            "%.0f" % (rss_kib(p.pid) / 1024) for p, _ in relays)), flush=True)
        return wall, cpu, ok

    if "relays" in PARTS:
        pings = []
        for i in range(RUNS + 1):
            pings.append(ping(i))
            if i == 0:
                rss_first = [rss_kib(p.pid) for p, _ in relays]
            if i == 2:
                rss_third = [rss_kib(p.pid) for p, _ in relays]
        row("relays", "`func --delegate '*' ping`, %d through %d relays, cold (first)" % (total, NRELAYS), "s",
            "%.2f" % pings[0][0])
        warm = pings[1:]
        row("relays", "  warm (median of %d)" % len(warm), "s", "%.2f" % median([w for w, _, _ in warm]), "≤ 10 s")
        row("relays", "  top overlord CPU per host, cold", "us", "%.1f" % (pings[0][1] / total * 1e6))
        row("relays", "  top overlord CPU per host, warm", "us",
            "%.1f" % (median([c for _, c, _ in warm]) / total * 1e6), "≤ 10 us")
        row("relays", "  every host answered, every run", "", "yes" if all(ok for _, _, ok in pings) else "NO",
            "every host", all(ok for _, _, ok in pings))
        per_conn = [(w - i) / n for w, i, n in zip(rss_first, rss_idle, counts)]
        row("relays", "relay memory per kept connection (RSS after the first run − idle, / hosts)", "KiB",
            "%.1f" % median(per_conn), "≤ 30 KiB")
        more = [ping(RUNS + 1 + i) for i in range(MEM_RUNS)]
        rss_end = [rss_kib(p.pid) for p, _ in relays]
        growth = [(e - t) / max(1, t) * 100 for e, t in zip(rss_end, rss_third)]
        row("relays", "relay RSS after %d more runs vs after the third (the largest of %d relays)"
            % (MEM_RUNS, NRELAYS), "%", "%+.1f" % max(growth), "≤ 5 %")
        row("relays", "  the same, all relays together (MiB after the third → at the end)", "",
            "%.0f → %.0f" % (sum(rss_third) / 1024, sum(rss_end) / 1024))
        # A second window, SETTLE_RUNS runs later: RSS over MEM_RUNS more
        # runs once whatever a relay's first runs allocate has settled.
        more += [ping(RUNS + 1 + MEM_RUNS + i) for i in range(SETTLE_RUNS)]
        rss_settled = [rss_kib(p.pid) for p, _ in relays]
        more += [ping(RUNS + 1 + MEM_RUNS + SETTLE_RUNS + i) for i in range(MEM_RUNS)]
        rss_final = [rss_kib(p.pid) for p, _ in relays]
        growth = [(e - t) / max(1, t) * 100 for e, t in zip(rss_final, rss_settled)]
        row("relays", "  settled: RSS after run %d → after run %d (the largest of %d relays)"
            % (RUNS + 1 + MEM_RUNS + SETTLE_RUNS, RUNS + 1 + 2 * MEM_RUNS + SETTLE_RUNS, NRELAYS), "%",
            "%+.1f" % max(growth), "≤ 5 %")
        row("relays", "  every host answered in those runs", "", "yes" if all(ok for _, _, ok in more) else "NO",
            "every host", all(ok for _, _, ok in more))
        row("relays", "  warm ping in those runs (median)", "s", "%.2f" % median([w for w, _, _ in more]), "≤ 10 s")
    if "async" in PARTS:
        async_rows(func, total)
    if os.environ.get("SWARM_HOLD"):
        # For profiling by hand: the fleet stays up this long.
        print("holding: --root %s" % top, flush=True)
        time.sleep(float(os.environ["SWARM_HOLD"]))


def async_rows(func, total):
    for i in range(2):
        t = time.monotonic()
        _, cpu1, code, out, err = timed(func("--delegate", "seg*", "call", "test", "ping", "--async", "--nopoll"))
        assert code == 0, err[-500:]
        job = out.split("'")[1]
        _, cpu2, code, out, err = timed(func("--json", "job_status", job, "--wait"), timeout=3600)
        wall = time.monotonic() - t
        doc = json.loads(out)
        done = len(doc.get("results", {}))
        good = sum(1 for v in doc.get("results", {}).values() if v == 1)
        row("relays", "async test.ping on %d through relays → collapsed, run %d (%s)" % (total, i + 1,
            "cold" if i == 0 else "warm"), "s", "%.2f" % wall, "≤ 30 s")
        row("relays", "  state, hosts with a result, results = 1", "", "%s %d %d" % (doc.get("state"), done, good),
            "finished %d %d" % (total, total), doc.get("state") == "finished" and done == good == total)
        row("relays", "  top overlord CPU per host (func, driver, job_status)", "us",
            "%.1f" % ((cpu1 + cpu2) / total * 1e6))


def report(write=True):
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=TOP_DIR).stdout.strip()
    lines = ["# Benchmark swarm-%s" % stamp, "",
             "- date: %s UTC" % time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
             "- machine: %d cores, %.1f GiB RAM" % (os.cpu_count(),
                                                   os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
             "- commit: %s; runs per metric: %d (medians)" % (commit, RUNS),
             "- `make bench-scale`, swarm part: func-swarm simulated minions on 127.0.0.1, one certmaster, "
             "relays are func-api on their own roots", ""]
    for n in NOTES:
        lines.append("Note: " + n)
    lines += ["", "| part | metric | unit | value | | goal |", "|---|---|---|---:|---|---|"]
    for section, metric, unit, value, goal, met in ROWS:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (section, metric, unit, value, met, goal))
    text = "\n".join(lines) + "\n"
    out = os.path.join(TOP_DIR, "bench", "results")
    os.makedirs(out, exist_ok=True)
    for name in [] if not write else ("%s-swarm.md" % stamp, "LATEST-swarm.md"):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    sys.stdout.write("\n" + text)


if __name__ == "__main__":
    main()
