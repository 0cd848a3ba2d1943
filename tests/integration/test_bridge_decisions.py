"""A wrong artifact never passes by steering a decision of the check's (every level).

The attack classes of a round as an adversary plays them: equality and class facts the
artifact's process reports (state kept outside ``__dict__``, the bridge's own code patched),
operators and conversions answering plain values, the check's control flow (a
``StopIteration`` ending the check's loops, an ``__exit__`` swallowing the check's errors,
names bound over the check's own tools), and method results where the goal states a plain
type. Each artifact is wrong; each check fails, and where it failed on a refused decision its
evidence says what the artifact returned and what to compare instead.
"""

from __future__ import annotations

import textwrap

import pytest

from agent.checks import run_check
from agent.checks.examples import examples_check
from tests.fakes import both_isolation_levels

mode = both_isolation_levels()
INSTEAD = "compare the object's fields read as plain data"


def python_report(artifact: str, code: str) -> dict:
    spec = {"kind": "python", "code": textwrap.dedent(code), "timeout_s": 20}
    return run_check(spec, {"geometry.py": textwrap.dedent(artifact)}, "geometry.py")


def pytest_report(artifact: str, tests: str) -> dict:
    files = {"geometry.py": textwrap.dedent(artifact), "test_geometry.py": textwrap.dedent(tests)}
    spec = {"kind": "pytest", "tests": ["test_geometry.py"], "timeout_s": 30}
    return run_check(spec, files, "geometry.py")


# -- equality and class facts the artifact reports -------------------------------------------

HIDDEN_STATE = {
    "values in a module dict keyed by id(self)": """
        _STORE = {}
        class Vector:
            def __init__(self, x, y):
                _STORE[id(self)] = (x, y)
            def __add__(self, other):
                return Vector(0, 0)
            def __eq__(self, other):
                return _STORE[id(self)] == _STORE[id(other)]
            __hash__ = None
        """,
    "one __dict__ shared by every instance": """
        _SHARED = {}
        class Vector:
            def __init__(self, x, y):
                object.__setattr__(self, "__dict__", _SHARED)
                self.x, self.y = x, y
            def __add__(self, other):
                return Vector(0, 0)
            def __eq__(self, other):
                return True
        """,
    "a non-string key and a dict subclass": """
        class Loose(dict):
            pass
        class Vector:
            def __init__(self, x, y):
                object.__setattr__(self, "__dict__", Loose({1: (x, y)}))
            def __add__(self, other):
                return Vector(0, 0)
            def __eq__(self, other):
                return True
        """,
    "the bridge's own code patched in the artifact's process": """
        import sys
        side = sys.modules["__deepreflect_bridge__.artifact_side"].ArtifactSide
        _keep = side._keep
        def same_id_for_every_vector(self, value):
            if type(value).__name__ != "Vector":
                return _keep(self, value)
            self.objects[1] = value
            return 1
        side._keep = same_id_for_every_vector
        class Vector:
            def __init__(self, x, y):
                self.x, self.y = 0, 0
            def __add__(self, other):
                return Vector(0, 0)
            def __eq__(self, other):
                return True
        """,
}
COMPARISONS = [
    "assert Vector(1, 2) + Vector(3, 4) == Vector(4, 6)",
    "assert not (Vector(1, 2) + Vector(3, 4) != Vector(4, 6))",
    "assert [Vector(1, 2) + Vector(3, 4)] == [Vector(4, 6)]",
    "assert Vector(1, 2) + Vector(3, 4) in [Vector(4, 6)]",
    "assert {Vector(1, 2) + Vector(3, 4): 1}.get(Vector(4, 6)) == 1",
]


@pytest.mark.parametrize("trick", HIDDEN_STATE)
@pytest.mark.parametrize("comparison", COMPARISONS)
def test_two_artifact_objects_are_never_equal_on_the_artifacts_word(trick, comparison):
    report = python_report(HIDDEN_STATE[trick], comparison)

    assert not report["passed"], report
    assert INSTEAD in report["evidence"], report["evidence"]
    assert "'Vector' object" in report["evidence"], report["evidence"]


CLASS_FACTS = """
    from dataclasses import dataclass
    import sys
    side = sys.modules["__deepreflect_bridge__.artifact_side"].ArtifactSide
    class Circle:
        def __init__(self, r):
            self.r = r
    class Square:
        def __init__(self, side):
            self.side = side
        __class__ = property(lambda self: Circle)
    @dataclass(order=True)
    class Version:
        major: int
    def make(kind):
        return Square(1)
    def version(text):
        return Version(0)
"""


@pytest.mark.parametrize(
    "check, said",
    [
        ("assert isinstance(make('circle'), Circle)", "isinstance"),
        ("assert isinstance(make('circle'), (int, Circle))", "isinstance"),
        ("assert version('1.0') < version('2.0')", "with <"),
        ("assert sorted([version('2'), version('1')])[0].major == 0", "with <"),
        ("assert max(version('2'), version('1')) is not None", "with >"),
    ],
)
def test_class_facts_and_order_are_never_the_artifacts_word(check, said):
    report = python_report(CLASS_FACTS, check)

    assert not report["passed"], report
    assert said in report["evidence"], report["evidence"]


