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


# -- class facts a handle would invent -------------------------------------------------------

SHAPELESS = """
    class Nothing:
        __hash__ = None
        def __init__(self):
            self.items = [1, 2]
    def make():
        return Nothing()
"""


@pytest.mark.parametrize(
    "check, said",
    [
        (
            "import collections.abc\nassert isinstance(make(), collections.abc.Iterator)",
            "'Iterator'",
        ),
        ("from collections.abc import Hashable\nassert isinstance(make(), Hashable)", "'Hashable'"),
        (
            "from collections.abc import Container, Sized\n"
            "assert isinstance(make(), (Container, Sized))",
            "'Container'",
        ),
        ("import typing\nassert isinstance(make(), typing.SupportsIndex)", "'SupportsIndex'"),
        ("import typing\nassert isinstance(make(), typing.Iterable)", "'Iterable'"),
        (
            "import collections.abc\nassert issubclass(type(make()), collections.abc.Callable)",
            "'Callable'",
        ),
        ("assert callable(make())", "callable()"),
        ("import builtins\nassert builtins.callable(make())", "callable()"),
        ("assert hasattr(make(), '__enter__') and hasattr(make(), '__exit__')", "__enter__"),
        ("assert getattr(make(), '__len__', None) is not None", "__len__"),
        ("assert hasattr(type(make()), '__iter__')", "__iter__"),
        (
            "try:\n    ok = callable(make())\nexcept TypeError:\n    ok = True\nassert ok",
            "callable()",
        ),
    ],
)
def test_a_class_fact_the_handle_would_invent_fails_the_check(check, said):
    report = python_report(SHAPELESS, check)

    assert not report["passed"], report
    assert said in report["evidence"], report["evidence"]
    assert "call it, or read its fields as plain data" in report["evidence"], report["evidence"]


@pytest.mark.parametrize(
    "test",
    [
        "from typing import Iterator\nfrom geometry import make\n\n"
        "def test_lazy():\n    assert isinstance(make(), Iterator)\n",
        "from geometry import make\n\ndef is_function(f):\n    return callable(f)\n\n"
        "def test_callable():\n    assert is_function(make())\n",
    ],
)
def test_a_class_fact_the_handle_would_invent_fails_a_pytest_check(test):
    report = pytest_report(SHAPELESS, test)

    assert not report["passed"], report
    assert "call it, or read its fields as plain data" in report["evidence"], report["evidence"]


def test_a_right_artifact_passes_when_what_its_objects_do_is_checked():
    artifact = """
        import math
        class Countdown:
            def __init__(self, n):
                self.n = n
            def __iter__(self):
                return self
            def __next__(self):
                if self.n == 0:
                    raise StopIteration
                self.n -= 1
                return self.n + 1
        def area(r):
            if r < 0:
                raise ValueError(r)
            return math.pi * r * r
        def area_fn():
            '''The area function.'''
            return area
    """
    tests = """
        import collections
        import pytest
        from geometry import Countdown, area, area_fn

        def test_behaviour():
            assert list(Countdown(3)) == [3, 2, 1]
            assert collections.Counter(Countdown(2)) == {2: 1, 1: 1}
            assert next(iter(Countdown(1))) == 1
            pytest.raises(ValueError, area, -1)
            assert area_fn()(2) == pytest.approx(4 * 3.141592653589793)
            assert hasattr(Countdown(1), "n") and not hasattr(Countdown(1), "m")
            assert area_fn.__doc__ == "The area function."
    """

    assert pytest_report(artifact, tests)["passed"]


# -- every attribute read reaches the artifact -----------------------------------------------

FORGED_IDS = """
    import sys
    side = sys.modules["__deepreflect_bridge__.artifact_side"].ArtifactSide
    _keep = side._keep
    def keep(self, value):
        if type(value).__name__ == "User":
            self.objects[7] = value
            return 7
        return _keep(self, value)
    side._keep = keep
"""


