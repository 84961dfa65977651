"""Func's overlord API: `Overlord(spec).module.method(*args)`.

Each call runs the `func` program (found on `PATH`, or `FUNC_BINARY`) with the
root from `root=` or `FUNC_ROOT`, and reads its typed answer (`--out xmlrpc`),
so results keep their XML-RPC types (int, float, bool, str, list, dict, None,
bytes for base64, datetime) and a script's jobs are the CLI's jobs, in the same
store, under the same limits and audit. A host that failed or could not be
reached is a REMOTE_ERROR list in the results, never an exception; a mistake
in the call itself (no such option, a bad argument type) raises `FuncError`.

Ported from Func: Python 3; `async` is a keyword, so pass `async_mode=True`
or `**{"async": True}` (a string goes through Func's smart_bool: "false",
"0" and "" are false). Arguments keep their types, bytes and
`xmlrpc.client.Binary` as base64 and `datetime` as dateTime included. A SPEC
that matches no minion raises `Func_Client_Exception` from the constructor,
as Func's client did.
"""

import base64
import copy
import datetime
import difflib
import json
import os
import re
import subprocess
import time
import xmlrpc.client

from func import jobthing
from func.CommonErrors import Func_Client_Exception
from func.minion.facts.query_utils import Q

__all__ = ["Overlord", "Client", "FuncError", "Minions", "is_minion", "Func_Client_Exception"]

DEFAULT_PORT = 51234
# Func's default map (func-build-map writes it below the root: var/lib/func/map).
DEFAULT_MAPLOC = "/var/lib/func/map"
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

    def __call__(self, *args, **kwargs):
        # ov.job_stauts(id), ov.test(): not an API method, and a module
        # cannot be called. Said now, not later as "not callable".
        hint = difflib.get_close_matches(self._module, _API, n=1)
        raise AttributeError("Overlord has no method %r%s; as a module, call %s.METHOD(...)" % (
            self._module, " (did you mean %s?)" % hint[0] if hint else "", self._module))


