"""Calls every demo minion the way the overlord does: mutual TLS with the
overlord's certificate, the minion's certificate checked against its name.
Usage: demo_call.py CERTMASTER_ROOT NAME:PORT..."""

import http.client
import os
import socket
import ssl
import sys
import xmlrpc.client


class NamedTransport(xmlrpc.client.SafeTransport):
    """Connects to 127.0.0.1:port but checks the certificate against `name`."""

    def __init__(self, name, context):
        super().__init__(context=context)
        self.name = name

    def make_connection(self, host):
        name, ctx = self.name, self.context

        class Conn(http.client.HTTPSConnection):
            def connect(self):
                sock = socket.create_connection((self.host, self.port), self.timeout)
                self.sock = ctx.wrap_socket(sock, server_hostname=name)

        if self._connection and host == self._connection[0]:
            return self._connection[1]
        self._connection = host, Conn(host, context=ctx)
        return self._connection[1]


def main():
    ca_root, targets = sys.argv[1], sys.argv[2:]
    pki = os.path.join(ca_root, "etc/pki/certmaster/ca")
    ctx = ssl.create_default_context(cafile=os.path.join(pki, "certmaster.crt"))
    ctx.load_cert_chain(os.path.join(pki, "overlord.cert"), os.path.join(pki, "overlord.pem"))
    failed = 0
    for target in sorted(targets):
        name, port = target.split(":")
        s = xmlrpc.client.ServerProxy("https://127.0.0.1:%s" % port, transport=NamedTransport(name, ctx), allow_none=True)
        err = s.test.explode()
        print("%s:" % name)
        print("  test.ping          -> %r" % s.test.ping())
        print("  test.add(1, 5)     -> %r" % s.test.add(1, 5))
        print("  modules            -> %s" % ", ".join(s.system.list_modules()))
        print("  test.explode       -> %s: %s" % (err[1], err[2]))
        failed += s.test.ping() != 1
    print("%d of %d minions answered" % (len(targets) - failed, len(targets)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
