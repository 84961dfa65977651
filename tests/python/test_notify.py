"""Notifications (DESIGN §14, `[notify.NAME]`): a job that ends as a
target's `on` says is told to it once, as a JSON document (job id, outcome,
counts, function, SPEC, user, schedule, a link) in a webhook POST signed
with X-Func-Signature (HMAC-SHA256), or as a mail through a real SMTP
server (aiosmtpd, installed by `make deps`); a failing webhook is tried
again; a schedule's runs reach the targets it names; two func-api on one
shared store (a private PostgreSQL) tell each target once; every delivery
is in the audit trail; the web UI lists the targets."""

import hashlib
import hmac
import http.server
import json
import os
import subprocess
import threading
import unittest
import urllib.parse

from funcfixture import Fleet, binary
from pgfixture import Postgres
from test_api import Api, wait_until
from webdriver import Browser, free_port

SECRET = "0123456789abcdef-notify"


class Hooks:
    """A webhook receiver on loopback: every POST kept, by path; `fail[path]`
    requests to a path answer 500 first."""

    def __init__(self):
        self.got, self.fail, self.lock = [], {}, threading.Lock()
        hooks = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with hooks.lock:
                    if hooks.fail.get(self.path, 0) > 0:
                        hooks.fail[self.path] -= 1
                        self.send_response(500)
                        self.end_headers()
                        return
                    hooks.got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, path, job=None):
        with self.lock:
            found = [(h, b) for p, h, b in self.got if p == path]
        return [(h, b) for h, b in found if job is None or json.loads(b)["job_id"] == job]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Mailbox:
    """A real SMTP server on loopback (aiosmtpd): every message kept."""

    def __init__(self):
        from aiosmtpd.controller import Controller  # installed by make deps

        box = self
        self.messages = []

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                box.messages.append((envelope.rcpt_tos, envelope.content.decode("utf-8", "replace")))
                return "250 OK"

        # aiosmtpd checks its server by connecting to the port it was given.
        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port, ready_timeout=30)
        self.controller.start()

    def close(self):
        self.controller.stop()


def conf(hooks, mail_port):
    url = "http://127.0.0.1:%d" % hooks.port
    return (
        "[api]\npublic_url = https://func.example.test\n"
        "[notify.hook]\nurl = %s/hook\nsecret = %s\non = failed\n"
        "[notify.every-job]\nurl = %s/all\nsecret = %s\non = finished\n"
        "[notify.sched]\nurl = %s/sched\nsecret = %s\non = finished\nfor = schedules\n"
        "[notify.flaky]\nurl = %s/flaky\nsecret = %s\non = failed\n"
        "[notify.mail]\nsmtp = 127.0.0.1:%d\nsmtp_tls = none\nfrom = func@example.test\nto = ops@example.test\non = failed\n"
        % (url, SECRET, url, SECRET, url, SECRET, url, SECRET, mail_port))


def audit_of(root):
    try:
        with open(os.path.join(root, "var/log/func/api-audit.log")) as f:
            return f.read()
    except FileNotFoundError:
        return ""


class NotifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.hooks = cls.mail = None
        try:
            for name in ("m1", "m2"):
                cls.fleet.start_minion(name)
            cls.hooks = Hooks()
            cls.mail = Mailbox()
            cls.api = Api(cls.fleet, conf=conf(cls.hooks, cls.mail.port))
        except BaseException:
            for x in (cls.mail, cls.hooks, cls.fleet):
                if x:
                    x.close()
            raise
        cls.admin = cls.api.token("admin", "--admin")

    @classmethod
    def tearDownClass(cls):
        cls.api.close()
        cls.mail.close()
        cls.hooks.close()
        cls.fleet.close()

    def start(self, method, spec="*"):
        status, doc, _ = self.api.request("POST", "/api/v1/calls", self.admin,
                                          {"spec": spec, "module": "test", "method": method, "async": True})
        self.assertEqual(status, 202, doc)
        return doc["job_id"]

    def test_a_failed_job_is_told_once_to_each_target_that_wants_it(self):
        self.hooks.fail["/flaky"] = 2
        job = self.start("no_such_method")
        self.assertTrue(wait_until(120, lambda: self.hooks.of("/hook", job) and self.hooks.of("/all", job)
                                   and self.hooks.of("/flaky", job) and any(job in m for _, m in self.mail.messages), pause=0.2),
                        (self.hooks.got, self.mail.messages))
        headers, body = self.hooks.of("/hook", job)[0]
        want = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        self.assertEqual(headers.get("x-func-signature"), want)
        doc = json.loads(body)
        self.assertEqual(doc["outcome"], "failed")
        self.assertEqual(doc["counts"], {"hosts": 2, "ok": 0, "failed": 2})
        self.assertEqual((doc["function"], doc["spec"], doc["user"]), ("test.no_such_method", "*", "api:admin"))
        self.assertIsNone(doc["schedule"])
        self.assertEqual(doc["link"], "https://func.example.test/jobs/" + urllib.parse.quote(job, safe=""))
        self.assertEqual(doc["notification"], "hook")
        # The mail went to its recipients, and says what failed.
        rcpts, text = [m for m in self.mail.messages if job in m[1]][0]
        self.assertEqual(rcpts, ["ops@example.test"])
        self.assertIn("failed", text)
        self.assertIn("test.no_such_method", text)
        # The flaky hook answered 500 twice: delivered on its third try.
        self.assertTrue(wait_until(30, lambda: "notify flaky %s: delivered (try 3)" % job in audit_of(self.fleet.ca_root)))
        # Each once, none to the schedules-only target.
        self.assertTrue(wait_until(30, lambda: audit_of(self.fleet.ca_root).count(job + ": delivered") == 4))
        for path in ("/hook", "/all", "/flaky"):
            self.assertEqual(len(self.hooks.of(path, job)), 1, path)
        self.assertEqual(self.hooks.of("/sched", job), [])

    def test_a_job_that_succeeded_goes_only_to_finished_targets(self):
        job = self.start("ping")
        self.assertTrue(wait_until(120, lambda: self.hooks.of("/all", job), pause=0.2))
        doc = json.loads(self.hooks.of("/all", job)[0][1])
        self.assertEqual((doc["outcome"], doc["counts"]["ok"]), ("ok", 2))
        self.assertTrue(wait_until(30, lambda: "notify every-job %s: delivered" % job in audit_of(self.fleet.ca_root)))
        self.assertEqual(self.hooks.of("/hook", job), [])
        self.assertFalse(any(job in m for _, m in self.mail.messages))

    def test_a_schedules_runs_reach_the_targets_it_names(self):
        status, doc, _ = self.api.request("POST", "/api/v1/schedules", self.admin, {
            "name": "told", "request": {"spec": "m1", "module": "test", "method": "ping"},
            "every": 1, "notify": ["nosuch"]})
        self.assertEqual(status, 400, doc)
        self.assertIn("nosuch", doc["error"])
        status, doc, _ = self.api.request("POST", "/api/v1/schedules", self.admin, {
            "name": "told", "request": {"spec": "m1", "module": "test", "method": "ping"},
            "every": 1, "notify": ["sched"]})
        self.assertEqual(status, 201, doc)
        try:
            self.assertTrue(wait_until(120, lambda: self.hooks.of("/sched"), pause=0.2))
        finally:
            self.api.request("DELETE", "/api/v1/schedules/told", self.admin)
        doc = json.loads(self.hooks.of("/sched")[0][1])
        self.assertEqual(doc["schedule"], "told")

    def test_func_schedule_add_names_known_targets_only(self):
        func = [binary("func"), "--root", self.fleet.ca_root, "schedule", "add"]
        r = subprocess.run(func + ["cli-told", "--every", "3600", "--notify", "nosuch", "m1", "test", "ping"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("[notify.nosuch]", r.stderr)
        r = subprocess.run(func + ["cli-told", "--every", "3600", "--disabled", "--notify", "sched", "m1", "test", "ping"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        status, doc, _ = self.api.request("GET", "/api/v1/schedules/cli-told", self.admin)
        self.assertEqual((status, doc.get("notify")), (200, ["sched"]), doc)
        self.api.request("DELETE", "/api/v1/schedules/cli-told", self.admin)

    def test_the_web_ui_lists_the_targets(self):
        job = self.start("ping", spec="m1")
        self.assertTrue(wait_until(120, lambda: "notify every-job %s: delivered" % job in audit_of(self.fleet.ca_root)))
        b = Browser()
        try:
            b.get("https://localhost:%d/" % self.api.port)
            b.wait_for("input[name=token]")
            b.type("input[name=token]", self.admin)
            b.click("#login")
            b.wait_for("#minions tbody tr")
            b.get("https://localhost:%d/notifications" % self.api.port)
            b.wait_for("#notifications tbody tr")
            text = b.text("#notifications")
            for want in ("every-job", "webhook", "mail to ops@example.test", "delivered", "schedules"):
                self.assertIn(want, text)
        finally:
            b.close()

    def test_the_targets_and_their_last_delivery_are_listed(self):
        job = self.start("ping", spec="m2")
        self.assertTrue(wait_until(120, lambda: "notify every-job %s: delivered" % job in audit_of(self.fleet.ca_root)))
        status, doc, _ = self.api.request("GET", "/api/v1/notifications", self.admin)
        self.assertEqual(status, 200, doc)
        by = {t["name"]: t for t in doc["targets"]}
        self.assertEqual(set(by), {"hook", "every-job", "sched", "flaky", "mail"})
        self.assertEqual((by["mail"]["kind"], by["mail"]["destination"]), ("mail", "mail to ops@example.test"))
        self.assertEqual(by["sched"]["for"], "schedules")
        self.assertTrue(by["every-job"]["last"]["ok"])
        self.assertNotIn(SECRET, json.dumps(doc))
        limited = self.api.token("notify-limited", "--allow", "m1=test.*")
        self.assertEqual(self.api.request("GET", "/api/v1/notifications", limited)[0], 403)
        # Where notices go is an administrator's to say.
        status, doc, _ = self.api.request("POST", "/api/v1/schedules", limited, {
            "name": "limited-told", "request": {"spec": "m1", "module": "test", "method": "ping"},
            "every": 3600, "enabled": False, "notify": ["hook"]})
        self.assertEqual(status, 403, doc)


class TwoServicesOneStoreTest(unittest.TestCase):
    """Two func-api on one PostgreSQL store: each job told to each target once."""

    def test_each_job_is_told_once(self):
        pg = Postgres()
        fleet = hooks = a = b = None
        try:
            fleet = Fleet()
            fleet.start_minion("m1")
            hooks = Hooks()
            url = "http://127.0.0.1:%d" % hooks.port
            shared = ("[store]\nurl = %s\n[notify.hook]\nurl = %s/hook\nsecret = %s\non = finished\n"
                      % (pg.url, url, SECRET))
            a = Api(fleet, conf=shared)
            b = Api(fleet)
            token = a.token("admin", "--admin")
            jobs = []
            for _ in range(3):
                status, doc, _ = a.request("POST", "/api/v1/calls", token, {"spec": "m1", "module": "test", "method": "ping", "async": True})
                self.assertEqual(status, 202, doc)
                jobs.append(doc["job_id"])
            # Both services see each end: one delivers, the other says so.
            for job in jobs:
                self.assertTrue(wait_until(120, lambda: "notify hook %s: delivered" % job in audit_of(fleet.ca_root)
                                           and "notify hook %s: told by another func-api" % job in audit_of(fleet.ca_root), pause=0.2),
                                audit_of(fleet.ca_root)[-3000:])
                self.assertEqual(len(hooks.of("/hook", job)), 1)
        finally:
            for x in (b, a, hooks, fleet):
                if x:
                    x.close()
            pg.close()


if __name__ == "__main__":
    unittest.main()
