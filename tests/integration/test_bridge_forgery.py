"""Objects that lie and artifacts that talk out of turn never win a check (both levels).

Each lying artifact answers every function of the tests with an object built to pass a comparison:
``__eq__`` always true, ``__ne__`` always false, a lying ``__hash__``, ``__lt__``,
``__contains__``, ``__bool__``, ``__len__``, ``__sub__``/``__float__`` (the float idioms), builtin
subclasses, spoofed ``__class__``, ``__getattribute__``, ``__reduce__``, a dataclass whose
``__dict__`` or ``__eq__`` lies. Every single test must fail (score 0), not only one.
The artifacts that talk on the link (requests of their own, replies nobody asked for,
garbage, a closed link, writes to every descriptor) must fail the check with a reason.
"""

from __future__ import annotations

import textwrap

import pytest

from agent.checks import run_check
from tests.fakes import both_isolation_levels

mode = both_isolation_levels()

TESTS = textwrap.dedent(
    """
    import math

    import pytest

    from slugify import Slug, count_words, make_slug, mean, slug_map, slugify, slugify_all


    def test_equal():
        assert slugify("A B") == "a-b"

    def test_not_unequal():
        assert not (slugify("A B") != "a-b")

    def test_inside_a_list():
        assert slugify_all(["A B", "C"]) == ["a-b", "c"]

    def test_inside_a_dict():
        assert slug_map(["A B"]) == {"A B": "a-b"}

    def test_in_a_list_of_the_check():
        assert "a-b" in [slugify("A B")]

    def test_in_a_set():
        assert slugify("A B") in {"a-b"}

    def test_sorted():
        assert sorted([slugify("B B"), slugify("A A")]) == ["a-a", "b-b"]

    def test_contains_a_dash():
        assert "-" in slugify("A B") and "a-b" == slugify("A B")

    def test_an_int():
        assert count_words("a b c") == 3

    def test_a_float_by_difference():
        assert abs(mean([2, 3]) - 2.5) < 1e-9

    def test_a_float_by_isclose():
        assert math.isclose(mean([2, 3]), 2.5)

    def test_a_float_by_approx():
        assert mean([2, 3]) == pytest.approx(2.5)

    def test_a_dataclass():
        assert make_slug("A B").text == "a-b"
    """
)
CHECK_CODE = textwrap.dedent(
    """
    import math
    assert slugify("A B") == "a-b"
    assert slugify_all(["A B", "C"]) == ["a-b", "c"]
    assert count_words("a b c") == 3
    assert math.isclose(mean([2, 3]), 2.5)
    assert make_slug("A B").text == "a-b"
    """
)
RIGHT = textwrap.dedent(
    """
    from dataclasses import dataclass

    def slugify(text):
        return text.lower().replace(" ", "-")

    def slugify_all(texts):
        return [slugify(t) for t in texts]

    def slug_map(texts):
        return {t: slugify(t) for t in texts}

    def count_words(text):
        return len(text.split())

    def mean(xs):
        return sum(xs) / len(xs)

    @dataclass
    class Slug:
        text: str

    def make_slug(text):
        return Slug(slugify(text))
    """
)
LIES = textwrap.indent(
    textwrap.dedent(
        """
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        def __hash__(self): return hash("a-b")
        def __lt__(self, other): return True
        def __le__(self, other): return True
        def __gt__(self, other): return False
        def __ge__(self, other): return True
        def __bool__(self): return True
        def __len__(self): return 3
        def __contains__(self, item): return True
        def __iter__(self): return iter(["a-b", "-", "c"])
        def __sub__(self, other): return 0.0
        def __rsub__(self, other): return 0.0
        def __abs__(self): return 0.0
        def __float__(self): return 2.5
        def __int__(self): return 3
        def __index__(self): return 3
        def __round__(self, n=None): return 2.5
        def __str__(self): return "a-b"
        def __repr__(self): return "'a-b'"
        """
    ),
    "    ",
)
# every function answers a liar; Slug stays an honest dataclass unless the trick is about it
LIAR_FUNCTIONS = textwrap.dedent(
    """
    from dataclasses import dataclass

    def slugify(text):
        return make(text)

    def slugify_all(texts):
        return [make(t) for t in texts]

    def slug_map(texts):
        return {t: make(t) for t in texts}

    def count_words(text):
        return make(0)

    def mean(xs):
        return make(0.0)

    def make_slug(text):
        return make(text)
    """
)
HONEST_SLUG = "\n@dataclass\nclass Slug:\n    text: str\n"
WRONG_SLUG = RIGHT + "\ndef make_slug(text):\n    return Slug(text)  # wrong: no slugify\n"


