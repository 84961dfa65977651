"""Wire compatibility: Python's own xmlrpc.client, with an ssl context holding
the overlord's client certificate, calls a real funcd over mutual TLS."""

import datetime
import os
import ssl
import subprocess
import unittest
import xmlrpc.client

from funcfixture import Fleet, binary, is_error


class WireTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        # Called at 127.0.0.1, its certificate checked against its name (fleet.proxy).
        cls.root, cls.port = cls.fleet.start_minion("m1")
        cls.s = cls.fleet.proxy(cls.port)

    @classmethod
    def tearDownClass(cls):
        cls.s("close")()
        cls.fleet.close()

    def test_ping_and_add(self):
        self.assertEqual(self.s.test.ping(), 1)
        self.assertEqual(self.s.test.add(1, 5), 6)
        self.assertEqual(self.s.test.add("foo", "bar"), "foobar")
        self.assertEqual(self.s.test.add(2147483647, 1), 2147483648)

    def test_echo_round_trips_every_type(self):
        values = [
            1, -2147483648, 2147483647, 123.456, 123121232.23, 234234234234234234234.234234234234234,
            0.000000000000000000000000000000037, True, False, "caneatcheese", "tab\t<&>\"' unicode é✓ 漢字", "", "  padded  ",
            xmlrpc.client.Binary(b"348dshke354ts0d9urgk\x00\xff" * 20),
            xmlrpc.client.DateTime(datetime.datetime(1974, 1, 5, 11, 59, 0)),
            [1, 2, "three", "fore", "V"], {"one": 1, "too": 2, "III": 3, "many": 8, "lots": 12312},
            [[1, [2, [3, {"deep": [None, {"x": []}]}]]]], [], {}, None,
        ]
        for v in values:
            with self.subTest(v=repr(v)[:40]):
                self.assertEqual(self.s.test.echo(v), v)

    def test_bigint_arrives_as_python_int(self):
        self.assertEqual(self.s.test.bigint(), 2 ** 32)

    def test_list_methods_and_modules(self):
        methods = self.s.system.listMethods()
        self.assertEqual(methods, sorted(methods))
        for name in ["system.listMethods", "test.ping", "command.run", "copyfile.copyfile", "process.info", "service.status", "hardware.info"]:
            self.assertIn(name, methods)
        self.assertEqual(self.s.system.list_methods(), methods)
        self.assertEqual(self.s.system.list_modules(), ["command", "copyfile", "echo", "fact", "hardware", "jobs", "overlord", "process", "service", "system", "test"])
        self.assertIn("ping", self.s.system.inventory()["test"])

    def test_echo_answers_each_type_as_funcs_did(self):
        """Func's echo module (its tests call echo.run_string through a fact
        filter): str(), int() and float() conversions, the rest unchanged."""
        self.assertEqual(self.s.echo.run_string("heyman"), "heyman")
        self.assertEqual(self.s.echo.run_string(5), "5")
        self.assertEqual(self.s.echo.run_int("42"), 42)
        self.assertEqual(self.s.echo.run_float("1.5"), 1.5)
        self.assertEqual(self.s.echo.run_options("second_option"), "second_option")
        self.assertEqual(self.s.echo.run_list([1, "a"]), [1, "a"])
        self.assertEqual(self.s.echo.run_hash({"k": [True]}), {"k": [True]})
        self.assertIs(self.s.echo.run_boolean(False), False)
        self.assertEqual(self.s.echo.run_int("x")[1], "ValueError", "as int(\"x\")")
        self.assertTrue(is_error(self.s.echo.run_string()))
        self.assertEqual(self.s.echo.get_method_args()["run_int"]["args"]["command"]["type"], "int")

    def test_errors_are_values(self):
        r = self.s.test.does_not_exist(1, 2)
        self.assertTrue(is_error(r))
        self.assertEqual(r[1], "func.minion.codes.InvalidMethodException")
        r = self.s.test.explode()
        self.assertTrue(is_error(r))
        self.assertEqual(r[1:3], ["exceptions.Exception", "khhhhhhaaaaaan!!!!!!"])
        r = self.s.test.sleep(1, 2)
        self.assertEqual(r[1], "TypeError")
        self.assertTrue(is_error(self.s.test.explode_no_string()))

    def test_every_module_and_base_method(self):
        for module in self.s.system.list_modules():
            for base in ["module_version", "module_api_version", "module_description", "list_methods", "get_method_args"]:
                with self.subTest(m=module + "." + base):
                    self.assertFalse(is_error(getattr(getattr(self.s, module), base)()))

    def test_command(self):
        self.assertEqual(self.s.command.run("echo -n foo")[1], "foo")
        self.assertEqual(self.s.command.run("echo 'foobar' | grep foo")[1], "foobar\n")
        self.assertIn("BLIPPYFOO=awesome", self.s.command.run("env", {"BLIPPYFOO": "awesome"})[1])
        rc, out, err = self.s.command.run("printf 'bell\\007 esc\\033[0m'; echo oops >&2; exit 4")
        self.assertEqual((rc, err), (4, "oops\n"))
        self.assertTrue(out.startswith("bell"))
        self.assertTrue(self.s.command.exists("/bin/sh"))
        self.assertFalse(self.s.command.exists("/no/such/binary"))

    def test_copyfile(self):
        dest = "/tmp/func_test_file_dest"
        self.assertEqual(self.s.copyfile.copyfile(dest, xmlrpc.client.Binary(b"this is a func test file")), 1)
        self.assertEqual(self.s.copyfile.copyfile(dest, xmlrpc.client.Binary(b"this is a func test file")), 0)
        self.assertEqual(self.s.copyfile.checksum(dest), "b36a8040e44c16605d7784cdf1b3d9ed04ea7f55")
        self.assertEqual(self.s.copyfile.open("/srv/chunks", 0o640), "/srv/chunks")
        self.assertEqual(self.s.copyfile.append("/srv/chunks", xmlrpc.client.Binary(b"a" * 60000)), 1)
        self.assertEqual(self.s.copyfile.append("/srv/chunks", xmlrpc.client.Binary(b"b")), 1)
        with open(os.path.join(self.root, "srv/chunks"), "rb") as f:
            self.assertEqual(f.read(), b"a" * 60000 + b"b")
        self.assertTrue(is_error(self.s.copyfile.copyfile("/tmp/../../etc/passwd", xmlrpc.client.Binary(b"x"))))

    def test_process_service_hardware(self):
        self.assertGreaterEqual(len(self.s.process.loadavg()), 3)
        self.assertTrue(any("funcd" in " ".join(p) for p in self.s.process.info()))
        self.assertIsInstance(self.s.process.mem(), list)
        self.assertTrue(is_error(self.s.process.kill("0")))
        status = self.s.service.status("func-no-such-service")
        if os.path.isdir("/run/systemd/system"):
            self.assertIsInstance(status, int)
        else:
            self.assertTrue(is_error(status))
            self.assertIn("systemd", status[2])
        self.assertIsInstance(self.s.system.grep("cpu"), dict)

    def test_funcs_result_shapes(self):
        """hardware.info and process.mem as Func's own modules answered
        (func/minion/modules/hardware.py with smolt, process.py with ps_mem)."""
        info = self.s.hardware.info()
        func_keys = ["os", "defaultRunlevel", "bogomips", "cpuVendor", "cpuModel", "numCpus", "cpuSpeed",
                     "systemMemory", "systemSwap", "kernelVersion", "language", "platform", "systemVendor",
                     "systemModel", "formfactor", "selinux_enabled", "selinux_enforce", "devices"]
        self.assertEqual(sorted(info), sorted(func_keys))
        for key in func_keys[:-1]:
            self.assertIsInstance(info[key], str, key)
        self.assertGreaterEqual(int(info["numCpus"]), 1)
        self.assertIn(info["selinux_enabled"], ["True", "False"])
        for device in info["devices"]:
            self.assertEqual(sorted(device), sorted(["VendorID", "DeviceID", "SubsysVendorID", "Bus", "Driver", "Type", "Description"]))
            self.assertTrue(all(isinstance(v, str) for v in device.values()))
        self.assertNotIn("devices", self.s.hardware.info(False))
        self.assertNotIn("bogomips", self.s.hardware.inventory())
        details = self.s.hardware.details()
        self.assertIsInstance(details["numCpus"], int)
        self.assertIn("disks", details)
        rows = self.s.process.mem()
        self.assertGreaterEqual(len(rows), 2)
        for row in rows[:-1]:
            self.assertEqual(len(row), 4)
            for cell in row[:3]:
                self.assertRegex(cell, r"^\d+\.\d (Ki|Mi|Gi|Ti)B$")
        self.assertEqual(rows[-1][:3], ["", "", ""])
        self.assertRegex(rows[-1][3], r"^\d+\.\d (Ki|Mi|Gi|Ti)B$")
        typed = self.s.process.mem_kib()
        self.assertTrue(all(isinstance(r[0], int) for r in typed))

    def test_keep_alive_reuses_one_connection(self):
        s = self.fleet.proxy(self.port)
        for i in range(50):
            self.assertEqual(s.test.add(i, 1), i + 1)
        s("close")()


class RefusalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = Fleet()
        cls.root, cls.port = cls.fleet.start_minion("m1")
        cls.peer_root = cls.fleet.enroll("peer")

    @classmethod
    def tearDownClass(cls):
        cls.fleet.close()

    def test_minion_certificate_calling_another_minion_gets_fault_1(self):
        pki = os.path.join(self.peer_root, "etc/pki/certmaster")
        ctx = self.fleet.context(os.path.join(pki, "peer.cert"), os.path.join(pki, "peer.pem"))
        with self.assertRaises(xmlrpc.client.Fault) as caught:
            self.fleet.proxy(self.port, ctx).test.ping()
        self.assertEqual(caught.exception.faultCode, 1)
        self.assertIn("AccessToMethodDenied", caught.exception.faultString)

    def test_client_without_certificate_is_refused(self):
        ctx = self.fleet.context(cert=False)
        with self.assertRaises((ssl.SSLError, ConnectionError, OSError, xmlrpc.client.ProtocolError)):
            self.fleet.proxy(self.port, ctx).test.ping()

    def test_certificate_from_another_ca_is_refused(self):
        foreign = os.path.join(self.fleet.dir, "foreign")
        subprocess.run([binary("func-testpki"), "foreign", foreign], check=True, stdout=subprocess.DEVNULL)
        ctx = self.fleet.context(os.path.join(foreign, "client.cert"), os.path.join(foreign, "client.pem"))
        with self.assertRaises((ssl.SSLError, ConnectionError, OSError, xmlrpc.client.ProtocolError)):
            self.fleet.proxy(self.port, ctx).test.ping()

    def test_server_not_trusted_without_our_ca(self):
        foreign = os.path.join(self.fleet.dir, "foreign2")
        subprocess.run([binary("func-testpki"), "foreign", foreign], check=True, stdout=subprocess.DEVNULL)
        ctx = self.fleet.context(ca=os.path.join(foreign, "ca.crt"))
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.fleet.proxy(self.port, ctx).test.ping()

    def test_still_serving_after_refusals(self):
        self.assertEqual(self.fleet.proxy(self.port).test.ping(), 1)


if __name__ == "__main__":
    unittest.main()
