"""Helpers for results (func.utils): a failed host's result is a
REMOTE_ERROR list, ["REMOTE_ERROR", type, message, detail], never an
exception; async_poll waits for an async job and hands over its results;
is_public_valid_method is what Func's module loader (and so its own `func`
command line) asks of a module's attributes."""

import inspect
import sys
import time

REMOTE_ERROR = "REMOTE_ERROR"


def is_error(result):
    """Whether `result` is a REMOTE_ERROR list (Func's func.utils.is_error)."""
    if isinstance(result, (list, tuple)) and len(result) > 0:
        return result[0] == REMOTE_ERROR
    return False


def is_public_valid_method(obj, attr, blacklist=None):
    """Whether attribute `attr` of `obj` is a method it offers: a bound
    method whose name does not start with an underscore and is not one of
    `blacklist`."""
    if not isinstance(attr, str) or attr.startswith("_") or attr in (blacklist or ()):
        return False
    return inspect.ismethod(getattr(obj, attr, None))


def async_poll(job_id, partial_func=None, interval=0.5):
    """Waits for async job `job_id` to end, asking for its status every
    `interval` seconds, and answers its final {host: result}.

    `partial_func`, when given, is called with the results of the hosts it
    has not been handed yet: whenever the job reports new ones while it
    runs, and once more at the end with those that finished last, so every
    host is handed exactly once. A job that is unknown (or expired) or that
    failed answers 0, with a line on stderr saying so.

    The status is read with func.jobthing.job_status (the store of the
    root in FUNC_ROOT); `Overlord.local.utils.async_poll` reads it through
    its Overlord instead."""
    from func import jobthing
    return _poll(jobthing.job_status, job_id, partial_func, interval)


def _poll(status_of, job_id, partial_func, interval):
    """async_poll's loop, with `status_of(job_id)` answering (code, results)."""
    from func import jobthing
    handed = set()

    def hand_over(results):
        if partial_func is None or not isinstance(results, dict):
            return
        fresh = dict((host, value) for host, value in results.items() if host not in handed)
        if fresh:
            handed.update(fresh)
            partial_func(fresh)

    while True:
        code, results = status_of(job_id)
        if code == jobthing.JOB_ID_FINISHED:
            hand_over(results)
            return results
        if code == jobthing.JOB_ID_PARTIAL:
            hand_over(results)
        elif code != jobthing.JOB_ID_RUNNING:
            what = "is unknown" if code == jobthing.JOB_ID_LOST_IN_SPACE else "failed"
            sys.stderr.write("async_poll: job %s %s (status %s): %r\n" % (job_id, what, code, results))
            return 0
        time.sleep(interval)
