"""The parts of Func 0.25's Python API that programs lean on beyond calling
modules:

- the facts modules (func.minion.facts.tree, query_utils, query,
  overlord_query, minion_query) import with their public names, and their
  query logic works: Q trees built with &, | and ~, their wire form (what
  `func --fact-query` takes), FuncLogicQuery's verdicts, FactsMinion's
  reading and judging, QueryKeyword's comparisons (no fleet needed);
- on a real fleet: an Overlord's own attributes (overlord_query, minions as
  URLs, minions_class, ...) are local, never remote calls; a filter no host
  satisfies answers {}; open_job_ids() and job_status() agree; async_poll
  hands the final results to partial_func (func.utils and local.utils);
  func.jobthing's job_status, purge_old_jobs, clear_db and its `time`.

Run: cd tests/python && PYTHONPATH=../../python python3 -m unittest test_func_api_compat -v
"""

import io
import itertools
import json
import os
import random
import subprocess
import time
import unittest
from contextlib import redirect_stderr

from funcfixture import Fleet, binary

from func.minion.facts import minion_query, overlord_query, query, query_utils, tree
from func.minion.facts.minion_query import FactsMinion, MinionQueryError, NonExistingQueryKeyword, QueryKeyword
from func.minion.facts.overlord_query import OverlordQuery, display_active_facts
from func.minion.facts.query import FuncLogicQuery, IncompatibleTypeOperation
from func.minion.facts.query_utils import Q

# A minion's facts, for the tests that judge terms against facts.
FACTS = {"os": "Debian", "kernel": "6.1.0-18-amd64", "num_cpus": 8, "role": "web", "runlevel": 3}


def fact_reader(facts=FACTS):
    return dict((name, (lambda value=value: value)) for name, value in facts.items())


def judged(q, facts=FACTS):
    """The verdict of `q` against `facts`, as a minion reading them judges it."""
    minion = FactsMinion(method_fact_list=fact_reader(facts))
    return FuncLogicQuery(q, minion.pull_facts).result


class FactsModulesTest(unittest.TestCase):
    def test_public_names(self):
        expected = {
            tree: ["Node"],
            query_utils: ["Q"],
            query: ["BaseFuncQuery", "FuncLogicQuery", "FuncDataQuery", "IncompatibleTypeOperation"],
            overlord_query: ["OverlordQuery", "display_active_facts"],
            minion_query: ["FactsMinion", "QueryKeyword", "NonExistingQueryKeyword", "MinionQueryError",
                           "load_facts_modules", "load_fact_methods", "FACTS_MODULES"],
        }
        for module, names in expected.items():
            for name in names:
                self.assertTrue(hasattr(module, name), "%s.%s" % (module.__name__, name))
        self.assertTrue(issubclass(Q, tree.Node))
        self.assertTrue(issubclass(FuncLogicQuery, query.BaseFuncQuery))
        self.assertTrue(issubclass(query.FuncDataQuery, query.BaseFuncQuery))
        for exc in (IncompatibleTypeOperation, NonExistingQueryKeyword, MinionQueryError):
            self.assertTrue(issubclass(exc, Exception))
        # funcd keeps the minion's facts: no Python fact modules to load.
        self.assertEqual((minion_query.load_facts_modules(), minion_query.load_fact_methods()), ({}, {}))


