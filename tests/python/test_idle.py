"""A program that keeps one ServerProxy and waits between calls: the minion
and the certmaster end an idle keep-alive connection cleanly (TLS
close_notify, then FIN), so xmlrpc.client's one retry reconnects and the
program never sees ssl.SSLEOFError. header_timeout is set to 1 s here;
the waits are longer than that."""

import signal
import ssl
import time
import unittest
import xmlrpc.client

from funcfixture import Certmaster, Fleet

IDLE = 1.0


class IdleMinionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.root, cls.port = cls.fleet.start_minion("m1", "header_timeout = %s" % IDLE)

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
        cls.cm = Certmaster(conf="header_timeout = %s" % IDLE)

    @classmethod
    def tearDownClass(cls):
        cls.cm.close()

    def test_one_proxy_survives_idle_periods_over_https_and_http(self):
        ctx = ssl.create_default_context(cafile=self.cm.ca_cert())
        ctx.check_hostname = False
        for s in (xmlrpc.client.ServerProxy("https://127.0.0.1:%d" % self.cm.port, context=ctx),
                  xmlrpc.client.ServerProxy("http://127.0.0.1:%d" % self.cm.port)):
            self.assertIn("BEGIN X509 CRL", s.get_crl())
            time.sleep(IDLE * 2.5)
            self.assertIn("BEGIN X509 CRL", s.get_crl())
            s("close")()


if __name__ == "__main__":
    unittest.main()


class IdleApiTest(unittest.TestCase):
    """func-api ends an idle kept-alive connection as cleanly as funcd, and
    says when it will (Keep-Alive: timeout=N)."""

    def test_a_kept_connection_sees_a_clean_end_and_the_timeout_is_announced(self):
        import http.client
        from test_api import Api
        fleet = Fleet()
        api = Api(fleet, conf="[api]\nidle_timeout = 1\n")
        try:
            token = api.token("t", "--admin")
            c = api.conn()
            h = {"Authorization": "Bearer " + token}
            c.request("GET", "/api/v1/minions", headers=h)
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
            self.assertEqual(r.getheader("Keep-Alive"), "timeout=1")
            time.sleep(IDLE * 2.5)
            try:
                c.request("GET", "/api/v1/minions", headers=h)
                r = c.getresponse()
                r.read()
                self.assertEqual(r.status, 200)
            except http.client.RemoteDisconnected:
                pass  # the clean end: a client opens a new connection
            c.close()
            c.request("GET", "/api/v1/minions", headers=h)
            self.assertEqual(c.getresponse().status, 200)
            c.close()
        finally:
            api.close()
            fleet.close()


class KeptConnectionsWarningTest(unittest.TestCase):
    """func-api says at start when it cannot keep a connection to every
    minion it calls itself (docs/SCALING.md sizes relays)."""

    def test_a_segment_larger_than_what_it_keeps_is_said(self):
        from test_api import Api
        fleet = Fleet()
        api = None
        try:
            for name in ("k1", "k2"):
                fleet.start_minion(name)
            api = Api(fleet, conf="[api]\nmax_idle_connections = 1\n")
            api.proc.send_signal(signal.SIGTERM)
            api.proc.wait(timeout=30)
            said = api.proc.stderr.read().decode()
            self.assertIn("cannot keep a connection to every minion", said)
            self.assertIn("minions=2", said)
        finally:
            if api:
                api.close()
            fleet.close()
