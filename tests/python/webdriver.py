"""A tiny W3C WebDriver client (standard library only) for Debian's
chromedriver driving headless Chromium: sessions, navigation, elements,
clicks, typing, scripts and screenshots. The browser starts with a fresh
profile and without the background services that call out to Google (this
machine's network is closed; a test must load nothing from outside)."""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(Exception):
    pass


class Browser:
    def __init__(self):
        self.driver_bin = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        self.chrome_bin = shutil.which("chromium") or "/usr/bin/chromium"
        if not os.path.exists(self.driver_bin) or not os.path.exists(self.chrome_bin):
            raise WebDriverError("chromium and chromium-driver are not installed (make deps installs them)")
        self.profile = tempfile.mkdtemp(prefix="func-chrome-")
        self.port = free_port()
        # Its own process group: close() ends chromedriver and every browser
        # process it started, even if the session was never made.
        self.proc = subprocess.Popen([self.driver_bin, "--port=%d" % self.port], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.base = "http://127.0.0.1:%d" % self.port
        deadline = time.time() + 20
        while True:
            try:
                self._call("GET", "/status")
                break
            except (OSError, WebDriverError):
                if time.time() > deadline:
                    self.proc.kill()
                    raise WebDriverError("chromedriver did not start")
                time.sleep(0.1)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--disable-extensions", "--window-size=1280,900",
                "--user-data-dir=" + self.profile]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "acceptInsecureCerts": True,
            "goog:chromeOptions": {"binary": self.chrome_bin, "args": args}}}}
        self.session = None
        try:
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except Exception:
            self.close()
            raise

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                doc = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
            raise WebDriverError(str(doc.get("value", doc))[:500])
        return doc.get("value", doc)

    def s(self, method, path, body=None):
        return self._call(method, "/session/%s%s" % (self.session, path), body)

    def get(self, url):
        self.s("POST", "/url", {"url": url})

    def url(self):
        return self.s("GET", "/url")

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css):
        return [e[ELEMENT] for e in self.s("POST", "/elements", {"using": "css selector", "value": css})]

    def wait_for(self, css, limit=20):
        end = time.time() + limit
        while True:
            found = self.find_all(css)
            if found:
                return found[0]
            if time.time() > end:
                raise WebDriverError("no %s after %ss; page: %s" % (css, limit, self.text("body")[:500]))
            time.sleep(0.1)

    def click(self, css):
        self.s("POST", "/element/%s/click" % self.wait_for(css), {})

    def type(self, css, text):
        el = self.wait_for(css)
        self.s("POST", "/element/%s/clear" % el, {})
        self.s("POST", "/element/%s/value" % el, {"text": text})

    def text(self, css):
        """The rendered text of the first match, read in one step (the page
        may replace the element at any moment)."""
        return self.js("const e = document.querySelector(arguments[0]); return e ? e.innerText : ''", css)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def until(self, limit, cond, what="condition"):
        end = time.time() + limit
        while time.time() < end:
            if cond():
                return True
            time.sleep(0.1)
        if cond():
            return True
        raise WebDriverError("%s not met in %ss; page: %s" % (what, limit, self.text("body")[:800]))

    def screenshot(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.s("GET", "/screenshot")))

    def close(self):
        if self.session:
            try:
                self.s("DELETE", "")
            except (OSError, WebDriverError):
                pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            os.killpg(self.proc.pid, 9)  # any browser process left behind
        except OSError:
            pass
        shutil.rmtree(self.profile, ignore_errors=True)
