"""agent.controller.stubs: a draft that handed the prompt back (only a docstring)."""

from __future__ import annotations

from agent.controller.stubs import unimplemented_functions

STUB = 'def add(a, b):\n    """Return a + b."""\n'


def test_a_function_with_only_its_docstring_is_unimplemented():
    assert unimplemented_functions("solution.py", STUB) == ["add"]
    nested = 'class K:\n    def m(self):\n        """Doc."""\n\nasync def f():\n    "x"\n'
    assert sorted(unimplemented_functions("k.py", nested)) == ["f", "m"]


def test_implemented_placeholder_and_other_files_are_not():
    assert unimplemented_functions("s.py", STUB + "    return a + b\n") == []
    assert unimplemented_functions("s.py", "def f():\n    pass\n") == []  # a placeholder
    assert unimplemented_functions("s.py", "def f():\n    ...\n") == []
    assert unimplemented_functions("notes.md", STUB) == []
    assert unimplemented_functions("s.py", "def f(:\n") == []  # the check says why
    assert unimplemented_functions("s.py", "x = 1\n") == []
