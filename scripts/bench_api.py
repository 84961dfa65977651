"""Measures func-api on one running fleet of K local minions and appends the
samples to a TSV file (metric, value, unit, ok, note), as bench_fleet.py.

Usage: bench_api.py BIN_DIR OVERLORD_ROOT K FLEET_DIR OUT_TSV

- CPU per host of a synchronous ping of all K minions through the API, with
  warm connections: func-api's user+sys time (/proc/PID/stat, all threads)
  over a run of calls, divided by the host calls made. It includes the
  HTTPS request itself, JSON, the pool and the watcher thread.
- a warm func's batch: `func '*' call --batch 25% test sleep 1` handed to
  func-api wave by wave (its overhead over the ideal);
- a warm func: `func '*' ping` while func-api serves the root is handed to
  it; the CPU of func (reaped children) and of func-api together, per host
  (BENCH_WARM_RUNS runs per sample, default 4,000 / K), and its wall time;
  ok only when `func -v` says the call went through func-api.
- wall time of that call; calls per second of `test.ping` on one minion over
  1 and 8 keep-alive HTTPS connections (Python http.client clients, which
  share these 2 cores).
- events per second delivered to 10 SSE clients: async pings of all minions
  are started until about 2,000 events exist; live: from the first start
  until each of 10 open streams has every event; replay: 10 new streams
  resuming from id 0 read the whole backlog at once.
- `GET /api/v1/jobs?limit=50` against a store of 100,000 jobs (a copy of the
  overlord's credentials in a second root, filled by func-bench-fill, with
  its own func-api): the first page and one 50,000 jobs deep; and
  `func jobs list --limit 50` on the same store for comparison.

Every metric is sampled RUNS times (default 5) where it is cheap. Knobs
for a short run (`make test` runs one, tests/python/test_bench.py):
BENCH_API_CALLS (warm sync calls per sample), BENCH_API_SECONDS (per
calls/s sample, default 3), BENCH_API_EVENTS (default 2,000),
BENCH_API_JOBS (the big store, default 100,000). A kept connection that
func-api ended for idleness ([api] idle_timeout) is reopened, as any
keep-alive client must.
"""

import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

bin_dir, root, k, fleet_dir, out_tsv = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
RUNS = int(os.environ.get("RUNS", "5"))
SECONDS = float(os.environ.get("BENCH_API_SECONDS", "3"))
EVENTS = int(os.environ.get("BENCH_API_EVENTS", "2000"))
JOBS = int(os.environ.get("BENCH_API_JOBS", "100000"))
TICK = os.sysconf("SC_CLK_TCK")


def record(metric, value, unit, ok=True, note=""):
    with open(out_tsv, "a") as f:
        f.write("%s\t%s\t%s\t%d\t%s\n" % (metric, value, unit, 1 if ok else 0, note))


