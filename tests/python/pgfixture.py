"""A private PostgreSQL server for the shared-store tests: initdb in a temp
dir, listening only on a Unix socket in that dir (no TCP port), trust
authentication for its one superuser `func`; run as the `postgres` user
when the tests run as root (the server refuses root). Stopped (pg_ctl stop,
then by pid) and removed by close(). Debian's postgresql package is
installed by `make deps`."""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time


def bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL's server is not installed (make deps installs postgresql)")
    return os.path.dirname(found[-1])


class Postgres:
    def __init__(self):
        self.bin = bindir()
        self.dir = tempfile.mkdtemp(prefix="func-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        os.mkdir(self.sock)
        self.as_user = []
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            for p in (self.dir, self.sock):
                os.chown(p, pw.pw_uid, pw.pw_gid)
            self.as_user = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups", "--"]
        self._run("initdb", "-D", self.data, "-U", "func", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
        self.log = os.path.join(self.dir, "server.log")
        self.start()
        self.url = "postgresql:///postgres?host=%s&user=func" % self.sock

    def _run(self, tool, *args):
        subprocess.run(self.as_user + [os.path.join(self.bin, tool)] + list(args), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.dir)

    def start(self):
        opts = "-k %s -c listen_addresses='' -c fsync=off -c max_connections=200" % self.sock
        self._run("pg_ctl", "-D", self.data, "-o", opts, "-l", self.log, "-w", "-t", "60", "start")

    def stop(self):
        subprocess.run(self.as_user + [os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)

    def pid(self):
        try:
            return int(open(os.path.join(self.data, "postmaster.pid")).readline())
        except (OSError, ValueError):
            return None

    def psql(self, sql):
        out = subprocess.run(["psql", "-X", "-A", "-t", "-h", self.sock, "-U", "func", "-d", "postgres", "-c", sql],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def close(self):
        self.stop()
        pid = self.pid()
        if pid:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