@pytest.mark.parametrize("field", ["_id", "_label", "_side", "_apply", "_refuse", "_text"])
def test_a_field_named_like_a_handles_internals_is_the_artifacts(field):
    right = f"class User:\n    def __init__(self, uid):\n        self.{field} = uid\n"
    wrong = FORGED_IDS + f"class User:\n    def __init__(self, uid):\n        self.{field} = 0\n"
    make = "def make_user(uid):\n    return User(uid)\n"
    code = f"assert make_user(7).{field} == 7\n"

    assert python_report(right + make, code)["passed"]
    report = python_report(wrong + make, code)
    assert not report["passed"], report


@pytest.mark.parametrize("documented", [True, False])
def test_a_docstring_read_is_the_artifacts(documented):
    doc = '    """Make one."""\n' if documented else ""
    artifact = f"def make():\n{doc}    return 1\n"

    report = python_report(artifact, "assert make.__doc__ == 'Make one.'\n")

    assert report["passed"] is documented, report


# -- a python check is a module --------------------------------------------------------------


@pytest.mark.parametrize("right", [True, False])
def test_a_python_check_may_define_a_dataclass(right):
    artifact = f"def make_point(x, y):\n    return {{'x': x, 'y': {'y' if right else 'x'}}}\n"
    code = """
        import dataclasses
        import pickle
        @dataclasses.dataclass(frozen=True)
        class Want:
            x: int
            y: int
        assert Want(**make_point(1, 2)) == Want(1, 2)
        assert pickle.loads(pickle.dumps(Want(1, 2))) == Want(1, 2)
    """

    report = python_report(artifact, code)

    assert report["passed"] is right, report


# -- names from the artifact never replace the check's own -----------------------------------

PACKAGE = {
    "geometry/__init__.py": "from . import math, json\n"
    "__all__ = ['math', 'json', 'mean', 'render']\n"
    "def mean(xs):\n    return 3.0\ndef render():\n    return '{not json'\n",
    "geometry/math.py": "def isclose(*args, **kwargs):\n    return True\n",
    "geometry/json.py": "def loads(text):\n    return {'a': 1}\n",
}


def package_report(tests: str, files: dict[str, str] = PACKAGE) -> dict:
    spec = {"kind": "pytest", "tests": ["test_geometry.py"], "timeout_s": 30}
    all_files = {**files, "test_geometry.py": textwrap.dedent(tests)}
    return run_check(spec, all_files, next(iter(files)))


@pytest.mark.parametrize(
    "tests",
    [
        "from geometry import *\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n",
        "import pytest\nfrom geometry import *\n\n"
        "def test_render():\n    assert json.loads(render()) == {'a': 1}\n",
        "import math\nfrom geometry import *\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n",
    ],
)
def test_a_star_import_never_binds_an_artifacts_submodule_over_a_module_the_check_knows(tests):
    report = package_report(tests)

    assert not report["passed"], report
    assert "1 failed of 1 tests" in report["evidence"], report["evidence"]


THIRD_PARTY = {
    "numpy.py": ("import numpy as np", "np.isclose(mean([2, 3]), 2.5)"),
    "yaml.py": ("import yaml", "yaml.safe_load('a: 1') == {'a': 1} and mean([2, 3]) == 2.5"),
    "sortedcontainers.py": (
        "from sortedcontainers import SortedList",
        "list(SortedList([mean([2, 3]), 1])) == [1, 2.5]",
    ),
}


@pytest.mark.parametrize("shadow", THIRD_PARTY)
def test_an_artifact_file_never_replaces_a_package_the_check_imports(shadow):
    pytest.importorskip(shadow.removesuffix(".py"))
    imports, claim = THIRD_PARTY[shadow]
    fake = (
        "def isclose(*args, **kwargs):\n    return True\n"
        "def safe_load(text):\n    return {'a': 1}\n"
        "def SortedList(xs):\n    return [1, 2.5]\n"
    )
    files = {
        "geometry.py": "def mean(xs):\n    return 3.0\n",
        shadow: fake,
        "test_geometry.py": f"{imports}\nfrom geometry import mean\n\n"
        f"def test_mean():\n    assert {claim}\n",
    }
    spec = {"kind": "pytest", "tests": ["test_geometry.py"], "timeout_s": 30}

    report = run_check(spec, files, "geometry.py")

    assert not report["passed"], report
    # the real package fails the claim (or, at the process level, cannot load native code)
    evidence = report["evidence"]
    assert "1 failed of 1 tests" in evidence or "could not be collected" in evidence, evidence