class QTreeTest(unittest.TestCase):
    def test_keyword_terms_in_name_order(self):
        q = Q(runlevel__gt=2, os="Debian")
        self.assertEqual(q.children, [("os", "Debian"), ("runlevel__gt", 2)])
        self.assertEqual((q.connector, q.negated, len(q)), ("AND", False, 2))
        self.assertTrue(q)
        self.assertFalse(Q())
        self.assertIn(("os", "Debian"), q)
        self.assertEqual(Q(("arch", "x86_64"), os="Debian").children, [("arch", "x86_64"), ("os", "Debian")])

    def test_same_connector_joins_flat(self):
        q = Q(os="Debian") | Q(os="Ubuntu") | Q(os="Fedora")
        self.assertEqual(q.connector, "OR")
        self.assertEqual([c[1] for c in q.children], ["Debian", "Ubuntu", "Fedora"])
        q = Q(role="web") & Q(num_cpus__gte=4) & Q(runlevel=3)
        self.assertEqual((q.connector, len(q)), ("AND", 3))

    def test_another_connector_nests(self):
        left, right = Q(os="Debian", role="web"), Q(os="Ubuntu", role="db")
        q = left | right
        self.assertEqual((q.connector, len(q)), ("OR", 2))
        self.assertTrue(all(isinstance(c, tree.Node) and c.connector == "AND" for c in q.children))
        self.assertEqual(q.children[0].children, left.children)

    def test_invert_puts_the_terms_in_a_negated_child(self):
        q = ~Q(role="web", os="Debian")
        self.assertEqual((q.connector, q.negated, len(q)), ("AND", False, 1))
        inner = q.children[0]
        self.assertTrue(inner.negated)
        self.assertEqual(inner.children, [("os", "Debian"), ("role", "web")])
        double = ~q
        self.assertTrue(double.children[0].negated and double.children[0].children[0].negated)
        self.assertIs(FuncLogicQuery(double).result, FuncLogicQuery(Q(role="web", os="Debian")).result)

    def test_operands_are_left_as_they_were(self):
        a, b = Q(os="Debian"), Q(role="web", runlevel=3)
        before = (str(a), str(b))
        a & b, a | b, ~a, ~b
        FuncLogicQuery(a).filter(x=1).exclude(y=2).set_compexq(b, "OR")
        self.assertEqual((str(a), str(b)), before)

    def test_only_a_q_joins_a_q(self):
        for other in ("os=Debian", {"os": "Debian"}, FuncLogicQuery(Q(os="Debian"))):
            with self.assertRaises(TypeError):
                Q(role="web") & other
            with self.assertRaises(TypeError):
                Q(role="web") | other

    def test_str(self):
        self.assertEqual(str(Q(os="Debian")), "(AND: ('os', 'Debian'))")
        self.assertEqual(str(~Q(os="Debian") | Q(role="db")),
                         "(OR: (NOT (AND: ('os', 'Debian'))), ('role', 'db'))")


class WireTest(unittest.TestCase):
    """The wire form: [CONNECTOR, [items]], a negated node as
    ["NOT", [CONNECTOR, [...]]], a term as [fact, value]."""

    CASES = [
        (Q(role="web"), ["AND", [["role", "web"]]]),
        (Q(role="web") | Q(role="db"), ["OR", [["role", "web"], ["role", "db"]]]),
        (Q(num_cpus__lt=6, num_cpus__gt=1) & ~Q(role="web"),
         ["AND", [["num_cpus__gt", 1], ["num_cpus__lt", 6], ["NOT", ["AND", [["role", "web"]]]]]]),
        ((Q(os="Debian") | Q(os="Ubuntu")) & Q(runlevel__gte=3),
         ["AND", [["OR", [["os", "Debian"], ["os", "Ubuntu"]]], ["AND", [["runlevel__gte", 3]]]]]),
        (Q(role="web", os="Debian") | ~Q(kernel__startswith="5.", runlevel=5),
         ["OR", [["AND", [["os", "Debian"], ["role", "web"]]],
                 ["AND", [["NOT", ["AND", [["kernel__startswith", "5."], ["runlevel", 5]]]]]]]]),
        # A node without terms means nothing and is left out.
        (Q(os="Debian", role="web") | Q(), ["OR", [["AND", [["os", "Debian"], ["role", "web"]]]]]),
    ]

    def test_cases(self):
        for q, form in self.CASES:
            self.assertEqual(q.wire(), form, str(q))
            self.assertEqual(query_utils.wire(q), form)
            self.assertEqual(json.loads(json.dumps(q.wire())), form, "plain JSON")
            self.assertEqual(OverlordQuery(fact_query=FuncLogicQuery(q)).serialize_query(), form)
            self.assertEqual(repr(q), "Q(%r)" % (form,))

    def test_serialize_needs_a_query(self):
        with self.assertRaises(ValueError):
            OverlordQuery().serialize_query()


