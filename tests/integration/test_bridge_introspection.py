"""Introspecting a handle decides nothing (every level).

A handle's class answers ``dir()``, a dunder read (``obj.__enter__``, ``obj.__module__``) and
its own attributes (``type(obj).__name__``) the same way whatever the artifact returned, and an
abstract class computes its no from the same dunders as its yes. A check whose code branches on
any of them fails closed, with one evidence line. Each artifact is wrong, and each check would
pass on the handle's answers; a right artifact passes checks that call and read plain data.
"""

from __future__ import annotations

import pytest

from agent.checks import run_check, validate_check_spec
from agent.checks.examples import examples_check
from agent.checks.registry import CheckScope
from agent.checks.stated import ExamplesSpec
from tests.fakes import both_isolation_levels
from tests.integration.test_bridge_decisions import SHAPELESS, pytest_report, python_report

mode = both_isolation_levels()
WHAT = "call it, or read its fields as plain data"

NOTHING = SHAPELESS + "    def parse(text):\n        return Nothing()\n"
"""No context manager, no iterator, no mapping: a wrong artifact's object."""


def refusal(report: dict) -> str:
    """The evidence of a check that failed closed on a refused decision."""
    assert not report["passed"], report
    assert WHAT in report["evidence"], report["evidence"]
    return report["evidence"]


# -- a handle's own answers: dunders, dir(), its class ---------------------------------------


@pytest.mark.parametrize(
    "check, said",
    [
        ("r = make()\nassert r.__enter__ and r.__exit__", "read its __enter__"),
        ("assert make().__next__ is not None", "read its __next__"),
        ("assert callable(make().__call__)", "read its __call__"),
        ("import operator\nassert operator.attrgetter('__iter__')(make())", "read its __iter__"),
        ("assert make().__module__ != 'builtins'", "read its __module__"),
        ("assert make.__module__ != '__main__'", "read its __module__"),
        ("assert make().__len__", "read its __len__"),
        ("assert make().__getitem__", "read its __getitem__"),
        ("assert '__iter__' in dir(make())", "asked dir() of it"),
        ("assert 'area' not in dir(make())", "asked dir() of it"),
        ("assert {'__len__', '__getitem__'} <= set(dir(make()))", "asked dir() of it"),
        ("assert type(make()).__name__ != 'NoneType'", "read __name__ of its class"),
        ("assert make().__class__.__name__ != 'dict'", "read its __class__"),
        ("assert type(make()).__enter__", "read __enter__ of its class"),
        ("assert '__enter__' in vars(type(make()))", "read __dict__ of its class"),
        ("assert '__iter__' in dir(type(make()))", "asked dir() of its class"),
        (
            "try:\n    ok = bool(make().__enter__)\nexcept TypeError:\n    ok = True\nassert ok",
            "read its __enter__",
        ),
    ],
)
def test_a_handles_own_answer_read_by_the_check_fails_it(check, said):
    assert said in refusal(python_report(NOTHING, check))


@pytest.mark.parametrize(
    "test",
    [
        "from geometry import make\n\ndef test_context():\n    assert make().__enter__\n",
        "from geometry import make\n\ndef test_iterable():\n    assert '__iter__' in dir(make())\n",
        "from geometry import make\n\ndef test_named():\n"
        "    assert type(make()).__qualname__ != 'int'\n",
    ],
)
def test_a_handles_own_answer_fails_a_pytest_check(test):
    assert "the check" in refusal(pytest_report(NOTHING, test))


# -- an abstract class's no ------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        "from collections.abc import Mapping\nassert not isinstance(parse('a'), Mapping)",
        "import typing\nassert not isinstance(parse('a'), typing.Mapping)",
        "import collections.abc as abc\nassert not isinstance(parse('a'), abc.MutableMapping)",
        "from collections.abc import Mapping\nassert not isinstance(parse('a'), (list, Mapping))",
        "from collections.abc import Mapping\nassert not issubclass(type(parse('a')), Mapping)",
        "import numbers\nassert not isinstance(parse('a'), numbers.Number)",
        "import abc\nclass Shape(abc.ABC):\n    pass\nassert not isinstance(make(), Shape)",
        "from typing import Protocol, runtime_checkable\n@runtime_checkable\n"
        "class Closeable(Protocol):\n    def close(self): ...\n"
        "assert not isinstance(make(), Closeable)",
        "from typing import Protocol, runtime_checkable\n@runtime_checkable\n"
        "class Sized(Protocol):\n    size: int\nassert not isinstance(make(), Sized)",
    ],
)
def test_an_abstract_class_saying_no_of_a_handle_fails_the_check(check):
    assert "asked" in refusal(python_report(NOTHING, check))