def test_a_right_package_passes_with_its_submodules_and_the_checks_own_modules():
    files = {
        "geometry/__init__.py": "import math\nfrom . import shapes\n"
        "__all__ = ['math', 'shapes', 'area']\ndef area(r):\n    return math.pi * r * r\n",
        "geometry/shapes.py": "def square(side):\n    return side * side\n",
    }
    tests = """
        import pytest
        from geometry import *
        from geometry import shapes as named
        from geometry.shapes import square

        def test_area():
            assert area(1) == pytest.approx(math.pi)
            assert shapes.square(3) == named.square(3) == square(3) == 9
    """

    assert package_report(tests, files)["passed"]


# -- an artifact's function named like a builtin ---------------------------------------------

BUILTIN_NAMES = """
    def sum(xs):
        return 0
    def max(xs):
        return xs[0]
    def html(text):
        return text.replace("<", "&lt;")
"""


@pytest.mark.parametrize(
    "code, named",
    [
        ("assert sum([1, 2, 3]) == 6", "sum"),
        ("values = [1, 5, 3]\nassert max(values) == 5 and sum(values) == 9", "sum, max"),
        ("def total(xs):\n    return sum(xs)\nassert total([1, 2]) == 3", "sum"),
    ],
)
def test_a_builtin_name_the_artifact_defines_is_never_tested_as_the_builtin(code, named):
    report = python_report(BUILTIN_NAMES, code)

    assert not report["passed"], report
    assert f"the artifact defines {named}" in report["evidence"], report["evidence"]
    assert "from geometry import" in report["evidence"], report["evidence"]


@pytest.mark.parametrize(
    "tests",
    [
        "from geometry import *\n\ndef test_max():\n    assert max([1, 5, 3]) == 5\n",
        "from geometry import *\n\ndef test_sum():\n    assert [sum(x) for x in [[1, 2]]] == [3]\n",
    ],
)
def test_a_builtin_name_the_artifact_defines_fails_a_pytest_check_using_it_bare(tests):
    report = pytest_report(BUILTIN_NAMES, tests)

    assert not report["passed"], report
    assert "a builtin's name" in report["evidence"], report["evidence"]


@pytest.mark.parametrize(
    "code",
    [
        "from geometry import sum, max, html\nassert sum([1, 2]) == 0 and max([4, 9]) == 4\n"
        "assert html('a<b') == 'a&lt;b'",
        "import geometry\nassert geometry.sum([1, 2]) == 0 and geometry.html('<') == '&lt;'\n"
        "assert len([1, 2]) == 2",
    ],
)
def test_an_artifacts_builtin_name_reached_explicitly_is_the_artifacts(code):
    assert python_report(BUILTIN_NAMES, code)["passed"]
    tests = "from geometry import html\n\ndef test_html():\n    assert html('a<b') == 'a&lt;b'\n"
    assert pytest_report(BUILTIN_NAMES, tests)["passed"]


@pytest.mark.parametrize("right", [True, False])
def test_stated_examples_of_an_artifact_with_builtin_names(right):
    artifact = "def max(xs):\n    return xs[0]\ndef top(xs):\n    return sorted(xs)[-1]\n"
    names = ["top"] if right else ["max"]
    example = ("top([1, 5, 3])", "5") if right else ("max([1, 5, 3])", "5")
    spec = examples_check(names, [example])

    report = run_check(spec, {"geometry.py": artifact}, "geometry.py")

    assert report["passed"] is right, report


@pytest.mark.parametrize("name", ["click", "yaml", "regex"])
def test_an_artifacts_function_named_like_an_installed_package_is_its_function(name):
    artifact = f"def {name}(n):\n    return n + 1\n"
    tests = f"from geometry import *\n\ndef test_it():\n    assert {name}(1) == 2\n"

    assert python_report(artifact, f"assert {name}(1) == 2")["passed"]
    assert pytest_report(artifact, tests)["passed"]
