"""The package goal: hidden tests, and each module really uses the other's function."""

from pathlib import Path

from grading import Verdict, hidden_pytest, imported_names, missing, parsed_module

WORDS, COUNT = "textkit/words.py", "textkit/count.py"
# module -> (the other module, the function it must use from it)
USES = {WORDS: ("textkit.count", "word_lengths"), COUNT: ("textkit.words", "split_words")}


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    if (absent := missing(files, [WORDS, COUNT])) is not None:
        return absent
    for path, (other, function) in USES.items():
        tree = parsed_module(files, path)
        if isinstance(tree, str):
            return False, tree
        if function not in imported_names(tree, other):
            return False, f"{path} does not use {function} from {other}"
    tests = Path(__file__).with_name("hidden_tests.py")
    init = ["textkit/__init__.py"] if (files.get("textkit/__init__.py") or "").strip() else []
    return hidden_pytest(files, [WORDS, COUNT, *init], tests)  # no __init__: a namespace package
