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
as Func's client did; a call whose fact filter no host satisfies answers {},
as Func's did. The attributes Func's Overlord had (`overlord_query`,
`minions`, `minions_class`, ...) are the object's own; only other names are
modules (`ov.test.ping()`).
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
from func.minion.facts.overlord_query import OverlordQuery
from func.minion.facts.query_utils import Q, _has_terms

__all__ = ["Overlord", "Client", "FuncError", "Minions", "is_minion", "Func_Client_Exception"]

DEFAULT_PORT = 51234
# Func's default map (func-build-map writes it below the root: var/lib/func/map).
DEFAULT_MAPLOC = "/var/lib/func/map"
ERROR_KEYS = {"error", "exit_status", "kind"}


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


# What an Overlord answers itself (the rest are module names): its methods...
_API = ("run", "run_direct", "job_status", "list_minions", "check_status", "open_job_ids", "filter",
        "filter_or", "and_and", "and_or", "or_or", "or_and", "exclude", "set_complexq", "local", "cli_return",
        "setup_ssl", "tail_log", "check_progress")
# ...and every attribute Func's Overlord had (func/overlord/client.py, 0.25),
# ours besides: never a module name, even before __init__ has set it.
_ATTRIBUTES = frozenset(_API + (
    "_clone", "config", "cm_config", "overlord_config", "server_spec", "exclude_spec", "port", "verbose",
    "interactive", "noglobs", "timeout", "nforks", "async", "delegate", "mapfile", "minionmap",
    "overlord_query", "minions_class", "minions", "key", "cert", "ca", "methods",
    "root", "async_mode", "extra"))
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


def _refusal(value):
    """The kind of func's error document ({"error", "exit_status", "kind"}:
    "no_match" for a SPEC that names no minion, "invalid", "store", …), or
    None when `value` is an answer."""
    if isinstance(value, dict) and set(value) == ERROR_KEYS:
        return value["kind"]
    return None


def _run_func(argv):
    """Runs func; (exit status, stdout text, stderr text)."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise FuncError("cannot run %s: %s (set FUNC_BINARY or PATH)" % (_func_binary(), e))
    return (done.returncode, done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"))


def _typed(text, stderr, code):
    """The value of func's --out xmlrpc answer."""
    try:
        params, _ = xmlrpc.client.loads(text, use_builtin_types=True)
    except Exception:
        why = stderr.strip().splitlines()[-1] if stderr.strip() else "no answer"
        raise FuncError("func (exit status %d): %s" % (code, why))
    return params[0]


def _base_argv(root=None, timeout=None):
    argv = [_func_binary()]
    if root:
        argv += ["--root", str(root)]
    if timeout is not None:
        argv += ["--timeout", str(timeout)]
    return argv


def _job_status_answer(code, out, err):
    """(code, results) of func's `job_status` answer, with Func's codes;
    (JOB_ID_LOST_IN_SPACE, 0) for an unknown id, as Func's."""
    value = _typed(out, err, code)
    if isinstance(value, dict) and "error" in value:
        raise FuncError(value["error"])
    status, results = value
    if status == jobthing.JOB_ID_LOST_IN_SPACE:
        return (status, 0)
    return (status, results)


def _job_status(jobid, root=None, timeout=None):
    """func.jobthing.job_status: the job's (code, results), through func
    job_status (which asks the hosts not finished yet and records what they
    answer), with the root from `root` or FUNC_ROOT."""
    if isinstance(jobid, dict):
        return (jobthing.JOB_ID_FINISHED, jobid)  # no job was started: see Overlord.run
    root = root or os.environ.get("FUNC_ROOT")
    argv = _base_argv(root, timeout) + ["--out", "xmlrpc", "job_status", str(jobid)]
    return _job_status_answer(*_run_func(argv))


