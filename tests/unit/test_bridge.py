"""The bridge's protocol and the verdict rules, without a sandbox: both ends over a socket
pair in this process (the artifact's end in a thread), or a scripted adversary in its place."""

from __future__ import annotations

import ast
import json
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent.checks import code
from agent.sandbox import SandboxResult, program_package
from agent.sandbox.bridge.artifact_side import ArtifactSide
from agent.sandbox.bridge.check_side import CheckSide
from agent.sandbox.bridge.remote import HandleRefused
from agent.sandbox.bridge.wire import BridgeError


class Liar:
    """Every comparison it is asked answers in its own favour."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return hash("a-b")

    def __lt__(self, other: object) -> bool:
        return True

    def __bool__(self) -> bool:
        return False

    def __contains__(self, item: object) -> bool:
        return True

    def __sub__(self, other: object) -> float:
        return 0.0

    def __float__(self) -> float:
        return 2.5


@dataclass
class Point:
    x: int
    y: int


class Box:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __contains__(self, item: object) -> bool:
        return True  # a lie: containment is decided by iterating


ROOTS: dict[str, Callable[..., Any]] = {
    "liar": Liar,
    "point": Point,
    "box": Box,
    "point_class": lambda: Point,
    "apply": lambda f, xs: [f(x) for x in xs],
    "call": lambda f: f(),
    "swallow": lambda f: _swallow(f),
}


def _swallow(f: Callable[[], Any]) -> str:
    try:
        f()
    except BaseException:
        return "swallowed"
    return "ran"


@pytest.fixture
def side() -> Iterator[CheckSide]:
    """A check's end linked to a real artifact's end serving ``ROOTS`` in a thread."""
    mine, theirs = socket.socketpair()
    server = threading.Thread(target=ArtifactSide(theirs, ROOTS).serve_forever, daemon=True)
    server.start()
    yield CheckSide(mine)
    mine.close()
    server.join(timeout=5)
    theirs.close()


def root(side: CheckSide, name: str, *args: Any) -> Any:
    return side.request("root", name, *args)


def refused(side: CheckSide, decide: Callable[[], Any]) -> str:
    """The evidence line of a decision the check refuses, recorded on ``side``."""
    with pytest.raises(HandleRefused) as info:
        decide()
    assert str(info.value) in side.refused
    return str(info.value)


@pytest.mark.parametrize(
    "decide",
    [
        lambda h, other: h == "a-b",
        lambda h, other: "a-b" == h,
        lambda h, other: h != "a-b",
        lambda h, other: h == other,
        lambda h, other: h != other,
        lambda h, other: h < other,
        lambda h, other: sorted([h, other]),
        lambda h, other: bool(h),
        lambda h, other: not h,
        lambda h, other: hash(h),
        lambda h, other: {h},
        lambda h, other: "a-b" in [h],
        lambda h, other: abs(h),
        lambda h, other: -h,
        lambda h, other: float(h),
        lambda h, other: int(h),
        lambda h, other: round(h),
        lambda h, other: h - 2.5,
        lambda h, other: h - other,
    ],
)
def test_a_handle_takes_part_in_no_decision(side, decide):
    liar, other = root(side, "liar"), root(side, "liar")

    line = refused(side, lambda: decide(liar, other))

    assert "the artifact returned a 'Liar' object" in line
    assert not side.tainted


def test_a_handle_equals_only_itself_and_each_arrival_is_a_new_handle(side):
    point = root(side, "point", 1, 2)

    assert point == point and not (point != point) and [point] == [point]
    line = refused(side, lambda: point == root(side, "point", 1, 2))
    assert "fields read as plain data" in line
    assert (point.x, point.y) == (1, 2)  # the idiom a check uses instead


def test_isinstance_against_the_artifacts_class_is_refused(side):
    point_class = root(side, "point_class")

    assert not isinstance(1, point_class)
    line = refused(side, lambda: isinstance(root(side, "point", 1, 2), point_class))
    assert "isinstance" in line


def test_containment_in_a_handle_iterates_it_and_compares_plain_items_here(side):
    box = root(side, "box", [1, 2])

    assert 2 in box and 3 not in box  # its __contains__ says True for everything
    assert len(box) == 2 and list(box) == [1, 2]
    refused(side, lambda: 1 in root(side, "box", [root(side, "liar")]))


def test_a_callback_runs_with_plain_data_and_answers_plain_data(side):
    assert root(side, "apply", lambda x: x * 2, [1, 2]) == [2, 4]

    with pytest.raises(TypeError, match="only plain data may go back"):
        root(side, "call", lambda: object())
    assert not side.tainted


def test_a_failed_assertion_swallowed_inside_a_callback_taints_the_check(side):
    def failing() -> None:
        raise AssertionError("expected 1")

    assert root(side, "swallow", failing) == "swallowed"
    assert side.tainted and "inside a callback" in side.tainted[0]


def test_objects_of_the_check_never_cross(side):
    class Mine:
        pass

    with pytest.raises(TypeError, match="cannot be given to the artifact"):
        root(side, "apply", len, [Mine()])


# -- a scripted adversary on the artifact's end ----------------------------------------------


def adversary(*frames: bytes) -> CheckSide:
    """A check's end whose peer, on the first request, sends ``frames`` and hangs up."""
    mine, theirs = socket.socketpair()

    def speak() -> None:
        theirs.recv(65536)
        for frame in frames:
            theirs.sendall(frame)
        theirs.close()

    threading.Thread(target=speak, daemon=True).start()
    return CheckSide(mine)