def test_an_abstract_class_still_answers_for_plain_data_and_library_code():
    artifact = "def parse(text):\n    return {'a': 1}\ndef area(r):\n    return 3.0 * r\n"
    code = """
        import numbers
        from collections.abc import Mapping, Sequence
        import pytest
        assert isinstance(parse('a'), Mapping) and not isinstance(parse('a'), Sequence)
        assert isinstance(area(1), numbers.Real)
        assert area(2) == pytest.approx(6.0)
    """

    assert python_report(artifact, code)["passed"]


def test_a_right_artifact_passes_when_its_objects_are_called_and_read():
    artifact = """
        class Recorder:
            def __init__(self):
                self.lines = []
            def __enter__(self):
                self.lines.append('in')
                return self
            def __exit__(self, *exc):
                self.lines.append('out')
        def make():
            return Recorder()
        def parse(text):
            return dict(a=1)
    """
    code = """
        with make() as r:
            pass
        assert r.lines == ['in', 'out'] and make.__name__ == 'make'
        assert parse('a') == {'a': 1} and isinstance(parse('a'), dict)
        assert str(make()).startswith('<') and not isinstance(make(), int)
    """

    assert python_report(artifact, code)["passed"]


# -- a class both processes have: the handle is not one, whatever the object is -------------

KINDS = """
    import collections, dataclasses
    @dataclasses.dataclass
    class Point:
        x: int
    def evens(n):
        return (i for i in range(0, n, 2))
    def make_queue():
        return collections.deque([1])
    def error():
        return ValueError('x')
    def point():
        return Point(1)
    class make:
        pass
"""


@pytest.mark.parametrize(
    "check, said",
    [
        ("import types\nassert not isinstance(evens(4), types.GeneratorType)", "'generator'"),
        ("import inspect\nassert not inspect.isgenerator(evens(4))", "'generator'"),
        ("import collections\nassert not isinstance(make_queue(), collections.deque)", "'deque'"),
        ("assert not isinstance(error(), Exception)", "'Exception'"),
        ("assert not isinstance(make, type)", "'type'"),
        ("import inspect\nassert not inspect.isclass(make)", "'type'"),
        ("import dataclasses\nassert not dataclasses.is_dataclass(point())", "'type'"),
        ("import types\nassert not issubclass(type(evens(2)), types.GeneratorType)", "'generator'"),
        ("import enum\nassert not isinstance(point(), enum.Enum)", "'Enum'"),
        ("import inspect\nassert '__iter__' in dict(inspect.getmembers(point()))", "dir()"),
        ("import inspect\nassert inspect.getattr_static(point(), '__enter__')", "__dict__"),
        ("import types\nassert not isinstance(evens(4), ((types.GeneratorType,),))", "'gen"),
        ("import types\nassert not isinstance(evens(4), types.GeneratorType | int)", "'gen"),
        ("import types\nassert evens(4).__class__ is not types.GeneratorType", "__class__"),
        (
            "import types\nassert not type.__instancecheck__(types.GeneratorType, evens(4))",
            "__class__",
        ),
        (
            "import types\nmatch evens(4):\n    case types.GeneratorType():\n        ok = False\n"
            "    case _:\n        ok = True\nassert ok",
            "__class__",
        ),
        (
            "import functools, types\n@functools.singledispatch\ndef kind(x):\n    return 'other'\n"
            "@kind.register\ndef _(x: types.GeneratorType):\n    return 'gen'\n"
            "assert kind(evens(4)) == 'other'",
            "__class__",
        ),
    ],
)
def test_a_class_the_artifacts_object_could_be_is_never_answered_by_the_handle(check, said):
    assert said in refusal(python_report(KINDS, check))


def test_a_plain_class_or_the_checks_own_class_still_answers_no():
    code = """
        import collections
        class Want:
            pass
        assert not isinstance(make_queue(), (int, str, list, dict, Want))
        assert not isinstance([1], collections.deque) and isinstance(make_queue(), object)
    """
    tests = """
        from geometry import make_queue
        class Want:
            pass
        def test_not_mine():
            assert not isinstance(make_queue(), Want) and not isinstance(make_queue(), tuple)
    """

    assert python_report(KINDS, code)["passed"]
    assert pytest_report(KINDS, tests)["passed"]


# -- an artifact module's proxy: its dir() and __dict__ are its own -------------------------

HELPER = "def area(r):\n    return r\ndef _helper():\n    return 1\n"