class Overlord(object):
    """Calls minions matching `server_spec` (a glob, `a;b`, `@group`).

    Every attribute Func's Overlord had is this object's own (server_spec,
    port, verbose, interactive, noglobs, timeout, nforks, `async`, delegate,
    mapfile, minionmap, config, cm_config, overlord_config, overlord_query,
    minions_class, minions — the URLs `https://HOST:PORT` of the hosts the
    spec names —, key, cert, ca, methods, and the methods); any other name
    is a module: `ov.test.ping()`."""

    def __init__(self, server_spec, port=DEFAULT_PORT, interactive=False, verbose=False,
                 noglobs=False, nforks=1, config=None, init_ssl=True, timeout=None,
                 root=None, async_mode=False, exclude_spec=None, **kwargs):
        self.server_spec = server_spec
        self.exclude_spec = exclude_spec
        self.port = port
        self.interactive = interactive
        self.verbose = verbose
        self.noglobs = noglobs
        self.nforks = nforks
        # Func read these from its configuration files; the func program
        # reads the overlord's configuration below the root itself.
        self.config = config
        self.cm_config = config
        self.overlord_config = None
        self.timeout = timeout
        self.root = root or os.environ.get("FUNC_ROOT")
        self.async_mode = _smart_bool(async_mode) or _smart_bool(kwargs.pop("async", False))
        # Func's delegation (DESIGN §17): minions the map puts behind a
        # relay are called through it; `mapfile` is the map to use (Func's
        # default: the root's var/lib/func/map).
        self.delegate = _smart_bool(kwargs.pop("delegate", False))
        self.mapfile = kwargs.pop("mapfile", None) or DEFAULT_MAPLOC
        self.minionmap = {}
        # Func's other keywords are accepted and unused.
        self.extra = kwargs
        # Targeting by facts (filter, filter_or, ...): judged by the minions.
        self.overlord_query = OverlordQuery()
        # As Func's client: a SPEC that names no minion is refused now.
        self.minions_class = Minions(server_spec, port=port, noglobs=noglobs, verbose=verbose,
                                     exclude_spec=exclude_spec, root=self.root, delegate=self.delegate,
                                     mapfile=self.mapfile, timeout=timeout)
        self.minions = self.minions_class.get_urls()
        if not self.minions:
            raise Func_Client_Exception("Can't find any minions matching \"%s\"." % server_spec)
        self.key = self.cert = self.ca = None
        if init_ssl:
            self.setup_ssl()
        self.local = _Local(self)
        self.methods = self.local.methods()

    def _clone(self, klass=None):
        """A fresh Overlord with the same settings and its own fact query
        (Func's: filters answer new Overlords)."""
        clone = copy.copy(self)
        if klass is not None:
            clone.__class__ = klass
        clone.overlord_query = OverlordQuery(fact_query=self.overlord_query.fact_query)
        clone.local = _Local(clone)
        clone.methods = clone.local.methods()
        return clone

    # -- targeting by facts, as Func's OverlordQuery did ---------------------

    def _filtered(self, how, args, kwargs):
        if not args and not kwargs:
            raise TypeError("a filter needs at least one fact=value (os=\"Debian\", runlevel__gt=2)")
        clone = self._clone()
        clone.overlord_query.fact_query = getattr(self.overlord_query.fact_query, how)(*args, **kwargs)
        return clone

    def set_complexq(self, q_object, connector=None):
        """Func's: a new Overlord whose fact query is `q_object` (a
        func.minion.facts.query_utils.Q), or the query so far joined to it
        with `connector` ("AND" or "OR")."""
        if not isinstance(q_object, Q):
            raise TypeError("set_complexq takes a func.minion.facts.query_utils.Q")
        clone = self._clone()
        clone.overlord_query.fact_query = self.overlord_query.fact_query.set_compexq(q_object, connector)
        return clone

    def filter(self, *args, **kwargs):
        """A new Overlord for the minions whose facts satisfy every
        fact=value (Django-style keywords: runlevel__gt=2, os__icontains="deb")."""
        return self._filtered("filter", args, kwargs)

    def filter_or(self, *args, **kwargs):
        """At least one fact=value holds (ORed with the filters so far)."""
        return self._filtered("filter_or", args, kwargs)

    def and_and(self, *args, **kwargs):
        return self._filtered("and_and", args, kwargs)

    def and_or(self, *args, **kwargs):
        return self._filtered("and_or", args, kwargs)

    def or_or(self, *args, **kwargs):
        return self._filtered("or_or", args, kwargs)

    def or_and(self, *args, **kwargs):
        return self._filtered("or_and", args, kwargs)

    def exclude(self, *args, **kwargs):
        """The minions where the fact=value terms do not all hold."""
        return self._filtered("exclude", args, kwargs)

    def _fact_words(self):
        q = self.overlord_query.fact_query.q
        if not q or not _has_terms(q):
            return []
        return ["--fact-query", json.dumps(q.wire())]

    def __getattr__(self, name):
        if name in _ATTRIBUTES:
            # Func's own attribute, not set (yet): never a module.
            raise AttributeError("Overlord attribute %r is not set" % name)
        if name.startswith("__") or not _MODULE_NAME.match(name):
            raise AttributeError("Overlord has no attribute %r (not an API method, nor a module name)" % name)
        return _Module(self, name)

    # -- what a call runs ---------------------------------------------------

    def _argv(self, words, out="xmlrpc"):
        argv = _base_argv(self.root, self.timeout)
        if self.exclude_spec:
            argv += ["--exclude", str(self.exclude_spec)]
        if getattr(self, "delegate", False):
            argv += ["--delegate"]
            mapfile = getattr(self, "mapfile", None)
            if mapfile and mapfile != DEFAULT_MAPLOC:
                argv += ["--mapfile", str(mapfile)]
        return argv + ["--out", out] + list(words)

    def _func(self, words, out="xmlrpc"):
        """Runs func; (exit status, stdout text, stderr text)."""
        return _run_func(self._argv(words, out))

    _typed = staticmethod(_typed)

    def run(self, module, method, args, nforks=None):
        """Calls module.method(*args) on every matching minion: {host:
        result}; with noglobs the one result; a job id when async.

        As Func: `{}` when the fact query (filter, ...) holds on no host,
        async or not (no job is started then: job_status({}) and
        local.utils.async_poll({}) answer it as a finished job's results,
        {}, which is what Func's job ended with). Module "local" runs the
        overlord's own modules (`run("local", "utils.async_poll", [id])`)."""
        if module == "local":
            local_method = self.methods.get(method)
            if local_method is None:
                raise AttributeError("the overlord's local modules have no %r (they have: %s)" % (
                    method, ", ".join(sorted(self.methods))))
            return local_method(*args)
        forks = nforks or self.nforks or 1
        fact_words = self._fact_words()
        words = ["--forks", str(max(1, min(int(forks), 1024)))] + fact_words + [self.server_spec, "call"]
        if self.async_mode:
            words += ["--async", "--nopoll"]
        try:
            typed = json.dumps(_json_arg(list(args)))
        except (TypeError, ValueError) as e:
            raise FuncError("arguments must be int, float, bool, str, bytes, datetime, list, dict or None: %s" % e)
        words += ["--json-args", typed, "--", module, method]
        code, out, err = self._func(words)
        value = self._typed(out, err, code)
        refused = _refusal(value)
        if refused == "no_match":
            if fact_words:
                return {}  # the spec names minions (the constructor saw them): none satisfies the query
            raise Func_Client_Exception("Can't find any minions matching \"%s\"." % self.server_spec)
        if refused:
            raise FuncError(value["error"])
        if self.async_mode:
            return value.get("job_id") if isinstance(value, dict) else value
        if self.noglobs:
            if self.server_spec in value:
                return value[self.server_spec]
            return next(iter(value.values())) if len(value) == 1 else value
        return value

    def run_direct(self, module, method, args, nforks=1, *extraargs, **kwargs):
        """Func's run without delegation; the func program chooses the path
        to each host itself, so this is run."""
        return self.run(module, method, args, nforks)

    def job_status(self, jobid, client_class=None):
        """(code, {host: result}) with Func's codes (func.jobthing);
        (JOB_ID_LOST_IN_SPACE, 0) for an unknown id."""
        if isinstance(jobid, dict):
            return (jobthing.JOB_ID_FINISHED, jobid)  # no job was started: see run
        return _job_status_answer(*self._func(["job_status", str(jobid)]))

    def list_minions(self, format="list"):
        """The names the spec matches (and the fact query chooses), in
        natural order ([] when none)."""
        return _list_hosts(self.server_spec, self.root, self.timeout, self.exclude_spec,
                           getattr(self, "delegate", False), getattr(self, "mapfile", None), self._fact_words())

    # Func's spelling for a finished-or-not check of many ids.
    def check_status(self, jobid):
        return self.job_status(jobid)

    def open_job_ids(self):
        """{job id: status code} of the jobs the store keeps (Func's
        jobthing.get_open_ids), for job views like funcweb's; an unfinished
        job's code is the one job_status answers."""
        return _open_ids(self.root, self.timeout)

    def tail_log(self, job_id, host=None, remove_old=None):
        """Func's (output, finished) of a job's log on its minions. funcd
        keeps no per-job output log, so there is never output: (None,
        False) while the job runs, else (None, True), Func's answer for a
        job without a log."""
        code, _ = self.job_status(job_id)
        return (None, code != jobthing.JOB_ID_RUNNING)

    def check_progress(self, job_id, host):
        """Func's (progress, finished) of a job on `host`. funcd reports no
        progress, so (None, False) while the job runs, else (None, True),
        as Func's answer for a job without progress."""
        code, _ = self.job_status(job_id)
        return (None, code != jobthing.JOB_ID_RUNNING)

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
        """Func's: records the credentials (key, cert, ca): the three given,
        or the overlord's below the root. The func program always uses the
        overlord's own credentials below the root."""
        if client_key and client_cert and ca:
            self.key, self.cert, self.ca = client_key, client_cert, ca
            return
        ca_dir = os.path.join(self.root or "/", "etc/pki/certmaster/ca")
        self.key = os.path.join(ca_dir, "overlord.pem")
        self.cert = os.path.join(ca_dir, "overlord.cert")
        self.ca = os.path.join(ca_dir, "certmaster.crt")


