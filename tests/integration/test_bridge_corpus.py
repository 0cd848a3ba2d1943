"""No correct artifact loses: the idioms Python tests use keep working through the bridge.

One artifact package and one test file hold the whole corpus (classes and their methods, objects
compared by their fields read as plain data (an artifact's object takes part in no ``==``,
ordering or truth test of the check's: docs/security.md), generators, iterators, context managers,
the artifact's own exceptions under ``pytest.raises``, fixtures, parametrize, callbacks,
``pytest.approx``), so each isolation level pays for one sandboxed run; a second test runs it as
``python``.
"""

from __future__ import annotations

import textwrap

from agent.checks import run_check
from tests.fakes import both_isolation_levels

mode = both_isolation_levels()

SHAPES = textwrap.dedent(
    """
    import contextlib
    import datetime
    import decimal
    import fractions
    from collections import Counter, OrderedDict, namedtuple
    from dataclasses import dataclass, field


    class ShapeError(ValueError):
        pass


    class NegativeSide(ShapeError):
        def __init__(self, side):
            super().__init__(f"negative side {side}")
            self.side = side


    @dataclass
    class Point:
        x: float
        y: float

        def moved(self, dx, dy):
            return Point(self.x + dx, self.y + dy)


    @dataclass(frozen=True, order=True)
    class Version:
        major: int
        minor: int


    @dataclass
    class Polygon:
        points: list = field(default_factory=list)

        def add(self, point):
            self.points.append(point)
            return self


    class Square:
        def __init__(self, side):
            if side < 0:
                raise NegativeSide(side)
            self.side = side

        def area(self):
            return self.side * self.side

        @property
        def perimeter(self):
            return 4 * self.side

        def __repr__(self):
            return f"Square({self.side})"


    class Stack:
        def __init__(self):
            self._items = []

        def push(self, item):
            self._items.append(item)
            return self

        def pop(self):
            if not self._items:
                raise IndexError("pop from an empty stack")
            return self._items.pop()

        def __len__(self):
            return len(self._items)

        def __iter__(self):
            return iter(reversed(self._items))

        def __getitem__(self, index):
            return self._items[index]


    class Vector:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __add__(self, other):
            return Vector(self.x + other.x, self.y + other.y)

        def __mul__(self, k):
            return Vector(self.x * k, self.y * k)

        __rmul__ = __mul__

        def __eq__(self, other):
            return isinstance(other, Vector) and (self.x, self.y) == (other.x, other.y)

        def norm(self):
            return (self.x**2 + self.y**2) ** 0.5


    class Countdown:
        def __init__(self, start):
            self.current = start

        def __iter__(self):
            return self

        def __next__(self):
            if self.current <= 0:
                raise StopIteration
            self.current -= 1
            return self.current + 1


    def squares(n):
        for i in range(n):
            yield i * i


    def fib():
        a, b = 0, 1
        while True:
            yield a
            a, b = b, a + b


    class Recorder:
        def __init__(self):
            self.events = []

        def __enter__(self):
            self.events.append("enter")
            return self

        def __exit__(self, kind, exc, tb):
            self.events.append("exit" if kind is None else f"exit:{kind.__name__}")
            return kind is not None and issubclass(kind, KeyError)


    @contextlib.contextmanager
    def opened(note):
        note("open")
        yield "resource"
        note("close")


    def apply(f, items):
        return [f(x) for x in items]


    def sort_by(items, key):
        return sorted(items, key=key)


    def mapped(f, items):
        return list(map(f, items))


    def retry(f, times):
        for attempt in range(times):
            try:
                return f(attempt)
            except ValueError:
                continue
        return None


    def mean(xs):
        return sum(xs) / len(xs)


    def word_counts(text):
        return Counter(text.split())


    def ordered():
        return OrderedDict([("b", 1), ("a", 2)])


    Pair = namedtuple("Pair", "left right")


    def pair():
        return Pair(1, 2)


    def money(text):
        return decimal.Decimal(text)


    def half():
        return fractions.Fraction(1, 2)


    def tomorrow(day):
        return day + datetime.timedelta(days=1)


    def origin():
        return Point(0, 0)


    def complex_root():
        return complex(0, 1)


    def int_type():
        return int


    def missing(key):
        raise KeyError(key)
    """
)

