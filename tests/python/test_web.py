"""The web UI (DESIGN §14) in a real browser: headless Chromium driven over
WebDriver (Debian's chromium and chromium-driver, installed by `make deps`)
against a real func-api and minions. Logs in with a token, sees the
minions, runs a call from a method's form, watches a job started by the CLI
fill in live, stops a batch from its page, shows a hostile result as text,
and loads nothing from outside func-api. Screenshots of each page go to
target/web-screenshots/."""

import json
import os
import subprocess
import time
import unittest
import urllib.parse

from funcfixture import Enrolling, Fleet, binary
from test_api import CSRF, Api, wait_until
from webdriver import Browser

SHOTS = os.path.join(os.path.dirname(__file__), "..", "..", "target", "web-screenshots")
HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def enc(job):
    return urllib.parse.quote(job, safe="")


class WebTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        for name in ("m1", "m2", "m10", "m3"):
            cls.fleet.start_minion(name)
        try:
            cls.api = Api(cls.fleet)
        except Exception:
            cls.fleet.close()
            raise
        cls.token = cls.api.token("web", "--admin")
        cls.base = "https://localhost:%d" % cls.api.port
        try:
            cls.browser = Browser()
        except Exception:
            cls.api.close()
            cls.fleet.close()
            raise
        b = cls.browser
        b.get(cls.base + "/")
        b.wait_for("input[name=token]")
        b.screenshot(os.path.join(SHOTS, "login.png"))
        b.type("input[name=token]", cls.token)
        b.click("#login")
        try:
            b.wait_for("#minions tbody tr")
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.api.close()
        cls.fleet.close()

    def func(self, *args):
        return subprocess.run([binary("func"), "--root", self.fleet.ca_root] + list(args),
                              capture_output=True, text=True, timeout=120)

    def job_id(self, out):
        return out.stdout.split("JOB_ID:")[1].split()[0].strip("'")

    def test_login_shows_the_minions_in_natural_order_with_a_filter(self):
        b = self.browser
        b.get(self.base + "/")
        b.wait_for("#minions tbody tr")
        names = b.js("return [...document.querySelectorAll('#minions tbody tr')].map(r => r.dataset.host)")
        self.assertEqual(names, ["m1", "m2", "m3", "m10"])
        b.click("#ping")
        b.until(20, lambda: len(b.find_all("#minions .badge.ok")) == 4, "every minion answered the ping")
        b.screenshot(os.path.join(SHOTS, "minions.png"))
        b.type("#filter", "m1*")
        names = b.js("return [...document.querySelectorAll('#minions tbody tr')].map(r => r.dataset.host)")
        self.assertEqual(names, ["m1", "m10"])
        cookie = b.js("return document.cookie")
        self.assertNotIn("func_session", cookie, "the session cookie is HttpOnly")

    def test_the_minion_list_filters_by_facts_the_minions_judge(self):
        b = self.browser
        b.get(self.base + "/")
        b.wait_for("#minions tbody tr")
        rows = lambda: b.js("return [...document.querySelectorAll('#minions tbody tr')].map(r => r.dataset.host)")
        b.type("#fact-filter", "num_cpus>=1\ue007")  # Enter
        b.until(30, lambda: rows() == ["m1", "m2", "m3", "m10"], "every minion has a CPU")
        b.js("document.querySelector('#fact-filter').value = ''")
        b.type("#fact-filter", "num_cpus>=100000\ue007")
        b.until(30, lambda: rows() == [], "no minion has that many")
        self.assertIn("can't find any minions", b.text("#fact-note"))
        b.screenshot(os.path.join(SHOTS, "minions-by-facts.png"))

    def test_a_method_form_runs_a_call_and_shows_the_results(self):
        b = self.browser
        b.get(self.base + "/minions/m1")
        b.wait_for("details[data-module=test]")
        b.js("document.querySelector('details[data-module=test]').open = true;"
             "document.querySelector('details[data-method=\"test.add\"]').open = true;")
        b.wait_for("details[data-method='test.add'] form")
        b.type("details[data-method='test.add'] input[name=numb1]", "2")
        b.type("details[data-method='test.add'] input[name=numb2]", "40")
        b.type("details[data-method='test.add'] input[name=spec]", "m1;m2")
        b.click("details[data-method='test.add'] button[type=submit]")
        b.wait_for("#resolved")
        self.assertEqual(b.text("#resolved"), "m1 m2", "the hosts are shown before sending")
        b.screenshot(os.path.join(SHOTS, "method-form.png"))
        b.click("button.confirm")
        b.wait_for("table.results tbody tr")
        b.until(10, lambda: len(b.find_all("table.results tbody tr")) == 2)
        rows = b.js("return [...document.querySelectorAll('table.results tbody tr')].map(r => r.innerText)")
        self.assertTrue(all("42" in r and "ok" in r for r in rows), rows)

    def test_a_cli_job_is_watched_live_and_can_be_killed(self):
        b = self.browser
        out = self.func("m1;m2;m3", "call", "command", "run", "sleep 2; echo done", "--async", "--nopoll")
        job = self.job_id(out)
        slow = self.job_id(self.func("m10", "call", "test", "sleep", "60", "--async", "--nopoll"))
        b.get(self.base + "/jobs/" + enc(job))
        b.wait_for("#results tbody tr")
        b.js("window.sameLoad = 42")
        b.until(10, lambda: "3 waiting" in b.text("#count-waiting") or "ok" in b.text("#count-ok"))
        b.screenshot(os.path.join(SHOTS, "job-running.png"))
        b.until(30, lambda: b.text("#count-ok") == "3 ok", "the results arrived")
        self.assertEqual(b.js("return window.sameLoad"), 42, "no reload")
        self.assertIn("done", b.text("#results"))
        self.assertEqual(len(b.find_all("#results .badge.ok")), 6, "3 hosts ok, each exit 0")
        b.screenshot(os.path.join(SHOTS, "job.png"))
        # Kill from the page.
        b.get(self.base + "/jobs/" + enc(slow))
        b.until(20, lambda: b.text("#count-waiting") == "1 waiting")
        b.click("#kill")
        b.until(30, lambda: b.text("#count-failed") == "1 failed", "the killed host shows as failed")
        self.assertIn("killed", b.text("#results").lower())
        # The kill reached m10 as the token's name, not as func-api's user.
        with open(os.path.join(self.fleet.dir, "m10", "var/log/func/audit.log")) as f:
            audit = f.read()
        signals = [l for l in audit.splitlines() if "jobs.signal_job" in l]
        self.assertTrue(signals and all("(user api:web)" in l for l in signals), signals)
        b.screenshot(os.path.join(SHOTS, "job-killed.png"))

    def test_the_stop_button_stops_a_batch(self):
        b = self.browser
        out = self.func("*", "call", "test", "sleep", "3", "--async", "--batch", "1")
        batch = self.job_id(out)
        b.get(self.base + "/batches/" + enc(batch))
        b.until(20, lambda: b.text("#b-active") == "1 active")
        b.screenshot(os.path.join(SHOTS, "batch.png"))
        b.click("#stop")
        state = lambda: b.js("const e = document.querySelector('[data-state]'); return e ? e.dataset.state : ''")
        b.until(30, lambda: state().startswith("halted"), "the batch halted")
        doc = self.api.request("GET", "/api/v1/batches/" + enc(batch), self.api.token("check%d" % time.time_ns(), "--admin"))[1]
        self.assertEqual(doc["halted"], "stopped")
        self.assertLess(doc["counts"]["done"], 4, "not every host ran")
        self.assertGreater(doc["counts"]["abandoned"], 0)
        b.screenshot(os.path.join(SHOTS, "batch-stopped.png"))

    def test_failed_jobs_are_red_and_a_job_page_says_who_when_and_how(self):
        b = self.browser
        job = self.job_id(self.func("m1;m2", "call", "test", "explode", "--async", "--nopoll"))
        b.get(self.base + "/jobs/" + enc(job))
        b.until(30, lambda: b.text("#count-failed") == "2 failed")
        about = b.js("return Object.fromEntries([...document.querySelectorAll('#about dd')].map(d => [d.dataset.about, d.textContent]))")
        self.assertEqual(about["who"], "cli:root")
        self.assertEqual(about["target"], "m1;m2")
        self.assertEqual(about["arguments"], "[]")
        self.assertTrue(about["started"].endswith("UTC"), about)
        b.until(30, lambda: b.js("return document.querySelector('#about dd[data-about=took]').textContent") != "running")
        self.assertEqual(b.js("return getComputedStyle(document.querySelector('#results')).tableLayout"), "fixed",
                         "columns keep their widths while rows arrive")
        self.assertTrue(b.find_all("a[href='/jobs']"), "a way back to the jobs")
        b.get(self.base + "/jobs")
        b.wait_for("#jobs tbody tr")
        badge = b.js("const r = [...document.querySelectorAll('#jobs tbody tr')].find(r => r.innerText.includes(arguments[0]));"
                     "const e = r && r.querySelector('.outcome'); return e ? [e.textContent, e.className] : null", job)
        self.assertEqual(badge[0], "failed")
        self.assertIn("failed", badge[1], "shown red")
        b.screenshot(os.path.join(SHOTS, "jobs-failed.png"))

    def test_an_unknown_page_is_a_page_and_a_minion_shows_its_facts(self):
        b = self.browser
        b.get(self.base + "/no/such/page")
        b.wait_for("h1")
        self.assertEqual(b.text("h1"), "No such page")
        self.assertTrue(b.find_all("a[href='/jobs']"))
        status, doc, r = self.api.request("GET", "/no/such/page")
        self.assertEqual(status, 404)
        self.assertIn("text/html", r.getheader("Content-Type"))
        b.get(self.base + "/minions/m1")
        b.until(30, lambda: b.js("const d = document.querySelector('#facts dd[data-fact=kernel]'); return d ? d.textContent : ''") != "")
        kernel = b.js("return document.querySelector('#facts dd[data-fact=kernel]').textContent")
        self.assertEqual(kernel, os.uname().release)
        self.assertTrue(b.js("return !!document.querySelector('#facts dd[data-fact=os_family]')"))
        self.assertIn("read now", b.text("#facts-note"))
        b.screenshot(os.path.join(SHOTS, "minion-facts.png"))

    def test_a_batch_whose_driver_died_is_recovered_from_its_page(self):
        import signal
        b = self.browser
        admin = self.api.token("rec%d" % time.time_ns(), "--admin")
        batch = self.job_id(self.func("*", "call", "test", "sleep", "2", "--async", "--nopoll", "--batch", "1"))
        doc = {}

        def driver():
            doc.update(self.api.request("GET", "/api/v1/batches/" + enc(batch), admin)[1])
            return doc.get("driver_pid")
        self.assertTrue(wait_until(30, driver))
        os.kill(doc["driver_pid"], signal.SIGKILL)
        b.get(self.base + "/batches/" + enc(batch))
        b.until(30, lambda: b.js("const e = document.querySelector('#recover'); return !!e && !e.hidden"),
                "Recover is offered for a batch nobody drives")
        b.click("#recover")
        b.until(60, lambda: self.api.request("GET", "/api/v1/batches/" + enc(batch), admin)[1]["complete"],
                "the recovered batch ran to its end")

    def test_a_hostile_result_is_shown_as_text_and_runs_nothing(self):
        b = self.browser
        status, doc, _ = self.api.request("POST", "/api/v1/calls", self.token,
                                          {"spec": "m1", "module": "test", "method": "echo", "args": [HOSTILE], "async": True})
        job = doc["job_id"]
        b.get(self.base + "/jobs/" + enc(job))
        b.until(20, lambda: b.text("#count-ok") == "1 ok")
        self.assertIn(HOSTILE, b.text("#results"))
        self.assertIsNone(b.js("return window.pwned === undefined ? null : window.pwned"))
        self.assertEqual(b.js("return document.querySelectorAll('#results img, #results script').length"), 0)

    def test_nothing_is_loaded_from_outside_and_the_policy_is_strict(self):
        b = self.browser
        b.get(self.base + "/jobs")
        b.wait_for("#jobs")
        b.screenshot(os.path.join(SHOTS, "jobs.png"))
        origin = self.base
        urls = b.js("return performance.getEntriesByType('resource').map(e => e.name).concat([location.href])")
        self.assertTrue(urls)
        for u in urls:
            self.assertTrue(u.startswith(origin + "/"), u)
        status, _, r = self.api.request("GET", "/")
        self.assertEqual(status, 200)
        csp = r.getheader("Content-Security-Policy")
        self.assertIn("default-src 'none'", csp)
        self.assertIn("script-src 'self'", csp)
        self.assertNotIn("unsafe-inline", csp)
        # A cookie session cannot change anything without the page's header.
        status, doc, r = self.api.request("POST", "/api/v1/login", body={"token": self.token}, headers=CSRF)
        session = r.getheader("Set-Cookie").split(";")[0]
        status, doc, _ = self.api.request("POST", "/api/v1/calls", headers={"Cookie": session},
                                          body={"spec": "m1", "module": "test", "method": "ping"})
        self.assertEqual(status, 403, doc)

    def test_a_job_of_1000_hosts_renders_without_freezing(self):
        """A job with 1,000 finished hosts (written into the store): the page
        shows every row, a slice per frame; the time it took goes to
        target/web-screenshots/thousand.json for the closing note."""
        subprocess.run([binary("func-bench-fill"), self.fleet.ca_root, "1", "1000"], check=True,
                       stdout=subprocess.DEVNULL)
        jobs = self.api.request("GET", "/api/v1/jobs?limit=1", self.token)[1]["jobs"]
        job = jobs[0]["id"]
        self.assertEqual(jobs[0]["hosts"], 1000)
        b = self.browser
        t0 = time.time()
        b.get(self.base + "/jobs/" + enc(job))
        b.wait_for("#results tbody tr")
        first = time.time() - t0
        b.until(60, lambda: b.js("return document.querySelectorAll('#results tbody tr').length") == 1000)
        done = time.time() - t0
        self.assertEqual(b.text("#count-ok"), "1000 ok")
        # The page answered scripts while rendering (it never froze for long).
        b.screenshot(os.path.join(SHOTS, "thousand.png"))
        with open(os.path.join(SHOTS, "thousand.json"), "w") as f:
            json.dump({"first_row_s": round(first, 3), "all_rows_s": round(done, 3)}, f)

    def test_rerun_buttons_start_new_jobs(self):
        b = self.browser
        job = self.job_id(self.func("m1;m2", "call", "test", "explode", "--async", "--nopoll"))
        b.get(self.base + "/jobs/" + enc(job))
        b.until(30, lambda: b.text("#count-failed") == "2 failed")
        b.until(10, lambda: b.js("return !document.getElementById('rerun-failed').disabled"), "re-run failed is offered")
        b.click("#rerun-failed")
        b.until(30, lambda: b.url().endswith("/jobs/" + enc(job)) is False and "/jobs/" in b.url(), "the new job's page")
        b.until(30, lambda: b.text("#count-failed") == "2 failed")
        about = b.js("return Object.fromEntries([...document.querySelectorAll('#about dd')].map(d => [d.dataset.about, d.textContent]))")
        self.assertEqual(about["rerun_of"], job)
        b.screenshot(os.path.join(SHOTS, "job-rerun.png"))
        ok = self.job_id(self.func("m1", "call", "test", "ping", "--async", "--nopoll"))
        b.get(self.base + "/jobs/" + enc(ok))
        b.until(30, lambda: b.text("#count-ok") == "1 ok")
        self.assertTrue(b.js("return document.getElementById('rerun-failed').disabled"), "nothing failed")
        b.click("#rerun")
        b.until(30, lambda: not b.url().endswith(enc(ok)) and b.text("#count-ok") == "1 ok", "a new job ran")

    def test_the_keys_page_signs_the_fingerprint_compared_and_revokes(self):
        enrolling = Enrolling(self.fleet, "webnew1")
        try:
            b = self.browser
            b.get(self.base + "/keys")
            b.until(60, lambda: "webnew1" in b.text("#pending") or b.get(self.base + "/keys"), "the request is listed")
            # Shown abbreviated (compare, do not copy): funcd's beginning and end.
            shown = b.text('#pending tr[data-key="webnew1"] code.fingerprint').lower()
            parts = enrolling.fingerprint.lower().split(":")
            self.assertEqual(shown, ":".join(parts[:4]) + ":…:" + ":".join(parts[-4:]))
            b.screenshot(os.path.join(SHOTS, "keys-pending.png"))
            # Another fingerprint: refused, said, still pending.
            b.type('#pending tr[data-key="webnew1"] input[name=fingerprint]', "SHA256:" + "ab" * 32)
            b.click('#pending tr[data-key="webnew1"] button[type=submit]')
            b.until(20, lambda: "nothing signed" in b.text("#keys-info"))
            # Three of the hidden middle bytes together: a byte alone ("cd") can occur in any text.
            self.assertNotIn(":".join(parts[5:8]), b.text("#keys-info").lower(), "the right fingerprint is not said")
            self.assertIn("webnew1", b.text("#pending"))
            b.type('#pending tr[data-key="webnew1"] input[name=fingerprint]', enrolling.fingerprint)
            b.click('#pending tr[data-key="webnew1"] button[type=submit]')
            b.until(20, lambda: "webnew1" in b.text("#signed"), "signed")
            self.assertTrue(enrolling.served())
            b.screenshot(os.path.join(SHOTS, "keys-signed.png"))
            b.click("#revoke-webnew1")
            b.until(5, lambda: "Confirm" in b.text("#revoke-webnew1"))
            b.click("#revoke-webnew1")
            b.until(20, lambda: "webnew1" in b.text("#revoked") and "webnew1" not in b.text("#signed"), "revoked")
        finally:
            enrolling.close()

    def test_the_schedules_page_adds_runs_and_disables(self):
        b = self.browser
        b.get(self.base + "/schedules")
        b.wait_for("#add-schedule")
        for field, value in (("name", "web-tick"), ("spec", "m2"), ("module", "test"), ("method", "ping"), ("when", "1")):
            b.type("#add-schedule input[name=%s]" % field, value)
        b.click("#add")
        b.until(20, lambda: "web-tick" in b.text("#schedules"), "listed")

        def outcome():
            b.get(self.base + "/schedules")
            b.wait_for("#schedules")
            return b.text('tr[data-schedule="web-tick"] .outcome')
        b.until(60, lambda: outcome() == "ok", "a run ended ok")
        b.screenshot(os.path.join(SHOTS, "schedules.png"))
        b.click('tr[data-schedule="web-tick"] button.toggle')
        b.until(20, lambda: "disabled" in b.text('tr[data-schedule="web-tick"] [data-next]'))
        # A bad cron line is refused with the reason on the page.
        for field, value in (("name", "web-bad"), ("spec", "m2"), ("module", "test"), ("method", "ping"), ("when", "0 25 * * *")):
            b.type("#add-schedule input[name=%s]" % field, value)
        b.js("document.querySelector('#add-schedule select[name=kind]').value = 'cron'")
        b.click("#add")
        b.until(20, lambda: "cron" in b.text("#schedules-info"))
        b.click("#delete-web-tick")
        b.click("#delete-web-tick")
        b.until(20, lambda: "web-tick" not in b.text("#schedules"), "deleted")

    def test_the_jobs_page_shows_and_filters_by_schedule_with_one_user_spelling(self):
        name = "web-runs"
        status, doc, _ = self.api.request("POST", "/api/v1/schedules", self.token,
                                          {"name": name, "every": 1, "request": {"spec": "m1", "module": "test", "method": "ping"}})
        self.assertEqual(status, 201, doc)
        try:
            cli_job = self.job_id(self.func("m2", "call", "test", "ping", "--async", "--nopoll"))
            admin = self.api.token("runs%d" % time.time_ns(), "--admin")
            runs = lambda: self.api.request("GET", "/api/v1/jobs?schedule=" + name, admin)[1]["jobs"]
            self.assertTrue(wait_until(60, lambda: len(runs()) >= 1), "a run of the schedule")
        finally:
            self.api.request("DELETE", "/api/v1/schedules/" + name, self.token)
        b = self.browser
        b.get(self.base + "/jobs")
        b.wait_for("#jobs tbody tr")
        row = lambda job: b.js("const r = [...document.querySelectorAll('#jobs tbody tr')].find(r => r.innerText.includes(arguments[0]));"
                               "return r ? [...r.children].map(c => c.textContent) : null", job)
        heads = b.js("return [...document.querySelectorAll('#jobs thead th')].map(t => t.textContent)")
        user_col, sched_col = heads.index("user"), heads.index("schedule")
        run = runs()[0]
        self.assertEqual(row(run["id"])[sched_col], name, "a run shows its schedule")
        self.assertEqual(row(run["id"])[user_col], "api:web", "the schedule's owner, as func-api spells it")
        self.assertEqual(row(cli_job)[user_col], "cli:root", "the command line's user, spelled as the audit trail does")
        self.assertEqual(row(cli_job)[sched_col], "")
        # Filtered by schedule: only its runs.
        b.type("#main input[name=schedule]", name)
        b.click("#main form.row button[type=submit]")
        b.until(20, lambda: "schedule=" + name in b.url())
        scheds = lambda: b.js("return [...document.querySelectorAll('#jobs tbody td[data-schedule]')].map(t => t.dataset.schedule)")
        # The filtered page replaces the whole one (rendered after its fetch).
        b.until(20, lambda: scheds() and all(s == name for s in scheds()), "only the schedule's runs are listed")
        labels = b.js("return [...document.querySelectorAll('#main form.row label')].map(l => l.textContent.trim())")
        self.assertEqual(labels, ["function", "target", "schedule"])
        b.screenshot(os.path.join(SHOTS, "jobs-by-schedule.png"))

    def test_the_audit_page_tells_exit_statuses_from_http_statuses(self):
        self.func("m1", "call", "test", "ping")          # exit 0
        self.func("nosuchhost", "call", "test", "ping")  # exit 1 (no such host)
        limited = self.api.token("few%d" % time.time_ns(), "--allow", "m1=test.ping")
        self.api.request("POST", "/api/v1/calls", limited, {"spec": "m1", "module": "command", "method": "run", "args": ["id"]})  # 403
        b = self.browser
        b.get(self.base + "/audit")
        b.wait_for("#audit tbody tr")
        badges = b.js("return [...document.querySelectorAll('#audit tbody tr')].map(r => {"
                      "const e = r.lastElementChild.querySelector('.badge');"
                      "return [r.children[1].textContent, e.textContent, e.dataset.kind, e.className]; })")
        cli = [x for x in badges if x[0].startswith("cli:")]
        api = [x for x in badges if x[0].startswith("api:")]
        self.assertIn(["exit 0", "exit"], [[x[1], x[2]] for x in cli])
        failed_cli = [x for x in cli if x[1] == "exit 1"]
        self.assertTrue(failed_cli and all("failed" in x[3] for x in failed_cli), cli)
        refused = [x for x in api if x[1] == "HTTP 403"]
        self.assertTrue(refused and all(x[2] == "http" and "failed" in x[3] for x in refused), api)
        self.assertTrue(any(x[1] == "HTTP 200" and "ok" in x[3] for x in api), api)
        self.assertFalse([x for x in badges if x[1].isdigit()], "no bare number under a badge")
        b.screenshot(os.path.join(SHOTS, "audit-statuses.png"))

    def test_the_schedule_form_has_a_label_for_every_field(self):
        b = self.browser
        b.get(self.base + "/schedules")
        b.wait_for("#add-schedule")
        fields = b.js("return [...document.querySelectorAll('#add-schedule input, #add-schedule select')].map(i => {"
                      "const l = i.closest('label'); const s = l && l.querySelector('span');"
                      "return [i.name, s ? s.textContent : '', s ? s.getBoundingClientRect().height : 0]; })")
        self.assertEqual([f[0] for f in fields], ["name", "spec", "module", "method", "args", "kind", "when", "batch"])
        for name, label, height in fields:
            self.assertTrue(label and height > 0, "%s has a visible label: %r" % (name, label))

    def test_the_audit_page_pages_and_shows_hostile_text_as_text(self):
        # An action carrying markup: a kill of a job "named" with it.
        self.func("jobs", "kill", HOSTILE)
        b = self.browser
        b.get(self.base + "/audit")
        b.wait_for("#audit tbody tr")
        b.until(20, lambda: HOSTILE in b.text("#audit"), "the hostile line is shown")
        self.assertIsNone(b.js("return window.pwned === undefined ? null : window.pwned"))
        self.assertEqual(b.js("return document.querySelectorAll('#audit img, #audit script').length"), 0)
        b.screenshot(os.path.join(SHOTS, "audit.png"))
        b.type("input[name=user]", "cli:*")
        b.click("form.row button[type=submit]")
        b.until(20, lambda: "user=cli" in b.url())
        whos = lambda: b.js("return [...document.querySelectorAll('#audit tbody tr td:nth-child(2)')].map(t => t.textContent)")
        # The filtered page replaces the whole one (rendered after its fetch).
        b.until(20, lambda: whos() and all(w.startswith("cli:") for w in whos()), "only the command line's lines")

    def test_z_a_job_with_an_unreachable_host(self):
        """Last (it stops m3): a host that cannot be reached stands out."""
        m3 = self.fleet.procs[3]
        m3.terminate()
        m3.wait(timeout=10)
        job = self.job_id(self.func("*", "call", "command", "run", "uname -sr; echo to stderr >&2", "--async", "--nopoll"))
        b = self.browser
        b.get(self.base + "/jobs/" + enc(job))
        b.until(30, lambda: b.text("#count-ok") == "3 ok" and b.text("#count-unreachable") == "1 unreachable")
        first = b.js("return document.querySelector('#results tbody tr').dataset.host")
        self.assertEqual(first, "m3", "problems first")
        b.screenshot(os.path.join(SHOTS, "job-mixed.png"))


if __name__ == "__main__":
    unittest.main()
