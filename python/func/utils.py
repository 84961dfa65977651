"""Func's helpers for results: a failed host's result is a REMOTE_ERROR list,
["REMOTE_ERROR", type, message, detail], never an exception."""

REMOTE_ERROR = "REMOTE_ERROR"


def is_error(result):
    """Whether `result` is a REMOTE_ERROR list (Func's func.utils.is_error)."""
    if isinstance(result, (list, tuple)) and len(result) > 0:
        return result[0] == REMOTE_ERROR
    return False