# Func's `async` attribute (a keyword in Python 3: getattr(ov, "async")).
setattr(Overlord, "async", property(lambda self: self.async_mode,
                                    lambda self, value: setattr(self, "async_mode", _smart_bool(value))))


def func_utils_is_error(value):
    from func.utils import is_error
    return is_error(value)


def _list_hosts(spec, root=None, timeout=None, exclude_spec=None, delegate=False, mapfile=None, fact_words=()):
    """The names `func SPEC list_minions` gives, in natural order ([] when none)."""
    argv = _base_argv(root, timeout)
    if exclude_spec:
        argv += ["--exclude", str(exclude_spec)]
    if delegate:
        argv += ["--delegate"]
        if mapfile and mapfile != DEFAULT_MAPLOC:
            argv += ["--mapfile", str(mapfile)]
    code, out, err = _run_func(argv + ["--out", "xmlrpc"] + list(fact_words) + [spec, "list_minions"])
    value = _typed(out, err, code)
    refused = _refusal(value)
    if refused == "no_match":
        return []
    if refused:
        raise FuncError(value["error"])
    names = list(value.keys()) if isinstance(value, dict) else list(value)
    return sorted(names, key=_natural)


def _open_ids(root=None, timeout=None):
    """{job id: code}: a finished job is JOB_ID_FINISHED as `func jobs list`
    records it; an unfinished one has the code `func job_status` answers
    (asking its hosts not finished yet, as job_status does), so that
    open_job_ids and job_status agree."""
    root = root or os.environ.get("FUNC_ROOT")
    code, out, err = _run_func(_base_argv(root) + ["--json", "jobs", "list", "--limit", "1000"])
    try:
        page = json.loads(out or "{}")
    except ValueError:
        raise FuncError("func jobs list: %s" % err.strip())
    jobs = page.get("jobs", []) if isinstance(page, dict) else []
    ids, unfinished = {}, {}
    for job in jobs:
        if job.get("finished"):
            ids[job["id"]] = jobthing.JOB_ID_FINISHED
        else:
            unfinished[job["id"]] = job.get("counts", {})

    def status(job_id):
        try:
            return _job_status(job_id, root, timeout)[0]
        except FuncError:
            # Not answered now: as recorded (a host finished: partial).
            counts = unfinished[job_id]
            if sum(n for k, n in counts.items() if k != "pending") > 0:
                return jobthing.JOB_ID_PARTIAL
            return jobthing.JOB_ID_RUNNING

    if unfinished:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=min(8, len(unfinished))) as pool:
            for job_id, code in zip(list(unfinished), pool.map(status, list(unfinished))):
                if code != jobthing.JOB_ID_LOST_IN_SPACE:  # gone (expired) meanwhile
                    ids[job_id] = code
    return ids


