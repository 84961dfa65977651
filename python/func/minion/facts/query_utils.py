"""`Q`, the fact query programs build (func.minion.facts.query_utils).

    Q(os="Debian", runlevel__gt=2)       both terms hold
    Q(role="web") | Q(role="db")         either holds
    Q(tier__lt=3) & ~Q(role="web")       the first holds, the second does not

A keyword argument is a term: the fact's name, optionally followed by
`__keyword` (contains, icontains, iexact, startswith, gt, gte, lt, lte),
and the value to compare with; keyword terms are taken in name order, so a
query is the same every time it is built. A positional argument is taken
as it is (a `(fact, value)` tuple or another Q).

`wire(q)` (or `q.wire()`) is the query as it travels: a node is
`[CONNECTOR, [item, ...]]`, a negated node `["NOT", [CONNECTOR, [...]]]`
and a term `[fact, value]`. That is the form Func's overlord sent to its
minions, the form funcd judges (`func --fact-query JSON`), and what
`Overlord.filter(...)` and its friends send.
"""

import copy

from func.minion.facts import tree


class Q(tree.Node):
    """A fact query; combine with `&`, `|` and `~`."""

    AND = "AND"
    OR = "OR"
    default = AND

    def __init__(self, *args, **kwargs):
        terms = list(args)
        terms.extend(sorted(kwargs.items()))
        tree.Node.__init__(self, terms)

    def _joined(self, other, connector):
        if not isinstance(other, Q):
            raise TypeError("a fact query can only be joined with another Q, not %r" % (other,))
        result = copy.deepcopy(self)
        result.add(other, connector)
        return result

    def __and__(self, other):
        return self._joined(other, self.AND)

    def __or__(self, other):
        return self._joined(other, self.OR)

    def __invert__(self):
        result = copy.deepcopy(self)
        result.negate()
        return result

    def wire(self):
        """This query as it travels (see the module's text)."""
        return wire(self)

    def __repr__(self):
        return "Q(%r)" % (self.wire(),)


def term_pairs(term):
    """The (fact, value) pairs of one term: a term is a pair, but a longer
    tuple (fact, value, fact, value, ...) is read as its pairs."""
    items = list(term)
    return [(items[at], items[at + 1]) for at in range(0, len(items) - 1, 2)]


def _has_terms(node):
    """Whether a term sits anywhere below `node` (a node without any means
    nothing and is left out of the wire: funcd refuses an empty node)."""
    for child in node.children:
        if not isinstance(child, tree.Node) or _has_terms(child):
            return True
    return False


def _wire_items(node):
    items = []
    for child in node.children:
        if isinstance(child, tree.Node):
            if _has_terms(child):
                items.append(wire(child))
        else:
            items.extend([fact, value] for fact, value in term_pairs(child))
    return items


def wire(node):
    """The serialized form of a query tree (a Node, usually a Q)."""
    form = [node.connector, _wire_items(node)]
    if node.negated:
        return ["NOT", form]
    return form