def liar(base: str, make: str = "Liar({})", extra: str = "") -> str:
    """A module whose every answer is a ``Liar`` (a subclass of ``base``)."""
    header = f"class Liar({base}):\n" if base else "class Liar:\n"
    factory = f"\ndef make(value):\n    return {make.format('value')}\n"
    return header + LIES + extra + LIAR_FUNCTIONS + factory + HONEST_SLUG


LIARS = {
    "always-equal object": liar(""),
    "str subclass": liar("str", "Liar(str(value).lower())"),
    "int subclass": liar("int", "Liar(len(str(value)))"),
    "float subclass": liar("float", "Liar(0.5)"),
    "list subclass": liar("list", "Liar([value])"),
    "dict subclass": liar("dict", "Liar(x=value)"),
    "tuple subclass": liar("tuple", "Liar((value,))"),
    "__class__ spoofed as str": liar("", extra="    __class__ = property(lambda self: str)\n"),
    "__getattribute__ override": liar(
        "",
        extra=(
            "    def __getattribute__(self, name):\n"
            "        if name == '__class__':\n"
            "            return str\n"
            "        return object.__getattribute__(self, name)\n"
        ),
    ),
    "__reduce__ to a string": liar(
        "", extra="    def __reduce__(self):\n        return (str, ('a-b',))\n"
    ),
    "dataclass with a __dict__ property": WRONG_SLUG
    + textwrap.dedent(
        """
        @dataclass
        class Slug:
            text: str
            __dict__ = property(lambda self: {"text": "a-b"})
            def __eq__(self, other):
                return True
        """
    ),
    "dataclass with an always-true __eq__": WRONG_SLUG
    + textwrap.dedent(
        """
        @dataclass(eq=False)
        class Slug:
            text: str
            def __eq__(self, other):
                return True
            __hash__ = object.__hash__
        """
    ),
}


def pytest_report(artifact: str):
    files = {"slugify.py": artifact, "test_slugify.py": TESTS}
    spec = {"kind": "pytest", "tests": ["test_slugify.py"], "timeout_s": 30}
    return run_check(spec, files, "slugify.py")


def python_report(artifact: str, code: str = CHECK_CODE, timeout_s: float = 10):
    spec = {"kind": "python", "code": code, "timeout_s": timeout_s}
    return run_check(spec, {"slugify.py": artifact}, "slugify.py")


def test_the_right_artifact_passes_every_test():
    report = pytest_report(RIGHT)

    assert report["passed"], report["evidence"]
    assert python_report(RIGHT)["passed"]


@pytest.mark.parametrize("trick", LIARS)
def test_a_lying_object_fails_every_single_test(trick):
    report = pytest_report(LIARS[trick])

    assert not report["passed"], report
    if "dataclass" in trick:  # only the dataclass is wrong there
        assert "1 failed of 13 tests" in report["evidence"], report["evidence"]
        assert "test_a_dataclass" in report["evidence"], report["evidence"]
    else:
        assert report["score"] == 0.0, report["evidence"]


@pytest.mark.parametrize("trick", LIARS)
def test_a_lying_object_fails_a_python_check(trick):
    report = python_report(LIARS[trick])

    assert not report["passed"], report
    assert report["evidence"]


def test_an_endless_iterator_is_bounded_by_the_timeout():
    artifact = (
        "import itertools\nclass Endless:\n    def __iter__(self):\n"
        "        return itertools.repeat('x')\n"
        "def slugify(text):\n    return Endless()\n"
    )

    report = python_report(artifact, "assert 'a-b' in slugify('A B')\n", timeout_s=2)

    assert not report["passed"]
    assert "timed out" in report["evidence"]


# -- an artifact that talks on the link -----------------------------------------------------

SEND = textwrap.dedent(
    """
    import json, os, struct
    LINK = int(os.environ["DEEPREFLECT_LINK_FD"])

    def send(message):
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        os.write(LINK, struct.pack(">I", len(data)) + data)
    """
)
WRONG = "\ndef slugify(text):\n    return text.lower()\n"


def request(op: str, args: str) -> str:
    return f"send({{'kind': 'request', 'id': 1, 'op': {op!r}, 'args': {args}}})\n"


