"""The certmaster from Python: xmlrpc.client calls wait_for_cert with CSRs
made by the openssl command line tool, over plain HTTP (as Func's requester
did) and over HTTPS verified against the CA."""

import os
import ssl
import subprocess
import unittest
import xmlrpc.client

from funcfixture import Certmaster


def make_csr(directory, cn):
    key = os.path.join(directory, "k.pem")
    out = subprocess.run(
        ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-subj", "/CN=" + cn],
        check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return out.stdout.decode()


class CertmasterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cm = Certmaster(["--autosign"])
        cls.dir, cls.root, cls.port, cls.proc = cls.cm.dir, cls.cm.root, cls.cm.port, cls.cm.proc
        cls.plain = xmlrpc.client.ServerProxy("http://127.0.0.1:%d" % cls.port, allow_none=True)

    @classmethod
    def tearDownClass(cls):
        cls.cm.close()

    def test_wait_for_cert_with_an_openssl_csr(self):
        csr = make_csr(self.dir, "pyminion1")
        signed, cert, ca = self.plain.wait_for_cert(csr)
        self.assertTrue(signed)
        self.assertIn("BEGIN CERTIFICATE", cert)
        with open(os.path.join(self.root, "etc/pki/certmaster/ca/certmaster.crt")) as f:
            self.assertEqual(ca, f.read())
        # Asking again with the same request returns the same certificate.
        self.assertEqual(self.plain.wait_for_cert(csr, {"address": "pyminion1:51234"}), [True, cert, ca])
        with open(os.path.join(self.root, "var/lib/certmaster/certmaster/certs/pyminion1.addr")) as f:
            self.assertEqual(f.read().strip(), "pyminion1:51234")
        # The signed certificate verifies against the CA with OpenSSL.
        paths = [os.path.join(self.dir, n) for n in ("c.pem", "ca.pem")]
        for path, text in zip(paths, (cert, ca)):
            with open(path, "w") as f:
                f.write(text)
        verify = subprocess.run(["openssl", "verify", "-CAfile", paths[1], paths[0]], stdout=subprocess.PIPE)
        self.assertEqual(verify.returncode, 0, verify.stdout)

    def test_https_with_the_ca(self):
        ctx = ssl.create_default_context(cafile=os.path.join(self.root, "etc/pki/certmaster/ca/certmaster.crt"))
        ctx.check_hostname = False  # the certificate names "certmaster"; the chain is still verified
        s = xmlrpc.client.ServerProxy("https://127.0.0.1:%d" % self.port, context=ctx)
        self.assertTrue(s.wait_for_cert(make_csr(self.dir, "pyminion2"))[0])
        self.assertIn("BEGIN X509 CRL", s.get_crl())

    def test_takeover_is_refused(self):
        self.assertTrue(self.plain.wait_for_cert(make_csr(self.dir, "pyminion3"))[0])
        with self.assertRaises(xmlrpc.client.Fault) as caught:
            self.plain.wait_for_cert(make_csr(self.dir, "pyminion3"))
        self.assertIn("--clean pyminion3", caught.exception.faultString)

    def test_hostile_names_and_garbage_are_refused(self):
        # "/" is escaped for openssl -subj; OpenSSL caps a CN at 64 characters, one over our label limit.
        for cn in ["..\\/..\\/etc\\/evil", "a\\/b", "x" * 64, "bad name", ".."]:
            with self.subTest(cn=cn[:20]):
                with self.assertRaises(xmlrpc.client.Fault):
                    self.plain.wait_for_cert(make_csr(self.dir, cn))
        with self.assertRaises(xmlrpc.client.Fault):
            self.plain.wait_for_cert("-----BEGIN CERTIFICATE REQUEST-----\ngarbage\n-----END CERTIFICATE REQUEST-----\n")
        with self.assertRaises(xmlrpc.client.Fault):
            self.plain.no_such_method()
        with self.assertRaises(xmlrpc.client.ProtocolError) as caught:
            self.plain.wait_for_cert("x" * 200000)
        self.assertEqual(caught.exception.errcode, 413)
        written = [f for _, _, files in os.walk(self.dir) for f in files]
        self.assertFalse([n for n in written if "evil" in n or n.startswith("xxx") or n.startswith("bad")], written)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "etc")))


if __name__ == "__main__":
    unittest.main()
