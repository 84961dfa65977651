"""One gate (DESIGN §13): the same call sent through all four doors —
`func SPEC call`, `func transmit`, `func-transmit` and func-api's
`POST /api/v1/calls` — gets the same decision, the same answer and the
same error message, with one mapping from the error's kind to the exit
status (the three programs) and the HTTP status (func-api). Valid calls
(now and as async jobs) and every kind of bad one the doors can express.
Real binaries, two real minions, a real func-api."""

import json
import os
import subprocess
import time
import unittest

from funcfixture import binary
from test_api import fleet_and_api

# The gate's kinds, as (exit status, HTTP status).
INVALID = (2, 400)
NO_MATCH = (1, 404)


def setUpModule():
    global FLEET, API, TOKEN
    FLEET, API, TOKEN = fleet_and_api(("m1", "m2"), "doors")


def tearDownModule():
    API.close()
    FLEET.close()


def strip(message):
    for prefix in ("ERROR: ", "func-transmit: ", "func transmit: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    return message.strip()


# Each door takes a call in the API's shape (spec, module, method, args,
# async, batch, batch_wait, failhard, timeout, exclude, forks) and answers
# (decision, answer or message): decision is the exit status for the
# programs, the HTTP status for func-api.

def by_func(call):
    words = [binary("func"), "--root", FLEET.ca_root, "--json"]
    if "timeout" in call:
        words += ["-t", str(call["timeout"])]
    if "forks" in call:
        words += ["--forks", str(call["forks"])]
    words += [call["spec"], "call"]
    if call.get("async"):
        words += ["--async", "--nopoll"]
    if "batch" in call:
        words += ["--batch", str(call["batch"])]
    if "batch_wait" in call:
        words += ["--batch-wait", str(call["batch_wait"])]
    if call.get("failhard"):
        words.append("--failhard")
    for key, flag in (("filter", "--filter"), ("filteror", "--filteror"), ("grain", "-G")):
        if key in call:
            words += [flag, call[key]]
    words += ["--json-args", json.dumps(call.get("args", [])), "--", call["module"], call["method"]]
    p = subprocess.run(words, capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout) if p.stdout.strip() else None
    if p.returncode not in (0, 1) or (isinstance(doc, dict) and "error" in doc and "exit_status" in doc):
        return p.returncode, strip(doc["error"] if doc else p.stderr)
    return p.returncode, doc.get("job_id", doc) if isinstance(doc, dict) else doc


TRANSMIT_KEYS = {"spec": "clients", "args": "parameters", "forks": "nforks"}


def by_transmit(call):
    request = {TRANSMIT_KEYS.get(k, k): v for k, v in call.items()}
    p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "transmit"], input=json.dumps(request),
                       capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout)
    if isinstance(doc, dict) and "exit_status" in doc and "error" in doc:
        return p.returncode, strip(doc["error"])
    return p.returncode, doc.get("job_id", doc)


def by_func_transmit(call):
    request = {TRANSMIT_KEYS.get(k, k): v for k, v in call.items()}
    p = subprocess.run([binary("func-transmit"), "--root", FLEET.ca_root], input=json.dumps(request),
                       capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout)
    if isinstance(doc, dict) and "error" in doc:
        # Func's error object (no match) or ours (a bad request).
        return p.returncode, strip(doc["message"] if doc["error"] == 1 and "message" in doc else doc["error"])
    return p.returncode, doc


def by_api(call):
    status, doc, _ = API.request("POST", "/api/v1/calls", token=TOKEN, body=call)
    if status >= 400:
        return status, strip(doc["error"])
    return status, doc.get("job_id", doc) if status == 202 else doc


DOORS = {"func": by_func, "func transmit": by_transmit, "func-transmit": by_func_transmit, "func-api": by_api}
# What only func, func transmit and func-api can say (Func's protocol has no batches or exclude).
BATCH_DOORS = ("func", "func transmit", "func-api")


