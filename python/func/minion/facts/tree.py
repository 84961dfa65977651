"""The shape of a fact query (func.minion.facts.tree).

A `Node` joins its children with its `connector` ("AND" or "OR"). A child
is either a term, a `(fact, value)` tuple, or another Node; a Node whose
`negated` is set stands for the opposite of what its children joined say.
`query_utils.Q` is the Node programs build; `add()` and `negate()` are
how `&`, `|` and `~` grow a tree, so the same expression always gives the
same tree (and so the same serialized query).
"""


class Node(object):
    """One level of a query tree: `connector` over `children`."""

    # The connector of a node nobody chose one for (Q's is "AND").
    default = "DEFAULT"

    def __init__(self, children=None, connector=None, negated=False):
        self.children = list(children) if children else []
        self.connector = connector or self.default
        self.negated = negated

    @classmethod
    def _bare(cls, children, connector, negated):
        """A node of this class made without the class's own __init__
        (Q's takes terms, not children)."""
        node = cls.__new__(cls)
        Node.__init__(node, children, connector, negated)
        return node

    # -- reading --------------------------------------------------------------

    def __len__(self):
        return len(self.children)

    def __bool__(self):
        return len(self.children) > 0

    __nonzero__ = __bool__  # the Python 2 spelling, for old callers

    def __contains__(self, item):
        return item in self.children

    def __str__(self):
        inside = "%s: %s" % (self.connector, ", ".join(str(child) for child in self.children))
        if self.negated:
            return "(NOT (%s))" % inside
        return "(%s)" % inside

    # -- growing --------------------------------------------------------------

    def add(self, node, conn_type):
        """Joins `node` (a term or a Node) to this node with `conn_type`,
        in place.

        A node of at most one child takes any connector. When the connector
        is this node's, the newcomer's terms sit beside ours (a Node with
        the same connector, or with a single child, is opened up; any other
        is kept whole). When it is not, what this node held goes one level
        down, as one child, and the newcomer becomes its sibling."""
        if conn_type == self.connector and node in self.children:
            return  # already there: joining it again changes nothing
        if len(self.children) < 2:
            self.connector = conn_type
        if conn_type != self.connector:
            below = self._bare(self.children, self.connector, self.negated)
            self.children = [below, node]
            self.connector = conn_type
            return
        opens_up = isinstance(node, Node) and (node.connector == conn_type or len(node.children) == 1)
        if opens_up:
            self.children.extend(node.children)
        else:
            self.children.append(node)

    def negate(self):
        """Negates this node in place: what it held becomes its only child,
        negated, and it takes the default connector again (so what is
        joined to it later stays outside the negation)."""
        below = self._bare(self.children, self.connector, not self.negated)
        self.children = [below]
        self.connector = self.default