# What an Overlord answers itself (the rest are module names).
_API = ("run", "job_status", "list_minions", "check_status", "open_job_ids", "filter", "filter_or",
        "and_and", "and_or", "or_or", "or_and", "exclude", "set_complexq", "local", "cli_return", "setup_ssl")
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _smart_bool(value):
    """Func's utils.smart_bool: strings "false", "0", "no", "off" and "" are false."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "", "no", "off", "none")
    return bool(value)


def _json_arg(value):
    """An argument as func --json-args takes it: JSON, with base64 data and
    dates tagged as docs/MODULES.md says (they are sent typed)."""
    if isinstance(value, xmlrpc.client.Binary):
        value = value.data
    if isinstance(value, (bytes, bytearray)):
        return {"__base64__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, xmlrpc.client.DateTime):
        return {"__datetime__": value.value}
    if isinstance(value, datetime.datetime):
        return {"__datetime__": value.strftime("%Y%m%dT%H:%M:%S")}
    if isinstance(value, (list, tuple)):
        return [_json_arg(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_arg(v) for k, v in value.items()}
    return value


class Overlord(object):
    """Calls minions matching `server_spec` (a glob, `a;b`, `@group`)."""

    def __init__(self, server_spec, port=DEFAULT_PORT, interactive=False, verbose=False,
                 noglobs=False, nforks=1, config=None, init_ssl=True, timeout=None,
                 root=None, async_mode=False, exclude_spec=None, **kwargs):
        self.server_spec = server_spec
        self.port = port
        self.interactive = interactive
        self.verbose = verbose
        self.noglobs = noglobs
        self.nforks = nforks
        self.config = config
        self.timeout = timeout
        self.root = root or os.environ.get("FUNC_ROOT")
        self.async_mode = _smart_bool(async_mode) or _smart_bool(kwargs.pop("async", False))
        self.exclude_spec = exclude_spec
        # Func's delegation (DESIGN §17): minions the map puts behind a
        # relay are called through it; `mapfile` is the map to use.
        self.delegate = _smart_bool(kwargs.pop("delegate", False))
        mapfile = kwargs.pop("mapfile", None)
        self.mapfile = None if mapfile in (None, DEFAULT_MAPLOC) else mapfile
        # Func's other keywords are accepted and unused.
        self.extra = kwargs
        # Targeting by facts (filter, filter_or, ...): judged by the minions.
        self.fact_query = Q()
        self.local = _Local(self)
        # As Func's client: a SPEC that names no minion is refused now.
        if not self.list_minions():
            raise Func_Client_Exception("Can't find any minions matching \"%s\"." % server_spec)

    # -- targeting by facts, as Func's OverlordQuery did ---------------------

    def _filtered(self, outside, inside, kwargs, negated=False):
        if not kwargs:
            raise TypeError("a filter needs at least one fact=value (os=\"Debian\", runlevel__gt=2)")
        clone = copy.copy(self)
        q = Q(**kwargs)
        q.connector, q.negated = inside, negated
        clone.fact_query = self.fact_query._combine(q, outside)
        return clone

    def set_complexq(self, q_object, connector=None):
        """Func's: a new Overlord whose fact query is `q_object` (a
        func.minion.facts.query_utils.Q), or the query so far joined to it
        with `connector` ("AND" or "OR")."""
        if not isinstance(q_object, Q):
            raise TypeError("set_complexq takes a func.minion.facts.query_utils.Q")
        clone = copy.copy(self)
        if not connector or not self.fact_query:
            clone.fact_query = copy.deepcopy(q_object)
        else:
            clone.fact_query = self.fact_query._combine(q_object, connector)
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
        if not self.fact_query:
            return []
        return ["--fact-query", json.dumps(self.fact_query.wire())]

    def __getattr__(self, name):
        if name.startswith("__") or not _MODULE_NAME.match(name):
            raise AttributeError("Overlord has no attribute %r (not an API method, nor a module name)" % name)
        return _Module(self, name)

    # -- what a call runs ---------------------------------------------------

    def _argv(self, words, out="xmlrpc"):
        argv = [_func_binary()]
        if self.root:
            argv += ["--root", str(self.root)]
        if self.timeout is not None:
            argv += ["--timeout", str(self.timeout)]
        if self.exclude_spec:
            argv += ["--exclude", str(self.exclude_spec)]
        if getattr(self, "delegate", False):
            argv += ["--delegate"]
            if getattr(self, "mapfile", None):
                argv += ["--mapfile", str(self.mapfile)]
        return argv + ["--out", out] + list(words)

    def _func(self, words, out="xmlrpc"):
        """Runs func; (exit status, stdout text, stderr text)."""
        try:
            done = subprocess.run(self._argv(words, out), stdin=subprocess.DEVNULL,
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
            typed = json.dumps(_json_arg(list(args)))
        except (TypeError, ValueError) as e:
            raise FuncError("arguments must be int, float, bool, str, bytes, datetime, list, dict or None: %s" % e)
        words += ["--json-args", typed, "--", module, method]
        code, out, err = self._func(words)
        if NO_MATCH in err:
            raise Func_Client_Exception("Can't find any minions matching \"%s\"." % self.server_spec)
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
        if status == jobthing.JOB_ID_LOST_IN_SPACE:
            return (status, 0)  # Func's answer for an unknown id
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

    def open_job_ids(self):
        """{job id: status code} of the jobs the store keeps (Func's
        jobthing.get_open_ids), for job views like funcweb's."""
        return _open_ids(self.root)

    def cli_return(self, results):
        """Func's reduction of results to one exit code: -911 for an
        error, else the highest integer result, else 0."""
        numbers = []
        for value in results.values():
            if func_utils_is_error(value):
                return -911
            if isinstance(value, int) and not isinstance(value, bool):
                numbers.append(value)
        return max(numbers) if numbers else 0

    def setup_ssl(self, client_key=None, client_cert=None, ca=None):
        """Func's; the func program reads the overlord's credentials."""