def wait_for(job_id):
    p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "--json", "-t", "120", "job_status", job_id,
                        "--wait"], capture_output=True, text=True, timeout=180)
    doc = json.loads(p.stdout)
    return p.returncode, (doc["state"], doc["results"])


class OneGateTest(unittest.TestCase):
    def through(self, call, doors=tuple(DOORS)):
        return {door: DOORS[door](dict(call)) for door in doors}

    def test_a_call_now_answers_the_same_through_every_door(self):
        call = {"spec": "m1;m2", "module": "test", "method": "add", "args": [1, 2]}
        answers = self.through(call)
        self.assertEqual(answers["func-api"], (200, {"m1": 3, "m2": 3}), answers)
        for door in ("func", "func transmit", "func-transmit"):
            self.assertEqual(answers[door], (0, {"m1": 3, "m2": 3}), (door, answers))
        # A failing method: the same results, a failure everywhere.
        answers = self.through({"spec": "m1", "module": "test", "method": "explode"})
        docs = {door: json.dumps(doc, sort_keys=True) for door, (_, doc) in answers.items()}
        self.assertEqual(len(set(docs.values())), 1, answers)
        self.assertIn("REMOTE_ERROR", docs["func"])
        self.assertEqual({d: s for d, (s, _) in answers.items() if d != "func-api"},
                         {"func": 1, "func transmit": 1, "func-transmit": 1}, answers)

    def test_an_async_call_is_the_same_job_through_every_door(self):
        call = {"spec": "m*", "module": "test", "method": "add", "args": [2, 3], "async": True}
        answers = self.through(call)
        self.assertEqual(answers["func-api"][0], 202, answers)
        for door, (status, job_id) in answers.items():
            self.assertIsInstance(job_id, str, (door, answers))
            if door != "func-api":
                self.assertEqual(status, 0, (door, answers))
            self.assertEqual(wait_for(job_id), (0, ("finished", {"m1": 5, "m2": 5})), door)

    def test_a_batch_is_the_same_job_through_every_door_that_can_say_it(self):
        call = {"spec": "m1;m2", "module": "test", "method": "add", "args": [4, 5], "batch": 1, "async": True}
        answers = self.through(call, BATCH_DOORS)
        # func-api runs every batch with its own driver, async or not.
        answers["func-api (no async)"] = by_api({k: v for k, v in call.items() if k != "async"})
        for door, (status, job_id) in answers.items():
            self.assertEqual(status, 202 if door.startswith("func-api") else 0, (door, answers))
            self.assertEqual(wait_for(job_id), (0, ("finished", {"m1": 9, "m2": 9})), door)

    def refused_alike(self, call, kind, text, doors=tuple(DOORS)):
        answers = self.through(call, doors)
        messages = {door: message for door, (_, message) in answers.items()}
        self.assertEqual(len(set(messages.values())), 1, answers)
        self.assertIn(text, messages[doors[0]], answers)
        for door, (status, _) in answers.items():
            self.assertEqual(status, kind[1] if door == "func-api" else kind[0], (door, answers))

    def test_each_kind_of_bad_call_gets_one_decision_and_one_message(self):
        base = {"spec": "m1", "module": "test", "method": "ping"}
        # Through all four doors.
        self.refused_alike(dict(base, method="pi ng"), INVALID, "module and method are names")
        self.refused_alike(dict(base, module="async"), INVALID, 'module "async"')
        # async.M.m would start a minion job outside the store and the
        # caller's rights on M.m: refused by every door, nothing sent.
        self.refused_alike(dict(base, module="async.command", method="run", args=["id"]), INVALID,
                           'module "async"')
        deep = [1]
        for _ in range(40):
            deep = [deep]
        self.refused_alike(dict(base, method="echo", args=[deep]), INVALID, "deeper than 32 levels")
        self.refused_alike(dict(base, method="echo", args=[deep], **{"async": True}), INVALID,
                           "deeper than 32 levels")
        self.refused_alike(dict(base, spec="nosuch*"), NO_MATCH, "can't find any minions matching")
        self.refused_alike(dict(base, spec="@nosuchgroup"), (1, 400), "unknown group")
        # What Func's protocol cannot say (batches): the three others.
        self.refused_alike(dict(base, failhard=True), INVALID, "failhard and batch_wait need batch", BATCH_DOORS)
        self.refused_alike(dict(base, batch_wait=1), INVALID, "failhard and batch_wait need batch", BATCH_DOORS)
        self.refused_alike(dict(base, batch=0), INVALID, "the batch size must be at least 1", BATCH_DOORS)
        self.refused_alike(dict(base, batch="x"), INVALID, "expected a number N or a percentage", BATCH_DOORS)
        self.refused_alike(dict(base, batch=1, batch_wait=-1), INVALID, "batch_wait takes seconds", BATCH_DOORS)

    def test_a_key_given_twice_is_refused_by_every_door(self):
        # The last value would win in a JSON reader that keeps one: a
        # request that says m1 to whatever looked at it first and * to us.
        text = '{"clients": "m1", "module": "test", "method": "ping", "clients": "*"}'
        for program in ([binary("func"), "--root", FLEET.ca_root, "transmit"],
                        [binary("func-transmit"), "--root", FLEET.ca_root]):
            p = subprocess.run(program, input=text, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 2, (program, p.stdout))
            self.assertIn('the key \\"clients\\" is given twice', p.stdout, program)
        status, doc, _ = API.request("POST", "/api/v1/calls", token=TOKEN,
                                     raw='{"spec": "m1", "module": "test", "method": "ping", "spec": "*"}')
        self.assertEqual(status, 400, doc)
        self.assertIn("duplicate field", doc["error"])

    def test_bad_numbers_are_refused_by_every_door_that_takes_them(self):
        # -t and --forks are func's global options (every command takes
        # them): their message names the flag; the rule and its wording
        # after the name are the gate's.
        base = {"spec": "m1", "module": "test", "method": "ping"}
        for call, rule, doors in (
            (dict(base, timeout=0), "takes seconds, above 0 up to 2592000 (30 days)", tuple(DOORS)),
            (dict(base, timeout=1e308), "takes seconds, above 0 up to 2592000 (30 days)", tuple(DOORS)),
            (dict(base, forks=0), "takes a whole number from 1 to 1024", ("func", "func transmit", "func-transmit")),
        ):
            answers = self.through(call, doors)
            for door, (status, message) in answers.items():
                self.assertEqual(status, 400 if door == "func-api" else 2, (door, answers))
                self.assertIn(rule, message, (door, answers))