def random_expression(rand, depth=0):
    """(Q, the Python truth of it) of a random expression over boolean
    terms, so the query's verdict can be checked against Python's."""
    if depth >= 3 or rand.random() < 0.3:
        n = rand.randint(1, 3)
        terms = dict(("f%d" % rand.randint(0, 9), rand.random() < 0.5) for _ in range(n))
        q = Q(**terms)
        if rand.random() < 0.3:
            q.connector = "OR"
            return q, any(terms.values())
        return q, all(terms.values())
    left, lv = random_expression(rand, depth + 1)
    right, rv = random_expression(rand, depth + 1)
    how = rand.choice(["and", "or", "not-left", "and-not"])
    if how == "and":
        return left & right, lv and rv
    if how == "or":
        return left | right, lv or rv
    if how == "not-left":
        return ~left | right, (not lv) or rv
    return left & ~right, lv and not rv


class FuncLogicQueryTest(unittest.TestCase):
    def test_verdicts_agree_with_python(self):
        rand = random.Random(20240607)
        for _ in range(500):
            q, truth = random_expression(rand)
            self.assertEqual(FuncLogicQuery(q).result, truth, str(q))

    def test_every_single_term_negation(self):
        for value in (True, False):
            self.assertEqual(FuncLogicQuery(~Q(x=value)).result, not value)
            self.assertEqual(FuncLogicQuery(~~Q(x=value)).result, value)
        for values in itertools.product((True, False), repeat=3):
            q = ~Q(a=values[0], b=values[1], c=values[2])
            self.assertEqual(FuncLogicQuery(q).result, not all(values), values)

    def test_judged_against_facts(self):
        self.assertTrue(judged(Q(os="Debian", num_cpus__gte=4)))
        self.assertFalse(judged(Q(os="Debian", num_cpus__gt=8)))
        self.assertTrue(judged(Q(role="db") | Q(kernel__contains="amd64")))
        self.assertTrue(judged(Q(runlevel__lt=5) & ~Q(role="db")))
        self.assertFalse(judged(~Q(os__iexact="DEBIAN")))

    def test_facts_read_are_kept(self):
        minion = FactsMinion(method_fact_list=fact_reader())
        fq = FuncLogicQuery(Q(os="Debian") & Q(num_cpus__gt=2), minion.pull_facts)
        self.assertEqual(fq.exec_query_with_facts(), (True, {"os": "Debian", "num_cpus": 8}))
        self.assertEqual(fq.fact_dict, {"os": "Debian", "num_cpus": 8})

    def test_filters_answer_new_queries(self):
        base = FuncLogicQuery(Q(a=True))
        cases = [
            (base.filter(b=False), False), (base.filter(b=True, c=True), True),
            (base.and_and(b=True), True), (base.filter_or(b=False), True),
            (base.or_or(b=False, c=False), True), (base.and_or(b=False, c=True), True),
            (base.and_or(b=False, c=False), False), (base.or_and(b=True, c=False), True),
            (base.exclude(b=True), False), (base.exclude(b=True, c=False), True),
            (base.set_compexq(Q(z=False)), False), (base.set_compexq(Q(z=False), "OR"), True),
            (base.set_compexq(Q(z=False), "AND"), False),
        ]
        for fq, verdict in cases:
            self.assertIsInstance(fq, FuncLogicQuery)
            self.assertIsNot(fq, base)
            self.assertEqual(fq.result, verdict, str(fq))
        self.assertEqual(str(base), "(AND: ('a', True))", "the original stays")
        # An empty query takes the first filter as the whole query.
        self.assertEqual(FuncLogicQuery().filter(a=False).q.wire(), ["AND", [["a", False]]])
        self.assertEqual(FuncLogicQuery().exclude(a=False).result, True)
        self.assertEqual(FuncLogicQuery().set_compexq(Q(a=True), "OR").q.wire(), ["AND", [["a", True]]])

    def test_filters_keep_the_pull(self):
        minion = FactsMinion(method_fact_list=fact_reader())
        fq = FuncLogicQuery(Q(os="Debian"), minion.pull_facts).filter(role="web").exclude(runlevel=1)
        self.assertIs(fq.pull_result.__self__, minion)
        self.assertTrue(fq.result)

    def test_queries_join(self):
        yes, no = FuncLogicQuery(Q(v=True)), FuncLogicQuery(Q(v=False))
        self.assertEqual([(yes | no).result, (yes & no).result, (no | no).result, (yes & yes).result],
                         [True, False, False, True])
        with self.assertRaises(IncompatibleTypeOperation):
            yes | Q(v=True)
        with self.assertRaises(IncompatibleTypeOperation):
            yes & True

    def test_reads_through_to_its_q(self):
        fq = FuncLogicQuery(Q(a=1) | Q(b=2))
        self.assertEqual((fq.connector, len(fq.children), fq.negated), ("OR", 2, False))
        self.assertTrue(fq)
        self.assertFalse(FuncLogicQuery())

    def test_what_cannot_be_judged(self):
        with self.assertRaises(Exception):
            FuncLogicQuery().result
        with self.assertRaises(Exception):
            query.BaseFuncQuery(Q(a=True)).result


