"""`make bench`'s scheduler part (issue 40): what func-api's scheduler costs
while nothing is due, with SCHED_N (default 1,000) enabled schedules kept
in the store (CPU seconds per second of func-api, against the same func-api
with none), and how late a run starts: the delay between a schedule's due
time and its job's start (a 1-second schedule, SCHED_RUNS runs, with the
SCHED_N others kept). For the embedded redb store and for PostgreSQL.

Usage: bench_schedules.py BIN_DIR CERTMASTER_ROOT OUT.md
Writes a Markdown section; numbers, never pass/fail (a run that breaks
exits non-zero)."""

import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from pgfixture import Postgres  # noqa: E402

bin_dir, cm_root, out_md = sys.argv[1], sys.argv[2], sys.argv[3]
N = int(os.environ.get("SCHED_N", "1000"))
RUNS = int(os.environ.get("SCHED_RUNS", "20"))
IDLE = float(os.environ.get("SCHED_IDLE_SECS", "20"))
TICKS = os.sysconf("SC_CLK_TCK")


def root_for(work, name, url):
    root = os.path.join(work, name)
    shutil.copytree(os.path.join(cm_root, "etc/pki"), os.path.join(root, "etc/pki"))
    shutil.copytree(os.path.join(cm_root, "var/lib/certmaster"), os.path.join(root, "var/lib/certmaster"))
    os.makedirs(os.path.join(root, "etc/func"), exist_ok=True)
    with open(os.path.join(root, "etc/func/overlord.conf"), "w") as f:
        f.write("[api]\nmax_schedules_per_owner = %d\n" % (N + 10))
        if url:
            f.write("[store]\nurl = %s\n" % url)
    return root


class FuncApi:
    def __init__(self, root):
        self.root = root
        self.proc = subprocess.Popen([os.path.join(bin_dir, "func-api"), "--root", root, "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        if "listening on" not in line:
            raise RuntimeError("func-api did not start")
        self.port = int(line.rsplit(":", 1)[1])
        self.ctx = ssl.create_default_context(cafile=os.path.join(root, "etc/pki/certmaster/ca/certmaster.crt"))
        out = subprocess.run([os.path.join(bin_dir, "func-api"), "--root", root, "token", "create", "bench", "--admin"],
                             capture_output=True, text=True, check=True).stdout
        self.token = out.strip().splitlines()[-1]
        self.conn = http.client.HTTPSConnection("localhost", self.port, context=self.ctx, timeout=60)

    def request(self, method, path, body=None):
        headers = {"Authorization": "Bearer " + self.token}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # func-api ended our idle connection (no answer came: the
            # request was not read); once more on a new one.
            self.conn.close()
            self.conn = http.client.HTTPSConnection("localhost", self.port, context=self.ctx, timeout=60)
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
        text = r.read().decode()
        return r.status, (json.loads(text) if text else None)

    def cpu(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def close(self):
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def idle_cpu(api, secs):
    """func-api's CPU seconds per second over `secs` of nothing due."""
    c0, t0 = api.cpu(), time.monotonic()
    time.sleep(secs)
    return (api.cpu() - c0) / (time.monotonic() - t0)


def events(api, tag, into, stop):
    conn = http.client.HTTPSConnection("localhost", api.port, context=api.ctx, timeout=300)
    conn.request("GET", "/api/v1/events?tag=" + tag, headers={"Authorization": "Bearer " + api.token})
    r = conn.getresponse()
    data = None
    while not stop.is_set():
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("data:"):
            data = json.loads(line[5:].strip())
        elif line == "" and data:
            into.append(data)
            data = None
    conn.close()


def measure(work, name, url):
    api = FuncApi(root_for(work, name, url))
    try:
        time.sleep(1.0)  # its first look at the store and the minions
        base = idle_cpu(api, IDLE)
        ping = {"spec": "s1", "module": "test", "method": "ping"}
        t0 = time.monotonic()
        for i in range(N):
            st, doc = api.request("POST", "/api/v1/schedules",
                                  {"name": "idle-%d" % i, "request": ping, "every": 86400 + i})
            if st != 201:
                raise RuntimeError("adding a schedule: %s %s" % (st, doc))
        add_ms = (time.monotonic() - t0) * 1000 / max(N, 1)
        loaded = idle_cpu(api, IDLE)
        got, stop = [], threading.Event()
        reader = threading.Thread(target=events, args=(api, "schedule/due-tick/run", got, stop), daemon=True)
        reader.start()
        time.sleep(0.5)
        st, doc = api.request("POST", "/api/v1/schedules", {"name": "due-tick", "request": ping, "every": 1})
        if st != 201:
            raise RuntimeError("adding the 1-second schedule: %s %s" % (st, doc))
        end = time.monotonic() + RUNS * 5 + 30
        while len(got) < RUNS and time.monotonic() < end:
            time.sleep(0.1)
        api.request("PATCH", "/api/v1/schedules/due-tick", {"enabled": False})
        stop.set()
        if len(got) < RUNS:
            raise RuntimeError("%d of %d runs in time" % (len(got), RUNS))
        delays = []
        for ev in got[:RUNS]:
            st, job = api.request("GET", "/api/v1/jobs/" + ev["data"]["job_id"])
            delays.append((job["started"] - ev["data"]["due"]) * 1000)
        return {"base": base, "loaded": loaded, "add_ms": add_ms, "delays": sorted(delays)}
    finally:
        api.close()


def row(backend, m):
    d = m["delays"]
    p95 = d[min(len(d) - 1, int(round(0.95 * (len(d) - 1))))]
    return "| %s | %.4f (%.2f %%) | %.4f (%.2f %%) | %.1f | %.0f | %.0f | %.0f |" % (
        backend, m["base"], m["base"] * 100, m["loaded"], m["loaded"] * 100, m["add_ms"],
        statistics.median(d), p95, d[-1])


work = tempfile.mkdtemp(prefix="func-bench-sched-")
lines = ["", "### Schedules (func-api's scheduler)", "",
         "func-api's CPU seconds per second while nothing is due (%.0f s each), with no schedule and with %d enabled "
         "ones kept in the store; the time to add one (`POST /api/v1/schedules`); and how late a run starts: its "
         "job's start minus its due time, %d runs of a 1-second schedule beside the %d others." % (IDLE, N, RUNS, N), "",
         "| store | idle, 0 schedules | idle, %d schedules | add (ms each) | due → start median (ms) | p95 | max |" % N,
         "|---|---:|---:|---:|---:|---:|---:|"]
try:
    lines.append(row("redb", measure(work, "redb", None)))
    pg = Postgres()
    try:
        url = pg.url
        lines.append(row("PostgreSQL", measure(work, "pg", url)))
    finally:
        pg.close()
finally:
    shutil.rmtree(work, ignore_errors=True)
text = "\n".join(lines) + "\n"
print(text)
with open(out_md, "w") as f:
    f.write(text)
