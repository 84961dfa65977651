"""Queries that can be judged (func.minion.facts.query).

`FuncLogicQuery(q, pull_result)` wraps a Q tree and judges it: `.result`
(or `exec_query()`) is True or False. Each term is judged by
`pull_result((fact, value))`, which answers `(verdict, {fact: value read})`
(FactsMinion.pull_facts does so with real facts); without a `pull_result`
a term's value is its own verdict, which is handy for trying out logic:

    FuncLogicQuery(Q(a=True) | Q(b=False)).result       -> True

The filter methods (`filter`, `filter_or`, `and_and`, `and_or`, `or_or`,
`or_and`, `exclude`, `set_compexq`) never change the query they are called
on: each answers a new one. An Overlord's filters are built with them.

A negated node is judged as the negation of its children joined, once;
a node without any term has no verdict and is left out of its parent's.
"""

import copy

from func.minion.facts import tree
from func.minion.facts.query_utils import Q, term_pairs


class IncompatibleTypeOperation(Exception):
    """A query was joined with something that is not a query."""


def _join(left, right, connector):
    """left CONNECTOR right, for Q trees of which either may be missing."""
    if left is None:
        return copy.deepcopy(right)
    if right is None:
        return copy.deepcopy(left)
    joined = copy.deepcopy(left)
    joined.add(copy.deepcopy(right), connector)
    return joined


class BaseFuncQuery(object):
    """A Q tree (`q`) with the means to judge its terms (`pull_result`).

    What the query lacks itself (connector, children, negated, ...) is
    read from its Q."""

    def __init__(self, q_object=None, pull_result=None):
        self.q = q_object
        self.pull_result = pull_result

    def __getattr__(self, name):
        # Only reached for names the query does not have itself.
        if name.startswith("__") or name in ("q", "pull_result"):
            raise AttributeError(name)
        return getattr(self.q, name)

    def _derived(self, q_object):
        """A new query of the same kind over `q_object`, judged the same way."""
        return type(self)(q_object, self.pull_result)

    def exec_query(self):
        """The verdict; the kinds of query that can be judged say how."""
        raise NotImplementedError("%s cannot judge a query; FuncLogicQuery can" % type(self).__name__)

    @property
    def result(self):
        return self.exec_query()

    def __bool__(self):
        return bool(self.q)

    __nonzero__ = __bool__

    def _other_q(self, other):
        if not isinstance(other, BaseFuncQuery):
            raise IncompatibleTypeOperation("a query can only be joined with another query, not %r" % (other,))
        return other.q

    def __and__(self, other):
        return self._derived(_join(self.q, self._other_q(other), Q.AND))

    def __or__(self, other):
        return self._derived(_join(self.q, self._other_q(other), Q.OR))

    # -- filters: each answers a new query -----------------------------------

    def _narrowed(self, between, within, args, kwargs):
        """The query so far joined by `between` with the new terms, which
        are joined among themselves by `within`."""
        terms = Q(*args, **kwargs)
        terms.connector = within
        if not self.q:
            return self._derived(terms)
        return self._derived(_join(self.q, terms, between))

    def filter(self, *args, **kwargs):
        """All the terms hold, and so does the query so far."""
        return self._narrowed(Q.AND, Q.AND, args, kwargs)

    def filter_or(self, *args, **kwargs):
        """One of the terms holds, or the query so far does."""
        return self._narrowed(Q.OR, Q.OR, args, kwargs)

    def and_and(self, *args, **kwargs):
        """Same as filter: (query so far) AND (all the terms)."""
        return self._narrowed(Q.AND, Q.AND, args, kwargs)

    def and_or(self, *args, **kwargs):
        """(query so far) AND (one of the terms)."""
        return self._narrowed(Q.AND, Q.OR, args, kwargs)

    def or_or(self, *args, **kwargs):
        """Same as filter_or: (query so far) OR (one of the terms)."""
        return self._narrowed(Q.OR, Q.OR, args, kwargs)

    def or_and(self, *args, **kwargs):
        """(query so far) OR (all the terms)."""
        return self._narrowed(Q.OR, Q.AND, args, kwargs)

    def exclude(self, *args, **kwargs):
        """(query so far) AND NOT (all the terms)."""
        unwanted = ~Q(*args, **kwargs)
        if not self.q:
            return self._derived(unwanted)
        return self._derived(_join(self.q, unwanted, Q.AND))

    def set_compexq(self, q_object, connector=None):
        """A ready-made Q: in place of the query so far when no `connector`
        is given (or there is no query yet), else joined to it with
        `connector` ("AND" or "OR"). The name is spelled as in Func."""
        if not connector or not self.q:
            return self._derived(copy.deepcopy(q_object))
        return self._derived(_join(self.q, q_object, connector))

    def __str__(self):
        return str(self.q)


class FuncLogicQuery(BaseFuncQuery):
    """A query judged to True or False; `fact_dict` keeps the facts'
    values read while judging it."""

    def exec_query(self):
        if not self.q:
            raise ValueError("there is nothing to judge: the query has no terms")
        self.fact_dict = {}
        return self._judge(self.q)

    def exec_query_with_facts(self):
        """(verdict, {fact: value} of the facts read to reach it)."""
        verdict = self.exec_query()
        return (verdict, self.fact_dict)

    def _judge_term(self, fact, value):
        if self.pull_result is None:
            return value
        verdict, read = self.pull_result((fact, value))
        self.fact_dict.update(read)
        return verdict

    def _judge(self, node):
        verdicts = []
        for child in node.children:
            if isinstance(child, tree.Node):
                verdicts.append(self._judge(child))
            else:
                verdicts.extend(self._judge_term(fact, value) for fact, value in term_pairs(child))
        return self.logic_operation(node, verdicts)

    def logic_operation(self, node, logic_list):
        """The verdict of `node` from its children's: joined by its
        connector (None, a child without terms, counts for nothing),
        then negated if the node is; None when no child had a verdict."""
        known = [bool(verdict) for verdict in logic_list if verdict is not None]
        if not known:
            return None
        verdict = any(known) if node.connector == Q.OR else all(known)
        return (not verdict) if node.negated else verdict


class FuncDataQuery(BaseFuncQuery):
    """Named in Func for queries over minions' results; it never judged
    anything, and neither does this one."""