class _Local(object):
    """Func's overlord modules: ov.local.utils.async_poll, ov.local.copyfile.send."""

    def __init__(self, overlord):
        self.utils = _Utils(overlord)
        self.copyfile = _CopyFile(overlord)

    def methods(self):
        """Func's Overlord.methods: {"module.method": callable} of the
        overlord's own modules (what run("local", ...) calls)."""
        return {"utils.async_poll": self.utils.async_poll,
                "utils.list_minions": self.utils.list_minions,
                "copyfile.send": self.copyfile.send}


class _Utils(object):
    def __init__(self, overlord):
        self._overlord = overlord

    def async_poll(self, job_id, partial_func=None, interval=0.5):
        """Func's: polls job_id every `interval` seconds until it ends;
        partial_func(new results) is called with the hosts' results not
        handed to it yet, while the job runs and at its end. Answers the
        final results (0 for a lost job, as Func's)."""
        from func.utils import _poll
        return _poll(self._overlord.job_status, job_id, partial_func, interval)

    def list_minions(self):
        """Func's: the URLs of the minions the spec names (Overlord.minions)."""
        return self._overlord.minions


class _CopyFile(object):
    def __init__(self, overlord):
        self._overlord = overlord

    def send(self, localpath, remotepath, bufsize=60000):
        """Copies a local file to every matching minion: {host: result}."""
        ov = self._overlord
        code, out, err = ov._func([ov.server_spec, "copyfile", "-f", str(localpath), "--remotepath", str(remotepath)])
        value = ov._typed(out, err, code)
        refused = _refusal(value)
        if refused == "no_match":
            raise Func_Client_Exception("Can't find any minions matching \"%s\"." % ov.server_spec)
        if refused:
            raise FuncError(value["error"])
        return value


