"""The job store side by side: the embedded redb file and PostgreSQL (a
private server started here, as the tests do), each holding 100 and then
100,000 jobs, on a running local fleet. Per store and size, RUNS samples
(default 5) of the wall time of one `func` process:

- `call --async --nopoll test ping` → its JOB_ID;
- `job_status ID` of a finished job;
- `jobs list --limit 50`.

Usage: bench_store.py BIN_DIR CERTMASTER_ROOT OUT_MD
Writes a Markdown table to OUT_MD (bench_report.py appends it)."""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from pgfixture import Postgres  # noqa: E402

bin_dir, cm_root, out_md = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS = int(os.environ.get("RUNS", "5"))
# Jobs stored before measuring (STORE_SIZES="100 100000" by default).
SIZES = [int(n) for n in os.environ.get("STORE_SIZES", "100 100000").split()]
# The fleet's size, for the table's title.
K = os.environ.get("STORE_K", "10")
func = os.path.join(bin_dir, "func")


def timed(args, ok=(0,)):
    t0 = time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True)
    ms = (time.monotonic() - t0) * 1000
    if out.returncode not in ok:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), out.returncode, out.stderr[-500:]))
    return ms, out.stdout


def root_for(work, name, url):
    root = os.path.join(work, name)
    shutil.copytree(os.path.join(cm_root, "etc/pki"), os.path.join(root, "etc/pki"))
    shutil.copytree(os.path.join(cm_root, "var/lib/certmaster"), os.path.join(root, "var/lib/certmaster"))
    if url:
        os.makedirs(os.path.join(root, "etc/func"), exist_ok=True)
        with open(os.path.join(root, "etc/func/overlord.conf"), "w") as f:
            f.write("[store]\nurl = %s\n" % url)
    return root


def measure(root, n):
    subprocess.run([os.path.join(bin_dir, "func-bench-fill"), root, str(n)], check=True, stdout=subprocess.DEVNULL)
    rows = {"async → JOB_ID": [], "finished-job lookup": [], "jobs list --limit 50": [],
            "async test ping → FINISHED (polled)": []}
    for _ in range(RUNS):
        ms, _ = timed([func, "--root", root, "-t", "120", "*", "call", "test", "ping", "--async"])
        rows["async test ping → FINISHED (polled)"].append(ms)
        ms, out = timed([func, "--root", root, "*", "call", "test", "ping", "--async", "--nopoll"])
        rows["async → JOB_ID"].append(ms)
        job = out.split("JOB_ID:")[1].split()[0].strip("'")
        timed([func, "--root", root, "-t", "60", "job_status", job, "--wait"])
        ms, _ = timed([func, "--root", root, "job_status", job])
        rows["finished-job lookup"].append(ms)
        ms, _ = timed([func, "--root", root, "jobs", "list", "--limit", "50"])
        rows["jobs list --limit 50"].append(ms)
    return {k: statistics.median(v) for k, v in rows.items()}


def main():
    work = tempfile.mkdtemp(prefix="func-bench-store-")
    pg = Postgres()
    results = {}
    try:
        for n in SIZES:
            pg.psql("CREATE DATABASE bench_%d" % n)
            url = pg.url.replace("/postgres?", "/bench_%d?" % n)
            for backend, u in (("redb", None), ("PostgreSQL", url)):
                print("== job store: %s with %d jobs" % (backend, n), flush=True)
                results[(backend, n)] = measure(root_for(work, "%s-%d" % (backend.lower(), n), u), n)
    finally:
        pg.close()
        shutil.rmtree(work, ignore_errors=True)
    heads = ["%s, %s jobs" % (b, "{:,}".format(n)) for n in SIZES for b in ("redb", "PostgreSQL")]
    lines = ["## Job store: redb and PostgreSQL (%s minions; ms, median of %d)" % (K, RUNS), "",
             "| metric | %s |" % " | ".join(heads), "|---|" + "---:|" * len(heads)]
    for metric in ("async → JOB_ID", "finished-job lookup", "jobs list --limit 50", "async test ping → FINISHED (polled)"):
        cells = ["%.1f" % results[(b, n)][metric] for n in SIZES for b in ("redb", "PostgreSQL")]
        lines.append("| %s | %s |" % (metric, " | ".join(cells)))
    text = "\n".join(lines) + "\n"
    print(text)
    with open(out_md, "w") as f:
        f.write(text)


main()
