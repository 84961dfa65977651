"""func-inventory (Func's program, DESIGN §16) on a real fleet: the tree
TREE/HOST/MODULE/METHOD, a git commit per run that changed something (so
`git log -p` shows what changed on which host), a changed fact between two
runs, a host that is away keeping its last inventory, the formats, and the
files private."""

import json
import os
import stat
import subprocess
import unittest

from funcfixture import Fleet, binary


def role(root, value):
    d = os.path.join(root, "etc/func/facts.d")
    os.makedirs(d, mode=0o700, exist_ok=True)
    for path in (os.path.join(root, "etc/func"), os.path.join(root, "etc")):
        os.chmod(path, 0o755)
    path = os.path.join(d, "role.json")
    with open(path + ".new", "w") as f:
        json.dump({"role": value}, f)
    os.chmod(path + ".new", 0o644)
    os.replace(path + ".new", path)


class InventoryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.roots = {}
        for name, value in (("m1", "web"), ("m2", "db")):
            cls.roots[name], _ = cls.fleet.start_minion(name, prepare=lambda root, v=value: role(root, v))
        cls.tree = os.path.join(cls.fleet.dir, "inventory")

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()

    def inventory(self, *args):
        return subprocess.run([binary("func-inventory"), "--root", self.fleet.ca_root] + list(args),
                              capture_output=True, text=True, timeout=300)

    def git(self, *args):
        return subprocess.run(["git", "-C", self.tree] + list(args), capture_output=True, text=True,
                              check=True).stdout

    def test_runs_commit_what_changed_and_a_host_away_keeps_its_last_inventory(self):
        out = self.inventory("-t", self.tree, "-M", "fact", "-m", "items")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("2 host(s), 2 file(s) written, committed", out.stdout)
        items = os.path.join(self.tree, "m1", "fact", "items")
        with open(items) as f:
            self.assertIn('"role": "web"', f.read())
        self.assertEqual(stat.S_IMODE(os.stat(items).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.tree, "m1")).st_mode), 0o700)
        # Nothing changed: no commit.
        out = self.inventory("-t", self.tree, "-M", "fact", "-m", "items")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("committed", out.stdout)
        self.assertEqual(len(self.git("log", "--oneline").splitlines()), 1)
        # A fact changes: the next run's commit shows it, on that host only.
        role(self.roots["m1"], "api")
        out = self.inventory("-t", self.tree, "-M", "fact", "-m", "items")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("committed", out.stdout)
        diff = self.git("log", "-p", "-1")
        self.assertIn('-"role": "web"', diff)
        self.assertIn('+"role": "api"', diff)
        self.assertIn("m1/fact/items", diff)
        self.assertNotIn("m2/fact/items", diff)
        # m2 goes away: reported, exit 1, its last inventory kept.
        m2_items = os.path.join(self.tree, "m2", "fact", "items")
        with open(m2_items) as f:
            before = f.read()
        self.fleet.procs[1].terminate()
        self.fleet.procs[1].wait(timeout=30)
        out = self.inventory("-t", self.tree, "-M", "fact", "-m", "items")
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("m2: cannot list its methods", out.stderr)
        self.assertIn("its last inventory is kept", out.stderr)
        with open(m2_items) as f:
            self.assertEqual(f.read(), before)
        self.assertTrue(os.path.exists(os.path.join(self.tree, "m2", "fact", "items")))

    def test_a_host_over_its_budget_fails_and_keeps_its_last_inventory(self):
        # Issue 46: a rogue minion made two runs write 191 MiB into the tree
        # and 295 MiB into git; a host's answers and a run's are bounded.
        tree = os.path.join(self.fleet.dir, "budget")
        out = self.inventory("-t", tree, "-M", "fact", "-m", "items,list")
        self.assertEqual(out.returncode, 0, out.stderr)
        items = os.path.join(tree, "m1", "fact", "items")
        size = os.path.getsize(items)
        with open(items) as f:
            before = f.read()
        role(self.roots["m1"], "x" * 4000)  # m1's answer grows past its budget
        try:
            out = self.inventory("-t", tree, "-M", "fact", "-m", "items,list", "--max-host-bytes", str(size + 500))
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn("m1: its answers pass", out.stderr)
            self.assertIn("--max-host-bytes): its last inventory is kept", out.stderr)
            with open(items) as f:
                self.assertEqual(f.read(), before, "nothing of m1 written")
            self.assertEqual(len(subprocess.run(["git", "-C", tree, "log", "--oneline"], capture_output=True,
                                                text=True, check=True).stdout.splitlines()), 1)
            # The run's budget: the hosts that fit are written, the rest fail.
            out = self.inventory("-t", tree, "-M", "fact", "-m", "items", "--max-run-bytes", str(2 * size))
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn("--max-run-bytes): its last inventory is kept", out.stderr)
        finally:
            role(self.roots["m1"], "web")

    def test_a_tree_of_ones_own_keeps_its_files_and_mode_and_a_link_fails_one_host(self):
        # Found by an attack review: an existing directory was made 0700 and
        # everything in it was committed.
        tree = os.path.join(self.fleet.dir, "own")
        os.makedirs(tree)
        os.chmod(tree, 0o755)
        subprocess.run(["git", "-C", tree, "init", "-q"], check=True)
        with open(os.path.join(tree, "notes.txt"), "w") as f:
            f.write("wip\n")
        os.symlink("/tmp", os.path.join(tree, "m2"))  # planted where m2's files go
        out = self.inventory("-t", tree, "-M", "fact", "-m", "items", "-s", "m[12]")
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("m2:", out.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(tree).st_mode), 0o755)
        files = subprocess.run(["git", "-C", tree, "show", "--name-only", "--format=", "HEAD"],
                               capture_output=True, text=True, check=True).stdout.split()
        self.assertEqual(files, ["m1/fact/items"], "only the hosts' files are committed")
        self.assertTrue(os.path.islink(os.path.join(tree, "m2")), "the link was neither followed nor replaced")

    def test_the_default_is_funcs_inventory_and_the_formats(self):
        # Func's default: the modules' `inventory` methods, what stays put
        # (issue 47: `info` wrote process/info, a changed commit every run).
        tree = os.path.join(self.fleet.dir, "json-tree")
        out = self.inventory("-t", tree, "-s", "m1", "--json", "--no-git")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(tree, "m1"))), ["hardware", "service", "system"])
        with open(os.path.join(tree, "m1", "hardware", "inventory")) as f:
            json.load(f)
        self.assertFalse(os.path.exists(os.path.join(tree, "m1", "process")))
        # A method no host has is said, and writes nothing: exit 1.
        out = self.inventory("-t", tree, "-s", "m1", "-m", "bogus", "--no-git")
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("no host has a method bogus", out.stderr)
        self.assertFalse(os.path.exists(os.path.join(tree, ".git")), "--no-git")
        out = self.inventory("-t", tree, "-s", "m1", "--xmlrpc", "--no-git", "-M", "test", "-m", "ping")
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(os.path.join(tree, "m1", "test", "ping")) as f:
            self.assertIn("<methodResponse>", f.read())
        out = self.inventory("-s", "nosuch")
        self.assertEqual(out.returncode, 1)
        self.assertIn("nosuch", out.stderr)
        # Its SPEC is checked as every door's: not huge, nothing unprintable.
        for bad in ("m1\x1b[2J", "m" * 5000):
            out = self.inventory("-s", bad)
            self.assertNotEqual(out.returncode, 0, bad[:20])
            self.assertIn("printable characters", out.stderr)
            self.assertNotIn("\x1b", out.stderr)


if __name__ == "__main__":
    unittest.main()
