"""Relays under attack (issue 46, DESIGN §9, §17), with a real top
overlord, a real minion d1 it calls directly, and two fake relays:

- a liar, at a relay's address with a real service certificate of the CA,
  that answers for d1 (a host it was never sent), adds hosts that exist
  nowhere, and whose map claims d1;
- a rogue, at a relay's address with a *minion* certificate of the CA for
  that address (what the certmaster signed before it refused IP literals):
  it must never receive the top's signed request.
"""

import json
import os
import ssl
import subprocess
import tempfile
import unittest

from funcfixture import FakeRelay, Fleet, binary
from test_api import Api

FLEET = None
LIAR = None
ROGUE = None
MAP = "d1: {}\nliar: {x1: {}}\nrogue: {y1: {}}\n"


def func(*args, timeout=120):
    return subprocess.run([binary("func"), "--root", FLEET.ca_root] + list(args),
                          capture_output=True, text=True, timeout=timeout)


def liar_answer(path, body):
    if path.startswith("/api/v1/relay/map"):
        return 200, json.dumps({"map": {"d1": {}, "x1": {}}, "name": "liar"}).encode()
    if path == "/api/v1/relay":
        lines = [{"host": "d1", "result": 666}, {"host": "ghost", "result": 1},
                 {"host": "x1", "result": 1}, {"done": True}]
        return 200, "".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines).encode()
    return 404, b'{"error": "no"}'


def minion_cert_for_loopback(dir):
    """A certificate as the certmaster signed minions (server and client
    auth, no service mark) naming 127.0.0.1, made with the CA's key."""
    ca = os.path.join(FLEET.ca_root, "etc/pki/certmaster/ca")
    key, csr, cert, ext = (os.path.join(dir, f) for f in ("rogue.pem", "rogue.csr", "rogue.cert", "ext"))
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(ca, "certmaster.crt"),
                    "-CAkey", os.path.join(ca, "certmaster.key"), "-CAcreateserial", "-days", "2",
                    "-extfile", ext, "-out", cert], check=True, capture_output=True)
    return cert, key


def write_map():
    path = os.path.join(FLEET.ca_root, "var/lib/func/map")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w") as f:
        f.write(MAP)
    os.chmod(path, 0o600)


def setUpModule():
    global FLEET, LIAR, ROGUE
    FLEET = Fleet()
    try:
        FLEET.start_minion("d1")
        # A real func-api issues its service certificate (with the mark).
        Api(FLEET).close()
        pki = os.path.join(FLEET.ca_root, "etc/pki/func-api")
        LIAR = FakeRelay(os.path.join(pki, "func-api.cert"), os.path.join(pki, "func-api.pem"), liar_answer)
        tmp = tempfile.mkdtemp(prefix="rogue-", dir=FLEET.dir)
        cert, key = minion_cert_for_loopback(tmp)
        ROGUE = FakeRelay(cert, key, liar_answer)
        path = os.path.join(FLEET.ca_root, "etc/func/overlord.conf")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as f:
            f.write("[relays]\nliar = 127.0.0.1:%d\nrogue = 127.0.0.1:%d\n" % (LIAR.port, ROGUE.port))
    except Exception:
        tearDownModule()
        raise


def tearDownModule():
    for fake in (LIAR, ROGUE):
        if fake is not None:
            fake.close()
    if FLEET is not None:
        FLEET.close()


class RelayAttackTest(unittest.TestCase):
    def setUp(self):
        write_map()

    def test_a_relay_is_believed_only_for_the_hosts_it_was_sent(self):
        done = func("--delegate", "--json", "*", "ping")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        got = json.loads(done.stdout)
        # d1's own answer, never the liar's 666; no host made up.
        self.assertEqual(got["d1"], 1)
        self.assertEqual(sorted(got), ["d1", "x1", "y1"])
        self.assertEqual(got["x1"][0], "REMOTE_ERROR")
        self.assertIn("answered falsely", got["x1"][2])

    def test_a_minion_certificate_does_not_pass_for_a_relay(self):
        before = len(ROGUE.seen)
        done = func("--delegate", "--json", "y1", "call", "test", "echo", "secret-argument")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        got = json.loads(done.stdout)
        self.assertEqual(got["y1"][0], "REMOTE_ERROR")
        self.assertIn("service mark", got["y1"][2])
        # The rogue got nothing: no request, so no signed secret argument.
        self.assertEqual(ROGUE.seen[before:], [])

    def test_build_map_refuses_a_host_claimed_twice(self):
        done = subprocess.run([binary("func-build-map"), "--root", FLEET.ca_root],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("d1 is claimed by this overlord and relay liar", done.stderr)
        import yaml
        with open(os.path.join(FLEET.ca_root, "var/lib/func/map")) as f:
            written = yaml.safe_load(f)
        # d1 stays the top's own; the liar keeps only what nobody else has.
        self.assertEqual(written, {"d1": {}, "liar": {"x1": {}}})


if __name__ == "__main__":
    unittest.main()
