"""Bundle runtime: compute tools (weft_envsynth.computesem recognises the operation). The result
is computed from the arguments; errors are the ones the operation has (division by zero, a
negative root). Copied into every generated bundle next to runtime.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .runtime import ToolFailure, shape_result

# unit -> (dimension, factor to the base unit); temperatures are handled apart.
_UNITS: dict[str, tuple[str, float]] = {
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "cm": ("length", 0.01),
    "mm": ("length", 0.001),
    "um": ("length", 1e-6),
    "nm": ("length", 1e-9),
    "in": ("length", 0.0254),
    "inch": ("length", 0.0254),
    "inches": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "foot": ("length", 0.3048),
    "feet": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "yard": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mile": ("length", 1609.344),
    "miles": ("length", 1609.344),
    "kg": ("mass", 1.0),
    "g": ("mass", 0.001),
    "mg": ("mass", 1e-6),
    "t": ("mass", 1000.0),
    "lb": ("mass", 0.45359237),
    "lbs": ("mass", 0.45359237),
    "pound": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
    "ounce": ("mass", 0.028349523125),
    "l": ("volume", 1.0),
    "ml": ("volume", 0.001),
    "gal": ("volume", 3.785411784),
    "gallon": ("volume", 3.785411784),
    "qt": ("volume", 0.946352946),
    "pt": ("volume", 0.473176473),
    "cup": ("volume", 0.2365882365),
    "s": ("time", 1.0),
    "ms": ("time", 0.001),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "hr": ("time", 3600.0),
    "day": ("time", 86400.0),
    "m/s": ("speed", 1.0),
    "km/h": ("speed", 1 / 3.6),
    "mph": ("speed", 0.44704),
    "j": ("energy", 1.0),
    "kj": ("energy", 1000.0),
    "cal": ("energy", 4.184),
    "kcal": ("energy", 4184.0),
    "wh": ("energy", 3600.0),
    "kwh": ("energy", 3.6e6),
    "pa": ("pressure", 1.0),
    "kpa": ("pressure", 1000.0),
    "bar": ("pressure", 1e5),
    "psi": ("pressure", 6894.757293168),
    "atm": ("pressure", 101325.0),
}
_TEMPS = {"c", "celsius", "f", "fahrenheit", "k", "kelvin"}


def _num(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ToolFailure("invalid_arguments", f"{what} must be a number")
    return float(v)


def _convert(value: float, unit_in: Any, unit_out: Any) -> float:
    a, b = str(unit_in).strip().lower(), str(unit_out).strip().lower()
    if a in _TEMPS and b in _TEMPS:
        kelvin = {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[a[0]]
        return {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[b[0]]
    if a not in _UNITS or b not in _UNITS:
        raise ToolFailure("invalid_arguments", f"unknown unit: {a if a not in _UNITS else b}")
    if _UNITS[a][0] != _UNITS[b][0]:
        raise ToolFailure("invalid_arguments", f"cannot convert {a} to {b}")
    return value * _UNITS[a][1] / _UNITS[b][1]


def _date(v: Any, what: str) -> Any:
    """A date (ISO 8601: YYYY-MM-DD, or a date-time whose date part is used)."""
    import datetime as dt

    if isinstance(v, str):
        try:
            return dt.date.fromisoformat(v.strip()[:10])
        except ValueError:
            pass
    raise ToolFailure("invalid_arguments", f"{what} must be a date (YYYY-MM-DD), got {v!r}")


def _shift_months(d: Any, months: int) -> Any:
    import calendar

    total = d.year * 12 + d.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise ToolFailure("invalid_arguments", "the resulting date is out of range")
    # Jan 31 + 1 month is the last day of February, as calendars (and dateutil) count.
    day = min(d.day, calendar.monthrange(year, month + 1)[1])
    return d.replace(year=year, month=month + 1, day=day)


def _date_op(op: str, a: dict[str, Any]) -> Any:
    import datetime as dt

    if op == "weekday":
        return _date(a.get("date"), "date").strftime("%A")
    if op == "date_diff":
        return (_date(a.get("end"), "end date") - _date(a.get("start"), "start date")).days
    d = _date(a.get("date"), "date")
    sign = int(a.get("sign", 1))
    amounts = {u: a.get(u) for u in ("years", "months", "weeks", "days") if a.get(u) is not None}
    if "amount" in a:
        unit = str(a.get("unit") or "days").strip().lower().rstrip("s") + "s"
        if unit not in {"years", "months", "weeks", "days"}:
            raise ToolFailure("invalid_arguments", f"unknown unit {a.get('unit')!r}")
        amounts[unit] = a["amount"]
    n: dict[str, int] = {}
    for unit, v in amounts.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
            raise ToolFailure("invalid_arguments", f"{unit} must be a whole number")
        n[unit] = sign * int(v)
    d = _shift_months(d, n.get("years", 0) * 12 + n.get("months", 0))
    try:
        d = d + dt.timedelta(days=n.get("days", 0) + 7 * n.get("weeks", 0))
    except OverflowError:
        raise ToolFailure("invalid_arguments", "the resulting date is out of range") from None
    return d.isoformat()


def _money(a: dict[str, Any], digits: Any) -> float:
    """amount x rate in Decimal, rounded half-up to the currency's cents (or `precision`)."""
    from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

    amount = Decimal(str(_num(a.get("x"), "amount")))
    src = str(a.get("unit_in") or "").strip().upper()
    dst = str(a.get("unit_out") or "").strip().upper()
    if not re.fullmatch(r"[A-Z]{3}", src) or not re.fullmatch(r"[A-Z]{3}", dst):
        raise ToolFailure("invalid_arguments", "currencies must be 3-letter codes (ISO 4217)")
    rates: dict[str, str] = a.get("rates") or {}
    if "rate" in a:
        rate = Decimal(str(_num(a.get("rate"), "rate")))
        if rate <= 0:
            raise ToolFailure("invalid_arguments", "rate must be positive")
    elif src == dst:
        rate = Decimal(1)
    elif f"{src}/{dst}" in rates:
        rate = Decimal(rates[f"{src}/{dst}"])
    elif f"{dst}/{src}" in rates:
        rate = 1 / Decimal(rates[f"{dst}/{src}"])
    else:
        raise ToolFailure("invalid_arguments", f"no rate from {src} to {dst}")
    try:
        out = (amount * rate).quantize(Decimal(1).scaleb(-int(digits)), rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError) as exc:
        raise ToolFailure("invalid_arguments", f"cannot round the amount: {exc}") from None
    return float(out)