def func_utils_is_error(value):
    from func.utils import is_error
    return is_error(value)


def _open_ids(root=None):
    argv = [_func_binary()] + (["--root", str(root)] if root else []) + ["--json", "jobs", "list", "--limit", "1000"]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        jobs = json.loads(done.stdout.decode("utf-8", "replace") or "[]")
    except ValueError:
        raise FuncError("func jobs list: %s" % done.stderr.decode("utf-8", "replace").strip())
    ids = {}
    for job in jobs if isinstance(jobs, list) else []:
        hosts = job.get("hosts", {})
        if job.get("status") == "finished":
            code = jobthing.JOB_ID_FINISHED
        elif hosts.get("done", 0) + hosts.get("failed", 0) > 0:
            code = jobthing.JOB_ID_PARTIAL
        else:
            code = jobthing.JOB_ID_RUNNING
        ids[job["id"]] = code
    return ids


class _Local(object):
    """Func's overlord modules: ov.local.utils.async_poll, ov.local.copyfile.send."""

    def __init__(self, overlord):
        self.utils = _Utils(overlord)
        self.copyfile = _CopyFile(overlord)


class _Utils(object):
    def __init__(self, overlord):
        self._overlord = overlord

    def async_poll(self, job_id, partial_func=None):
        """Polls job_id until it ends; partial_func(results) sees partial
        results as they come. The final results."""
        while True:
            code, results = self._overlord.job_status(job_id)
            if code in (jobthing.JOB_ID_FINISHED, jobthing.JOB_ID_LOST_IN_SPACE):
                return results
            if code == jobthing.JOB_ID_PARTIAL and partial_func and results:
                partial_func(results)
            time.sleep(0.1)


class _CopyFile(object):
    def __init__(self, overlord):
        self._overlord = overlord

    def send(self, localpath, remotepath, bufsize=60000):
        """Copies a local file to every matching minion: {host: result}."""
        ov = self._overlord
        code, out, err = ov._func([ov.server_spec, "copyfile", "-f", str(localpath), "--remotepath", str(remotepath)])
        if NO_MATCH in err:
            raise Func_Client_Exception("Can't find any minions matching \"%s\"." % ov.server_spec)
        return ov._typed(out, err, code)


class Minions(object):
    """Func's Minions: the hosts a SPEC names."""

    def __init__(self, spec, port=DEFAULT_PORT, noglobs=None, verbose=None, just_fqdns=False,
                 groups_file=None, delegate=False, minionmap=None, root=None, exclude_spec=None):
        self.spec, self.port, self.noglobs, self.verbose = spec, port, noglobs, verbose
        self.just_fqdns, self.exclude_spec = just_fqdns, exclude_spec
        self.root = root or os.environ.get("FUNC_ROOT")
        self.delegate, self.minionmap = _smart_bool(delegate), minionmap
        self.all_hosts, self.all_urls = [], []

    def get_all_hosts(self):
        ov = Overlord.__new__(Overlord)
        ov.server_spec, ov.root, ov.timeout, ov.exclude_spec = self.spec, self.root, None, self.exclude_spec
        ov.delegate, ov.mapfile = self.delegate, None
        ov.fact_query = Q()
        self.all_hosts = ov.list_minions()
        return self.all_hosts

    def get_urls(self):
        self.all_urls = [h if self.just_fqdns else "https://%s:%s" % (h, self.port) for h in self.get_all_hosts()]
        return self.all_urls

    def is_minion(self):
        return len(self.get_urls()) > 0


def is_minion(minion_string):
    """Whether a SPEC names at least one minion."""
    return Minions(minion_string).is_minion()


def _natural(name):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


class Client(Overlord):
    """Func's deprecated name of Overlord."""

