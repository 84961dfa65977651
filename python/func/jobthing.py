"""Func's func.jobthing: async job status codes and the job store's
functions, as `Overlord.job_status` answers them. The job store is the
`func` program's (the overlord's store below the root, or its shared
store): these functions read it through `func`, with the root from
FUNC_ROOT. As in Func, `from func.jobthing import *` also gives `os`,
`sys` and `time`."""

import os  # noqa: F401 (Func's jobthing exported it)
import sys  # noqa: F401 (Func's jobthing exported it)
import time  # noqa: F401 (Func's jobthing exported it; funcweb's tests use it)

from func import utils  # noqa: F401 (Func's jobthing exported it)

JOB_ID_RUNNING = 0
JOB_ID_FINISHED = 1
JOB_ID_LOST_IN_SPACE = 2
JOB_ID_PARTIAL = 3
# Func's older names: JOB_ID_ASYNC_PARTIAL is JOB_ID_PARTIAL; a job is
# reported finished as JOB_ID_FINISHED, so JOB_ID_ASYNC_FINISHED (4 in
# Func) is defined for old scripts that test for it but never answered.
JOB_ID_ASYNC_PARTIAL = 3
JOB_ID_ASYNC_FINISHED = 4
# Func 0.25's code for a job whose host answered an error (as JOB_ID_ASYNC_FINISHED).
JOB_ID_REMOTE_ERROR = 4

# Func's: how long its job database kept a job (seconds), and where it was.
# The func program's store keeps jobs as its `keep_jobs` setting says.
RETAIN_INTERVAL = 60 * 60
CACHE_DIR = "/var/lib/func"


def get_open_ids():
    """Func's jobthing.get_open_ids: {job id: status code} of the jobs the
    store keeps (an Overlord's open_job_ids()); an unfinished job's code is
    the one job_status answers for it."""
    from func.overlord.client import _open_ids
    return _open_ids()


def job_status(jobid, client_class=None):
    """Func's jobthing.job_status: (code, {host: result}) of job `jobid`,
    (JOB_ID_LOST_IN_SPACE, 0) for an unknown one. Read through `func
    job_status`, which asks the hosts not finished yet and records what
    they answer (as Func's asked the minions). `client_class` is accepted
    and unused (Func's way around a circular import)."""
    from func.overlord.client import _job_status
    return _job_status(jobid)


def purge_old_jobs():
    """Func's: deleted the jobs older than RETAIN_INTERVAL from its job
    database and answered 0. The func program's store purges the jobs past
    its `keep_jobs` setting (overlord.conf) itself, at each write, and `func`
    offers no purge, so this does nothing and answers 0, as Func's."""
    return 0


def clear_db():
    """Func's: emptied its job database and answered {}. The func
    program's store is the overlord's job history (shared by the CLI,
    func-api and every script, audited) and `func` offers no way to empty
    it, so this does nothing and answers {}, as Func's."""
    return {}
