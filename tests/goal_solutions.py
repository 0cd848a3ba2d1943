"""Known-good and known-bad artifact sets of the goal suite (bench/goals/): what the scripted
solver writes, and what every hidden grader must pass and must fail."""

from __future__ import annotations

ROMAN = """def to_roman(n: int) -> str:
    if not isinstance(n, int) or not 1 <= n <= 3999:
        raise ValueError(f"{n} is out of range")
    out = []
    for value, numeral in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),
                           (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),
                           (4, "IV"), (1, "I")):
        while n >= value:
            out.append(numeral)
            n -= value
    return "".join(out)
"""
STATS_FIXED = '''"""Small statistics helpers."""


def mean(values: list[float]) -> float:
    """The arithmetic mean; ValueError for no values."""
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return (ordered[middle - 1] + ordered[middle]) / 2
    return ordered[middle]
'''
WORDS = """import re

from textkit import count


def split_words(text):
    return [w.lower() for w in re.findall(r"[A-Za-z0-9']+", text)]


def longest_word(text):
    lengths = count.word_lengths(text)
    best = ""
    for word in split_words(text):
        if lengths[word] > len(best):
            best = word
    return best
"""
COUNT = """def word_lengths(text):
    from textkit.words import split_words

    return {w: len(w) for w in split_words(text)}


def count_words(text):
    from textkit.words import split_words

    return len(split_words(text))
"""
COUNT_SELF_CONTAINED = """import re


def word_lengths(text):
    return {w: len(w) for w in re.findall(r"[a-z0-9']+", text.lower())}


def count_words(text):
    return len(re.findall(r"[a-z0-9']+", text.lower()))
"""
INVENTORY = (
    '{"items": [{"sku": "A-100", "qty": 4, "price": 2.5}, {"sku": "A-101", "qty": 3, "price": 10},'
    ' {"sku": "B-220", "qty": 10, "price": 1.25}, {"sku": "C-003", "qty": 0, "price": 99.0}],'
    ' "total_value": 52.5, "out_of_stock": ["C-003"]}'
)
TOP_GENRES = (
    "SELECT g.Name, COUNT(*) AS track_count FROM Track t JOIN Genre g USING (GenreId)\n"
    "GROUP BY g.Name ORDER BY track_count DESC, g.Name LIMIT 3;\n"
)
REPORT = (
    "# Choosing a vector index\n\nHNSW gives high recall at low latency but keeps its graph in "
    "memory ([1](https://docs.example.org/vector-search/hnsw)). IVF-PQ compresses vectors when "
    "memory is the constraint ([2](https://blog.example.net/choosing-a-vector-index)).\n"
)
PRICING = '''"""Order prices."""


def discounted_total(price: float, quantity: int, member: bool) -> float:
    total = price * quantity
    if member:
        total = total - total * 0.10
    if total > 100:
        total = total - 5
    return total


def book_price(price: float, quantity: int, member: bool) -> float:
    return round(discounted_total(price, quantity, member), 2)


def music_price(price: float, quantity: int, member: bool) -> float:
    return round(discounted_total(price, quantity, member) * 1.2, 2)
'''
DEPLOY = '{"service": "ledger", "region": "eu-north-1", "replicas": 3}'

GOOD: dict[str, dict[str, str]] = {
    "function": {"roman.py": ROMAN},
    "bughunt": {"stats.py": STATS_FIXED},
    "package": {"textkit/__init__.py": "", "textkit/words.py": WORDS, "textkit/count.py": COUNT},
    "json": {"inventory.json": INVENTORY},
    "sql": {"top_genres.sql": TOP_GENRES},
    "citations": {"report.md": REPORT},
    "refactor": {"pricing.py": PRICING},
    "escalation": {"deploy.json": DEPLOY},
}