class FactsMinionTest(unittest.TestCase):
    def test_read_back_is_the_same_query(self):
        rand = random.Random(7)
        for _ in range(300):
            q, truth = random_expression(rand)
            form = json.loads(json.dumps(q.wire()))
            read = FactsMinion().deserialize(form)
            self.assertIsInstance(read, Q)
            self.assertEqual(read.wire(), form)
            self.assertEqual(FuncLogicQuery(read).result, truth)

    def test_exec_query(self):
        minion = FactsMinion(method_fact_list=fact_reader())
        self.assertIs(minion.exec_query(["AND", [["os", "Debian"], ["runlevel__gte", "3"]]]), True)
        minion = FactsMinion(method_fact_list=fact_reader())
        self.assertEqual(minion.exec_query(["OR", [["role", "db"], ["NOT", ["AND", [["os", "Debian"]]]]]], True),
                         (False, {"role": "web", "os": "Debian"}))

    def test_successive_queries_join(self):
        minion = FactsMinion(method_fact_list=fact_reader())
        self.assertTrue(minion.exec_query(["AND", [["os", "Debian"]]]))
        self.assertFalse(minion.exec_query(["AND", [["role", "db"]]]), "ANDed with the first")
        minion = FactsMinion(method_fact_list=fact_reader())
        minion.deserialize(["OR", [["role", "db"], ["role", "mail"]]])
        self.assertTrue(minion.exec_query(["AND", [["os", "Debian"]]]), "ORed with an OR query")

    def test_other_forms(self):
        minion = FactsMinion()
        self.assertEqual(minion.deserialize(["AND", ["os", "Debian", "role", "web"]]).wire(),
                         ["AND", [["os", "Debian"], ["role", "web"]]])
        negated = FactsMinion().deserialize(["NOT", ["OR", [["a", True], ["b", True]]]])
        self.assertEqual(FuncLogicQuery(negated).result, False)
        self.assertEqual(FactsMinion().deserialize(["os", "Debian"]).wire(), ["AND", [["os", "Debian"]]])

    def test_a_fact_the_minion_lacks(self):
        with self.assertRaises(MinionQueryError):
            FactsMinion(method_fact_list=fact_reader()).exec_query(["AND", [["uptime__gt", 5]]])
        with self.assertRaises(MinionQueryError):
            FactsMinion().exec_query(["AND", [["os", "Debian"]]])
        with self.assertRaises(NonExistingQueryKeyword):
            FactsMinion(method_fact_list=fact_reader()).exec_query(["AND", [["os__like", "Deb"]]])


