"""Func programs, run unchanged but for Python 3 syntax (DESIGN §12): our
own programs in the shape of Func's `examples/service_checker.py`,
`examples/drive_checker.py`, `test/async_test.py` (its four tests and the
non-async call), `func/overlord/inventory.py`'s flow, and funcweb's job
view (`open_job_ids()` then `job_status` of each). Each runs as a script
in its own Python process against a real fleet, through the installed
package's import paths, as a user's program would."""

import json
import os
import subprocess
import sys
import textwrap
import unittest

from funcfixture import Fleet, binary, install_dropin

HERE = os.path.dirname(os.path.abspath(__file__))

# Func's smart module answered (rc, output lines) from smartctl.
SMART_MODULE = """#!/bin/sh
case "$1" in
describe) echo '{"version": "1", "methods": {"info": {}}}' ;;
call) echo '{"result": [0, ["smartctl 7.3", "", "=== START OF READ SMART DATA SECTION ===", "SMART overall-health self-assessment test result: PASSED"]]}' ;;
esac
"""


def smart_module(root):
    install_dropin(root, "smart", SMART_MODULE)


def setUpModule():
    global FLEET
    FLEET = Fleet()
    for name in ("m1", "m2"):
        FLEET.start_minion(name, prepare=smart_module)


def tearDownModule():
    FLEET.close()


def program(source, *args):
    """Runs a Func program; (exit status, stdout, stderr)."""
    env = dict(os.environ, FUNC_BINARY=binary("func"), FUNC_ROOT=FLEET.ca_root,
               PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(source)] + list(args), capture_output=True,
                       text=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


