"""Func 0.25's own `func-build-map` (func/overlord/mapper.py's flow, Python
3 syntax only): it asks every minion `overlord.map_minions` and writes what
they answer. funcd answers Func's way: `{}` for a minion with nothing below
it, its map where its root holds one (a relay's host)."""

import json
import os
import subprocess
import sys
import textwrap
import unittest

from funcfixture import Fleet, binary

HERE = os.path.dirname(os.path.abspath(__file__))


class FuncBuildMapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()

        def relay_host(root):
            os.makedirs(os.path.join(root, "var/lib/func"), mode=0o700, exist_ok=True)
            with open(os.path.join(root, "var/lib/func/map"), "w") as f:
                f.write("relayx: {r1: {}, r2: {}}\n")
        try:
            cls.fleet.start_minion("m1")
            cls.fleet.start_minion("m2", prepare=relay_host)
        except Exception:
            cls.fleet.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()

    def test_our_func_build_map_says_when_there_is_no_relay(self):
        p = subprocess.run([binary("func-build-map"), "--root", self.fleet.ca_root, "-v"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no [relays]", p.stderr)

    def test_funcs_mapper_builds_its_map(self):
        tree = os.path.join(self.fleet.dir, "map")
        source = textwrap.dedent("""
            import json, sys
            import func.overlord.client as func_client
            from func import utils

            # func/overlord/mapper.py's build_map, DEFAULT_TREE as an argument.
            minion_hash = func_client.Overlord("*").overlord.map_minions(False)
            for minion in minion_hash.keys():
                if utils.is_error(minion_hash[minion]):
                    minion_hash[minion] = {}
            with open(sys.argv[1], "w") as mapfile:
                mapfile.write(json.dumps(minion_hash, sort_keys=True))
            """)
        env = dict(os.environ, FUNC_BINARY=binary("func"), FUNC_ROOT=self.fleet.ca_root,
                   PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
        p = subprocess.run([sys.executable, "-c", source, tree], capture_output=True, text=True, timeout=120,
                           env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(tree) as f:
            self.assertEqual(json.load(f), {"m1": {}, "m2": {"relayx": {"r1": {}, "r2": {}}}})


if __name__ == "__main__":
    unittest.main()
