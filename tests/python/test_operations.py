"""func-api's operations (DESIGN §14, issue 40) over loopback with real
processes: the certmaster's keys (a real funcd waiting to be signed, its
fingerprint compared, a wrong one refused, revocation publishing the CRL),
re-running a job (all hosts, the failed ones, rights, the CLI), schedules
(bad input, runs as jobs with the owner's rights, one run at a time,
disable, a revoked token stopping its schedules, the CLI) and the audit
trail (paged, filtered, rights). Standard library only."""

import json
import os
import socket
import subprocess
import unittest
import urllib.parse

from funcfixture import Enrolling, Fleet, binary
from test_api import Api, Events, wait_until

CA = "etc/pki/certmaster/ca"


def enc(text):
    return urllib.parse.quote(text, safe="")


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class OperationsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        try:
            for name in ("m1", "m2"):
                cls.fleet.start_minion(name)
            # m3 is enrolled but nothing listens where it said it is.
            cls.fleet.enroll("m3")
            certs = os.path.join(cls.fleet.ca_root, "var/lib/certmaster/certmaster/certs")
            with open(os.path.join(certs, "m3.addr"), "w") as f:
                f.write("127.0.0.1:%d\n" % closed_port())
            # A limited owner may run one scheduled run at a time here,
            # as often as every second.
            cls.api = Api(cls.fleet, conf="[api]\nmax_schedules_per_owner = 4\nmin_every_limited = 1\n"
                                          "max_running_per_owner = 1\n")
        except Exception:
            cls.fleet.close()
            raise
        cls.admin = cls.api.token("ops-admin", "--admin")
        cls.limited = cls.api.token("ops-m1", "--allow", "m1=test.*")
        cls.keys = cls.api.token("ops-keys", "--allow", "new*=@keys.*")
        cls.reader = cls.api.token("ops-audit", "--allow", "*=@audit.read")
        cls.everything = cls.api.token("ops-star", "--allow", "*=*")

    @classmethod
    def tearDownClass(cls):
        cls.api.close()
        cls.fleet.close()

    def req(self, method, path, token=None, body=None):
        return self.api.request(method, path, token=token or self.admin, body=body)

    def func(self, *args):
        return subprocess.run([binary("func"), "--root", self.fleet.ca_root] + list(args),
                              capture_output=True, text=True, timeout=120)

    def wait_job(self, job, token=None):
        def done():
            st, doc, _ = self.req("GET", "/api/v1/jobs/" + enc(job), token)
            return st == 200 and doc.get("ended") is not None
        self.assertTrue(wait_until(120, done, 0.1), "job %s ends" % job)
        return self.req("GET", "/api/v1/jobs/" + enc(job), token)[1]

    # ---- keys --------------------------------------------------------------

    def test_keys_are_listed_signed_by_fingerprint_and_revoked(self):
        root = self.fleet.ca_root
        enrolling = Enrolling(self.fleet, "newbie1")
        try:
            def pending():
                st, doc, _ = self.req("GET", "/api/v1/keys")
                return st == 200 and [k for k in doc["pending"] if k["name"] == "newbie1"]
            self.assertTrue(wait_until(60, pending, 0.1), "the request is pending")
            key = pending()[0]
            # The fingerprint the minion printed is the one listed, with where it came from.
            printed = enrolling.fingerprint
            self.assertEqual(key["fingerprint"].lower(), printed.lower())
            self.assertEqual(key["address"], "127.0.0.1")
            # Rights: neither a call token nor "*=*" may touch keys; a keys token sees only its names.
            for tok in (self.limited, self.everything):
                self.assertEqual(self.req("GET", "/api/v1/keys", tok)[0], 403)
                st, doc, _ = self.req("POST", "/api/v1/keys/newbie1/sign", tok, {"fingerprint": printed})
                self.assertEqual(st, 403, doc)
            st, doc, _ = self.req("GET", "/api/v1/keys", self.keys)
            self.assertEqual([k["name"] for k in doc["pending"]], ["newbie1"])
            self.assertEqual(doc["signed"], [], "m1, m2, m3 are not the keys token's")
            self.assertEqual(self.req("POST", "/api/v1/keys/m1/revoke", self.keys)[0], 403)
            # A wrong fingerprint: 409, nothing signed.
            wrong = "SHA256:" + "00" * 32
            st, doc, _ = self.req("POST", "/api/v1/keys/newbie1/sign", self.keys, {"fingerprint": wrong})
            self.assertEqual(st, 409, doc)
            self.assertIn("nothing signed", doc["error"])
            # Issue 47: the right fingerprint is never said (it is typed from the minion).
            self.assertNotIn(printed.lower().replace("sha256:", "")[:20], doc["error"].lower())
            self.assertNotIn(key["fingerprint"].lower()[:20], doc["error"].lower())
            self.assertTrue(pending())
            for bad in ({}, {"fingerprint": ""}, {"fingerprint": printed, "x": 1}):
                self.assertEqual(self.req("POST", "/api/v1/keys/newbie1/sign", self.keys, bad)[0], 400, bad)
            self.assertEqual(self.req("POST", "/api/v1/keys/newbie9/sign", None, {"fingerprint": printed})[0], 404)
            self.assertEqual(self.req("POST", "/api/v1/keys/%3Cb%3E/sign", None, {"fingerprint": printed})[0], 400)
            # The right one: signed; the minion gets its certificate and serves.
            st, doc, _ = self.req("POST", "/api/v1/keys/newbie1/sign", self.keys, {"fingerprint": printed.upper()})
            self.assertEqual(st, 200, doc)
            self.assertEqual(doc["outcome"], "signed")
            self.assertTrue(enrolling.served())
            st, doc, _ = self.req("GET", "/api/v1/keys", self.keys)
            self.assertEqual([(k["name"], k["fingerprint"]) for k in doc["signed"]], [("newbie1", key["fingerprint"])])
            self.assertEqual(doc["pending"], [])
            self.assertEqual(self.req("POST", "/api/v1/keys/newbie1/sign", self.keys, {"fingerprint": printed})[0], 409)
            # Revoke: as certmaster-ca --clean, the CRL republished.
            crl = os.path.join(root, CA, "certmaster.crl")
            before = open(crl).read() if os.path.exists(crl) else ""
            st, doc, _ = self.req("POST", "/api/v1/keys/newbie1/revoke", self.keys)
            self.assertEqual((st, doc["outcome"]), (200, "revoked"), doc)
            self.assertNotEqual(open(crl).read(), before, "a new CRL")
            st, doc, _ = self.req("GET", "/api/v1/keys")
            self.assertIn("newbie1", [k["name"] for k in doc["revoked"]])
            self.assertNotIn("newbie1", [k["name"] for k in doc["signed"]])
            listed = subprocess.run([binary("certmaster-ca"), "--root", root, "--list-signed"],
                                    capture_output=True, text=True).stdout.split()
            self.assertNotIn("newbie1", listed)
            self.assertEqual(self.req("POST", "/api/v1/keys/newbie1/revoke", self.keys)[0], 404)
            # Issue 47: Reject on a request never signed says "rejected" (nothing
            # revoked), and funcd is told so and stops asking.
            rejected = Enrolling(self.fleet, "newbie2")
            try:
                self.assertTrue(wait_until(60, lambda: any(k["name"] == "newbie2" for k in
                                                           self.req("GET", "/api/v1/keys")[1]["pending"]), 0.1))
                st, doc, _ = self.req("POST", "/api/v1/keys/newbie2/revoke", self.keys)
                self.assertEqual((st, doc["outcome"]), (200, "rejected"), doc)
                self.assertNotIn("newbie2", [k["name"] for k in self.req("GET", "/api/v1/keys")[1]["revoked"]])
                rejected.minion.wait(timeout=120)
                self.assertIn("rejected by an administrator", open(rejected.log_path).read())
                self.assertEqual(self.req("GET", "/api/v1/keys")[1]["pending"], [])
            finally:
                rejected.close()
            lines = self.req("GET", "/api/v1/audit?user=api:ops-keys")[1]["lines"]
            actions = [(l["action"], l["status"]) for l in lines]
            self.assertIn(("keys sign", 409), actions)
            self.assertIn(("keys sign", 200), actions)
            self.assertIn(("keys revoke", 200), actions)
            refused = self.req("GET", "/api/v1/audit?user=api:ops-m1&action=keys*")[1]["lines"]
            self.assertIn(("keys sign", 403, ["newbie1"]), [(l["action"], l["status"], l["hosts"]) for l in refused])
        finally:
            enrolling.close()

    # ---- re-run ------------------------------------------------------------

    def start(self, body, token=None):
        st, doc, _ = self.req("POST", "/api/v1/calls", token, body)
        self.assertEqual(st, 202, doc)
        return doc["job_id"]

    def test_rerun_all_or_the_failed_hosts(self):
        job = self.start({"spec": "m*", "module": "test", "method": "ping", "async": True})
        doc = self.wait_job(job)
        self.assertEqual(sorted(doc["results"]), ["m1", "m2", "m3"])
        st, doc, r = self.req("POST", "/api/v1/jobs/%s/rerun?failed_only=true" % enc(job))
        self.assertEqual(st, 202, doc)
        self.assertEqual((doc["rerun_of"], doc["hosts"]), (job, 1))
        self.assertTrue(r.getheader("Location").startswith("/api/v1/jobs/"))
        again = self.wait_job(doc["job_id"])
        self.assertEqual(list(again["results"]), ["m3"], "only the unreachable host")
        self.assertEqual(again["rerun_of"], job)
        st, doc, _ = self.req("POST", "/api/v1/jobs/%s/rerun" % enc(job))
        self.assertEqual((st, doc["hosts"]), (202, 3))
        self.assertEqual(sorted(self.wait_job(doc["job_id"])["results"]), ["m1", "m2", "m3"])
        # A limited token cannot see it (404); unknown is 404; a bad parameter 400.
        self.assertEqual(self.req("POST", "/api/v1/jobs/%s/rerun" % enc(job), self.limited)[0], 404)
        self.assertEqual(self.req("POST", "/api/v1/jobs/nope-1/rerun")[0], 404)
        self.assertEqual(self.req("POST", "/api/v1/jobs/%s/rerun?failed_only=maybe" % enc(job))[0], 400)
        # Its own job: the limited token re-runs it; nothing failed is a 409.
        own = self.start({"spec": "m1", "module": "test", "method": "ping", "async": True}, self.limited)
        self.wait_job(own, self.limited)
        st, doc, _ = self.req("POST", "/api/v1/jobs/%s/rerun?failed_only=true" % enc(own), self.limited)
        self.assertEqual(st, 409, doc)
        st, doc, _ = self.req("POST", "/api/v1/jobs/%s/rerun" % enc(own), self.limited)
        self.assertEqual(st, 202, doc)
        self.assertEqual(self.wait_job(doc["job_id"], self.limited)["user"], "api:ops-m1")
        # The command line: func jobs rerun ID --failed.
        out = self.func("jobs", "rerun", job, "--failed")
        self.assertEqual(out.returncode, 0, out.stderr)
        new = out.stdout.split("JOB_ID:")[1].split()[0].strip("'")
        self.assertIn("re-run of", out.stdout)
        waited = self.func("--json", "job_status", new, "--wait")
        self.assertEqual(list(json.loads(waited.stdout)["results"]), ["m3"])
        self.assertEqual(waited.returncode, 1, "m3 is still unreachable: a failure")
        self.assertEqual(self.func("jobs", "rerun", "nope-1").returncode, 1)

    def test_rerun_of_a_batch_is_a_batch(self):
        job = self.start({"spec": "m1;m2", "module": "test", "method": "ping", "batch": 1, "async": True})
        self.wait_job(job)
        st, doc, r = self.req("POST", "/api/v1/jobs/%s/rerun" % enc(job))
        self.assertEqual(st, 202, doc)
        st, batch, _ = self.req("GET", "/api/v1/batches/" + enc(doc["job_id"]))
        self.assertEqual((st, batch["size"]), (200, 1), batch)

    # ---- schedules ---------------------------------------------------------

    def schedule(self, name):
        st, doc, _ = self.req("GET", "/api/v1/schedules/" + enc(name))
        self.assertEqual(st, 200, doc)
        return doc

    def scheduled_jobs(self, name, token=None):
        st, doc, _ = self.req("GET", "/api/v1/jobs?limit=500", token)
        return [j for j in doc["jobs"] if j.get("schedule") == name]

    def test_schedule_bad_input_is_refused_clearly(self):
        ping = {"spec": "m1", "module": "test", "method": "ping"}
        cases = [
            ({"name": "s-cron", "request": ping, "cron": "61 * * * *"}, 400),
            ({"name": "s-cron6", "request": ping, "cron": "0 0 0 * * *"}, 400),
            ({"name": "s-every", "request": ping, "every": 0}, 400),
            ({"name": "s-both", "request": ping, "every": 5, "cron": "* * * * *"}, 400),
            ({"name": "s-none", "request": ping}, 400),
            ({"name": "bad name!", "request": ping, "every": 5}, 400),
            ({"name": "s-req", "request": {"spec": "m1"}, "every": 5}, 400),
            ({"name": "s-x", "request": ping, "every": 5, "extra": 1}, 400),
            ({"name": "s-owner", "request": ping, "every": 5, "owner": "api:someone"}, 400),
        ]
        for body, status in cases:
            st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited, body)
            self.assertEqual(st, status, (body, doc))
            self.assertIn("error", doc)
        # Outside the owner's rights: 403, nothing kept.
        st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited,
                              {"name": "s-forbidden", "request": dict(ping, spec="m2"), "every": 60})
        self.assertEqual(st, 403, doc)
        st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited,
                              {"name": "s-cmd", "request": {"spec": "m1", "module": "command", "method": "run", "args": ["id"]}, "every": 60})
        self.assertEqual(st, 403, doc)
        self.assertEqual(self.req("GET", "/api/v1/schedules/s-forbidden")[0], 404)
        # A name taken: 409; the owner's limit (4 here): 409.
        made = []
        for i in range(4):
            st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited,
                                  {"name": "lim-%d" % i, "request": ping, "cron": "0 3 * * *", "enabled": False})
            self.assertEqual(st, 201, doc)
            made.append("lim-%d" % i)
        st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited,
                              {"name": "lim-0", "request": ping, "every": 60})
        self.assertEqual(st, 409, doc)
        st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited,
                              {"name": "lim-9", "request": ping, "every": 60})
        self.assertEqual(st, 409, doc)
        self.assertIn("max_schedules_per_owner", doc["error"])
        # Another owner does not see them; an admin does.
        self.assertEqual(self.req("GET", "/api/v1/schedules/lim-0", self.keys)[0], 404)
        self.assertEqual(self.req("DELETE", "/api/v1/schedules/lim-0", self.keys)[0], 404)
        names = [s["name"] for s in self.req("GET", "/api/v1/schedules", self.limited)[1]["schedules"]]
        self.assertEqual(sorted(names), made)
        self.assertEqual(self.schedule("lim-1")["next_run"], None, "added disabled")
        self.assertEqual(self.req("PATCH", "/api/v1/schedules/lim-1", self.limited, {})[0], 400)
        self.assertEqual(self.req("PATCH", "/api/v1/schedules/lim-1", self.limited, {"every": 0})[0], 400)
        for name in made:
            self.assertEqual(self.req("DELETE", "/api/v1/schedules/" + name, self.limited)[0], 204)
        self.assertEqual(self.req("DELETE", "/api/v1/schedules/lim-0", self.limited)[0], 404)

    def test_a_schedule_runs_as_jobs_of_its_owner_and_stops_when_disabled(self):
        body = {"name": "tick", "request": {"spec": "m1", "module": "test", "method": "ping"}, "every": 1}
        st, doc, r = self.req("POST", "/api/v1/schedules", self.limited, body)
        self.assertEqual(st, 201, doc)
        self.assertEqual(r.getheader("Location"), "/api/v1/schedules/tick")
        self.assertEqual(doc["owner"], "api:ops-m1")
        self.assertTrue(wait_until(60, lambda: len(self.scheduled_jobs("tick", self.limited)) >= 3, 0.2),
                        "three runs")
        jobs = self.scheduled_jobs("tick", self.limited)
        self.assertTrue(all(j["user"] == "api:ops-m1" and j["function"] == "test.ping" for j in jobs), jobs)
        self.assertEqual(len({j["id"] for j in jobs}), len(jobs))
        self.assertTrue(wait_until(60, lambda: self.schedule("tick")["last_outcome"] == "ok", 0.1))
        doc = self.schedule("tick")
        self.assertGreaterEqual(doc["runs"], 3)
        self.assertIsNotNone(doc["next_run"])
        st, doc, _ = self.req("PATCH", "/api/v1/schedules/tick", self.limited, {"enabled": False})
        self.assertEqual((st, doc["enabled"], doc["next_run"]), (200, False, None))
        runs = doc["runs"]
        # Another schedule runs twice more meanwhile; "tick" did not run again.
        st, doc, _ = self.req("POST", "/api/v1/schedules", None,
                              {"name": "witness", "request": {"spec": "m2", "module": "test", "method": "ping"}, "every": 1})
        self.assertEqual(st, 201, doc)
        self.assertTrue(wait_until(60, lambda: self.schedule("witness")["runs"] >= 2, 0.2))
        self.assertEqual(self.schedule("tick")["runs"], runs)
        self.assertEqual(self.req("DELETE", "/api/v1/schedules/witness")[0], 204)
        self.assertEqual(self.req("DELETE", "/api/v1/schedules/tick", self.limited)[0], 204)
        audit = self.req("GET", "/api/v1/audit?action=schedule%20tick%20run*")[1]["lines"]
        self.assertTrue(audit and all(l["who"] == "schedule:tick" for l in audit), audit)

    def test_a_run_due_while_the_previous_one_runs_is_skipped(self):
        stream = Events(self.api, self.admin, tag="schedule/slow/")
        try:
            st, doc, _ = self.req("POST", "/api/v1/schedules",
                                  body={"name": "slow", "every": 1,
                                        "request": {"spec": "m1", "module": "test", "method": "sleep", "args": [2]}})
            self.assertEqual(st, 201, doc)
            runs = lambda: [e for e in stream.events if e["event"] == "schedule/slow/run"]
            skipped = lambda: [e for e in stream.events if e["event"] == "schedule/slow/skipped"]
            self.assertTrue(wait_until(90, lambda: len(runs()) >= 2 and skipped(), 0.2), stream.tags())
            self.assertIn("still running", skipped()[0]["data"]["error"])
            self.assertEqual(self.req("PATCH", "/api/v1/schedules/slow", body={"enabled": False})[0], 200)
            # Each run sleeps 2 s on its host: one at a time, runs start at
            # least 2 s apart (each only once the one before had ended).
            starts = sorted(self.wait_job(e["data"]["job_id"])["started"] for e in runs())
            gaps = [b - a for a, b in zip(starts, starts[1:])]
            self.assertTrue(all(g >= 2.0 for g in gaps), gaps)
        finally:
            stream.close()
            self.req("DELETE", "/api/v1/schedules/slow")

    def test_a_limited_owners_runs_in_progress_are_bounded(self):
        # Issue 46: a limited token's many schedules kept the minions'
        # shared budget busy; here it may have one run in progress.
        stream = Events(self.api, self.admin, tag="schedule/busy-")
        try:
            sleep = {"spec": "m1", "module": "test", "method": "sleep", "args": [3]}
            ping = {"spec": "m1", "module": "test", "method": "ping"}
            for name, request in (("busy-a", sleep), ("busy-b", ping)):
                st, doc, _ = self.req("POST", "/api/v1/schedules", self.limited,
                                      {"name": name, "request": request, "every": 1})
                self.assertEqual(st, 201, doc)
            skipped = lambda: [e for e in stream.events if e["event"].endswith("/skipped")
                               and "max_running_per_owner" in e["data"]["error"]]
            self.assertTrue(wait_until(90, lambda: skipped(), 0.2), stream.tags())
        finally:
            stream.close()
            for name in ("busy-a", "busy-b"):
                self.req("DELETE", "/api/v1/schedules/" + name)

    def test_a_revoked_token_stops_its_schedules(self):
        temp = self.api.token("ops-temp", "--allow", "m2=test.*")
        st, doc, _ = self.req("POST", "/api/v1/schedules", temp,
                              {"name": "temp-tick", "request": {"spec": "m2", "module": "test", "method": "ping"}, "every": 1})
        self.assertEqual(st, 201, doc)
        self.assertTrue(wait_until(60, lambda: self.schedule("temp-tick")["runs"] >= 1, 0.2))
        out = subprocess.run([binary("func-api"), "--root", self.api.root, "token", "revoke", "ops-temp"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("schedules stopped: temp-tick", out.stdout)
        doc = self.schedule("temp-tick")
        self.assertFalse(doc["enabled"])
        self.assertIn("revoked", doc["disabled_reason"])
        self.assertEqual(doc["next_run"], None)
        self.assertEqual(self.req("DELETE", "/api/v1/schedules/temp-tick")[0], 204)

    def test_schedules_from_the_command_line(self):
        out = self.func("schedule", "add", "cli-tick", "--every", "1", "m1", "test", "ping")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("schedule cli-tick added", out.stdout)
        self.assertTrue(wait_until(60, lambda: self.schedule("cli-tick")["runs"] >= 1, 0.2), "func-api runs it")
        listed = self.func("schedule", "list")
        self.assertIn("cli-tick", listed.stdout)
        self.assertIn("every 1s", listed.stdout)
        doc = json.loads(self.func("--json", "schedule", "list").stdout)
        mine = [s for s in doc["schedules"] if s["name"] == "cli-tick"][0]
        self.assertTrue(mine["owner"].startswith("cli:"))
        self.assertEqual(self.func("schedule", "disable", "cli-tick").returncode, 0)
        self.assertFalse(self.schedule("cli-tick")["enabled"])
        self.assertEqual(self.func("schedule", "enable", "cli-tick").returncode, 0)
        self.assertTrue(self.schedule("cli-tick")["enabled"])
        bad = self.func("schedule", "add", "cli-bad", "--cron", "0 25 * * *", "m1", "test", "ping")
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("cron", bad.stderr)
        self.assertEqual(self.func("schedule", "add", "cli-tick", "--every", "5", "m1", "test", "ping").returncode, 1)
        self.assertEqual(self.func("schedule", "remove", "cli-tick").returncode, 0)
        self.assertEqual(self.func("schedule", "remove", "cli-tick").returncode, 1)
        lines = self.req("GET", "/api/v1/audit?user=cli:*&action=schedule*")[1]["lines"]
        actions = [l["action"] for l in lines]
        for a in ("schedule add cli-tick", "schedule disable cli-tick", "schedule remove cli-tick"):
            self.assertIn(a, actions)

    # ---- audit -------------------------------------------------------------

    def test_the_audit_trail_is_paged_filtered_and_guarded(self):
        for _ in range(3):
            self.assertEqual(self.req("POST", "/api/v1/calls", None,
                                      {"spec": "m1", "module": "test", "method": "ping"})[0], 200)
        st, page, r = self.req("GET", "/api/v1/audit?limit=2", self.reader)
        self.assertEqual(st, 200, page)
        self.assertEqual(len(page["lines"]), 2)
        self.assertIsNotNone(page["next"])
        self.assertIn('rel="next"', r.getheader("Link"))
        first = page["lines"][0]
        for key in ("time", "who", "from", "action", "hosts", "status", "id"):
            self.assertIn(key, first)
        self.assertGreaterEqual(first["time"], page["lines"][1]["time"], "newest first")
        st, more, _ = self.req("GET", "/api/v1/audit?limit=2&before=%d" % page["next"], self.reader)
        self.assertEqual(st, 200)
        self.assertTrue(set(l["id"] for l in more["lines"]).isdisjoint(l["id"] for l in page["lines"]))
        self.assertTrue(all(l["id"] < page["next"] for l in more["lines"]))
        calls = self.req("GET", "/api/v1/audit?user=api:ops-admin&action=call%20test.ping&limit=3")[1]["lines"]
        self.assertEqual(len(calls), 3)
        self.assertTrue(all(l["hosts"] == ["m1"] and l["status"] == 200 and l["status_kind"] == "http"
                            for l in calls), calls)
        # The command line's lines too.
        self.func("m1", "call", "test", "ping")
        cli = self.req("GET", "/api/v1/audit?user=cli:*&limit=1")[1]["lines"]
        self.assertEqual(cli[0]["action"], "call test.ping")
        self.assertEqual(cli[0]["spec"], "m1")
        self.assertEqual((cli[0]["status"], cli[0]["status_kind"]), (0, "exit"), "an exit status, not HTTP's")
        for tok in (self.limited, self.keys, self.everything):
            self.assertEqual(self.req("GET", "/api/v1/audit", tok)[0], 403)
        for q in ("limit=0", "limit=5000", "before=x", "user=%5B", "nope=1"):
            self.assertEqual(self.req("GET", "/api/v1/audit?" + q)[0], 400, q)


if __name__ == "__main__":
    unittest.main()
