"""Async job numbers against a running fleet (median of 5 runs each):
time to JOB_ID with --nopoll; time from the call until job_status reports
FINISHED (test.ping); job_status of a finished job; RSS of one funcd idle
and with 100 running jobs, and of those job processes.
Usage: bench_async.py FUNC_BIN ROOT N_MINIONS FLEET_DIR"""

import json
import os
import signal
import statistics
import subprocess
import sys
import time

func, root, n, fleet_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
RUNS = 5


def run(args, **kw):
    return subprocess.run([func, "--root", root] + args, stdout=subprocess.PIPE, check=True, **kw).stdout.decode()


def timed(args):
    t = time.perf_counter()
    out = run(args)
    return time.perf_counter() - t, out


def job_id(out):
    return out.split("JOB_ID: ", 1)[1].strip()


def rss_kib(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pids_with(*words):
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
        except OSError:
            continue
        args = [c.decode(errors="replace") for c in cmd]
        if all(any(w == a for a in args) for w in words):
            found.append(int(p))
    return found


to_id, to_finished, lookup = [], [], []
for _ in range(RUNS):
    start = time.perf_counter()
    wall, out = timed(["*", "call", "--async", "--nopoll", "test", "ping"])
    to_id.append(wall)
    jid = job_id(out)
    status = json.loads(run(["--json", "-t", "120", "job_status", jid, "--wait"]))
    to_finished.append(time.perf_counter() - start)
    assert status["status"] == 1 and len(status["results"]) == n, status
    lookup.append(timed(["job_status", jid])[0])
ms = lambda xs: statistics.median(xs) * 1000
print("%3d minions  call --async --nopoll test ping: time to JOB_ID  %7.1f ms" % (n, ms(to_id)))
print("%3d minions  call --async test ping until job_status FINISHED  %7.1f ms" % (n, ms(to_finished)))
print("%3d minions  job_status of a finished job                     %7.1f ms" % (n, ms(lookup)))

m1_root = os.path.join(fleet_dir, "m1")
funcd = pids_with("--root", m1_root, "--name")
job_pids = set(pids_with("--run-job"))
funcd = [p for p in funcd if p not in job_pids]
if funcd:
    pid = funcd[0]
    idle = rss_kib(pid)
    for _ in range(100):
        run(["m1", "call", "--async", "--nopoll", "test", "sleep", "60"])
    deadline = time.time() + 30
    jobs = []
    while time.time() < deadline:
        jobs = [p for p in pids_with("--run-job", "--root", m1_root)]
        if len(jobs) >= 100:
            break
        time.sleep(0.1)
    busy = rss_kib(pid)
    job_rss = [rss_kib(p) for p in jobs]
    print("    one funcd RSS idle %.1f MiB; with %d running jobs %.1f MiB; each job process %.1f MiB (median)"
          % (idle / 1024, len(jobs), busy / 1024, statistics.median(job_rss) / 1024 if job_rss else 0))
    for p in jobs:
        try:
            os.killpg(p, signal.SIGKILL)
        except OSError:
            pass
