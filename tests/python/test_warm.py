"""A warm func (DESIGN §14, issue 49): when a func-api serves the root, every
door that calls minions now — func, func transmit, func-transmit and the
Python API through func — hands the signed request to it, and it calls the
minions over its kept connections. The answers are the same as calling
directly (`--direct`, or no func-api); func-api's audit trail shows the
handoff. A func-api killed mid-call leaves the hosts it had not answered
unreachable, and nothing runs twice; func calls the minions itself when no
func-api answers. Real binaries, three real minions, a real func-api."""

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import unittest

from funcfixture import FakeRelay, binary
from test_api import Api, fleet_and_api, wait_until

HOSTS = ["m1", "m2", "m3"]


def setUpModule():
    global FLEET, API, TOKEN
    FLEET, API, TOKEN = fleet_and_api(HOSTS, "warm")
    os.environ["FUNC_BINARY"] = binary("func")
    os.environ["FUNC_ROOT"] = FLEET.ca_root


def tearDownModule():
    API.close()
    FLEET.close()


def func(*words, stdin=None):
    p = subprocess.run([binary("func"), "--root", FLEET.ca_root] + list(words), input=stdin,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def handed(api=None):
    """How many requests the func-api has taken from a func of its root."""
    status, doc, _ = (api or API).request("GET", "/api/v1/audit?limit=500", token=TOKEN)
    assert status == 200, doc
    return sum(1 for line in doc["lines"] if line["action"].startswith("relay ") and " for cli:" in line["action"])


def text(path):
    with open(path) as f:
        return f.read()


def ensure_announced():
    """The module's func-api is the one announced in the root (a test that
    started and killed another one left a stale announcement): restarted if not."""
    global API
    path = os.path.join(FLEET.ca_root, "var/run/func-api.json")
    try:
        with open(path) as f:
            if json.load(f)["pid"] == API.proc.pid:
                return
    except (OSError, ValueError, KeyError):
        pass
    API.close()
    API = Api(FLEET, root=FLEET.ca_root)


class WarmAnswersTest(unittest.TestCase):
    def setUp(self):
        ensure_announced()

    def same_both_ways(self, *words, stdin=None):
        """The answer of `func WORDS` handed to func-api, and with --direct."""
        before = handed()
        warm = func(*words, stdin=stdin)
        self.assertEqual(handed(), before + 1, ("not handed to func-api", warm))
        direct = func("--direct", *words, stdin=stdin)
        self.assertEqual(handed(), before + 1, ("--direct handed it", direct))
        return warm, direct

    def test_a_call_answers_the_same_handed_or_direct(self):
        warm, direct = self.same_both_ways("--json", "*", "call", "test", "add", "3", "4")
        self.assertEqual(warm[0], 0, warm)
        self.assertEqual(json.loads(warm[1]), json.loads(direct[1]))
        self.assertEqual(json.loads(warm[1]), {h: 7 for h in HOSTS})
        # Types that JSON cannot hold exactly come through exactly.
        warm, direct = self.same_both_ways("--out", "xmlrpc", "m1", "call", "test", "echo", "--json-args",
                                           '[{"__base64__": "AAEC"}, 9999999999]')
        self.assertEqual((warm[0], warm[1]), (direct[0], direct[1]))

    def test_failures_exit_status_and_text_are_the_same(self):
        warm, direct = self.same_both_ways("*", "call", "test", "nosuch")
        self.assertEqual(warm[0], 1, warm)
        self.assertEqual(sorted(warm[1].splitlines()), sorted(direct[1].splitlines()))
        warm, direct = self.same_both_ways("*", "ping")
        self.assertEqual((warm[0], sorted(warm[1].splitlines())), (0, sorted(direct[1].splitlines())))

    def test_a_func_api_that_does_not_answer_func_calls_the_minions_itself(self):
        # Announced (its process runs: this one) but nothing listens there:
        # func reads the minions' addresses it left to func-api and calls them.
        path = os.path.join(FLEET.ca_root, "var/run/func-api.json")
        with open(path) as f:
            real = f.read()
        with open("/proc/self/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        try:
            with open(path, "w") as f:
                json.dump({"address": "127.0.0.1:%d" % port, "pid": os.getpid(), "start": start}, f)
            before = handed()
            code, out, err = func("-v", "--json", "*", "call", "test", "add", "3", "4")
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out), {h: 7 for h in HOSTS})
            self.assertIn("calling the minions directly", err)
            self.assertEqual(handed(), before)
        finally:
            with open(path, "w") as f:
                f.write(real)

    def test_verbose_says_which_way(self):
        code, _, err = func("-v", "*", "ping")
        self.assertEqual(code, 0, err)
        self.assertIn("through func-api at 127.0.0.1:%d" % API.port, err)
        code, _, err = func("-v", "--direct", "*", "ping")
        self.assertEqual(code, 0, err)
        self.assertIn("worker(s)", err)
        self.assertNotIn("func-api", err)

    def test_every_door_hands_its_call(self):
        request = {"clients": "*", "module": "test", "method": "add", "parameters": [2, 2]}
        before = handed()
        p = subprocess.run([binary("func-transmit"), "--root", FLEET.ca_root], input=json.dumps(request),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual((p.returncode, json.loads(p.stdout)), (0, {h: 4 for h in HOSTS}), p.stderr)
        code, out, err = func("transmit", stdin=json.dumps(request))
        self.assertEqual((code, json.loads(out)), (0, {h: 4 for h in HOSTS}), err)
        script = ("import json\nfrom func.overlord.client import Overlord\n"
                  "print(json.dumps(Overlord('*').test.add(2, 2), sort_keys=True))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual((p.returncode, json.loads(p.stdout)), (0, {h: 4 for h in HOSTS}), p.stderr)
        self.assertEqual(handed(), before + 3)


def handed_lines(job):
    """The audit lines of func-api taking job `job`'s starts (`async.M.m`)."""
    status, doc, _ = API.request("GET", "/api/v1/audit?limit=500", token=TOKEN)
    assert status == 200, doc
    return [line for line in doc["lines"] if line["action"].startswith("relay %s async." % job)]


def job_of(out):
    """The job id `func ... --async --nopoll` printed (`JOB_ID: ID`, quoted if it has glob characters)."""
    return out.split("JOB_ID:", 1)[1].split()[0].strip("'")


def job_results(job):
    code, out, err = func("--json", "-t", "60", "job_status", job, "--wait")
    doc = json.loads(out)
    # 1: a host failed (the exit status is the same either way: compared).
    assert code == (1 if any(isinstance(v, list) and v[:1] == ["REMOTE_ERROR"] for v in doc["results"].values())
                    else 0), (code, out, err)
    return doc["state"], doc["results"]


class WarmJobsTest(unittest.TestCase):
    """An async job's driver hands its dispatch to func-api (its kept
    connections: no TLS handshake in the driver), through every door."""

    def setUp(self):
        ensure_announced()

    def test_an_async_job_gets_the_same_results_handed_or_direct(self):
        code, out, err = func("*", "call", "test", "add", "1", "2", "--async", "--nopoll")
        self.assertEqual(code, 0, err)
        job = job_of(out)
        warm = job_results(job)
        lines = handed_lines(job)
        self.assertEqual(len(lines), 1, "the driver did not hand its dispatch to func-api")
        self.assertIn("async.test.add (Now) for cli:", lines[0]["action"])
        self.assertEqual(sorted(lines[0]["hosts"]), HOSTS)
        code, out, err = func("--direct", "*", "call", "test", "add", "1", "2", "--async", "--nopoll")
        self.assertEqual(code, 0, err)
        direct = job_results(job_of(out))
        self.assertEqual(handed_lines(job_of(out)), [], "--direct's driver handed it")
        self.assertEqual(warm, direct)
        self.assertEqual(warm, ("finished", {h: 3 for h in HOSTS}))
        # A failure is the same failure either way.
        code, out, err = func("m1", "call", "test", "nosuch", "--async", "--nopoll")
        warm = job_results(job_of(out))
        code, out, err = func("--direct", "m1", "call", "test", "nosuch", "--async", "--nopoll")
        self.assertEqual(warm, job_results(job_of(out)))
        self.assertEqual(warm[1]["m1"][0], "REMOTE_ERROR", warm)

    def test_every_door_hands_its_jobs(self):
        request = {"clients": "*", "module": "test", "method": "add", "parameters": [5, 5], "async": True}
        jobs = []
        p = subprocess.run([binary("func-transmit"), "--root", FLEET.ca_root], input=json.dumps(request),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        jobs.append(json.loads(p.stdout))
        code, out, err = func("transmit", stdin=json.dumps(request))
        self.assertEqual(code, 0, err)
        jobs.append(json.loads(out)["job_id"])
        script = ("import json\nfrom func.overlord.client import Overlord\n"
                  "print(json.dumps(Overlord('*', async_mode=True).test.add(5, 5)))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        jobs.append(json.loads(p.stdout))
        # func-api's own jobs: their driver hands the dispatch back to it.
        status, doc, _ = API.request("POST", "/api/v1/calls", token=TOKEN, body={
            "spec": "*", "module": "test", "method": "add", "args": [5, 5], "async": True})
        self.assertEqual(status, 202, doc)
        jobs.append(doc["job_id"])
        for job in jobs:
            self.assertEqual(job_results(job), ("finished", {h: 10 for h in HOSTS}), job)
            self.assertEqual([sorted(line["hosts"]) for line in handed_lines(job)], [HOSTS], job)

    def test_job_status_waits_on_func_api_and_answers_the_same(self):
        code, out, err = func("*", "call", "test", "sleep", "1", "--async", "--nopoll")
        self.assertEqual(code, 0, err)
        job = job_of(out)
        code, out, err = func("-v", "--json", "-t", "60", "job_status", job, "--wait")
        self.assertEqual(code, 0, (out, err))
        self.assertIn("as the func-api at 127.0.0.1:%d records its hosts" % API.port, err)
        warm = json.loads(out)
        code, out, err = func("-v", "--direct", "--json", "job_status", job)
        self.assertEqual(code, 0, (out, err))
        self.assertNotIn("func-api", err)
        self.assertEqual(json.loads(out), warm)
        self.assertEqual((warm["state"], sorted(warm["results"])), ("finished", HOSTS))


class WarmBatchesTest(unittest.TestCase):
    """A batch's starts go through func-api and its watcher follows the
    hosts (a wave costs the driver no connection); answers as direct."""

    def setUp(self):
        ensure_announced()

    def batch_lines(self, job):
        return [line["hosts"] for line in handed_lines(job)]

    def test_a_sync_batch_answers_the_same_handed_or_direct(self):
        warm = func("-v", "*", "call", "--batch", "2", "test", "add", "1", "1")
        direct = func("-v", "--direct", "*", "call", "--batch", "2", "test", "add", "1", "1")
        # Each host as it ends: hosts of one wave in either order.
        self.assertEqual((warm[0], sorted(warm[1].splitlines())), (direct[0], sorted(direct[1].splitlines())),
                         (warm, direct))
        self.assertEqual(warm[0], 0, warm)
        job = job_of(warm[2])
        waves = self.batch_lines(job)
        self.assertEqual(sorted(h for wave in waves for h in wave), HOSTS, waves)
        self.assertEqual(len(waves), 2, "two waves of at most 2 hosts")
        self.assertEqual(self.batch_lines(job_of(direct[2])), [], "--direct handed its batch")
        # A failing method fails the same way.
        warm = func("*", "call", "--batch", "1", "test", "nosuch")
        direct = func("--direct", "*", "call", "--batch", "1", "test", "nosuch")
        self.assertEqual((warm[0], sorted(warm[1].splitlines())), (direct[0], sorted(direct[1].splitlines())))
        self.assertEqual(warm[0], 1, warm)

    def test_an_async_batch_completes_the_same_handed_or_direct(self):
        results = []
        for extra in ([], ["--direct"]):
            code, out, err = func(*extra, "*", "call", "--async", "--nopoll", "--batch", "50%", "test", "add", "2", "2")
            self.assertEqual(code, 0, err)
            job = job_of(out)
            results.append(job_results(job))
            self.assertEqual(bool(self.batch_lines(job)), not extra, (extra, job))
        self.assertEqual(results[0], results[1])
        self.assertEqual(results[0], ("finished", {h: 4 for h in HOSTS}))


def marking(name, words, seconds):
    """`func --json '*' call WORDS command run ...` started: each host notes
    in MARKS/marks that it ran, then sleeps `seconds`. (process, MARKS)."""
    marks = os.path.join(FLEET.ca_root, name)
    os.makedirs(marks, exist_ok=True)
    proc = subprocess.Popen(
        [binary("func"), "--root", FLEET.ca_root, "--json", "-t", "60", "*", "call"] + words
        + ["command", "run", "echo ran >> %s/marks; sleep %d" % (marks, seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, marks


def breaking_api(real):
    """A func-api that takes a hand-off, passes it on to the real one (which
    starts every host and answers them all), and breaks off without a word
    to its caller: the connection closes before any answer. It presents
    func-api's own certificate."""

    def forward_then_break(path, body):
        conn = http.client.HTTPSConnection("localhost", real.port, context=FLEET.context(), timeout=60)
        conn.request("POST", path, body, {"Content-Type": "application/json"})
        conn.getresponse().read()
        conn.close()
        return None

    pki = os.path.join(FLEET.ca_root, "etc/pki/func-api")
    return FakeRelay(os.path.join(pki, "func-api.cert"), os.path.join(pki, "func-api.pem"), forward_then_break)


class WarmFaultsTest(unittest.TestCase):
    def test_func_api_breaking_off_after_starting_a_job_its_hosts_are_followed_not_failed(self):
        """func-api started a job's hosts but broke off before answering:
        the driver starts them directly, each minion refuses (already ran
        here as job X), and the driver follows job X. The results are the
        hosts' own, and nothing ran twice."""
        ensure_announced()
        path = os.path.join(FLEET.ca_root, "var/run/func-api.json")
        with open(path) as f:
            real = f.read()
        with open("/proc/self/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        fake = breaking_api(API)
        marks = os.path.join(FLEET.ca_root, "warm-broke-marks")
        os.makedirs(marks, exist_ok=True)
        try:
            with open(path, "w") as f:
                json.dump({"address": "127.0.0.1:%d" % fake.port, "pid": os.getpid(), "start": start}, f)
            code, out, err = func("*", "call", "--async", "--nopoll", "command", "run",
                                  "echo ran >> %s/marks" % marks)
            self.assertEqual(code, 0, err)
            job = job_of(out)
            code, out, err = func("--direct", "--json", "-t", "60", "job_status", job, "--wait")
            self.assertEqual(code, 0, (out, err))
            doc = json.loads(out)
            self.assertEqual(sorted(doc["results"]), HOSTS, doc)
            for host, value in doc["results"].items():
                self.assertEqual(value[0], 0, (host, value))
            taken = [seen for seen in fake.seen if seen[:2] == ("POST", "/api/v1/relay")]
            self.assertEqual(len(taken), 1, "the dispatch was not handed to the breaking func-api")
            self.assertEqual(text(os.path.join(marks, "marks")).split(), ["ran"] * 3, "a host ran twice")
        finally:
            with open(path, "w") as f:
                f.write(real)
            fake.close()

    def test_func_api_killed_mid_call_leaves_the_rest_unreachable_and_nothing_runs_twice(self):
        api = Api(FLEET, root=FLEET.ca_root)
        try:
            # Each host notes that it ran, then takes long: func-api is killed meanwhile.
            proc, marks = marking("warm-marks", [], 4)
            self.assertTrue(wait_until(60, lambda: os.path.exists(os.path.join(marks, "marks"))
                                       and len(text(os.path.join(marks, "marks")).split()) == 3),
                            "the hosts never started")
            api.proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 1, (out, err))
            doc = json.loads(out)
            self.assertEqual(sorted(doc), HOSTS, doc)
            for host, value in doc.items():
                self.assertEqual(value[:2], ["REMOTE_ERROR", "socket.error"], (host, value))
            # Nothing ran a second time: func ended without calling them itself.
            with open(os.path.join(marks, "marks")) as f:
                self.assertEqual(f.read().split(), ["ran"] * 3)
        finally:
            api.close()
        # Its announcement names a dead process: func calls the minions itself.
        code, out, err = func("-v", "*", "ping")
        self.assertEqual(code, 0, (out, err))
        self.assertIn("worker(s)", err)

    def test_func_api_killed_while_job_status_waits_the_hosts_are_asked_directly(self):
        api = Api(FLEET, root=FLEET.ca_root)
        try:
            code, out, err = func("*", "call", "test", "sleep", "3", "--async", "--nopoll")
            self.assertEqual(code, 0, err)
            job = job_of(out)

            def all_running():
                code, out, _ = func("--direct", "--json", "job_status", job)
                return list(json.loads(out).get("waiting", {}).values()) == ["running"] * 3
            # Dispatched (a func-api killed mid-dispatch leaves hosts unreachable: another test).
            self.assertTrue(wait_until(60, all_running), "the job never ran on every host")
            log = os.path.join(FLEET.ca_root, "warm-wait.err")
            with open(log, "w") as errf:
                proc = subprocess.Popen([binary("func"), "--root", FLEET.ca_root, "-v", "--json", "-t", "60",
                                         "job_status", job, "--wait"],
                                        stdout=subprocess.PIPE, stderr=errf, text=True)
                self.assertTrue(wait_until(60, lambda: "records its hosts" in text(log)),
                                "job_status never waited on func-api")
                api.proc.send_signal(signal.SIGKILL)
                out, _ = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 0, (out, text(log)))
            doc = json.loads(out)
            self.assertEqual((doc["state"], sorted(doc["results"])), ("finished", HOSTS), doc)
            self.assertIn("the func-api is gone", text(log))
        finally:
            api.close()

    def test_func_api_killed_mid_batch_the_driver_goes_on_and_nothing_runs_twice(self):
        api = Api(FLEET, root=FLEET.ca_root)
        try:
            proc, marks = marking("warm-batch-marks", ["--batch", "1"], 2)
            job = job_of(proc.stderr.readline())

            def first_running():
                code, out, _ = func("--direct", "--json", "job_status", job)
                return "running" in json.loads(out).get("waiting", {}).values()
            self.assertTrue(wait_until(60, first_running), "the first host never started")
            api.proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 0, (out, err))
            results = json.loads(out)["results"]
            self.assertEqual(sorted(results), HOSTS, results)
            self.assertTrue(all(v[0] == 0 for v in results.values()), results)
            self.assertEqual(text(os.path.join(marks, "marks")).split(), ["ran"] * 3)
        finally:
            api.close()


if __name__ == "__main__":
    unittest.main()
