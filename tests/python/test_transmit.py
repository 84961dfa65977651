"""`func transmit` driven from Python with only subprocess and json, as a
script in any language would: one JSON request on stdin, one JSON answer on
stdout, the CLI's exit status."""

import json
import subprocess
import unittest

from funcfixture import Fleet, binary


class TransmitTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.root, cls.port = cls.fleet.start_minion("m1")

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()

    def transmit(self, request):
        text = request if isinstance(request, str) else json.dumps(request)
        out = subprocess.run([binary("func"), "--root", self.fleet.ca_root, "transmit"],
                             input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        return out.returncode, json.loads(out.stdout.decode())

    def test_a_synchronous_call(self):
        code, answer = self.transmit({"clients": "m1", "module": "test", "method": "add",
                                      "parameters": [1, 2], "nforks": 1, "timeout": 10})
        self.assertEqual((code, answer), (0, {"m1": 3}))

    def test_parameters_are_typed(self):
        code, answer = self.transmit({"clients": "m1", "module": "command", "method": "run",
                                      "parameters": ["echo $FOO", {"FOO": "typed"}]})
        self.assertEqual((code, answer), (0, {"m1": [0, "typed\n", ""]}))
        code, answer = self.transmit({"clients": "m1", "module": "test", "method": "echo",
                                      "parameters": [{"n": 5, "big": 2 ** 40, "f": 1.5, "b": True, "none": None}]})
        self.assertEqual(answer["m1"], {"n": 5, "big": 2 ** 40, "f": 1.5, "b": True, "none": None})

    def test_failure_is_an_exit_status(self):
        code, answer = self.transmit({"clients": "m1", "module": "command", "method": "run",
                                      "parameters": ["exit 4"]})
        self.assertEqual((code, answer), (1, {"m1": [4, "", ""]}))

    def test_an_async_call_then_its_status(self):
        code, answer = self.transmit({"clients": "m1", "module": "test", "method": "sleep",
                                      "parameters": [1], "async": True})
        self.assertEqual(code, 0)
        job = answer["job_id"]
        code, status = self.transmit({"job_status": job, "wait": True, "timeout": 30})
        self.assertEqual((code, status["status"], status["state"]), (0, 1, "finished"))
        self.assertIsInstance(status["results"]["m1"], float)
        code, jobs = self.transmit({"command": ["jobs", "list"]})
        self.assertIn(job, [j["id"] for j in jobs["jobs"]])

    def test_bad_requests_get_a_json_error(self):
        for bad in ["not json", "[1]", json.dumps({"clients": "m1"})]:
            code, answer = self.transmit(bad)
            self.assertEqual(code, 2, bad)
            self.assertIn("error", answer)
            self.assertEqual(answer["kind"], "invalid", answer)
        # A refusal keeps the gate's kind and exit status (not every one is 2).
        code, answer = self.transmit({"command": ["nosuch*", "ping"]})
        self.assertEqual((code, answer.get("kind")), (1, "no_match"), answer)

    def test_misspelt_keys_are_refused_with_a_suggestion(self):
        for key, right in [("exlude", "exclude"), ("asynk", "async"), ("paramters", "parameters")]:
            request = {"clients": "m1", "module": "test", "method": "ping", key: "m1"}
            code, answer = self.transmit(request)
            self.assertEqual(code, 2, request)
            self.assertIn('did you mean "%s"?' % right, answer["error"])


if __name__ == "__main__":
    unittest.main()