def compute(op: str, a: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """Compute `op` over the operands in `a` (x, y / numbers / value, precision, base, units)."""
    import math
    import statistics

    digits = a.get("precision")
    if op in {"date_add", "date_diff", "weekday"}:
        return shape_result(_date_op(op, a), {}, fields)
    if op == "currency":
        return shape_result(_money(a, 2 if digits is None else digits), {}, fields)
    if op in {"mean", "min", "max", "sum", "stdev"}:
        numbers = a.get("numbers")
        if not isinstance(numbers, list) or not numbers:
            raise ToolFailure("invalid_arguments", "numbers must be a non-empty list")
        xs = [_num(v, "each number") for v in numbers]
        if op == "stdev" and len(xs) < 2:
            value: float = 0.0
        else:
            stats: dict[str, Callable[[list[float]], float]] = {
                "mean": statistics.fmean,
                "min": min,
                "max": max,
                "sum": math.fsum,
                "stdev": statistics.pstdev,
            }
            value = stats[op](xs)
    elif op == "convert":
        value = _convert(_num(a.get("x"), "value"), a.get("unit_in"), a.get("unit_out"))
    else:
        x = _num(a.get("x"), "the first operand")
        y = _num(a.get("y"), "the second operand") if "y" in a else None
        if op == "add" and y is not None:
            value = x + y
        elif op == "subtract" and y is not None:
            value = x - y
        elif op == "multiply" and y is not None:
            value = x * y
        elif op == "divide" and y is not None:
            if y == 0:
                raise ToolFailure("invalid_arguments", "division by zero")
            value = x / y
        elif op == "power" and y is not None:
            try:
                value = float(x**y)
            except (OverflowError, ZeroDivisionError) as exc:
                raise ToolFailure("invalid_arguments", f"power: {exc}") from None
        elif op == "percentage" and y is not None:
            if y == 0:
                raise ToolFailure("invalid_arguments", "the whole must not be zero")
            value = x / y * 100
        elif op == "sqrt":
            if x < 0:
                raise ToolFailure("invalid_arguments", "square root of a negative number")
            value = math.sqrt(x)
        elif op == "abs":
            value = abs(x)
        elif op == "round":
            value = round(x, int(digits or 0))
            digits = None
        elif op == "log":
            base = _num(a.get("base", math.e), "base")
            if x <= 0 or base <= 0 or base == 1:
                raise ToolFailure("invalid_arguments", "logarithm of a non-positive number or base")
            value = math.log(x, base)
        else:
            raise ToolFailure("unsupported", f"operation {op} is not supported", 501)
    if digits is not None:
        value = round(value, int(digits))
    return shape_result(value, {}, fields)
