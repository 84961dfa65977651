"""Func's facts: the query objects overlord programs build (query_utils.Q)."""