TALKERS = {
    "a getattr request on a guessed id": request(
        "apply", "['t', [['l', [['s', 'getattr'], ['r', 1], ['s', '__globals__']]], ['d', []]]]"
    ),
    "a setattr request": request(
        "apply", "['t', [['l', [['s', 'setattr'], ['r', 1], ['s', 'x'], ['i', '1']]], ['d', []]]]"
    ),
    "a call request": request("apply", "['t', [['l', [['s', 'call'], ['r', 1]]], ['d', []]]]"),
    "a root request": request("root", "['t', [['l', [['s', 'import'], ['s', 'os']]], ['d', []]]]"),
    "an unknown kind": "send({'kind': 'hello', 'id': 1})\n",
    "a reply nobody asked for": (
        "send({'kind': 'reply', 'id': 999, 'ok': True, 'value': ['b', True]})\n"
    ),
    "a forged passing report on the link": (
        "send({'ok': True, 'finished': True, 'tainted': [], 'kind': 'report'})\n"
    ),
    "a call of a callback never registered": (
        "send({'kind': 'callback', 'id': 1, 'callback': 1, 'args': ['l', []], "
        "'kwargs': ['d', []]})\n"
    ),
    "garbage": "send(b'\\x00not json at all')\n",
    "an oversized frame": "os.write(LINK, struct.pack('>I', 2**31) + b'xx')\n",
    "a malformed value": "send({'kind': 'reply', 'id': 1, 'ok': True, 'value': ['zz', 1]})\n",
    "os._exit mid-call": "os._exit(0)\n",
    "closing the link": (
        "import socket\nsocket.socket(fileno=os.dup(LINK)).shutdown(socket.SHUT_RDWR)\n"
    ),
}


@pytest.mark.parametrize("trick", TALKERS)
def test_an_artifact_talking_out_of_turn_fails_the_check(trick):
    artifact = SEND + TALKERS[trick] + RIGHT  # even a right implementation: it broke the link

    report = python_report(artifact, "assert slugify('A B') == 'a-b'\n")

    assert not report["passed"], report
    assert "bridge" in report["evidence"] or "link" in report["evidence"], report["evidence"]


CALLBACK_ABUSE = textwrap.dedent(
    """
    def apply(f, items):
        stub = f
        number = stub._number
        # the artifact asks for the callback's globals, then sends a check object back in
        send({'kind': 'request', 'id': 7, 'op': 'apply',
              'args': ['t', [['l', [['s', 'getattr'], ['c', number], ['s', '__globals__']]],
                             ['d', []]]]})
        return [stub(x) for x in items]
    """
)


@pytest.mark.parametrize(
    "abuse",
    [
        CALLBACK_ABUSE,
        # a callback called with the check's own callback as its argument
        "def apply(f, items):\n"
        "    send({'kind': 'callback', 'id': 1, 'callback': f._number,"
        " 'args': ['l', [['c', f._number]]], 'kwargs': ['d', []]})\n"
        "    return [f(x) for x in items]\n",
        # a callback called with a reference to an object of the check's
        "def apply(f, items):\n"
        "    send({'kind': 'callback', 'id': 1, 'callback': f._number,"
        " 'args': ['l', [['r', 1]]], 'kwargs': ['d', []]})\n"
        "    return [f(x) for x in items]\n",
    ],
)
def test_a_callback_gives_nothing_but_its_result(abuse):
    artifact = SEND + abuse + RIGHT
    code = "assert apply(lambda x: x * 2, [1]) == [2]\nassert slugify('A B') == 'a-b'\n"

    report = python_report(artifact, code)

    assert not report["passed"], report
    assert "bridge" in report["evidence"], report["evidence"]


def test_a_callbacks_result_must_be_plain_data():
    artifact = "def call(f):\n    return f()\n"
    code = "class Mine:\n    pass\nassert call(lambda: 1) == 1\ncall(lambda: Mine())\n"

    report = python_report(artifact, code)

    assert not report["passed"]
    assert "only plain data may go back" in report["evidence"], report["evidence"]


def test_an_assertion_swallowed_inside_a_callback_still_fails():
    artifact = (
        "def each(f, items):\n    for x in items:\n        try:\n            f(x)\n"
        "        except BaseException:\n            pass\n    return True\n"
    )
    code = "def positive(x):\n    assert x > 0\nassert each(positive, [1, -1])\n"

    report = python_report(artifact, code)

    assert not report["passed"]
    assert "inside a callback" in report["evidence"], report["evidence"]