class Api:
    def __init__(self, root):
        self.root = root
        self.proc = subprocess.Popen([os.path.join(bin_dir, "func-api"), "--root", root, "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG="error"))
        line = self.proc.stdout.readline().decode()
        self.port = int(line.rsplit(":", 1)[1])
        self.ctx = ssl.create_default_context(cafile=os.path.join(root, "etc/pki/certmaster/ca/certmaster.crt"))
        out = subprocess.run([os.path.join(bin_dir, "func-api"), "--root", root, "token", "create",
                              "bench%d" % time.time_ns(), "--admin"], capture_output=True, text=True, check=True)
        self.token = out.stdout.strip().splitlines()[-1]

    def conn(self):
        return http.client.HTTPSConnection("localhost", self.port, context=self.ctx, timeout=120)

    def ask(self, conn, method, path, body=None, headers=None):
        h = {"Authorization": "Bearer " + self.token}
        h.update(headers or {})
        data = json.dumps(body) if body is not None else None
        if data:
            h["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                conn.request(method, path, body=data, headers=h)
                r = conn.getresponse()
                text = r.read()
                return r.status, json.loads(text) if text else None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError):
                # The server ended the kept connection (idle): open a new one.
                conn.close()
                if attempt == 2:
                    raise

    def cpu_seconds(self):
        fields = open("/proc/%d/stat" % self.proc.pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def events_reader(api, last_id, want, done, got):
    """Reads events until `want()` is satisfied; `got` collects ids."""
    c = api.conn()
    h = {"Authorization": "Bearer " + api.token}
    if last_id is not None:
        h["Last-Event-ID"] = str(last_id)
    c.request("GET", "/api/v1/events", headers=h)
    r = c.getresponse()
    while not want(got):
        line = r.readline()
        if not line:
            break
        if line.startswith(b"id:"):
            got.append(int(line[3:]))
    done.append(time.monotonic())
    c.close()


def warm_func(api):
    """A warm func (issue 49): `func '*' ping` while this func-api serves
    the root hands the call to it. CPU of func (a reaped child) and of
    func-api together, per host; and the wall time of one run."""
    func = os.path.join(bin_dir, "func")
    check = subprocess.run([func, "--root", root, "-v", "*", "ping"], capture_output=True, text=True)
    handed = check.returncode == 0 and "through func-api" in check.stderr
    runs = int(os.environ.get("BENCH_WARM_RUNS", max(3, 4000 // k)))
    for _ in range(RUNS):
        ok = handed
        api0, kids0, t0 = api.cpu_seconds(), os.times(), time.monotonic()
        for _ in range(runs):
            p = subprocess.run([func, "--root", root, "*", "ping"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ok = ok and p.returncode == 0
        wall = (time.monotonic() - t0) / runs
        kids = os.times()
        func_cpu = (kids.children_user - kids0.children_user) + (kids.children_system - kids0.children_system)
        cpu = func_cpu + api.cpu_seconds() - api0
        record("warm_func_cpu_per_host_ping", "%.1f" % (cpu / (runs * k) * 1e6), "us", ok,
               "func + func-api, %d runs of `func '*' ping` on %d hosts" % (runs, k))
        record("warm_func_ping", "%.2f" % (wall * 1000), "ms", ok, "`func '*' ping` handed to func-api")


def warm_batch():
    """A warm func's batch (issue 49): `func '*' call --batch 25% test sleep
    1` while this func-api serves the root: each wave's starts are handed to
    it and its watcher follows the hosts. Wall time, and its overhead over
    the ideal (waves x 1 s)."""
    func = os.path.join(bin_dir, "func")
    size = max(1, k * 25 // 100)
    ideal = -(-k // size)
    for _ in range(RUNS):
        t0 = time.monotonic()
        p = subprocess.run([func, "--root", root, "-v", "*", "call", "--batch", "25%", "test", "sleep", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        ok = p.returncode == 0 and "through func-api" in p.stderr
        record("warm_sync_batch25", "%.0f" % (wall * 1000), "ms", ok,
               "`func '*' call --batch 25%% test sleep 1` handed to func-api (ideal %d s)" % ideal)
        record("warm_sync_batch25_overhead", "%.1f" % ((wall - ideal) / ideal * 100), "%", ok,
               "over the ideal of %d s" % ideal)


def main():
    api = Api(root)
    ping_all = {"spec": "*", "module": "test", "method": "ping"}
    c = api.conn()
    status, doc = api.ask(c, "POST", "/api/v1/calls", ping_all)
    ok = status == 200 and len(doc) == k and all(v == 1 for v in doc.values())
    # Warm: every host has a kept connection now.
    calls = int(os.environ.get("BENCH_API_CALLS", max(20, 20000 // k)))
    for _ in range(RUNS):
        cpu0, t0 = api.cpu_seconds(), time.monotonic()
        for _ in range(calls):
            status, doc = api.ask(c, "POST", "/api/v1/calls", ping_all)
            ok = ok and status == 200 and len(doc) == k
        wall = (time.monotonic() - t0) / calls
        cpu = api.cpu_seconds() - cpu0
        record("api_cpu_per_host_sync_ping", "%.1f" % (cpu / (calls * k) * 1e6), "us", ok,
               "%d calls of %d hosts" % (calls, k))
        record("api_sync_ping", "%.2f" % (wall * 1000), "ms", ok, "one POST /calls test.ping to all, warm")
    warm_func(api)
    warm_batch()
    one = {"spec": "m1", "module": "test", "method": "ping"}

    def hammer(seconds, counts):
        conn = api.conn()
        n, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            api.ask(conn, "POST", "/api/v1/calls", one)
            n += 1
        counts.append(n)
        conn.close()

    for conns in (1, 8):
        for _ in range(min(RUNS, 3)):
            counts = []
            threads = [threading.Thread(target=hammer, args=(SECONDS, counts)) for _ in range(conns)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            record("api_calls_per_s_%dconn" % conns, "%.0f" % (sum(counts) / SECONDS), "calls/s", True,
                   "sync test.ping on one minion")
    # Events: ~2,000 of them, live to 10 streams, then replayed to 10 more.
    jobs = max(1, EVENTS // (k + 2))
    expected = jobs * (k + 2)
    start_id = None
    status, doc = api.ask(c, "GET", "/api/v1/jobs?limit=1")
    done, streams = [], []
    for _ in range(10):
        got = []
        t = threading.Thread(target=events_reader, args=(api, None, lambda g: len(g) >= expected, done, got), daemon=True)
        t.start()
        streams.append((t, got))
    time.sleep(0.5)
    t0 = time.monotonic()
    for _ in range(jobs):
        api.ask(c, "POST", "/api/v1/calls", dict(ping_all, **{"async": True}))
    for t, _ in streams:
        t.join(timeout=300)
    live_ok = len(done) == 10 and all(len(g) >= expected for _, g in streams)
    if done:
        record("api_events_live_per_s", "%.0f" % (10 * expected / (max(done) - t0)), "events/s", live_ok,
               "%d async jobs of %d hosts, %d events to each of 10 streams" % (jobs, k, expected))
    first = min(streams[0][1]) if streams[0][1] else 0
    for _ in range(min(RUNS, 3)):
        done2, readers = [], []
        t0 = time.monotonic()
        for _ in range(10):
            got = []
            t = threading.Thread(target=events_reader, args=(api, first - 1, lambda g: len(g) >= expected, done2, got), daemon=True)
            t.start()
            readers.append((t, got))
        for t, _ in readers:
            t.join(timeout=120)
        replay_ok = len(done2) == 10
        if done2:
            record("api_events_replay_per_s", "%.0f" % (10 * expected / (max(done2) - t0)), "events/s", replay_ok,
                   "10 streams resuming from the start of %d events" % expected)
    c.close()
    api.close()
    # 100,000 jobs, in a second root with the overlord's credentials.
    big = os.path.join(fleet_dir, "bigstore")
    shutil.rmtree(big, ignore_errors=True)
    shutil.copytree(os.path.join(root, "etc/pki"), os.path.join(big, "etc/pki"))
    subprocess.run([os.path.join(bin_dir, "func-bench-fill"), big, str(JOBS)], check=True, stdout=subprocess.DEVNULL)
    api = Api(big)
    c = api.conn()
    status, doc = api.ask(c, "GET", "/api/v1/jobs?limit=50")
    deep = None
    cursor = None
    for _ in range(1000):  # walk to 50,000 deep, 50 at a time (500 per page)
        q = "/api/v1/jobs?limit=500" + ("&before=" + urllib.parse.quote(cursor, safe="") if cursor else "")
        _, page = api.ask(c, "GET", q)
        cursor = page["next"]
        if cursor is None or len(page["jobs"]) < 500:
            break
        if (_ + 1) * 500 >= JOBS // 2:
            deep = cursor
            break
    for _ in range(RUNS):
        t0 = time.monotonic()
        status, doc = api.ask(c, "GET", "/api/v1/jobs?limit=50")
        record("api_jobs_page_100k", "%.2f" % ((time.monotonic() - t0) * 1000), "ms",
               status == 200 and len(doc["jobs"]) == 50, "first page of 100,000 jobs")
        if deep:
            t0 = time.monotonic()
            status, doc = api.ask(c, "GET", "/api/v1/jobs?limit=50&before=" + urllib.parse.quote(deep, safe=""))
            record("api_jobs_deep_page_100k", "%.2f" % ((time.monotonic() - t0) * 1000), "ms",
                   status == 200 and len(doc["jobs"]) == 50, "a page 50,000 jobs deep")
        t0 = time.monotonic()
        out = subprocess.run([os.path.join(bin_dir, "func"), "--root", big, "jobs", "list", "--limit", "50"],
                             capture_output=True)
        record("cli_jobs_list_100k", "%.2f" % ((time.monotonic() - t0) * 1000), "ms", out.returncode == 0,
               "func jobs list --limit 50, 100,000 jobs")
    c.close()
    api.close()
    shutil.rmtree(big, ignore_errors=True)


main()
