from __future__ import annotations

import pytest

from weft_core.checks import json_subset, values_equal
from weft_core.checks._values import EvalFailure, compare


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (1, 1.0),
        ("42", 42),
        (42, "42.0"),
        (1, True),
        (0, False),
        (0.1 + 0.2, 0.3),
        ("a", "a"),
        (None, None),
        ('{"a": 1}', {"a": 1.0}),
        ("[1, 2]", [1, 2]),
    ],
)
def test_equal(actual: object, expected: object) -> None:
    assert values_equal(actual, expected)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("A", "a"),
        ("10", "10.0"),
        ("true", True),
        (None, 0),
        (0, None),
        ("", None),
        (1, 2),
        (float("nan"), float("nan")),
        ({"a": 1, "b": 2}, {"a": 1}),
        ([1, 2], [2, 1]),
        ("not json", {"a": 1}),
    ],
)
def test_not_equal(actual: object, expected: object) -> None:
    assert not values_equal(actual, expected)


def test_json_subset() -> None:
    assert json_subset({"a": 1}, {"a": 1, "b": 2})
    assert json_subset({"a": {"b": [2]}}, {"a": {"b": [1, 2, 3]}, "c": 0})
    assert json_subset([{"id": 2}], [{"id": 1}, {"id": 2, "x": 1}])
    assert json_subset({"a": 1}, '{"a": "1", "b": 2}')
    assert not json_subset({"a": 1}, {"b": 1})
    assert not json_subset([3], [1, 2])
    assert not json_subset({"a": 1}, [{"a": 1}])


def test_compare_ordering() -> None:
    assert compare("2026-02-01", "gt", "2026-01-31")
    assert compare("10", "gt", "9")  # numeric text orders as numbers
    assert compare(5, "le", "5.0")
    assert not compare(None, "lt", 3)
    with pytest.raises(EvalFailure, match="cannot order"):
        compare("abc", "gt", 3)
    with pytest.raises(EvalFailure, match="needs a list"):
        compare(1, "in", 1)
    with pytest.raises(EvalFailure, match="cannot contain"):
        compare("abc", "contains", 1)


def test_primary_key_lookup_agrees_with_a_full_scan() -> None:
    from weft_core.checks._evaluate import _matching
    from weft_core.checks._values import where_matches
    from weft_core.state import DBState, TableSchema

    int_rows = {
        "1": {"id": 1, "v": "a"},
        "10": {"id": 10, "v": "b"},
        "rowid:3": {"id": None, "v": "c"},
    }
    text_rows = {
        "7": {"code": "7", "v": "x"},
        "7.0": {"code": "7.0", "v": "y"},
        "abc": {"code": "abc", "v": "z"},
    }
    real_rows = {"2.0": {"k": 2.0, "v": "r"}, "2.5": {"k": 2.5, "v": "s"}}
    db = DBState(
        tables={"i": int_rows, "t": text_rows, "r": real_rows},
        schemas={
            "i": TableSchema(columns=["id", "v"], primary_key=["id"]),
            "t": TableSchema(columns=["code", "v"], primary_key=["code"]),
            "r": TableSchema(columns=["k", "v"], primary_key=["k"]),
        },
    )
    probes = [
        1,
        10,
        "10",
        10.0,
        "1.0",
        True,
        None,
        7,
        "7",
        "7.0",
        7.0,
        "abc",
        2,
        2.0,
        "2.5",
        2.5,
        3,
        "nope",
    ]
    for table, column in (("i", "id"), ("t", "code"), ("r", "k")):
        for probe in probes:
            where = {column: probe}
            scan = [r for r in db.tables[table].values() if where_matches(r, where)]
            fast = _matching(db, table, where, "final")
            assert sorted(map(repr, fast)) == sorted(map(repr, scan)), (table, probe)
