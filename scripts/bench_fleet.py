"""Measures one running fleet of K local minions and appends the samples to a
TSV file (metric, value, unit, ok, note — the layout of the Salt peer's
bench.sh, so the report can put both side by side). Every metric is sampled
RUNS times (default 5); the report prints medians.

Usage: bench_fleet.py FUNC_BIN OVERLORD_ROOT K FLEET_DIR OUT_TSV

What each row times is the wall time of one `func` process, from spawn to
exit. Peak RSS covers every overlord-side process: func, its workers, and the
detached drivers of async jobs and batches (this process makes itself a
child subreaper, so those orphans are reaped here and wait4 reports them).

CPU: every overlord-side process this script reaps (func with the workers it
waited for, detached drivers) adds its user+sys time to one counter; a row's
CPU per host is the counter's growth over the operation, divided by K. The
minion side of an async job is estimated as the machine's busy time
(/proc/stat) over the same span minus the overlord's, divided by K: the
daemons and the job processes (which are not our descendants), plus whatever
else ran, so run it on a quiet machine.

BENCH_SECTIONS (default all): sync, async, batch — the scale run skips some.
"""

import shlex
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time

func, root, k, fleet_dir, out_tsv = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
RUNS = int(os.environ.get("RUNS", "5"))
GAP = float(os.environ.get("BENCH_GAP", "0.2"))


def record(metric, value, unit, ok, note=""):
    with open(out_tsv, "a") as f:
        f.write("%s\t%s\t%s\t%d\t%s\n" % (metric, value, unit, 1 if ok else 0, note))


SECTIONS = os.environ.get("BENCH_SECTIONS", "sync async batch").split()
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
peak_rss = []
cpu_seconds = [0.0]  # user+sys of every overlord-side process reaped so far


def add_cpu(usage):
    cpu_seconds[0] += usage.ru_utime + usage.ru_stime


def machine_busy_seconds():
    """Busy CPU time of the whole machine so far (all cores), from /proc/stat."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def kernel_monitor_seconds():
    """CPU time of the kernel's memory monitor threads (kdamond, DAMON): on
    this VM they scan every process's memory, so their cost grows with the
    fleet, and it falls in the machine's busy time."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % pid).read()
        except OSError:
            continue
        if stat.split("(", 1)[1].startswith("kdamond"):
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def us_per_host(seconds):
    return round(seconds / k * 1e6, 1)


def reap(patience=0.0):
    """Reaps detached drivers that ended (orphans re-parented to us), noting
    their peak RSS; waits up to PATIENCE seconds for one still running."""
    deadline = time.time() + patience
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            peak_rss.append(usage.ru_maxrss)
            add_cpu(usage)
        elif time.time() >= deadline:
            return
        else:
            time.sleep(0.01)


