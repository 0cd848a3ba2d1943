"""Order prices."""


def book_price(price: float, quantity: int, member: bool) -> float:
    total = price * quantity
    if member:
        total = total - total * 0.10
    if total > 100:
        total = total - 5
    return round(total, 2)


def music_price(price: float, quantity: int, member: bool) -> float:
    total = price * quantity
    if member:
        total = total - total * 0.10
    if total > 100:
        total = total - 5
    return round(total * 1.2, 2)