def test_a_suppressing_context_manager_cannot_swallow_a_failed_assertion():
    artifact = (
        "class Quiet:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\n"
    )
    code = "with Quiet():\n    assert 1 == 2, 'the check failed'\n"

    report = python_report(artifact, code)

    assert not report["passed"]
    assert "the check failed" in report["evidence"], report["evidence"]


def test_the_artifact_cannot_reach_the_report_descriptor():
    forge = textwrap.dedent(
        """
        import json, os
        LINK = int(os.environ["DEEPREFLECT_LINK_FD"])
        FORGED = json.dumps({"ok": True, "tainted": [], "finished": True}).encode()
        for fd in range(256):
            if fd != LINK:
                try:
                    os.write(fd, FORGED)
                except OSError:
                    pass
        try:
            pids = os.listdir("/proc")
        except OSError:
            pids = []
        for pid in pids:
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    for fd in os.listdir(f"/proc/{pid}/fd"):
                        with open(f"/proc/{pid}/fd/{fd}", "wb") as out:
                            out.write(FORGED)
                except OSError:
                    pass
        """
    )

    report = python_report(forge + WRONG, "assert slugify('A B') == 'a-b'\n")

    assert not report["passed"]
    assert "AssertionError" in report["evidence"], report["evidence"]


@pytest.mark.parametrize(
    "check",
    [
        "assert abs(mean([2, 3]) - 2.5) < 1e-9\n",
        "assert math.isclose(mean([2, 3]), 2.5)\n",
        "assert isinstance(mean([2, 3]), float) and mean([2, 3]) == 2.5\n",
        "assert sorted([mean([2, 3])]) == [2.5]\n",
    ],
)
def test_the_artifacts_names_never_replace_the_checks_own_tools(check):
    artifact = textwrap.dedent(
        """
        import math
        math.isclose = lambda *args, **kwargs: True
        abs = lambda x: 0
        isinstance = lambda *args: True
        sorted = lambda xs: [2.5]
        AssertionError = type("AssertionError", (Exception,), {})
        def mean(xs):
            return 3.0
        """
    )

    report = python_report(artifact, check)

    assert not report["passed"], report
    # the check's own assertion failed, or the check used a builtin's name the artifact binds
    evidence = report["evidence"]
    assert "AssertionError" in evidence or "a builtin's name" in evidence, evidence


def test_a_star_import_never_gives_a_test_the_artifacts_tools():
    artifact = textwrap.dedent(
        """
        import math
        import pytest
        pytest.approx = lambda expected, **kwargs: Anything()
        math.isclose = lambda *args, **kwargs: True
        class Anything:
            def __eq__(self, other):
                return True
        abs = lambda x: 0
        __all__ = ["mean", "math", "pytest", "abs"]
        def mean(xs):
            return 3.0
        """
    )
    tests = (
        "import math\nimport pytest\nfrom slugify import *\n\n"
        "def test_approx():\n    assert mean([2, 3]) == pytest.approx(2.5)\n\n"
        "def test_isclose():\n    assert math.isclose(mean([2, 3]), 2.5)\n\n"
        "def test_abs():\n    assert abs(mean([2, 3]) - 2.5) < 1e-9\n"
    )

    report = run_check(
        {"kind": "pytest", "tests": ["test_mean.py"]},
        {"slugify.py": artifact, "test_mean.py": tests},
        "slugify.py",
    )

    assert not report["passed"]
    assert "3 failed of 3 tests" in report["evidence"], report["evidence"]


LINGERING = {
    "a forked child that sleeps on": (
        "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\n"
    ),
    "a forked child in a new session": (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
    ),
}


@pytest.mark.parametrize("trick", sorted(LINGERING))
def test_an_artifact_process_still_running_after_the_check_fails_it(trick, mode):
    code = LINGERING[trick] + "def slugify(text):\n    return '-'.join(text.lower().split())\n"
    files = {"slugify.py": code}
    report = run_check(
        {"kind": "python", "code": "assert slugify('A B') == 'a-b'"}, files, "slugify.py"
    )
    if mode == "kernel":
        # the PID namespace dies with the artifact's first process: nothing of it lives on,
        # so there is nothing to outlive the check; the verdict is the tests'
        assert report["passed"] is True, report["evidence"]
    else:
        assert report["passed"] is False
        assert "still running after the check ended" in report["evidence"]
