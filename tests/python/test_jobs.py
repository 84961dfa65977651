"""Async jobs from Python's xmlrpc.client, as Func's own overlord and
funcweb used them: async.M.m returns a "<time>-minion" id at once, and
jobs.job_status answers [0, -1] / [1, result] / [2, 0]. Also the job
management methods (jobs.running, find_job, kill_job, signal_job)."""

import re
import threading
import time
import unittest
import xmlrpc.client

from funcfixture import Fleet, is_error

ID = re.compile(r"^\d+(\.\d+)?-minion$")


def wait_finished(s, job_id, limit=30.0):
    """Polls until the job is finished (a deadline only so a bug cannot hang the suite)."""
    deadline = time.time() + limit
    while time.time() < deadline:
        status = s.jobs.job_status(job_id)
        if status[0] != 0:
            return status
        time.sleep(0.05)
    raise AssertionError("job %s still running after %ss" % (job_id, limit))


class JobsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.root, cls.port = cls.fleet.start_minion("m1")

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()

    def proxy(self):
        p = self.fleet.proxy(self.port)
        self.addCleanup(p("close"))
        return p

    def test_async_sleep_runs_then_finishes(self):
        s = self.proxy()
        job_id = getattr(s, "async").test.sleep(1)
        self.assertRegex(job_id, ID)
        self.assertEqual(s.jobs.job_status(job_id), [0, -1])
        status = wait_finished(s, job_id)
        self.assertEqual(status[0], 1)
        self.assertIsInstance(status[1], float)
        # Finished results stay readable.
        self.assertEqual(s.jobs.job_status(job_id), status)

    def test_wait_job_answers_when_the_job_ends(self):
        s = self.proxy()
        job_id = getattr(s, "async").test.sleep(1)
        # Python sends <int>; 0 seconds answers at once.
        self.assertEqual(s.jobs.wait_job(job_id, 0), [0, -1])
        status = s.jobs.wait_job(job_id, 30)
        self.assertEqual(status[0], 1)
        self.assertIsInstance(status[1], float)
        self.assertEqual(s.jobs.wait_job(job_id), status)
        self.assertEqual(s.jobs.wait_job("1.5-minion", 0.5), [2, 0])
        for bad in ("soon", -1, [1]):
            self.assertTrue(is_error(s.jobs.wait_job(job_id, bad)), bad)
        self.assertTrue(is_error(s.jobs.wait_job()))

    def test_unknown_method_gets_an_id_and_fails_inside_the_job(self):
        s = self.proxy()
        job_id = getattr(s, "async").nosuch.method(1)
        self.assertRegex(job_id, ID)
        status = wait_finished(s, job_id)
        self.assertEqual(status[0], 1)
        self.assertTrue(is_error(status[1]), status)
        self.assertIn("InvalidMethod", status[1][1])

    def test_unknown_and_hostile_ids_are_lost_in_space(self):
        s = self.proxy()
        for bad in ["123.5-minion", "../../etc/passwd", "", "x" * 5000, "*-test-ping-1.5"]:
            self.assertEqual(s.jobs.job_status(bad), [2, 0], bad[:20])
        # A wrong argument type is an error value, not a crash.
        self.assertTrue(is_error(s.jobs.job_status()))

    def test_ids_are_unique_under_concurrency(self):
        ids, errors = [], []

        def submit():
            try:
                with self.fleet.proxy(self.port) as p:
                    for _ in range(5):
                        ids.append(getattr(p, "async").test.ping())
            except Exception as e:  # collected and reported below
                errors.append(e)

        threads = [threading.Thread(target=submit) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(ids), 50)
        self.assertEqual(len(set(ids)), 50)
        s = self.proxy()
        for job_id in ids:
            self.assertEqual(wait_finished(s, job_id), [1, 1])

    def test_running_find_and_kill(self):
        s = self.proxy()
        job_id = getattr(s, "async").test.sleep(100)
        running = {j["id"]: j for j in s.jobs.running()}
        self.assertIn(job_id, running)
        job = running[job_id]
        self.assertEqual(job["method"], "test.sleep")
        self.assertEqual(job["args"], [100])
        self.assertGreater(job["pid"], 1)
        self.assertEqual(s.jobs.find_job(job_id)["id"], job_id)
        self.assertTrue(is_error(s.jobs.signal_job(job_id, "NOSUCHSIG")))
        message = s.jobs.kill_job(job_id)
        self.assertIn("SIGKILL", message)
        status = wait_finished(s, job_id)
        self.assertEqual(status[0], 1)
        self.assertTrue(is_error(status[1]))
        self.assertIn("killed", status[1][2])
        self.assertIn("SIGKILL", status[1][2])
        self.assertEqual(s.jobs.find_job(job_id), {})
        self.assertIn("not running", s.jobs.kill_job(job_id))
        listed = {j["id"]: j for j in s.jobs.list_jobs()}
        self.assertEqual(listed[job_id]["status"], 1)
        self.assertIn("ended", listed[job_id])

    def test_jobs_methods_cannot_run_async(self):
        s = self.proxy()
        status = wait_finished(s, getattr(s, "async").jobs.running())
        self.assertTrue(is_error(status[1]), status)


if __name__ == "__main__":
    unittest.main()
