"""Func's overlord API: `Overlord(spec).module.method(*args)`.

Each call runs the `func` program (found on `PATH`, or `FUNC_BINARY`) with the
root from `root=` or `FUNC_ROOT`, and reads its typed answer (`--out xmlrpc`),
so results keep their XML-RPC types (int, float, bool, str, list, dict, None,
bytes for base64, datetime) and a script's jobs are the CLI's jobs, in the same
store, under the same limits and audit. A host that failed or could not be
reached is a REMOTE_ERROR list in the results, never an exception; a mistake
in the call itself (no such option, a bad argument type) raises `FuncError`.

Ported from Func: Python 3; `async` is a keyword, so pass `async_mode=True`
or `**{"async": True}`; arguments go as JSON types (bytes and dates are not
accepted as arguments).
"""

import copy
import json
import os
import re
import subprocess
import xmlrpc.client

from func import jobthing

__all__ = ["Overlord", "Client", "FuncError"]

DEFAULT_PORT = 51234
NO_MATCH = "can't find any minions matching"


class FuncError(Exception):
    """The `func` program refused the call (a usage or configuration error)."""


def _func_binary():
    return os.environ.get("FUNC_BINARY") or "func"


class _Method:
    def __init__(self, overlord, module, method):
        self._overlord, self._module, self._method = overlord, module, method

    def __call__(self, *args):
        return self._overlord.run(self._module, self._method, list(args))

    def __getattr__(self, name):
        # Func allowed dotted module names (ov.a.b.c): module "a.b", method "c".
        return _Method(self._overlord, "%s.%s" % (self._module, self._method), name)


class _Module:
    def __init__(self, overlord, module):
        self._overlord, self._module = overlord, module

    def __getattr__(self, method):
        if method.startswith("__"):
            raise AttributeError(method)
        return _Method(self._overlord, self._module, method)


class _Q(object):
    """Func's fact query: a connector (AND, OR) over (key, value) pairs and
    other queries, maybe negated; `wire()` is Func's serialized form, the
    `{"__fact__": ...}` its overlord sent and funcd judges."""

    def __init__(self, connector="AND", children=(), negated=False):
        self.connector, self.children, self.negated = connector, list(children), negated

    @classmethod
    def of(cls, connector, kwargs):
        # Django's Q(**kwargs): the pairs in key order.
        return cls(connector, sorted(kwargs.items()))

    def combine(self, other, connector):
        if not self.children:
            return other
        return _Q(connector, [self, other])

    def wire(self):
        items = []
        for c in self.children:
            items.append(c.wire() if isinstance(c, _Q) else [c[0], c[1]])
        node = [self.connector, items]
        return ["NOT", node] if self.negated else node


