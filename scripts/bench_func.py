"""Wall time and peak RSS of `func` commands against a running fleet.
Usage: bench_func.py FUNC_BIN ROOT N_MINIONS
Peak RSS is the largest single process among func and its workers
(RUSAGE_CHILDREN of a fresh helper process), median of 3 runs."""

import os
import resource
import statistics
import subprocess
import sys
import time

func, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
probe = ("import resource,subprocess,sys,time\n"
         "t=time.perf_counter(); r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL)\n"
         "print(time.perf_counter()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")
cores = os.cpu_count()
for label, extra in (("--forks 1", ["--forks", "1"]), ("default forks (%d)" % cores, [])):
    for cmd in (["ping"], ["call", "test", "add", "1", "2"]):
        walls, rss, rcs = [], [], set()
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", probe, func, "--root", root] + extra + ["*"] + cmd,
                                 stdout=subprocess.PIPE, check=True).stdout.split()
            walls.append(float(out[0]))
            rss.append(int(out[1]))
            rcs.add(int(out[2]))
        print("%3d minions  func '*' %-22s %-18s wall %6.3f s  peak RSS %5.1f MiB  exit %s"
              % (n, " ".join(cmd), label, statistics.median(walls), statistics.median(rss) / 1024, sorted(rcs)))
