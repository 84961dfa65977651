"""Fixtures for the Python wire tests: a PKI made with func-testpki and a real
funcd on an ephemeral loopback port, each with its own root; everything is
ended (by pid) and removed when the fixture closes. Standard library only."""

import http.client
import http.server
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import xmlrpc.client

BIN_DIR = os.environ.get("FUNC_BIN_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "target", "debug"))


def binary(name):
    path = os.path.abspath(os.path.join(BIN_DIR, name))
    if not os.path.exists(path):
        raise RuntimeError("%s is not built (run cargo build --workspace)" % path)
    return path


def install_dropin(root, name, text):
    """A drop-in module `name` (an executable with `text`) below a minion's root."""
    modules = os.path.join(root, "etc/func/modules.d")
    os.makedirs(modules, mode=0o755, exist_ok=True)
    path = os.path.join(modules, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def stop(proc):
    """Ends `proc` (SIGTERM, then SIGKILL after 10 s) and closes its pipes."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


class NamedTransport(xmlrpc.client.SafeTransport):
    """Connects to the URL's address but checks the server's certificate
    against `name`, as the overlord does: minions are named by host names,
    never by IP addresses."""

    def __init__(self, name, context):
        super().__init__(context=context)
        self.name = name

    def make_connection(self, host):
        if self._connection and host == self._connection[0]:
            return self._connection[1]
        name, ctx = self.name, self.context

        class Conn(http.client.HTTPSConnection):
            def connect(self):
                sock = socket.create_connection((self.host, self.port), self.timeout)
                self.sock = ctx.wrap_socket(sock, server_hostname=name)

        chost, self._extra_headers, _ = self.get_host_info(host)
        self._connection = host, Conn(chost, context=ctx)
        return self._connection[1]


class Fleet:
    """A CA below <tmp>/certmaster and minions below <tmp>/<name>."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="func-py-")
        self.ca_root = os.path.join(self.dir, "certmaster")
        self.procs = []
        # Port → the name of the minion listening there.
        self.names = {}
        subprocess.run([binary("func-testpki"), "ca", self.ca_root], check=True, stdout=subprocess.DEVNULL)

    def enroll(self, name):
        root = os.path.join(self.dir, name)
        subprocess.run([binary("func-testpki"), "minion", self.ca_root, root, name], check=True, stdout=subprocess.DEVNULL)
        return root

    def start_minion(self, name, conf="", prepare=None):
        """Starts funcd for `name`; `conf`: extra [main] lines of its
        minion.conf; `prepare(root)` runs before the start."""
        root = self.enroll(name)
        if prepare:
            prepare(root)
        if conf:
            path = os.path.join(root, "etc/func/minion.conf")
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            with open(path, "a") as f:
                f.write("[main]\n" + conf + "\n")
        proc = subprocess.Popen(
            [binary("funcd"), "--root", root, "--name", name, "--listen", "127.0.0.1:0", "--foreground"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, RUST_LOG="warn"))
        self.procs.append(proc)
        line = proc.stdout.readline().decode()
        if "listening on" not in line:
            proc.wait(timeout=10)
            raise RuntimeError("funcd did not start: " + proc.stderr.read().decode())
        port = int(line.rsplit(":", 1)[1])
        self.names[port] = name
        # The overlord calls a minion at the address it advertised.
        certs = os.path.join(self.ca_root, "var/lib/certmaster/certmaster/certs")
        with open(os.path.join(certs, "%s.addr" % name), "w") as f:
            f.write("127.0.0.1:%d\n" % port)
        return root, port

    def ca_cert(self):
        return os.path.join(self.ca_root, "etc/pki/certmaster/ca/certmaster.crt")

    def context(self, cert=None, key=None, ca=None):
        """A client context trusting our CA, presenting cert/key (default: the overlord's)."""
        ctx = ssl.create_default_context(cafile=ca or self.ca_cert())
        if cert is None:
            cert = os.path.join(self.ca_root, "etc/pki/certmaster/ca/overlord.cert")
            key = os.path.join(self.ca_root, "etc/pki/certmaster/ca/overlord.pem")
        if cert:
            ctx.load_cert_chain(cert, key)
        return ctx

    def proxy(self, port, ctx=None, host="127.0.0.1"):
        """A client of the minion at `port`, its certificate checked against
        the minion's name."""
        ctx = ctx or self.context()
        name = self.names.get(port, host)
        return xmlrpc.client.ServerProxy("https://%s:%d" % (host, port), transport=NamedTransport(name, ctx),
                                         allow_none=True)

    def kill_jobs(self):
        """Ends async jobs still running below our roots (each leaves
        var/lib/func/jobs/ID.pid holding "PID STARTTIME" while it runs)."""
        for top, _dirs, files in os.walk(self.dir):
            for f in files:
                if not f.endswith(".pid") or not top.endswith(os.path.join("var", "lib", "func", "jobs")):
                    continue
                try:
                    pid, start = open(os.path.join(top, f)).read().split()
                    stat = open("/proc/%s/stat" % pid).read()
                    if stat.rsplit(")", 1)[1].split()[19] == start:
                        os.killpg(int(pid), signal.SIGKILL)
                except (OSError, ValueError, IndexError):
                    pass

    def close(self):
        self.kill_jobs()
        for proc in self.procs:
            stop(proc)
        shutil.rmtree(self.dir, ignore_errors=True)


class Enrolling:
    """A real certmaster on the fleet's CA root (no autosign) and a real
    funcd `name` asking it for a certificate: its request waits, pending,
    until signed. `fingerprint` is the one funcd printed for the
    administrator to compare; `served()` waits for funcd to serve once
    signed. close() ends both (by pid)."""

    def __init__(self, fleet, name):
        import re
        import time
        self.cm = subprocess.Popen([binary("certmaster"), "--root", fleet.ca_root, "--listen", "127.0.0.1:0",
                                    "--foreground"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.minion = None
        self.log_path = os.path.join(fleet.dir, name + ".log")
        self.log = open(self.log_path, "w")
        try:
            line = self.cm.stdout.readline().decode()
            port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            self.minion = subprocess.Popen(
                [binary("funcd"), "--root", os.path.join(fleet.dir, name), "--name", name, "--listen",
                 "127.0.0.1:0", "--certmaster", "127.0.0.1:%d" % port, "--foreground"],
                stdout=subprocess.PIPE, stderr=self.log, env=dict(os.environ, RUST_LOG="info"))
            end = time.time() + 60
            self.fingerprint = None
            while self.fingerprint is None and time.time() < end:
                found = re.search(r"fingerprint=(\S+)", open(self.log_path).read())
                if found:
                    self.fingerprint = found.group(1).strip('"')
                else:
                    time.sleep(0.05)
            if self.fingerprint is None:
                raise RuntimeError("funcd printed no fingerprint")
        except Exception:
            self.close()
            raise

    def served(self):
        """Whether funcd now serves (it says so once it has its certificate)."""
        said = [self.minion.stdout.readline().decode() for _ in range(2)]
        return any("listening on" in line for line in said)

    def close(self):
        for p in (self.minion, self.cm):
            if p:
                stop(p)
        self.log.close()


class Certmaster:
    """A real certmaster on an ephemeral loopback port below a temp root;
    `conf`: its certmaster.conf [main] lines. close() ends it and removes all."""

    def __init__(self, args=(), conf=""):
        self.dir = tempfile.mkdtemp(prefix="func-py-cm-")
        self.root = os.path.join(self.dir, "cm")
        if conf:
            path = os.path.join(self.root, "etc/certmaster/certmaster.conf")
            os.makedirs(os.path.dirname(path), mode=0o700)
            with open(path, "w") as f:
                f.write("[main]\n" + conf + "\n")
        self.proc = subprocess.Popen([binary("certmaster"), "--root", self.root, "--listen", "127.0.0.1:0"] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        self.port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])

    def ca_cert(self):
        return os.path.join(self.root, "etc/pki/certmaster/ca/certmaster.crt")

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def is_error(result):
    """Func's utils.is_error."""
    return isinstance(result, list) and len(result) > 0 and result[0] == "REMOTE_ERROR"


class FakeRelay:
    """An HTTPS server presenting `cert`/`key` (a relay, or a func-api);
    `answer(path, body)` gives (status, bytes), or None to close the
    connection without a word. Every request it got is kept in `seen`."""

    def __init__(self, cert, key, answer):
        self.seen = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, body):
                outer.seen.append((self.command, self.path, body))
                answered = answer(self.path, body)
                if answered is None:
                    self.close_connection = True
                    return
                status, data = answered
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.reply(b"")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.reply(self.rfile.read(n))

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
