"""test.ping calls per second from Python's xmlrpc.client over keep-alive.
Usage: bench_python.py CERTMASTER_ROOT NAME:PORT CALLS [OUT_TSV]"""

import os
import sys
import time
import xmlrpc.client

sys.path.insert(0, os.path.dirname(__file__))
from demo_call import NamedTransport  # noqa: E402
import ssl  # noqa: E402

ca_root, target, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
pki = os.path.join(ca_root, "etc/pki/certmaster/ca")
ctx = ssl.create_default_context(cafile=os.path.join(pki, "certmaster.crt"))
ctx.load_cert_chain(os.path.join(pki, "overlord.cert"), os.path.join(pki, "overlord.pem"))
name, port = target.split(":")
s = xmlrpc.client.ServerProxy("https://127.0.0.1:%s" % port, transport=NamedTransport(name, ctx))
for _ in range(100):
    s.test.ping()
start = time.perf_counter()
for _ in range(calls):
    s.test.ping()
secs = time.perf_counter() - start
print("test.ping, Python xmlrpc.client, 1 keep-alive connection: %d calls in %.2f s = %.0f calls/s" % (calls, secs, calls / secs))
if len(sys.argv) > 4:
    with open(sys.argv[4], "a") as f:
        f.write("python_keepalive_pings\t%.0f\tcalls/s\t1\t%d calls\n" % (calls / secs, calls))
