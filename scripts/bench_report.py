"""Turns one `make bench` sitting into tables: ours per fleet size K, side by
side with the Salt peer's when it ran, the ratio per row (ours / Salt), and
where we stand against the targets of issue 8. Prints the report and writes
it as Markdown to bench/results/<stamp>[-salt|-scale].md, to
bench/results/LATEST[-salt|-scale].md (what docs/BENCHMARKS.md links) and to
target/bench/<stamp>/report.md.

Usage: bench_report.py RAW_DIR "K1 K2 ..." PEER
RAW_DIR holds one.tsv, ours-K<K>.tsv, salt-K<K>/salt-K<K>-*.tsv (Salt's own
layout: metric, value, unit, ok, note)."""

import glob
import math
import os
import platform
import statistics
import subprocess
import sys
import time

raw, sizes, peer = sys.argv[1], [int(k) for k in sys.argv[2].split()], sys.argv[3]

# (label, our metric, Salt metric, unit)
ROWS = [
    ("fleet start-up, until all answer a ping", "startup_all_answer_ping", "startup_all_minions_up", "ms"),
    ("sync `func '*' ping` (Salt: test.ping)", "sync_ping", "a_sync_test_ping", "ms"),
    ("sync `call test ping`", "sync_call_test_ping", "a_sync_test_ping", "ms"),
    ("  the same with `--filter 'num_cpus>=1'` (every host judges it first)", "sync_call_test_ping_filtered", "", "ms"),
    ("`call --async --nopoll` → job id", "async_to_job_id", "b_async_to_jid", "ms"),
    ("async test ping → FINISHED (polled)", "async_until_finished", "b_async_all_returns_polled", "ms"),
    ("status of a finished job", "lookup_finished_job", "c_lookup_jid_finished", "ms"),
    ("sync `--batch 25%` test sleep 1", "sync_batch25_sleep1", "d1_sync_batch25_sleep1", "ms"),
    ("  overhead over the ideal", "sync_batch25_overhead", "d1_overhead", "%"),
    ("`--async --batch 25%` → job id", "async_batch25_to_job_id", "d2_async_batch_to_jid", "ms"),
    ("`--async --batch 25%` → complete (polled)", "async_batch25_complete", "d3_async_batch_complete_polled", "ms"),
    ("  overhead over the ideal", "async_batch25_overhead", "d3_overhead", "%"),
    ("`command.run \"echo hi\"` (Salt: cmd.run)", "sync_command_run_echo", "f_sync_cmd_run_echo", "ms"),
    ("sync `call bench_sh ping` (a drop-in sh module)", "sync_call_dropin_sh", "", "ms"),
    ("overlord CPU per host, sync ping (func + workers)", "cpu_per_host_sync_ping", "", "us"),
    ("overlord CPU per host, sync `call test ping`", "cpu_per_host_sync_call_ping", "", "us"),
    ("  the same with `--filter 'num_cpus>=1'`", "cpu_per_host_sync_call_ping_filtered", "", "us"),
    ("overlord CPU per host, async → FINISHED (func, driver, job_status)", "cpu_per_host_async_finished", "", "us"),
    ("overlord CPU per host, sync `--batch 25%`", "cpu_per_host_sync_batch", "", "us"),
    ("minion CPU per async job (machine busy − overlord)", "minion_cpu_per_async_job", "", "us"),
    ("  of which the kernel's memory monitor (kdamond)", "kernel_monitor_cpu_per_async_job", "", "us"),
    ("idle fleet: machine CPU per minion per second", "idle_cpu_per_minion", "", "us/s"),
    ("  of which the kernel's memory monitor (kdamond)", "idle_kernel_monitor_per_minion", "", "us/s"),
    ("idle RSS, one minion", "idle_one_minion_rss", "idle_after_startup_one_minion_rss", "MiB"),
    ("idle PSS, one minion", "idle_one_minion_pss", "idle_after_startup_one_minion_pss", "MiB"),
    ("idle RSS, all minions", "idle_all_minions_rss", "idle_after_startup_all_minions_rss", "MiB"),
    ("idle PSS, all minions", "idle_all_minions_pss", "idle_after_startup_all_minions_pss", "MiB"),
    ("RSS of all minions after the workload", "after_workload_all_minions_rss", "idle_after_workload_all_minions_rss", "MiB"),
    ("overlord side: peak RSS of func (Salt: master, idle)", "func_peak_rss", "idle_after_startup_master_rss", "MiB"),
    ("func-api: CPU per host, sync ping of all (warm)", "api_cpu_per_host_sync_ping", "", "us"),
    ("warm func: CPU per host, `func '*' ping` handed to func-api (func + func-api)", "warm_func_cpu_per_host_ping", "", "us"),
    ("warm func: `func '*' ping`, wall time", "warm_func_ping", "", "ms"),
    ("warm func: sync `--batch 25%` test sleep 1, handed to func-api", "warm_sync_batch25", "", "ms"),
    ("  overhead over the ideal", "warm_sync_batch25_overhead", "", "%"),
    ("func-api: sync ping of all, one request (warm)", "api_sync_ping", "", "ms"),
    ("func-api: sync test.ping on one minion, 1 connection", "api_calls_per_s_1conn", "", "calls/s"),
    ("func-api: the same, 8 connections", "api_calls_per_s_8conn", "", "calls/s"),
    ("func-api: events to 10 SSE clients, live (async pings)", "api_events_live_per_s", "", "events/s"),
    ("func-api: events to 10 SSE clients, backlog replay", "api_events_replay_per_s", "", "events/s"),
    ("func-api: `GET /jobs?limit=50` at 100,000 jobs", "api_jobs_page_100k", "", "ms"),
    ("  a page 50,000 jobs deep", "api_jobs_deep_page_100k", "", "ms"),
    ("`func jobs list --limit 50` at 100,000 jobs", "cli_jobs_list_100k", "", "ms"),
]
ONE = [
    ("test.ping over 1 keep-alive connection (Rust client)", "keepalive_pings"),
    ("test.ping over 8 keep-alive connections (Rust client)", "keepalive_pings_concurrent"),
    ("test.ping with a new TLS connection per call (Rust client)", "new_tls_per_call_pings"),
    ("test.ping over 1 keep-alive connection (Python xmlrpc.client)", "python_keepalive_pings"),
    ("drop-in bench_sh.ping (POSIX sh) over 1 keep-alive connection (Rust client)", "keepalive_bench_sh"),
    ("drop-in bench_py.ping (Python) over 1 keep-alive connection (Rust client)", "keepalive_bench_py"),
]


