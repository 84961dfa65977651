"""Func's own test/unittest/test_func_transmit.py, ported to Python 3 and
unittest, run against our func-transmit: JSON and YAML, sync and async;
list_minions, client globs (a name, *, a list, name;*, @group, lists of
groups) and test.add / test.echo of int, array, hash and float. The minion
`th` stands for Func's test host (its FQDN)."""

import json
import os
import subprocess
import time
import unittest

import yaml

from funcfixture import Fleet, binary

import func.utils
from func import jobthing


def setUpModule():
    global FLEET
    FLEET = Fleet()
    for name in ("m1", "m2"):
        FLEET.start_minion(name)
    groups = os.path.join(FLEET.ca_root, "etc/func/groups")
    os.makedirs(os.path.dirname(groups), exist_ok=True)
    with open(groups, "w") as f:
        f.write("[test]\nhost = m1\n[test2]\nhost = m2\n")


def tearDownModule():
    FLEET.close()


class BaseTest(object):
    th = "m1"
    asynchronous = False
    ft_cmd = [binary("func-transmit")]

    def _call_async(self, data):
        data["async"] = True
        data["nforks"] = 4
        job_id = self._call(data)
        deadline = time.time() + 60
        while True:
            out = self._call({"clients": "*", "method": "job_status", "parameters": job_id})
            if out[0] == jobthing.JOB_ID_FINISHED:
                return out[1]
            self.assertLess(time.time(), deadline, "job %s never finished: %s" % (job_id, out))
            time.sleep(.25)

    def _call(self, data):
        p = subprocess.run(self.ft_cmd + ["--root", FLEET.ca_root], input=self._serialize(data),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return self._deserialize(p.stdout)

    def call(self, data):
        if self.asynchronous:
            return self._call_async(data)
        return self._call(data)

    def assert_on_fault(self, result):
        self.assertFalse(func.utils.is_error(result[self.th]), result)


class YamlBaseTest(BaseTest):
    ft_cmd = [binary("func-transmit"), "--yaml"]

    def _serialize(self, data):
        return yaml.dump(data).encode()

    def _deserialize(self, buf):
        return yaml.safe_load(buf)


class JSONBaseTest(BaseTest):
    ft_cmd = [binary("func-transmit"), "--json"]

    def _serialize(self, data):
        return json.dumps(data).encode()

    def _deserialize(self, buf):
        return json.loads(buf)


class ListMinion(object):
    def test_list_minions(self):
        self.assertEqual(self.call({"clients": "*", "method": "list_minions"}), ["m1", "m2"])

    def test_list_minions_no_match(self):
        # Func's func-transmit builds its Overlord first, which raises for a
        # SPEC that matches nothing: its error object, for lists as for
        # calls (DESIGN §11; Func's test expected [], which its program
        # never answered).
        data = {"clients": "somerandom-name-that-shouldnt-be-a_real_host_name", "method": "list_minions"}
        p = subprocess.run(self.ft_cmd + ["--root", FLEET.ca_root], input=self._serialize(data),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        out = self._deserialize(p.stdout)
        self.assertEqual(p.returncode, 1)
        self.assertEqual((out["error"], out["name"], out["info"]), (1, "Func Client Exception", {}))
        self.assertIn("can't find any minions matching", out["message"])

    def test_list_minions_group_name(self):
        self.assertEqual(self.call({"clients": "@test", "method": "list_minions"}), ["m1"])

    def test_list_minions_no_clients(self):
        self.assertEqual(self.call({"method": "list_minions"}), ["m1", "m2"])


class TestListMinionYaml(YamlBaseTest, ListMinion, unittest.TestCase):
    pass


class TestListMinionJSON(JSONBaseTest, ListMinion, unittest.TestCase):
    pass


class ClientGlob(object):
    def _test_add(self, client, hosts):
        result = self.call({"clients": client, "method": "add", "module": "test", "parameters": [1, 2]})
        self.assert_on_fault(result)
        self.assertEqual(result, dict((h, 3) for h in hosts))
        return result

    def test_single_client(self):
        self._test_add(self.th, ["m1"])

    def test_glob_client(self):
        self._test_add("*", ["m1", "m2"])

    def test_glob_list(self):
        self._test_add([self.th, self.th], ["m1"])

    def test_glob_string_list(self):
        self._test_add("%s;*" % self.th, ["m1", "m2"])

    def test_group(self):
        self._test_add("@test", ["m1"])

    def test_group_and_glob(self):
        self._test_add("@test;*", ["m1", "m2"])

    def test_list_of_groups(self):
        self._test_add(["@test", "@test2"], ["m1", "m2"])

    def test_string_list_of_groups(self):
        self._test_add("@test;@test2", ["m1", "m2"])


class TestClientGlobYaml(YamlBaseTest, ClientGlob, unittest.TestCase):
    pass


class TestClientGlobJSON(JSONBaseTest, ClientGlob, unittest.TestCase):
    pass


class TestClientGlobYamlAsync(YamlBaseTest, ClientGlob, unittest.TestCase):
    asynchronous = True


class TestClientGlobJSONAsync(JSONBaseTest, ClientGlob, unittest.TestCase):
    asynchronous = True


class T_estTest(object):
    def _echo_test(self, data):
        result = self.call({"clients": "*", "method": "echo", "module": "test", "parameters": [data]})
        self.assert_on_fault(result)
        self.assertEqual(result[self.th], data)

    def test_add(self):
        result = self.call({"clients": "*", "method": "add", "module": "test", "parameters": [1, 2]})
        self.assertEqual(result[self.th], 3)

    def test_echo_int(self):
        self._echo_test(37)

    def test_echo_array(self):
        self._echo_test([1, 2, "three", "fore", "V"])

    def test_echo_hash(self):
        self._echo_test({"one": 1, "two": 2, "three": 3, "four": "IV"})

    def test_echo_float(self):
        self._echo_test(1.0)

    # Func's own FIXMEs (big floats, booleans in YAML) pass here.
    def test_echo_big_float(self):
        self._echo_test(123121232.23)

    def test_echo_boolean(self):
        self._echo_test(True)
        self._echo_test(False)


class TestTestYaml(YamlBaseTest, T_estTest, unittest.TestCase):
    pass


class TestTestJSON(JSONBaseTest, T_estTest, unittest.TestCase):
    pass


class TestTestAsyncJSON(JSONBaseTest, T_estTest, unittest.TestCase):
    asynchronous = True


class TestTestAsyncYaml(YamlBaseTest, T_estTest, unittest.TestCase):
    asynchronous = True


class TestBadRequests(JSONBaseTest, unittest.TestCase):
    def test_bad_requests_are_clear_errors_with_a_nonzero_exit(self):
        for bad in [b"not json", b"[1]", b'{"method": "add"}', b'{"module": "test", "method": "ping", "aysnc": true}']:
            p = subprocess.run(self.ft_cmd + ["--root", FLEET.ca_root], input=bad,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn("error", json.loads(p.stdout), bad)


if __name__ == "__main__":
    unittest.main()


class DeepYamlTest(unittest.TestCase):
    def test_deep_yaml_is_refused_before_it_is_parsed(self):
        # 200 KB of nested flow mappings: the YAML parser's time grows with
        # the square of the depth; the request is refused before parsing.
        deep = ("{a: " * 50000 + "}" * 50000).encode()
        p = subprocess.run([binary("func-transmit"), "--yaml", "--root", "/nonexistent"], input=deep,
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(b"nests deeper than", p.stderr)
        self.assertNotIn(b"{a: {a:", p.stdout + p.stderr, "the request is never echoed")