class QueryKeywordTest(unittest.TestCase):
    # (keyword, asked for, the fact's value, verdict)
    TABLE = [
        ("", "Debian", "Debian", True), ("", "debian", "Debian", False),
        ("", "8", 8, True), ("", 7, 8, False),
        ("contains", "amd", "6.1.0-18-amd64", True), ("contains", "arm", "6.1.0-18-amd64", False),
        ("icontains", "AMD64", "6.1.0-18-amd64", True), ("icontains", "i386", "6.1.0-18-amd64", False),
        ("iexact", "dEBIAN", "Debian", True), ("iexact", "Debia", "Debian", False),
        ("startswith", "6.1", "6.1.0-18-amd64", True), ("startswith", "1.0", "6.1.0-18-amd64", False),
        ("gt", 4, 8, True), ("gt", 8, 8, False), ("gt", "9", 8, False),
        ("gte", 8, 8, True), ("gte", "8", 8, True), ("gte", 9, 8, False),
        ("lt", 9, 8, True), ("lt", "8", 8, False), ("lt", 2, 8, False),
        ("lte", 8, 8, True), ("lte", "12", 8, True), ("lte", 7, 8, False),
        ("gt", "b", "c", True), ("lt", "b", "c", False),
    ]

    def test_table(self):
        keyword = QueryKeyword()
        for word, asked, fact, verdict in self.TABLE:
            self.assertIs(keyword.resolve(word, asked, fact), verdict, (word, asked, fact))

    def test_unknown_keyword(self):
        with self.assertRaises(NonExistingQueryKeyword):
            QueryKeyword().resolve("near", "a", "b")

    def test_a_subclass_adds_keywords(self):
        class Mine(QueryKeyword):
            def keyword_endswith(self, overlord_value, fact_value):
                return fact_value.endswith(overlord_value)
        self.assertTrue(Mine().resolve("endswith", "amd64", "6.1.0-18-amd64"))
        minion = FactsMinion(method_fact_list=fact_reader())
        minion.keyword_query = Mine()
        self.assertTrue(minion.exec_query(["AND", [["kernel__endswith", "64"]]]))


class DisplayActiveFactsTest(unittest.TestCase):
    def test_wrapped_answers(self):
        answers = {"web1": [{"__fact__": [True, {"role": "web"}]}, "ok"],
                   "db1": [{"__fact__": [False, {"role": "db"}]}, "ok"]}
        self.assertEqual(display_active_facts(answers), {"web1": "ok"})
        self.assertEqual(display_active_facts(answers, with_facts=True), {"web1": answers["web1"]})
        self.assertEqual(OverlordQuery().display_active(answers), {"web1": "ok"})

    def test_other_answers_pass(self):
        for result in ({"web1": 1, "db1": 1}, {"web1": [{"__fact__": [True, {}]}, 1], "db1": 2},
                       "*-test-ping-1.0", 0, {}):
            self.assertEqual(display_active_facts(result), result)


class UtilsTest(unittest.TestCase):
    def test_is_public_valid_method(self):
        """What Func's module loader asks of a command module's attributes
        (its `func` command line cannot start without it)."""
        from func.utils import is_public_valid_method

        class Module:
            limit = 3

            def run(self):
                pass

            def _helper(self):
                pass

            def hidden(self):
                pass

        m = Module()
        self.assertTrue(is_public_valid_method(m, "run"))
        self.assertFalse(is_public_valid_method(m, "_helper"))
        self.assertFalse(is_public_valid_method(m, "limit"))
        self.assertFalse(is_public_valid_method(m, "nosuch"))
        self.assertFalse(is_public_valid_method(m, "hidden", blacklist=["hidden"]))


class JobthingNamesTest(unittest.TestCase):
    def test_star_import(self):
        space = {}
        exec("from func.jobthing import *", space)
        for name in ("time", "os", "sys", "job_status", "purge_old_jobs", "clear_db", "get_open_ids",
                     "JOB_ID_RUNNING", "JOB_ID_FINISHED", "JOB_ID_LOST_IN_SPACE", "JOB_ID_PARTIAL",
                     "JOB_ID_ASYNC_PARTIAL", "JOB_ID_ASYNC_FINISHED", "JOB_ID_REMOTE_ERROR", "RETAIN_INTERVAL"):
            self.assertIn(name, space)
        self.assertIs(space["time"], time)
        self.assertTrue(callable(space["time"].time))
        # The func program's store is left as it is: Func's answers.
        self.assertEqual((space["purge_old_jobs"](), space["clear_db"]()), (0, {}))


