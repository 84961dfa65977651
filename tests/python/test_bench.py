"""Short runs of `make bench`: the whole of scripts/bench.sh on the debug
build with tiny sizes, and its func-api part (scripts/bench_api.py) on two
minions with func-api ending idle connections after 1 s. A benchmark that
breaks (as it did when func-api began closing idle connections) is a red
test. They measure nothing here; they must run through, and every func-api
sample must be a success."""

import os
import subprocess
import sys
import tempfile
import unittest

from funcfixture import Fleet

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


class ShortBenchTest(unittest.TestCase):
    def test_bench_api_runs_through_idle_closes(self):
        fleet = Fleet()
        try:
            for name in ("m1", "m2"):
                fleet.start_minion(name)
            conf = os.path.join(fleet.ca_root, "etc/func/overlord.conf")
            os.makedirs(os.path.dirname(conf), exist_ok=True)
            with open(conf, "a") as f:
                f.write("[api]\nidle_timeout = 1\n")
            out = os.path.join(tempfile.mkdtemp(dir=fleet.dir), "api.tsv")
            env = dict(os.environ, RUNS="1", BENCH_API_CALLS="5", BENCH_API_SECONDS="1.5",
                       BENCH_API_EVENTS="40", BENCH_API_JOBS="2000", BENCH_WARM_RUNS="5")
            p = subprocess.run([sys.executable, os.path.join(REPO, "scripts/bench_api.py"),
                                os.path.join(REPO, "target/debug"), fleet.ca_root, "2", fleet.dir, out],
                               capture_output=True, text=True, timeout=600, env=env)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            with open(out) as f:
                rows = [line.rstrip("\n").split("\t") for line in f]
            self.assertTrue(rows, "no samples")
            for metric, value, unit, ok, note in rows:
                self.assertEqual(ok, "1", (metric, value, unit, note))
            metrics = {r[0] for r in rows}
            # ok=1 for the warm func's rows: the ping and the batch were handed to func-api.
            for m in ("api_sync_ping", "api_calls_per_s_8conn", "api_events_live_per_s", "api_jobs_page_100k",
                      "warm_func_cpu_per_host_ping", "warm_sync_batch25_overhead"):
                self.assertIn(m, metrics)
        finally:
            fleet.close()


class ShortMakeBenchTest(unittest.TestCase):
    def test_bench_scripts_take_their_binaries_from_bench_bin(self):
        # A clean clone has no release build: a bench script that names
        # target/release itself passes here (where one exists) and fails in CI.
        scripts = os.path.join(REPO, "scripts")
        for name in sorted(os.listdir(scripts)):
            if not name.startswith(("bench", "fleet")):
                continue
            with open(os.path.join(scripts, name)) as f:
                for n, line in enumerate(f, 1):
                    rest = line.replace("${BENCH_BIN:-target/release}", "")
                    self.assertNotIn("target/release", rest, "%s:%d names the release build" % (name, n))

    def test_make_bench_runs_through_in_a_short_mode(self):
        results = tempfile.mkdtemp(prefix="func-py-bench-")
        try:
            env = dict(os.environ, BENCH_BIN="target/debug", BENCH_RESULTS=results, BENCH_SIZES="2", RUNS="1",
                       BENCH_CALLS="200", BENCH_PY_CALLS="50", BENCH_SETTLE="0", BENCH_IDLE_SPAN="0.5",
                       STORE_SIZES="100", SEAL_ROUNDS="5", BENCH_API_CALLS="5", BENCH_API_SECONDS="0.5",
                       BENCH_WARM_RUNS="5",
                       BENCH_API_EVENTS="40", BENCH_API_JOBS="1000", SCHED_N="20", SCHED_RUNS="3",
                       SCHED_IDLE_SECS="0.5")
            p = subprocess.run(["bash", "scripts/bench.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=900)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
            reports = [f for f in os.listdir(results) if f.endswith(".md") and f != "LATEST.md"]
            self.assertEqual(len(reports), 1, os.listdir(results))
            with open(os.path.join(results, reports[0])) as f:
                report = f.read()
            for part in ("## One minion", "## 2 minions", "func-api", "Job store", "Signed job requests",
                         "### Schedules"):
                self.assertIn(part, report)
            self.assertNotIn("bench failed", report + p.stdout)
        finally:
            import shutil
            shutil.rmtree(results, ignore_errors=True)
