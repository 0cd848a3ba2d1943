"""Hidden regression tests of the bughunt goal."""

import pytest
from stats import mean, median


def test_even_median_regression():
    assert median([1, 2, 3, 4]) == 2.5
    assert median([4, 1, 3, 2]) == 2.5
    assert median([10, 20]) == 15


def test_odd_median_unchanged():
    assert median([3, 1, 2]) == 2
    assert median([5]) == 5


def test_mean_unchanged():
    assert mean([1, 2, 3, 4]) == 2.5


def test_empty_raises():
    with pytest.raises(ValueError):
        median([])
    with pytest.raises(ValueError):
        mean([])