# -- on a real fleet ---------------------------------------------------------

def role_fact(role):
    """A prepare(root) writing etc/func/facts.d/role.json."""
    def prepare(root):
        d = os.path.join(root, "etc/func/facts.d")
        os.makedirs(d, mode=0o700, exist_ok=True)
        for path in (os.path.join(root, "etc/func"), os.path.join(root, "etc")):
            os.chmod(path, 0o755)
        with open(os.path.join(d, "role.json"), "w") as f:
            f.write(json.dumps({"role": role}))
        os.chmod(os.path.join(d, "role.json"), 0o644)
    return prepare


FLEET = None
SAVED_ENV = {}


def setUpModule():
    global FLEET
    FLEET = Fleet()
    try:
        FLEET.start_minion("m1", prepare=role_fact("web"))
        FLEET.start_minion("m2", prepare=role_fact("db"))
    except Exception:
        FLEET.close()
        raise
    for key, value in (("FUNC_BINARY", binary("func")), ("FUNC_ROOT", FLEET.ca_root)):
        SAVED_ENV[key] = os.environ.get(key)
        os.environ[key] = value


def tearDownModule():
    for key, value in SAVED_ENV.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    if FLEET:
        FLEET.close()


def wait_for(job, code, timeout=60):
    from func.overlord.client import Overlord
    deadline = time.time() + timeout
    while Overlord("*").job_status(job)[0] != code:
        if time.time() > deadline:
            raise AssertionError("job %s never reached status %s" % (job, code))
        time.sleep(0.1)