class OtherRequestsTest(unittest.TestCase):
    """list_minions, job_status, re-runs and force_async: each door answers
    in its documented shape, from the one engine entry; the decisions and
    messages are the gate's."""

    def func(self, *words):
        p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "--json"] + list(words),
                           capture_output=True, text=True, timeout=120)
        doc = json.loads(p.stdout) if p.stdout.strip() else {}
        return p.returncode, doc

    def func_transmit(self, request):
        p = subprocess.run([binary("func-transmit"), "--root", FLEET.ca_root], input=json.dumps(request),
                           capture_output=True, text=True, timeout=120)
        return p.returncode, json.loads(p.stdout)

    def transmit(self, request):
        p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "transmit"], input=json.dumps(request),
                           capture_output=True, text=True, timeout=120)
        return p.returncode, json.loads(p.stdout)

    def test_list_minions_through_every_door(self):
        code, doc = self.func("m*", "list_minions")
        self.assertEqual((code, sorted(doc)), (0, ["m1", "m2"]))
        self.assertEqual(self.func_transmit({"method": "list_minions", "clients": "m*"}), (0, ["m1", "m2"]))
        status, doc, _ = API.request("GET", "/api/v1/minions?spec=m*", token=TOKEN)
        self.assertEqual((status, sorted(m["name"] for m in doc["minions"])), (200, ["m1", "m2"]), doc)
        # A SPEC that is not printable: the same refusal everywhere.
        bad = "m\u0007"
        code, doc = self.func(bad, "list_minions")
        ft_code, ft = self.func_transmit({"method": "list_minions", "clients": bad})
        status, api, _ = API.request("GET", "/api/v1/minions?spec=m%07", token=TOKEN)
        messages = {strip(doc["error"]), strip(ft["error"]), strip(api["error"])}
        self.assertEqual((code, ft_code, status), (2, 2, 400), (doc, ft, api))
        self.assertEqual(messages, {"spec must be 1 to 4096 printable characters"})
        # Nothing matched: an error everywhere (Func's error object for func-transmit).
        code, doc = self.func("nosuch*", "list_minions")
        ft_code, ft = self.func_transmit({"method": "list_minions", "clients": "nosuch*"})
        status, api, _ = API.request("GET", "/api/v1/minions?spec=nosuch*", token=TOKEN)
        self.assertEqual((code, ft_code), (1, 1), (doc, ft))
        self.assertEqual(status, 404, api)
        self.assertEqual({strip(doc["error"]), strip(ft["message"]), strip(api["error"])},
                         {"can't find any minions matching \"nosuch*\""})

    def test_a_jobs_status_and_its_rerun_answer_the_same_through_every_door(self):
        code, job = by_func({"spec": "m1;m2", "module": "test", "method": "add", "args": [2, 5], "async": True})
        self.assertEqual(wait_for(job), (0, ("finished", {"m1": 7, "m2": 7})))
        code, doc = self.func("job_status", job)
        t_code, t = self.transmit({"job_status": job})
        ft_code, ft = self.func_transmit({"method": "job_status", "parameters": job})
        status, api, _ = API.request("GET", "/api/v1/jobs/" + job, token=TOKEN)
        self.assertEqual((code, t_code, ft_code, status), (0, 0, 0, 200), (doc, t, ft, api))
        results = {"m1": 7, "m2": 7}
        self.assertEqual([d["results"] for d in (doc, t, api)] + [ft[1]], [results] * 4, (doc, t, ft, api))
        self.assertEqual({d["state"] for d in (doc, t, api)} | {ft[0]}, {"finished", 1})
        # A re-run: a new job on the same hosts, whichever door asked.
        reruns = [self.func("jobs", "rerun", job),
                  self.transmit({"command": ["jobs", "rerun", job]}),
                  API.request("POST", "/api/v1/jobs/%s/rerun" % job, token=TOKEN)[:2]]
        self.assertEqual([r[0] for r in reruns], [0, 0, 202], reruns)
        for _, answer in reruns:
            self.assertEqual((answer["rerun_of"], answer["hosts"]), (job, 2), reruns)
            self.assertEqual(wait_for(answer["job_id"]), (0, ("finished", results)))

    def test_a_method_forced_async_is_a_job_through_every_door(self):
        conf = os.path.join(FLEET.ca_root, "etc", "func", "async_methods.conf")
        os.makedirs(os.path.dirname(conf), mode=0o700, exist_ok=True)
        with open(conf, "w") as f:
            f.write("[main]\nforce_async = test.add\n")
        try:
            call = {"spec": "m1", "module": "test", "method": "add", "args": [3, 4]}
            answers = {door: DOORS[door](dict(call)) for door in ("func transmit", "func-transmit", "func-api")}
            # func follows the job it started: the job's finished status.
            followed = self.func("m1", "call", "test", "add", "3", "4")
        finally:
            os.unlink(conf)
        self.assertEqual(followed[0], 0, followed)
        self.assertEqual((followed[1]["state"], followed[1]["results"]), ("finished", {"m1": 7}), followed)
        self.assertEqual(answers["func-api"][0], 202, answers)
        for door in ("func transmit", "func-transmit", "func-api"):
            self.assertIsInstance(answers[door][1], str, (door, answers))
            self.assertEqual(wait_for(answers[door][1]), (0, ("finished", {"m1": 7})), door)

    def test_a_job_id_is_read_by_one_rule(self):
        bad = "x\u001b[2J"
        code, doc = self.func("job_status", bad)
        t_code, t = self.transmit({"job_status": bad})
        ft_code, ft = self.func_transmit({"method": "job_status", "parameters": bad})
        status, api, _ = API.request("GET", "/api/v1/jobs/x%1B%5B2J", token=TOKEN)
        self.assertEqual((code, t_code, ft_code, status), (2, 2, 2, 400), (doc, t, ft, api))
        self.assertEqual({strip(doc["error"]), strip(t["error"]), strip(ft["error"]), strip(api["error"])},
                         {"a job id is 1 to 4560 printable characters (or last)"})