def load(path):
    """metric -> ([values], bad count, note)"""
    rows = {}
    if not path or not os.path.exists(path):
        return rows
    for line in open(path).read().splitlines():
        metric, value, _, ok, note = (line.split("\t") + [""] * 5)[:5]
        if metric == "metric":  # Salt's header line
            continue
        vals, bad, _ = rows.get(metric, ([], 0, ""))
        if value == "NA":
            rows[metric] = (vals, bad + 1, note)
            continue
        try:
            vals.append(float(value))
        except ValueError:
            continue
        rows[metric] = (vals, bad + (ok != "1"), note)
    return rows


def ideal_ms(k):
    size = max(1, k * 25 // 100)
    return math.ceil(k / size) * 1000.0


def add_overhead(salt, k, src, dst):
    if src in salt:
        vals, bad, _ = salt[src]
        salt[dst] = ([round((v - ideal_ms(k)) / ideal_ms(k) * 100, 2) for v in vals], bad, "")


def median(rows, metric):
    vals = rows.get(metric, ([], 0, ""))[0]
    return statistics.median(vals) if vals else None


def fmt(v, unit):
    if v is None:
        return "—"
    if unit == "ms":
        return "%.0f" % v if v >= 100 else "%.1f" % v
    if unit in ("calls/s", "events/s"):
        return "{:,.0f}".format(v)
    return "%.1f" % v


def cell(rows, metric, unit):
    if metric not in rows or not rows[metric][0]:
        bad = rows.get(metric, ([], 0, ""))[1]
        return "—" if not bad else "failed ×%d" % bad
    vals, bad, _ = rows[metric]
    text = fmt(statistics.median(vals), unit)
    if len(vals) > 1:
        text += " (%s–%s)" % (fmt(min(vals), unit), fmt(max(vals), unit))
    if bad:
        text += " ⚠%d/%d" % (bad, len(vals))
    return text


def ratio(ours, salt, unit):
    if ours is None or salt is None or unit == "%" or salt == 0:
        return "—"
    r = ours / salt
    if r < 1:
        return "%.3f (%.0f× less)" % (r, 1 / r) if r < 0.1 else "%.2f (%.1f× less)" % (r, 1 / r)
    return "%.2f" % r


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
    except OSError:
        return ""


def machine():
    model = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip() or platform.processor()
    mem = sh("awk '/MemTotal/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo")
    return "%d cores (%s), %s RAM, Linux %s" % (os.cpu_count(), model, mem, platform.release())


out = []
stamp = os.path.basename(raw.rstrip("/"))
out.append("# Benchmark %s" % stamp)
out.append("")
out.append("- date: %s UTC" % time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
out.append("- machine: %s" % machine())
commit = sh("git rev-parse --short HEAD") + (" (uncommitted changes)" if sh("git status --porcelain -uno") else "")
out.append("- commit: %s; %s; runs per metric: %s (medians, min–max in brackets)"
           % (commit, sh("rustc --version"), os.environ.get("RUNS", "5")))
salt_version = None
if peer == "salt":
    for k in sizes:
        for txt in glob.glob(os.path.join(raw, "salt-K%d" % k, "salt-K%d-*.txt" % k)):
            if not txt.endswith(("-samples.txt", "-stderr.log")):
                first = open(txt).readline()
                if first.startswith("salt"):
                    salt_version = first.split("|")[0].strip()
    note = open(os.path.join(raw, "salt-unavailable.txt")).read().strip() if os.path.exists(
        os.path.join(raw, "salt-unavailable.txt")) else None
    out.append("- peer: %s" % (salt_version or note or "Salt did not produce results"))
    out.append("  (Salt's own `bench.sh K` run right after ours for each K, same machine, same sitting;"
               " Salt's *polled* rows poll with `salt-run`, ours with `func job_status --wait`)")
elif peer == "scale":
    out.append("- scale run (`make bench-scale`): real funcd processes on 127.0.0.1, one certmaster")
else:
    out.append("- peer: none (`make bench-salt` adds Salt side by side)")
out.append("")

one = load(os.path.join(raw, "one.tsv"))
if one:
    out.append("## One minion")
    out.append("")
    out.append("| | calls/s |")
    out.append("|---|---:|")
    for label, metric in ONE:
        out.append("| %s | %s |" % (label, fmt(median(one, metric), "calls/s")))
    out.append("")
for name in ("pid-max.txt", "scaled-down.txt"):
    if os.path.exists(os.path.join(raw, name)):
        out.append("Scale run: " + open(os.path.join(raw, name)).read().strip())
        out.append("")

targets = []
for k in sizes:
    ours = load(os.path.join(raw, "ours-K%d.tsv" % k))
    salt = {}
    failed = None
    if peer == "salt":
        for tsv in glob.glob(os.path.join(raw, "salt-K%d" % k, "salt-K%d-*.tsv" % k)):
            salt = load(tsv)
        add_overhead(salt, k, "d1_sync_batch25_sleep1", "d1_overhead")
        add_overhead(salt, k, "d3_async_batch_complete_polled", "d3_overhead")
        f = os.path.join(raw, "salt-K%d" % k, "failed.txt")
        failed = open(f).read().strip() if os.path.exists(f) else None
    size = max(1, k * 25 // 100)
    out.append("## %d minions" % k)
    out.append("")
    out.append("Batch 25%% of %d = %d at a time; ideal wall time %.0f s (waves × 1 s)." % (k, size, ideal_ms(k) / 1000))
    if failed:
        out.append("")
        out.append("Salt: %s" % failed)
    out.append("")
    if peer == "salt":
        out.append("| metric | unit | ours | Salt | ours ÷ Salt |")
        out.append("|---|---|---:|---:|---:|")
    else:
        out.append("| metric | unit | ours |")
        out.append("|---|---|---:|")
    for label, mine, theirs, unit in ROWS:
        if peer == "salt":
            out.append("| %s | %s | %s | %s | %s |" % (label, unit, cell(ours, mine, unit), cell(salt, theirs, unit),
                                                       ratio(median(ours, mine), median(salt, theirs), unit)))
        else:
            out.append("| %s | %s | %s |" % (label, unit, cell(ours, mine, unit)))
    out.append("")

    def target(name, value, goal, ok, metric="sync_call_test_ping"):
        verdict = "met" if ok else "**missed**"
        if ours.get(metric, ([], 0, ""))[1]:
            verdict = "**runs failed**"
        targets.append("| %d | %s | %s | %s | %s |" % (k, name, value, goal, verdict))

    sp, ss = median(ours, "sync_call_test_ping"), median(salt, "a_sync_test_ping")
    if sp is not None and ss:
        target("sync ping vs Salt", "%.0f× faster" % (ss / sp), "≥ 20×", ss / sp >= 20)
    for name, metric, goal in (("async → job id", "async_to_job_id", 10), ("finished-job lookup", "lookup_finished_job", 10)):
        v = median(ours, metric)
        if v is not None:
            target(name, "%.1f ms" % v, "≤ %d ms" % goal, v <= goal, metric)
    # The scale issue's goals: batch overhead ≤ 2 % up to K=200 and ≤ 5 %
    # at K=1000; async collapse ≤ 3 s at 1,000 and ≤ 30 s at 10,000; sync
    # ping ≤ 10 s and func's peak RSS ≤ 64 MiB at 10,000; overlord CPU per
    # host for a sync ping ≤ 100 µs.
    allowed = 2 if k <= 200 else 5
    for name, metric in (("sync batch overhead", "sync_batch25_overhead"), ("async batch overhead", "async_batch25_overhead")):
        v = median(ours, metric)
        if v is not None:
            target(name, "%.1f %%" % v, "≤ %d %%" % allowed, v <= allowed, metric)
    v = median(ours, "warm_sync_batch25_overhead")
    if v is not None:
        target("sync batch overhead, through func-api (warm)", "%.1f %%" % v, "≤ %d %%" % allowed, v <= allowed,
               "warm_sync_batch25_overhead")
    v = median(ours, "cpu_per_host_sync_ping")
    if v is not None:
        target("overlord CPU per host, sync ping", "%.0f µs" % v, "≤ 100 µs", v <= 100, "cpu_per_host_sync_ping")
    v = median(ours, "api_cpu_per_host_sync_ping")
    if v is not None:
        target("func-api CPU per host, sync ping (warm)", "%.0f µs" % v, "≤ 100 µs", v <= 100,
               "api_cpu_per_host_sync_ping")
    v = median(ours, "warm_func_cpu_per_host_ping")
    if v is not None and k >= 200:
        goal = 150 if k < 1000 else 40
        target("warm func CPU per host, sync ping (func + func-api)", "%.0f µs" % v, "≤ %d µs" % goal, v <= goal,
               "warm_func_cpu_per_host_ping")
    v = median(ours, "async_until_finished")
    if v is not None and k >= 1000:
        goal = 3 if k < 10000 else 30
        target("async dispatch + collapse", "%.2f s" % (v / 1000), "≤ %d s" % goal, v <= goal * 1000,
               "async_until_finished")
    v = median(ours, "sync_ping")
    if v is not None and k >= 10000:
        target("sync ping", "%.2f s" % (v / 1000), "≤ 10 s", v <= 10000, "sync_ping")
    peak = max(ours.get("func_peak_rss", ([], 0, ""))[0] or [None], key=lambda x: x or 0)
    if peak is not None and k >= 10000:
        target("func peak RSS", "%.1f MiB" % peak, "≤ 64 MiB", peak <= 64, "func_peak_rss")
    v = median(ours, "idle_one_minion_rss")
    if v is not None:
        target("minion idle RSS", "%.1f MiB" % v, "≤ 10 MiB", v <= 10, "idle_one_minion_rss")

v = median(one, "keepalive_pings")
if v is not None:
    targets.append("| 1 | pings/s over keep-alive | %.0f/s | ≥ 5,000/s | %s |" % (v, "met" if v >= 5000 else "**missed**"))
out.append("## Targets")
out.append("")
out.append("| K | target | ours | goal | |")
out.append("|---:|---|---:|---|---|")
out.extend(targets)
out.append("")
store_md = os.path.join(raw, "store.md")
if os.path.exists(store_md):
    out.append(open(store_md).read())
once_md = os.path.join(raw, "once.md")
if os.path.exists(once_md):
    out.append(open(once_md).read())
if peer != "scale":
    out.append("The 1,000-minion scale run is `make bench-scale` (its own report).")

text = "\n".join(out) + "\n"
print(text)
RESULTS = os.environ.get("BENCH_RESULTS", "bench/results")
os.makedirs(RESULTS, exist_ok=True)
suffix = {"salt": "-salt", "scale": "-scale"}.get(peer, "")
name = "%s%s.md" % (stamp.replace("scale-", ""), suffix)
latest = os.path.join(RESULTS, "LATEST%s.md" % suffix)
for path in (os.path.join(RESULTS, name), latest, os.path.join(raw, "report.md")):
    with open(path, "w") as f:
        f.write(text)
print("written: %s" % os.path.join(RESULTS, name))