class Overlord(object):
    """Calls minions matching `server_spec` (a glob, `a;b`, `@group`)."""

    def __init__(self, server_spec, port=DEFAULT_PORT, interactive=False, verbose=False,
                 noglobs=False, nforks=1, config=None, init_ssl=True, timeout=None,
                 root=None, async_mode=False, **kwargs):
        self.server_spec = server_spec
        self.port = port
        self.interactive = interactive
        self.verbose = verbose
        self.noglobs = noglobs
        self.nforks = nforks
        self.config = config
        self.timeout = timeout
        self.root = root or os.environ.get("FUNC_ROOT")
        self.async_mode = bool(async_mode or kwargs.pop("async", False))
        # Func's other keywords (delegate, mapfile, ...) are accepted and unused.
        self.extra = kwargs
        # Targeting by facts (filter, filter_or, ...): judged by the minions.
        self.fact_query = _Q()

    # -- targeting by facts, as Func's OverlordQuery did ---------------------

    def _filtered(self, outside, inside, kwargs, negated=False):
        if not kwargs:
            raise TypeError("a filter needs at least one fact=value (os=\"Debian\", runlevel__gt=2)")
        clone = copy.copy(self)
        q = _Q.of(inside, kwargs)
        q.negated = negated
        clone.fact_query = self.fact_query.combine(q, outside)
        return clone

    def filter(self, **kwargs):
        """A new Overlord for the minions whose facts satisfy every
        fact=value (Django-style keywords: runlevel__gt=2, os__icontains="deb")."""
        return self._filtered("AND", "AND", kwargs)

    def filter_or(self, **kwargs):
        """At least one fact=value holds (ORed with the filters so far)."""
        return self._filtered("OR", "OR", kwargs)

    def and_and(self, **kwargs):
        return self._filtered("AND", "AND", kwargs)

    def and_or(self, **kwargs):
        return self._filtered("AND", "OR", kwargs)

    def or_or(self, **kwargs):
        return self._filtered("OR", "OR", kwargs)

    def or_and(self, **kwargs):
        return self._filtered("OR", "AND", kwargs)

    def exclude(self, **kwargs):
        """The minions where the fact=value terms do not all hold."""
        return self._filtered("AND", "AND", kwargs, negated=True)

    def _fact_words(self):
        if not self.fact_query.children:
            return []
        return ["--fact-query", json.dumps(self.fact_query.wire())]

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Module(self, name)

    # -- what a call runs ---------------------------------------------------

    def _argv(self, words):
        argv = [_func_binary()]
        if self.root:
            argv += ["--root", str(self.root)]
        if self.timeout is not None:
            argv += ["--timeout", str(self.timeout)]
        return argv + ["--out", "xmlrpc"] + list(words)

    def _func(self, words):
        """Runs func; (exit status, stdout text, stderr text)."""
        try:
            done = subprocess.run(self._argv(words), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise FuncError("cannot run %s: %s (set FUNC_BINARY or PATH)" % (_func_binary(), e))
        return (done.returncode, done.stdout.decode("utf-8", "replace"),
                done.stderr.decode("utf-8", "replace"))

    @staticmethod
    def _typed(text, stderr, code):
        """The value of func's --out xmlrpc answer."""
        try:
            params, _ = xmlrpc.client.loads(text, use_builtin_types=True)
        except Exception:
            why = stderr.strip().splitlines()[-1] if stderr.strip() else "no answer"
            raise FuncError("func (exit status %d): %s" % (code, why))
        return params[0]

    def run(self, module, method, args, nforks=None):
        """Calls module.method(*args) on every matching minion: {host:
        result}; with noglobs the one result; a job id when async; {} when
        nothing matches (as Func)."""
        forks = nforks or self.nforks or 1
        words = ["--forks", str(max(1, min(int(forks), 1024)))] + self._fact_words() + [self.server_spec, "call"]
        if self.async_mode:
            words += ["--async", "--nopoll"]
        try:
            typed = json.dumps(list(args))
        except (TypeError, ValueError) as e:
            raise FuncError("arguments must be JSON types (int, float, bool, str, list, dict, None): %s" % e)
        words += ["--json-args", typed, "--", module, method]
        code, out, err = self._func(words)
        if NO_MATCH in err:
            return {}
        value = self._typed(out, err, code)
        if isinstance(value, dict) and set(value) == {"error", "exit_status"}:
            raise FuncError(value["error"])
        if self.async_mode:
            return value.get("job_id") if isinstance(value, dict) else value
        if self.noglobs:
            if self.server_spec in value:
                return value[self.server_spec]
            return next(iter(value.values())) if len(value) == 1 else value
        return value

    def job_status(self, jobid, client_class=None):
        """(code, {host: result}) with Func's codes (func.jobthing)."""
        code, out, err = self._func(["job_status", str(jobid)])
        value = self._typed(out, err, code)
        if isinstance(value, dict) and "error" in value:
            raise FuncError(value["error"])
        status, results = value
        return (status, results)

    def list_minions(self, format="list"):
        """The names the spec matches, in natural order ([] when none)."""
        code, out, err = self._func(self._fact_words() + [self.server_spec, "list_minions"])
        if NO_MATCH in err:
            return []
        value = self._typed(out, err, code)
        if isinstance(value, dict) and set(value) == {"error", "exit_status"}:
            raise FuncError(value["error"])
        names = list(value.keys()) if isinstance(value, dict) else list(value)
        return sorted(names, key=_natural)

    # Func's spelling for a finished-or-not check of many ids.
    def check_status(self, jobid):
        return self.job_status(jobid)


def _natural(name):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


class Client(Overlord):
    """Func's deprecated name of Overlord."""