def frame(message: Any) -> bytes:
    data = message if isinstance(message, bytes) else json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


ATTACKS = {
    "a request of its own": frame({"kind": "request", "id": 1, "op": "apply", "args": ["n"]}),
    "a getattr on a guessed callback": frame(
        {"kind": "callback", "id": 1, "callback": 99, "args": ["l", []], "kwargs": ["d", []]}
    ),
    "a reply to another request": frame({"kind": "reply", "id": 2, "ok": True, "value": ["n"]}),
    "a reply with a non-integer id": frame(
        {"kind": "reply", "id": True, "ok": True, "value": ["n"]}
    ),
    "an unknown value tag": frame({"kind": "reply", "id": 1, "ok": True, "value": ["x"]}),
    "a malformed int": frame({"kind": "reply", "id": 1, "ok": True, "value": ["i", "zz"]}),
    "a malformed error": frame({"kind": "reply", "id": 1, "ok": False, "error": {"type": 3}}),
    "not JSON": frame(b"\xff\xfe"),
    "JSON nested past the parser's recursion": frame(b"[" * 200_000 + b"]" * 200_000),
    "a value nested past the depth limit": frame(
        {"kind": "reply", "id": 1, "ok": True, "value": json.loads("[" * 150 + "]" * 150)}
    ),
    "not an object": frame([1, 2]),
    "an oversized frame": struct.pack(">I", 2**31),
    "a closed link": b"",
    "half a frame": struct.pack(">I", 100) + b"{",
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_anything_but_an_answer_taints_the_check(attack):
    side = adversary(ATTACKS[attack])

    with pytest.raises(BridgeError):
        side.request("root", "run")

    assert side.tainted
    with pytest.raises(BridgeError, match="closed"):
        side.request("root", "run")  # a broken link is never used again


def test_words_nobody_asked_for_taint_the_check_at_its_end():
    mine, theirs = socket.socketpair()
    side = CheckSide(mine)
    theirs.sendall(frame({"kind": "reply", "id": 1, "ok": True, "value": ["b", True]}))

    side.finish()

    assert side.tainted and "nobody asked for" in side.tainted[0]


# -- the verdict: only when everything went as planned ---------------------------------------

REPORT = json.dumps({"ok": True, "tainted": [], "refused": [], "finished": True})


def result(**changes: Any) -> SandboxResult:
    fields: dict[str, Any] = {
        "returncode": 0,
        "stdout": "",
        "stderr": "",
        "timed_out": False,
        "killed_reason": None,
        "duration_s": 0.1,
        "report": REPORT,
    }
    return SandboxResult(**{**fields, **changes})


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"timed_out": True, "killed_reason": "timeout", "returncode": -9}, "timed out"),
        ({"killed_reason": "memory", "returncode": -9}, "memory"),
        ({"killed_reason": "cpu", "returncode": -24}, "CPU"),
        ({"killed_reason": "output"}, "output"),
        ({"returncode": -15}, "signal"),
        ({"returncode": 1}, "status 1"),
        ({"returncode": None}, "signal"),
        (
            {"report": REPORT.replace('"tainted": []', '"tainted": ["a request of its own"]')},
            "broken",
        ),
        ({"report": REPORT.replace('"tainted": [], ', "")}, "incomplete"),
        (
            {"report": REPORT.replace('"refused": []', '"refused": ["the artifact returned"]')},
            "the artifact returned",
        ),
        ({"report": REPORT.replace('"refused": [], ', "")}, "incomplete"),
        ({"report": REPORT.replace("true}", "false}")}, "exited"),
    ],
)
def test_a_written_report_is_no_pass_unless_the_run_went_as_planned(monkeypatch, changes, reason):
    check = result(**changes)
    monkeypatch.setattr(code, "_run", lambda *args, **kwargs: (check, result(report="")))

    passed, _score, evidence = code._python_verdict({"m.py": "x = 1\n"}, "m.py", "pass\n", 5.0)

    assert not passed
    assert reason in evidence


def test_a_run_that_went_as_planned_passes(monkeypatch):
    monkeypatch.setattr(code, "_run", lambda *args, **kwargs: (result(), result(report="")))

    assert code._python_verdict({"m.py": "x = 1\n"}, "m.py", "pass\n", 5.0)[0]


def test_the_shipped_bridge_is_a_package_of_standard_library_modules():
    shipped = program_package("bridge", shipped_as="__deepreflect_bridge__")

    assert "__deepreflect_bridge__/__init__.py" in shipped
    for path, text in shipped.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [str(node.module)]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue  # a relative import: a module of the shipped package itself
            assert {n.split(".")[0] for n in names} <= sys.stdlib_module_names, (path, names)


def test_an_unknown_sandbox_package_is_an_error():
    with pytest.raises(ValueError, match="unknown sandbox package"):
        program_package("agent", shipped_as="x")