class WireOnTheFleetTest(unittest.TestCase):
    """funcd takes the wire form as it is, from the CLI and from filters."""

    def test_func_fact_query_takes_the_wire_form(self):
        for q, hosts in ((Q(role="web"), ["m1"]), (Q(role="web") | Q(role="db"), ["m1", "m2"]),
                         (~Q(role="web"), ["m2"]), (Q(role="web") & Q(role="db"), [])):
            done = subprocess.run([binary("func"), "--root", FLEET.ca_root, "--fact-query", json.dumps(q.wire()),
                                   "--out", "json", "*", "call", "test", "ping"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            got = sorted(json.loads(done.stdout or b"{}")) if done.returncode == 0 else []
            self.assertEqual(got, hosts, (q.wire(), done.stderr.decode()))

    def test_set_complexq_sends_a_built_query(self):
        from func.overlord.client import Overlord
        ov = Overlord("*")
        self.assertEqual(ov.set_complexq(Q(role="db") | Q(role__startswith="w")).test.ping(), {"m1": 1, "m2": 1})
        self.assertEqual(ov.set_complexq(~Q(role__icontains="DB")).list_minions(), ["m1"])
        self.assertEqual(ov.filter(role="web").set_complexq(Q(role="db"), "OR").test.add(2, 3), {"m1": 5, "m2": 5})


class OverlordAttributesTest(unittest.TestCase):
    """Func's Overlord attributes are the object's own, never remote calls."""

    def test_attributes_are_local(self):
        from func.overlord.client import Minions, Overlord
        ov = Overlord("*")
        self.assertIsInstance(ov.overlord_query, OverlordQuery)
        self.assertIsInstance(ov.overlord_query.fact_query, FuncLogicQuery)
        self.assertFalse(ov.overlord_query.fact_query, "no filter yet")
        self.assertIsInstance(ov.minions_class, Minions)
        self.assertEqual(ov.minions, ["https://m1:51234", "https://m2:51234"])
        self.assertEqual(Overlord("m2", port=4321).minions, ["https://m2:4321"])
        self.assertEqual(sorted(ov.minions_class.get_all_hosts()), ["m1", "m2"])
        self.assertEqual((ov.server_spec, ov.port, ov.nforks, ov.noglobs, ov.delegate), ("*", 51234, 1, False, False))
        self.assertEqual(ov.mapfile, "/var/lib/func/map")
        self.assertEqual(ov.minionmap, {})
        self.assertIs(getattr(ov, "async"), False)
        self.assertIs(getattr(Overlord("m1", **{"async": "yes"}), "async"), True)
        self.assertTrue(ov.key.endswith("overlord.pem") and ov.ca.endswith("certmaster.crt"), (ov.key, ov.ca))
        self.assertIsNone(Overlord("m1", init_ssl=False).key)
        for name in ("config", "cm_config", "overlord_config", "exclude_spec", "timeout", "verbose",
                     "interactive", "methods", "minions_class"):
            self.assertNotIn("_Module", type(getattr(ov, name)).__name__, name)
        for name in ("tail_log", "check_progress", "run_direct", "_clone"):
            self.assertTrue(callable(getattr(ov, name)) and hasattr(Overlord, name), name)

    def test_local_modules(self):
        from func.overlord.client import Overlord
        ov = Overlord("m*")
        self.assertIn("utils.async_poll", ov.methods)
        self.assertEqual(ov.run("local", "utils.list_minions", []), ov.minions)
        self.assertEqual(ov.local.utils.list_minions(), ov.minions)
        with self.assertRaises(AttributeError):
            ov.run("local", "utils.nosuch", [])

    def test_other_names_are_still_modules(self):
        from func.overlord.client import Overlord
        ov = Overlord("*")
        self.assertEqual(ov.test.add(3, 4), {"m1": 7, "m2": 7})
        self.assertEqual(ov.run_direct("test", "ping", []), {"m1": 1, "m2": 1})

    def test_each_filter_has_its_own_query(self):
        from func.overlord.client import Overlord
        ov = Overlord("*")
        db = ov.filter(role="db")
        self.assertIsNot(db, ov)
        self.assertIsNot(db.overlord_query, ov.overlord_query)
        self.assertFalse(ov.overlord_query.fact_query, "the original keeps no query")
        self.assertEqual(db.overlord_query.serialize_query(), ["AND", [["role", "db"]]])
        self.assertEqual(db.exclude(role="web").overlord_query.serialize_query(),
                         ["AND", [["role", "db"], ["NOT", ["AND", [["role", "web"]]]]]])
        self.assertEqual(db.test.ping(), {"m2": 1})
        self.assertEqual(db.minions, ov.minions, "minions are the hosts the spec names")
        self.assertIs(db.local.utils._overlord, db)


class FilterMatchingNothingTest(unittest.TestCase):
    """A filter no host satisfies answers {} (Func's answer), not an exception."""

    def test_sync(self):
        from func.overlord.client import Overlord
        self.assertEqual(Overlord("*").filter(role="ldap").test.ping(), {})
        self.assertEqual(Overlord("*").filter(role="db").and_and(role="web").test.add(5, 5), {})
        self.assertEqual(Overlord("*").exclude(role="web").exclude(role="db").list_minions(), [])
        self.assertEqual(Overlord("m2", noglobs=True).filter(role="web").test.ping(), {})

    def test_async(self):
        from func.overlord.client import Overlord
        import func.jobthing as jobthing
        ov = Overlord("*", async_mode=True).filter(role="ldap")
        job = ov.test.add(1, 1)
        self.assertEqual(job, {})
        self.assertEqual(ov.job_status(job), (jobthing.JOB_ID_FINISHED, {}))
        self.assertEqual(ov.local.utils.async_poll(job), {})

    def test_a_spec_naming_nothing_still_raises(self):
        from func.CommonErrors import Func_Client_Exception
        from func.overlord.client import Overlord
        with self.assertRaises(Func_Client_Exception):
            Overlord("zz*")


class JobStatusAgreementTest(unittest.TestCase):
    """open_job_ids() and job_status() give one job the same code, while it
    runs and once it has finished."""

    def test_running_then_finished(self):
        from func.overlord.client import Overlord
        import func.jobthing as jobthing
        job = Overlord("*", async_mode=True).test.sleep(4)
        deadline = time.time() + 30
        while Overlord("*").job_status(job)[0] == jobthing.JOB_ID_RUNNING:
            self.assertLess(time.time(), deadline)
            time.sleep(0.05)
        listed = Overlord("*").open_job_ids()[job]
        code, results = Overlord("*").job_status(job)
        self.assertEqual((listed, code), (jobthing.JOB_ID_PARTIAL, jobthing.JOB_ID_PARTIAL))
        self.assertEqual(results, {})
        self.assertEqual(jobthing.get_open_ids()[job], jobthing.JOB_ID_PARTIAL)
        self.assertEqual(sorted(Overlord("*").local.utils.async_poll(job)), ["m1", "m2"])
        self.assertEqual(Overlord("*").open_job_ids()[job], jobthing.JOB_ID_FINISHED)
        self.assertEqual(Overlord("*").job_status(job)[0], jobthing.JOB_ID_FINISHED)


class AsyncPollTest(unittest.TestCase):
    """partial_func is handed each host's result once, the hosts that
    finished last included; async_poll answers the final results."""

    def test_an_already_finished_job_hands_everything_at_the_end(self):
        from func.overlord.client import Overlord
        job = Overlord("*", async_mode=True).test.add(40, 2)
        wait_for(job, 1)
        for poll in (Overlord("*").local.utils.async_poll, __import__("func.utils").utils.async_poll):
            handed = []
            self.assertEqual(poll(job, handed.append), {"m1": 42, "m2": 42})
            self.assertEqual(handed, [{"m1": 42, "m2": 42}])
        handed = []
        self.assertEqual(Overlord("*").run("local", "utils.async_poll", [job, handed.append]), {"m1": 42, "m2": 42})
        self.assertEqual(handed, [{"m1": 42, "m2": 42}])

    def test_a_running_job_hands_each_host_once(self):
        from func.overlord.client import Overlord
        import func.utils
        for poll in (Overlord("*").local.utils.async_poll, func.utils.async_poll):
            job = Overlord("*", async_mode=True).test.sleep(1)
            handed = []
            final = poll(job, handed.append, interval=0.1)
            self.assertEqual(sorted(h for batch in handed for h in batch), ["m1", "m2"])
            merged = {}
            for batch in handed:
                merged.update(batch)
            self.assertEqual(merged, final)

    def test_without_partial_func(self):
        from func.overlord.client import Overlord
        job = Overlord("m1", async_mode=True).test.add(1, 2)
        self.assertEqual(Overlord("m1").local.utils.async_poll(job, interval=0.1), {"m1": 3})

    def test_an_unknown_job_answers_0(self):
        import func.utils
        from func.overlord.client import Overlord
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(func.utils.async_poll("*-test-ping-1.0", lambda r: self.fail(r)), 0)
            self.assertEqual(Overlord("m1").local.utils.async_poll("m1-test-add-2.0"), 0)
        self.assertIn("*-test-ping-1.0", err.getvalue())
        self.assertIn("unknown", err.getvalue())


class JobthingTest(unittest.TestCase):
    def test_job_status_and_the_store(self):
        import func.jobthing as jobthing
        from func.overlord.client import Overlord
        job = Overlord("m2", async_mode=True).test.add(2, 5)
        Overlord("m2").local.utils.async_poll(job, interval=0.1)
        self.assertEqual(jobthing.job_status(job), (jobthing.JOB_ID_FINISHED, {"m2": 7}))
        self.assertEqual(jobthing.job_status(job, client_class=Overlord), Overlord("m2").job_status(job))
        self.assertEqual(jobthing.job_status("*-test-nope-3.0"), (jobthing.JOB_ID_LOST_IN_SPACE, 0))
        self.assertEqual((jobthing.purge_old_jobs(), jobthing.clear_db()), (0, {}))
        self.assertEqual(jobthing.get_open_ids()[job], jobthing.JOB_ID_FINISHED, "clear_db kept the job")


if __name__ == "__main__":
    unittest.main()
