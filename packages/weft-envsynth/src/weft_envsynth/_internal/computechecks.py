"""Validation of compute tools: probes with known answers, and the errors the operation has."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from weft_core.models import ToolSpec
from weft_envsynth.computesem import ComputeSemantics, operand_roles

# op -> (operands by role, expected result); the answers are arithmetic facts, not the runtime's.
_PROBES: dict[str, tuple[dict[str, Any], float]] = {
    "add": ({"x": 6, "y": 3}, 9.0),
    "subtract": ({"x": 6, "y": 3}, 3.0),
    "multiply": ({"x": 6, "y": 3}, 18.0),
    "divide": ({"x": 6, "y": 3}, 2.0),
    "power": ({"x": 6, "y": 3}, 216.0),
    "percentage": ({"x": 6, "y": 3}, 200.0),
    "sqrt": ({"x": 16}, 4.0),
    "abs": ({"x": -16}, 16.0),
    "round": ({"x": 2.4, "precision": 0}, 2.0),
    "log": ({"x": 8, "base": 2}, 3.0),
    "mean": ({"numbers": [2, 4, 4, 4, 5, 5, 7, 9]}, 5.0),
    "min": ({"numbers": [2, 4, 4, 4, 5, 5, 7, 9]}, 2.0),
    "max": ({"numbers": [2, 4, 4, 4, 5, 5, 7, 9]}, 9.0),
    "sum": ({"numbers": [2, 4, 4, 4, 5, 5, 7, 9]}, 40.0),
    "stdev": ({"numbers": [2, 4, 4, 4, 5, 5, 7, 9]}, 2.0),
    "convert": ({"x": 1, "unit_in": "km", "unit_out": "m"}, 1000.0),
}
_MUST_FAIL: dict[str, dict[str, Any]] = {
    "divide": {"x": 1, "y": 0},
    "sqrt": {"x": -1},
    "convert": {"x": 1, "unit_in": "km", "unit_out": "kg"},
}


# Conversion facts for tools whose units are an enum: (from, to, amount, answer), any case.
_CONVERSIONS = [
    ("km", "m", 1, 1000.0), ("m", "cm", 1, 100.0), ("kg", "g", 1, 1000.0), ("g", "kg", 1000, 1.0),
    ("l", "ml", 1, 1000.0), ("ml", "l", 1000, 1.0), ("c", "f", 100, 212.0), ("f", "c", 212, 100.0),
    ("celsius", "fahrenheit", 100, 212.0), ("fahrenheit", "celsius", 212, 100.0),
    ("lb", "oz", 1, 16.0), ("h", "min", 1, 60.0), ("min", "s", 1, 60.0), ("ft", "in", 1, 12.0),
]  # fmt: skip


def _enum_of(tool: ToolSpec, arg: str | None) -> list[str] | None:
    sch = tool.properties.get(arg or "")
    values = sch.get("enum") if isinstance(sch, dict) else None
    return [str(v) for v in values] if isinstance(values, list) and values else None


def _convert_probe(
    tool: ToolSpec, sem: ComputeSemantics
) -> tuple[dict[str, Any], float, dict[str, Any] | None] | None:
    """The default km -> m probe, or, where the definition lists the units it takes, a known
    conversion between two of them (None: no known fact fits; the probe is left out rather than
    sending units the schema refuses). With listed units an unknown unit is the schema's to
    refuse, so no must-fail call is made."""
    ins, outs = _enum_of(tool, sem.unit_in), _enum_of(tool, sem.unit_out)
    if ins is None and outs is None:
        return _PROBES["convert"][0], _PROBES["convert"][1], _MUST_FAIL["convert"]
    for a, b, amount, answer in _CONVERSIONS:
        src = next((u for u in ins or [a] if u.lower() == a), None)
        dst = next((u for u in outs or [b] if u.lower() == b), None)
        if src is not None and dst is not None:
            return {"x": amount, "unit_in": src, "unit_out": dst}, answer, None
    return None


# Calendar facts: 2024 is a leap year; 2024-02-29 is a Thursday.
_SHIFTS = {  # unit -> (amount, from 2024-01-31 forward, from 2024-03-31 backward)
    "days": (10, "2024-02-10", "2024-03-21"),
    "weeks": (2, "2024-02-14", "2024-03-17"),
    "months": (1, "2024-02-29", "2024-02-29"),
    "years": (1, "2025-01-31", "2023-03-31"),
}


def _date_money_probe(
    sem: ComputeSemantics,
) -> tuple[dict[str, Any], Any, dict[str, Any] | None]:
    """(operands by role, expected result, operands that must be refused) for the date and
    currency operations; the answers are calendar and arithmetic facts."""
    roles = set(sem.roles.values())
    if sem.op == "weekday":
        return {"date": "2024-02-29"}, "Thursday", {"date": "2024-02-30"}
    if sem.op == "date_diff":
        return {"start": "2024-01-01", "end": "2024-03-01"}, 60, {"start": "x", "end": "y"}
    if sem.op == "date_add":
        back = sem.constants.get("sign") == -1
        start = "2024-03-31" if back else "2024-01-31"
        unit = next((u for u in _SHIFTS if u in roles), "days")
        n, fwd, bwd = _SHIFTS[unit]
        values: dict[str, Any] = {"date": start}
        if "amount" in roles:
            values |= {"amount": n, "unit": unit}
        for u in _SHIFTS:
            if u in roles:
                values[u] = n if u == unit else 0
        return values, bwd if back else fwd, {**values, "date": "not a date"}
    # currency: 100 units at the given or the first documented rate, to the cent.
    if "rate" in roles:
        return (
            {"x": 100, "unit_in": "USD", "unit_out": "EUR", "rate": 0.9},
            90.0,
            {"x": 100, "unit_in": "USD", "unit_out": "EUR", "rate": -1},
        )
    pair, rate = next(iter(dict(sem.constants.get("rates") or {}).items()))
    src, dst = pair.split("/")
    want = float((Decimal(100) * Decimal(rate)).quantize(Decimal("0.01"), ROUND_HALF_UP))
    return (
        {"x": 100, "unit_in": src, "unit_out": dst},
        want,
        {"x": 100, "unit_in": src, "unit_out": "QQQ"},
    )


def _args(sem: ComputeSemantics, values: dict[str, Any]) -> dict[str, Any]:
    by_role = {role: arg for arg, role in operand_roles(sem).items()}
    if sem.op == "log" and "base" not in by_role:
        values = {**values, "x": math.e**3}
    args = {by_role[r]: v for r, v in values.items() if r in by_role}
    if sem.precision and sem.precision not in args:
        args[sem.precision] = 6
    return args


def _number(data: Any, fields: list[str]) -> Any:
    if not isinstance(data, dict):
        return data
    return data.get(fields[0]) if fields else data.get("result")


class ComputeChecks:
    """Mixin of the validator: needs `call`, `record`, `expect_error`."""

    call: Any
    record: Any
    expect_error: Any

    async def compute_checks(self, tool: ToolSpec, sem: ComputeSemantics) -> None:
        must_fail = _MUST_FAIL.get(sem.op)
        want: Any
        if sem.op == "convert":
            probe = _convert_probe(tool, sem)
            if probe is None:
                return  # listed units no known fact converts between: nothing checkable here
            values, want, must_fail = probe
        elif sem.op in _PROBES:
            values, want = _PROBES[sem.op]
        else:
            values, want, must_fail = _date_money_probe(sem)
        args = _args(sem, values)
        res = await self.call(tool.name, args)
        got = _number(res.data, sem.response_fields)
        if res.is_error:
            problem: str | None = f"valid call failed: {res.text}"
        elif missing := [f for f in sem.response_fields if f not in (res.data or {})]:
            problem = f"documented result field(s) {missing} missing"
        elif isinstance(want, str) and got != want:
            problem = f"{sem.op} of {values} returned {got!r}, expected {want!r}"
        elif not isinstance(want, str) and (
            not isinstance(got, (int, float))
            or not math.isclose(float(got), want, rel_tol=1e-4, abs_tol=1e-6)
        ):
            problem = f"{sem.op} of {values} returned {got!r}, expected {want:g}"
        else:
            problem = None
        self.record(
            tool.name,
            f"computes_{sem.op}",
            "query",
            problem is None,
            "runtime",
            problem or "",
            args,
        )
        if must_fail is not None:
            await self.expect_error(
                tool,
                f"refuses_{sem.op}",
                _args(sem, must_fail),
                "runtime",
                "an undefined operation",
            )