class FuncProgramsTest(unittest.TestCase):
    def test_service_checker(self):
        code, out, err = program("""
            import sys
            import func.overlord.client as fc

            if __name__ == '__main__':
                try:
                    service = sys.argv[1]
                except Exception as ex:
                    print("Usage: service_checker.py SERVICE")
                    sys.exit(1)
                info = fc.Overlord("*").service.status(service)
                for (host, details) in info.items():
                    status = "OFF"
                    if details == 0:
                        status = "ON"
                    elif details == 3:
                        status = "OFF"
                    else:
                        status = "ERR"
                    print("%s: %s %s" % (host, service, status))
            """, "nosuchservice")
        self.assertEqual(code, 0, err)
        lines = sorted(out.splitlines())
        self.assertEqual([line.split(":")[0] for line in lines], ["m1", "m2"], out)
        self.assertTrue(all(line.split()[-1] in ("ON", "OFF", "ERR") for line in lines), out)

    def test_drive_checker(self):
        code, out, err = program("""
            import func.overlord.client as fc

            info = fc.Client("*").smart.info()
            failures = 0
            for (host, details) in info.items():
                if type(details) != list:
                    print("%s had an error : %s" % (host, str(details)))
                    break
                (rc, list_of_output) = details
                if rc != 0:
                    print("============================================")
                    print("Host %s may have problems" % host)
                    print("\\n".join(list_of_output[3:]))
                    failures = failures + 1
            print("\\n%s systems reported problems" % failures)
            """)
        self.assertEqual(code, 0, err)
        self.assertIn("0 systems reported problems", out)

    def test_async_test_all_four_and_the_non_async_call(self):
        code, out, err = program("""
            from func.overlord.client import Client
            import func.jobthing as jobthing
            import time

            TEST_SLEEP = 2
            EXTRA_SLEEP = 60
            SLOW_COMMAND, QUICK_COMMAND, RAISES_EXCEPTION_COMMAND, FAKE_COMMAND = 1, 2, 3, 4
            TESTS = [SLOW_COMMAND, QUICK_COMMAND, RAISES_EXCEPTION_COMMAND, FAKE_COMMAND]

            def __tester(is_async, test):
                if is_async:
                    client = Client("*", nforks=10, **{"async": True})
                    oldtime = time.time()
                    job_id = -411
                    if test == SLOW_COMMAND:
                        job_id = client.test.sleep(TEST_SLEEP)
                    elif test == QUICK_COMMAND:
                        job_id = client.test.add(1, 2)
                    elif test == RAISES_EXCEPTION_COMMAND:
                        job_id = client.test.explode()
                    elif test == FAKE_COMMAND:
                        job_id = client.test.does_not_exist(1, 2)
                    print("job_id = %s" % job_id)
                    while True:
                        (code, results) = client.job_status(job_id)
                        nowtime = time.time()
                        delta = int(nowtime - oldtime)
                        if nowtime > oldtime + TEST_SLEEP + EXTRA_SLEEP:
                            print("time expired, test failed")
                            return
                        if code == jobthing.JOB_ID_RUNNING:
                            print("task is still running, %s elapsed ..." % delta)
                        elif code == jobthing.JOB_ID_ASYNC_PARTIAL:
                            print("task reports partial status, %s elapsed, results = %s" % (delta, results))
                        elif code == jobthing.JOB_ID_FINISHED:
                            print("(non-async) task complete %d, results = %s" % (test, sorted(results.items())))
                            return
                        elif code == jobthing.JOB_ID_ASYNC_FINISHED:
                            print("(async) task complete, %s elapsed, results = %s" % (delta, results))
                            return
                        else:
                            print("job not found: %s, %s elapased" % (code, delta))
                        time.sleep(0.2)
                else:
                    print(sorted(Client("*", nforks=10, **{"async": False}).test.sleep(1).items()))

            for t in TESTS:
                __tester(True, t)
            print("Testing non-async call")
            __tester(False, -1)
            """)
        self.assertEqual(code, 0, err)
        self.assertNotIn("test failed", out)
        self.assertNotIn("job not found", out)
        done = [line for line in out.splitlines() if line.startswith("(non-async) task complete")]
        self.assertEqual(len(done), 4, out)
        self.assertIn("task complete 2, results = [('m1', 3), ('m2', 3)]", out)
        self.assertIn("REMOTE_ERROR", done[2], "explode is an error value")
        self.assertIn("REMOTE_ERROR", done[3], "a method that does not exist is an error value")
        self.assertIn("Testing non-async call", out)

    def test_inventory_flow(self):
        tree = os.path.join(FLEET.dir, "py-inventory")
        code, out, err = program("""
            import os, pprint, sys
            import func.overlord.client as func_client

            tree = sys.argv[1]
            filtered_module_list = ["hardware", "fact"]
            filtered_function_list = ["info", "items"]
            host_modules = func_client.Client("*").system.list_modules()
            for (host, modules) in host_modules.items():
                if type(modules) != list:
                    print("-- connection refused: %s" % host)
                    continue
                for module_name in modules:
                    if module_name in filtered_module_list:
                        host_module = getattr(func_client.Client(host, noglobs=True), module_name)
                        for remote_method in host_module.list_methods():
                            if remote_method in filtered_function_list:
                                results = getattr(host_module, remote_method)()
                                dirname = os.path.join(tree, host, module_name)
                                os.makedirs(dirname, exist_ok=True)
                                with open(os.path.join(dirname, remote_method), "w") as f:
                                    f.write(pprint.pformat(results))
            print("done")
            """, tree)
        self.assertEqual(code, 0, err)
        for host in ("m1", "m2"):
            for path in (("hardware", "info"), ("fact", "items")):
                self.assertTrue(os.path.exists(os.path.join(tree, host, *path)), (host, path))

    def test_funcweb_job_view(self):
        code, out, err = program("""
            import json
            from func.overlord.client import Overlord
            import func.jobthing as jobthing

            ov = Overlord("*", async_mode=True)
            job = ov.test.add(20, 22)
            results = ov.local.utils.async_poll(job, None)
            view = {}
            for job_id, code in Overlord("*").open_job_ids().items():
                view[job_id] = (code, Overlord("*").job_status(job_id)[0])
            print(json.dumps({"job": job, "results": results, "view": view}))
            """)
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["results"], {"m1": 42, "m2": 42})
        self.assertEqual(doc["view"][doc["job"]], [1, 1])


if __name__ == "__main__":
    unittest.main()