class JobManagementTest(unittest.TestCase):
    """Job management through func, func transmit's command form and
    func-api: a kill's signal and a listing's filter are read by one rule."""

    def test_a_bad_signal_and_a_bad_filter_are_refused_alike(self):
        def func(*words):
            p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "--json"] + list(words),
                               capture_output=True, text=True, timeout=120)
            return p.returncode, strip(json.loads(p.stdout)["error"])

        def transmit(words):
            p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "transmit"],
                               input=json.dumps({"command": words}), capture_output=True, text=True, timeout=120)
            return p.returncode, strip(json.loads(p.stdout)["error"])

        def api(method, path, body=None):
            status, doc, _ = API.request(method, path, token=TOKEN, body=body)
            return status, strip(doc["error"])

        job = "x-test-ping-1"
        kills = [func("jobs", "kill", job, "--signal", "FROB"),
                 transmit(["jobs", "kill", job, "--signal", "FROB"]),
                 api("POST", "/api/v1/jobs/%s/kill" % job, {"signal": "FROB"})]
        self.assertEqual([k[0] for k in kills], [2, 2, 400], kills)
        self.assertEqual({k[1] for k in kills}, {'unknown signal "FROB" (KILL, TERM, INT, HUP, USR1, USR2, or a number)'})
        lists = [func("jobs", "list", "--function", "[bad"),
                 transmit(["jobs", "list", "--function", "[bad"]),
                 api("GET", "/api/v1/jobs?function=%5Bbad")]
        self.assertEqual([k[0] for k in lists], [2, 2, 400], lists)
        self.assertEqual(len({k[1] for k in lists}), 1, lists)
        self.assertTrue(lists[0][1].startswith("function: bad glob"), lists)


