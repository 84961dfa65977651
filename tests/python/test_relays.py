"""Delegation through relays (DESIGN §17) with real processes: a top
overlord, relay1 (a func-api with its own root and minions) with relay2
nested below it, and a minion called directly. Sync, async (collapsed by
job_status --wait and by the top func-api's watcher, with events), a batch
with failhard, kill, a fact filter, a relay killed mid-call (its hosts
unreachable, the others complete, nothing run twice), the map built by
func-build-map, Func's Python API with delegate=True, a request a relay
must refuse (unsigned, or from a token), and func-swarm's 1,000 simulated
minions answering `func '*' ping`."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

from funcfixture import Fleet, Certmaster, binary
from test_api import Api, Events, wait_until
from test_facts import facts_d

FLEET = None
TOP = None
RELAYS = {}
CERTS = "var/lib/certmaster/certmaster/certs"


def func(*args, root=None, check=False, timeout=120):
    done = subprocess.run([binary("func"), "--root", root or FLEET.ca_root] + list(args),
                          capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError("func %s: %d\n%s%s" % (args, done.returncode, done.stdout, done.stderr))
    return done


def relay_root(name, minions):
    """A relay's root, as `certmaster-ca --relay` makes it: the CA
    certificate (no CA key), the relay's own overlord key (worth its
    segment only) and its func-api's certificate; and its segment's
    minions (moved from the top's list: the top knows them only through
    the map)."""
    root = os.path.join(FLEET.dir, name)
    subprocess.run([binary("certmaster-ca"), "--root", FLEET.ca_root, "--relay", name, "--relay-root", root],
                   check=True, capture_output=True)
    certs = os.path.join(root, CERTS)
    os.makedirs(certs, mode=0o755)
    for m in minions:
        for ext in (".cert", ".addr"):
            shutil.move(os.path.join(FLEET.ca_root, CERTS, m + ext), certs)
    return root


def conf(root, text):
    path = os.path.join(root, "etc/func/overlord.conf")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        f.write(text)


def audit_count(name, method):
    path = os.path.join(FLEET.dir, name, "var/log/func/audit.log")
    if not os.path.exists(path):
        return 0
    return sum(1 for line in open(path) if method in line)


def setUpModule():
    global FLEET, TOP
    FLEET = Fleet()
    try:
        for name, role in (("d1", "db"), ("r1a", "web"), ("r1b", "db"), ("r2a", "web")):
            FLEET.start_minion(name, prepare=facts_d(role))
        r2 = relay_root("relay2", ["r2a"])
        RELAYS["relay2"] = Api(FLEET, root=r2)
        r1 = relay_root("relay1", ["r1a", "r1b"])
        conf(r1, "[relays]\nrelay2 = 127.0.0.1:%d\n" % RELAYS["relay2"].port)
        RELAYS["relay1"] = Api(FLEET, root=r1)
        conf(FLEET.ca_root, "[relays]\nrelay1 = 127.0.0.1:%d\n" % RELAYS["relay1"].port)
        # relay1's map first (it names relay2's minions), then the top's.
        for root in (r1, FLEET.ca_root):
            done = subprocess.run([binary("func-build-map"), "--root", root], capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise RuntimeError("func-build-map: " + done.stdout + done.stderr)
        TOP = Api(FLEET)
    except Exception:
        tearDownModule()
        raise


def tearDownModule():
    for api in [TOP] + list(RELAYS.values()):
        if api is not None:
            api.close()
    if FLEET is not None:
        FLEET.close()


class RelayTest(unittest.TestCase):
    def test_the_map_is_funcs_nesting(self):
        text = open(os.path.join(FLEET.ca_root, "var/lib/func/map")).read()
        import yaml
        self.assertEqual(yaml.safe_load(text),
                         {"d1": {}, "relay1": {"r1a": {}, "r1b": {}, "relay2": {"r2a": {}}}})
        self.assertEqual(os.stat(os.path.join(FLEET.ca_root, "var/lib/func/map")).st_mode & 0o777, 0o600)
        # Without --delegate the map is not used: only d1 is known here.
        self.assertEqual(json.loads(func("--json", "*", "ping", check=True).stdout), {"d1": 1})

    def test_sync_calls_look_as_if_every_minion_were_called_directly(self):
        done = func("--delegate", "--json", "*", "call", "test", "add", "1", "2", check=True)
        self.assertEqual(json.loads(done.stdout), {"d1": 3, "r1a": 3, "r1b": 3, "r2a": 3})
        done = func("--delegate", "--out", "xmlrpc", "r2a;d1", "call", "--json-args",
                    '[{"__base64__": "aGk="}]', "test", "echo", check=True)
        # Both kept its type: d1 (direct, or handed to the top's func-api) and r2a (through relays).
        self.assertEqual(done.stdout.replace("\n", "").count("<base64>aGk=</base64>"), 2, done.stdout)
        ping = func("--delegate", "*", "ping")
        self.assertEqual(ping.returncode, 0, ping.stderr)
        self.assertIn("4 hosts: 4 ok", ping.stderr)
        # -v says which hosts went through which relay (issue 47).
        ping = func("-v", "--delegate", "*", "ping")
        self.assertIn("func:   through relay relay1: r1a r1b r2a", ping.stderr)
        self.assertIn("func:   called directly: d1", ping.stderr)
        # A failure through a relay is the host's failure (exit 1).
        boom = func("--delegate", "--json", "r2a", "call", "test", "explode")
        self.assertEqual(boom.returncode, 1)
        self.assertEqual(json.loads(boom.stdout)["r2a"][0], "REMOTE_ERROR")

    def test_async_jobs_collapse_through_relays_with_events(self):
        before = {m: audit_count(m, "test.sleep") for m in ("d1", "r1a", "r1b", "r2a")}
        token = TOP.token("watcher-%d" % time.time_ns(), "--admin")
        events = Events(TOP, token)
        try:
            done = func("--delegate", "*", "call", "test", "sleep", "1", "--async", "--nopoll", check=True)
            job = done.stdout.split("'")[1]
            status = func("--json", "job_status", job, "--wait", check=True)
            doc = json.loads(status.stdout)
            self.assertEqual(doc["state"], "finished", doc)
            self.assertEqual(sorted(doc["results"]), ["d1", "r1a", "r1b", "r2a"])
            # The top func-api's watcher took the relays' results as they came.
            self.assertTrue(wait_until(60, lambda: len(events.tags("job/%s/ret/" % job)) == 4), events.tags())
            self.assertTrue(wait_until(30, lambda: "job/%s/complete" % job in events.tags()))
        finally:
            events.close()
        # Each minion ran it once.
        for m in ("d1", "r1a", "r1b", "r2a"):
            self.assertEqual(audit_count(m, "test.sleep"), before[m] + 1, m)

    def test_a_batch_with_failhard_counts_hosts_not_relays(self):
        # Every host here is behind a relay: the first failure halts the batch.
        done = func("--delegate", "--json", "r*", "call", "--batch", "1", "--failhard", "test", "explode")
        self.assertEqual(done.returncode, 1)
        results = json.loads(done.stdout)["results"]
        kinds = sorted(v[1] for v in results.values())
        self.assertEqual(kinds, ["exceptions.Exception"] + ["func.overlord.BatchAbandoned"] * 2, results)
        done = func("--delegate", "--json", "*", "call", "--batch", "2", "test", "add", "2", "2", check=True)
        self.assertEqual(json.loads(done.stdout)["results"], {"d1": 4, "r1a": 4, "r1b": 4, "r2a": 4})

    def test_kill_reaches_hosts_behind_relays(self):
        done = func("--delegate", "*", "call", "test", "sleep", "60", "--async", "--nopoll", check=True)
        job = done.stdout.split("'")[1]
        self.assertTrue(wait_until(30, lambda: '"running"' in func("--json", "job_status", job).stdout or
                                   json.loads(func("--json", "job_status", job).stdout).get("state") == "partial"))
        killed = func("jobs", "kill", job)
        self.assertEqual(killed.returncode, 0, killed.stdout + killed.stderr)
        status = func("--json", "job_status", job, "--wait", timeout=120)
        doc = json.loads(status.stdout)
        self.assertEqual(doc["state"], "finished", doc)
        for h in ("r1a", "r1b", "r2a"):
            self.assertEqual(doc["results"][h][0], "REMOTE_ERROR", doc["results"][h])
        self.assertEqual(status.returncode, 1)
        # Each minion was told the kill is the command line's user's, through
        # one relay or two (not the relay's certificate).
        for h in ("r1a", "r2a"):
            with open(os.path.join(FLEET.dir, h, "var/log/func/audit.log")) as f:
                signals = [l for l in f.read().splitlines() if "jobs.signal_job" in l]
            self.assertTrue(signals and all("(user cli:root)" in l for l in signals), (h, signals))

    def test_every_door_delegates(self):
        want = {"d1": 3, "r1a": 3, "r1b": 3, "r2a": 3}
        request = {"clients": "*", "module": "test", "method": "add", "parameters": [1, 2], "delegate": True}
        done = subprocess.run([binary("func-transmit"), "--root", FLEET.ca_root], input=json.dumps(request),
                              capture_output=True, text=True, timeout=120)
        self.assertEqual((done.returncode, json.loads(done.stdout)), (0, want), done.stderr)
        done = subprocess.run([binary("func"), "--root", FLEET.ca_root, "transmit"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=120)
        self.assertEqual((done.returncode, json.loads(done.stdout)), (0, want), done.stderr)
        token = TOP.token("doors-%d" % time.time_ns(), "--admin")
        status, doc, _ = TOP.request("POST", "/api/v1/calls", token=token,
                                     body={"spec": "*", "module": "test", "method": "add", "args": [1, 2],
                                           "delegate": True})
        self.assertEqual((status, doc), (200, want))
        # Without delegate, func-api knows only its own minions.
        status, doc, _ = TOP.request("POST", "/api/v1/calls", token=token,
                                     body={"spec": "*", "module": "test", "method": "add", "args": [1, 2]})
        self.assertEqual((status, doc), (200, {"d1": 3}))
        # An async job started by func-api through the relays.
        status, doc, _ = TOP.request("POST", "/api/v1/calls", token=token,
                                     body={"spec": "r*", "module": "test", "method": "add", "args": [2, 2],
                                           "async": True, "delegate": True})
        self.assertEqual(status, 202, doc)
        job = doc["job_id"]
        self.assertTrue(wait_until(60, lambda: TOP.request("GET", "/api/v1/jobs/" + urllib.parse.quote(job, safe=""),
                                                           token=token)[1].get("state") == "finished"))
        doc = TOP.request("GET", "/api/v1/jobs/" + urllib.parse.quote(job, safe=""), token=token)[1]
        self.assertEqual(doc["results"], {"r1a": 4, "r1b": 4, "r2a": 4})

    def test_a_fact_filter_is_judged_through_relays(self):
        done = func("--delegate", "--json", "--filter", "role=web", "*", "ping", check=True)
        self.assertEqual(json.loads(done.stdout), {"r1a": 1, "r2a": 1})

    def test_funcs_python_api_with_delegate(self):
        code = ("import func.overlord.client as fc\n"
                "print(sorted(fc.Overlord('*', delegate=True).test.add(1, 2).items()))\n"
                "print(fc.Overlord('*').list_minions())\n")
        env = dict(os.environ, FUNC_ROOT=FLEET.ca_root, FUNC_BINARY=binary("func"),
                   PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines(),
                         ["[('d1', 3), ('r1a', 3), ('r1b', 3), ('r2a', 3)]", "['d1']"])

    def test_a_relay_takes_only_requests_an_overlord_signed(self):
        token = RELAYS["relay1"].token("admin-%d" % time.time_ns(), "--admin")
        status, doc, _ = RELAYS["relay1"].request("POST", "/api/v1/relay", token=token,
                                                  body={"request": "{}", "seal": {"cert": "", "sig": ""}})
        self.assertEqual(status, 403, doc)
        ctx = FLEET.context()
        forged = json.dumps({"v": 1, "id": "x", "spec": "*", "function": "command.run", "params": ["id"],
                             "user": "root", "rights": None, "hosts": ["r1a"], "mode": "now",
                             "timeout": 10, "issued": time.time()})
        status, doc, _ = RELAYS["relay1"].request("POST", "/api/v1/relay", ctx=ctx,
                                                  body={"request": forged, "seal": {"cert": "AA==", "sig": "AA=="}})
        self.assertEqual(status, 403, doc)
        self.assertIn("cannot be trusted", doc["error"])

    def signed(self, signer_root, request):
        """A relay request signed with the overlord key below `signer_root`."""
        import base64
        ca = os.path.join(signer_root, "etc/pki/certmaster/ca")
        text = json.dumps(request)
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", os.path.join(ca, "overlord.pem")],
                             input=b"func-relay-request\n" + text.encode(), capture_output=True, check=True).stdout
        der = subprocess.run(["openssl", "x509", "-outform", "DER", "-in", os.path.join(ca, "overlord.cert")],
                             capture_output=True, check=True).stdout
        return {"request": text, "seal": {"cert": base64.b64encode(der).decode(), "sig": base64.b64encode(sig).decode()}}

    def relay1(self):
        """relay1's root, and a TLS context presenting its overlord certificate."""
        r1 = os.path.join(FLEET.dir, "relay1")
        ca = os.path.join(r1, "etc/pki/certmaster/ca")
        return r1, FLEET.context(os.path.join(ca, "overlord.cert"), os.path.join(ca, "overlord.pem"))

    def order(self, marker, routes):
        return {"v": 2, "id": "attack-%d" % time.time_ns(), "spec": "r2a", "function": "command.run",
                "params": ["touch " + marker], "user": "alice", "rights": None,
                "hosts": sorted({h for hs in routes.values() for h in hs}), "routes": routes, "mode": "now",
                "timeout": 10, "issued": time.time(), "nonce": os.urandom(16).hex()}

    def test_a_relay_runs_only_what_the_top_signed_for_it_and_each_request_once(self):
        # Issue 46: relay2 ran relay1's made-up command.run on r2a for a user
        # "alice", and a request the top signed for relay1 ran on r2a each
        # time it was posted to relay2.
        marker = os.path.join(FLEET.dir, "relay-attack")
        relay2 = RELAYS["relay2"]
        r1, as_relay1 = self.relay1()
        made_up = self.signed(r1, self.order(marker, {"relay2": ["r2a"]}))
        status, doc, _ = relay2.request("POST", "/api/v1/relay", ctx=as_relay1, body=made_up)
        self.assertEqual(status, 403, doc)
        self.assertIn("signed by a relay's key", doc["error"])
        # Signed by the top for relay1 only: not for relay2.
        for_relay1 = self.signed(FLEET.ca_root, self.order(marker, {"relay1": ["r2a"]}))
        status, doc, _ = relay2.request("POST", "/api/v1/relay", ctx=FLEET.context(), body=for_relay1)
        self.assertEqual(status, 403, doc)
        self.assertIn("not for this one (relay2)", doc["error"])
        self.assertFalse(os.path.exists(marker), "nothing ran")
        # Signed by the top for relay2: runs once; the same request again is a replay.
        once = self.signed(FLEET.ca_root, self.order(marker, {"relay2": ["r2a"]}))
        status, doc, _ = relay2.request("POST", "/api/v1/relay", ctx=FLEET.context(), body=once)
        self.assertEqual(status, 200, doc)
        self.assertTrue(wait_until(30, lambda: os.path.exists(marker)))
        os.unlink(marker)
        status, doc, _ = relay2.request("POST", "/api/v1/relay", ctx=FLEET.context(), body=once)
        self.assertEqual(status, 403, doc)
        self.assertIn("replayed", doc["error"])
        self.assertFalse(os.path.exists(marker), "the replay ran nothing")

    def test_a_request_for_local_is_taken_only_from_the_roots_own_key(self):
        # The warm func's audience, @local (issue 49): a func-api takes it only
        # when its own root's overlord key signed it; a relay's func takes it
        # too (its own key), and nobody else's is believed for it.
        marker = os.path.join(FLEET.dir, "local-attack")
        relay2 = RELAYS["relay2"]
        r1, as_relay1 = self.relay1()
        for signer, ctx in ((FLEET.ca_root, FLEET.context()), (r1, as_relay1)):
            foreign = self.signed(signer, self.order(marker, {"@local": ["r2a"]}))
            status, doc, _ = relay2.request("POST", "/api/v1/relay", ctx=ctx, body=foreign)
            self.assertEqual(status, 403, doc)
            self.assertIn("only from this root's own overlord", doc["error"])
        self.assertFalse(os.path.exists(marker), "nothing ran")
        own = self.signed(r1, self.order(marker, {"@local": ["r1a"]}))
        status, doc, _ = RELAYS["relay1"].request("POST", "/api/v1/relay", ctx=as_relay1, body=own)
        self.assertEqual(status, 200, doc)
        self.assertTrue(wait_until(30, lambda: os.path.exists(marker)))
        os.unlink(marker)

    def test_a_relay_restart_loses_nothing_recorded(self):
        before = {m: audit_count(m, "test.sleep") for m in ("r1a", "r1b", "r2a")}
        done = func("--delegate", "r*", "call", "test", "sleep", "2", "--async", "--nopoll", check=True)
        job = done.stdout.split("'")[1]
        # Once relay1 has sent its part, it is stopped and started again.
        self.assertTrue(wait_until(30, lambda: all(audit_count(m, "test.sleep") > before[m] for m in before)))
        old = RELAYS["relay1"]
        old.proc.send_signal(signal.SIGTERM)
        old.proc.wait(timeout=30)
        for stream in (old.proc.stdout, old.proc.stderr):
            stream.close()
        proc = subprocess.Popen([binary("func-api"), "--root", old.root, "--listen", "127.0.0.1:%d" % old.port],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, RUST_LOG="warn"))
        old.proc = proc
        self.assertIn("listening on", proc.stdout.readline().decode())
        status = func("--json", "job_status", job, "--wait", timeout=120)
        doc = json.loads(status.stdout)
        self.assertEqual(doc["state"], "finished", doc)
        self.assertEqual(sorted(doc["results"]), ["r1a", "r1b", "r2a"])
        for h, v in doc["results"].items():
            self.assertIsInstance(v, float, (h, v))
        for m in before:
            self.assertEqual(audit_count(m, "test.sleep"), before[m] + 1, m)

    def test_zz_a_relay_killed_mid_call_leaves_its_hosts_unreachable_and_nothing_twice(self):
        before = {m: audit_count(m, "test.sleep") for m in ("d1", "r1a", "r1b", "r2a")}
        proc = subprocess.Popen([binary("func"), "--root", FLEET.ca_root, "--delegate", "--json", "-t", "20",
                                 "*", "call", "test", "sleep", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            # relay2 dies once r2a has its call (the call is in flight).
            self.assertTrue(wait_until(30, lambda: audit_count("r2a", "test.sleep") > before["r2a"]))
            RELAYS["relay2"].proc.kill()
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 1, err)
        doc = json.loads(out)
        self.assertEqual([doc[h] for h in ("d1", "r1a", "r1b")].count(None), 0)
        for h in ("d1", "r1a", "r1b"):
            self.assertIsInstance(doc[h], float, doc)
        self.assertEqual(doc["r2a"][0], "REMOTE_ERROR")
        self.assertIn("relay", doc["r2a"][2])
        self.assertIn("unreachable", err)
        time.sleep(0)  # nothing to wait for: every count is final once func ended
        for m in ("d1", "r1a", "r1b", "r2a"):
            self.assertEqual(audit_count(m, "test.sleep"), before[m] + 1, m)


class SwarmTest(unittest.TestCase):
    def test_a_thousand_simulated_minions_answer_ping(self):
        cm = Certmaster(args=["--autosign"])
        swarm = None
        tmp = tempfile.mkdtemp(prefix="func-py-swarm-")
        try:
            swarm = subprocess.Popen([binary("func-swarm"), "--root", tmp, "--count", "1000", "--prefix", "sw",
                                      "--certmaster", "127.0.0.1:%d" % cm.port],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = swarm.stdout.readline()
            self.assertIn("serving 1000 minions", line, swarm.stderr.read() if not line else line)
            self.assertEqual(os.stat(os.path.join(tmp, "identities")).st_mode & 0o777, 0o600)
            done = subprocess.run([binary("func"), "--root", cm.root, "--json", "*", "ping"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            doc = json.loads(done.stdout)
            self.assertEqual(len(doc), 1000)
            self.assertEqual(set(doc.values()), {1})
            # The real wire: an async job, collapsed.
            done = subprocess.run([binary("func"), "--root", cm.root, "sw1*", "call", "test", "add", "2", "3",
                                   "--async", "--nopoll"], capture_output=True, text=True, timeout=120)
            job = done.stdout.split("'")[1]
            status = subprocess.run([binary("func"), "--root", cm.root, "--json", "job_status", job, "--wait"],
                                    capture_output=True, text=True, timeout=300)
            self.assertEqual(set(json.loads(status.stdout)["results"].values()), {5})
        finally:
            if swarm is not None:
                swarm.send_signal(signal.SIGTERM)
                swarm.wait(timeout=30)
                swarm.stdout.close()
                swarm.stderr.close()
            cm.close()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