@pytest.mark.parametrize(
    "check, said",
    [
        ("import geometry\nassert '_helper' not in dir(geometry)", "asked dir()"),
        ("import geometry\nassert '_helper' not in vars(geometry)", "read __dict__"),
        ("import geometry\nassert '_helper' not in geometry.__dict__", "read __dict__"),
        (
            "import inspect, geometry\nassert '_helper' not in dict(inspect.getmembers(geometry))",
            "asked dir()",
        ),
    ],
)
def test_an_artifact_modules_own_names_are_never_its_proxys(check, said):
    report = python_report(HELPER, check)

    assert not report["passed"], report
    assert said in report["evidence"] and "hasattr(geometry" in report["evidence"], report


def test_an_artifact_module_read_by_name_is_the_modules():
    code = "import geometry\nassert hasattr(geometry, '_helper') and geometry.area(2) == 2\n"
    tests = "from geometry import *\n\ndef test_area():\n    assert area(3) == 3\n"

    assert python_report(HELPER, code)["passed"]
    assert pytest_report(HELPER, tests)["passed"]


# -- a name stated as a function -------------------------------------------------------------

NOT_FUNCTIONS = {
    "an instance of its own class": "class Slug:\n    pass\nslugify = Slug()\n",
    "a string": "slugify = 'slugify'\n",
    "None": "slugify = None\n",
    "a module": "import math as slugify\n",
    "a compiled pattern": "import re\nslugify = re.compile('[a-z]+')\n",
    "a dict of functions": "slugify = {'run': lambda t: t}\n",
    "a number": "slugify = 0\n",
    "an object whose __call__ is None": "class S:\n    __call__ = None\nslugify = S()\n",
    "a generator": "slugify = (c for c in 'ab')\n",
    "an object whose repr raises": "class S:\n    def __repr__(self):\n        raise ValueError\n"
    "slugify = S()\n",
    "a class whose metaclass's __call__ is None": "class M(type):\n    __call__ = None\n"
    "class slugify(metaclass=M):\n    pass\n",
}
FUNCTIONS = {
    "a function": "def slugify(text):\n    return text\n",
    "a class": "class slugify:\n    pass\n",
    "a callable object": "class S:\n    def __call__(self, t):\n        return t\nslugify = S()\n",
    "a partial": "import functools\ndef _s(a, t):\n    return t\n"
    "slugify = functools.partial(_s, 1)\n",
}


@pytest.mark.parametrize("bound", NOT_FUNCTIONS)
def test_a_name_stated_as_a_function_bound_to_anything_else_fails(bound):
    report = run_check(examples_check(["slugify"], []), {"m.py": NOT_FUNCTIONS[bound]}, "m.py")

    assert not report["passed"], report
    assert "slugify is not a function" in report["evidence"], report["evidence"]


@pytest.mark.parametrize("bound", FUNCTIONS)
def test_a_name_stated_as_a_function_bound_to_something_callable_passes(bound):
    assert run_check(examples_check(["slugify"], []), {"m.py": FUNCTIONS[bound]}, "m.py")["passed"]


def test_a_floor_check_of_a_name_without_an_example_fails_a_non_callable():
    spec = ExamplesSpec(defines=["area", "slugify"]).as_spec()
    files = {"m.py": "def area(r):\n    return r\nclass S:\n    pass\nslugify = S()\n"}

    report = run_check(spec, files, "m.py")

    assert not report["passed"], report
    assert "slugify is not a function" in report["evidence"], report["evidence"]


# -- the examples program's own builtins: the host's word, never the check's source ----------

MARKED = "__deepreflect_own_builtins__ = True\n"
SUM = "def sum(xs):\n    return 0\n"


@pytest.mark.parametrize(
    "code",
    [
        MARKED + "assert sum([1, 2, 3]) == 6",
        "assert sum([1, 2, 3]) == 6\n" + MARKED,
        MARKED + "def total(xs):\n    return sum(xs)\nassert total([1, 2]) == 3",
    ],
)
def test_a_marker_in_the_checks_source_never_makes_its_builtins_its_own(code):
    report = python_report(SUM, code)

    assert not report["passed"], report
    assert "the artifact defines sum" in report["evidence"], report["evidence"]


def test_a_marker_in_a_test_file_never_makes_its_builtins_its_own():
    tests = "from geometry import *\n" + MARKED + "\ndef test_sum():\n    assert sum([1, 2]) == 3\n"

    report = pytest_report(SUM, tests)

    assert not report["passed"], report
    assert "a builtin's name" in report["evidence"], report["evidence"]


def test_only_the_product_names_the_examples_program():
    spec = {"kind": "python", "code": "assert True", "program": "examples"}

    assert validate_check_spec(spec) == []
    assert any("'program'" in e for e in validate_check_spec(spec, CheckScope(artifact="m.py")))
    assert validate_check_spec({**spec, "program": "mine"})
    assert examples_check(["f"], [])["program"] == "examples"
