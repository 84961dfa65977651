"""Func's fact query object, `Q` (as Django's): `Q(os="Debian",
runlevel__gt=2)` is the AND of its terms, `q1 & q2`, `q1 | q2` and `~q`
combine, and `wire()` is Func's serialized form — the `{"__fact__": ...}`
its overlord sent and funcd judges. `Overlord.filter(...)` and friends
build these; `Overlord.set_complexq(q)` takes one as it is."""

import copy


class Q(object):
    def __init__(self, *args, **kwargs):
        self.connector = "AND"
        self.negated = False
        # Django's Q(**kwargs): the pairs in key order; positional Qs are ANDed in.
        self.children = list(args) + sorted(kwargs.items())

    @classmethod
    def node(cls, connector, children, negated=False):
        q = cls()
        q.connector, q.children, q.negated = connector, list(children), negated
        return q

    def _combine(self, other, connector):
        if not isinstance(other, Q):
            raise TypeError("a fact query combines only with another Q")
        if not self.children:
            return copy.deepcopy(other)
        if not other.children:
            return copy.deepcopy(self)
        return Q.node(connector, [copy.deepcopy(self), copy.deepcopy(other)])

    def __and__(self, other):
        return self._combine(other, "AND")

    def __or__(self, other):
        return self._combine(other, "OR")

    def __invert__(self):
        q = copy.deepcopy(self)
        q.negated = not q.negated
        return q

    def __bool__(self):
        return bool(self.children)

    def add(self, other, connector):
        """Func's in-place add (set_complexq with a connector)."""
        combined = self._combine(other, connector)
        self.connector, self.children, self.negated = combined.connector, combined.children, combined.negated

    def wire(self):
        items = [c.wire() if isinstance(c, Q) else [c[0], c[1]] for c in self.children]
        node = [self.connector, items]
        return ["NOT", node] if self.negated else node

    def __repr__(self):
        return "Q(%r)" % (self.wire(),)