# Several wrong answers per goal, each wrong in a way a model plausibly is.
BAD: dict[str, list[dict[str, str]]] = {
    "function": [
        {"roman.py": ROMAN.replace('(4, "IV"), ', "")},  # 4 as IIII
        {"roman.py": ROMAN.replace("raise ValueError", "return ''  #")},  # no ValueError
        {"roman.py": "def to_roman(n):\n    import pytest\n    pytest.skip('nothing')\n"},
        {
            "roman.py": "def to_roman(n):\n    return 'I' * n\n",
            "conftest.py": "collect_ignore = ['.']\n",
        },
        {"roman.py": "def to_roman(n:\n"},
        {},
    ],
    "bughunt": [
        {
            "stats.py": STATS_FIXED.replace(
                "ordered[middle - 1] + ordered[middle]", "ordered[middle] + ordered[middle + 1]"
            )
        },
        {
            "stats.py": STATS_FIXED.replace(
                "return sum(values) / len(values)", "return sum(values) // len(values)"
            )
        },
        {"stats.py": STATS_FIXED.replace('raise ValueError("median of no values")', "return 0.0")},
    ],
    "package": [
        {"textkit/words.py": WORDS, "textkit/count.py": COUNT_SELF_CONTAINED},  # no mutual use
        {
            "textkit/words.py": WORDS.replace("[A-Za-z0-9']+", "[A-Za-z]+"),
            "textkit/count.py": COUNT,
        },
        {"textkit/words.py": WORDS},
        {"textkit/words.py": WORDS, "textkit/count.py": "def word_lengths(text:\n"},
    ],
    "json": [
        {"inventory.json": INVENTORY.replace("52.5", "52")},
        {"inventory.json": INVENTORY.replace('"qty": 3', '"qty": "3"')},
        {"inventory.json": INVENTORY.replace('"out_of_stock": ["C-003"]', '"out_of_stock": []')},
        {"inventory.json": INVENTORY[:-1] + ', "note": "extra"}'},
        {"inventory.json": INVENTORY.replace('{"sku": "A-101"', '{"sku": "A-1O1"')},
        {"inventory.json": "```json\n" + INVENTORY + "\n```"},
    ],
    "sql": [
        {"top_genres.sql": TOP_GENRES.replace("LIMIT 3", "LIMIT 4")},
        {"top_genres.sql": TOP_GENRES.replace("DESC", "ASC")},
        {"top_genres.sql": "SELECT Name, 28 FROM Genre LIMIT 3"},
        {"top_genres.sql": "DROP TABLE Track"},
    ],
    "citations": [
        {
            "report.md": REPORT.replace(
                "https://blog.example.net/choosing-a-vector-index",
                "https://en.wikipedia.org/wiki/HNSW",
            )
        },
        {
            "report.md": REPORT.replace(
                "https://blog.example.net/choosing-a-vector-index",
                "https://docs.example.org/vector-search/hnsw",
            )
        },  # 1 source
        {
            "report.md": REPORT.replace(
                "https://docs.example.org/vector-search/hnsw",
                "https://docs.example.org/vector-search/hnsw/extra",
            )
        },
        {"report.md": "# Report\nNo sources.\n"},
    ],
    "refactor": [
        {"pricing.py": PRICING.replace(" * 1.2", "")},  # behaviour changed
        {"pricing.py": PRICING.replace("total > 100", "total >= 100")},
        {
            "pricing.py": PRICING.replace("def discounted_total", "def _discounted_total").replace(
                "return round(discounted_total", "return round(_discounted_total"
            )
        },
        {
            "pricing.py": PRICING.replace(
                "    return round(discounted_total(price, quantity, member) * 1.2, 2)",
                "    total = price * quantity\n    if member:\n        total = total * 0.9\n"
                "    if total > 100:\n        total -= 5\n"
                "    discounted_total(price, quantity, member)\n"
                "    return round(total * 1.2, 2)",
            )
        },  # still duplicated
    ],
    "escalation": [
        {"deploy.json": DEPLOY.replace("eu-north-1", "us-east-1")},  # guessed
        {"deploy.json": DEPLOY.replace("3}", '"3"}')},
        {"deploy.json": '{"service": "ledger", "region": "eu-north-1"}'},
    ],
}
