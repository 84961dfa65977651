"""Func's async job status codes, as `Overlord.job_status` answers them."""

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


def get_open_ids():
    """Func's jobthing.get_open_ids: {job id: status code} of the jobs the
    store keeps (an Overlord's open_job_ids())."""
    from func.overlord.client import _open_ids
    return _open_ids()