def test_the_check_fails_even_when_its_code_catches_the_refusal():
    artifact = "class Liar:\n    def __eq__(self, other):\n        return True\n"
    artifact += "def area(r):\n    return Liar()\n"
    code = """
        try:
            ok = area(1) == 3.14159
        except TypeError:
            ok = True
        assert ok
    """

    report = python_report(artifact, code)

    assert not report["passed"], report
    assert "compared it with == to a plain float" in report["evidence"], report["evidence"]


def test_a_right_artifact_passes_when_its_objects_are_read_as_plain_data():
    artifact = """
        class Vector:
            def __init__(self, x, y):
                self.x, self.y = x, y
            def __add__(self, other):
                return Vector(self.x + other.x, self.y + other.y)
    """
    code = "v = Vector(1, 2) + Vector(3, 4)\nassert (v.x, v.y) == (4, 6) and v == v\n"

    assert python_report(artifact, code)["passed"]


# -- operators and conversions answering plain values ----------------------------------------

NUMBERS = """
    import math
    class Number:
        def __sub__(self, other): return Number()
        def __rsub__(self, other): return 0.0
        def __abs__(self): return 0.0
        def __neg__(self): return -1.0
        def __pos__(self): return 3.14159
        def __float__(self): return math.pi
        def __int__(self): return 3
        def __index__(self): return 3
        def __round__(self, n=None): return 3.14
        def __floor__(self): return 3
        def __ceil__(self): return 4
        def __trunc__(self): return 3
        def __complex__(self): return complex(math.pi)
        def __mul__(self, other): return 3.14159
        __rmul__ = __mul__
    def area(r):
        return Number()
"""


@pytest.mark.parametrize(
    "check",
    [
        "assert abs(area(1) - math.pi) < 1e-6",
        "assert abs(math.pi - area(1)) < 1e-6",
        "assert -area(1) < 0",
        "assert +area(1) == 3.14159",
        "assert math.isclose(area(1), math.pi)",
        "assert float(area(1)) == math.pi",
        "assert int(area(1)) == 3",
        "assert round(area(1), 2) == 3.14",
        "assert math.floor(area(1)) == 3 and math.ceil(area(1)) == 4",
        "assert math.trunc(area(1)) == 3",
        "assert len(range(area(1))) == 3",
        "assert complex(area(1)) == complex(math.pi)",
        "assert area(1) * 1 == 3.14159",
        "assert area(1) - area(0) == area(1) - area(0)",
    ],
)
def test_operators_and_conversions_of_an_artifact_object_decide_no_number(check):
    report = python_report(NUMBERS, "import math\n" + check)

    assert not report["passed"], report
    assert "the artifact returned a 'Number' object" in report["evidence"], report["evidence"]


# -- the check's control flow ----------------------------------------------------------------

STOPS = {
    "StopIteration": "raise StopIteration",
    "a subclass of StopIteration": "raise Done()",
    "StopIteration with a value": "raise StopIteration(True)",
    "StopAsyncIteration": "raise StopAsyncIteration",
}


@pytest.mark.parametrize("stop", STOPS)
@pytest.mark.parametrize(
    "check",
    [
        "for got, want in zip(map(is_even, range(10)), [x % 2 == 0 for x in range(10)]):\n"
        "    assert got == want",
        "assert all(is_even(x) == (x % 2 == 0) for x in range(10))",
        "assert not any(is_even(x) != (x % 2 == 0) for x in range(10))",
        "assert [is_even(x) for x in range(10)] == [x % 2 == 0 for x in range(10)]",
        "def results():\n    for x in range(10):\n        yield is_even(x) == (x % 2 == 0)\n"
        "assert all(results())",
    ],
)
def test_a_stop_raised_by_an_artifact_call_never_ends_the_checks_loop(stop, check):
    artifact = (
        "class Done(StopIteration):\n    pass\n"
        f"def is_even(x):\n    if x >= 1:\n        {STOPS[stop]}\n    return True\n"
    )

    report = python_report(artifact, check)

    assert not report["passed"], report
    assert "not next()" in report["evidence"] or "raised" in report["evidence"], report


def test_a_stop_answering_next_still_ends_an_iteration():
    artifact = "def evens(n):\n    return iter(range(0, n, 2))\n"

    assert python_report(artifact, "assert list(evens(5)) == [0, 2, 4]")["passed"]


