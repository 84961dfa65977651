"""Drop-in modules seen from Python's own xmlrpc.client: the shipped examples
(Python and POSIX shell) installed into a running minion without a restart,
called like built-ins, and every XML-RPC type Python can send going through
the Python module as JSON and coming back unchanged."""

import datetime
import os
import shutil
import time
import unittest
import xmlrpc.client

from funcfixture import Fleet, is_error

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dist", "modules")


class DropInModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.root, cls.port = cls.fleet.start_minion("m1")
        cls.s = cls.fleet.proxy(cls.port)
        # Installed after funcd started, as an administrator would.
        modules = os.path.join(cls.root, "etc", "func", "modules.d")
        os.makedirs(modules, mode=0o755, exist_ok=True)
        for name in ("example_py", "example_sh"):
            tmp = os.path.join(modules, "." + name)
            shutil.copyfile(os.path.join(EXAMPLES, name), tmp)
            os.chmod(tmp, 0o755)
            os.rename(tmp, os.path.join(modules, name))

    @classmethod
    def tearDownClass(cls):
        cls.s("close")()
        cls.fleet.close()

    def test_examples_are_listed_and_called_like_built_ins(self):
        self.assertIn("example_py", self.s.system.list_modules())
        self.assertIn("example_sh.kernel", self.s.system.listMethods())
        self.assertEqual(self.s.example_py.hello("python"), "hello, python (from overlord)")
        self.assertTrue(self.s.example_sh.kernel().startswith("Linux"))
        self.assertIsInstance(self.s.example_sh.uptime(), float)
        self.assertEqual(len(self.s.example_sh.load()), 3)
        self.assertEqual(self.s.example_py.module_version(), "1.0")
        args = self.s.example_py.get_method_args()
        self.assertEqual(args["disk_usage"]["args"]["path"]["type"], "string")
        usage = self.s.example_py.disk_usage("/")
        self.assertGreater(usage["total"], 2 ** 31, "an i8 arrives as a Python int")
        self.assertEqual(self.s.example_py.encode("hi"), xmlrpc.client.Binary(b"hi"))

    def test_every_type_round_trips_through_a_python_module(self):
        values = [
            1, -2147483648, 2147483647, 123.456, 1.5e300, 0.1, True, False,
            "caneatcheese", "tab\t<&>\"' unicode é✓ 漢字 \\", "", "  padded  ",
            xmlrpc.client.Binary(b"348dshke354ts0d9urgk\x00\xff" * 20), xmlrpc.client.Binary(b""),
            xmlrpc.client.DateTime(datetime.datetime(1974, 1, 5, 11, 59, 0)),
            [1, 2, "three"], {"one": 1, "many": [8, {"lots": None}]}, [], {}, None,
        ]
        for v in values:
            with self.subTest(v=repr(v)[:40]):
                self.assertEqual(self.s.example_py.echo(v), [v])
        self.assertEqual(self.s.example_py.echo(*values), values)

    def test_a_module_error_is_a_remote_error(self):
        r = self.s.example_py.fail("no such widget")
        self.assertTrue(is_error(r))
        self.assertEqual(r[1:3], ["ValueError", "no such widget"])
        self.assertIn("Traceback", r[3])

    def test_async_through_the_job_runner(self):
        job = getattr(self.s, "async").example_py.hello("later")
        deadline = time.time() + 60
        while time.time() < deadline:
            code, result = self.s.jobs.job_status(job)
            if code != 0:
                break
            time.sleep(0.05)
        self.assertEqual((code, result), (1, "hello, later (from overlord)"))


if __name__ == "__main__":
    unittest.main()
