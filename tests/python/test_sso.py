"""Single sign-on (DESIGN §14, `[oidc]` and `[roles]`) against a real
OpenID provider run on loopback (oauth2-mock-server under Node.js, from
tests/oidc, installed by `make deps`): a person signs in through the
browser, runs what their group's role allows and is refused what it does
not, and signs out; sign-ins that must fail do (no mapped group, a wrong
nonce, a forged state, another browser's sign-in, an expired ID token, an
http issuer off loopback); the session ends with the ID token; the client
secret is never shown."""

import http.client
import json
import os
import shutil
import subprocess
import time
import unittest
import urllib.parse

from funcfixture import Fleet, binary, stop
from test_api import CSRF, Api, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
IDP_DIR = os.path.join(HERE, "..", "oidc")
SECRET = "s3cret-never-shown-4711"


class Provider:
    """The OpenID provider: its own process, ended by pid in close()."""

    def __init__(self, person_file):
        node = shutil.which("node") or shutil.which("nodejs")
        if not node or not os.path.isdir(os.path.join(IDP_DIR, "node_modules", "oauth2-mock-server")):
            raise RuntimeError("Node.js and tests/oidc's packages are needed (make deps installs them)")
        self.proc = subprocess.Popen([node, os.path.join(IDP_DIR, "idp.mjs"), person_file],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=IDP_DIR)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("issuer "):
            stop(self.proc)
            raise RuntimeError("the OpenID provider did not start: " + self.proc.stderr.read().decode())
        self.issuer = line.split()[1]

    def close(self):
        stop(self.proc)


