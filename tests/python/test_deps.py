"""`make deps` run by a user who is not root, with test tools missing: a
clear message naming the missing Debian packages and how to install them
(no apt error), exit status 1; `make demo` needs none of them."""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


class DepsTest(unittest.TestCase):
    def test_a_user_without_root_is_told_what_to_install(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to act as another user (setpriv)")
        bindir = tempfile.mkdtemp(prefix="func-deps-")
        try:
            os.chmod(bindir, 0o755)
            # Only the toolchain (a stand-in: root's rustup is not the
            # other user's to run) and what make's recipe itself runs.
            for tool in ("cargo", "python3"):
                with open(os.path.join(bindir, tool), "w") as f:
                    f.write("#!/bin/sh\nexit 0\n")
                os.chmod(os.path.join(bindir, tool), 0o755)
            for tool in ("perl", "ls", "id", "sh", "bash"):
                path = shutil.which(tool, path="/usr/bin:/bin")
                if path:
                    os.symlink(path, os.path.join(bindir, tool))
            env = {"PATH": bindir, "HOME": "/nonexistent", "LANG": "C.UTF-8"}
            p = subprocess.run([shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                shutil.which("make"), "-s", "-C", REPO, "deps", "PYTHON=python3"],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("missing", p.stdout)
            self.assertIn("sudo apt-get install", p.stdout)
            for package in ("lintian", "chromium", "openssl"):
                self.assertIn(package, p.stdout)
            self.assertNotIn("Permission denied", p.stdout + p.stderr)
            self.assertNotIn("apt-get update", p.stdout + p.stderr)
        finally:
            shutil.rmtree(bindir, ignore_errors=True)
