"""Func's facts: the query objects overlord programs build (query_utils.Q,
the tree they make, query.FuncLogicQuery), the overlord's side of a query
(overlord_query.OverlordQuery) and the minion's (minion_query.FactsMinion,
QueryKeyword)."""