def read(path):
    """A file's text, or "" when it does not exist."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def cookies_of(response):
    """name → value of every Set-Cookie of an http.client response."""
    out = {}
    for k, v in response.getheaders():
        if k.lower() == "set-cookie":
            name, _, rest = v.partition("=")
            out[name] = rest.split(";", 1)[0]
    return out


class SsoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.minion_roots = {}
        try:
            for name in ("web1", "db1"):
                root, _ = cls.fleet.start_minion(name)
                cls.minion_roots[name] = root
            cls.person = os.path.join(cls.fleet.ca_root, "person.json")
            cls.be({"preferred_username": "alice", "groups": ["web-team", "unrelated"]})
            cls.idp = Provider(cls.person)
        except BaseException:
            cls.fleet.close()
            raise
        secret = os.path.join(cls.fleet.ca_root, "etc/func/oidc.secret")
        os.makedirs(os.path.dirname(secret), exist_ok=True)
        with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(SECRET + "\n")
        conf = ("[api]\nauth_failures_per_minute = 100000\nmin_every_limited = 1\n"
                "[oidc]\nissuer = %s\nclient_id = func-api\nclient_secret_file = etc/func/oidc.secret\n"
                "[roles]\nweb-team = web*=test.*\nOps = admin\n" % cls.idp.issuer)
        try:
            cls.api = Api(cls.fleet, conf=conf)
        except BaseException:
            cls.idp.close()
            cls.fleet.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.api.close()
        cls.idp.close()
        cls.fleet.close()

    @classmethod
    def be(cls, person):
        """The person the provider signs in next."""
        with open(cls.person + ".tmp", "w") as f:
            json.dump(person, f)
        os.replace(cls.person + ".tmp", cls.person)

    def sign_in(self, tamper=None, keep_binding=True, stolen=False):
        """A sign-in as a browser makes it (redirects followed by hand):
        the callback's status, page and cookies. `stolen`: another browser
        brings the same state and code back first."""
        status, _, r = self.api.request("GET", "/api/v1/login/oidc")
        self.assertEqual(status, 302)
        binding = cookies_of(r)["func_oidc"]
        to_idp = urllib.parse.urlsplit(r.getheader("Location"))
        self.assertEqual("%s://%s" % (to_idp.scheme, to_idp.netloc), self.idp.issuer)
        asked = urllib.parse.parse_qs(to_idp.query)
        self.assertEqual(asked["code_challenge_method"], ["S256"])
        self.assertTrue(asked["nonce"][0] and asked["state"][0])
        c = http.client.HTTPConnection(to_idp.hostname, to_idp.port, timeout=30)
        c.request("GET", to_idp.path + "?" + to_idp.query)
        back = c.getresponse()
        back.read()
        c.close()
        self.assertEqual(back.status, 302)
        back = urllib.parse.urlsplit(back.getheader("Location"))
        query = back.query if tamper is None else tamper(back.query)
        headers = {"Cookie": "func_oidc=" + binding} if keep_binding else {}
        if stolen:
            self.assertEqual(self.api.request("GET", back.path + "?" + query)[0], 400)
        status, page, r = self.api.request("GET", back.path + "?" + query, headers=headers)
        return status, page, cookies_of(r)

    def session_of(self, cookies):
        return {"Cookie": "func_session=" + cookies["func_session"]}

    def test_login_options_say_sso_is_offered(self):
        status, doc, _ = self.api.request("GET", "/api/v1/login/options")
        self.assertEqual((status, doc), (200, {"token": True, "oidc": True}))

    def test_a_role_gives_its_rights_and_nothing_more(self):
        self.be({"preferred_username": "alice", "groups": ["web-team", "unrelated"]})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 200, page)
        self.assertIn("oidc:alice", page)
        h = dict(self.session_of(cookies), **CSRF)
        status, doc, _ = self.api.request("POST", "/api/v1/calls", body={"spec": "web1", "module": "test", "method": "ping"}, headers=h)
        self.assertEqual((status, doc), (200, {"web1": 1}))
        db1_audit = os.path.join(self.minion_roots["db1"], "var/log/func/audit.log")
        before = read(db1_audit)
        for body in ({"spec": "db1", "module": "test", "method": "ping"},
                     {"spec": "web1", "module": "command", "method": "run", "args": ["id"]},
                     {"spec": "*", "module": "test", "method": "ping"}):
            status, doc, _ = self.api.request("POST", "/api/v1/calls", body=body, headers=h)
            self.assertEqual(status, 403, (body, doc))
        self.assertEqual(read(db1_audit), before, "nothing reached db1")
        # Only the minions its rights reach; admin endpoints refused.
        status, doc, _ = self.api.request("GET", "/api/v1/minions", headers=h)
        self.assertEqual([m["name"] for m in doc["minions"]], ["web1"])
        self.assertEqual(self.api.request("GET", "/api/v1/keys", headers=h)[0], 403)
        # Who asked is named everywhere: the job, the API's audit, the minion.
        status, doc, _ = self.api.request("POST", "/api/v1/calls", headers=h,
                                          body={"spec": "web1", "module": "test", "method": "ping", "async": True})
        self.assertEqual(status, 202, doc)
        status, job, _ = self.api.request("GET", "/api/v1/jobs/" + urllib.parse.quote(doc["job_id"], safe=""), headers=h)
        self.assertEqual(status, 200, job)
        self.assertIn("oidc:alice", json.dumps(job))
        api_audit = read(os.path.join(self.fleet.ca_root, "var/log/func/api-audit.log"))
        self.assertTrue(any("oidc:alice" in line and "call test.ping" in line for line in api_audit.splitlines()), api_audit[-2000:])
        web1_audit = read(os.path.join(self.minion_roots["web1"], "var/log/func/audit.log"))
        self.assertIn("oidc:alice", web1_audit)
        # A schedule of a person: beyond its role refused; within it, owned
        # by oidc:alice and run with what its groups give.
        status, doc, _ = self.api.request("POST", "/api/v1/schedules", headers=h, body={
            "name": "alice-db", "request": {"spec": "db1", "module": "test", "method": "ping"}, "every": 1})
        self.assertEqual(status, 403, doc)
        status, doc, _ = self.api.request("POST", "/api/v1/schedules", headers=h, body={
            "name": "alice-s", "request": {"spec": "web1", "module": "test", "method": "ping"}, "every": 1})
        self.assertEqual(status, 201, doc)
        self.assertEqual(doc["owner"], "oidc:alice")
        try:
            def scheduled_job():
                _, page, _ = self.api.request("GET", "/api/v1/jobs?limit=20", headers=h)
                return [j for j in page["jobs"] if j.get("schedule") == "alice-s"]
            self.assertTrue(wait_until(120, scheduled_job, pause=0.3))
            self.assertEqual(scheduled_job()[0]["user"], "oidc:alice")
        finally:
            self.assertEqual(self.api.request("DELETE", "/api/v1/schedules/alice-s", headers=dict(h, **CSRF))[0], 204)
        # Signed out: the session is gone.
        self.assertEqual(self.api.request("POST", "/api/v1/logout", headers=h)[0], 200)
        self.assertEqual(self.api.request("GET", "/api/v1/minions", headers=h)[0], 401)

    def test_an_admin_group_is_admin_and_groups_are_compared_without_case(self):
        self.be({"preferred_username": "root-person", "groups": ["OPS"]})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 200, page)
        status, doc, _ = self.api.request("GET", "/api/v1/keys", headers=self.session_of(cookies))
        self.assertEqual(status, 200, doc)

    def test_no_mapped_group_no_session(self):
        self.be({"preferred_username": "mallory", "groups": ["interns"]})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 403, page)
        self.assertIn("none of its groups", page)
        self.assertIn("interns", page)
        self.assertNotIn("func_session", cookies)
        self.be({"preferred_username": "nogroups"})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 403, page)
        self.assertNotIn("func_session", cookies)

    def test_a_wrong_nonce_is_refused(self):
        self.be({"preferred_username": "alice", "groups": ["web-team"], "nonce": "replayed-nonce"})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 400, page)
        self.assertIn("nonce", page.lower())
        self.assertNotIn("func_session", cookies)

    def test_a_forged_state_is_refused(self):
        self.be({"preferred_username": "alice", "groups": ["web-team"]})

        def forge(query):
            q = urllib.parse.parse_qs(query)
            q["state"] = ["forged" + q["state"][0][6:]]
            return urllib.parse.urlencode({k: v[0] for k, v in q.items()})
        status, page, cookies = self.sign_in(tamper=forge)
        self.assertEqual(status, 400, page)
        self.assertIn("state", page)
        self.assertNotIn("func_session", cookies)

    def test_another_browsers_sign_in_is_refused(self):
        self.be({"preferred_username": "alice", "groups": ["web-team"]})
        status, page, cookies = self.sign_in(keep_binding=False)
        self.assertEqual(status, 400, page)
        self.assertIn("another browser", page)
        self.assertNotIn("func_session", cookies)

    def test_a_host_header_not_ours_is_refused(self):
        status, doc, r = self.api.request("GET", "/api/v1/login/oidc", headers={"Host": "evil.example"})
        self.assertEqual(status, 400, doc)
        self.assertIsNone(r.getheader("Location"))

    def test_one_who_learnt_a_state_cannot_cancel_the_sign_in(self):
        self.be({"preferred_username": "alice", "groups": ["web-team"]})
        status, page, cookies = self.sign_in(stolen=True)
        self.assertEqual(status, 200, page)
        self.assertIn("func_session", cookies)

    def test_the_providers_error_text_is_not_shown(self):
        status, page, r = self.api.request(
            "GET", "/api/v1/login/oidc/callback?error=access_denied&error_description=" + urllib.parse.quote("<b>Call 555-SPOOF</b>"))
        self.assertEqual(status, 400)
        self.assertIn("access_denied", page)
        self.assertNotIn("SPOOF", page)
        self.assertIn("default-src 'none'", r.getheader("Content-Security-Policy"))

    def test_an_expired_id_token_is_refused(self):
        self.be({"preferred_username": "alice", "groups": ["web-team"], "exp_in": -300})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 400, page)
        self.assertIn("expired", page.lower())
        self.assertNotIn("func_session", cookies)

    def test_a_session_ends_with_its_id_token(self):
        self.be({"preferred_username": "brief", "groups": ["web-team"], "exp_in": 20})
        status, page, cookies = self.sign_in()
        self.assertEqual(status, 200, page)
        h = self.session_of(cookies)
        self.assertEqual(self.api.request("GET", "/api/v1/minions", headers=h)[0], 200)
        self.assertTrue(wait_until(120, lambda: self.api.request("GET", "/api/v1/minions", headers=h)[0] == 401, pause=0.5))

    def test_the_client_secret_is_never_shown(self):
        self.sign_in()
        for path in ("var/log/func/api-audit.log", "var/log/func/audit.log"):
            self.assertNotIn(SECRET, read(os.path.join(self.fleet.ca_root, path)))
        status, doc, _ = self.api.request("GET", "/api/v1/openapi.json")
        self.assertNotIn(SECRET, json.dumps(doc))

    def test_an_http_issuer_off_loopback_is_refused(self):
        other = os.path.join(self.fleet.dir, "other-api")
        shutil.copytree(self.fleet.ca_root, other, symlinks=True, ignore=shutil.ignore_patterns("overlord.conf", "var"))
        with open(os.path.join(other, "etc/func/overlord.conf"), "w") as f:
            f.write("[oidc]\nissuer = http://sso.example.org\nclient_id = x\nclient_secret = %s\n[roles]\na = admin\n" % SECRET)
        r = subprocess.run([binary("func-api"), "--root", other, "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("refused except on loopback", r.stderr)
        self.assertNotIn(SECRET, r.stdout + r.stderr)


class SsoBrowserTest(unittest.TestCase):
    """The same sign-in in a real browser: the login page offers it."""

    def test_sign_in_run_be_refused_sign_out(self):
        from webdriver import Browser
        t = SsoTest
        t.setUpClass()
        try:
            t.be({"preferred_username": "alice", "groups": ["web-team"]})
            b = Browser()
            try:
                base = "https://localhost:%d" % t.api.port
                b.get(base + "/")
                b.wait_for("#sso")
                b.click("#sso")
                b.wait_for("#minions tbody tr")
                self.assertEqual([r for r in b.text("#minions tbody").split() if r.startswith(("web", "db"))][:1], ["web1"])
                ran = b.js("""return fetch('/api/v1/calls', {method: 'POST', credentials: 'same-origin',
                    headers: {'X-Func-CSRF': '1', 'Content-Type': 'application/json'},
                    body: JSON.stringify(arguments[0])}).then(r => r.status)""",
                           {"spec": "web1", "module": "test", "method": "ping"})
                self.assertEqual(ran, 200)
                refused = b.js("""return fetch('/api/v1/calls', {method: 'POST', credentials: 'same-origin',
                    headers: {'X-Func-CSRF': '1', 'Content-Type': 'application/json'},
                    body: JSON.stringify(arguments[0])}).then(r => r.status)""",
                               {"spec": "db1", "module": "test", "method": "ping"})
                self.assertEqual(refused, 403)
                b.click("a.right")
                b.wait_for("#sso")
                gone = b.js("return fetch('/api/v1/minions', {credentials: 'same-origin'}).then(r => r.status)")
                self.assertEqual(gone, 401)
            finally:
                b.close()
        finally:
            t.tearDownClass()


if __name__ == "__main__":
    unittest.main()
