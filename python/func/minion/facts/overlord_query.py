"""The overlord's fact query (func.minion.facts.overlord_query).

Every Overlord has an `OverlordQuery` (`ov.overlord_query`); its
`fact_query` is the FuncLogicQuery the Overlord's filters (`filter`,
`exclude`, `set_complexq`, ...) have built, and `serialize_query()` is
that query in wire form, as it goes to the minions (see query_utils).

Func's minions answered a filtered call with `[{"__fact__": (verdict,
facts)}, result]`, and `display_active_facts` kept the hosts whose verdict
was true. funcd judges the query before it runs anything and answers only
for the hosts where it held, so results in any other shape pass through
`display_active_facts` untouched.
"""

from func.minion.facts.query import FuncLogicQuery
from func.minion.facts.query_utils import wire

_FACT_KEY = "__fact__"


def _verdict_of(answer):
    """The verdict of an answer wrapped as `[{"__fact__": [verdict,
    facts]}, result]`; None when the answer is not wrapped so."""
    if not isinstance(answer, (list, tuple)) or not answer:
        return None
    head = answer[0]
    if not isinstance(head, dict) or _FACT_KEY not in head:
        return None
    return bool(head[_FACT_KEY][0])


def display_active_facts(result, with_facts=False):
    """Of {host: answer}, the hosts whose fact query held, each with its
    bare result (with the wrapped answer when `with_facts`). Unless every
    answer is wrapped with a verdict, `result` is answered as it is."""
    if not isinstance(result, dict):
        return result
    verdicts = dict((host, _verdict_of(answer)) for host, answer in result.items())
    if any(verdict is None for verdict in verdicts.values()):
        return result
    active = {}
    for host, answer in result.items():
        if verdicts[host]:
            active[host] = answer if with_facts else (answer[1] if len(answer) > 1 else None)
    return active


class OverlordQuery(object):
    """Holds an overlord's fact query (`fact_query=` a FuncLogicQuery, or
    an empty one)."""

    def __init__(self, *args, **kwargs):
        self.fact_query = kwargs.get("fact_query") or FuncLogicQuery()

    def serialize_query(self):
        """The query in wire form: `[CONNECTOR, [items]]`."""
        if self.fact_query.q is None:
            raise ValueError("there is no fact query to serialize")
        return wire(self.fact_query.q)

    def display_active(self, result, with_facts=False):
        """display_active_facts(result, with_facts)."""
        return display_active_facts(result, with_facts)
