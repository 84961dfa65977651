"""A short run of `make bench`'s func-api benchmark (scripts/bench_api.py)
on a fleet of two minions, with func-api ending idle connections after 1 s:
a benchmark that breaks (as it did when func-api began closing idle
connections) is a red test. It measures nothing here; it must run through
and every sample must be a success."""

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
                       BENCH_API_EVENTS="40", BENCH_API_JOBS="2000")
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
            for m in ("api_sync_ping", "api_calls_per_s_8conn", "api_events_live_per_s", "api_jobs_page_100k"):
                self.assertIn(m, metrics)
        finally:
            fleet.close()
