"""Hidden tests of the package goal: both modules, called from each side."""

from textkit.count import count_words, word_lengths
from textkit.words import longest_word, split_words


def test_split_words():
    assert split_words("Hello, World! It's 2 o'clock.") == [
        "hello",
        "world",
        "it's",
        "2",
        "o'clock",
    ]
    assert split_words("  ") == []


def test_word_lengths():
    assert word_lengths("a bb ccc bb") == {"a": 1, "bb": 2, "ccc": 3}


def test_count_words():
    assert count_words("one, two; three") == 3
    assert count_words("") == 0


def test_longest_word():
    assert longest_word("the quick brownish fox") == "brownish"
    assert longest_word("ab cd") == "ab"
    assert longest_word("") == ""
