"""Func's Python overlord API (python/, `func.overlord.client`) against a
real fleet: Func's own test/async_test.py flow ported to Python 3 (slow,
quick, raising and unknown methods run async and polled with job_status until
finished; the sync call), noglobs, list_minions, typed results, an
unreachable host as a REMOTE_ERROR value, and `pip install ./python`."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

from funcfixture import Fleet, binary, install_dropin

from func.overlord.client import Client, FuncError, Overlord
import func.jobthing as jobthing
import func.utils

TEST_SLEEP = 2
EXTRA_SLEEP = 30


TYPED_MODULE = """#!/bin/sh
case "$1" in
describe) echo '{"version": "1", "methods": {"get": {}}}' ;;
call) echo '{"result": {"b": {"__base64__": "AAEC/w=="}, "d": {"__datetime__": "20261123T21:05:00"}}}' ;;
esac
"""


def install_typed_module(root):
    """A drop-in on m1 answering base64 and dateTime values."""
    install_dropin(root, "typed", TYPED_MODULE)


def setUpModule():
    global FLEET
    FLEET = Fleet()
    FLEET.start_minion("m1", prepare=install_typed_module)
    FLEET.start_minion("m2")
    # m3 is signed but never answers: its address is a closed port.
    FLEET.enroll("m3")
    certs = os.path.join(FLEET.ca_root, "var/lib/certmaster/certmaster/certs")
    with open(os.path.join(certs, "m3.addr"), "w") as f:
        f.write("127.0.0.1:1\n")
    os.environ["FUNC_BINARY"] = binary("func")
    os.environ["FUNC_ROOT"] = FLEET.ca_root


def tearDownModule():
    FLEET.close()


class AsyncTest(unittest.TestCase):
    """test/async_test.py: each kind of command async, polled until done."""

    def run_async(self, call):
        client = Client("m*", nforks=10, **{"async": True})
        old = time.time()
        job_id = call(client)
        self.assertIsInstance(job_id, str)
        seen = []
        while True:
            code, results = client.job_status(job_id)
            seen.append(code)
            if time.time() > old + TEST_SLEEP + EXTRA_SLEEP:
                self.fail("time expired: %s %s" % (seen, results))
            if code in (jobthing.JOB_ID_FINISHED, jobthing.JOB_ID_ASYNC_FINISHED):
                return results
            self.assertIn(code, (jobthing.JOB_ID_RUNNING, jobthing.JOB_ID_ASYNC_PARTIAL), results)
            time.sleep(0.25)

    def test_slow_command(self):
        results = self.run_async(lambda c: c.test.sleep(TEST_SLEEP))
        self.assertEqual(sorted(results), ["m1", "m2", "m3"])
        self.assertTrue(all(isinstance(results[h], float) for h in ("m1", "m2")), results)
        self.assertTrue(func.utils.is_error(results["m3"]), "unreachable: a REMOTE_ERROR value")

    def test_quick_command(self):
        results = self.run_async(lambda c: c.test.add(1, 2))
        self.assertEqual((results["m1"], results["m2"]), (3, 3))

    def test_command_that_raises(self):
        results = self.run_async(lambda c: c.test.explode())
        self.assertEqual(results["m1"][:2], [func.utils.REMOTE_ERROR, "exceptions.Exception"])

    def test_command_that_does_not_exist(self):
        results = self.run_async(lambda c: c.test.does_not_exist(1, 2))
        self.assertTrue(func.utils.is_error(results["m1"]), results)

    def test_non_async_call(self):
        results = Client("m*", nforks=10, async_mode=False).test.sleep(1)
        self.assertTrue(isinstance(results["m1"], float) and isinstance(results["m2"], float), results)
        self.assertTrue(func.utils.is_error(results["m3"]), results)


class ApiTest(unittest.TestCase):
    def test_results_keep_their_types(self):
        value = {"i": 7, "f": 1.5, "b": True, "s": "é✓", "l": [1, "two", None], "d": {"k": []}, "n": None}
        self.assertEqual(Overlord("m1").test.echo(value), {"m1": value})
        self.assertEqual(Overlord("m1").run("test", "add", [2, 3]), {"m1": 5})

    def test_base64_and_datetime_results_keep_their_types(self):
        import datetime
        self.assertEqual(Overlord("m1", noglobs=True).typed.get(),
                         {"b": b"\x00\x01\x02\xff", "d": datetime.datetime(2026, 11, 23, 21, 5)})

    def test_noglobs_gives_the_one_result(self):
        self.assertEqual(Overlord("m1", noglobs=True).test.add(1, 2), 3)

    def test_nothing_matching_raises_as_funcs_client_did(self):
        from func.CommonErrors import Func_Client_Exception
        with self.assertRaises(Func_Client_Exception) as raised:
            Overlord("nosuch*")
        self.assertIn("Can't find any minions matching \"nosuch*\"", str(raised.exception))
        self.assertFalse(func.overlord.client.is_minion("nosuch*"))
        self.assertTrue(func.overlord.client.is_minion("m*"))
        m = func.overlord.client.Minions("m[12]")
        self.assertEqual(m.get_all_hosts(), ["m1", "m2"])
        self.assertEqual(m.get_urls(), ["https://m1:51234", "https://m2:51234"])

    def test_funcs_other_names(self):
        ov = Overlord("m*", exclude_spec="m3")
        self.assertEqual(sorted(ov.test.ping()), ["m1", "m2"], "exclude_spec works")
        self.assertFalse(Overlord("m1", **{"async": "false"}).async_mode, "smart_bool")
        self.assertTrue(Overlord("m1", **{"async": "yes"}).async_mode)
        self.assertEqual(Overlord("m1").job_status("*-test-ping-1.0"), (jobthing.JOB_ID_LOST_IN_SPACE, 0))
        self.assertEqual(jobthing.JOB_ID_REMOTE_ERROR, 4)
        # Typed arguments: bytes, Binary and datetime arrive as themselves.
        import datetime
        import xmlrpc.client
        when = datetime.datetime(2026, 11, 26, 4, 5, 6)
        echoed = Overlord("m1", noglobs=True).test.echo([b"\x00\xff", xmlrpc.client.Binary(b"ab"), when])
        self.assertEqual(echoed, [b"\x00\xff", b"ab", when])
        # A misspelt API method fails at once, with a suggestion.
        with self.assertRaises(AttributeError) as raised:
            Overlord("m1").job_stauts("x")
        self.assertIn("did you mean job_status", str(raised.exception))
        with self.assertRaises(AttributeError):
            getattr(Overlord("m1"), "not-a-module")
        # local.utils.async_poll and open_job_ids, as funcweb used them.
        job = Overlord("m1", async_mode=True).test.add(1, 2)
        seen = []
        self.assertEqual(Overlord("m1").local.utils.async_poll(job, seen.append), {"m1": 3})
        self.assertEqual(Overlord("m1").open_job_ids()[job], jobthing.JOB_ID_FINISHED)
        self.assertEqual(jobthing.get_open_ids()[job], jobthing.JOB_ID_FINISHED)
        # local.copyfile.send
        src = os.path.join(FLEET.dir, "sent.txt")
        with open(src, "w") as f:
            f.write("hello\n")
        result = Overlord("m1").local.copyfile.send(src, "/tmp/sent.txt")
        self.assertFalse(func.utils.is_error(result["m1"]), result)
        with open(os.path.join(FLEET.dir, "m1", "tmp", "sent.txt")) as f:
            self.assertEqual(f.read(), "hello\n")

    def test_list_minions(self):
        self.assertEqual(Overlord("*").list_minions(), ["m1", "m2", "m3"])

    def test_a_remote_failure_is_a_value_and_a_bad_call_an_exception(self):
        result = Overlord("m1").command.run("exit 3")
        self.assertEqual(result["m1"][0], 3)
        with self.assertRaises(FuncError):
            Overlord("m1").test.echo(object())
        with self.assertRaises(FuncError):
            Overlord("m1", root="/nonexistent-func-root").test.ping()

    def test_jobthing_codes(self):
        self.assertEqual((jobthing.JOB_ID_RUNNING, jobthing.JOB_ID_FINISHED, jobthing.JOB_ID_LOST_IN_SPACE,
                          jobthing.JOB_ID_PARTIAL, jobthing.JOB_ID_ASYNC_PARTIAL), (0, 1, 2, 3, 3))
        self.assertEqual(Overlord("*").job_status("*-nope-nope-1.0")[0], jobthing.JOB_ID_LOST_IN_SPACE)


class PipInstallTest(unittest.TestCase):
    def test_pip_installs_the_package(self):
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
        with tempfile.TemporaryDirectory(prefix="func-pip-") as target:
            done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                                   "--no-deps", "--target", target, src],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(done.returncode, 0, done.stdout.decode())
            check = subprocess.run([sys.executable, "-c",
                                    "import func.overlord.client as c, func.jobthing, func.utils; print(c.Overlord.__name__)"],
                                   cwd=target, env=dict(os.environ, PYTHONPATH=target),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(check.stdout.decode().strip(), "Overlord", check.stdout.decode())


if __name__ == "__main__":
    unittest.main()