class Minions(object):
    """Func's Minions: the hosts a SPEC names."""

    def __init__(self, spec, port=DEFAULT_PORT, noglobs=None, verbose=None, just_fqdns=False,
                 groups_file=None, delegate=False, minionmap=None, root=None, exclude_spec=None,
                 mapfile=None, timeout=None, **kwargs):
        self.spec, self.port, self.noglobs, self.verbose = spec, port, noglobs, verbose
        self.just_fqdns, self.exclude_spec = just_fqdns, exclude_spec
        self.root = root or os.environ.get("FUNC_ROOT")
        self.delegate, self.minionmap = _smart_bool(delegate), minionmap if minionmap is not None else {}
        self.mapfile, self.timeout = mapfile, timeout
        self.all_hosts, self.all_urls = [], []

    def get_all_hosts(self):
        self.all_hosts = _list_hosts(self.spec, self.root, self.timeout, self.exclude_spec,
                                     self.delegate, self.mapfile)
        return self.all_hosts

    def get_hosts_for_spec(self, spec):
        """The hosts another SPEC names (Func's, for its groups API)."""
        return _list_hosts(spec, self.root, self.timeout)

    def get_urls(self):
        self.all_urls = [h if self.just_fqdns else "https://%s:%s" % (h, self.port) for h in self.get_all_hosts()]
        if self.verbose and not self.all_urls:
            import sys
            sys.stderr.write("func: %r names no minion\n" % (self.spec,))
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