SWALLOWERS = {
    "an __exit__ returning True": """
        class Transaction:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return True
        """,
    "an __exit__ returning a truthy object": """
        class Transaction:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return [1]
        """,
    "a contextmanager catching everything": """
        import contextlib
        @contextlib.contextmanager
        def _quiet():
            try:
                yield None
            except BaseException:
                pass
        def Transaction():
            return _quiet()
        """,
}
SWALLOWED = {
    "the check's JSON error": "import json\nwith Transaction():\n"
    "    data = json.loads(render())\nassert data == {'a': 1}\n",
    "a refused comparison": "with Transaction():\n    assert total() == 3\nassert done()\n",
    "the check's own raise": "with Transaction():\n    if render() != '{\"a\": 1}':\n"
    "        raise ValueError('wrong rendering')\n",
    "the check's failed assertion": "with Transaction():\n    assert render() == '{\"a\": 1}'\n",
    "a KeyError of the check's": "with Transaction():\n    {'a': 1}[render()]\n",
}


@pytest.mark.parametrize("swallower", SWALLOWERS)
@pytest.mark.parametrize("swallowed", SWALLOWED)
def test_an_artifacts_exit_never_swallows_the_checks_own_errors(swallower, swallowed):
    artifact = SWALLOWERS[swallower] + textwrap.dedent(
        """
        class Liar:
            def __eq__(self, other):
                return True
        def render():
            return "{not json"
        def total():
            return Liar()
        def done():
            return True
        """
    )

    report = python_report(artifact, SWALLOWED[swallowed])

    assert not report["passed"], report


def test_an_artifacts_exit_still_suppresses_what_the_artifact_raised():
    artifact = """
        class Tolerant:
            def __enter__(self):
                return self
            def __exit__(self, kind, exc, tb):
                return kind is not None and issubclass(kind, KeyError)
        def lookup(key):
            raise KeyError(key)
    """
    code = "with Tolerant():\n    lookup('x')\nassert True\n"

    assert python_report(artifact, code)["passed"]


SHADOWS = """
    class Anything:
        def __eq__(self, other):
            return True
    class pytest:
        approx = staticmethod(lambda expected, **kwargs: Anything())
        raises = staticmethod(lambda *args, **kwargs: Anything())
    class math:
        isclose = staticmethod(lambda *args, **kwargs: True)
        pi = 3.0
    def json(*args):
        return None
    sorted = lambda xs, **kwargs: [1, 2, 3]
    __all__ = ["pytest", "math", "json", "sorted", "mean"]
    def mean(xs):
        return 3.0
"""


@pytest.mark.parametrize(
    "tests",
    [
        "import math\nimport pytest\nfrom geometry import *\n\n"
        "def test_mean():\n    assert mean([2, 3]) == pytest.approx(2.5)\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n",
        "from geometry import *\nimport math\nimport pytest\n\n"
        "def test_mean():\n    assert mean([2, 3]) == pytest.approx(2.5)\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n",
        # the test never imports math itself: it still gets the real one
        "import pytest\nfrom geometry import *\n\n"
        "def test_mean():\n    assert mean([2, 3]) == pytest.approx(2.5)\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n",
        "import pytest\nfrom geometry import mean, math\n\n"
        "def test_mean():\n    assert mean([2, 3]) == pytest.approx(2.5)\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n",
    ],
)
def test_a_star_import_never_binds_the_artifacts_names_over_the_tests_own(tests):
    report = pytest_report(SHADOWS, tests)

    assert not report["passed"], report
    assert "2 failed of 2 tests" in report["evidence"], report["evidence"]


@pytest.mark.parametrize(
    "code",
    [
        "assert math.isclose(mean([2, 3]), 2.5)",
        "assert abs(mean([2, 3]) - 2.5) < 1e-9",
        "assert sorted([mean([2, 3])]) == [2.5]",
        "assert json.loads('2.5') == mean([2, 3])",
        "assert _helper() == 2.5",
    ],
)
def test_a_python_check_sees_only_the_artifacts_public_names_and_never_over_its_tools(code):
    artifact = SHADOWS + "\ndef _helper():\n    return 2.5\n"

    report = python_report(artifact, code)

    assert not report["passed"], report


# -- method results where the goal states a plain type ---------------------------------------

YES_MAN = """
    class Slug:
        def __getattr__(self, name):
            return lambda *args, **kwargs: True
        def __eq__(self, other):
            return True
        def __repr__(self):
            return "'a-b'"
    def slugify(text):
        return Slug()
"""


@pytest.mark.parametrize(
    "example",
    [("slugify('A B')", "'a-b'"), ("slugify('A B').upper()", "'A-B'")],
)
def test_a_stated_example_checks_the_type_before_it_compares(example):
    spec = examples_check(["slugify"], [example])

    report = run_check(spec, {"geometry.py": textwrap.dedent(YES_MAN)}, "geometry.py")

    assert not report["passed"], report
    assert "stated examples failed" in report["evidence"], report["evidence"]
    assert "not plain data" in report["evidence"] or "(a bool)" in report["evidence"]


def test_a_stated_example_of_a_right_artifact_passes():
    spec = examples_check(["slugify"], [("slugify('A B')", "'a-b'")])
    artifact = "def slugify(text):\n    return text.lower().replace(' ', '-')\n"

    assert run_check(spec, {"geometry.py": artifact}, "geometry.py")["passed"]
