"""Hidden tests of the refactor goal: today's behaviour, value for value."""

import pytest
from pricing import book_price, discounted_total, music_price

CASES = [
    (10.0, 1, False),
    (10.0, 1, True),
    (30.0, 4, False),
    (30.0, 4, True),
    (99.99, 1, True),
    (50.0, 3, True),
    (0.0, 5, True),
    (12.5, 8, False),
]


def _reference(price, quantity, member):
    total = price * quantity
    if member:
        total = total - total * 0.10
    if total > 100:
        total = total - 5
    return total


@pytest.mark.parametrize(("price", "quantity", "member"), CASES)
def test_book_price_unchanged(price, quantity, member):
    assert book_price(price, quantity, member) == round(_reference(price, quantity, member), 2)


@pytest.mark.parametrize(("price", "quantity", "member"), CASES)
def test_music_price_unchanged(price, quantity, member):
    want = round(_reference(price, quantity, member) * 1.2, 2)
    assert music_price(price, quantity, member) == want


@pytest.mark.parametrize(("price", "quantity", "member"), CASES)
def test_discounted_total(price, quantity, member):
    assert discounted_total(price, quantity, member) == pytest.approx(
        _reference(price, quantity, member)
    )
