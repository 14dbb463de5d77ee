"""A jsonb argument is encoded strictly before anything is sent: what is not JSON raises TypeError naming its
place. A list of plain numbers (a vector as JSON numbers) is taken whole rather than number by number, so these
tests hold it to the same answers as the element-by-element walk."""

from __future__ import annotations

import enum
import json

import pytest

from memsub._calls import json_text


class Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize(("value", "expected"), [
    ([0.25, -1.5, 3], [0.25, -1.5, 3]),
    ((1, 2.5), [1, 2.5]),  # a tuple is an array
    ([1e308, 1e308], [1e308, 1e308]),  # finite numbers whose sum is not
    ([1.5, 10**400], [1.5, 10**400]),  # an int too large for a float, beside a float
    ([True, 2.0], [True, 2.0]),  # a bool is JSON's own
    ([Level.LOW, 0.5], [1, 0.5]),  # an int subclass
    ([], []),
])
def test_lists_of_numbers_are_the_json_they_were(value: object, expected: object) -> None:
    assert json.loads(json_text({"vector": value}, "payload")) == {"vector": expected}


@pytest.mark.parametrize(("value", "place"), [
    ([0.5, float("nan"), 0.25], r"payload\.vector\[1\]: nan"),
    ([0.5] * 383 + [float("inf")], r"payload\.vector\[383\]: inf"),
    ([float("-inf"), float("inf")], r"payload\.vector\[0\]: -inf"),
    ([0.5, {1, 2}], r"payload\.vector\[1\]: a set is not JSON"),
])
def test_a_number_that_is_not_json_is_named_by_its_place(value: object, place: str) -> None:
    with pytest.raises(TypeError, match=place):
        json_text({"vector": value}, "payload")