def run(args):
    """Runs func with ARGS; returns (seconds, peak RSS KiB, exit code, stdout)."""
    start = time.perf_counter()
    p = subprocess.Popen([func, "--root", root] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    peak_rss.append(usage.ru_maxrss)
    add_cpu(usage)
    return wall, usage.ru_maxrss, p.returncode, out.decode(errors="replace")


def ms(seconds):
    return round(seconds * 1000, 1)


def job_id(out):
    if "JOB_ID: " not in out:
        return None
    return shlex.split(out.split("JOB_ID: ", 1)[1].splitlines()[0])[0]


def wait_finished(jid):
    out = run(["--json", "-t", "300", "job_status", jid, "--wait"])[3]
    try:
        status = json.loads(out)
    except ValueError:
        return None
    return status


def answered(status):
    return status is not None and status.get("status") == 1 and len(status.get("results", {})) == k


def sync(metric, args, check, cpu_metric=None):
    for _ in range(RUNS):
        before = cpu_seconds[0]
        wall, rss, rc, out = run(args)
        record(metric, ms(wall), "ms", rc == 0 and check(out), "exit %d" % rc)
        if cpu_metric:
            record(cpu_metric, us_per_host(cpu_seconds[0] - before), "us", rc == 0, "func + workers, user+sys / K")
        time.sleep(GAP)


def all_hosts_say(word):
    return lambda out: out.count(word) >= k


def rss_kib(pid, field):
    """VmRSS from status or Pss from smaps_rollup, KiB (0 if gone)."""
    path = "/proc/%d/%s" % (pid, "status" if field == "VmRSS" else "smaps_rollup")
    try:
        for line in open(path):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory(tag):
    """RSS and PSS of the first minion and of all minions (pids from the fleet helper)."""
    pids = [int(p) for p in open(os.path.join(fleet_dir, "minion.pids")).read().split()]
    for field, name in (("VmRSS", "rss"), ("Pss", "pss")):
        sizes = [rss_kib(p, field) for p in pids]
        record("%s_one_minion_%s" % (tag, name), round(sizes[0] / 1024, 1), "MiB", sizes[0] > 0, "m1")
        record("%s_all_minions_%s" % (tag, name), round(sum(sizes) / 1024, 1), "MiB",
               all(sizes), "%d funcd processes" % len(pids))


# A trivial drop-in module on every minion (picked up at the first call).
TRIVIAL_SH = """#!/bin/sh
case "$1" in
describe) echo '{"version": "1", "methods": {"ping": {}}}' ;;
call) echo '{"result": 1}' ;;
esac
"""
for name in os.listdir(fleet_dir):
    if name != "certmaster" and os.path.isdir(os.path.join(fleet_dir, name, "etc")):
        mods = os.path.join(fleet_dir, name, "etc", "func", "modules.d")
        os.makedirs(mods, exist_ok=True)
        with open(os.path.join(mods, "bench_sh"), "w") as f:
            f.write(TRIVIAL_SH)
        os.chmod(os.path.join(mods, "bench_sh"), 0o755)

time.sleep(float(os.environ.get("BENCH_SETTLE", "2")))
memory("idle")
# What an idle fleet costs: the machine's busy time while nothing is asked,
# per minion per second (includes whatever else runs, so a quiet machine).
IDLE_SPAN = float(os.environ.get("BENCH_IDLE_SPAN", "5"))
busy_before, monitor_before = machine_busy_seconds(), kernel_monitor_seconds()
time.sleep(IDLE_SPAN)
record("idle_cpu_per_minion", round((machine_busy_seconds() - busy_before) / IDLE_SPAN / k * 1e6, 1),
       "us/s", True, "machine busy time while idle / span / K")
record("idle_kernel_monitor_per_minion", round((kernel_monitor_seconds() - monitor_before) / IDLE_SPAN / k * 1e6, 1),
       "us/s", True, "kdamond threads over the same span (part of the row above)")
if "sync" in SECTIONS:
    sync("sync_ping", ["*", "ping"], lambda out: out.count("[ ok") >= k, "cpu_per_host_sync_ping")
    sync("sync_call_test_ping", ["*", "call", "test", "ping"], lambda out: out.count("\n    1\n") >= k,
         "cpu_per_host_sync_call_ping")
    # The same call targeted by facts: every host judges the filter first
    # (DESIGN §16), a filter every host satisfies, so the same hosts answer.
    sync("sync_call_test_ping_filtered", ["*", "call", "--filter", "num_cpus>=1", "test", "ping"],
         lambda out: out.count("\n    1\n") >= k, "cpu_per_host_sync_call_ping_filtered")
    sync("sync_command_run_echo", ["*", "call", "command", "run", "echo hi"], all_hosts_say("- hi"))
    sync("sync_call_dropin_sh", ["*", "call", "bench_sh", "ping"], lambda out: out.count("\n    1\n") >= k)

for _ in range(RUNS if "async" in SECTIONS else 0):
    reap(0)
    cpu_before, busy_before, monitor_before = cpu_seconds[0], machine_busy_seconds(), kernel_monitor_seconds()
    start = time.perf_counter()
    wall, rss, rc, out = run(["*", "call", "--async", "--nopoll", "test", "ping"])
    jid = job_id(out)
    record("async_to_job_id", ms(wall), "ms", rc == 0 and jid is not None, "func exit")
    if jid is None:
        continue
    status = wait_finished(jid)
    record("async_until_finished", ms(time.perf_counter() - start), "ms", answered(status),
           "call, then job_status --wait")
    reap(5)
    overlord_cpu = cpu_seconds[0] - cpu_before
    busy = machine_busy_seconds() - busy_before
    record("cpu_per_host_async_finished", us_per_host(overlord_cpu), "us", answered(status),
           "func, driver, job_status --wait: user+sys / K")
    record("minion_cpu_per_async_job", us_per_host(max(0.0, busy - overlord_cpu)), "us", answered(status),
           "machine busy time minus the overlord's, / K (daemons + job processes)")
    record("kernel_monitor_cpu_per_async_job", us_per_host(kernel_monitor_seconds() - monitor_before), "us", True,
           "kdamond threads over the same span, / K (part of the row above)")
    wall, rss, rc, out = run(["job_status", jid])
    record("lookup_finished_job", ms(wall), "ms", rc == 0, "job_status of a finished job")
    reap(5)
    time.sleep(GAP)

size = max(1, k * 25 // 100)
ideal = math.ceil(k / size) * 1.0
for _ in range(RUNS if "batch" in SECTIONS else 0):
    before = cpu_seconds[0]
    wall, rss, rc, out = run(["*", "call", "--batch", "25%", "test", "sleep", "1"])
    record("cpu_per_host_sync_batch", us_per_host(cpu_seconds[0] - before), "us", rc == 0, "func + workers, user+sys / K")
    record("sync_batch25_sleep1", ms(wall), "ms", rc == 0, "ideal %.0f ms (%d waves of %d)" % (ideal * 1000, ideal, size))
    record("sync_batch25_overhead", round((wall - ideal) / ideal * 100, 2), "%", rc == 0, "over the ideal")
    time.sleep(GAP)

for _ in range(RUNS if "batch" in SECTIONS else 0):
    start = time.perf_counter()
    wall, rss, rc, out = run(["*", "call", "--async", "--batch", "25%", "test", "sleep", "1"])
    jid = job_id(out)
    record("async_batch25_to_job_id", ms(wall), "ms", rc == 0 and jid is not None, "func exit")
    if jid is None:
        continue
    status = wait_finished(jid)
    done = time.perf_counter() - start
    record("async_batch25_complete", ms(done), "ms", answered(status), "call, then job_status --wait")
    record("async_batch25_overhead", round((done - ideal) / ideal * 100, 2), "%", answered(status), "over the ideal")
    reap(5)
    time.sleep(GAP)

time.sleep(float(os.environ.get("BENCH_SETTLE", "2")))
memory("after_workload")
for rss in peak_rss:
    record("func_peak_rss", round(rss / 1024, 1), "MiB", True, "func, workers and detached drivers")
