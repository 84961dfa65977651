"""What the once-per-host record costs a minion (DESIGN §9): `async.test.ping`
over one keep-alive connection with the overlord's certificate, without a
request identity (as Python's and Func's clients call), and with a new
identity each call (as func's drivers call: the minion looks the identity
up and records it with the job). Prints the time per call of each, the
minion's job store growth and its RSS after each run, and what a replayed
identity costs (refused before any job starts).
Usage: bench_once.py CERTMASTER_ROOT NAME:PORT MINION_ROOT CALLS [OUT_MD]"""

import http.client
import os
import secrets
import socket
import ssl
import sys
import time
import xmlrpc.client

ca_root, target, minion_root, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out_md = sys.argv[5] if len(sys.argv) > 5 else None
pki = os.path.join(ca_root, "etc/pki/certmaster/ca")
ctx = ssl.create_default_context(cafile=os.path.join(pki, "certmaster.crt"))
ctx.load_cert_chain(os.path.join(pki, "overlord.cert"), os.path.join(pki, "overlord.pem"))
name, port = target.split(":")
store = os.path.join(minion_root, "var/lib/func/minion.redb")


class Conn(http.client.HTTPSConnection):
    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = ctx.wrap_socket(sock, server_hostname=name)


conn = Conn("127.0.0.1", int(port), context=ctx, timeout=60)
body = xmlrpc.client.dumps((), "async.test.ping").encode()


def call(request=None):
    headers = {"Content-Type": "text/xml"}
    if request:
        headers["X-Func-Request"] = request
    conn.request("POST", "/RPC2", body, headers)
    answer = xmlrpc.client.loads(conn.getresponse().read())[0][0]
    return answer


def funcd_pid():
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"funcd") and minion_root.encode() in argv:
            return pid
    return None


def rss_kib(pid):
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def run(label, identity):
    size = os.path.getsize(store) if os.path.exists(store) else 0
    start = time.perf_counter()
    for _ in range(calls):
        answer = call(identity())
        assert isinstance(answer, str), answer
    secs = time.perf_counter() - start
    grown = (os.path.getsize(store) if os.path.exists(store) else 0) - size
    pid = funcd_pid()
    return label, secs / calls * 1e6, grown, rss_kib(pid) if pid else 0


for _ in range(50):
    call()
rows = [run("no identity (Python's, Func's clients)", lambda: None),
        run("a new identity each call (func's drivers)", lambda: secrets.token_hex(32)),
        run("no identity, again", lambda: None),
        run("a new identity each call, again", lambda: secrets.token_hex(32))]
replayed = secrets.token_hex(32)
call(replayed)
start = time.perf_counter()
for _ in range(calls):
    answer = call(replayed)
    assert isinstance(answer, list) and "AlreadyRan" in answer[1], answer
refused_us = (time.perf_counter() - start) / calls * 1e6

lines = ["### Once per host: the request identity on the minion (%d async.test.ping per run)" % calls, "",
         "| run | µs per call | job store growth | funcd RSS after |", "|---|---:|---:|---:|"]
for label, us, grown, rss in rows:
    lines.append("| %s | %.0f | %+d KiB | %d KiB |" % (label, us, grown // 1024, rss))
lines.append("| a replayed identity (refused, no job) | %.0f | | |" % refused_us)
text = "\n".join(lines) + "\n"
print(text)
if out_md:
    with open(out_md, "a") as f:
        f.write("\n" + text)