class ManagementAnswersTest(unittest.TestCase):
    """Job, batch and schedule management: the same request through func
    (--json), func transmit's command form and func-api answers the same
    document (the engine's), whichever door asked."""

    def func(self, *words):
        p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "--json"] + list(words),
                           capture_output=True, text=True, timeout=120)
        return p.returncode, json.loads(p.stdout)

    def transmit(self, words):
        p = subprocess.run([binary("func"), "--root", FLEET.ca_root, "transmit"],
                           input=json.dumps({"command": words}), capture_output=True, text=True, timeout=120)
        return p.returncode, json.loads(p.stdout)

    def api(self, method, path, body=None):
        status, doc, _ = API.request(method, path, token=TOKEN, body=body)
        return status, doc

    def test_a_batch_status_is_one_document(self):
        code, job = by_func({"spec": "m1;m2", "module": "test", "method": "add", "args": [1, 1], "batch": 1,
                             "async": True})
        self.assertEqual(wait_for(job)[0], 0)
        answers = [self.func("batch", "status", job), self.transmit(["batch", "status", job]),
                   self.api("GET", "/api/v1/batches/" + job)]
        self.assertEqual([a[0] for a in answers], [0, 0, 200], answers)
        docs = [a[1] for a in answers]
        self.assertEqual(docs[0], docs[1])
        self.assertEqual(docs[0], docs[2])
        self.assertEqual(docs[0]["state"], "complete", docs[0])

    def test_a_job_listing_is_one_document(self):
        code, job = by_func({"spec": "m1", "module": "test", "method": "add", "args": [2, 2], "async": True})
        self.assertEqual(wait_for(job)[0], 0)
        answers = [self.func("jobs", "list", "--limit", "3"), self.transmit(["jobs", "list", "--limit", "3"]),
                   self.api("GET", "/api/v1/jobs?limit=3")]
        self.assertEqual([a[0] for a in answers], [0, 0, 200], answers)
        rows = [[dict(r) for r in a[1]["jobs"]] for a in answers]
        self.assertEqual(rows[0], rows[1])
        self.assertEqual(rows[0], rows[2])
        self.assertIn(job, [r["id"] for r in rows[0]])

    def test_a_schedule_listing_is_one_document(self):
        status, added = self.api("POST", "/api/v1/schedules", {
            "name": "doors-s", "request": {"spec": "m1", "module": "test", "method": "ping"},
            "every": 3600, "enabled": False})
        self.assertEqual(status, 201, added)
        try:
            answers = [self.func("schedule", "list"), self.transmit(["schedule", "list"]),
                       self.api("GET", "/api/v1/schedules")]
        finally:
            self.api("DELETE", "/api/v1/schedules/doors-s")
        self.assertEqual([a[0] for a in answers], [0, 0, 200], answers)
        docs = [a[1] for a in answers]
        self.assertEqual(docs[0], docs[1])
        self.assertEqual(docs[0], docs[2])


    def test_what_runs_now_is_one_document(self):
        """`jobs active`: a job sleeping on both minions is found running
        on both, by func, func transmit and func-api alike; a limited
        token may not ask (403), as the engine decides for every door."""
        code, job = by_func({"spec": "m1;m2", "module": "test", "method": "sleep", "args": [60], "async": True})
        self.assertEqual(code, 0, job)
        try:
            deadline = time.monotonic() + 60
            while True:
                answers = [self.func("jobs", "active", "m*"), self.transmit(["jobs", "active", "m*"]),
                           self.api("GET", "/api/v1/jobs/active?spec=m*")]
                running = [sorted(a[1].get("jobs", {}).get(job, {}).get("running", [])) for a in answers]
                if running == [["m1", "m2"]] * 3 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            self.assertEqual([a[0] for a in answers], [0, 0, 200], answers)
            self.assertEqual(running, [["m1", "m2"]] * 3, answers)
            self.assertEqual(answers[0][1], answers[1][1])
            self.assertEqual(answers[0][1]["jobs"][job], answers[2][1]["jobs"][job])
            limited = API.token("doors-limited", "--allow", "*=test.*")
            status, doc, _ = API.request("GET", "/api/v1/jobs/active", token=limited)
            self.assertEqual(status, 403, doc)
        finally:
            # The kill through func-api answers at once with each host's signal;
            # the job then ends on both hosts, killed (a failure).
            status, killed, _ = API.request("POST", "/api/v1/jobs/%s/kill" % job, token=TOKEN, body={})
            self.assertEqual(status, 200, killed)
        self.assertEqual(sorted(killed["signalled"]), ["m1", "m2"], killed)
        self.assertTrue(all(isinstance(v, str) for v in killed["signalled"].values()), killed)
        code, ended = wait_for(job)
        self.assertEqual((code, ended[0]), (1, "finished"), ended)
        self.assertEqual(sorted(ended[1]), ["m1", "m2"], ended)
        for host, result in ended[1].items():
            self.assertEqual(result[:2], ["REMOTE_ERROR", "func.minion.JobDied"], (host, result))
            self.assertIn("killed", result[2], (host, result))


if __name__ == "__main__":
    unittest.main()
