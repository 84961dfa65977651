"""Func's func.minion package, for the names overlord programs import from it."""
