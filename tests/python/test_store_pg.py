"""The shared job store (DESIGN §15) on a private PostgreSQL server: two
overlord roots — A, the certmaster's, and B with only the CA certificate and
the overlord's key — configured with the same `[store] url`. B resolves
SPECs from the store; a job started on A is collapsed and listed on B;
`store import` copies a local history once; a batch whose driver on A is
killed is recovered by B with every host run exactly once, and a live one
cannot be taken over; concurrent calls from A and B get distinct ids; the
server stopped mid-job gives a clear error (never the password), sync calls
still work, and the job finishes once it is back."""

import base64
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import unittest

from funcfixture import Fleet, binary
from pgfixture import Postgres
from test_api import wait_until

PASSWORD = "s3cret-pw"


class SharedStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = Postgres()
        try:
            cls.start_fleet()
        except Exception:
            cls.pg.close()
            raise

    @classmethod
    def start_fleet(cls):
        # The server trusts the socket; the password is there to be hidden.
        cls.url = "postgresql://func:%s@/postgres?host=%s" % (PASSWORD, cls.pg.sock)
        cls.fleet = Fleet()
        try:
            cls.set_up_roots()
        except Exception:
            cls.fleet.close()
            raise

    @classmethod
    def set_up_roots(cls):
        cls.minions = {}
        for name in ("m1", "m2", "m3"):
            root, _ = cls.fleet.start_minion(name)
            cls.minions[name] = root
        cls.a = cls.fleet.ca_root
        conf = "[store]\nurl = %s\nbatch_lease = 3\n" % cls.url
        cls.write(os.path.join(cls.a, "etc/func/overlord.conf"), conf)
        cls.write(os.path.join(cls.a, "etc/certmaster/certmaster.conf"), "[store]\nurl = %s\n" % cls.url)
        # B: the CA certificate and the overlord's key and certificate only.
        cls.b = os.path.join(cls.fleet.dir, "overlord-b")
        ca = "etc/pki/certmaster/ca"
        os.makedirs(os.path.join(cls.b, ca), mode=0o700)
        for f in ("certmaster.crt", "overlord.pem", "overlord.cert"):
            shutil.copy2(os.path.join(cls.a, ca, f), os.path.join(cls.b, ca, f))
        cls.write(os.path.join(cls.b, "etc/func/overlord.conf"), conf)
        # The certmaster shares the minions it signed (before the store was
        # configured, here) when it starts.
        cm = subprocess.Popen([binary("certmaster"), "--root", cls.a, "--listen", "127.0.0.1:0", "--foreground"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ok = wait_until(30, lambda: cls.count_minions() == 3)
        finally:
            cm.terminate()
            cm.wait(timeout=10)
            cm.stdout.close()
            cm.stderr.close()
        assert ok, "the certmaster shared its minions"

    @classmethod
    def count_minions(cls):
        try:
            return int(cls.pg.psql("SELECT count(*) FROM func_minions WHERE NOT revoked") or 0)
        except subprocess.CalledProcessError:
            return 0

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()
        cls.pg.close()

    @staticmethod
    def write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def func(self, root, *args, host=None, timeout=120):
        env = dict(os.environ, FUNC_HOST=host or ("overlord-a" if root == self.a else "overlord-b"))
        out = subprocess.run([binary("func"), "--root", root] + list(args), capture_output=True, text=True,
                             timeout=timeout, env=env)
        self.assertNotIn(PASSWORD, out.stdout + out.stderr, "the password is never printed")
        return out

    def job_id(self, out):
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.split("JOB_ID:")[1].split()[0].strip("'")

    def audit_count(self, needle):
        n = 0
        for root in self.minions.values():
            path = os.path.join(root, "var/log/func/audit.log")
            if os.path.exists(path):
                with open(path) as f:
                    n += sum(1 for line in f if needle in line)
        return n

    def test_a_store_that_rewrites_jobs_cannot_change_what_runs(self):
        # Whoever can write the store (here: a trigger) rewrites every job's
        # function and arguments into command.run as it is written. Drivers
        # verify the overlord's signature and send nothing (DESIGN §9).
        marker = os.path.join(self.fleet.dir, "store-wrote-this")
        self.func(self.a, "store", "status")  # the schema exists
        self.pg.psql("""
            CREATE OR REPLACE FUNCTION func_rewrite() RETURNS trigger AS $$
            BEGIN
              NEW.function := 'command.run';
              NEW.meta := jsonb_set(jsonb_set(jsonb_set(NEW.meta, '{function}', '"command.run"'),
                  '{args}', jsonb_build_array('touch %s')), '{typed_args}', 'null');
              RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER func_rewrite BEFORE INSERT OR UPDATE ON func_jobs
              FOR EACH ROW EXECUTE FUNCTION func_rewrite();""" % marker)
        try:
            before = self.audit_count("command.run")
            # An async job (polled to its end), an async batch (collapsed on
            # B) and a sync batch.
            out = self.func(self.a, "-t", "60", "*", "call", "--async", "test", "ping")
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertIn("UntrustedRequest", out.stdout + out.stderr)
            job = self.job_id(self.func(self.a, "*", "call", "--async", "--nopoll", "--batch", "2", "test", "ping"))
            out = self.func(self.b, "-t", "60", "job_status", job, "--wait", "--json")
            doc = json.loads(out.stdout)
            self.assertEqual(sorted(doc["results"]), ["m1", "m2", "m3"], out.stdout)
            for host, value in doc["results"].items():
                self.assertIn("UntrustedRequest", json.dumps(value), host)
            out = self.func(self.a, "*", "call", "--batch", "2", "test", "ping")
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertIn("signature", out.stdout + out.stderr)
        finally:
            self.pg.psql("DROP TRIGGER func_rewrite ON func_jobs; DROP FUNCTION func_rewrite();")
        self.assertFalse(os.path.exists(marker), "the rewritten job ran")
        self.assertEqual(self.audit_count("command.run"), before, "a minion was sent command.run")
        with open(os.path.join(self.a, "var/log/func/api-audit.log")) as f:
            self.assertIn("driver refused", f.read())
        # Untouched, the same calls run.
        out = self.func(self.a, "-t", "60", "*", "call", "--async", "test", "ping")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_terminal_control_from_the_store_is_printed_inert(self):
        # Whoever writes the store puts ESC/OSC and C1 controls in a job's
        # user and function: listings show them escaped.
        job = self.job_id(self.func(self.a, "m1", "call", "--async", "--nopoll", "test", "ping"))
        self.pg.psql("UPDATE func_jobs SET meta = jsonb_set(jsonb_set(meta, '{user}', to_jsonb(E'\\u001b]0;pwned\\u0007x'::text)),"
                     " '{function}', to_jsonb(E'test.\\u009b31mping'::text)) WHERE id = '%s'" % job)
        out = self.func(self.b, "jobs", "list", "--limit", "500")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("\\u{1b}]0;pwned\\u{7}x", out.stdout)
        for c in ("\x1b", "\x07", "\x9b"):
            self.assertNotIn(c, out.stdout + out.stderr)

    def test_b_resolves_spec_from_the_store_and_calls_with_its_key(self):
        out = self.func(self.b, "*", "ping")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        for name in ("m1", "m2", "m3"):
            self.assertIn(name, out.stdout)
        out = self.func(self.b, "--json", "m[12]", "call", "test", "add", "1", "2")
        self.assertEqual(json.loads(out.stdout), {"m1": 3, "m2": 3})

    def test_a_job_started_on_a_is_collapsed_and_listed_on_b(self):
        job = self.job_id(self.func(self.a, "*", "call", "test", "sleep", "1", "--async", "--nopoll"))
        out = self.func(self.b, "-t", "60", "job_status", job, "--wait", "--json")
        doc = json.loads(out.stdout)
        self.assertEqual(doc["status"], 1, out.stdout)
        self.assertEqual(sorted(doc["results"]), ["m1", "m2", "m3"])
        listed = json.loads(self.func(self.b, "jobs", "list", "--json", "--limit", "50").stdout)
        self.assertIn(job, [j["id"] for j in listed["jobs"]])
        # And A sees it finished, from the store, without asking anyone.
        self.assertEqual(json.loads(self.func(self.a, "job_status", job, "--json").stdout)["status"], 1)

    def sign_map(self, text, issued):
        """The store's document for map `text`, signed with A's overlord
        key as func-build-map signs it."""
        ca = os.path.join(self.a, "etc/pki/certmaster/ca")
        signed = b"func-delegation-map\n" + json.dumps([1, issued, text], separators=(",", ":")).encode()
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", os.path.join(ca, "overlord.pem")],
                             input=signed, capture_output=True, check=True).stdout
        der = subprocess.run(["openssl", "x509", "-outform", "DER", "-in", os.path.join(ca, "overlord.cert")],
                             capture_output=True, check=True).stdout
        return json.dumps({"v": 1, "issued": issued, "map": text,
                           "seal": {"cert": base64.b64encode(der).decode(), "sig": base64.b64encode(sig).decode()}})

    def put_map(self, doc):
        self.pg.psql("INSERT INTO func_map (id, map, updated) VALUES (1, %s, 0) "
                     "ON CONFLICT (id) DO UPDATE SET map = EXCLUDED.map" % ("'" + doc.replace("'", "''") + "'"))

    def test_a_delegated_job_is_collapsed_by_another_overlord_and_the_map_is_shared(self):
        # relay1: a func-api with its own root (redb) serving m3.
        relay = os.path.join(self.fleet.dir, "relay1")
        subprocess.run([binary("certmaster-ca"), "--root", self.a, "--relay", "relay1", "--relay-root", relay],
                       check=True, capture_output=True)
        certs = "var/lib/certmaster/certmaster/certs"
        os.makedirs(os.path.join(relay, certs))
        for ext in (".cert", ".addr"):
            shutil.copy2(os.path.join(self.a, certs, "m3" + ext), os.path.join(relay, certs))
        proc = subprocess.Popen([binary("func-api"), "--root", relay, "--listen", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            port = int(proc.stdout.readline().decode().rsplit(":", 1)[1])
            for root in (self.a, self.b):
                with open(os.path.join(root, "etc/func/overlord.conf"), "a") as f:
                    f.write("[relays]\nrelay1 = 127.0.0.1:%d\n" % port)
            # func-build-map keeps the map in the shared store too, signed.
            # Here the store's minions are all at the top (called directly)
            # and relay1 claims m3 too: refused and named (issue 46).
            built = subprocess.run([binary("func-build-map"), "--root", self.a], capture_output=True, text=True,
                                   timeout=60)
            self.assertEqual(built.returncode, 1, built.stdout + built.stderr)
            self.assertIn("m3 is claimed by this overlord and relay relay1", built.stderr)
            kept = json.loads(self.pg.psql("SELECT map FROM func_map"))
            self.assertEqual(kept["map"].strip(), open(os.path.join(self.a, "var/lib/func/map")).read().strip())
            self.assertEqual(set(kept["seal"]), {"cert", "sig"})
            # The map that puts m3 behind relay1, in A's file and the store
            # (signed with the overlord key, as func-build-map signs).
            text = "m1: {}\nm2: {}\nrelay1: {m3: {}}\n"
            path = os.path.join(self.a, "var/lib/func/map")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            self.put_map(self.sign_map(text, float(int(time.time()))))
            self.assertFalse(os.path.exists(os.path.join(self.b, "var/lib/func/map")))
            before = self.audit_count("test.sleep")
            job = self.job_id(self.func(self.a, "--delegate", "*", "call", "test", "sleep", "1", "--async", "--nopoll"))
            out = self.func(self.b, "-t", "60", "job_status", job, "--wait", "--json")
            doc = json.loads(out.stdout)
            self.assertEqual(doc["state"], "finished", out.stdout + out.stderr)
            self.assertEqual(sorted(doc["results"]), ["m1", "m2", "m3"])
            for v in doc["results"].values():
                self.assertIsInstance(v, float, doc)
            self.assertEqual(self.audit_count("test.sleep"), before + 3, "each host once")
            # B delegates with the store's map: m3 through relay1.
            out = self.func(self.b, "-vv", "--delegate", "--json", "m3", "ping")
            self.assertEqual(json.loads(out.stdout), {"m3": 1}, out.stderr)
            self.assertIn("m3 through relay relay1", out.stderr)
            # A store writer's map (issue 46: `m1: {}` made B skip a whole
            # segment with exit 0) is not used, nor an older signed one.
            self.put_map("m1: {}\n")
            out = self.func(self.b, "--delegate", "--json", "*", "ping")
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertIn("not signed", out.stderr)
            self.put_map(self.sign_map("m1: {}\n", float(int(time.time()) - 3600)))
            out = self.func(self.b, "--delegate", "--json", "*", "ping")
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertIn("an old map put back", out.stderr)
            self.put_map(self.sign_map("m1: {}\n", float(int(time.time()) - 3600)).replace("m1: {}", "m2: {}"))
            out = self.func(self.b, "--delegate", "--json", "*", "ping")
            self.assertIn("signature does not hold", out.stderr)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()
            for root in (self.a, self.b):
                path = os.path.join(root, "etc/func/overlord.conf")
                text = open(path).read()
                with open(path, "w") as f:
                    f.write(text.split("[relays]")[0])
            self.pg.psql("DELETE FROM func_map")

    def test_store_status_and_an_idempotent_import(self):
        out = self.func(self.a, "store", "status", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        doc = json.loads(out.stdout)
        self.assertEqual(doc["backend"], "postgresql")
        self.assertEqual(doc["schema_version"], 4)
        self.assertNotIn(PASSWORD, doc["location"])
        self.assertEqual(doc["counts"]["minions"], 3)
        # C: a root with a local history, configured for the store afterwards.
        c = os.path.join(self.fleet.dir, "overlord-c")
        shutil.copytree(os.path.join(self.a, "etc/pki"), os.path.join(c, "etc/pki"))
        shutil.copytree(os.path.join(self.a, "var/lib/certmaster"), os.path.join(c, "var/lib/certmaster"))
        ids = [self.job_id(self.func(c, "m1", "call", "test", "add", str(i), "1", "--async", "--nopoll")) for i in range(3)]
        for job in ids:
            self.assertEqual(self.func(c, "-t", "30", "job_status", job, "--wait").returncode, 0)
        self.assertEqual(self.func(c, "schedule", "add", "imported-nightly", "--cron", "0 3 * * *",
                                   "m1", "test", "ping").returncode, 0)
        self.write(os.path.join(c, "etc/func/overlord.conf"), "[store]\nurl = %s\n" % self.url)
        first = json.loads(self.func(c, "store", "import", "--json").stdout)
        self.assertEqual((first["jobs"], first["imported"]), (3, 3), first)
        self.assertEqual((first["schedules"], first["schedules_imported"]), (1, 1), first)
        again = json.loads(self.func(c, "store", "import", "--json").stdout)
        self.assertEqual((again["imported"], again["already_there"]), (0, 3), again)
        self.assertEqual(again["schedules_imported"], 0, again)
        # B (the same store) lists it, with its next run.
        listed = json.loads(self.func(self.b, "--json", "schedule", "list").stdout)
        mine = [s for s in listed["schedules"] if s["name"] == "imported-nightly"]
        self.assertTrue(mine and mine[0]["enabled"] and mine[0]["next_run"], listed)
        self.assertEqual(self.func(self.b, "schedule", "remove", "imported-nightly").returncode, 0)
        doc = json.loads(self.func(self.b, "job_status", ids[0], "--json").stdout)
        self.assertEqual(doc["results"], {"m1": 1})

    def test_a_killed_batch_driver_is_recovered_by_b_and_every_host_runs_once(self):
        marker = "once-%d" % time.time_ns()
        before = self.audit_count(marker)
        out = self.func(self.a, "*", "call", "command", "run", "sleep 2; echo " + marker, "--async", "--batch", "1")
        batch = self.job_id(out)
        status = lambda root: json.loads(self.func(root, "batch", "status", batch, "--json").stdout)
        self.assertTrue(wait_until(30, lambda: status(self.a)["counts"]["active"] == 1))
        # Alive on A: B may not take it.
        out = self.func(self.b, "batch", "recover", batch, "--json")
        self.assertIn("live lease", out.stdout + out.stderr)
        self.assertEqual(json.loads(out.stdout)["batches"][batch],
                         "nothing to recover")
        pid = status(self.a)["driver_pid"]
        os.killpg(pid, signal.SIGKILL)
        # Its lease (3 s) runs out; then B takes the batch over.
        self.assertTrue(wait_until(30, lambda: status(self.b)["driver_alive"] is False), status(self.b))
        out = self.func(self.b, "batch", "recover", batch, "--json")
        self.assertEqual(json.loads(out.stdout)["batches"][batch], "resumed", out.stdout + out.stderr)
        self.assertTrue(wait_until(60, lambda: status(self.b)["complete"]), status(self.b))
        self.assertEqual(status(self.b)["counts"]["done"], 3)
        self.assertEqual(self.audit_count(marker) - before, 3, "every host ran exactly once")

    def test_concurrent_async_calls_from_a_and_b_get_distinct_ids(self):
        ids, errors = [], []
        lock = threading.Lock()

        def one(root):
            out = self.func(root, "*", "call", "test", "ping", "--async", "--nopoll")
            with lock:
                if out.returncode == 0:
                    ids.append(out.stdout.split("JOB_ID:")[1].split()[0].strip("'"))
                else:
                    errors.append(out.stderr)

        threads = [threading.Thread(target=one, args=(self.a if i % 2 else self.b,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(set(ids)), 20, ids)
        for job in ids:
            doc = json.loads(self.func(self.b, "-t", "60", "job_status", job, "--wait", "--json").stdout)
            self.assertEqual(doc["status"], 1, doc)

    def test_func_api_on_a_announces_a_job_started_on_b(self):
        from test_api import Api, Events
        api = Api(self.fleet)  # on A's root (it has the CA to make its certificate)
        try:
            token = api.token("pg-events", "--admin")
            stream = Events(api, token)
            job = self.job_id(self.func(self.b, "*", "call", "test", "ping", "--async", "--nopoll"))
            prefix = "job/%s/" % job
            self.assertTrue(wait_until(30, lambda: prefix + "complete" in stream.tags(prefix)), stream.tags())
            self.assertEqual(sorted(stream.tags(prefix + "ret/")), [prefix + "ret/m1", prefix + "ret/m2", prefix + "ret/m3"])
            stream.close()
            status, doc, _ = api.request("GET", "/api/v1/jobs?limit=5", token)
            self.assertIn(job, [j["id"] for j in doc["jobs"]])
        finally:
            api.close()

    def test_a_schedule_the_store_forged_or_rewrote_never_runs(self):
        """Whoever can write the store cannot make a schedule run something
        else, or make one up: the record is signed when it is made."""
        from test_api import Api, Events
        marker = os.path.join(self.fleet.dir, "schedule-forged-this")
        api = Api(self.fleet)
        try:
            token = api.token("pg-forged", "--admin")
            stream = Events(api, token, tag="schedule/")
            out = self.func(self.a, "schedule", "add", "honest", "--every", "60", "--disabled", "m1", "test", "ping")
            self.assertEqual(out.returncode, 0, out.stderr)
            # Rewritten: another method, enabled, due now.
            self.pg.psql("""UPDATE func_schedules SET due = 0,
                doc = replace(replace(replace(doc, '"ping"', '"sleep"'), '"enabled":false', '"enabled":true'), '"due":null', '"due":0')
                WHERE name = 'honest'""")
            # Forged: no signature, an administrator's, a command.
            forged = json.dumps({"name": "forged", "request": {"spec": "m1", "module": "command", "method": "run",
                                                               "args": ["touch " + marker]},
                                 "every": 1, "enabled": True, "owner": {"user": "cli:root"}, "created": 0, "due": 0})
            self.pg.psql("INSERT INTO func_schedules (name, owner, due, doc) VALUES ('forged', 'cli:root', 0, '%s')"
                         % forged.replace("'", "''"))
            stopped = lambda: {e["event"] for e in stream.events if e["event"].endswith("/stopped")}
            self.assertTrue(wait_until(60, lambda: stopped() >= {"schedule/honest/stopped", "schedule/forged/stopped"}),
                            stream.tags())
            reasons = [e["data"]["reason"] for e in stream.events if e["event"].endswith("/stopped")]
            self.assertTrue(all("cannot be trusted" in r for r in reasons), reasons)
            self.assertEqual(len(reasons), 2, "each stopped once, never run")
            for name in ("honest", "forged"):
                doc = api.request("GET", "/api/v1/schedules/" + name, token)[1]
                self.assertFalse(doc["enabled"], doc)
                self.assertIn("cannot be trusted", doc["disabled_reason"])
            self.assertFalse([e for e in stream.events if e["event"].endswith("/run")], "nothing ran")
            self.assertFalse(os.path.exists(marker), "the forged schedule ran")
            stream.close()
        finally:
            self.pg.psql("DELETE FROM func_schedules WHERE name IN ('honest', 'forged')")
            api.close()

    def test_a_store_writer_cannot_enable_replay_or_hurry_a_signed_schedule(self):
        """Issue 46: a role set enabled=true, due=now on a disabled weekly
        command.run schedule and func-api ran it; a deleted schedule ran
        again from its saved row; a record a PATCH replaced, put back, gave
        extra runs. Each is refused now, and nothing runs."""
        from test_api import Api, Events
        marker = os.path.join(self.fleet.dir, "schedule-replayed")
        week = "604800"
        api = Api(self.fleet)
        names = ("weekly-off", "weekly-gone", "weekly-patched", "weekly-on")
        try:
            token = api.token("pg-replay", "--admin")
            stream = Events(api, token, tag="schedule/")
            for name in names:
                out = self.func(self.a, "schedule", "add", name, "--every", week,
                                *(["--disabled"] if name == "weekly-off" else []),
                                "m1", "command", "run", "touch " + marker)
                self.assertEqual(out.returncode, 0, out.stderr)
            row = lambda name: self.pg.psql("SELECT doc FROM func_schedules WHERE name = '%s'" % name)

            def put(name, doc):
                self.pg.psql("INSERT INTO func_schedules (name, owner, due, doc) VALUES ('%s', 'cli:root', 0, '%s') "
                             "ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc, due = 0, owner = EXCLUDED.owner"
                             % (name, doc.replace("'", "''")))
            # Enabled and due now by the store alone.
            put("weekly-off", row("weekly-off").replace('"enabled":false', '"enabled":true').replace('"due":null', '"due":0'))
            # Deleted, then its saved row put back.
            saved = row("weekly-gone")
            self.assertEqual(self.func(self.a, "schedule", "remove", "weekly-gone").returncode, 0)
            put("weekly-gone", saved)
            # Replaced by a change (disabled and enabled: a new version), put back.
            saved = row("weekly-patched")
            for verb in ("disable", "enable"):
                self.assertEqual(self.func(self.a, "schedule", verb, "weekly-patched").returncode, 0)
            put("weekly-patched", saved)
            # Enabled, signed, but hurried: due now by the store, a week early.
            self.pg.psql("UPDATE func_schedules SET due = 0 WHERE name = 'weekly-on'")
            stopped = lambda: {e["event"] for e in stream.events if e["event"].endswith("/stopped")}
            want = {"schedule/%s/stopped" % n for n in names[:3]}
            self.assertTrue(wait_until(60, lambda: stopped() >= want), stream.tags())
            reasons = {e["event"]: e["data"]["reason"] for e in stream.events if e["event"].endswith("/stopped")}
            self.assertIn("signature", reasons["schedule/weekly-off/stopped"])
            self.assertIn("deleted", reasons["schedule/weekly-gone/stopped"])
            self.assertIn("older than version", reasons["schedule/weekly-patched/stopped"])
            # The hurried one: its due time set right by its signed times.
            self.assertTrue(wait_until(60, lambda: float(self.pg.psql(
                "SELECT due FROM func_schedules WHERE name = 'weekly-on'")) > time.time() + 86400))
            self.assertFalse([e for e in stream.events if e["event"].endswith("/run")], "nothing ran")
            self.assertFalse(os.path.exists(marker), "a replayed schedule ran")
            # The deleted name made anew is a schedule again (its tombstone went).
            self.pg.psql("DELETE FROM func_schedules WHERE name = 'weekly-gone'")
            out = self.func(self.a, "schedule", "add", "weekly-gone", "--every", week, "--disabled", "m1", "test", "ping")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(self.func(self.a, "schedule", "enable", "weekly-gone").returncode, 0)
            stream.close()
        finally:
            self.pg.psql("DELETE FROM func_schedules WHERE name LIKE 'weekly-%'")
            api.close()

    def test_two_func_api_on_one_store_run_each_scheduled_run_once(self):
        """The lease of issue 40: a 1-second schedule, two func-api on one
        PostgreSQL store, 20 runs, none twice."""
        from test_api import Api, Events
        # C: a second func-api with its own root (the CA to make its own
        # certificate, the overlord key), the minions from the store.
        c = os.path.join(self.fleet.dir, "overlord-lease")
        ca = "etc/pki/certmaster/ca"
        os.makedirs(os.path.join(c, ca), mode=0o700)
        for f in ("certmaster.crt", "certmaster.key", "overlord.pem", "overlord.cert"):
            shutil.copy2(os.path.join(self.a, ca, f), os.path.join(c, ca, f))
        self.write(os.path.join(c, "etc/func/overlord.conf"), "[store]\nurl = %s\n" % self.url)
        apis, streams = [], []
        try:
            for root in (self.a, c):
                api = Api(self.fleet, root=root)
                apis.append(api)
                token = api.token("lease-%d" % len(apis), "--admin")
                streams.append((api, token, Events(api, token, tag="schedule/lease/")))
            out = self.func(self.a, "schedule", "add", "lease", "--every", "1", "m1", "test", "ping")
            self.assertEqual(out.returncode, 0, out.stderr)

            def runs():
                return [e for _, _, s in streams for e in s.events if e["event"] == "schedule/lease/run"]
            self.assertTrue(wait_until(180, lambda: len(runs()) >= 20, 0.2), "20 runs: %d" % len(runs()))
            self.assertEqual(self.func(self.a, "schedule", "disable", "lease").returncode, 0)
            api, token, _ = streams[0]

            def settled():
                doc = api.request("GET", "/api/v1/schedules/lease", token)[1]
                taken = [e for _, _, s in streams for e in s.events if e["event"].startswith("schedule/lease/")]
                return doc["runs"] == len(taken) and doc
            doc = None
            self.assertTrue(wait_until(30, lambda: settled(), 0.1), "every run taken was announced once")
            done = runs()
            dues = [e["data"]["due"] for e in done]
            self.assertEqual(len(dues), len(set(dues)), "no run taken twice")
            ids = [e["data"]["job_id"] for e in done]
            self.assertEqual(len(ids), len(set(ids)))
            listed = api.request("GET", "/api/v1/jobs?limit=500", token)[1]["jobs"]
            self.assertEqual(sorted(j["id"] for j in listed if j.get("schedule") == "lease"), sorted(ids),
                             "each run is one job carrying its schedule")
            per_api = [sum(1 for e in s.events if e["event"] == "schedule/lease/run") for _, _, s in streams]
            print("lease: runs taken by each func-api:", per_api)
        finally:
            self.func(self.a, "schedule", "remove", "lease")
            for _, _, stream in streams:
                stream.close()
            for api in apis:
                api.close()

    def test_schedules_go_on_after_the_server_was_away(self):
        """The database down: func-api's scheduler says so and waits; back,
        the schedule runs again without a restart (a missed run made up
        once, not once per missed second)."""
        from test_api import Api, Events
        api = Api(self.fleet)
        try:
            token = api.token("pg-outage", "--admin")
            stream = Events(api, token, tag="schedule/outage/")
            out = self.func(self.a, "schedule", "add", "outage", "--every", "1", "m1", "test", "ping")
            self.assertEqual(out.returncode, 0, out.stderr)
            runs = lambda: [e for e in stream.events if e["event"] == "schedule/outage/run"]
            self.assertTrue(wait_until(60, lambda: len(runs()) >= 1, 0.1), stream.tags())
            self.pg.stop()
            try:
                status, doc, _ = api.request("GET", "/api/v1/schedules/outage", token)
                self.assertEqual(status, 503, doc)
                self.assertNotIn(PASSWORD, json.dumps(doc))
                before = len(runs())
            finally:
                self.pg.start()
            # Without a restart: the watcher and the scheduler follow the
            # store again once it answers (a run taken just before it went
            # away is collected, so the next ones are not skipped forever).
            ok = wait_until(60, lambda: len(runs()) >= before + 2, 0.1)
            self.assertTrue(ok, "runs again: %s" % stream.tags()[-5:])
            dues = [e["data"]["due"] for e in runs()]
            self.assertEqual(len(dues), len(set(dues)))
            stream.close()
        finally:
            self.func(self.a, "schedule", "remove", "outage")
            api.close()

    def test_the_server_stopped_mid_job(self):
        job = self.job_id(self.func(self.a, "*", "call", "test", "sleep", "2", "--async", "--nopoll"))
        self.pg.stop()
        try:
            out = self.func(self.a, "jobs", "list")
            self.assertEqual(out.returncode, 1)
            self.assertIn("postgresql://func@", out.stderr)
            out = self.func(self.a, "*", "call", "test", "ping", "--async")
            self.assertEqual(out.returncode, 1)
            self.assertIn("job store", out.stderr)
            # A synchronous call needs no store (A has the certificates).
            out = self.func(self.a, "*", "ping")
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            time.sleep(3)  # the minions finish the job meanwhile
        finally:
            self.pg.start()
        doc = json.loads(self.func(self.a, "-t", "60", "job_status", job, "--wait", "--json").stdout)
        self.assertEqual(doc["status"], 1, doc)
        self.assertEqual(sorted(doc["results"]), ["m1", "m2", "m3"])
        self.assertFalse(any(isinstance(v, list) and v and v[0] == "REMOTE_ERROR" for v in doc["results"].values()), doc)

    def test_a_driver_keeps_its_results_while_the_server_is_away(self):
        # The server goes away as the job is submitted: the driver waits
        # and writes what it has when the server is back.
        out = subprocess.Popen([binary("func"), "--root", self.a, "*", "call", "test", "add", "4", "5", "--async", "--nopoll"],
                               stdout=subprocess.PIPE, text=True, env=dict(os.environ, FUNC_HOST="overlord-a"))
        line = out.stdout.readline()
        out.wait(timeout=30)
        out.stdout.close()
        job = line.split("JOB_ID:")[1].split()[0].strip("'")
        self.pg.stop()
        time.sleep(2)
        self.pg.start()
        doc = json.loads(self.func(self.b, "-t", "60", "job_status", job, "--wait", "--json").stdout)
        self.assertEqual(doc["results"], {"m1": 9, "m2": 9, "m3": 9}, doc)


    def test_z_a_revoked_minion_is_refused_by_every_overlord(self):
        # Runs last (it revokes m3). B has no CRL file of its own: it must
        # honour the CRL the certmaster publishes into the store, and its
        # running func-api must reload it without a restart.
        import ssl
        import urllib.request
        pki = os.path.join(self.b, "etc/pki/func-api")
        os.makedirs(pki, mode=0o700, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", os.path.join(pki, "func-api.pem"), "-out", os.path.join(pki, "func-api.cert"),
                        "-subj", "/CN=localhost", "-days", "2"], check=True, capture_output=True)
        token = subprocess.run([binary("func-api"), "--root", self.b, "token", "create", "adm", "--admin"],
                               check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        api = subprocess.Popen([binary("func-api"), "--root", self.b, "--listen", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = api.stdout.readline().decode()
            self.assertIn("func-api listening on", line, api.stderr.read(2000) if not line else line)
            port = int(line.rsplit(":", 1)[1])
            ctx = ssl._create_unverified_context()

            def ping_m3():
                req = urllib.request.Request("https://127.0.0.1:%d/api/v1/calls" % port, method="POST",
                                             data=json.dumps({"spec": "m3", "module": "test", "method": "ping"}).encode(),
                                             headers={"Authorization": "Bearer " + token,
                                                      "Content-Type": "application/json"})
                with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
                    return json.loads(r.read())["m3"]

            self.assertEqual(ping_m3(), 1, "m3 is called through a kept connection")
            self.assertEqual(self.func(self.b, "m3", "ping").returncode, 0)
            # Revoked on the certmaster host; the store's per-name list then
            # lists m3 again (a re-enrolment, or whoever writes the store),
            # while the old key still answers at m3's address.
            out = subprocess.run([binary("certmaster-ca"), "--root", self.a, "--clean", "m3"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(self.pg.psql("SELECT count(*) FROM func_crl"), "1", "the CRL is in the store")
            self.pg.psql("UPDATE func_minions SET revoked = false WHERE name = 'm3'")
            for root in (self.b, self.a):
                out = self.func(root, "m3", "ping")
                self.assertNotEqual(out.returncode, 0, (root, out.stdout, out.stderr))
                self.assertNotIn("m3: 1", out.stdout)
            self.assertTrue(wait_until(30, lambda: "REMOTE_ERROR" in json.dumps(ping_m3()), pause=0.5),
                            "the running func-api reloaded the shared CRL")
        finally:
            api.terminate()
            api.wait(timeout=30)
            log = api.stderr.read().decode(errors="replace")
            api.stdout.close()
            api.stderr.close()
        self.assertNotIn("NOTICE", log, "PostgreSQL's notices are not logged")


if __name__ == "__main__":
    unittest.main()


class StoreConformanceTest(unittest.TestCase):
    """The job store's conformance suite (func_tests::store_conformance,
    which `make test` also runs on the embedded store) on its own private
    PostgreSQL server: the same checks, the same answers."""

    def test_postgresql_conforms(self):
        pg = Postgres()
        try:
            out = subprocess.run([binary("func-store-conformance"), pg.url], capture_output=True, text=True,
                                 timeout=600)
        finally:
            pg.close()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("0 failed", out.stderr)
        self.assertGreaterEqual(out.stderr.count("\nok "), 10, out.stderr)
