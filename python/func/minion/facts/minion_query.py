"""Judging a serialized fact query in Python (func.minion.facts.minion_query).

`FactsMinion(method_fact_list=facts)` reads a query in its wire form (see
query_utils) back into a Q tree (`deserialize`) and judges it
(`exec_query`), reading each fact by calling `facts[name]()`.
`QueryKeyword().resolve(keyword, wanted, actual)` is how one term is
compared: "" (equality), contains, icontains, iexact, startswith, gt, gte,
lt, lte; a subclass adds a keyword by defining `keyword_NAME`.

In Func in Rust the minion that judges a query is funcd, with its own facts
and keywords; these classes serve programs and tests that judge queries
themselves with facts they supply. There are no Python fact modules on
this side to load (funcd's facts are read with
`Overlord(host).fact.list_fact_methods()` and `.fact.call_fact(name)`), so
`load_facts_modules()` and `load_fact_methods()` answer `{}`.
"""

from func.minion.facts.query import FuncLogicQuery
from func.minion.facts.query_utils import Q

# Where Func's minion kept its fact modules (not used here).
FACTS_MODULES = "func/minion/facts/modules/"

_CONNECTORS = ("AND", "OR")


class NonExistingQueryKeyword(Exception):
    """A term used a keyword QueryKeyword does not know."""


class MinionQueryError(Exception):
    """A term named a fact the minion does not have."""


def _is_node_form(item, words):
    """Whether `item` is `[WORD, [...]]` with WORD one of `words`."""
    return (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
            and item[0] in words and isinstance(item[1], (list, tuple)))


class FactsMinion(object):
    """Reads serialized queries and judges them with `method_fact_list`
    ({fact name: callable answering the fact's value})."""

    VALID_QUERY_KEYS = ["AND", "OR", "NOT"]

    def __init__(self, fact_query=None, method_fact_list=None):
        self.fact_query = fact_query
        self.keyword_query = QueryKeyword()
        self.method_fact_list = method_fact_list

    def deserialize(self, q_list):
        """The Q tree of a serialized query. It also becomes this minion's
        `fact_query`, or is joined to the one it has (with that query's
        own connector)."""
        q_object = self._read_node(q_list)
        read = FuncLogicQuery(q_object, self.pull_facts)
        if not self.fact_query:
            self.fact_query = read
        elif self.fact_query.q.connector == Q.OR:
            self.fact_query = self.fact_query | read
        else:
            self.fact_query = self.fact_query & read
        return q_object

    def exec_query(self, q_list, include_results=False):
        """Whether the serialized query holds here; with `include_results`,
        `(verdict, {fact: value} of the facts read)`."""
        self.deserialize(q_list)
        if include_results:
            return self.fact_query.exec_query_with_facts()
        return self.fact_query.result

    def pull_facts(self, overlord_tuple):
        """Judges one term, `("fact__keyword", value)`, against the fact's
        value here: `(verdict, {fact: value})`."""
        name, wanted = overlord_tuple[0], overlord_tuple[1]
        fact, _, keyword = name.partition("__")
        facts = self.method_fact_list or {}
        if fact not in facts:
            raise MinionQueryError("the query asks for fact %r, which this minion does not have" % fact)
        actual = facts[fact]()
        return (self.keyword_query.resolve(keyword, wanted, actual), {fact: actual})

    def _read_node(self, form):
        """The Q of one node in wire form. A node given as a bare term
        (`[fact, value]`) is a query of that one term."""
        negated = False
        if _is_node_form(form, ("NOT",)):
            negated, form = True, form[1]
        if _is_node_form(form, _CONNECTORS):
            connector, items = form[0], form[1]
        else:
            connector, items = Q.AND, [form]
        node = Q()
        node.connector = connector
        node.negated = negated
        if items and isinstance(items[0], str):
            # Func's early form: one flat list, fact, value, fact, value, ...
            node.children = [tuple(items[at:at + 2]) for at in range(0, len(items) - 1, 2)]
            return node
        for item in items:
            if _is_node_form(item, self.VALID_QUERY_KEYS):
                node.children.append(self._read_node(item))
            else:
                node.children.append(tuple(item))
        return node


def load_facts_modules():
    """Func's minion loaded its Python fact modules here. funcd keeps its
    facts itself: there are none to load, {}."""
    return {}


def load_fact_methods(abort_on_conflict=False):
    """{fact name: callable} of the loaded fact modules: none here, {}
    (see load_facts_modules), so there is never a conflict to abort on."""
    return {}


class QueryKeyword(object):
    """Compares a fact's value with the value a term asks for.

    `resolve(keyword, overlord_value, fact_value)` calls
    `keyword_<keyword>(overlord_value, fact_value)`, the asked-for value
    first converted to the fact's type when the two differ ("5" for a fact
    that is 5 is 5). The ordering keywords read as "the fact is greater
    than the value" (gt) and so on."""

    def resolve(self, keyword, overlord_value, fact_value):
        compare = getattr(self, "keyword_%s" % keyword, None)
        if compare is None:
            raise NonExistingQueryKeyword("%r is not a query keyword (known: %s)" % (
                keyword, ", ".join(sorted(n[len("keyword_"):] or "''" for n in dir(self)
                                          if n.startswith("keyword_")))))
        if type(overlord_value) is not type(fact_value):
            overlord_value = type(fact_value)(overlord_value)
        return compare(overlord_value, fact_value)

    def keyword_(self, overlord_value, fact_value):
        """No keyword: the fact equals the value."""
        return fact_value == overlord_value

    def keyword_contains(self, overlord_value, fact_value):
        return overlord_value in fact_value

    def keyword_icontains(self, overlord_value, fact_value):
        return overlord_value.lower() in fact_value.lower()

    def keyword_iexact(self, overlord_value, fact_value):
        return fact_value.lower() == overlord_value.lower()

    def keyword_startswith(self, overlord_value, fact_value):
        return fact_value.startswith(overlord_value)

    def keyword_gt(self, overlord_value, fact_value):
        return fact_value > overlord_value

    def keyword_gte(self, overlord_value, fact_value):
        return fact_value >= overlord_value

    def keyword_lt(self, overlord_value, fact_value):
        return fact_value < overlord_value

    def keyword_lte(self, overlord_value, fact_value):
        return fact_value <= overlord_value
