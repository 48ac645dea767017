"""Value semantics of the check language: bindings, type-tolerant comparison, JSON-subset match.

Tolerance is principled, not fuzzy: SQLite and MCP text blur number types, so numbers compare
as numbers whatever their spelling (1, 1.0, "1", True for a 0/1 column); strings compare exactly
and case-sensitively; a JSON text column compares to an expected object or list by its parsed
value; objects match as subsets (every expected key present and matching, extra keys allowed).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

BINDING_KEY = "$binding"
# Operator form of a `where` value: {"$gt": 5}. Plain values mean equality.
WHERE_OPS = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$ge": "ge",
    "$lt": "lt",
    "$le": "le",
    "$contains": "contains",
    "$in": "in",
    "$not_in": "not_in",
    "$exists": "exists",
}


class EvalFailure(Exception):
    """A data problem that fails one check (never the whole evaluation)."""


def short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- bindings


def is_binding_ref(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {BINDING_KEY}


def lookup_binding(ref: Any, bindings: Mapping[str, Any]) -> Any:
    if not isinstance(ref, str) or not ref.strip():
        raise EvalFailure(
            f"binding reference must be a non-empty 'name.field' string, got {short(ref)}"
        )
    name, *path = ref.split(".")
    if name not in bindings:
        known = ", ".join(sorted(bindings)) or "none"
        raise EvalFailure(f"unknown binding {ref!r}: no binding named {name!r} (known: {known})")
    value = bindings[name]
    walked = name
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and part.isdigit()
            and int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            fields = ", ".join(sorted(map(str, value))) if isinstance(value, Mapping) else "none"
            raise EvalFailure(
                f"unknown binding {ref!r}: {walked!r} has no field {part!r} (fields: {fields})"
            )
        walked += "." + part
    return value


def resolve(value: Any, bindings: Mapping[str, Any]) -> Any:
    """`value` with every `{"$binding": "name.field"}` replaced by the bound value."""
    if is_binding_ref(value):
        return lookup_binding(value[BINDING_KEY], bindings)
    if isinstance(value, Mapping):
        return {k: resolve(v, bindings) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [resolve(v, bindings) for v in value]
    return value


def contains_binding(value: Any) -> bool:
    if is_binding_ref(value):
        return True
    if isinstance(value, Mapping):
        return any(contains_binding(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(contains_binding(v) for v in value)
    return False


# ---------------------------------------------------------------- comparison


def as_number(value: Any) -> int | float | None:
    """The number `value` denotes, or None (bools are 0/1: SQLite has no boolean type)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value if not (isinstance(value, float) and math.isnan(value)) else None
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _numbers_equal(a: int | float, b: int | float) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    # REAL columns carry binary rounding (0.1 + 0.2); a relative tolerance of 1e-9 absorbs it
    # without ever equating values a person would call different.
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                return value
    return value


def values_equal(actual: Any, expected: Any) -> bool:
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, str) and isinstance(actual, str):
        return actual == expected
    if isinstance(expected, Mapping | list | tuple):
        actual = _maybe_json(actual)
        if isinstance(expected, Mapping):
            return (
                isinstance(actual, Mapping)
                and set(actual) == set(expected)
                and all(values_equal(actual[k], v) for k, v in expected.items())
            )
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(values_equal(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, bool) and isinstance(actual, str):
        return False  # "true" is text, not a boolean
    a_num, e_num = as_number(actual), as_number(expected)
    if a_num is not None and e_num is not None:
        return _numbers_equal(a_num, e_num)
    return bool(actual == expected)


def _order(actual: Any, expected: Any) -> tuple[Any, Any]:
    a_num, e_num = as_number(actual), as_number(expected)
    if (
        a_num is not None
        and e_num is not None
        and not (isinstance(actual, str) and isinstance(expected, str))
    ):
        return a_num, e_num
    if isinstance(actual, str) and isinstance(expected, str):
        # Both text: ISO dates and times order correctly as strings; numeric text orders as numbers.
        if a_num is not None and e_num is not None:
            return a_num, e_num
        return actual, expected
    raise EvalFailure(f"cannot order {short(actual)} against {short(expected)}")


def compare(actual: Any, op: str, expected: Any) -> bool:
    """`actual op expected`; raises EvalFailure when the comparison has no meaning."""
    if op == "eq":
        return values_equal(actual, expected)
    if op == "ne":
        return not values_equal(actual, expected)
    if op == "exists":
        want = True if expected is None else bool(expected)
        return (actual is not None) == want
    if op in ("in", "not_in"):
        options = _maybe_json(expected)
        if not isinstance(options, list | tuple):
            raise EvalFailure(f"operator {op!r} needs a list value, got {short(expected)}")
        found = any(values_equal(actual, option) for option in options)
        return found if op == "in" else not found
    if op == "contains":
        container = _maybe_json(actual)
        if isinstance(container, str):
            if not isinstance(expected, str):
                raise EvalFailure(f"text {short(actual)} cannot contain non-text {short(expected)}")
            return expected in container
        if isinstance(container, list | tuple):
            return any(json_subset(expected, item) for item in container)
        if isinstance(container, Mapping):
            return json_subset(expected, container)
        raise EvalFailure(
            f"{short(actual)} is not text, a list or an object; cannot test 'contains'"
        )
    if actual is None or expected is None:
        return False  # NULL is not ordered against anything, as in SQL
    a, e = _order(actual, expected)
    if op == "gt":
        return bool(a > e)
    if op == "ge":
        return bool(a >= e)
    if op == "lt":
        return bool(a < e)
    if op == "le":
        return bool(a <= e)
    raise EvalFailure(f"unknown operator {op!r}")


def json_subset(expected: Any, actual: Any) -> bool:
    """Whether `expected` is contained in `actual`: object keys as a subset, list items each
    matching some item (order-free), scalars by `values_equal`."""
    if isinstance(expected, Mapping):
        actual = _maybe_json(actual)
        return isinstance(actual, Mapping) and all(
            k in actual and json_subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list | tuple):
        actual = _maybe_json(actual)
        return isinstance(actual, list | tuple) and all(
            any(json_subset(e, a) for a in actual) for e in expected
        )
    return values_equal(actual, expected)


def iter_nodes(value: Any) -> Any:
    """Every node of a JSON-like value, depth first, the value itself first."""
    yield value
    if isinstance(value, Mapping):
        for v in value.values():
            yield from iter_nodes(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from iter_nodes(v)


def where_matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether `row` satisfies every condition; a condition is a value (equality) or an operator
    object such as {"$gt": 5} or {"$in": [1, 2]} (several operators are all required)."""
    for column, cond in where.items():
        actual = row.get(column)
        if is_operator(cond):
            unknown = [k for k in cond if k not in WHERE_OPS]
            if unknown:
                raise EvalFailure(f"unknown operator {unknown[0]!r} in where on {column!r}")
            if not all(compare(actual, WHERE_OPS[k], v) for k, v in cond.items()):
                return False
        elif not values_equal(actual, cond):
            return False
    return True


def is_operator(cond: Any) -> bool:
    return (
        isinstance(cond, Mapping)
        and bool(cond)
        and all(isinstance(k, str) and k.startswith("$") for k in cond)
    )
