"""A program that keeps one ServerProxy and waits between calls: the minion
and the certmaster end an idle keep-alive connection cleanly (TLS
close_notify, then FIN), so xmlrpc.client's one retry reconnects and the
program never sees ssl.SSLEOFError. header_timeout is set to 1 s here;
the waits are longer than that."""

import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import unittest
import xmlrpc.client

from funcfixture import Fleet, binary

IDLE = 1.0


class IdleMinionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.root, cls.port = cls.fleet.start_minion("127.0.0.1", "header_timeout = %s" % IDLE)

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()

    def test_one_proxy_survives_idle_periods(self):
        s = self.fleet.proxy(self.port)
        self.assertEqual(s.test.ping(), 1)
        for _ in range(3):
            time.sleep(IDLE * 2.5)
            self.assertEqual(s.test.ping(), 1)
        s("close")()

    def test_a_script_polling_job_status_with_one_proxy(self):
        s = self.fleet.proxy(self.port)
        job = getattr(s, "async").test.sleep(4)
        status = s.jobs.job_status(job)
        while status[0] == 0:
            time.sleep(IDLE * 2)
            status = s.jobs.job_status(job)
        self.assertEqual(status[0], 1, status)
        s("close")()


class IdleCertmasterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="func-py-idle-")
        cls.root = os.path.join(cls.dir, "cm")
        conf = os.path.join(cls.root, "etc/certmaster/certmaster.conf")
        os.makedirs(os.path.dirname(conf), mode=0o700)
        with open(conf, "w") as f:
            f.write("[main]\nheader_timeout = %s\n" % IDLE)
        cls.proc = subprocess.Popen([binary("certmaster"), "--root", cls.root, "--listen", "127.0.0.1:0"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = cls.proc.stdout.readline().decode()
        cls.port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])

    @classmethod
    def tearDownClass(cls):
        cls.proc.send_signal(signal.SIGTERM)
        cls.proc.wait(timeout=10)
        cls.proc.stdout.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_one_proxy_survives_idle_periods_over_https_and_http(self):
        ctx = ssl.create_default_context(cafile=os.path.join(self.root, "etc/pki/certmaster/ca/certmaster.crt"))
        ctx.check_hostname = False
        for s in (xmlrpc.client.ServerProxy("https://127.0.0.1:%d" % self.port, context=ctx),
                  xmlrpc.client.ServerProxy("http://127.0.0.1:%d" % self.port)):
            self.assertIn("BEGIN X509 CRL", s.get_crl())
            time.sleep(IDLE * 2.5)
            self.assertIn("BEGIN X509 CRL", s.get_crl())
            s("close")()


if __name__ == "__main__":
    unittest.main()