TESTS = textwrap.dedent(
    """
    import datetime
    import decimal
    import fractions

    import pytest

    from shapes import (
        NegativeSide, Point, Polygon, Recorder, ShapeError, Square, Stack, Countdown, Vector,
        Version, apply, complex_root, fib, half, int_type, mapped, mean, missing, money, opened,
        ordered, origin, pair, retry, sort_by, squares, tomorrow, word_counts,
    )


    @pytest.fixture
    def stack():
        return Stack().push(1).push(2)


    def test_class_and_methods():
        square = Square(3)
        assert square.area() == 9
        assert square.perimeter == 12
        assert square.side == 3
        assert repr(square) == "Square(3)"
        assert str(square) == "Square(3)"
        assert f"{square}" == "Square(3)"
        square.side = 4
        assert square.area() == 16


    def xy(point):
        return (point.x, point.y)


    def test_objects_compare_by_their_fields_read_as_plain_data():
        assert xy(Point(1, 2)) == (1, 2)
        assert xy(Point(1, 2)) != xy(Point(2, 1))
        assert xy(origin()) == (0, 0)
        assert isinstance(NegativeSide(1), ShapeError)
        assert xy(origin().moved(1, 2)) == (1, 2)
        assert Point(1, 2).x == 1
        assert (1, 2) in [xy(p) for p in [Point(0, 0), Point(1, 2)]]
        assert {xy(Point(1, 2)): "a"}[(1, 2)] == "a"
        polygon = Polygon().add(Point(0, 0)).add(Point(1, 1))
        assert [xy(p) for p in polygon.points] == [(0, 0), (1, 1)]


    def test_dataclass_order_by_fields():
        versions = [Version(2, 0), Version(1, 5)]
        assert sorted((v.major, v.minor) for v in versions) == [(1, 5), (2, 0)]


    def test_operators_of_a_class():
        assert xy(Vector(1, 2) + Vector(3, 4)) == (4, 6)
        assert xy(Vector(1, 2) * 3) == (3, 6)
        assert xy(2 * Vector(1, 1)) == (2, 2)
        assert Vector(3, 4).norm() == 5.0


    def test_a_handle_equals_itself(stack):
        assert stack == stack
        assert len(stack.push(3)) == 3


    def test_fixture_stack(stack):
        assert len(stack) == 2
        assert list(stack) == [2, 1]
        assert stack[0] == 1
        assert 2 in stack
        assert 5 not in stack
        assert stack.pop() == 2
        assert stack.pop() == 1
        assert len(stack) == 0
        with pytest.raises(IndexError, match="empty"):
            stack.pop()


    @pytest.mark.parametrize("n, expected", [(0, []), (1, [0]), (4, [0, 1, 4, 9])])
    def test_generators(n, expected):
        assert list(squares(n)) == expected
        assert sum(squares(n)) == sum(expected)


    def test_infinite_generator_and_iterators():
        numbers = fib()
        assert [next(numbers) for _ in range(6)] == [0, 1, 1, 2, 3, 5]
        assert list(Countdown(3)) == [3, 2, 1]
        assert [x for x in Countdown(2)] == [2, 1]
        for value in Countdown(1):
            assert value == 1
        assert list(zip(squares(3), Countdown(3))) == [(0, 3), (1, 2), (4, 1)]


    def test_context_managers():
        with Recorder() as recorder:
            assert recorder.events == ["enter"]
        assert recorder.events == ["enter", "exit"]
        with Recorder() as suppressing:
            missing("swallowed by the artifact, as its own error")
        assert suppressing.events == ["enter", "exit:KeyError"]
        log = []
        with opened(log.append) as resource:  # a list passed in would be a copy
            assert resource == "resource"
        assert log == ["open", "close"]


    def test_the_artifacts_exceptions():
        with pytest.raises(NegativeSide, match="negative side -1") as info:
            Square(-1)
        assert info.value.side == -1
        with pytest.raises(ShapeError):
            Square(-2)
        with pytest.raises(ValueError):
            Square(-3)
        assert issubclass(NegativeSide, ShapeError)


    def test_callbacks():
        assert apply(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]
        assert sort_by(["bb", "a", "ccc"], key=len) == ["a", "bb", "ccc"]
        assert sort_by(["b", "A", "c"], key=str.lower) == ["A", "b", "c"]
        assert sort_by([3, 1, 2], key=lambda x: -x) == [3, 2, 1]
        assert mapped(str, [1, 2]) == ["1", "2"]
        assert mapped(lambda p: p.x, [Point(1, 0), Point(2, 0)]) == [1, 2]
        calls = []

        def flaky(attempt):
            calls.append(attempt)
            if attempt < 2:
                raise ValueError("not yet")
            return "done"

        assert retry(flaky, 5) == "done"
        assert calls == [0, 1, 2]


    def test_floats_and_values():
        assert mean([1.0, 2.0, 4.0]) == pytest.approx(7 / 3)
        assert abs(mean([1, 2]) - 1.5) < 1e-9
        assert word_counts("a b a") == {"a": 2, "b": 1}
        assert list(ordered()) == ["b", "a"]
        assert pair() == (1, 2)
        assert money("1.10") == decimal.Decimal("1.10")
        assert half() == fractions.Fraction(1, 2)
        assert tomorrow(datetime.date(2024, 2, 28)) == datetime.date(2024, 2, 29)
        assert complex_root() ** 2 == -1
        assert int_type() is int
    """
)

CHECK_CODE = textwrap.dedent(
    """
    assert (Point(1, 2).x, Point(1, 2).y) == (1, 2) and origin().x == 0
    assert list(squares(3)) == [0, 1, 4]
    assert apply(lambda x: x + 1, [1]) == [2]
    try:
        Square(-1)
    except NegativeSide as error:
        assert error.side == -1
    else:
        raise AssertionError("no error")
    assert mean([1, 2]) == 1.5
    """
)


def test_the_legit_corpus_passes_as_pytest():
    report = run_check(
        {"kind": "pytest", "tests": ["test_shapes.py"], "timeout_s": 60},
        {"shapes.py": SHAPES, "test_shapes.py": TESTS},
        "shapes.py",
    )

    assert report["passed"], report["evidence"]
    assert report["evidence"].startswith("14 of 14 tests passed")


def test_the_legit_corpus_passes_as_python():
    report = run_check({"kind": "python", "code": CHECK_CODE}, {"shapes.py": SHAPES}, "shapes.py")

    assert report["passed"], report["evidence"]
