"""The JSON goal: a hidden JSON Schema, then the values computed from the stock list."""

import math

from grading import Verdict, json_document, missing, schema_verdict

PATH = "inventory.json"
STOCK = [("A-100", 4, 2.50), ("B-220", 10, 1.25), ("C-003", 0, 99.00), ("A-101", 3, 10.00)]
SCHEMA = {
    "type": "object",
    "required": ["items", "total_value", "out_of_stock"],
    "additionalProperties": False,
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["sku", "qty", "price"],
                "additionalProperties": False,
                "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer", "minimum": 0},
                    "price": {"type": "number", "minimum": 0},
                },
            },
        },
        "total_value": {"type": "number"},
        "out_of_stock": {"type": "array", "items": {"type": "string"}},
    },
}


def grade(files: dict[str, str], run: dict | None = None) -> Verdict:
    if (absent := missing(files, [PATH])) is not None:
        return absent
    passed, evidence = schema_verdict(files, PATH, SCHEMA)
    if not passed:
        return False, f"schema: {evidence}"
    try:
        doc = json_document(files, PATH)
    except ValueError as exc:
        return False, str(exc)
    want = sorted(STOCK)
    got = [(i["sku"], i["qty"], i["price"]) for i in doc["items"]]
    if [(s, q) for s, q, _ in got] != [(s, q) for s, q, _ in want] or not all(
        math.isclose(g[2], w[2]) for g, w in zip(got, want, strict=True)
    ):
        return False, f"items are {got}, expected {want} (sorted by sku)"
    total = sum(q * p for _, q, p in STOCK)
    if isinstance(doc["total_value"], bool) or not math.isclose(doc["total_value"], total):
        return False, f"total_value is {doc['total_value']!r}, expected {total}"
    if doc["out_of_stock"] != ["C-003"]:
        return False, f"out_of_stock is {doc['out_of_stock']!r}, expected ['C-003']"
    return True, "schema and every value match"
